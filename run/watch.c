/* run/watch.c — a compare job watched from a terminal (run/watch.h). */
#include <string.h>
#include <unistd.h>

#include "run/watch.h"

/* The rows done, on the terminal (the clock of the estimate starts with the rows). */
static void on_rows(void *ctx, int32_t done, int32_t n, const char *label) {
    mt_watch *w = ctx;
    if (!w->started) {
        mt_progress_end(&w->progress);
        mt_progress_init(&w->progress, w->tty, 0);
        w->started = 1;
    }
    if (done < n) mt_progress_items(&w->progress, w->cc->sweep.kind ? "runs" : "plans", done, n, label);
    else mt_progress_end(&w->progress);
}

/* Every row's cost, before they run: on stdout for --dry-run, else on the terminal. */
static void on_estimate(void *ctx, const mt_compare_estimate *e) {
    mt_watch *w = ctx;
    char line[512];
    mt_compare_estimate_text(e, w->cc->sweep.kind ? "runs" : "plans", line, sizeof line);
    mt_progress_end(&w->progress);
    if (w->dry_run) printf("estimate   %s\n", line);
    else fprintf(w->tty, "estimate   %s; --dry-run to stop here\n", line);
}

void mt_watch_init(mt_watch *w, mt_job *j, FILE *tty) {
    memset(w, 0, sizeof *w);
    w->tty = tty;
    w->cc = &j->cc;
    mt_progress_init(&w->progress, tty, 0);
    j->cc.progress = on_rows;
    j->cc.progress_ctx = w;
}

mt_status mt_watch_load(mt_watch *w, mt_job *j, mt_status st, mt_error *err) {
    mt_progress_init(&w->progress, w->tty, 0);
    if (st != MT_OK) return st;
    char what[256];
    snprintf(what, sizeof what, "loading %s", j->rc.paths[0]);
    mt_progress_phase(&w->progress, what);
    return mt_job_load(j, NULL, err);
}

void mt_watch_estimate(mt_watch *w, mt_job *j, int root) {
    w->dry_run = j->rc.dry_run;
    if (root && (w->dry_run || isatty(fileno(w->tty)))) j->cc.estimate = on_estimate; /* piped: nothing */
    j->cc.estimate_ctx = w;
}

void mt_watch_end(mt_watch *w) { mt_progress_end(&w->progress); }
