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

/* The GPUs that waited at least MT_WAITS_MIN_SHARE of the step, alike ones together, longest
 * first; their count, -1 out of memory. */
static int32_t waiting_rows(const mt_sim_result *r, wrow **out) {
    int32_t n = 0;
    wrow *w = malloc((size_t)(r->n_gpus > 0 ? r->n_gpus : 1) * sizeof *w);
    if (!(*out = w)) return -1;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        const mt_gpu_stats *g = &r->gpus[i];
        if (g->waited_for < 0 || (double)g->waited_for_ps < MT_WAITS_MIN_SHARE * (double)r->step_ps) continue;
        w[n].g = g;
        w[n].us = (g->waited_for_ps + 500000) / 1000000;
        n++;
    }
    qsort(w, (size_t)n, sizeof *w, by_wait);
    return n;
}

/* The line of the class w[0..n): its GPUs and their distinct peers into ranks (2n room). */
static void class_line(const mt_program *p, const wrow *w, int32_t n, int32_t *ranks, mt_waits_line *l) {
    int32_t *who = ranks, *whom = ranks + n, m = 0;
    for (int32_t k = 0; k < n; k++) {
        who[k] = w[k].g->rank;
        whom[k] = w[k].g->waited_for;
    }
    qsort(whom, (size_t)n, sizeof *whom, by_int);
    for (int32_t k = 0; k < n; k++)
        if (k == 0 || whom[k] != whom[m - 1]) whom[m++] = whom[k];
    *l = (mt_waits_line){.who = who, .whom = whom, .n_who = n, .n_whom = m, .rank = w[0].g->rank,
                         .ms = (double)w[0].g->waited_for_ps / 1e9};
    mt_waits_what(p, w[0].g, l->what, sizeof l->what);
}

int mt_waits_of(const mt_program *p, const mt_sim_result *r, int max_lines, mt_waits *out) {
    *out = (mt_waits){0};
    wrow *w;
    int32_t n = waiting_rows(r, &w);
    size_t cap = (size_t)(n > 0 ? n : 1);
    out->lines = n >= 0 ? malloc(cap * sizeof *out->lines) : NULL;
    out->ranks = out->lines ? malloc(2 * cap * sizeof *out->ranks) : NULL;
    if (!out->ranks) {
        free(w);
        mt_waits_free(out);
        return -1;
    }
    int32_t i = 0;
    while (i < n && out->n_lines < max_lines) {
        int32_t j = i + 1;
        while (j < n && cmp_class(&w[i], &w[j]) == 0) j++;
        class_line(p, w + i, j - i, out->ranks + 2 * i, &out->lines[out->n_lines++]);
        i = j;
    }
    out->n_more = n - i;
    free(w);
    return 0;
}

void mt_waits_free(mt_waits *w) {
    free(w->lines);
    free(w->ranks);
    *w = (mt_waits){0};
}

/* A list of more ranges than this is said compactly (a line stays short at 2^20 GPUs; the JSON's
 * gpus / waited_for keep every rank). */
enum { RANGES_MAX = 6, RANGES_SHOWN = 4 };

/* The index of the last rank of the run of consecutive ranks that starts at r[k]. */
static int32_t run_end(const int32_t *r, int32_t n, int32_t k) {
    while (k + 1 < n && r[k + 1] == r[k] + 1) k++;
    return k;
}

static void range_write(FILE *out, const int32_t *r, int32_t k, int32_t e, const char *sep) {
    fprintf(out, "%s%d", sep, (int)r[k]);
    if (e > k) fprintf(out, "-%d", (int)r[e]);
}

/* 1 when r[0..n) is blocks of *len consecutive ranks, one every *stride ranks (stride > len). */
static int strided(const int32_t *r, int32_t n, int32_t *len, int32_t *stride) {
    *len = run_end(r, n, 0) + 1;
    if (n % *len || n == *len) return 0;
    *stride = r[*len] - r[0];
    if (*stride <= *len) return 0;
    for (int32_t i = 0; i < n; i++)
        if (r[i] != r[0] + (i / *len) * *stride + i % *len) return 0;
    return 1;
}

/* Sorted distinct ranks as "0, 2-7"; over RANGES_MAX ranges "8-15, 72-79, ..., 131032-131039
 * (2048 blocks of 8, one every 64 GPUs)" when regular, else the first RANGES_SHOWN ranges and
 * "... and 97 more ranges". */
