/* perfmodel/perfmodel.c — the linear model's JSON form and the op-time model bound to a trace.
 *
 * Invariant of mt_perfmodel: work[i] is the work of t->ops[i] at the traced batch, batch_dep[i]
 * is mt_op_batch_dependent(t, i); both are filled once in mt_perfmodel_new.
 */
#include "perfmodel/perfmodel.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/optime.h"
#include "util/outpath.h"
#include "util/fileio.h"

static const char *const kind_names[MT_PM_KIND_COUNT] = {"trace", "linear", "roofline", "analytical"};

const char *mt_pm_kind_name(mt_pm_kind k) {
    return (unsigned)k < MT_PM_KIND_COUNT ? kind_names[k] : "?";
}

int mt_pm_kind_parse(const char *s, mt_pm_kind *out) {
    for (int k = 0; k < MT_PM_KIND_COUNT; k++)
        if (s && !strcmp(s, kind_names[k])) {
            *out = (mt_pm_kind)k;
            return 0;
        }
    return -1;
}

void mt_pm_opts_init(mt_pm_opts *o) {
    memset(o, 0, sizeof *o);
    o->kind = MT_PM_TRACE;
}

/* ---- linear model ----------------------------------------------------------------------- */

double mt_linmodel_predict_ns(const mt_linmodel *m, mt_opclass c, double flops, double bytes) {
    if (!m || (unsigned)c >= MT_OPC_COUNT || !m->cls[c].used) return -1;
    const double *k = m->cls[c].coef;
    return k[MT_LIN_FLOPS] * flops + k[MT_LIN_BYTES] * bytes + k[MT_LIN_CONST];
}

static const char *const term_names[3] = {"flops", "bytes", "const"};
static const char *const coef_keys[3] = {"ns_per_flop", "ns_per_byte", "ns"};

json_t *mt_linmodel_json(const mt_linmodel *m) {
    json_t *o = json_object(), *cls = json_object();
    json_object_set_new(o, "format", json_string("mitosis-perfmodel"));
    json_object_set_new(o, "version", json_integer(1));
    json_object_set_new(o, "device", json_string(m->device));
    json_object_set_new(o, "sources", json_pack("{s:i,s:I}", "traces", m->n_traces, "csv_rows",
                                                (json_int_t)m->n_csv_rows));
    json_object_set_new(o, "model", json_string("time_ns = ns_per_flop*FLOPs + ns_per_byte*bytes "
                                                 "+ ns, per operator class, non-negative"));
    for (int c = 0; c < MT_OPC_COUNT; c++) {
        const mt_fit_result *r = &m->cls[c];
        if (!r->n) continue;
        json_t *e = json_object(), *terms = json_array();
        json_object_set_new(e, "n", json_integer(r->n));
        for (int j = 0; j < 3; j++)
            if (r->used & (1u << j)) json_array_append_new(terms, json_string(term_names[j]));
        json_object_set_new(e, "terms", terms);
        for (int j = 0; j < 3; j++) json_object_set_new(e, coef_keys[j], json_real(r->coef[j]));
        json_object_set_new(e, "rel_rmse", json_real(r->rel_rmse));
        if (r->warning[0]) json_object_set_new(e, "warning", json_string(r->warning));
        json_object_set_new(cls, mt_opclass_name((mt_opclass)c), e);
    }
    json_object_set_new(o, "classes", cls);
    return o;
}

mt_status mt_linmodel_save(const mt_linmodel *m, const char *path, mt_error *err) {
    json_t *o = mt_linmodel_json(m);
    mt_out_file f; /* a temporary renamed onto path when complete (util/outpath.h) */
    mt_status rc = mt_out_open(&f, path, "the model", err);
    if (rc == MT_OK) {
        int bad = json_dumpf(o, f.f, JSON_INDENT(2) | JSON_REAL_PRECISION(12) | JSON_SORT_KEYS);
        rc = mt_out_close(&f, bad ? mt_fail(err, MT_EIO, "the model: cannot write '%s' (check the disk space)", path)
                                  : MT_OK, err);
    }
    json_decref(o);
    return rc;
}

static mt_status bad_field(const char *path, const char *where, const char *want, mt_error *err) {
    return mt_fail(err, MT_EFORMAT, "%s: %s: expected %s (write it with mitosis perfmodel fit)",
                   path, where, want);
}

