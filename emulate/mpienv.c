/* emulate/mpienv.c — see mpienv.h. */
#include "emulate/mpienv.h"

#include <errno.h>
#include <stdlib.h>
#include <sys/prctl.h>
#include <time.h>

int mt_mpienv_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMI_SIZE") || getenv("PMIX_RANK");
}

mt_status mt_mpienv_init(mt_mpienv *env, mt_error *err) {
    int done = 0;
    MPI_Initialized(&done);
    env->inited = 0;
    if (!done) {
        int provided;
        if (MPI_Init_thread(NULL, NULL, MPI_THREAD_SINGLE, &provided) != MPI_SUCCESS)
            return mt_fail(err, MT_EIO, "MPI_Init failed (launch with mpirun -np N)");
        env->inited = 1;
    }
    MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
    MPI_Comm_rank(MPI_COMM_WORLD, &env->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &env->size);
    int *ub = NULL, flag = 0;
    MPI_Comm_get_attr(MPI_COMM_WORLD, MPI_TAG_UB, &ub, &flag);
    env->tag_ub = flag && ub ? *ub : 32767;
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL); /* deadlines to the us, not the default 50 us */
    return MT_OK;
}

void mt_mpienv_finalize(mt_mpienv *env) {
    if (env->inited) MPI_Finalize();
    env->inited = 0;
}

void mt_mpienv_abort(mt_mpienv *env, int code) { MPI_Abort(MPI_COMM_WORLD, code); }

int64_t mt_now_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

void mt_sleep_until_ns(int64_t t_ns) {
    struct timespec ts = {(time_t)(t_ns / 1000000000), (long)(t_ns % 1000000000)};
    while (clock_nanosleep(CLOCK_MONOTONIC, TIMER_ABSTIME, &ts, NULL) == EINTR) {
    }
}

void mt_mpienv_pause(const mt_mpienv *env) {
    if (env->poll_ns > 0) mt_sleep_until_ns(mt_now_ns() + env->poll_ns);
}

mt_status mt_mpienv_check(const mt_mpienv *env, int rc, const char *what, mt_error *err) {
    if (rc == MPI_SUCCESS) return MT_OK;
    char msg[MPI_MAX_ERROR_STRING];
    int len = 0;
    if (MPI_Error_string(rc, msg, &len) != MPI_SUCCESS) len = 0;
    msg[len] = 0;
    return mt_fail(err, MT_EIO, "rank %d: MPI error in %s: %s (a rank died or the network failed)", env->rank, what,
                   len ? msg : "unknown");
}

mt_status mt_mpienv_timeout(const mt_mpienv *env, const char *what, mt_error *err) {
    return mt_fail(err, MT_EIO, "rank %d: waited %.0f s for %s in vain: a rank died or the network is down "
                   "(raise --timeout for slower networks); aborting the job", env->rank, (double)env->timeout_ns / 1e9,
                   what);
}

mt_status mt_mpienv_wait(const mt_mpienv *env, MPI_Request *req, const char *what, mt_error *err) {
    int64_t until = mt_now_ns() + env->timeout_ns;
    for (;;) {
        int flag = 0;
        MT_CHECK(mt_mpienv_check(env, MPI_Test(req, &flag, MPI_STATUS_IGNORE), what, err));
        if (flag) return MT_OK;
        if (mt_now_ns() > until) return mt_mpienv_timeout(env, what, err);
        mt_mpienv_pause(env);
    }
}

static mt_status xchg(const mt_mpienv *env, int peer, int64_t *out, int64_t *in, mt_error *err) {
    MPI_Request r[2];
    MT_CHECK(mt_mpienv_check(env, MPI_Irecv(in, 1, MPI_INT64_T, peer, 7, MPI_COMM_WORLD, &r[0]), "the clock sync", err));
    if (out) {
        *out = mt_now_ns();
        MT_CHECK(mt_mpienv_check(env, MPI_Isend(out, 1, MPI_INT64_T, peer, 7, MPI_COMM_WORLD, &r[1]), "the clock sync",
                                 err));
        MT_CHECK(mt_mpienv_wait(env, &r[1], "the clock sync with rank 0", err));
    }
    return mt_mpienv_wait(env, &r[0], "the clock sync with rank 0", err);
}

/* Rank 0 answers each ping with its clock; the others keep the round trip that was shortest. */
static mt_status clock_offset(const mt_mpienv *env, int64_t *offset_ns, mt_error *err) {
    enum { PINGS = 8 };
    *offset_ns = 0;
    int64_t best = INT64_MAX;
    for (int peer = 1; peer < env->size; peer++)
        for (int k = 0; k < PINGS; k++) {
            if (env->rank == 0) {
                int64_t ping, now;
                MT_CHECK(xchg(env, peer, NULL, &ping, err));
                now = mt_now_ns();
                MPI_Request r;
                MT_CHECK(mt_mpienv_check(env, MPI_Isend(&now, 1, MPI_INT64_T, peer, 7, MPI_COMM_WORLD, &r),
                                         "the clock sync", err));
                MT_CHECK(mt_mpienv_wait(env, &r, "the clock sync", err));
            } else if (env->rank == peer) {
                int64_t a, b;
                MT_CHECK(xchg(env, 0, &a, &b, err));
                int64_t c = mt_now_ns();
                if (c - a < best) {
                    best = c - a;
                    *offset_ns = b - (a + c) / 2;
                }
            }
        }
    return MT_OK;
}

mt_status mt_mpienv_common_start(const mt_mpienv *env, int64_t lead_ns, int64_t *t0_ns, mt_error *err) {
    int64_t off;
    MT_CHECK(clock_offset(env, &off, err));
    int64_t start = env->rank == 0 ? mt_now_ns() + lead_ns : 0;
    MPI_Request r;
    MT_CHECK(mt_mpienv_check(env, MPI_Ibcast(&start, 1, MPI_INT64_T, 0, MPI_COMM_WORLD, &r), "MPI_Ibcast", err));
    MT_CHECK(mt_mpienv_wait(env, &r, "the common start from rank 0", err));
    *t0_ns = start - off;
    mt_sleep_until_ns(*t0_ns);
    return MT_OK;
}
