/* run/asis.h — `simulate DIR --as-is` as a library call: a set of per-rank Chakra ET files
 * (`NAME.RANK.et`, e.g. written by `simulate --chakra`, MLSynth or ASTRA-sim's generators) read
 * (tracer/chakra.h) and simulated as given (sim/asis.h) on the run's network: `switch:N` without
 * --topology, N the number of ranks.
 *
 * Files: a directory's entries ending in `.RANK.et` (other files ignored), or files named one by
 * one. Ranks must be 0 .. N-1, once each, with one NAME. Collectives use --algo / --chunks unless
 * a node names its own (mitosis.algo). Errors, one line naming the file: no rank files, a rank
 * missing or repeated, two names, and every reader and run error.
 * Costs: every rank's graph in memory at once (the run needs them all), plus sim/asis.h's.
 */
#ifndef MT_RUN_ASIS_H
#define MT_RUN_ASIS_H

#include "report/asissum.h"
#include "report/ckcheck.h"
#include "run/config.h"
#include "tracer/chakra.h"

typedef struct mt_asis_job {
    int32_t n;
    mt_ck_graph *g;          /* rank r's graph */
    char name[256];          /* NAME of NAME.RANK.et */
    char topology[256];
    mt_asis_result res;
    double wall_s;
} mt_asis_job;

/* Reads c's paths (paths[0 .. n_paths)) into out->g / out->n, without running them. */
mt_status mt_run_asis_load(const mt_run_config *c, mt_asis_job *out, mt_error *err);
/* Reads c's paths (paths[0 .. n_paths)) and runs them on c's network. */
mt_status mt_run_asis(const mt_run_config *c, mt_asis_job *out, mt_error *err);
void mt_asis_job_free(mt_asis_job *r);
/* The report view (pointers into r and c). */
mt_asis_summary mt_asis_job_summary(const mt_asis_job *r, const mt_run_config *c);

/* `mitosis chakra-check`: reads c's paths as mt_run_asis_load and checks them against the
 * communicator table `groups` (NULL: comm_groups.json beside the files, ASTRA-sim's
 * --comm-group-configuration) into *out (free with mt_ckc_free): what ASTRA-sim will see, and
 * MT_EINVAL for what it would drop silently (report/ckcheck.h). */
mt_status mt_run_chakra_check(const mt_run_config *c, const char *groups, mt_ckc_report *out, mt_error *err);

/* The rank of a file name `NAME.RANK.et` and the length of NAME; -1 when it is not one. */
int32_t mt_asis_rank_of(const char *file, size_t *name_len);

#endif
