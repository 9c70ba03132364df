/* tracer/chakra.h — one rank's Chakra execution trace (tracer/chakra.proto) as a checked graph.
 *
 * A file `NAME.RANK.et` is a varint byte length then a GlobalMetadata, then for each node a varint
 * byte length then a Node (protobuf-c unpacks each message). mt_ck_read keeps what mitosis uses
 * of each node (type, duration, collective, send/receive, compute work) and resolves its control
 * and data dependencies to node indices. Errors, one line naming the file and the byte offset or
 * node: a varint cut short, a message longer than the bytes left, a message protobuf-c refuses (a
 * field of the wrong wire type), a repeated node id, a dependency on an id the file lacks, and a
 * dependency cycle (naming a node on it), a duration or size past the limits below.
 * A GlobalMetadata attribute comm_size_convention other than "chakra" is refused.
 * Invariant after a successful read: nodes[] is in file order, every deps[] entry is the index of
 * a node of the graph, and `order` lists every node once with each node after all it depends on
 * (Kahn's order, ties by file order).
 * Cost: O(bytes + nodes + dependencies) time; memory O(nodes + dependencies) plus the names.
 */
#ifndef MT_TRACER_CHAKRA_H
#define MT_TRACER_CHAKRA_H

#include <stddef.h>
#include <stdint.h>

#include "tracer/sniff.h"
#include "util/err.h"

/* Chakra's NodeType values (the wire's). */
enum {
    MT_CK_INVALID = 0, MT_CK_METADATA = 1, MT_CK_MEM_LOAD = 2, MT_CK_MEM_STORE = 3,
    MT_CK_COMP = 4, MT_CK_SEND = 5, MT_CK_RECV = 6, MT_CK_COLL = 7
};
/* Chakra's CollectiveCommType values (the wire's). */
enum {
    MT_CK_ALL_REDUCE = 0, MT_CK_REDUCE = 1, MT_CK_ALL_GATHER = 2, MT_CK_GATHER = 3, MT_CK_SCATTER = 4,
    MT_CK_BROADCAST = 5, MT_CK_ALL_TO_ALL = 6, MT_CK_REDUCE_SCATTER = 7, MT_CK_REDUCE_SCATTER_BLOCK = 8,
    MT_CK_BARRIER = 9
};

/* Beyond these a node is refused (the clock is int64 picoseconds). */
#define MT_CK_DURATION_MAX_PS 1e15  /* 1000 s */
#define MT_CK_COMM_MAX_BYTES 1e15   /* 1 PB */

typedef struct mt_ck_node {
    uint64_t id;
    char *name;              /* owned; "" when the node has none */
    int32_t type;            /* MT_CK_* node type */
    int64_t duration_ps;     /* the attribute mitosis.duration_ps when present (mitosis writes it, as
                              * microseconds are too coarse), else duration_micros x 1e6 */
    int64_t micros;          /* duration_micros as written (what ASTRA-sim runs) */
    int32_t comm_type;       /* MT_CK_ALL_REDUCE...; -1 when absent */
    double comm_bytes;       /* comm_size (collective per-rank buffer, or a send's bytes) */
    int32_t src, dst, tag;   /* comm_src, comm_dst, comm_tag; -1 when absent */
    char *pg;                /* pg_name, owned; NULL when absent */
    char *algo;              /* mitosis.algo (the collective algorithm mitosis ran), owned; NULL */
    int32_t chunks;          /* mitosis.chunks, 0 when absent */
    double flops, bytes;     /* num_ops, tensor_size; 0 when absent */
    int is_cpu;              /* is_cpu_op */
    int is_delay;            /* mitosis.delay: a gap mitosis filled (GPU time that is not compute) */
    uint32_t dep_begin, ndeps; /* deps[dep_begin .. + ndeps): indices of nodes it waits for */
} mt_ck_node;

typedef struct mt_ck_graph {
    char *path;              /* owned copy of the file name, for messages */
    char version[32];        /* GlobalMetadata.version */
    int ag_input;            /* 1: an ALL_GATHER's comm_size is each rank's input (Chakra's convention:
                              * GlobalMetadata attribute comm_size_convention = "chakra", or a file
                              * without mitosis.* attributes); 0: its output (mitosis files written
                              * before the attribute existed) */
    int foreign_attrs;       /* while reading: a node had a mitosis.* attribute */
    int32_t n_nodes, cap_nodes;
    mt_ck_node *nodes;
    uint32_t n_deps, cap_deps;
    uint32_t *deps;
    int32_t *order;          /* n_nodes indices, dependencies first */
} mt_ck_graph;

/* Reads and checks `path` into g (zeroed by the caller). On failure g holds nothing to free.
 * MT_EIO when the file cannot be read, MT_EFORMAT for every fault listed above. */
mt_status mt_ck_read(const char *path, mt_ck_graph *g, mt_error *err);
/* The same from bytes in memory (path only names them in messages). */
mt_status mt_ck_parse(const char *path, const uint8_t *buf, size_t len, mt_ck_graph *g, mt_error *err);
void mt_ck_graph_free(mt_ck_graph *g);

/* Whether a file's first len bytes look like a Chakra ET: a varint length then a GlobalMetadata
 * whose first field is a short version string of digits and dots ("0.0.4"). */
mt_sniff mt_ck_sniff(const char *head, size_t len);

/* Chakra's name of a collective type ("ALL_REDUCE"), "?" when unknown. */
const char *mt_ck_comm_name(int32_t comm_type);

#endif
