/* run/ranks.c — see ranks.h. */
#include "run/ranks.h"

#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifdef MITOSIS_HAVE_MPI
#include <mpi.h>
#endif

int mt_ranks_launched(void) {
    return getenv("OMPI_COMM_WORLD_SIZE") || getenv("PMIX_RANK") || getenv("PMI_RANK");
}

int mt_ranks_root(const mt_ranks *r) { return r->rank == 0; }

int mt_ranks_mine(const mt_ranks *r, int32_t i) { return r->size <= 1 || i % r->size == r->rank; }

/* One rank's gather: a copy of its own buffer. */
static mt_status own_copy(const void *buf, size_t len, void **all, size_t *all_len, mt_error *err) {
    if (!(*all = malloc(len ? len : 1))) return mt_fail(err, MT_ENOMEM, "out of memory gathering the rows");
    if (len) memcpy(*all, buf, len);
    *all_len = len;
    return MT_OK;
}

#ifdef MITOSIS_HAVE_MPI

mt_status mt_ranks_open(mt_ranks *r, mt_error *err) {
    memset(r, 0, sizeof *r);
    r->size = 1;
    if (!mt_ranks_launched()) return MT_OK;
    int inited = 0;
    MPI_Initialized(&inited);
    if (!inited && MPI_Init(NULL, NULL) != MPI_SUCCESS)
        return mt_fail(err, MT_EINVAL, "MPI_Init failed under mpirun (run without mpirun, or check the "
                       "OpenMPI installation)");
    r->mpi = !inited;
    MPI_Comm_rank(MPI_COMM_WORLD, &r->rank);
    MPI_Comm_size(MPI_COMM_WORLD, &r->size);
    return MT_OK;
}

void mt_ranks_close(mt_ranks *r) {
    if (r->mpi) MPI_Finalize();
    r->mpi = 0;
}

typedef struct agreed {
    int code;
    char msg[MT_ERRMSG_MAX];
} agreed;

mt_status mt_ranks_agree(const mt_ranks *r, mt_status rc, mt_error *err) {
    if (r->size <= 1) return rc;
    agreed mine = {.code = (int)rc}, *all = calloc((size_t)r->size, sizeof *all);
    if (rc != MT_OK && err) snprintf(mine.msg, sizeof mine.msg, "%s", err->msg);
    /* Every rank calls the collective even without memory for the answer: it then aborts the job
     * rather than leave the others waiting. */
    if (!all) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Allgather(&mine, (int)sizeof mine, MPI_BYTE, all, (int)sizeof mine, MPI_BYTE, MPI_COMM_WORLD);
    mt_status out = MT_OK;
    for (int k = 0; k < r->size && out == MT_OK; k++) {
        if (all[k].code == MT_OK) continue;
        out = (mt_status)all[k].code;
        if (k > 0) mt_fail(err, out, "rank %d: %s", k, all[k].msg);
        else mt_fail(err, out, "%s", all[k].msg);
    }
    free(all);
    return out;
}

mt_status mt_ranks_gather(const mt_ranks *r, const void *buf, size_t len, void **all, size_t *all_len,
                          mt_error *err) {
    *all = NULL;
    *all_len = 0;
    if (r->size <= 1) return own_copy(buf, len, all, all_len, err);
    if (len > INT_MAX) MPI_Abort(MPI_COMM_WORLD, 2); /* 2 GB of rows: far beyond MT_COMPARE_MAX_ROWS */
    int n = (int)len, *lens = NULL, *offs = NULL;
    char *out = NULL;
    if (r->rank == 0) {
        lens = calloc((size_t)r->size, sizeof *lens);
        offs = calloc((size_t)r->size, sizeof *offs);
        if (!lens || !offs) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Gather(&n, 1, MPI_INT, lens, 1, MPI_INT, 0, MPI_COMM_WORLD);
    size_t total = 0;
    for (int k = 0; r->rank == 0 && k < r->size; k++) {
        offs[k] = (int)total;
        total += (size_t)lens[k];
        if (total > INT_MAX) MPI_Abort(MPI_COMM_WORLD, 2);
    }
    if (r->rank == 0 && !(out = malloc(total ? total : 1))) MPI_Abort(MPI_COMM_WORLD, 2);
    MPI_Gatherv(buf, n, MPI_BYTE, out, lens, offs, MPI_BYTE, 0, MPI_COMM_WORLD);
    free(lens);
    free(offs);
    *all = out;
    *all_len = total;
    return MT_OK;
}

#else /* built without MPI: one process, rank 0 of 1 */

mt_status mt_ranks_open(mt_ranks *r, mt_error *err) {
    memset(r, 0, sizeof *r);
    r->size = 1;
    if (mt_ranks_launched())
        return mt_fail(err, MT_EINVAL, "this mitosis was built without MPI, so mpirun cannot split the work "
                       "(install libopenmpi-dev and rebuild, or run without mpirun: --jobs uses every core)");
    return MT_OK;
}

void mt_ranks_close(mt_ranks *r) { (void)r; }

mt_status mt_ranks_agree(const mt_ranks *r, mt_status rc, mt_error *err) {
    (void)r;
    (void)err;
    return rc;
}

mt_status mt_ranks_gather(const mt_ranks *r, const void *buf, size_t len, void **all, size_t *all_len,
                          mt_error *err) {
    (void)r;
    return own_copy(buf, len, all, all_len, err);
}

#endif
