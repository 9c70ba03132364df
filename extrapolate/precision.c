/* extrapolate/precision.c — the precision policy (precision.h). */
#include "extrapolate/precision.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const struct {
    const char *name;
    mt_prec_dtype param, reduce, master, optim;
    int8_t fp8;
} NAMED[] = {
    {"fp32", MT_PREC_FP32, MT_PREC_FP32, MT_PREC_NONE, MT_PREC_FP32, 0},
    {"bf16", MT_PREC_BF16, MT_PREC_BF16, MT_PREC_NONE, MT_PREC_BF16, 0},
    {"bf16-mixed", MT_PREC_BF16, MT_PREC_FP32, MT_PREC_FP32, MT_PREC_FP32, 0},
    {"fp16-mixed", MT_PREC_FP16, MT_PREC_FP32, MT_PREC_FP32, MT_PREC_FP32, 0},
    {"fp8-mixed", MT_PREC_BF16, MT_PREC_FP32, MT_PREC_FP32, MT_PREC_FP32, 1},
    {"traced", MT_PREC_UNSET, MT_PREC_UNSET, MT_PREC_UNSET, MT_PREC_UNSET, 0},
};
enum { N_NAMED = sizeof NAMED / sizeof NAMED[0] };

const char *mt_prec_dtype_name(mt_prec_dtype d) {
    static const char *names[] = {"traced", "fp32", "bf16", "fp16", "none"};
    return (unsigned)d <= MT_PREC_NONE ? names[d] : "?";
}

int mt_prec_dtype_bytes(mt_prec_dtype d) { return d == MT_PREC_FP32 ? 4 : d == MT_PREC_BF16 || d == MT_PREC_FP16 ? 2 : 0; }

static int dtype_parse(const char *v, int master, mt_prec_dtype *out) {
    if (!strcmp(v, "fp32") || !strcmp(v, "float32")) *out = MT_PREC_FP32;
    else if (!master && (!strcmp(v, "bf16") || !strcmp(v, "bfloat16"))) *out = MT_PREC_BF16;
    else if (!master && (!strcmp(v, "fp16") || !strcmp(v, "float16"))) *out = MT_PREC_FP16;
    else if (master && !strcmp(v, "none")) *out = MT_PREC_NONE;
    else return 0;
    return 1;
}

mt_status mt_precision_parse(const char *spec, mt_precision *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    char buf[128];
    if (strlen(spec) >= sizeof buf) return mt_fail(err, MT_EINVAL, "--precision: '%.40s...' is too long", spec);
    snprintf(buf, sizeof buf, "%s", spec);
    char *save = NULL;
    for (char *item = strtok_r(buf, ",", &save); item; item = strtok_r(NULL, ",", &save)) {
        char *v = strchr(item, '=');
        if (!v) {
            int k = 0;
            while (k < N_NAMED && strcmp(item, NAMED[k].name)) k++;
            if (k == N_NAMED)
                return mt_fail(err, MT_EINVAL, "--precision: unknown policy '%s' (use %s, then parts such as "
                               "reduce=fp32)", item, MT_PRECISION_NAMES);
            out->param = NAMED[k].param;
            out->reduce = NAMED[k].reduce;
            out->master = NAMED[k].master;
            out->optim = NAMED[k].optim;
            out->fp8 = NAMED[k].fp8;
            snprintf(out->name, sizeof out->name, "%s", NAMED[k].name);
            continue;
        }
        *v++ = '\0';
        if (!strcmp(item, "gemm")) {
            if (strcmp(v, "fp8") && strcmp(v, "traced"))
                return mt_fail(err, MT_EINVAL, "--precision gemm=%s: use fp8 (the linear layers' GEMMs in FP8) or traced", v);
            out->fp8 = !strcmp(v, "fp8");
            out->name[0] = '\0';
            continue;
        }
        mt_prec_dtype *part = !strcmp(item, "param") ? &out->param : !strcmp(item, "reduce") ? &out->reduce
                       : !strcmp(item, "master") ? &out->master : !strcmp(item, "optim") ? &out->optim : NULL;
        if (!part)
            return mt_fail(err, MT_EINVAL, "--precision: unknown part '%s=' (use param=, reduce=, master=, optim=, gemm=)",
                           item);
        if (!dtype_parse(v, part == &out->master, part))
            return mt_fail(err, MT_EINVAL, "--precision %s=%s: use %s", item, v,
                           part == &out->master ? "fp32 or none" : "fp32, bf16 or fp16");
        out->name[0] = '\0'; /* a name with parts changed is described by its parts */
    }
    return MT_OK;
}

