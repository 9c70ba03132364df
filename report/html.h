/* report/html.h — one self-contained HTML report of a simulation (and of a plan comparison or
 * a sweep): no network, no external files; inline SVG charts and a little vanilla JavaScript.
 *
 * Sections, each with a fixed element id that tests and scripts can look for:
 *   #summary       key/value table (the caller's lines)
 *   #plans, #compare-chart   ranked plans: table and step-time bars (rows_kind MT_HTML_PLANS)
 *   #sweep, #sweep-chart     one row per swept value: table and step-time line (MT_HTML_SWEEP)
 *   #gpu-bars      per GPU stacked bars: compute / host wait / exposed comm / bubble / idle
 *                  (first 64 GPUs)
 *   #layer-bars    per layer compute and collective time (first 300 layers)
 *   #gantt         timeline of the recorded spans, two lanes per GPU (compute stream: compute,
 *                  host waits and stream waits; communication: collectives and sends); wheel or
 *                  buttons zoom,
 *                  drag pans, double-click resets. Hover shows a span's details (<title>).
 * The detail sections describe one run (prog/res/rec, named by detail_label); any of them is
 * left out when its input is NULL. The timeline draws the GPUs `gpus` keeps (at most 64), and
 * says so when that is not all of them; spans over max_spans are left out, the shortest first,
 * and the page says how many.
 *
 * Every text taken from the caller or the trace (layer names, labels, reasons) is
 * HTML-escaped. Cost: O(rows + GPUs + layers + spans log spans) time, O(spans) extra memory;
 * the file is about 200 bytes per drawn span.
 */
#ifndef MT_REPORT_HTML_H
#define MT_REPORT_HTML_H

#include <stdint.h>

#include "extrapolate/program.h"
#include "report/record.h"
#include "sim/simulate.h"
#include "util/err.h"

/* Text with &, <, >, " and ' escaped: safe in element content and quoted attributes. */
void mt_html_esc(FILE *f, const char *s);

typedef struct mt_html_kv {
    const char *key, *value;
} mt_html_kv;

/* One compared plan or swept value. */
typedef struct mt_html_row {
    const char *label;          /* plan (compare's --plans syntax) or swept value */
    const char *skipped;        /* why it did not run; NULL when it ran */
    int pruned;                 /* 1: not run because its bound keeps it out of the exact rows
                                 * (run/prune.h; `skipped` says why), 0: it could not run */
    double step_ms, speedup;
    double samples_per_s;       /* < 0: unknown (the trace has no batch size) */
    double exposed_ms, peer_ms, host_wait_ms, bubble_ms; /* max over GPUs */
    double mem_bytes;           /* largest estimated peak per GPU */
    int over_mem;               /* 1: mem_bytes is over the memory limit */
} mt_html_row;

typedef enum { MT_HTML_NONE = 0, MT_HTML_PLANS, MT_HTML_SWEEP } mt_html_rows_kind;

typedef struct mt_html_report {
    const char *title;
    const mt_html_kv *summary;
    int32_t n_summary;
    mt_html_rows_kind rows_kind;
    const char *sweep_name;     /* MT_HTML_SWEEP: what was swept ("link-bw") */
    const mt_html_row *rows;    /* plans ranked best first, or in sweep order */
    int32_t n_rows;
    double mem_limit;           /* bytes per GPU the rows' memory is held against, 0 unknown */
    const char *detail_label;   /* the run the per-GPU, per-layer and timeline sections show */
    const mt_program *prog;     /* NULL: no detail sections */
    const mt_sim_result *res;
    const mt_recorder *rec;     /* NULL: no timeline */
    const mt_span_filter *gpus; /* the GPUs the timeline draws; NULL: the recorder's filter */
    int64_t max_spans;          /* timeline cap; 0 = 20000 */
} mt_html_report;

/* Writes the report to path. MT_EIO with a message naming the file when it cannot be written;
 * MT_ENOMEM. */
mt_status mt_html_write(const char *path, const mt_html_report *r, mt_error *err);

#endif