mt_status mt_linmodel_load(const char *path, mt_linmodel *m, mt_error *err) {
    json_t *o = NULL;
    memset(m, 0, sizeof *m);
    MT_CHECK(mt_json_load_config(path, &o, err));
    mt_status rc = MT_OK;
    char where[128];
    const char *fmt = json_string_value(json_object_get(o, "format"));
    json_t *ver = json_object_get(o, "version"), *cls = json_object_get(o, "classes");
    if (!json_is_object(o) || !fmt || strcmp(fmt, "mitosis-perfmodel")) {
        rc = bad_field(path, "format", "\"mitosis-perfmodel\"", err);
        goto out;
    }
    if (!json_is_integer(ver) || json_integer_value(ver) != 1) {
        rc = bad_field(path, "version", "1", err);
        goto out;
    }
    if (!json_is_object(cls)) {
        rc = bad_field(path, "classes", "an object of per-class fits", err);
        goto out;
    }
    const char *dev = json_string_value(json_object_get(o, "device"));
    snprintf(m->device, sizeof m->device, "%s", dev ? dev : "");
    json_t *src = json_object_get(o, "sources");
    m->n_traces = (int)json_integer_value(json_object_get(src, "traces"));
    m->n_csv_rows = json_integer_value(json_object_get(src, "csv_rows"));
    const char *key;
    json_t *e;
    json_object_foreach(cls, key, e) {
        mt_opclass c = mt_opclass_parse(key);
        if (c == MT_OPC_COUNT) {
            rc = mt_fail(err, MT_EFORMAT, "%s: classes.%s: unknown operator class", path, key);
            goto out;
        }
        if (!json_is_object(e)) {
            snprintf(where, sizeof where, "classes.%s", key);
            rc = bad_field(path, where, "an object", err);
            goto out;
        }
        mt_fit_result *r = &m->cls[c];
        json_t *n = json_object_get(e, "n");
        r->n = json_is_integer(n) && json_integer_value(n) > 0 ? (int)json_integer_value(n) : 1;
        for (int j = 0; j < 3; j++) {
            json_t *v = json_object_get(e, coef_keys[j]);
            double x = v ? json_number_value(v) : 0;
            if ((v && !json_is_number(v)) || !(x >= 0 && x <= 1e12)) { /* 1e12: finite times for any work */
                snprintf(where, sizeof where, "classes.%s.%s", key, coef_keys[j]);
                rc = bad_field(path, where, "a non-negative number up to 1e12", err);
                goto out;
            }
            r->coef[j] = x;
        }
        json_t *terms = json_object_get(e, "terms");
        if (json_is_array(terms)) {
            size_t i;
            json_t *tv;
            json_array_foreach(terms, i, tv) {
                int found = 0;
                for (int j = 0; j < 3; j++)
                    if (json_string_value(tv) && !strcmp(json_string_value(tv), term_names[j])) {
                        r->used |= 1u << j;
                        found = 1;
                    }
                if (!found) {
                    snprintf(where, sizeof where, "classes.%s.terms[%zu]", key, i);
                    rc = bad_field(path, where, "\"flops\", \"bytes\" or \"const\"", err);
                    goto out;
                }
            }
        } else {
            for (int j = 0; j < 3; j++)
                if (r->coef[j] > 0) r->used |= 1u << j;
        }
        json_t *rr = json_object_get(e, "rel_rmse");
        r->rel_rmse = json_is_number(rr) ? json_number_value(rr) : 0;
        const char *w = json_string_value(json_object_get(e, "warning"));
        snprintf(r->warning, sizeof r->warning, "%s", w ? w : "");
        r->degraded = r->warning[0] != 0;
    }
out:
    json_decref(o);
    return rc;
}

/* ---- the op-time model ------------------------------------------------------------------ */

struct mt_perfmodel {
    mt_pm_kind kind;
    const mt_trace *t;
    mt_work *work;
    int8_t *batch_dep;
    mt_linmodel lin;
    int has_lin;
    mt_gpu_table *gpus;
    const mt_gpu_spec *src, *dst; /* dst: only when it differs from src */
    mt_gpu_spec clocked;          /* --gpu-clock: the predicted GPU at that clock (dst points here) */
    mt_tf32 tf32;
    char warning[2048];
};

static void add_warning(mt_perfmodel *pm, const char *fmt, const char *a, const char *b) {
    size_t off = strlen(pm->warning);
    if (off + 8 >= sizeof pm->warning) return;
    char line[1024];
    snprintf(line, sizeof line, fmt, a, b);
    snprintf(pm->warning + off, sizeof pm->warning - off, "%s%s", off ? "; " : "", line);
}

