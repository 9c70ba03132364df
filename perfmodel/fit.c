/* perfmodel/fit.c — exact small NNLS by subset enumeration over LAPACKE_dgelsd. */
#include "perfmodel/fit.h"

#include <cblas.h> /* OpenBLAS's: openblas_set_num_threads */
#include <lapacke.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The systems are a few columns wide: OpenBLAS's worker threads buy nothing, and after each call
 * they spin (sched_yield) on the other cores for a while, beside compare's worker threads. */
static pthread_once_t one_thread = PTHREAD_ONCE_INIT;
/* OpenBLAS's own (exported for its fork handler): stops the pool it started at load. Weak: a build
 * against an OpenBLAS without it just keeps the idle pool. */
extern int blas_thread_shutdown_(void) __attribute__((weak));
static void blas_one_thread(void) {
    openblas_set_num_threads(1);
    if (blas_thread_shutdown_) blas_thread_shutdown_();
}
void mt_fit_single_thread(void) { pthread_once(&one_thread, blas_one_thread); }

static int popcount(unsigned m) {
    int c = 0;
    for (; m; m &= m - 1) c++;
    return c;
}

/* Solves the weighted LS on columns `mask`. Returns 1 and fills coef/ssr when solved,
 * 0 when collinear, -1 on allocation failure. */
static int solve_subset(const double *X, const double *y, const double *w, int n, int p,
                        unsigned mask, double *coef, double *ssr) {
    int k = popcount(mask);
    int cols[MT_FIT_MAXP];
    for (int j = 0, q = 0; j < p; j++)
        if (mask & (1u << j)) cols[q++] = j;
    int ldb = 1, m = n > k ? n : k;
    double *A = malloc((size_t)n * (size_t)k * sizeof *A);
    double *b = malloc((size_t)m * sizeof *b);
    double s[MT_FIT_MAXP], scale[MT_FIT_MAXP];
    if (!A || !b) {
        free(A);
        free(b);
        return -1;
    }
    for (int q = 0; q < k; q++) {
        double nrm = 0;
        for (int i = 0; i < n; i++) {
            double v = X[(size_t)i * p + cols[q]] * (w ? w[i] : 1.0);
            nrm += v * v;
        }
        scale[q] = nrm > 0 ? sqrt(nrm) : 0;
    }
    int ok = 1;
    for (int q = 0; q < k; q++) ok &= scale[q] > 0 && isfinite(scale[q]);
    if (!ok) {
        free(A);
        free(b);
        return 0; /* an all-zero column carries no information */
    }
    for (int i = 0; i < n; i++) {
        double wi = w ? w[i] : 1.0;
        for (int q = 0; q < k; q++) A[(size_t)i * k + q] = X[(size_t)i * p + cols[q]] * wi / scale[q];
        b[i] = y[i] * wi;
    }
    for (int i = n; i < m; i++) b[i] = 0;
    lapack_int rank = 0;
    mt_fit_single_thread();
    lapack_int info = LAPACKE_dgelsd(LAPACK_ROW_MAJOR, n, k, 1, A, k, b, ldb, s, -1.0, &rank);
    int res = 0;
    if (info == 0 && rank == k && s[k - 1] > 0 && s[0] / s[k - 1] <= MT_FIT_MAX_COND) {
        res = 1;
        for (int j = 0; j < p; j++) coef[j] = 0;
        for (int q = 0; q < k; q++) {
            coef[cols[q]] = b[q] / scale[q];
            if (!isfinite(coef[cols[q]])) res = 0;
        }
        double e = 0;
        for (int i = 0; i < n; i++) {
            double pred = 0;
            for (int j = 0; j < p; j++) pred += X[(size_t)i * p + j] * coef[j];
            double d = (pred - y[i]) * (w ? w[i] : 1.0);
            e += d * d;
        }
        *ssr = e;
    }
    free(A);
    free(b);
    return res;
}

static void name_list(unsigned mask, int p, const char *const *names, char *buf, size_t len) {
    size_t off = 0;
    buf[0] = 0;
    for (int j = 0; j < p && off < len; j++) {
        if (!(mask & (1u << j))) continue;
        char def[16];
        snprintf(def, sizeof def, "x%d", j);
        off += (size_t)snprintf(buf + off, len - off, "%s%s", off ? "+" : "",
                                names && names[j] ? names[j] : def);
    }
    if (!buf[0]) snprintf(buf, len, "nothing");
}

