/* run/commfit.c — see commfit.h. */
#include "run/commfit.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/traced.h"
#include "run/collective.h"

#define REF_BW 1e9      /* A_i: links at 1 GB/s, no latency */
#define REF_LAT_NS 1e3  /* L_i: 1 us per link, bandwidth unbounded */
#define HUGE_BW 1e18

typedef struct sample {
    int kind;           /* trace_comm */
    int op;             /* mt_coll_op */
    int32_t group;
    double bytes;
    double t_us, a_us, l_us;
} sample;

/* One collective's time in us on switch:world with links at bw, lat. */
static mt_status coll_us(const mt_run_config *c, int32_t world, mt_coll_op op, int32_t group, double bytes,
                         double bw, double lat_ns, double *us, mt_error *err) {
    mt_collective_config cc;
    mt_collective_config_init(&cc);
    char spec[32];
    snprintf(spec, sizeof spec, "switch:%d", (int)world);
    cc.net.model = c->net.model;
    cc.net.topology = spec;
    cc.net.tp.link_bw_Bps = bw;
    cc.net.tp.link_lat_ns = lat_ns;
    cc.cp.op = op;
    cc.cp.algo = c->plan.algo >= MT_ALGO_NCCL ? MT_ALGO_RING : c->plan.algo; /* fitted at link peak */
    cc.cp.chunks = c->plan.chunks;
    cc.ranks = group;
    cc.bytes = bytes;
    mt_coll_table tab;
    MT_CHECK(mt_run_collective(&cc, &tab, err));
    *us = tab.n > 0 ? tab.time_us[0] : 0;
    return MT_OK;
}

/* Least squares t = x a + y l with x, y >= 0 over s[0..n) (kind < 0: all, else that kind). */
static void fit(const sample *s, int32_t n, int kind, double *x, double *y) {
    double aa = 0, al = 0, ll = 0, at = 0, lt = 0;
    for (int32_t i = 0; i < n; i++) {
        if (kind >= 0 && s[i].kind != kind) continue;
        aa += s[i].a_us * s[i].a_us, al += s[i].a_us * s[i].l_us, ll += s[i].l_us * s[i].l_us;
        at += s[i].a_us * s[i].t_us, lt += s[i].l_us * s[i].t_us;
    }
    double det = aa * ll - al * al;
    *x = *y = 0;
    if (det > 1e-12 * aa * ll) {
        *x = (at * ll - lt * al) / det;
        *y = (lt * aa - at * al) / det;
    }
    if (!(det > 1e-12 * aa * ll) || *x < 0 || *y < 0) { /* one of them alone, the better one */
        double x1 = aa > 0 ? fmax(0, at / aa) : 0, y1 = ll > 0 ? fmax(0, lt / ll) : 0;
        double ex = 0, ey = 0;
        for (int32_t i = 0; i < n; i++) {
            if (kind >= 0 && s[i].kind != kind) continue;
            ex += pow(s[i].t_us - x1 * s[i].a_us, 2);
            ey += pow(s[i].t_us - y1 * s[i].l_us, 2);
        }
        *x = ex <= ey ? x1 : 0;
        *y = ex <= ey ? 0 : y1;
    }
    if (*x < 1e-9) *x = 1e-9; /* bandwidth at most 10^18 B/s */
}

/* Why auto stays off, or NULL when it may run. */
static const char *blocked(const mt_run_config *c, const mt_trace *t) {
    if (c->plan.comm == MT_COMM_REGENERATE) return "--comm regenerate generates the plan's collectives";
    if (c->net.topology) return "--topology given: its links as given";
    if (c->net.tp.link_bw_Bps > 0 || c->net.tp.link_lat_ns >= 0) return "--link-bw or --link-lat given: as given";
    if (!mt_netcfg_kind(&c->net)->uses_links) return "the network model has no links to fit";
    (void)t;
    return NULL;
}

