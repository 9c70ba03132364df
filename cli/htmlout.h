/* cli/htmlout.h — `--html FILE` of `simulate` and `compare`: records one run's timeline and
 * writes the report (report/html.h) with the run's summary lines after the command's own.
 */
#ifndef MT_CLI_HTMLOUT_H
#define MT_CLI_HTMLOUT_H

#include "cli/planopts.h"
#include "cli/simrun.h"
#include "report/html.h"
#include "report/record.h"

/* GPUs the timeline records (the page says so). */
#define MT_CLI_HTML_GANTT_GPUS 16

/* Sets f (initialised by the caller) to the GPUs the timeline draws: 0..MT_CLI_HTML_GANTT_GPUS-1
 * when the plan has more, else all. A plan that does not resolve is left for the run to report. */
mt_status mt_cli_html_gpus(mt_span_filter *f, const trace *t, const mt_plan *plan, mt_error *err);

/* Writes path: rep as the caller filled it (title, its summary lines, rows), then the run's own
 * summary lines (trace, plan, batch, network, op times, host model, step time, memory) and its
 * per-GPU, per-layer and timeline sections (rec may be NULL: no timeline; the timeline draws
 * the GPUs `gpus` keeps, NULL: the recorder's). */
mt_status mt_cli_html_write(const char *path, const mt_html_report *rep, const mt_planopts *po, const trace *t,
                            const mt_simrun *run, const mt_recorder *rec, const mt_span_filter *gpus,
                            mt_error *err);

#endif
