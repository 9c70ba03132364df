/* run/ranks.h — the processes of one run across machines: `mpirun -np K mitosis compare ...`
 * splits the rows of a comparison over K ranks (OpenMPI from Debian), each running its share on
 * its own worker threads (run/pool.h), and rank 0 gathers every row and prints the table.
 *
 * MPI is initialised only when the process was launched by mpirun (OMPI_COMM_WORLD_SIZE, PMIX_RANK
 * or PMI_RANK in the environment), never as a singleton otherwise: a plain `mitosis compare` is one
 * process of one rank and calls no MPI function. Built without MPI (MITOSIS_HAVE_MPI unset), a
 * launch by mpirun is refused in one line (exit 2) instead of K ranks each running every row.
 * Invariants: rank r runs the items i with i % size == r (round-robin: the plan list puts plans
 * of similar cost next to each other); every rank reaches every collective call in the same order
 * (mt_ranks_agree, mt_ranks_gather), failed or not, so a failure never leaves a rank waiting.
 * Costs: one MPI_Allgather of a status and message per agreement; one gather of the packed rows.
 */
#ifndef MT_RUN_RANKS_H
#define MT_RUN_RANKS_H

#include <stddef.h>
#include <stdint.h>

#include "util/err.h"

typedef struct mt_ranks {
    int rank, size; /* 0 and 1 outside mpirun */
    int mpi;        /* MPI was initialised here (mt_ranks_close finalises it) */
} mt_ranks;

/* 1 when the environment says mpirun (or another PMI launcher) started this process. */
int mt_ranks_launched(void);
/* Joins the run's ranks (MPI_Init when launched by mpirun), else rank 0 of 1. MT_EINVAL in one line
 * when launched by mpirun but built without MPI. */
mt_status mt_ranks_open(mt_ranks *r, mt_error *err);
void mt_ranks_close(mt_ranks *r);

/* 1 for the rank that prints (rank 0). */
int mt_ranks_root(const mt_ranks *r);
/* 1 when item i is this rank's. */
int mt_ranks_mine(const mt_ranks *r, int32_t i);

/* Every rank's status agreed on: every rank gets the failure of the lowest failing rank (its code
 * and message, "rank K: " prefixed when K > 0), or MT_OK when none failed. One rank: rc itself. */
mt_status mt_ranks_agree(const mt_ranks *r, mt_status rc, mt_error *err);

/* Rank 0 gets every rank's buffer, concatenated in rank order, in *all (malloc'd; free it) and
 * *all_len; other ranks get NULL and 0. One rank: a copy of its own. */
mt_status mt_ranks_gather(const mt_ranks *r, const void *buf, size_t len, void **all, size_t *all_len,
                          mt_error *err);

#endif
