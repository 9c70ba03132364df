/* report/chakra.h — the simulated workload written as Chakra execution traces (tracer/chakra.proto),
 * one file per rank, `DIR/mitosis.RANK.et` (and `DIR/mitosis.RANK.json` with json), from what the
 * simulation recorded (report/record.h: every GPU's compute, collective and send spans).
 *
 * Nodes of rank r, in the order their spans ended: COMP_NODE per compute task (its simulated
 * duration), COMM_COLL_NODE per collective (comm_type, comm_size = the per-rank buffer, pg_name =
 * "KIND.GROUP", e.g. "dp.3", and mitosis.algo / mitosis.chunks: the schedule mitosis ran),
 * COMM_SEND_NODE per pipeline send (comm_src, comm_dst, comm_tag = micro-batch x 2 + (backward)),
 * COMM_RECV_NODE per send into r. Dependencies reproduce the simulated order: a compute node
 * depends on the previous one (ctrl), and every node on the latest node of its rank that ended
 * at or before it started (data); when that leaves a gap (a host launch delay, a collective
 * waiting for a later member), a GPU COMP_NODE "mitosis.delay" (attribute mitosis.delay) of the
 * gap's length fills it — unless the gap overlaps one of the rank's compute spans (a collective
 * waiting for its members while the GPU computes): no delay then, the collective waits for its
 * members in any consumer. Replaying the files with `simulate DIR --as-is` on the same network
 * therefore starts every node when the simulation did. Durations are written in microseconds
 * (duration_micros, as Chakra has them; per rank the rounding carries over, so the written
 * durations of any run of consecutive nodes sum to within 0.5 us of the exact sum) and exactly in
 * picoseconds (mitosis.duration_ps). A BROADCAST's duration_micros is its simulated time
 * (ASTRA-sim times broadcasts from it).
 * Sizes (comm_size, GlobalMetadata attribute "comm_size_convention" = "chakra"): all-reduce,
 * all-to-all, broadcast, reduce: the per-rank buffer; reduce-scatter: each rank's input (the
 * whole buffer); all-gather: each rank's input (its output / N), as Chakra's PyTorch converter
 * and ASTRA-sim read them.
 * Beside the ranks, DIR/comm_groups.json maps every communicator id to its member ranks
 * (ASTRA-sim's --comm-group-configuration). comm_only: only the communication nodes, each
 * depending on the latest communication nodes (at most 3) it waited for through the others.
 * Refused: plans whose collectives mitosis cannot name in Chakra (a traced send/recv pair run
 * as a collective) or that depend on uneven per-rank expert shares (MoE all-to-alls whose ranks
 * receive different shares; even ones are plain ALL_TO_ALLs).
 * Costs: the spans are held by the recorder (40 bytes each); writing holds one rank's nodes
 * at a time (O(its spans)) plus an index over all spans (O(spans)); files are written as they
 * are built, one rank at a time.
 */
#ifndef MT_REPORT_CHAKRA_H
#define MT_REPORT_CHAKRA_H

#include <stdint.h>

#include "extrapolate/program.h"
#include "report/record.h"
#include "util/err.h"

typedef struct mt_ckx_src {
    const mt_program *prog;      /* the resolved plan and its group table */
    const mt_recorder *rec;      /* every span of the ranks to write (and all pipeline sends) */
    int32_t n_gpus;
    int32_t ranks_per_node;      /* as the simulation used it (hier) */
} mt_ckx_src;

typedef struct mt_ckx_opts {
    int json;                    /* also DIR/mitosis.RANK.json */
    int comm_only;               /* only communication nodes (and their dependencies) */
} mt_ckx_opts;

/* The GlobalMetadata attribute naming the size convention, and the value mitosis writes. */
#define MT_CKX_CONVENTION_ATTR "comm_size_convention"
#define MT_CKX_CONVENTION "chakra"
#define MT_CKX_COMM_GROUPS "comm_groups.json"


typedef struct mt_ckx_stats {
    int32_t files;               /* ranks written */
    int64_t nodes;               /* over all files */
    int64_t delays;              /* of which mitosis.delay nodes */
    int64_t waits;               /* gaps left to the consumer (a collective waiting while the GPU computes) */
    int32_t communicators;       /* in comm_groups.json */
    double bytes;                /* of the .et files */
} mt_ckx_stats;

/* The communicator id of the group of `kind` holding `rank` (1, 2, ...: ASTRA-sim reads "" and "0"
 * as all ranks): the kinds' groups numbered one after another in table order; 0 when in none. */
int32_t mt_ckx_comm_id(const mt_groups *g, int kind, int32_t rank);
/* The members of that group in rank order into out (mt_group_size entries). */
void mt_ckx_members(const mt_groups *g, int kind, int32_t rank, int32_t *out);

/* Writes DIR/mitosis.RANK.et (and .json) for every rank `ranks` keeps (NULL: all), then
 * DIR/comm_groups.json. dir must
 * exist. MT_EIO naming the file that cannot be written; MT_EINVAL for a plan it cannot express. On
 * failure the files this call wrote are removed (no partial set is left). */
mt_status mt_ckx_write(const mt_ckx_src *s, const char *dir, const mt_span_filter *ranks, const mt_ckx_opts *o,
                       mt_ckx_stats *st, mt_error *err);

#endif