static void rank_list(FILE *out, const int32_t *r, int32_t n) {
    int32_t runs = 0, len, stride;
    for (int32_t k = 0; k < n; k = run_end(r, n, k) + 1) runs++;
    if (runs > RANGES_MAX && strided(r, n, &len, &stride)) {
        range_write(out, r, 0, len - 1, "");
        range_write(out, r, len, 2 * len - 1, ", ");
        range_write(out, r, n - len, n - 1, ", ..., ");
        if (len > 1) fprintf(out, " (%d blocks of %d, one every %d GPUs)", (int)(n / len), (int)len, (int)stride);
        else fprintf(out, " (%d GPUs, one every %d)", (int)n, (int)stride);
        return;
    }
    int32_t shown = 0;
    for (int32_t k = 0; k < n && (runs <= RANGES_MAX || shown < RANGES_SHOWN); shown++) {
        int32_t e = run_end(r, n, k);
        range_write(out, r, k, e, k ? ", " : "");
        k = e + 1;
    }
    if (shown < runs) fprintf(out, ", ... and %d more ranges", (int)(runs - shown));
}

void mt_waits_line_write(FILE *out, const mt_waits_line *l) {
    int many = l->n_who > 1;
    fprintf(out, "GPU%s ", many ? "s" : "");
    rank_list(out, l->who, l->n_who);
    fprintf(out, " wait%s %.3f ms%s for %sGPU%s ", many ? "" : "s", l->ms, many ? " each" : "",
            l->n_whom > 1 ? "one of " : "", l->n_whom > 1 ? "s" : "");
    rank_list(out, l->whom, l->n_whom);
    if (l->what[0] && many) fprintf(out, " (GPU %d's longest: %s)", (int)l->rank, l->what);
    else if (l->what[0]) fprintf(out, " (longest: %s)", l->what);
}

int mt_waits_print(FILE *out, const mt_program *p, const mt_sim_result *r, const char *prefix, int max_lines) {
    mt_waits w;
    if (mt_waits_of(p, r, max_lines, &w) < 0) return -1;
    int pad = (int)strlen(prefix);
    for (int32_t k = 0; k < w.n_lines; k++) {
        fprintf(out, "%*s%s", k ? pad : 0, "", k ? "" : prefix);
        mt_waits_line_write(out, &w.lines[k]);
        fprintf(out, "\n");
    }
    if (w.n_more) fprintf(out, "%*s(%d more GPU%s wait%s; JSON waited_for per GPU)\n", pad, "", (int)w.n_more,
                          w.n_more > 1 ? "s" : "", w.n_more > 1 ? "" : "s");
    int lines = w.n_lines;
    mt_waits_free(&w);
    return lines;
}

static json_t *ranks_json(const int32_t *r, int32_t n) {
    json_t *a = json_array();
    for (int32_t k = 0; a && k < n; k++) json_array_append_new(a, json_integer(r[k]));
    return a;
}

/* The line's text as mt_waits_line_write says it (room for every rank: at most 13 characters
 * each, ", -2147483648"); NULL out of memory. */
static json_t *line_text_json(const mt_waits_line *l) {
    size_t cap = 16 * (size_t)(l->n_who + l->n_whom) + sizeof l->what + 128;
    char *buf = calloc(cap, 1);
    FILE *m = buf ? fmemopen(buf, cap - 1, "w") : NULL;
    json_t *text = NULL;
    if (m) {
        mt_waits_line_write(m, l);
        if (fclose(m) == 0) text = json_string(buf);
    }
    free(buf);
    return text;
}

json_t *mt_waits_json(const mt_waits *w) {
    json_t *lines = json_array(), *o = json_object();
    for (int32_t k = 0; lines && k < w->n_lines; k++) {
        const mt_waits_line *l = &w->lines[k];
        json_t *text = line_text_json(l);
        json_t *x = text ? json_pack("{s:o, s:o, s:f, s:o, s:i, s:o}", "gpus", ranks_json(l->who, l->n_who),
                                     "waited_for", ranks_json(l->whom, l->n_whom), "ms", l->ms, "longest",
                                     l->what[0] ? json_string(l->what) : json_null(), "longest_of", (int)l->rank,
                                     "text", text)
                         : NULL;
        if (!x || json_array_append_new(lines, x) != 0) {
            json_decref(lines);
            lines = NULL;
        }
    }
    if (!lines || !o || json_object_set_new(o, "lines", lines) != 0 ||
        json_object_set_new(o, "more_gpus", json_integer(w->n_more)) != 0 ||
        json_object_set_new(o, "min_share", json_real(MT_WAITS_MIN_SHARE)) != 0) {
        json_decref(o);
        return NULL;
    }
    return o;
}