mt_status mt_fit_nnls(const double *X, const double *y, const double *w, int n, int p,
                      unsigned allowed, const char *const *names, mt_fit_result *r, mt_error *err) {
    memset(r, 0, sizeof *r);
    if (p < 1 || p > MT_FIT_MAXP || n < 0)
        return mt_fail(err, MT_EINVAL, "fit: %d columns and %d rows (1 to %d columns)", p, n, MT_FIT_MAXP);
    unsigned full = (1u << p) - 1;
    allowed = allowed ? (allowed & full) : full;
    r->n = n;
    /* rows with a NaN/inf anywhere are dropped by giving them weight 0 */
    double *wv = malloc((size_t)(n > 0 ? n : 1) * sizeof *wv);
    if (!wv) return mt_fail(err, MT_ENOMEM, "fit: out of memory");
    int good = 0;
    for (int i = 0; i < n; i++) {
        int ok = isfinite(y[i]) && (!w || isfinite(w[i]));
        for (int j = 0; j < p; j++) ok &= isfinite(X[(size_t)i * p + j]);
        wv[i] = ok ? (w ? w[i] : 1.0) : 0.0;
        good += ok && wv[i] != 0;
    }
    /* NaN rows must not reach LAPACK: zero them in a copy */
    double *Xc = malloc((size_t)(n > 0 ? n : 1) * (size_t)p * sizeof *Xc);
    double *yc = malloc((size_t)(n > 0 ? n : 1) * sizeof *yc);
    if (!Xc || !yc) {
        free(wv);
        free(Xc);
        free(yc);
        return mt_fail(err, MT_ENOMEM, "fit: out of memory");
    }
    for (int i = 0; i < n; i++) {
        for (int j = 0; j < p; j++) Xc[(size_t)i * p + j] = wv[i] != 0 ? X[(size_t)i * p + j] : 0;
        yc[i] = wv[i] != 0 ? y[i] : 0;
    }
    double best_ssr = INFINITY, coef[MT_FIT_MAXP];
    unsigned best = 0;
    int full_skipped = 0; /* 1: too few points, 2: collinear */
    for (unsigned mask = allowed; mask; mask = (mask - 1) & allowed) {
        int k = popcount(mask);
        int need = k >= 2 ? k + 1 : 1;
        if (good < need) {
            if (mask == allowed) full_skipped = 1;
            continue;
        }
        double ssr = 0;
        int s = solve_subset(Xc, yc, wv, n, p, mask, coef, &ssr);
        if (s < 0) {
            free(wv);
            free(Xc);
            free(yc);
            return mt_fail(err, MT_ENOMEM, "fit: out of memory");
        }
        if (s == 0) {
            if (mask == allowed) full_skipped = 2;
            continue;
        }
        int feasible = 1;
        for (int j = 0; j < p; j++) feasible &= coef[j] >= 0;
        if (!feasible) continue;
        /* smaller residual wins; on a tie (within rounding) the simpler model, and between
         * equally simple ones the one that keeps the lowest column (the work terms before the
         * constant, so a degraded fit still scales with the work) */
        double tol = 1e-9 * (best_ssr > 0 && isfinite(best_ssr) ? best_ssr : 0) + 1e-300;
        int tie = isfinite(best_ssr) && fabs(ssr - best_ssr) <= tol;
        if ((!tie && ssr < best_ssr) ||
            (tie && (k < popcount(best) || (k == popcount(best) && (mask & -mask) < (best & -best))))) {
            best_ssr = ssr;
            best = mask;
            memcpy(r->coef, coef, sizeof coef);
        }
    }
    r->used = best;
    if (!best) memset(r->coef, 0, sizeof r->coef);
    double e = 0;
    int m = 0;
    for (int i = 0; i < n; i++) {
        if (wv[i] == 0 || yc[i] <= 0) continue;
        double pred = 0;
        for (int j = 0; j < p; j++) pred += Xc[(size_t)i * p + j] * r->coef[j];
        e += ((pred - yc[i]) / yc[i]) * ((pred - yc[i]) / yc[i]);
        m++;
    }
    r->rel_rmse = m ? sqrt(e / m) : 0;
    if (full_skipped) {
        char want[64], got[64];
        name_list(allowed, p, names, want, sizeof want);
        name_list(best, p, names, got, sizeof got);
        r->degraded = 1;
        if (full_skipped == 1)
            snprintf(r->warning, sizeof r->warning, "%d point%s for %d parameters (%s): fitted %s",
                     good, good == 1 ? "" : "s", popcount(allowed), want, got);
        else
            snprintf(r->warning, sizeof r->warning, "ill-conditioned (%s collinear over %d points): "
                     "fitted %s", want, good, got);
    }
    free(wv);
    free(Xc);
    free(yc);
    return MT_OK;
}
