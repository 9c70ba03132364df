/* sim/scenario.c — see scenario.h.
 *
 * Invariant: rules are kept as parsed (rank and step sets as sorted-free lists, layer names as
 * text) until mt_scenario_bind, which checks them against the plan and fills the per-rank
 * stage and GPU-type tables the hook reads. The hook touches nothing but the scenario's own
 * tables, so runs are deterministic and re-entrant.
 */
#include "sim/scenario.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "util/fileio.h"
#include "util/u64map.h"
#include "util/units.h"
#include "util/vec.h"

enum { D_CONST, D_UNIFORM, D_NORMAL, D_LOGNORMAL };
enum { PER_GPU, PER_STEP, PER_TASK };

typedef struct iset { /* a set of integers: all, or a list */
    int all;
    int32_t *v;
    int32_t n;
    int64_t cap;
} iset;

typedef struct crule {
    char path[96];
    iset gpus, layers, mbs, steps;
    char **layer_names;
    int32_t n_layer_names;
    int layers_given, names_resolved;
    unsigned phase_mask; /* 0: every phase */
    int dist, per;
    double a, b;
} crule;

typedef struct nrule {
    char path[96];
    char *sel;            /* NULL: gpu rank */
    int32_t gpu;
    double bw_factor;     /* 0: none */
    double extra_lat_ns;  /* < 0: none */
    double at_ns, fail_at_ns; /* fail_at < 0: none */
    double period_ns, duration_ns, start_ns; /* period 0: none */
} nrule;

typedef struct trule {
    char path[96];
    iset gpus;
    char *type;
} trule;

struct mt_scenario {
    uint64_t seed;
    int32_t steps;
    crule *c;
    int64_t nc, ccap;
    nrule *n;
    int64_t nn, ncap;
    trule *ty;
    int64_t nty, tycap;
    /* bound */
    const mt_program *prog;
    const mt_trace *t;
    int32_t N;
    int32_t *rank_stage, *rank_type;
    double **type_fac; /* [type * P + stage][item] */
    int32_t ntypes, n_type_fac;
};

/* ---- small helpers ---------------------------------------------------------------------- */

static void iset_free(iset *s) { free(s->v); }

static int iset_has(const iset *s, int32_t x) {
    if (s->all) return 1;
    for (int32_t i = 0; i < s->n; i++)
        if (s->v[i] == x) return 1;
    return 0;
}

static int iset_add(iset *s, int32_t x) {
    if (mt_vec_reserve(&s->v, &s->cap, s->n + 1)) return 0;
    s->v[s->n++] = x;
    return 1;
}

/* "all", "3", "0-3,6" into s. */
static mt_status iset_parse_text(iset *s, const char *text, const char *where, mt_error *err) {
    if (!strcmp(text, "all")) {
        s->all = 1;
        return MT_OK;
    }
    const char *p = text;
    while (*p) {
        char *end;
        long lo = strtol(p, &end, 10), hi = lo;
        if (end == p || lo < 0 || lo > INT32_MAX) goto bad;
        p = end;
        if (*p == '-') {
            const char *q = p + 1;
            hi = strtol(q, &end, 10);
            if (end == q || hi < lo || hi > INT32_MAX) goto bad;
            p = end;
        }
        if (hi - lo > (1 << 20)) goto bad;
        for (long x = lo; x <= hi; x++)
            if (!iset_add(s, (int32_t)x)) return mt_fail(err, MT_ENOMEM, "%s: out of memory", where);
        if (*p == ',') p++;
        else if (*p) goto bad;
    }
    if (s->n > 0) return MT_OK;
bad:
    return mt_fail(err, MT_EFORMAT, "%s: '%s' is not a set of indices (use 3, \"0-3,6\", [0, 2] or \"all\")",
                   where, text);
}

/* An index: an integer that fits a rank, layer, micro-batch or step number (int32). */
static int is_index(json_t *v) {
    return json_is_integer(v) && json_integer_value(v) >= 0 && json_integer_value(v) <= INT32_MAX;
}

static mt_status iset_parse(iset *s, json_t *v, const char *where, mt_error *err) {
    if (json_is_string(v)) return iset_parse_text(s, json_string_value(v), where, err);
    if (is_index(v)) {
        if (!iset_add(s, (int32_t)json_integer_value(v))) return mt_fail(err, MT_ENOMEM, "%s: out of memory", where);
        return MT_OK;
    }
    if (json_is_array(v) && json_array_size(v) > 0) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!is_index(x))
                return mt_fail(err, MT_EFORMAT, "%s[%zu]: expected an index from 0 to %d", where, i, INT32_MAX);
            if (!iset_add(s, (int32_t)json_integer_value(x))) return mt_fail(err, MT_ENOMEM, "%s: out of memory", where);
        }
        return MT_OK;
    }
    return mt_fail(err, MT_EFORMAT, "%s: expected an index, a list of indices, a range string such as "
                   "\"0-3,6\" or \"all\"", where);
}

/* A time: a string with units or a number of ns (0 .. MT_TIME_MAX_NS). */
static mt_status time_of(json_t *v, const char *where, double *out_ns, mt_error *err) {
    if (json_is_number(v) && json_number_value(v) >= 0 && json_number_value(v) <= MT_TIME_MAX_NS) {
        *out_ns = json_number_value(v);
        return MT_OK;
    }
    if (json_is_string(v) && mt_parse_time_ns(json_string_value(v), out_ns, NULL) == MT_OK) return MT_OK;
    return mt_fail(err, MT_EFORMAT, "%s: expected a time such as \"10ms\" or a number of ns (at most 1e6 s)",
                   where);
}

