/* report/waits.h — whom the GPUs waited for (sim/simulate.h: peer wait and bubble credited to
 * the rank that arrived last), as the `waits` lines of the text summary and the HTML report.
 *
 * GPUs alike (the same time to the microsecond, stage and task of their longest wait) are one
 * line naming the ranks they waited for ("GPUs 0, 2-3 wait 21.000 ms each for GPU 1 (GPU 0's
 * longest: data-parallel gradient buckets)", "GPUs 0-1, 4-5 wait 55.794 ms each for one of GPUs
 * 2-3, 6-7 (...)"); the lines are ordered by that time, longest first, and only waits of at
 * least 1% of the step are named.
 * Costs: O(N log N) for N GPUs.
 */
#ifndef MT_REPORT_WAITS_H
#define MT_REPORT_WAITS_H

#include <stddef.h>
#include <stdio.h>

#include "extrapolate/program.h"
#include "sim/simulate.h"

/* What GPU g waited for longest, into buf: its longest wait's task as describe.h names it
 * without "wait for " ("allreduce 1.2 MB (emb)", "activations mb 0 from GPU 2"), "" when it
 * waited for nobody. Returns buf. */
char *mt_waits_what(const mt_program *p, const mt_gpu_stats *g, char *buf, size_t len);

/* Up to max_lines lines of the waits summary (the first after prefix, the others indented as
 * far; a last line counts the GPUs left out). Returns the lines written (0: no GPU waited 1% of the step for another), -1 out of memory. */
int mt_waits_print(FILE *out, const mt_program *p, const mt_sim_result *r, const char *prefix, int max_lines);

#endif
