/* run/show.h — a command's answer written to a stream, as text or as JSON: one call per kind of
 * result, over report/'s writers, so that a front-end prints what run/ returned without knowing
 * report/ (cli/ is a client of run/ and util/ only: docs/layout.md).
 *
 * JSON is one document, indented, reals to 10 digits (report/jsonw.h), then a newline; a
 * simulation's summary is streamed (10^5 GPU rows without a tree). Text is report/'s table.
 * Invariant: a call writes to `out` only and frees nothing of what it shows (mt_show_json
 * excepted: it takes the document it is given).
 */
#ifndef MT_RUN_SHOW_H
#define MT_RUN_SHOW_H

#include <stdio.h>

#include <jansson.h>

#include "report/ckcheck.h"
#include "report/clusterrep.h"
#include "report/colltable.h"
#include "report/comparison.h"
#include "report/emureport.h"
#include "report/hoptable.h"
#include "report/summary.h"
#include "run/asis.h"
#include "run/perfmodel.h"

/* Prints j and releases it (NULL: nothing). */
void mt_show_json(FILE *out, json_t *j);

/* `simulate`: the summary (per_gpu: a row per GPU; layers: the per-layer table). */
void mt_show_summary(FILE *out, const mt_run_summary *s, int as_json, int per_gpu, int layers);
/* `simulate --as-is`: the run of per-rank Chakra graphs under c (per_rank: a row per rank). */
void mt_show_asis(FILE *out, const mt_asis_job *run, const mt_run_config *c, int as_json, int per_rank);
/* `compare`: the ranked table. */
void mt_show_comparison(FILE *out, const mt_comparison *c, int as_json);
/* `hop`, `collective`: their tables. */
void mt_show_hop(FILE *out, const mt_hop_table *t, int as_json);
void mt_show_coll(FILE *out, const mt_coll_table *t, int as_json);
/* `cluster`: each job alone and together, the shared links. */
void mt_show_cluster(FILE *out, const mt_cluster_result *r, int as_json);
/* `cluster --compare-placements`: a row per policy, best first. */
void mt_show_placements(FILE *out, const mt_cluster_placements *p, int as_json);
/* `chakra-check`: per rank what a Chakra consumer will see. */
void mt_show_ckc(FILE *out, const mt_ckc_report *r, int as_json);
/* `perfmodel`: a fitted model, a predicted step, the GPU table. */
void mt_show_linmodel(FILE *out, const mt_linmodel *m, int as_json);
void mt_show_prediction(FILE *out, const mt_prediction *p, int as_json);
void mt_show_gpus(FILE *out, const mt_gpu_table *t, int as_json);
/* `emulate`: the measured step beside the prediction (rank 0's report). */
void mt_show_emu(FILE *out, const mt_emu_report *r, int as_json);

#endif
