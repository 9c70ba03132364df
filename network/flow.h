/* network/flow.h — the flow-level (packet-switched) network model.
 *
 * A transfer of S bytes from src to dst occupies every link of its route from the moment it
 * starts until S bytes have been drained at its current rate, then is delivered one path
 * latency later: T = sum(lat) + integral of S over the rate. Rates are max-min fair over all
 * flows sharing links (progressive filling: the link with the smallest fair share fixes the
 * rate of its flows, whose bandwidth is removed from their other links; repeat).
 *
 * Incremental, after SimGrid's lmm: a flow start or drain marks the links it touches as
 * modified and arms one "solve" event at the current time, so a burst of changes at one
 * instant costs one solve. The solve re-computes only the connected component of flows and
 * links reachable from the modified links (other flows cannot change rate), and moves the
 * drain events of only the flows whose rate changed. Nothing is polled.
 * Costs: a start or drain O(hops); a solve O(C log C) for a component with C (flow, link)
 * pairs. A flow with a rate of 0 has no pending event until a solve gives it bandwidth.
 */
#ifndef MT_NETWORK_FLOW_H
#define MT_NETWORK_FLOW_H

#include <stdint.h>

#include "network/netmodel.h"
#include "network/sched.h"
#include "network/topology.h"
#include "util/err.h"

typedef struct mt_flownet mt_flownet;

typedef struct mt_link_stats {
    double bytes;      /* bytes of drained flows that crossed the link */
    mt_time_ps busy_ps; /* time with at least one flow (up to the last change) */
    int32_t peak_flows; /* most flows at once */
    int32_t flows_now;
} mt_link_stats;

/* The topology (frozen on first route) and scheduler must outlive the model. */
mt_status mt_flownet_new(mt_topo *topo, mt_sched sched, mt_flownet **out, mt_error *err);
void mt_flownet_free(mt_flownet *net);

/* Starts a flow; *flow_id (may be NULL) identifies it until delivery, for mt_flownet_rate.
 * MT_ENOROUTE / MT_EINVAL with a message naming the endpoints. src == dst delivers at once
 * (after an event at the current time). */
mt_status mt_flownet_start(mt_flownet *net, int32_t src, int32_t dst, double bytes,
                           mt_delivered_fn on_delivered, void *ctx, uint64_t tag,
                           int32_t *flow_id, mt_error *err);
/* Current rate of an active flow in bytes/s (after the pending solve ran), or -1 when the
 * flow has drained. */
double mt_flownet_rate(const mt_flownet *net, int32_t flow_id);

void mt_flownet_link_stats(const mt_flownet *net, int32_t link, mt_link_stats *out);

/* Optional observer of link load (timelines, utilisation counters): called with the total rate
 * allocated on a link (bytes/s, 0 when its last flow drains) whenever a solve or a drain changes
 * it, in event order. NULL switches it off. Cost: O(links in the solved component) per solve. */
typedef void (*mt_link_rate_fn)(void *ctx, int32_t link, mt_time_ps t, double used_Bps);
void mt_flownet_set_link_observer(mt_flownet *net, mt_link_rate_fn fn, void *ctx);
/* Number of solves and of flows whose rate a solve changed (for benchmarks). */
void mt_flownet_counters(const mt_flownet *net, uint64_t *solves, uint64_t *rate_changes);

/* ---- perturbations (what-if scenarios) ----------------------------------------------------
 * All take effect at the scheduler's current time; mt_flownet_schedule_change runs one later
 * through an engine event. Bandwidth changes re-solve the affected component at once, so the
 * rates of flows already under way change mid-flow (a flow with half its bytes left when its
 * only link halves takes twice as long for the rest). */

/* Bandwidth of `link` = topology bandwidth x factor (0 < factor <= MT_LINK_FACTOR_MAX) from now
 * on (1 restores it). */
#define MT_LINK_FACTOR_MAX 1e6
mt_status mt_flownet_set_link_factor(mt_flownet *net, int32_t link, double factor, mt_error *err);
/* Extra latency on `link` (0 .. MT_LINK_LAT_MAX_PS) for flows that start from now on
 * (in-flight ones keep theirs). */
mt_status mt_flownet_set_link_extra_latency(mt_flownet *net, int32_t link, mt_time_ps extra_ps,
                                            mt_error *err);
/* Periodic degradation: bandwidth x factor during [start + k period, start + k period + duration)
 * for every k >= 0, on top of the link factor. Lazy: a boundary event is pending only while the
 * link carries flows, so an idle degraded link costs nothing and runs still end. */
mt_status mt_flownet_set_link_periodic(mt_flownet *net, int32_t link, mt_time_ps start,
                                       mt_time_ps period, mt_time_ps duration, double factor,
                                       mt_error *err);
/* Fails `link` now (mt_topo_set_link_failed): later flows route around it and every flow
 * draining across it moves, with its remaining bytes, to its new shortest route (its latency
 * becomes the new route's). When no route remains: MT_ENOROUTE naming the two endpoints and the
 * failed links (the stranded flow is dropped; the caller's run should stop). */
mt_status mt_flownet_fail_link(mt_flownet *net, int32_t link, mt_error *err);

typedef enum { MT_LINK_FACTOR = 0, MT_LINK_LATENCY, MT_LINK_FAIL } mt_link_change_kind;
/* Schedules one of the above at time t >= now: value is the factor, the extra latency in ps, or
 * unused (fail). An error at that time stops the run (mt_sched_fail) with its message. */
mt_status mt_flownet_schedule_change(mt_flownet *net, mt_time_ps t, mt_link_change_kind kind,
                                     int32_t link, double value, mt_error *err);

/* The model behind the netmodel interface (endpoints = the topology's GPUs). mt_net_free on
 * it frees the flownet. */
mt_netmodel mt_flownet_netmodel(mt_flownet *net);

#endif
