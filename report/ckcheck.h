/* report/ckcheck.h — what a Chakra consumer (ASTRA-sim above all) will see in a set of per-rank
 * ET files (tracer/chakra.h) and their comm_groups.json: `mitosis chakra-check DIR`.
 *
 * Per rank: nodes by type (GPU compute, of which mitosis.delay; CPU compute; collectives by
 * Chakra type; sends; receives; metadata, memory and invalid nodes), the sum of the GPU compute
 * nodes' duration_micros (what ASTRA-sim's replay runs, in whole microseconds), the bytes of each
 * collective type as comm_size says (in the file's convention), and the communicators it uses.
 * Refused (MT_EFORMAT, one line naming the rank file and node), as ASTRA-sim 518bd513 would drop
 * them silently or abort: a pg_name that is not a decimal id (std::stoi), an id other than 0 with
 * no comm_groups.json beside the files or not listed in it, a rank using a communicator
 * comm_groups.json does not list it in, a communicator whose users are not the members listed
 * (when every rank's file is there), and a collective type ASTRA-sim has no implementation for
 * (REDUCE, GATHER, SCATTER, REDUCE_SCATTER_BLOCK, BARRIER). Warned (still counted): CPU compute
 * nodes and metadata nodes, which ASTRA-sim runs but its overlap statistics refuse.
 * Invariant: every count is over the rank's nodes once; sums are exact over the file's values.
 * Cost: O(nodes) over the graphs given, plus the JSON file.
 */
#ifndef MT_REPORT_CKCHECK_H
#define MT_REPORT_CKCHECK_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

#include "tracer/chakra.h"
#include "util/err.h"

#define MT_CKC_TYPES 10     /* Chakra's collective types 0 .. 9 */

typedef struct mt_ckc_rank {
    int64_t gpu, delays, cpu, coll[MT_CKC_TYPES], send, recv, meta, mem, invalid;
    double gpu_us;                     /* sum of GPU compute duration_micros (delays included) */
    double delay_us;                   /* of which mitosis.delay */
    double coll_bytes[MT_CKC_TYPES];   /* sum of comm_size per collective type */
    double send_bytes;
    int32_t *comms;                    /* communicator ids it uses (0: all ranks), ascending */
    int32_t n_comms;
} mt_ckc_rank;

typedef struct mt_ckc_report {
    int32_t n;                         /* ranks */
    mt_ckc_rank *r;
    int32_t n_groups;                  /* in comm_groups.json (0: none there) */
    int has_groups;                    /* comm_groups.json was found */
    char convention[16];               /* "input" (Chakra) or "output" (mitosis before it) for all-gathers */
    char warning[256];                 /* "" none */
} mt_ckc_report;

/* Checks graphs g[0 .. n) (rank r = g[r]) against `groups_path` (comm_groups.json; a file that
 * does not exist counts as none). On success *out is filled (free with mt_ckc_free). */
mt_status mt_ckc_check(const mt_ck_graph *g, int32_t n, const char *groups_path, mt_ckc_report *out, mt_error *err);
void mt_ckc_free(mt_ckc_report *r);

json_t *mt_ckc_json(const mt_ckc_report *r);
void mt_ckc_print(FILE *out, const mt_ckc_report *r);

#endif
