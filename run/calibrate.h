/* run/calibrate.h — calibration of a trace to a step time measured without the profiler.
 *
 * Recording a step slows it (tracer/meta.h). Calibration finds the factor that makes ONE GPU at
 * the traced batch take the measured time, and then applies it to every simulation of the run
 * (other batch sizes, N GPUs, what-ifs, every compared plan):
 *   - with the host model: the host times (host_scale), found by bisection, since the step is a
 *     non-decreasing, piecewise-linear function of the host scale. When even no host time is
 *     too slow, the host scale stays at its floor and the operator times are scaled too;
 *   - without it: the operator device times (the 1-GPU step is their sum, so the factor is
 *     measured / simulated, exact).
 * With neither calibrate nor measured_ms, a GPU trace (kernels launched by a traced host) of a one-rank
 * job whose meta.json gives the step measured without the profiler is calibrated to it all the same
 * (cal->automatic): the profiler and the ET observer slow every op's host side, and on an H100 that
 * made a host-bound 162 ms of a measured 53 ms step (traces/h100-bert-base-b32-bf16). --no-calibrate
 * keeps the profiled times; otherwise nothing changes. A meta.json that is there but damaged (a
 * step outside (0, 1e9] ms, not a number, another batch) is refused, naming it, not dropped.
 * --host-scale composes: calibrate first, then scale the calibrated host times by F.
 * Cost: a few dozen 1-GPU simulations.
 */
#ifndef MT_RUN_CALIBRATE_H
#define MT_RUN_CALIBRATE_H

#include "perfmodel/perfmodel.h"
#include "run/config.h"
#include "tracer/meta.h"
#include "tracer/trace.h"

/* When c asks for it, solves the factors for trace t with performance model pm and stores them
 * in c->host_scale (times the host scale c had: --host-scale) and c->op_scale (so every run made
 * from c uses them), and what it found in *cal. Call it once per configuration. Errors: no
 * meta.json or no measured time in it (naming the file and saying to pass --measured-ms), a
 * meta.json for another batch than the trace's. */
mt_status mt_calibrate(mt_run_config *c, const mt_trace *t, mt_perfmodel *pm, mt_calibration *cal, mt_error *err);

#endif