/* pm->gpus, pm->src (the trace's device, else --trace-gpu) and pm->dst (the target when it
 * differs). */
static mt_status resolve_gpus(mt_perfmodel *pm, const mt_trace *t, const mt_pm_opts *o, mt_error *err) {
    char names[512];
    MT_CHECK(mt_gpu_table_new(o->gpu_specs_path, &pm->gpus, err));
    const char *dev = t->device_name && *t->device_name ? t->device_name : NULL;
    pm->src = mt_gpu_find(pm->gpus, dev);
    if (!pm->src && o->trace_gpu && !(pm->src = mt_gpu_find(pm->gpus, o->trace_gpu)))
        return mt_fail(err, MT_EINVAL, "unknown --trace-gpu '%s' (known: %s)", o->trace_gpu,
                       mt_gpu_names(pm->gpus, names, sizeof names));
    if (dev && o->trace_gpu && pm->src != mt_gpu_find(pm->gpus, o->trace_gpu))
        add_warning(pm, "the trace names its GPU ('%s'): --trace-gpu %s is not used", dev, o->trace_gpu);
    const char *path = t->kineto_path ? t->kineto_path : "trace", *shown = dev ? dev : "(unknown)";
    if (o->target_gpu) {
        const mt_gpu_spec *dst = mt_gpu_find(pm->gpus, o->target_gpu);
        if (!dst)
            return mt_fail(err, MT_EINVAL, "unknown GPU '%s' (known: %s; add one with --gpu-specs FILE)",
                           o->target_gpu, mt_gpu_names(pm->gpus, names, sizeof names));
        if (o->kind == MT_PM_ANALYTICAL) { /* measured times unused: no traced GPU needed */
            if (dst != pm->src) pm->dst = dst;
            return MT_OK;
        }
        if (!pm->src)
            return mt_fail(err, MT_EINVAL, "%s: the trace's device '%s' is not in the GPU table, so it cannot be "
                           "scaled to %s (name it with --trace-gpu, or add it with --gpu-specs FILE)", path, shown,
                           dst->name);
        if (dst != pm->src) pm->dst = dst;
    }
    if (o->kind == MT_PM_ANALYTICAL && !pm->src)
        return mt_fail(err, MT_EINVAL, "%s: the analytical model needs a GPU to predict, and the trace's device '%s' "
                       "is not in the GPU table (name one with --target-gpu; mitosis perfmodel gpus lists them)",
                       path, shown);
    if (o->kind == MT_PM_ROOFLINE && !pm->src)
        return mt_fail(err, MT_EINVAL, "%s: the roofline model needs the trace's GPU, and '%s' is not in the GPU "
                       "table (name it with --trace-gpu, add it with --gpu-specs FILE, or use --perf-model linear)",
                       path, shown);
    return MT_OK;
}

/* --gpu-clock: pm->dst becomes a copy of the predicted GPU (the target, else the traced one) with
 * its compute peaks at that clock. */
static mt_status apply_clock(mt_perfmodel *pm, const mt_pm_opts *o, mt_error *err) {
    if (!(o->gpu_clock_MHz > 0)) return MT_OK;
    const mt_gpu_spec *g = pm->dst ? pm->dst : pm->src;
    if (!g)
        return mt_fail(err, MT_EINVAL, "--gpu-clock %.0f: no GPU to clock (the trace's device is not in the GPU table; "
                       "name one with --target-gpu)", o->gpu_clock_MHz);
    if (!(g->boost_MHz > 0))
        return mt_fail(err, MT_EINVAL, "--gpu-clock %.0f: the GPU table gives no boost clock for %s (add boost_MHz to "
                       "its --gpu-specs entry)", o->gpu_clock_MHz, g->name);
    if (o->gpu_clock_MHz > g->clock_MHz * (1 + 1e-9))
        return mt_fail(err, MT_EINVAL, "--gpu-clock %.0f: above %s's %.0f MHz (a clock or power cap only slows a GPU)",
                       o->gpu_clock_MHz, g->name, g->clock_MHz);
    pm->clocked = *g;
    mt_gpu_set_clock(&pm->clocked, o->gpu_clock_MHz);
    snprintf(pm->clocked.name, sizeof pm->clocked.name, "%.30s@%.0fMHz", g->name, o->gpu_clock_MHz);
    pm->dst = &pm->clocked;
    return MT_OK;
}

