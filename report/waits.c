/* report/waits.c — see waits.h. */
#include "report/waits.h"

#include <stdlib.h>
#include <string.h>

#include "report/describe.h"
#include "report/record.h"

char *mt_waits_what(const mt_program *p, const mt_gpu_stats *g, char *buf, size_t len) {
    buf[0] = 0;
    if (g->waited_for < 0 || g->waited_pc < 0 || g->stage < 0 || g->stage >= p->n_stages ||
        g->waited_pc >= p->stages[g->stage].n_tasks)
        return buf;
    const mt_task *k = &p->stages[g->stage].tasks[g->waited_pc];
    mt_span s = {g->rank, k->kind == MT_TASK_RECV ? MT_SPAN_BUBBLE : MT_SPAN_WAIT, k, 0, 0};
    char name[200];
    mt_span_name(p, &s, 0, name, sizeof name);
    snprintf(buf, len, "%s", strncmp(name, "wait for ", 9) == 0 ? name + 9 : name);
    return buf;
}

typedef struct wrow {
    const mt_gpu_stats *g;
    int64_t us;      /* waited_for_ps to the microsecond: GPUs alike share it */
    char what[160];
} wrow;

static int by_wait(const void *a, const void *b) {
    const wrow *x = a, *y = b;
    if (x->us != y->us) return x->us > y->us ? -1 : 1;
    if (x->g->waited_for != y->g->waited_for) return x->g->waited_for < y->g->waited_for ? -1 : 1;
    int c = strcmp(x->what, y->what);
    if (c) return c;
    return x->g->rank < y->g->rank ? -1 : x->g->rank > y->g->rank;
}

static int alike(const wrow *a, const wrow *b) {
    return a->us == b->us && a->g->waited_for == b->g->waited_for && strcmp(a->what, b->what) == 0;
}

/* The ranks of rows [i, j) (in rank order) as "0, 2-7". */
static void rank_list(FILE *out, const wrow *w, int32_t i, int32_t j) {
    for (int32_t k = i; k < j;) {
        int32_t e = k;
        while (e + 1 < j && w[e + 1].g->rank == w[e].g->rank + 1) e++;
        fprintf(out, "%s%d", k > i ? ", " : "", (int)w[k].g->rank);
        if (e > k) fprintf(out, "-%d", (int)w[e].g->rank);
        k = e + 1;
    }
}

int mt_waits_print(FILE *out, const mt_program *p, const mt_sim_result *r, const char *prefix, int max_lines) {
    int32_t n = 0;
    wrow *w = malloc((size_t)(r->n_gpus > 0 ? r->n_gpus : 1) * sizeof *w);
    if (!w) return -1;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        if (g->waited_for < 0 || (double)g->waited_for_ps < 0.01 * (double)r->step_ps) continue;
        w[n].g = g;
        w[n].us = (g->waited_for_ps + 500000) / 1000000;
        mt_waits_what(p, g, w[n].what, sizeof w[n].what);
        n++;
    }
    qsort(w, (size_t)n, sizeof *w, by_wait);
    int lines = 0, pad = (int)strlen(prefix);
    int32_t i = 0;
    for (; i < n && lines < max_lines;) {
        int32_t j = i + 1;
        while (j < n && alike(&w[i], &w[j])) j++;
        fprintf(out, "%*s%sGPU%s ", lines ? pad : 0, "", lines ? "" : prefix, j - i > 1 ? "s" : "");
        rank_list(out, w, i, j);
        fprintf(out, " wait%s %.3f ms%s for GPU %d", j - i > 1 ? "" : "s", (double)w[i].g->waited_for_ps / 1e9,
                j - i > 1 ? " each" : "", (int)w[i].g->waited_for);
        if (w[i].what[0]) fprintf(out, " (longest: %s)", w[i].what);
        fprintf(out, "\n");
        lines++;
        i = j;
    }
    if (i < n) fprintf(out, "%*s(%d more GPU%s wait%s; JSON waited_for per GPU)\n", pad, "", (int)(n - i),
                       n - i > 1 ? "s" : "", n - i > 1 ? "" : "s");
    free(w);
    return lines;
}
