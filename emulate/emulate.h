/* emulate/emulate.h — `mitosis emulate` as a library call: every MPI rank builds the same
 * extrapolation as `simulate` (run/simrun.h, same plan and network flags), simulates it for the
 * side-by-side prediction, then walks the program of the virtual GPU of its own rank in real
 * time over the real network (emulate/walker.h); rank 0 gathers every rank's records and builds
 * the report (report/emureport.h) and, when asked, the Perfetto timeline of what was measured.
 *
 * Scaling, applied alike to the emulation and its prediction: operator times x time_scale (the
 * run's op_scale), message bytes x bytes_scale (every collective's buffer and pipeline send of
 * the built program). The host model is off (a rank waits for device time only).
 * Clocks: before the step every rank estimates the offset of its CLOCK_MONOTONIC to rank 0's
 * (best of 8 ping-pongs, Cristian's method) and all start at one instant of rank 0's clock, so
 * that times taken on different ranks (a collective's last start and end, a transfer's post and
 * completion) are compared on one time line, to within half a round trip.
 * Header usable without MPI (the CLI includes it in every build); the functions exist only
 * when MITOSIS_HAVE_MPI is set.
 */
#ifndef MT_EMULATE_EMULATE_H
#define MT_EMULATE_EMULATE_H

#include <stdint.h>
#include <string.h>

#include "report/emureport.h"
#include "run/config.h"
#include "run/input.h"
#include "util/err.h"

typedef struct mt_emu_opts {
    double time_scale;     /* --time-scale (default 1) */
    double bytes_scale;    /* --bytes-scale (default 1) */
    int coll;              /* --coll: 0 schedule (the simulator's sends), 1 mpi (MPI's collectives) */
    double timeout_ns;     /* --timeout: a wait without progress this long fails (default 60 s) */
    double poll_ns;        /* --poll: sleep between polls while communication is in flight (default 20 us) */
    double threshold;      /* --check THRESHOLD (fraction), < 0: no check */
    const char *timeline;  /* --timeline FILE, NULL */
} mt_emu_opts;

/* Defaults (inline: the CLI fills the options in builds without MPI too). */
static inline void mt_emu_opts_init(mt_emu_opts *o) {
    memset(o, 0, sizeof *o);
    o->time_scale = o->bytes_scale = 1;
    o->timeout_ns = 60e9;
    o->poll_ns = 20e3;
    o->threshold = -1;
}

typedef struct mt_emulation mt_emulation;

/* MPI initialisation (MT_EINVAL when not launched by mpirun: the message says how). */
mt_status mt_emulate_begin(mt_emulation **out, mt_error *err);
/* The world rank (0 prints the report). */
int mt_emulate_rank(const mt_emulation *em);
/* Runs the emulation; on rank 0 fills *rep (free with mt_emu_report_free) and writes the
 * timeline. Every rank must call it. */
mt_status mt_emulate_run(mt_emulation *em, const mt_run_config *rc, const mt_run_input *in, const mt_emu_opts *o,
                         mt_emu_report *rep, mt_error *err);
/* Ends the job after a failure on this rank (every rank exits with `code`); does not return. */
void mt_emulate_abort(mt_emulation *em, int code);
/* MPI_Finalize and free. */
void mt_emulate_end(mt_emulation *em);

#endif