/* The linear model: loaded from o->model_path, else fitted on the trace itself. */
static mt_status init_linear(mt_perfmodel *pm, const mt_trace *t, const mt_pm_opts *o, mt_error *err) {
    if (o->kind != MT_PM_LINEAR) return MT_OK;
    if (o->model_path) {
        MT_CHECK(mt_linmodel_load(o->model_path, &pm->lin, err));
        if (pm->lin.device[0] && t->device_name && strcmp(pm->lin.device, t->device_name))
            add_warning(pm, "model fitted on '%s', trace from '%s'", pm->lin.device, t->device_name);
    } else {
        mt_pm_data *data = NULL;
        mt_status rc = mt_pm_data_new(&data, err);
        if (rc == MT_OK) rc = mt_pm_data_add_trace(data, t, err);
        if (rc == MT_OK) rc = mt_linmodel_fit(data, &pm->lin, err);
        mt_pm_data_free(data);
        if (rc != MT_OK) return rc;
    }
    pm->has_lin = 1;
    for (int c = 0; c < MT_OPC_COUNT; c++)
        if (pm->lin.cls[c].warning[0])
            add_warning(pm, "class %s: %s", mt_opclass_name((mt_opclass)c), pm->lin.cls[c].warning);
    return MT_OK;
}

mt_status mt_perfmodel_new(const mt_trace *t, const mt_pm_opts *o, mt_perfmodel **out, mt_error *err) {
    mt_pm_opts def;
    if (!o) {
        mt_pm_opts_init(&def);
        o = &def;
    }
    if ((unsigned)o->kind >= MT_PM_KIND_COUNT)
        return mt_fail(err, MT_EINVAL, "perfmodel: unknown kind %d", (int)o->kind);
    if ((unsigned)o->tf32 >= MT_TF32_COUNT)
        return mt_fail(err, MT_EINVAL, "perfmodel: unknown TF32 mode %d", (int)o->tf32);
    mt_perfmodel *pm = calloc(1, sizeof *pm);
    if (!pm) return mt_fail(err, MT_ENOMEM, "perfmodel: out of memory");
    pm->kind = o->kind;
    pm->tf32 = o->tf32;
    pm->t = t;
    mt_status rc = MT_OK;
    pm->work = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), sizeof *pm->work);
    pm->batch_dep = calloc((size_t)(t->n_ops > 0 ? t->n_ops : 1), sizeof *pm->batch_dep);
    if (!pm->work || !pm->batch_dep) {
        rc = mt_fail(err, MT_ENOMEM, "perfmodel: out of memory");
        goto fail;
    }
    int32_t no_shapes = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        mt_work_of_trace_op(t, i, &pm->work[i]);
        pm->batch_dep[i] = (int8_t)(mt_op_batch_dependent(t, i) != 0);
        no_shapes += !pm->work[i].has_shapes && pm->work[i].cls != MT_OPC_NONE &&
                     pm->work[i].cls != MT_OPC_COMM && t->ops[i].dev_ns > 0;
    }
    if (no_shapes) {
        char n[32];
        snprintf(n, sizeof n, "%d", (int)no_shapes);
        add_warning(pm, o->kind == MT_PM_ANALYTICAL ? "%s ops have no tensor shapes%s: each counted as one kernel "
                    "launch" : "%s ops have no tensor shapes%s: scaled proportionally", n,
                    t->has_et ? "" : " (no Execution Trace)");
    }
    if ((rc = resolve_gpus(pm, t, o, err)) != MT_OK || (rc = apply_clock(pm, o, err)) != MT_OK || (rc = init_linear(pm, t, o, err)) != MT_OK) goto fail;
    *out = pm;
    return MT_OK;
fail:
    mt_perfmodel_free(pm);
    return rc;
}

void mt_perfmodel_free(mt_perfmodel *pm) {
    if (!pm) return;
    free(pm->work);
    free(pm->batch_dep);
    mt_gpu_table_free(pm->gpus);
    free(pm);
}

const char *mt_perfmodel_warning(const mt_perfmodel *pm) { return pm ? pm->warning : ""; }
const mt_work *mt_perfmodel_op_work(const mt_perfmodel *pm, int32_t op) {
    return pm && op >= 0 && op < pm->t->n_ops ? &pm->work[op] : NULL;
}
const mt_gpu_spec *mt_perfmodel_source_gpu(const mt_perfmodel *pm) { return pm ? pm->src : NULL; }
const mt_gpu_spec *mt_perfmodel_target_gpu(const mt_perfmodel *pm) { return pm ? pm->dst : NULL; }
mt_tf32 mt_perfmodel_tf32(const mt_perfmodel *pm) { return pm ? pm->tf32 : MT_TF32_CONV; }
const mt_gpu_spec *mt_perfmodel_gpu(const mt_perfmodel *pm) { return !pm ? NULL : pm->dst ? pm->dst : pm->src; }

