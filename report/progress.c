/* report/progress.c — see progress.h. */
#include "report/progress.h"

#include <time.h>
#include <unistd.h>

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void mt_progress_init(mt_progress *p, FILE *out, int32_t gpus) {
    p->out = out;
    p->on = out && isatty(fileno(out));
    p->shown = 0;
    p->gpus = gpus;
    p->what = NULL;
    p->t0 = p->last = now_s();
}

void mt_progress_init_bytes(mt_progress *p, FILE *out, const char *what) {
    mt_progress_init(p, out, -1);
    p->what = what;
}

void mt_progress_update(void *ctx, int64_t done, int64_t total) {
    mt_progress *p = ctx;
    if (!p->on) return;
    double t = now_s();
    if (t - p->last < 0.25) return;
    p->last = t;
    double pct = total > 0 ? 100.0 * (double)done / (double)total : 0;
    if (p->gpus < 0) /* bytes of the file on disk (compressed for a gzip file) */
        fprintf(p->out, "\r%s: %.0f%% of %.*f %s, %.1f s\033[K", p->what, pct, total >= 1000000000 ? 2 : 1,
                (double)total / (total >= 1000000000 ? 1e9 : 1e6), total >= 1000000000 ? "GB" : "MB", t - p->t0);
    else
        fprintf(p->out, "\rsimulating: %.0f%% of %d GPU%s tasks, %.1f s\033[K", pct, (int)p->gpus,
                p->gpus == 1 ? "'s" : "s'", t - p->t0);
    fflush(p->out);
    p->shown = 1;
}

void mt_progress_end(mt_progress *p) {
    if (!p->shown) return;
    fputs("\r\033[K", p->out);
    fflush(p->out);
    p->shown = 0;
}