static mt_status positive(json_t *v, const char *where, double *out, mt_error *err) {
    if (json_is_number(v) && json_number_value(v) > 0 && isfinite(json_number_value(v))) {
        *out = json_number_value(v);
        return MT_OK;
    }
    return mt_fail(err, MT_EFORMAT, "%s: expected a number > 0", where);
}

/* Checks that obj has only the listed keys; names the first unknown one. */
static mt_status known_keys(json_t *obj, const char *const *keys, const char *where, mt_error *err) {
    const char *k;
    json_t *v;
    json_object_foreach(obj, k, v) {
        int ok = 0;
        for (const char *const *p = keys; *p && !ok; p++) ok = !strcmp(*p, k);
        if (!ok) {
            char list[300] = "";
            for (const char *const *p = keys; *p; p++)
                snprintf(list + strlen(list), sizeof list - strlen(list), "%s%s", p == keys ? "" : ", ", *p);
            return mt_fail(err, MT_EFORMAT, "%s: unknown key '%s' (known: %s)", where, k, list);
        }
    }
    return MT_OK;
}

/* ---- life cycle ------------------------------------------------------------------------- */

mt_scenario *mt_scenario_new(void) {
    mt_scenario *sc = calloc(1, sizeof *sc);
    if (sc) sc->steps = 1;
    return sc;
}

static void unbind(mt_scenario *sc) {
    for (int32_t i = 0; i < sc->n_type_fac; i++) free(sc->type_fac[i]); /* the program may be gone */
    free(sc->type_fac);
    free(sc->rank_stage);
    free(sc->rank_type);
    sc->type_fac = NULL;
    sc->rank_stage = sc->rank_type = NULL;
    sc->ntypes = sc->n_type_fac = 0;
    sc->prog = NULL;
}

void mt_scenario_free(mt_scenario *sc) {
    if (!sc) return;
    if (sc->prog) unbind(sc);
    for (int64_t i = 0; i < sc->nc; i++) {
        crule *c = &sc->c[i];
        iset_free(&c->gpus), iset_free(&c->layers), iset_free(&c->mbs), iset_free(&c->steps);
        for (int32_t k = 0; k < c->n_layer_names; k++) free(c->layer_names[k]);
        free(c->layer_names);
    }
    for (int64_t i = 0; i < sc->nn; i++) free(sc->n[i].sel);
    for (int64_t i = 0; i < sc->nty; i++) {
        iset_free(&sc->ty[i].gpus);
        free(sc->ty[i].type);
    }
    free(sc->c);
    free(sc->n);
    free(sc->ty);
    free(sc);
}

/* ---- clone -------------------------------------------------------------------------------- */

/* *d = *s with its own array; 0 when out of memory (d then owns nothing). */
static int iset_copy(iset *d, const iset *s) {
    *d = *s;
    d->v = NULL;
    d->cap = 0;
    if (s->n == 0) return 1;
    if (mt_vec_reserve(&d->v, &d->cap, s->n)) return 0;
    memcpy(d->v, s->v, (size_t)s->n * sizeof *d->v);
    return 1;
}

/* strdup of NULL is NULL; *ok cleared when out of memory. */
static char *dup_or_null(const char *s, int *ok) {
    char *d = s ? strdup(s) : NULL;
    if (s && !d) *ok = 0;
    return d;
}

static int crule_copy(crule *d, const crule *s) {
    *d = *s;
    int ok = iset_copy(&d->gpus, &s->gpus);
    if (!iset_copy(&d->layers, &s->layers)) d->layers = (iset){0}, ok = 0;
    if (!iset_copy(&d->mbs, &s->mbs)) d->mbs = (iset){0}, ok = 0;
    if (!iset_copy(&d->steps, &s->steps)) d->steps = (iset){0}, ok = 0;
    d->layer_names = s->n_layer_names ? calloc((size_t)s->n_layer_names, sizeof *d->layer_names) : NULL;
    if (s->n_layer_names && !d->layer_names) d->n_layer_names = 0, ok = 0;
    for (int32_t k = 0; k < d->n_layer_names; k++) d->layer_names[k] = dup_or_null(s->layer_names[k], &ok);
    return ok;
}

mt_status mt_scenario_clone(const mt_scenario *sc, mt_scenario **out, mt_error *err) {
    mt_scenario *d = *out = mt_scenario_new();
    if (!d) return mt_fail(err, MT_ENOMEM, "out of memory copying the scenario");
    d->seed = sc->seed;
    d->steps = sc->steps;
    int ok = !mt_vec_reserve(&d->c, &d->ccap, sc->nc) && !mt_vec_reserve(&d->n, &d->ncap, sc->nn) &&
             !mt_vec_reserve(&d->ty, &d->tycap, sc->nty);
    for (int64_t i = 0; ok && i < sc->nc; i++, d->nc++) ok = crule_copy(&d->c[i], &sc->c[i]);
    for (int64_t i = 0; ok && i < sc->nn; i++, d->nn++) {
        d->n[i] = sc->n[i];
        d->n[i].sel = dup_or_null(sc->n[i].sel, &ok);
    }
    for (int64_t i = 0; ok && i < sc->nty; i++, d->nty++) {
        d->ty[i] = sc->ty[i];
        d->ty[i].type = dup_or_null(sc->ty[i].type, &ok);
        if (!iset_copy(&d->ty[i].gpus, &sc->ty[i].gpus)) d->ty[i].gpus = (iset){0}, ok = 0;
    }
    if (ok) return MT_OK;
    mt_scenario_free(d); /* frees what each copied rule owns */
    *out = NULL;
    return mt_fail(err, MT_ENOMEM, "out of memory copying the scenario");
}

