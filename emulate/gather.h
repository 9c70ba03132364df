/* emulate/gather.h — after the step: rank 0 collects every rank's records (emulate/walker.h)
 * with non-blocking gathers polled against the timeout, and assembles the report
 * (report/emureport.h) beside the prediction:
 *   ranks        each rank's measured breakdown and the simulation's for the same GPU;
 *   collectives  one row per instance: from the last member's start to the last member's end,
 *                on rank 0's time line (mpienv.h common start), against the simulated instance
 *                (the same group's collectives of the same kind in issue order);
 *   pairs        per (sender, receiver): the sum over its transfers of receiver completion -
 *                the later of the two posts, against bytes / route bandwidth + route latency of
 *                the described topology (each transfer alone: contention, e.g. a direct
 *                all-to-all's, shows up as slowness);
 *   timeline     (rank 0, when asked) every rank's spans as the same Perfetto JSON as simulate.
 * Costs: O(records log records) on rank 0, O(ranks^2) for the pair matrix.
 */
#ifndef MT_EMULATE_GATHER_H
#define MT_EMULATE_GATHER_H

#include <stdint.h>

#include "emulate/emulate.h"
#include "emulate/mpienv.h"
#include "emulate/walker.h"
#include "report/emureport.h"
#include "run/simrun.h"

/* A simulated collective instance as one of its members saw it. */
typedef struct mt_emu_pspan {
    int32_t rank, kind;
    int64_t dur_ps;
} mt_emu_pspan;

typedef struct mt_emu_pred {
    const mt_simrun *run;       /* the simulated run (program, topology, result) */
    mt_emu_pspan *colls;        /* rank 0: every rank's simulated collectives, in completion order */
    int64_t n_colls, cap_colls;
} mt_emu_pred;

/* Collective: every rank calls it; rep is filled on rank 0 only. */
mt_status mt_emu_gather(const mt_mpienv *env, const mt_walker *w, const mt_emu_pred *pred, const mt_emu_opts *o,
                        mt_emu_report *rep, mt_error *err);

#endif
