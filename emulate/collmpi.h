/* emulate/collmpi.h — one collective on one rank, over real MPI messages: either the schedule
 * the simulator runs (extrapolate/collective.h), as non-blocking point-to-point sends and
 * receives of the real byte counts, or the MPI library's own non-blocking collective
 * (MPI_Iallreduce, ..., to compare).
 *
 * A schedule is global data over the group's ranks; a rank takes part in the sends it sources
 * or receives (and its own local joins). Each side posts its half of a send when the
 * dependencies it can observe are met: sends into or out of it (delivered: its receive or its
 * send completed; left: its send completed), its local joins; a dependency on a transfer
 * between two other ranks is that pair's business and counts as met here. Above MPI's eager
 * limit data moves only once both halves are posted (rendezvous), so a transfer starts when
 * both sides' observable dependencies hold — the schedule's order, without a global view.
 * Tags are send indices modulo MPI_TAG_UB; consecutive instances on one communicator match in
 * order (MPI's non-overtaking rule), since a rank starts the next only after finishing this one.
 * Data is garbage from one preallocated send buffer; receives land in one shared receive buffer
 * (the content is never read). Costs: O(sends + deps) per instance and poll.
 */
#ifndef MT_EMULATE_COLLMPI_H
#define MT_EMULATE_COLLMPI_H

#include <stdint.h>

#include <mpi.h>

#include "emulate/mpienv.h"
#include "extrapolate/collective.h"

/* A transfer this rank took part in, for the pair check: the sender records its post, the
 * receiver its post and completion (ns, CLOCK_MONOTONIC). */
typedef struct mt_collmpi_xfer {
    uint32_t idx;         /* send index in the schedule */
    int32_t src, dst;     /* group slots */
    int8_t role;          /* 0 sender, 1 receiver */
    double bytes;
    int64_t post_ns, done_ns;
} mt_collmpi_xfer;

/* The buffers every instance sends from and receives into. */
typedef struct mt_collmpi_bufs {
    char *send, *recv;
    int64_t bytes;        /* capacity of each */
} mt_collmpi_bufs;

typedef struct mt_collmpi mt_collmpi;

/* Starts schedule s (native: the MPI collective for s->p instead) on comm, where this rank is
 * slot `me`. Nothing is copied: s, bufs and env must outlive the instance. MT_EINVAL when a
 * message is larger than the buffers or than an int count. */
mt_status mt_collmpi_start(const mt_mpienv *env, const mt_coll_schedule *s, int native, MPI_Comm comm, int32_t me,
                           mt_collmpi_bufs *bufs, mt_collmpi **out, mt_error *err);
/* Posts what became ready and tests what is in flight; *done = 1 once every part of this rank
 * has completed. now_ns stamps what this poll saw. */
mt_status mt_collmpi_progress(mt_collmpi *c, int64_t now_ns, int *done, mt_error *err);
/* The transfers of this rank (schedule mode; none in native mode), valid until free. */
const mt_collmpi_xfer *mt_collmpi_xfers(const mt_collmpi *c, int32_t *n);
void mt_collmpi_free(mt_collmpi *c);

/* Bytes of the largest single message of s (what the buffers must hold). */
double mt_collmpi_max_message(const mt_coll_schedule *s, int native);

#endif