/* The dtype of a tensor, from its name, else its element size. */
static mt_prec_dtype tensor_dtype(const trace_tensor *x) {
    const char *d = x->dtype;
    if (d && (strstr(d, "BFloat16") || strstr(d, "bfloat16"))) return MT_PREC_BF16;
    if (d && (strstr(d, "Half") || strstr(d, "float16"))) return MT_PREC_FP16;
    if (d && (!strcmp(d, "float") || strstr(d, "float32") || !strcmp(d, "Float"))) return MT_PREC_FP32;
    return x->itemsize == 2 ? MT_PREC_BF16 : x->itemsize == 4 ? MT_PREC_FP32 : MT_PREC_UNSET;
}

/* The bytes-weighted most common dtype of role r's tensors, MT_PREC_UNSET when none. */
static mt_prec_dtype role_dtype(const mt_trace *t, trace_role r) {
    double bytes[MT_PREC_NONE] = {0};
    for (int32_t i = 0; i < t->n_tensors; i++)
        if (t->tensors[i].role == r) bytes[tensor_dtype(&t->tensors[i])] += t->tensors[i].bytes;
    mt_prec_dtype best = MT_PREC_UNSET;
    for (int d = MT_PREC_FP32; d < MT_PREC_NONE; d++)
        if (bytes[d] > bytes[best]) best = (mt_prec_dtype)d;
    return best;
}

void mt_precision_traced(const mt_trace *t, mt_precision *out) {
    memset(out, 0, sizeof *out);
    out->param = role_dtype(t, TRACE_ROLE_WEIGHT);
    if (!out->param && t->param_count > 0 && t->param_bytes > 0)
        out->param = t->param_bytes / (double)t->param_count < 3 ? MT_PREC_BF16 : MT_PREC_FP32;
    if (!out->param) out->param = MT_PREC_FP32;
    out->reduce = role_dtype(t, TRACE_ROLE_GRADIENT);
    if (!out->reduce) out->reduce = out->param;
    out->optim = role_dtype(t, TRACE_ROLE_OPTSTATE);
    if (!out->optim) out->optim = out->param;
    out->master = MT_PREC_NONE;
}

void mt_precision_resolve(const mt_precision *asked, const mt_precision *traced, mt_precision *out) {
    mt_precision r = *traced;
    if (asked->param) r.param = asked->param;
    if (asked->reduce) r.reduce = asked->reduce;
    if (asked->master) r.master = asked->master;
    if (asked->optim) r.optim = asked->optim;
    r.fp8 = asked->fp8;
    snprintf(r.name, sizeof r.name, "%s", asked->name);
    *out = r;
}

const char *mt_precision_describe(const mt_precision *p, char *buf, size_t len) {
    const char *name = p->name[0] && strcmp(p->name, "traced") ? p->name : NULL;
    for (int k = 0; !name && k < N_NAMED; k++)
        if (NAMED[k].param == p->param && NAMED[k].reduce == p->reduce && NAMED[k].master == p->master &&
            NAMED[k].optim == p->optim && NAMED[k].fp8 == p->fp8)
            name = NAMED[k].name;
    snprintf(buf, len, "%s (param %s, reduce %s, master %s, optimizer %s%s)", name ? name : "custom",
             mt_prec_dtype_name(p->param), mt_prec_dtype_name(p->reduce), mt_prec_dtype_name(p->master),
             mt_prec_dtype_name(p->optim), p->fp8 ? ", linear GEMMs fp8" : "");
    return buf;
}

double mt_precision_states_per_param(const mt_trace *t, const mt_precision *traced) {
    int b = mt_prec_dtype_bytes(traced->optim);
    return t->param_count > 0 && b > 0 ? t->optstate_bytes / ((double)t->param_count * b) : 0;
}

/* Bytes the optimizer step reads and writes per parameter: the gradient, each state read and written,
 * the master read and written and the parameter written (or the parameter read and written). */
static double step_bytes(const mt_precision *p, double states) {
    double m = mt_prec_dtype_bytes(p->master), w = mt_prec_dtype_bytes(p->param);
    return mt_prec_dtype_bytes(p->reduce) + 2 * states * mt_prec_dtype_bytes(p->optim) + (m > 0 ? 2 * m + w : 2 * w);
}

void mt_precision_scale(const mt_precision *traced, const mt_precision *asked, double states_per_param,
                        mt_prec_scale *out) {
    double tp = mt_prec_dtype_bytes(traced->param), tm = mt_prec_dtype_bytes(traced->master);
    double am = mt_prec_dtype_bytes(asked->master), ap = mt_prec_dtype_bytes(asked->param);
    out->param = ap / tp;
    out->shard = (am > 0 ? am : ap) / (tm > 0 ? tm : tp);
    out->grad = (double)mt_prec_dtype_bytes(asked->reduce) / mt_prec_dtype_bytes(traced->reduce);
    out->optim = (double)mt_prec_dtype_bytes(asked->optim) / mt_prec_dtype_bytes(traced->optim);
    out->master = (am - tm) / tp; /* a traced master is already among the optimizer states */
    if (out->master < 0) out->master = 0;
    double ts = step_bytes(traced, states_per_param);
    out->opt_time = ts > 0 ? step_bytes(asked, states_per_param) / ts : 1;
}
