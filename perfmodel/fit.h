/* perfmodel/fit.h — non-negative least squares for small linear models, with LAPACKE.
 *
 * mt_fit_nnls fits y ≈ X·c with c >= 0 (X is n×p row-major, p <= MT_FIT_MAXP), each row
 * weighted by w[i] (NULL: 1; the performance model uses 1/y so every op counts by its relative
 * error). It is exact for p <= 3: every subset of the allowed columns is solved with
 * LAPACKE_dgelsd (SVD) on unit-norm columns, subsets whose solution has a negative coefficient are
 * infeasible, and the feasible one with the smallest weighted residual is kept (the NNLS optimum
 * is the least-squares solution on its own support).
 *
 * Degrading instead of failing: a subset is not tried when it has more parameters than points
 * allow (n < k + 1 for k >= 2 parameters, n < 1 for one) or when its columns are collinear
 * (condition number above MT_FIT_MAX_COND after scaling). When the full allowed set could not be
 * tried for one of these reasons, `degraded` is 1 and `warning` says why and what was fitted.
 * On equal residuals the simpler subset wins, and between equally simple ones the one keeping the
 * lowest column (the work terms before the constant: a degraded fit still scales with its work).
 * No coefficient is ever NaN or infinite: with no usable subset `used` is 0, every coefficient 0.
 * Cost: O(2^p · n · p²).
 */
#ifndef MT_PERFMODEL_FIT_H
#define MT_PERFMODEL_FIT_H

#include "util/err.h"

#define MT_FIT_MAXP 3
#define MT_FIT_MAX_COND 1e7

typedef struct mt_fit_result {
    double coef[MT_FIT_MAXP]; /* 0 for columns not used */
    unsigned used;            /* bit j set: column j has a fitted coefficient (possibly 0) */
    int n;                    /* rows */
    double rel_rmse;          /* sqrt(mean(((x·c - y) / y)^2)) over rows with y > 0 */
    int degraded;
    char warning[200];
} mt_fit_result;

/* allowed: bit mask of the columns the model may use (0: all p). names[j] names column j in the
 * warning (NULL: "x0", "x1", ...). MT_EINVAL for p out of range or n < 0; everything else
 * (too few points, collinear, NaN input rows) degrades. */
mt_status mt_fit_nnls(const double *X, const double *y, const double *w, int n, int p,
                      unsigned allowed, const char *const *names, mt_fit_result *r, mt_error *err);

/* Keeps OpenBLAS on the calling thread (its pool would spin on the other cores after each
 * call); done by the first fit, and by main at start so the pool goes quiet at once. */
void mt_fit_single_thread(void);

#endif