double mt_perfmodel_op_time_ns(void *ctx, const mt_trace *t, int32_t op, double batch_factor,
                               int32_t tp_split) {
    mt_perfmodel *pm = ctx;
    if (!t || op < 0 || op >= t->n_ops) return 0;
    if (!pm) return mt_optime_proportional(NULL, t, op, batch_factor, tp_split);
    mt_work w0;
    int bd;
    if (t == pm->t) {
        w0 = pm->work[op];
        bd = pm->batch_dep[op];
    } else {
        mt_work_of_trace_op(t, op, &w0);
        bd = mt_op_batch_dependent(t, op) != 0;
    }
    double measured = (double)t->ops[op].dev_ns;
    double prop = mt_optime_proportional(NULL, t, op, batch_factor, tp_split);
    mt_work w1 = mt_work_scale(&w0, bd, batch_factor, tp_split);
    int modelled = w0.has_shapes && w0.cls != MT_OPC_COMM && w0.cls != MT_OPC_NONE;
    if (pm->kind == MT_PM_ANALYTICAL) {
        /* views, allocation and communication: no kernel of their own; an op with device time
         * but no shapes: one kernel launch */
        if (w0.cls == MT_OPC_NONE || w0.cls == MT_OPC_COMM || measured <= 0) return 0;
        return mt_analytical_ns(pm->dst ? pm->dst : pm->src, modelled ? &w1 : NULL, pm->tf32);
    }
    double base = prop;
    if (pm->kind != MT_PM_TRACE && w0.cls == MT_OPC_NONE) {
        base = measured; /* views and allocation: host overhead, no work to scale */
    } else if (pm->kind == MT_PM_LINEAR && modelled) {
        double p0 = mt_linmodel_predict_ns(&pm->lin, w0.cls, w0.flops, mt_work_bytes(&w0));
        double p1 = mt_linmodel_predict_ns(&pm->lin, w1.cls, w1.flops, mt_work_bytes(&w1));
        if (p0 > 0 && p1 >= 0) base = measured * p1 / p0;
    } else if (pm->kind == MT_PM_ROOFLINE && modelled && pm->src) {
        double r0 = mt_unit_floor_ns(pm->src, &w0, pm->tf32), r1 = mt_unit_floor_ns(pm->src, &w1, pm->tf32);
        if (r0 > 0) base = measured * r1 / r0;
    }
    /* views, allocation and communication have no arithmetic to move (and no roofline floor,
     * mt_perfmodel_op_floor_ns): the bandwidth ratio */
    if (pm->dst && pm->src) base = mt_unit_move_ns(pm->src, pm->dst, modelled ? &w1 : NULL, base, pm->tf32);
    return isfinite(base) && base > 0 ? base : 0;
}

double mt_perfmodel_op_floor_ns(const mt_perfmodel *pm, int32_t op, double batch_factor, int32_t tp_split) {
    const mt_gpu_spec *g = pm->dst ? pm->dst : pm->src;
    const mt_work *w0 = mt_perfmodel_op_work(pm, op);
    if (!g || !w0 || !w0->has_shapes || w0->cls == MT_OPC_NONE || w0->cls == MT_OPC_COMM || pm->t->ops[op].dev_ns <= 0)
        return 0;
    mt_work w = mt_work_scale(w0, pm->batch_dep[op], batch_factor, tp_split);
    return mt_unit_floor_ns(g, &w, pm->tf32);
}

double mt_perfmodel_floor_ns(const mt_perfmodel *pm, double batch_factor, int32_t tp_split) {
    double sum = 0;
    for (int32_t i = 0; i < pm->t->n_ops; i++) sum += mt_perfmodel_op_floor_ns(pm, i, batch_factor, tp_split);
    return sum;
}

void mt_perfmodel_step_ns(mt_perfmodel *pm, double batch_factor, int32_t tp_split,
                          double phase_ns[TRACE_PHASE_COUNT]) {
    for (int p = 0; p < TRACE_PHASE_COUNT; p++) phase_ns[p] = 0;
    for (int32_t i = 0; i < pm->t->n_ops; i++)
        phase_ns[pm->t->ops[i].phase] +=
            mt_perfmodel_op_time_ns(pm, pm->t, i, batch_factor, tp_split);
}
