/* emulate/walker.h — one virtual GPU's stage program walked in real time by one MPI rank.
 *
 * The cursor moves through the tasks of the rank's stage program (extrapolate/program.h) as the
 * simulator's does (sim/simulate.h), but against the wall clock:
 *   COMPUTE    waits until an absolute deadline, cursor + the task's time (clock_nanosleep
 *              TIMER_ABSTIME): after a compute task the cursor IS the deadline, so wake-up
 *              latency never accumulates; the time is the one the simulation gave this task on
 *              this rank in this step (what-if factors and GPU speeds included);
 *   COLL       queues an instance on the group's communicator (MPI_Comm_split per group kind);
 *              a group runs its instances one at a time in issue order (emulate/collmpi.h);
 *              blocking ones hold the cursor until this rank's part is done;
 *   SEND/RECV  pipeline transfers as MPI_Isend / MPI_Irecv of the real bytes (receives are
 *              posted when the step begins, so data may arrive before the cursor asks for it);
 *   WAIT_COMM, WAIT_GROUP as in the simulator.
 * While it waits (for a deadline or for communication) the rank polls its requests every
 * poll_ns (0: spins) so that transfers progress; every wait on others gives up after the
 * environment's timeout (emulate/mpienv.h). The cursor's time after a communication wait is
 * the poll that saw it complete.
 * Everything is recorded for the report, in ns of CLOCK_MONOTONIC: per collective instance this
 * rank's start and end, per transfer its post and completion, per task a span (timeline), and
 * the breakdown compute + exposed + bubble (cursor waiting) and comm (union of the intervals
 * with a collective or send in flight).
 * Costs: memory O(tasks x steps) records; per poll O(instances in flight x their sends).
 */
#ifndef MT_EMULATE_WALKER_H
#define MT_EMULATE_WALKER_H

#include <stdint.h>

#include "emulate/collmpi.h"
#include "emulate/mpienv.h"
#include "extrapolate/program.h"

typedef struct mt_emu_inst_rec {  /* one collective instance on this rank */
    int32_t kind, seq, step, pc;  /* seq: its place among this rank's instances of `kind`, all steps */
    int64_t start_ns, end_ns;
} mt_emu_inst_rec;

typedef struct mt_emu_xfer_rec {  /* one transfer of a collective, one side */
    int32_t kind, seq, idx, src, dst, role; /* src, dst: world ranks; role 0 sender, 1 receiver */
    double bytes;
    int64_t post_ns, done_ns;
} mt_emu_xfer_rec;

typedef struct mt_emu_span_rec {  /* a timeline span (sim/simulate.h mt_span_kind) */
    int32_t kind, pc;
    int64_t start_ns, end_ns;
} mt_emu_span_rec;

typedef struct mt_emu_stats {
    int64_t finish_ns;            /* the cursor's end, from the common start */
    int64_t compute_ns, comm_ns, exposed_ns, bubble_ns;
} mt_emu_stats;

typedef struct mt_walker mt_walker;

/* comp_ns: per step x task of the rank's stage program, the compute time (ns) of COMPUTE tasks
 * (others ignored); copied. Collective: every rank of the world must call it (communicator
 * splits). native: MPI's own collectives (--coll mpi). */
mt_status mt_walker_new(const mt_mpienv *env, const mt_program *p, int32_t ranks_per_node, int native, int32_t steps,
                        const int64_t *comp_ns, mt_walker **out, mt_error *err);
/* Walks the program `steps` times from t0_ns (a common start), then waits (not counted) for
 * everything still in flight. */
mt_status mt_walker_run(mt_walker *w, int64_t t0_ns, mt_error *err);
void mt_walker_free(mt_walker *w);

const mt_emu_stats *mt_walker_stats(const mt_walker *w);
const mt_emu_inst_rec *mt_walker_insts(const mt_walker *w, int32_t *n);
const mt_emu_xfer_rec *mt_walker_xfers(const mt_walker *w, int32_t *n);
const mt_emu_span_rec *mt_walker_spans(const mt_walker *w, int32_t *n);

#endif
