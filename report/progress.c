/* report/progress.c — see progress.h. */
#include "report/progress.h"

#include <time.h>
#include <unistd.h>

double mt_progress_clock_s(void) {
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
    p->t0 = p->last = mt_progress_clock_s();
}

void mt_progress_init_bytes(mt_progress *p, FILE *out, const char *what) {
    mt_progress_init(p, out, -1);
    p->what = what;
}

void mt_progress_update(void *ctx, int64_t done, int64_t total) {
    mt_progress *p = ctx;
    if (!p->on) return;
    double t = mt_progress_clock_s();
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

void mt_progress_phase(mt_progress *p, const char *what) {
    if (!p->on) return;
    fprintf(p->out, "\r%s ...\033[K", what);
    fflush(p->out);
    p->shown = 1;
}

/* "42 s", "3.1 min", "2.5 h" into buf. */
static const char *span(double s, char *buf, size_t len) {
    if (s < 90) snprintf(buf, len, "%.0f s", s);
    else if (s < 5400) snprintf(buf, len, "%.1f min", s / 60);
    else snprintf(buf, len, "%.1f h", s / 3600);
    return buf;
}

void mt_progress_items(mt_progress *p, const char *noun, int64_t done, int64_t total, const char *label) {
    if (!p->on) return;
    double t = mt_progress_clock_s();
    if (t - p->last < 0.25 && done < total) return;
    p->last = t;
    char left[64] = "", b[32];
    if (done > 0 && done < total)
        snprintf(left, sizeof left, ", about %s left", span((t - p->t0) / (double)done * (double)(total - done), b, sizeof b));
    fprintf(p->out, "\r%s: %lld/%lld done, %.1f s%s%s%.40s\033[K", noun, (long long)done, (long long)total, t - p->t0,
            left, label && *label ? ": " : "", label ? label : "");
    fflush(p->out);
    p->shown = 1;
}