void mt_scenario_set_seed(mt_scenario *sc, uint64_t seed) { sc->seed = seed; }
void mt_scenario_set_steps(mt_scenario *sc, int32_t steps) { sc->steps = steps > 1 ? steps : 1; }
int32_t mt_scenario_steps(const mt_scenario *sc) { return sc->steps; }
int mt_scenario_perturbs(const mt_scenario *sc) { return sc->nc > 0 || sc->nn > 0 || sc->nty > 0; }

static crule *new_crule(mt_scenario *sc, mt_error *err) {
    if (mt_vec_reserve(&sc->c, &sc->ccap, sc->nc + 1)) {
        mt_fail(err, MT_ENOMEM, "out of memory reading a scenario");
        return NULL;
    }
    crule *c = &sc->c[sc->nc++];
    memset(c, 0, sizeof *c);
    c->gpus.all = c->layers.all = c->mbs.all = c->steps.all = 1;
    c->dist = D_CONST;
    c->a = 1;
    return c;
}

static nrule *new_nrule(mt_scenario *sc, mt_error *err) {
    if (mt_vec_reserve(&sc->n, &sc->ncap, sc->nn + 1)) {
        mt_fail(err, MT_ENOMEM, "out of memory reading a scenario");
        return NULL;
    }
    nrule *n = &sc->n[sc->nn++];
    memset(n, 0, sizeof *n);
    n->gpu = -1;
    n->extra_lat_ns = -1;
    n->fail_at_ns = -1;
    return n;
}

/* ---- the JSON file ---------------------------------------------------------------------- */

/* A fixed slowdown factor: a number in [MT_SLOWDOWN_MIN, MT_SLOWDOWN_MAX]. */
static mt_status slowdown_factor(json_t *v, const char *where, double *out, mt_error *err) {
    MT_CHECK(positive(v, where, out, err));
    if (*out < MT_SLOWDOWN_MIN || *out > MT_SLOWDOWN_MAX)
        return mt_fail(err, MT_EFORMAT, "%s: a slowdown is %g (100x faster) to %g (got %g)", where, MT_SLOWDOWN_MIN,
                       MT_SLOWDOWN_MAX, *out);
    return MT_OK;
}

static mt_status parse_slowdown(crule *c, json_t *v, const char *where, mt_error *err) {
    if (json_is_number(v)) return slowdown_factor(v, where, &c->a, err);
    if (!json_is_object(v))
        return mt_fail(err, MT_EFORMAT, "%s: expected a number > 0 or {\"dist\": ...}", where);
    static const char *const keys[] = {"dist", "min", "max", "mean", "std", "mu", "sigma", NULL};
    MT_CHECK(known_keys(v, keys, where, err));
    const char *d = json_string_value(json_object_get(v, "dist"));
    char w[160];
    if (d && !strcmp(d, "uniform")) {
        c->dist = D_UNIFORM;
        snprintf(w, sizeof w, "%.150s.min", where);
        MT_CHECK(slowdown_factor(json_object_get(v, "min"), w, &c->a, err));
        snprintf(w, sizeof w, "%.150s.max", where);
        MT_CHECK(slowdown_factor(json_object_get(v, "max"), w, &c->b, err));
        if (c->b < c->a) return mt_fail(err, MT_EFORMAT, "%s: max must be >= min", where);
    } else if (d && (!strcmp(d, "normal") || !strcmp(d, "lognormal"))) {
        int logn = d[0] == 'l';
        c->dist = logn ? D_LOGNORMAL : D_NORMAL;
        json_t *m = json_object_get(v, logn ? "mu" : "mean"), *s = json_object_get(v, logn ? "sigma" : "std");
        if (!json_is_number(m) || !json_is_number(s) || json_number_value(s) < 0)
            return mt_fail(err, MT_EFORMAT, "%s: %s needs numbers %s and %s >= 0", where, d,
                           logn ? "mu" : "mean", logn ? "sigma" : "std");
        c->a = json_number_value(m);
        c->b = json_number_value(s);
        if (!logn && c->a <= 0) return mt_fail(err, MT_EFORMAT, "%s: a normal slowdown needs mean > 0", where);
    } else {
        return mt_fail(err, MT_EFORMAT, "%s.dist: expected \"uniform\", \"normal\" or \"lognormal\"", where);
    }
    return MT_OK;
}