mt_status mt_commfit_apply(mt_run_config *c, const mt_trace *t, mt_commfit *cf, mt_error *err) {
    memset(cf, 0, sizeof *cf);
    mt_traced_plan tp;
    mt_traced_plan_read(t, &tp);
    if (!tp.multi_rank) {
        if (c->calibrate_comm == MT_COMMFIT_ON)
            return mt_fail(err, MT_EINVAL, "--calibrate-comm on: %s is not a rank of a multi-rank job (no collective "
                           "of its own to fit the network to); drop the flag", c->paths[0]);
        return MT_OK;
    }
    cf->tried = 1;
    if (c->calibrate_comm == MT_COMMFIT_OFF) {
        snprintf(cf->why, sizeof cf->why, "--calibrate-comm off: the links as configured");
        return MT_OK;
    }
    const char *why = blocked(c, t);
    if (why && c->calibrate_comm == MT_COMMFIT_ON)
        return mt_fail(err, MT_EINVAL, "--calibrate-comm on: %s", why);
    if (why) {
        snprintf(cf->why, sizeof cf->why, "%s", why);
        return MT_OK;
    }
    sample *s = malloc((size_t)(t->n_colls > 0 ? t->n_colls : 1) * sizeof *s);
    if (!s) return mt_fail(err, MT_ENOMEM, "out of memory");
    int32_t n = 0;
    mt_status rc = MT_OK;
    for (int32_t i = 0; i < t->n_colls && rc == MT_OK; i++) {
        const trace_coll *k = &t->colls[i];
        int op = mt_traced_coll_op(k->kind);
        int p2p = k->kind == TRACE_COMM_SEND || k->kind == TRACE_COMM_RECV;
        int32_t group = p2p ? 2 : k->group > 0 ? k->group : tp.world_size;
        int64_t ns = k->instance && op >= 0 && group >= 2 && group <= tp.world_size ? mt_traced_coll_ns(t, i) : -1;
        if (ns < 0) continue;
        double bytes = p2p ? 2 * k->bytes : k->bytes;
        sample *x = &s[n];
        *x = (sample){k->kind, op, group, bytes, (double)ns / 1e3, 0, 0};
        int32_t j = 0; /* the same collective timed before: its times */
        while (j < n && !(s[j].op == op && s[j].group == group && s[j].bytes == bytes)) j++;
        if (j < n) x->a_us = s[j].a_us, x->l_us = s[j].l_us;
        else rc = coll_us(c, tp.world_size, (mt_coll_op)op, group, bytes, REF_BW, 0, &x->a_us, err);
        if (rc == MT_OK && j == n)
            rc = coll_us(c, tp.world_size, (mt_coll_op)op, group, bytes, HUGE_BW, REF_LAT_NS, &x->l_us, err);
        n++;
    }
    if (rc == MT_OK && n == 0) snprintf(cf->why, sizeof cf->why, "no traced collective has a time (GPU trace without "
                                        "its communication kernels)");
    if (rc == MT_OK && n > 0) {
        double x, y;
        fit(s, n, -1, &x, &y);
        cf->on = 1;
        cf->n = n;
        cf->bw_Bps = REF_BW / x;
        cf->lat_ns = y * REF_LAT_NS;
        for (int32_t i = 0; i < n; i++) {
            double f = x * s[i].a_us + y * s[i].l_us;
            mt_commfit_kind *kk = &cf->kinds[s[i].kind];
            cf->traced_us += s[i].t_us, cf->fitted_us += f;
            cf->peer_wait_us += fmax(0, s[i].t_us - f);
            kk->n++, kk->traced_us += s[i].t_us, kk->fitted_us += f;
        }
        for (int k = 0; k <= TRACE_COMM_OTHER; k++) {
            if (!cf->kinds[k].n) continue;
            double xk, yk;
            fit(s, n, k, &xk, &yk);
            cf->kinds[k].bw_Bps = REF_BW / xk;
            cf->kinds[k].lat_ns = yk * REF_LAT_NS;
        }
        c->net.tp.link_bw_Bps = cf->bw_Bps;
        c->net.tp.link_lat_ns = cf->lat_ns;
        if (c->plan.algo == MT_ALGO_AUTO) c->plan.algo = MT_ALGO_RING; /* the fit has NCCL in it */
    }
    free(s);
    return rc;
}
