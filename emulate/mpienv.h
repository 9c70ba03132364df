/* emulate/mpienv.h — the MPI process an emulation runs in: initialisation when launched by
 * mpirun, errors returned instead of aborting, the clock, sleeping to an absolute deadline, and
 * waiting on a request with a deadline, so that a dead rank or a cut link is a one-line error on
 * every survivor instead of a hang.
 *
 * Invariants: after mt_mpienv_init, MPI_COMM_WORLD (and every communicator split from it, which
 * inherits it) has MPI_ERRORS_RETURN; every wait in emulate/ polls with MPI_Test* and gives up
 * after waiting `timeout_ns` for one thing (then the caller reports and calls mt_mpienv_abort). Time is CLOCK_MONOTONIC
 * in ns; the timer slack is set to 1 ns so that a sleep to a deadline wakes within a few us.
 * Costs: one MPI_Test per poll; a poll every poll_ns (0: spin).
 */
#ifndef MT_EMULATE_MPIENV_H
#define MT_EMULATE_MPIENV_H

#include <stdint.h>

#include <mpi.h>

#include "util/err.h"

typedef struct mt_mpienv {
    int rank, size;
    int inited;           /* 1: we called MPI_Init (and finalize) */
    int64_t timeout_ns;   /* a wait that makes no progress this long fails */
    int64_t poll_ns;      /* sleep between polls while waiting (0: spin) */
    int tag_ub;           /* MPI_TAG_UB */
} mt_mpienv;

/* 1 when this process was started by an MPI launcher (OpenMPI, PMI or PMIx variables). */
int mt_mpienv_launched(void);
/* MPI_Init (unless initialised already), MPI_ERRORS_RETURN on MPI_COMM_WORLD, rank and size. */
mt_status mt_mpienv_init(mt_mpienv *env, mt_error *err);
void mt_mpienv_finalize(mt_mpienv *env);
/* Ends the whole job (every rank) with exit code `code`. */
void mt_mpienv_abort(mt_mpienv *env, int code);

int64_t mt_now_ns(void);
/* Sleeps until CLOCK_MONOTONIC reaches t_ns (absolute; returns at once when past). */
void mt_sleep_until_ns(int64_t t_ns);
/* One poll interval: sleeps poll_ns (spins when 0). */
void mt_mpienv_pause(const mt_mpienv *env);

/* MT_OK for MPI_SUCCESS, else MT_EIO with "rank R: MPI error in WHAT: <MPI's message>". */
mt_status mt_mpienv_check(const mt_mpienv *env, int rc, const char *what, mt_error *err);
/* Polls *req until it completes or timeout_ns pass (MT_EIO naming `what` and the likely cause). */
mt_status mt_mpienv_wait(const mt_mpienv *env, MPI_Request *req, const char *what, mt_error *err);
/* A common start: estimates this rank's clock offset to rank 0 (best of 8 ping-pongs: the one
 * with the shortest round trip, offset = rank 0's reading - the midpoint of ours), then rank 0
 * announces an instant lead_ns ahead and every rank sleeps until it, on its own clock. *t0_ns:
 * that instant on this rank's clock. Collective (every rank calls it). */
mt_status mt_mpienv_common_start(const mt_mpienv *env, int64_t lead_ns, int64_t *t0_ns, mt_error *err);
/* The timeout message for a wait on `what` (MT_EIO). */
mt_status mt_mpienv_timeout(const mt_mpienv *env, const char *what, mt_error *err);

#endif