static mt_status parse_compute(mt_scenario *sc, json_t *v, const char *file, size_t i, mt_error *err) {
    crule *c = new_crule(sc, err);
    if (!c) return MT_ENOMEM;
    snprintf(c->path, sizeof c->path, "%s: compute[%zu]", file, i);
    char w[160];
    if (!json_is_object(v)) return mt_fail(err, MT_EFORMAT, "%s: expected an object", c->path);
    static const char *const keys[] = {"gpus", "layers", "micro_batches", "steps", "phases", "slowdown", "per", NULL};
    MT_CHECK(known_keys(v, keys, c->path, err));
    json_t *x;
    if ((x = json_object_get(v, "gpus"))) {
        c->gpus.all = 0;
        snprintf(w, sizeof w, "%.150s.gpus", c->path);
        MT_CHECK(iset_parse(&c->gpus, x, w, err));
    }
    if ((x = json_object_get(v, "micro_batches"))) {
        c->mbs.all = 0;
        snprintf(w, sizeof w, "%.150s.micro_batches", c->path);
        MT_CHECK(iset_parse(&c->mbs, x, w, err));
    }
    if ((x = json_object_get(v, "steps"))) {
        c->steps.all = 0;
        snprintf(w, sizeof w, "%.150s.steps", c->path);
        MT_CHECK(iset_parse(&c->steps, x, w, err));
    }
    if ((x = json_object_get(v, "layers"))) {
        c->layers.all = 0;
        c->layers_given = 1;
        if (!json_is_array(x)) x = json_pack("[O]", x);
        else json_incref(x);
        size_t k;
        json_t *y;
        mt_status rc = MT_OK;
        c->layer_names = calloc(json_array_size(x) + 1, sizeof *c->layer_names);
        if (!c->layer_names) rc = mt_fail(err, MT_ENOMEM, "out of memory reading a scenario");
        json_array_foreach(x, k, y) {
            if (rc != MT_OK) break;
            if (is_index(y)) {
                if (!iset_add(&c->layers, (int32_t)json_integer_value(y))) rc = mt_fail(err, MT_ENOMEM, "out of memory");
            } else if (json_is_string(y)) {
                if (!(c->layer_names[c->n_layer_names++] = strdup(json_string_value(y))))
                    rc = mt_fail(err, MT_ENOMEM, "out of memory");
            } else {
                rc = mt_fail(err, MT_EFORMAT, "%s.layers[%zu]: expected a layer index or name", c->path, k);
            }
        }
        json_decref(x);
        MT_CHECK(rc);
    }
    if ((x = json_object_get(v, "phases"))) {
        static const char *names[] = {"forward", "backward", "optimizer", "other"};
        static const trace_phase ph[] = {TRACE_PHASE_FORWARD, TRACE_PHASE_BACKWARD, TRACE_PHASE_OPTIMIZER,
                                         TRACE_PHASE_OTHER};
        size_t k;
        json_t *y;
        if (!json_is_array(x)) return mt_fail(err, MT_EFORMAT, "%s.phases: expected a list of phase names", c->path);
        json_array_foreach(x, k, y) {
            int hit = -1;
            for (int p = 0; p < 4; p++)
                if (json_is_string(y) && !strcmp(json_string_value(y), names[p])) hit = p;
            if (hit < 0)
                return mt_fail(err, MT_EFORMAT, "%s.phases[%zu]: expected forward, backward, optimizer or other",
                               c->path, k);
            c->phase_mask |= 1u << ph[hit];
        }
    }
    if ((x = json_object_get(v, "per"))) {
        const char *p = json_string_value(x);
        if (p && !strcmp(p, "gpu")) c->per = PER_GPU;
        else if (p && !strcmp(p, "step")) c->per = PER_STEP;
        else if (p && !strcmp(p, "task")) c->per = PER_TASK;
        else return mt_fail(err, MT_EFORMAT, "%s.per: expected \"gpu\", \"step\" or \"task\"", c->path);
    }
    if (!(x = json_object_get(v, "slowdown")))
        return mt_fail(err, MT_EFORMAT, "%s: missing \"slowdown\" (a number, 2 = twice as long, or a distribution)",
                       c->path);
    snprintf(w, sizeof w, "%.150s.slowdown", c->path);
    return parse_slowdown(c, x, w, err);
}

static mt_status parse_network(mt_scenario *sc, json_t *v, const char *file, size_t i, mt_error *err) {
    nrule *n = new_nrule(sc, err);
    if (!n) return MT_ENOMEM;
    snprintf(n->path, sizeof n->path, "%s: network[%zu]", file, i);
    char w[160];
    if (!json_is_object(v)) return mt_fail(err, MT_EFORMAT, "%s: expected an object", n->path);
    static const char *const keys[] = {"link", "gpu", "bandwidth_factor", "extra_latency", "at", "fail_at",
                                       "period", "duration", "start", NULL};
    MT_CHECK(known_keys(v, keys, n->path, err));
    json_t *link = json_object_get(v, "link"), *gpu = json_object_get(v, "gpu"), *x;
    if (json_is_string(link) && !gpu) {
        if (!(n->sel = strdup(json_string_value(link)))) return mt_fail(err, MT_ENOMEM, "out of memory");
    } else if (is_index(gpu) && !link) { /* a larger one wrapped to a negative rank: a wild read */
        n->gpu = (int32_t)json_integer_value(gpu);
    } else {
        return mt_fail(err, MT_EFORMAT, "%s: give either \"link\" (\"gpu3->sw0\", \"gpu3<->sw0\" or a node "
                       "name) or \"gpu\" (a rank)", n->path);
    }
    int what = 0;
    if ((x = json_object_get(v, "bandwidth_factor"))) {
        snprintf(w, sizeof w, "%.150s.bandwidth_factor", n->path);
        MT_CHECK(positive(x, w, &n->bw_factor, err));
        if (n->bw_factor > MT_LINK_FACTOR_MAX) return mt_fail(err, MT_EFORMAT, "%s: expected at most 1e6", w);
        what++;
    }
    if ((x = json_object_get(v, "extra_latency"))) {
        snprintf(w, sizeof w, "%.150s.extra_latency", n->path);
        MT_CHECK(time_of(x, w, &n->extra_lat_ns, err));
        if (n->extra_lat_ns * 1e3 > (double)MT_LINK_LAT_MAX_PS)
            return mt_fail(err, MT_EFORMAT, "%s: expected at most 1 s (a link's latency)", w);
        what++;
    }
    if ((x = json_object_get(v, "fail_at"))) {
        snprintf(w, sizeof w, "%.150s.fail_at", n->path);
        MT_CHECK(time_of(x, w, &n->fail_at_ns, err));
        if (what) return mt_fail(err, MT_EFORMAT, "%s: a failing link takes no other change (use two entries)", n->path);
        what++;
    }
    if (!what)
        return mt_fail(err, MT_EFORMAT, "%s: nothing to change (give bandwidth_factor, extra_latency or fail_at)",
                       n->path);
    if ((x = json_object_get(v, "at"))) {
        snprintf(w, sizeof w, "%.150s.at", n->path);
        MT_CHECK(time_of(x, w, &n->at_ns, err));
    }
    json_t *per = json_object_get(v, "period"), *dur = json_object_get(v, "duration");
    if (per || dur) {
        if (!per || !dur || n->bw_factor <= 0 || n->extra_lat_ns >= 0 || json_object_get(v, "at"))
            return mt_fail(err, MT_EFORMAT, "%s: periodic degradation needs period, duration and "
                           "bandwidth_factor (and optional start), nothing else", n->path);
        snprintf(w, sizeof w, "%.150s.period", n->path);
        MT_CHECK(time_of(per, w, &n->period_ns, err));
        snprintf(w, sizeof w, "%.150s.duration", n->path);
        MT_CHECK(time_of(dur, w, &n->duration_ns, err));
        if ((x = json_object_get(v, "start"))) {
            snprintf(w, sizeof w, "%.150s.start", n->path);
            MT_CHECK(time_of(x, w, &n->start_ns, err));
        }
        if (!(n->duration_ns > 0) || n->duration_ns > n->period_ns)
            return mt_fail(err, MT_EFORMAT, "%s: periodic degradation needs 0 < duration <= period", n->path);
    } else if (json_object_get(v, "start")) {
        return mt_fail(err, MT_EFORMAT, "%s: \"start\" belongs to periodic degradation (use \"at\")", n->path);
    }
    return MT_OK;
}

