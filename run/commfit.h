/* run/commfit.h — --calibrate-comm: the run's link tier fitted to the traced collective times of a
 * rank of a multi-rank job (report/replay.h: mt_commfit says how), so that replaying the job at its
 * own plan spends in each collective what the traced one took, and every what-if and other plan of
 * the run uses the network the job saw. Measured waiting for peers stays inside the fitted times.
 *
 * When (auto, the default): the trace is one rank of a multi-rank job, its collectives have times
 * (GPU: their kernels; CPU: the calls), comm is not regenerate, and the user gave neither
 * --topology nor --link-bw / --link-lat (which then win, stated in the output). on: the same but
 * a refusal (one line) where auto would stay off; off: never.
 * Invariant: on success with cf->on, c->net.tp.link_bw_Bps and link_lat_ns hold the fit, and --algo
 * auto becomes ring (the fit is what the job's collectives reached: NCCL's factors are in it).
 * Costs: two collective runs per distinct (kind, bytes, group) of the trace.
 */
#ifndef MT_RUN_COMMFIT_H
#define MT_RUN_COMMFIT_H

#include "report/replay.h"
#include "run/config.h"
#include "tracer/trace.h"

/* --calibrate-comm's words, in order of the config values. */
#define MT_COMMFIT_CHOICES "auto|on|off"
enum { MT_COMMFIT_AUTO = 0, MT_COMMFIT_ON, MT_COMMFIT_OFF };

/* Fits and applies (see above); *cf says what was done. */
mt_status mt_commfit_apply(mt_run_config *c, const mt_trace *t, mt_commfit *cf, mt_error *err);

#endif
