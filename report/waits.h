/* report/waits.h — whom the GPUs waited for (sim/simulate.h: peer wait and bubble credited to
 * the rank that arrived last), as the `waits` lines of the text summary, the HTML report and the
 * web server's run result ("waits"): one computation (mt_waits_of), three writers.
 *
 * GPUs alike (the same time to the microsecond, stage and task of their longest wait) are one
 * line naming the ranks they waited for ("GPUs 0, 2-3 wait 21.000 ms each for GPU 1 (GPU 0's
 * longest: data-parallel gradient buckets)", "GPUs 0-1, 4-5 wait 55.794 ms each for one of GPUs
 * 2-3, 6-7 (...)"); the lines are ordered by that time, longest first, and only waits of at
 * least MT_WAITS_MIN_SHARE of the step are named. A list of more than 6 ranges is said
 * compactly: regular blocks as "GPUs 8-15, 72-79, ..., 131032-131039 (2048 blocks of 8, one every
 * 64 GPUs)", else the first 4 ranges and "... and N more ranges" (the JSON's gpus and
 * waited_for list every rank).
 * Costs: O(N log N) for N GPUs.
 */
#ifndef MT_REPORT_WAITS_H
#define MT_REPORT_WAITS_H

#include <stddef.h>
#include <stdio.h>

#include <jansson.h>

#include "extrapolate/program.h"
#include "sim/simulate.h"

/* A GPU's wait under this share of the step is not named. */
#define MT_WAITS_MIN_SHARE 0.01
/* The lines the text summary (and the server's result) names at most. */
#define MT_WAITS_LINES 3

/* One line: the GPUs alike (who, sorted), the distinct ranks they waited for (whom, sorted), how
 * long each waited (ms: the first GPU's), and the task of its longest wait (what; "" none). */
typedef struct mt_waits_line {
    const int32_t *who, *whom;
    int32_t n_who, n_whom;
    int32_t rank;              /* who[0]: the GPU whose longest wait `what` names */
    double ms;
    char what[160];
} mt_waits_line;

/* The lines, longest first, and the GPUs that waited but were left out (over max_lines). */
typedef struct mt_waits {
    mt_waits_line *lines;
    int32_t n_lines, n_more;
    int32_t *ranks;            /* the lines' who and whom */
} mt_waits;

/* What GPU g waited for longest, into buf: its longest wait's task as describe.h names it
 * without "wait for " ("allreduce 1.2 MB (emb)", "activations mb 0 from GPU 2"), "" when it
 * waited for nobody. Returns buf. */
char *mt_waits_what(const mt_program *p, const mt_gpu_stats *g, char *buf, size_t len);

/* At most max_lines lines of result r into *out (mt_waits_free frees them). Returns 0, -1 out of
 * memory (then *out is empty). */
int mt_waits_of(const mt_program *p, const mt_sim_result *r, int max_lines, mt_waits *out);
void mt_waits_free(mt_waits *w);

/* A line as the text says it, without a newline: "GPUs 0, 2-3 wait 21.000 ms each for GPU 1 (GPU
 * 0's longest: ...)". */
void mt_waits_line_write(FILE *out, const mt_waits_line *l);

/* Up to max_lines lines of the waits summary (the first after prefix, the others indented as
 * far; a last line counts the GPUs left out). Returns the lines written (0: no GPU waited 1% of the step for another), -1 out of memory. */
int mt_waits_print(FILE *out, const mt_program *p, const mt_sim_result *r, const char *prefix, int max_lines);

/* {"lines": [{"gpus": [ranks], "waited_for": [ranks], "ms", "longest" (null: none), "longest_of"
 * (the GPU whose longest it is), "text" (the line as the text says it)}], "more_gpus": the GPUs
 * left out, "min_share": MT_WAITS_MIN_SHARE}; NULL out of memory. */
json_t *mt_waits_json(const mt_waits *w);

#endif