static mt_status add_type(mt_scenario *sc, json_t *ranks, const char *text_ranks, json_t *name,
                          const char *where, mt_error *err) {
    if (mt_vec_reserve(&sc->ty, &sc->tycap, sc->nty + 1)) return mt_fail(err, MT_ENOMEM, "out of memory");
    trule *t = &sc->ty[sc->nty++];
    memset(t, 0, sizeof *t);
    snprintf(t->path, sizeof t->path, "%s", where);
    if (!json_is_string(name))
        return mt_fail(err, MT_EFORMAT, "%s: expected a GPU name (mitosis perfmodel gpus lists them)", where);
    if (!(t->type = strdup(json_string_value(name)))) return mt_fail(err, MT_ENOMEM, "out of memory");
    if (text_ranks) return iset_parse_text(&t->gpus, text_ranks, where, err);
    return iset_parse(&t->gpus, ranks, where, err);
}

static mt_status parse_types(mt_scenario *sc, json_t *v, const char *file, mt_error *err) {
    char w[160];
    if (json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            snprintf(w, sizeof w, "%s: gpu_types[%zu]", file, i);
            json_t *r = json_integer((json_int_t)i);
            mt_status rc = add_type(sc, r, NULL, x, w, err);
            json_decref(r);
            MT_CHECK(rc);
        }
        return MT_OK;
    }
    if (!json_is_object(v))
        return mt_fail(err, MT_EFORMAT, "%s: gpu_types: expected a list (one GPU name per rank) or an object "
                       "{\"0-3\": \"A100-80GB\"}", file);
    const char *k;
    json_t *x;
    json_object_foreach(v, k, x) {
        snprintf(w, sizeof w, "%s: gpu_types.%s", file, k);
        MT_CHECK(add_type(sc, NULL, k, x, w, err));
    }
    return MT_OK;
}

mt_status mt_scenario_load(mt_scenario *sc, const char *path, mt_error *err) {
    json_t *root;
    MT_CHECK(mt_json_load_config(path, &root, err));
    mt_status rc = MT_OK;
    static const char *const keys[] = {"seed", "steps", "compute", "gpu_types", "network", "comment", NULL};
    if (!json_is_object(root)) rc = mt_fail(err, MT_EFORMAT, "%s: a scenario is a JSON object", path);
    if (rc == MT_OK) rc = known_keys(root, keys, path, err);
    json_t *x;
    if (rc == MT_OK && (x = json_object_get(root, "seed"))) {
        if (!json_is_integer(x) || json_integer_value(x) < 0) rc = mt_fail(err, MT_EFORMAT, "%s: seed: expected an integer >= 0", path);
        else sc->seed = (uint64_t)json_integer_value(x);
    }
    if (rc == MT_OK && (x = json_object_get(root, "steps"))) {
        if (!json_is_integer(x) || json_integer_value(x) < 1 || json_integer_value(x) > 100000)
            rc = mt_fail(err, MT_EFORMAT, "%s: steps: expected an integer in 1..100000", path);
        else sc->steps = (int32_t)json_integer_value(x);
    }
    size_t i;
    json_t *y;
    if (rc == MT_OK && (x = json_object_get(root, "compute"))) {
        if (!json_is_array(x)) rc = mt_fail(err, MT_EFORMAT, "%s: compute: expected a list of rules", path);
        else json_array_foreach(x, i, y) if (rc == MT_OK) rc = parse_compute(sc, y, path, i, err);
    }
    if (rc == MT_OK && (x = json_object_get(root, "network"))) {
        if (!json_is_array(x)) rc = mt_fail(err, MT_EFORMAT, "%s: network: expected a list of link changes", path);
        else json_array_foreach(x, i, y) if (rc == MT_OK) rc = parse_network(sc, y, path, i, err);
    }
    if (rc == MT_OK && (x = json_object_get(root, "gpu_types"))) rc = parse_types(sc, x, path, err);
    json_decref(root);
    return rc;
}

/* ---- the short flags -------------------------------------------------------------------- */

