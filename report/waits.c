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
} wrow;

/* GPUs alike: the same time, stage and longest-wait task (their peers may differ). */
static int cmp_class(const wrow *x, const wrow *y) {
    if (x->us != y->us) return x->us > y->us ? -1 : 1;
    if (x->g->stage != y->g->stage) return x->g->stage < y->g->stage ? -1 : 1;
    if (x->g->waited_pc != y->g->waited_pc) return x->g->waited_pc < y->g->waited_pc ? -1 : 1;
    return 0;
}

static int by_wait(const void *a, const void *b) {
    const wrow *x = a, *y = b;
    int c = cmp_class(x, y);
    return c ? c : x->g->rank < y->g->rank ? -1 : x->g->rank > y->g->rank;
}

static int by_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return x < y ? -1 : x > y;
}

/* Sorted distinct ranks as "0, 2-7". */
static void rank_list(FILE *out, const int32_t *r, int32_t n) {
    for (int32_t k = 0; k < n;) {
        int32_t e = k;
        while (e + 1 < n && r[e + 1] == r[e] + 1) e++;
        fprintf(out, "%s%d", k ? ", " : "", (int)r[k]);
        if (e > k) fprintf(out, "-%d", (int)r[e]);
        k = e + 1;
    }
}

int mt_waits_print(FILE *out, const mt_program *p, const mt_sim_result *r, const char *prefix, int max_lines) {
    int32_t n = 0;
    size_t cap = (size_t)(r->n_gpus > 0 ? r->n_gpus : 1);
    wrow *w = malloc(cap * sizeof *w);
    int32_t *who = malloc(2 * cap * sizeof *who), *whom = who ? who + cap : NULL;
    if (!w || !who) {
        free(w);
        free(who);
        return -1;
    }
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        if (g->waited_for < 0 || (double)g->waited_for_ps < 0.01 * (double)r->step_ps) continue;
        w[n].g = g;
        w[n].us = (g->waited_for_ps + 500000) / 1000000;
        n++;
    }
    qsort(w, (size_t)n, sizeof *w, by_wait);
    int lines = 0, pad = (int)strlen(prefix);
    int32_t i = 0;
    for (; i < n && lines < max_lines;) {
        int32_t j = i + 1, m = 0;
        while (j < n && cmp_class(&w[i], &w[j]) == 0) j++;
        for (int32_t k = i; k < j; k++) {
            who[k - i] = w[k].g->rank;
            whom[k - i] = w[k].g->waited_for;
        }
        qsort(whom, (size_t)(j - i), sizeof *whom, by_int);
        for (int32_t k = 0; k < j - i; k++)
            if (k == 0 || whom[k] != whom[m - 1]) whom[m++] = whom[k];
        fprintf(out, "%*s%sGPU%s ", lines ? pad : 0, "", lines ? "" : prefix, j - i > 1 ? "s" : "");
        rank_list(out, who, j - i);
        fprintf(out, " wait%s %.3f ms%s for %sGPU%s ", j - i > 1 ? "" : "s", (double)w[i].g->waited_for_ps / 1e9,
                j - i > 1 ? " each" : "", m > 1 ? "one of " : "", m > 1 ? "s" : "");
        rank_list(out, whom, m);
        char what[160];
        if (mt_waits_what(p, w[i].g, what, sizeof what)[0] && j - i > 1)
            fprintf(out, " (GPU %d's longest: %s)", (int)w[i].g->rank, what);
        else if (what[0])
            fprintf(out, " (longest: %s)", what);
        fprintf(out, "\n");
        lines++;
        i = j;
    }
    if (i < n) fprintf(out, "%*s(%d more GPU%s wait%s; JSON waited_for per GPU)\n", pad, "", (int)(n - i),
                       n - i > 1 ? "s" : "", n - i > 1 ? "" : "s");
    free(w);
    free(who);
    return lines;
}
