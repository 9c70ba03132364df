/* sim/collexec.h — runs a collective schedule (extrapolate/collective.h) on a network model.
 *
 * Each send starts when all its dependencies are met: delivered, or, for a MT_COLL_SENT
 * dependency, left its source (the model's on_sent through mt_net_send_sent; a model that
 * cannot tell counts delivery); sends with no dependencies start at the time
 * mt_collexec_start is called. Ranks map to network endpoints through `rank_ep` (NULL: the
 * model's own endpoint list, rank r -> endpoints[r]). When the last send is delivered,
 * `done(ctx)` is called (from inside an event handler) and mt_collexec_finish_ps gives the
 * time. Costs: O(sends + deps) memory, O(1) per delivery or departure beyond the network's
 * own work.
 *
 * How `simulate` drives it: build a topology (netmodels/topologies.h mt_topo_build), an
 * engine (sim/engine.h), a model (netmodels/registry.h mt_netmodel_create with
 * mt_engine_sched(engine)), a schedule (mt_coll_build), then mt_collexec_start at the time
 * the collective is issued and mt_engine_run; or mt_collexec_time for a stand-alone timing.
 */
#ifndef MT_SIM_COLLEXEC_H
#define MT_SIM_COLLEXEC_H

#include <stdint.h>

#include "extrapolate/collective.h"
#include "network/netmodel.h"
#include "network/sched.h"
#include "util/err.h"

typedef struct mt_collexec mt_collexec;
typedef void (*mt_coll_done_fn)(void *ctx);

/* Starts the schedule now. The schedule, model and scheduler must outlive the run.
 * MT_EINVAL when a rank has no endpoint; send errors (e.g. MT_ENOROUTE) are returned at once
 * for sends that start immediately, and through the engine run (mt_sched_fail) later. */
mt_status mt_collexec_start(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched,
                            const int32_t *rank_ep, mt_coll_done_fn done, void *ctx,
                            mt_collexec **out, mt_error *err);
/* mt_collexec_start whose sends are folded sends (network/netmodel.h: each stands for its copy in
 * every data-parallel replica); the model must be able to fold (MT_NETOP_FOLD) and be folding. */
mt_status mt_collexec_start_folded(const mt_coll_schedule *s, mt_netmodel *net, mt_sched sched,
                                   const int32_t *rank_ep, mt_coll_done_fn done, void *ctx,
                                   mt_collexec **out, mt_error *err);
void mt_collexec_free(mt_collexec *x);
int mt_collexec_done(const mt_collexec *x);
/* The ctx given to mt_collexec_start (for freeing it when a run stops before `done`). */
void *mt_collexec_ctx(const mt_collexec *x);
mt_time_ps mt_collexec_start_ps(const mt_collexec *x);
mt_time_ps mt_collexec_finish_ps(const mt_collexec *x); /* MT_TIME_NEVER until done */

/* Convenience: starts s on net at the engine's current time, runs the engine until the
 * queue is empty and returns the collective's duration. MT_ESTUCK if it never finished. */
struct mt_engine;
mt_status mt_collexec_time(const mt_coll_schedule *s, mt_netmodel *net, struct mt_engine *e,
                           const int32_t *rank_ep, mt_time_ps *out_ps, mt_error *err);

#endif