/* Splits "LEFT<sep>RIGHT" at the last sep into left (buffer) and right. */
static int split_last(const char *spec, char sep, char *left, size_t len, const char **right) {
    const char *at = strrchr(spec, sep);
    if (!at || at == spec || !at[1] || (size_t)(at - spec) >= len) return 0;
    memcpy(left, spec, (size_t)(at - spec));
    left[at - spec] = 0;
    *right = at + 1;
    return 1;
}

static int parse_factor(const char *s, double *out) {
    char *end;
    double v = strtod(s, &end);
    if (end == s || *end || !(v > 0) || !isfinite(v)) return 0;
    *out = v;
    return 1;
}

mt_status mt_scenario_add_slow_gpu(mt_scenario *sc, const char *spec, mt_error *err) {
    char ranks[64];
    const char *f;
    double v;
    if (!split_last(spec, ':', ranks, sizeof ranks, &f) || !parse_factor(f, &v))
        return mt_fail(err, MT_EINVAL, "--slow-gpu needs RANK:FACTOR such as 3:1.5 (GPU 3 computes 1.5x "
                       "slower; RANK may be a range 0-3) (got '%s')", spec);
    if (v < MT_SLOWDOWN_MIN || v > MT_SLOWDOWN_MAX)
        return mt_fail(err, MT_EINVAL, "--slow-gpu %s: FACTOR is %g (100x faster) to %g (1000x slower)", spec,
                       MT_SLOWDOWN_MIN, MT_SLOWDOWN_MAX);
    crule *c = new_crule(sc, err);
    if (!c) return MT_ENOMEM;
    snprintf(c->path, sizeof c->path, "--slow-gpu %s", spec);
    c->gpus.all = 0;
    c->a = v;
    return iset_parse_text(&c->gpus, ranks, c->path, err);
}

mt_status mt_scenario_add_slow_link(mt_scenario *sc, const char *spec, mt_error *err) {
    char sel[128];
    const char *f;
    double v;
    if (!split_last(spec, ':', sel, sizeof sel, &f) || !parse_factor(f, &v))
        return mt_fail(err, MT_EINVAL, "--slow-link needs SEL:FACTOR such as gpu3->sw0:10 (a tenth of the "
                       "bandwidth; SEL is A->B, A<->B or a node name) (got '%s')", spec);
    nrule *n = new_nrule(sc, err);
    if (!n) return MT_ENOMEM;
    snprintf(n->path, sizeof n->path, "--slow-link %s", spec);
    n->bw_factor = 1.0 / v;
    if (!(n->sel = strdup(sel))) return mt_fail(err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

mt_status mt_scenario_add_fail_link(mt_scenario *sc, const char *spec, mt_error *err) {
    char sel[128];
    const char *t;
    double ns;
    if (!split_last(spec, '@', sel, sizeof sel, &t) || mt_parse_time_ns(t, &ns, NULL) != MT_OK)
        return mt_fail(err, MT_EINVAL, "--fail-link needs SEL@TIME such as gpu3->sw0@10ms (got '%s')", spec);
    nrule *n = new_nrule(sc, err);
    if (!n) return MT_ENOMEM;
    snprintf(n->path, sizeof n->path, "--fail-link %s", spec);
    n->fail_at_ns = ns;
    if (!(n->sel = strdup(sel))) return mt_fail(err, MT_ENOMEM, "out of memory");
    return MT_OK;
}

/* ---- binding and the hook --------------------------------------------------------------- */

static mt_status check_ranks(const iset *s, int32_t n, const char *path, const char *what, mt_error *err) {
    for (int32_t i = 0; !s->all && i < s->n; i++)
        if (s->v[i] >= n)
            return mt_fail(err, MT_EINVAL, "%s: %s %d, but the plan has %d (0..%d)", path, what, (int)s->v[i],
                           (int)n, (int)n - 1);
    return MT_OK;
}

mt_status mt_scenario_check_gpus(const mt_scenario *sc, int32_t gpus, mt_error *err) {
    for (int64_t i = 0; i < sc->nc; i++) MT_CHECK(check_ranks(&sc->c[i].gpus, gpus, sc->c[i].path, "GPU", err));
    for (int64_t i = 0; i < sc->nty; i++) MT_CHECK(check_ranks(&sc->ty[i].gpus, gpus, sc->ty[i].path, "GPU", err));
    for (int64_t i = 0; i < sc->nn; i++)
        if (sc->n[i].gpu >= gpus)
            return mt_fail(err, MT_EINVAL, "%s: gpu %d, but the plan has %d", sc->n[i].path, (int)sc->n[i].gpu,
                           (int)gpus);
    return MT_OK;
}

/* Per-operator factors time(op on `type`) / time(op as the program has it), per stage item. */
static mt_status type_factors(mt_scenario *sc, int32_t ty, const char *type, const char *path, const mt_trace *t,
                              const mt_pm_opts *base_pm, mt_perfmodel *base, mt_error *err) {
    mt_pm_opts o;
    if (base_pm) o = *base_pm;
    else mt_pm_opts_init(&o);
    o.target_gpu = type;
    mt_perfmodel *pm;
    if (mt_perfmodel_new(t, &o, &pm, err) != MT_OK) return mt_error_prefix(err, "%s", path);
    const mt_program *p = sc->prog;
    for (int32_t s = 0; s < p->n_stages; s++) {
        const mt_stage_program *sp = &p->stages[s];
        double *f = malloc(((size_t)sp->n_items + 1) * sizeof *f);
        sc->type_fac[ty * p->n_stages + s] = f;
        if (!f) {
            mt_perfmodel_free(pm);
            return mt_fail(err, MT_ENOMEM, "out of memory binding GPU types");
        }
        for (int32_t i = 0; i < sp->n_items; i++) {
            const mt_item *it = &sp->items[i];
            double bf = p->plan.batch_factor;
            double tb = base ? mt_perfmodel_op_time_ns(base, t, it->op, bf, it->split)
                             : mt_optime_proportional(NULL, t, it->op, bf, it->split);
            double tx = mt_perfmodel_op_time_ns(pm, t, it->op, bf, it->split);
            f[i] = tb > 0 && tx > 0 ? tx / tb : 1.0;
        }
    }
    mt_perfmodel_free(pm);
    return MT_OK;
}

mt_status mt_scenario_bind(mt_scenario *sc, const mt_program *p, const mt_trace *t, const mt_pm_opts *base_pm,
                           mt_error *err) {
    if (sc->prog) unbind(sc);
    sc->prog = p;
    sc->t = t;
    sc->N = p->plan.gpus;
    for (int64_t i = 0; i < sc->nc; i++) {
        crule *c = &sc->c[i];
        MT_CHECK(check_ranks(&c->gpus, sc->N, c->path, "GPU", err));
        MT_CHECK(check_ranks(&c->mbs, p->plan.micro_batches, c->path, "micro-batch", err));
        for (int32_t k = 0; !c->names_resolved && k < c->n_layer_names; k++) {
            int32_t hit = -1;
            for (int32_t l = 0; l < t->n_layers && hit < 0; l++)
                if (t->layers[l].name && !strcmp(t->layers[l].name, c->layer_names[k])) hit = l;
            if (hit < 0)
                return mt_fail(err, MT_EINVAL, "%s.layers: no layer named '%s' in the trace (simulate --layers "
                               "lists them)", c->path, c->layer_names[k]);
            if (!iset_add(&c->layers, hit)) return mt_fail(err, MT_ENOMEM, "out of memory");
        }
        c->names_resolved = 1;
        MT_CHECK(check_ranks(&c->layers, p->n_layers, c->path, "layer", err));
    }
    MT_CHECK(mt_scenario_check_gpus(sc, sc->N, err));
    sc->rank_stage = malloc((size_t)sc->N * sizeof *sc->rank_stage);
    sc->rank_type = malloc((size_t)sc->N * sizeof *sc->rank_type);
    if (!sc->rank_stage || !sc->rank_type) return mt_fail(err, MT_ENOMEM, "out of memory binding a scenario");
    for (int32_t r = 0; r < sc->N; r++) {
        int32_t d, s, tt;
        mt_plan_coords(&p->plan, r, &d, &s, &tt);
        sc->rank_stage[r] = s;
        sc->rank_type[r] = -1;
    }
    if (sc->nty == 0) return MT_OK;
    sc->type_fac = calloc((size_t)sc->nty * (size_t)p->n_stages, sizeof *sc->type_fac);
    if (!sc->type_fac) return mt_fail(err, MT_ENOMEM, "out of memory binding GPU types");
    sc->ntypes = (int32_t)sc->nty;
    sc->n_type_fac = sc->ntypes * p->n_stages;
    mt_perfmodel *base = NULL;
    if (base_pm && mt_perfmodel_new(t, base_pm, &base, err) != MT_OK) return err ? err->code : MT_EINVAL;
    mt_status rc = MT_OK;
    for (int32_t k = 0; k < sc->ntypes && rc == MT_OK; k++) {
        rc = check_ranks(&sc->ty[k].gpus, sc->N, sc->ty[k].path, "GPU", err);
        if (rc == MT_OK) rc = type_factors(sc, k, sc->ty[k].type, sc->ty[k].path, t, base_pm, base, err);
        for (int32_t r = 0; rc == MT_OK && r < sc->N; r++)
            if (iset_has(&sc->ty[k].gpus, r)) sc->rank_type[r] = k;
    }
    mt_perfmodel_free(base);
    return rc;
}

void mt_scenario_sim_opts(mt_scenario *sc, mt_sim_opts *o) {
    o->steps = sc->steps;
    if (sc->nc > 0 || sc->nty > 0) {
        o->compute_factor = mt_scenario_compute_factor;
        o->factor_ctx = sc;
    }
}

double mt_draw01(uint64_t seed, int64_t rule, int64_t rank, int64_t step, int64_t task, int k) {
    uint64_t h = mt_hash64(seed ^ 0x6a09e667f3bcc909ULL);
    h = mt_hash64(h ^ (uint64_t)rule);
    h = mt_hash64(h ^ (uint64_t)rank);
    h = mt_hash64(h ^ (uint64_t)step);
    h = mt_hash64(h ^ (uint64_t)task);
    h = mt_hash64(h ^ (uint64_t)k);
    return ((double)(h >> 11) + 0.5) / 9007199254740992.0;
}

static double draw(const mt_scenario *sc, int64_t i, int32_t rank, int32_t step, int64_t task) {
    const crule *c = &sc->c[i];
    if (c->dist == D_CONST) return c->a;
    if (c->per == PER_GPU) step = -1;
    if (c->per != PER_TASK) task = -1;
    double u = mt_draw01(sc->seed, i, rank, step, task, 0);
    if (c->dist == D_UNIFORM) return c->a + (c->b - c->a) * u;
    double z = sqrt(-2 * log(u)) * cos(6.283185307179586 * mt_draw01(sc->seed, i, rank, step, task, 1));
    double v = c->dist == D_LOGNORMAL ? exp(c->a + c->b * z) : c->a + c->b * z;
    return v > 0.01 ? v : 0.01; /* also a lognormal whose exp() underflowed to 0 */
}

double mt_scenario_compute_factor(void *ctx, int32_t rank, int32_t step, const mt_task *task, const mt_item *item) {
    const mt_scenario *sc = ctx;
    const mt_program *p = sc->prog;
    if (!p || rank < 0 || rank >= sc->N) return 1.0;
    int32_t s = sc->rank_stage[rank];
    const mt_stage_program *sp = &p->stages[s];
    double f = 1.0;
    if (sc->rank_type[rank] >= 0) f *= sc->type_fac[sc->rank_type[rank] * p->n_stages + s][item - sp->items];
    for (int64_t i = 0; i < sc->nc; i++) {
        const crule *c = &sc->c[i];
        if (!iset_has(&c->gpus, rank) || !iset_has(&c->steps, step)) continue;
        if (!c->mbs.all && (task->mb < 0 || !iset_has(&c->mbs, task->mb))) continue;
        if (c->phase_mask && !(c->phase_mask & (1u << sc->t->ops[item->op].phase))) continue; /* a task may span phases */
        if (c->layers_given && (item->layer < 0 || !iset_has(&c->layers, item->layer))) continue;
        f *= draw(sc, i, rank, step, task - sp->tasks);
    }
    return f;
}

/* ---- the network ------------------------------------------------------------------------ */

static mt_time_ps ps_of(double ns) { return (mt_time_ps)llround(ns * 1000.0); }

static mt_status apply_one(const nrule *n, mt_netmodel *net, int32_t l, mt_error *err) {
    if (n->fail_at_ns >= 0) return mt_net_change_link_at(net, ps_of(n->fail_at_ns), MT_LINK_FAIL, l, 0, err);
    if (n->period_ns > 0) {
        mt_link_periodic p = {ps_of(n->start_ns), ps_of(n->period_ns), ps_of(n->duration_ns), n->bw_factor};
        return mt_net_set_link_periodic(net, l, &p, err);
    }
    if (n->bw_factor > 0) {
        if (n->at_ns > 0) MT_CHECK(mt_net_change_link_at(net, ps_of(n->at_ns), MT_LINK_FACTOR, l, n->bw_factor, err));
        else MT_CHECK(mt_net_set_link_factor(net, l, n->bw_factor, err));
    }
    if (n->extra_lat_ns >= 0) {
        if (n->at_ns > 0)
            return mt_net_change_link_at(net, ps_of(n->at_ns), MT_LINK_LATENCY, l, (double)ps_of(n->extra_lat_ns), err);
        return mt_net_set_link_extra_latency(net, l, ps_of(n->extra_lat_ns), err);
    }
    return MT_OK;
}

/* The operation a rule needs, so that a model without it is refused before links are looked up. */
static mt_netop rule_op(const nrule *n) {
    if (n->fail_at_ns >= 0 || n->at_ns > 0) return MT_NETOP_LINK_CHANGE_AT;
    if (n->period_ns > 0) return MT_NETOP_LINK_PERIODIC;
    return n->bw_factor > 0 ? MT_NETOP_LINK_FACTOR : MT_NETOP_LINK_LATENCY;
}

mt_status mt_scenario_apply_network(const mt_scenario *sc, mt_netmodel *net, mt_topo *topo, mt_error *err) {
    for (int64_t i = 0; i < sc->nn; i++) {
        const nrule *n = &sc->n[i];
        if (mt_net_require(net, rule_op(n), err) != MT_OK) return mt_error_prefix(err, "%s", n->path);
        if (!topo) return mt_fail(err, MT_EINVAL, "%s: link perturbations need a topology (--topology)", n->path);
        const char *sel = n->sel;
        char gpu_sel[48];
        if (!sel) {
            int32_t ng;
            const int32_t *gpus = mt_topo_gpus(topo, &ng);
            if (n->gpu >= ng)
                return mt_fail(err, MT_EINVAL, "%s: gpu %d, but %s has %d GPU%s", n->path, (int)n->gpu,
                               mt_topo_label(topo), (int)ng, mt_plural(ng));
            snprintf(gpu_sel, sizeof gpu_sel, "%s", mt_topo_name(topo, gpus[n->gpu]));
            sel = gpu_sel;
        }
        int32_t *ids, k;
        if (mt_topo_select_links(topo, sel, &ids, &k, err) != MT_OK) return mt_error_prefix(err, "%s", n->path);
        mt_status rc = MT_OK;
        for (int32_t j = 0; j < k && rc == MT_OK; j++) rc = apply_one(n, net, ids[j], err);
        free(ids);
        if (rc != MT_OK) return mt_error_prefix(err, "%s", n->path);
    }
    return MT_OK;
}

/* ---- cost ------------------------------------------------------------------------------- */

void mt_whatif_cost_of(const mt_sim_result *base, const mt_sim_result *run, mt_whatif_cost *out) {
    memset(out, 0, sizeof *out);
    out->steps = run->n_steps;
    out->base_ps = base->step_ps;
    out->run_ps = run->step_ps;
    out->run_change_ps = run->step_ps - base->step_ps;
    int32_t n = run->n_gpus < base->n_gpus ? run->n_gpus : base->n_gpus;
    for (int32_t i = 0; i < n; i++) {
        const mt_gpu_stats *a = &base->gpus[i], *b = &run->gpus[i];
        double wa = (double)(a->host_wait_ps + a->exposed_ps + a->peer_wait_ps + a->bubble_ps + a->idle_ps);
        double wb = (double)(b->host_wait_ps + b->exposed_ps + b->peer_wait_ps + b->bubble_ps + b->idle_ps);
        out->extra_compute_ps += (double)(b->compute_ps + b->stretch_ps - a->compute_ps - a->stretch_ps);
        out->extra_wait_ps += wb - wa;
    }
    out->gpu_time_ps = (double)n * (double)out->run_change_ps;
}
