/* extrapolate/moe.c — MoE layers found in a trace and their expert load (see moe.h). */
#include "extrapolate/moe.h"

#include <fnmatch.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/opclass.h"
#include "util/u64map.h"

/* The op's first input of `role` (TRACE_ROLE_WEIGHT) or, role < 0, its first non-weight input. */
static const trace_tref *input_of(const mt_trace *t, const trace_op *o, int role) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        if (r->tensor < 0 || r->tensor >= t->n_tensors || r->ndim < 1) continue;
        int w = t->tensors[r->tensor].role == TRACE_ROLE_WEIGHT;
        if (role < 0 ? !w : w) return r;
    }
    return NULL;
}

static int64_t dim(const mt_trace *t, const trace_tref *r, int32_t k) {
    return k >= 0 && k < r->ndim ? t->dims[r->shape_off + k] : 0;
}

/* Rows of a tensor (every dimension but the last). */
static double rows(const mt_trace *t, const trace_tref *r) {
    double n = 1;
    for (int32_t k = 0; k + 1 < r->ndim; k++) n *= (double)t->dims[r->shape_off + k];
    return n;
}

/* A forward linear reading a 2-D weight. */
static int is_linear(const mt_trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    if (o->phase != TRACE_PHASE_FORWARD || o->tp != TRACE_TP_LINEAR) return 0;
    const trace_tref *w = input_of(t, o, TRACE_ROLE_WEIGHT);
    return w && w->ndim == 2 && input_of(t, o, -1);
}

static int same_weight_shape(const mt_trace *t, int32_t a, int32_t b) {
    const trace_tref *x = input_of(t, &t->ops[a], TRACE_ROLE_WEIGHT), *y = input_of(t, &t->ops[b], TRACE_ROLE_WEIGHT);
    return dim(t, x, 0) == dim(t, y, 0) && dim(t, x, 1) == dim(t, y, 1);
}

/* The experts per token that the router linear i selects: the k of a selection op (topk, max, argmax,
 * sort: mt_opclass_select_k) over its E logits among the few forward ops after it (within 8), 0 when
 * none; *sel gets that op. */
static int32_t select_after(const mt_trace *t, int32_t i, int32_t *sel) {
    const trace_tref *w = input_of(t, &t->ops[i], TRACE_ROLE_WEIGHT);
    int64_t E = w ? dim(t, w, 0) : 0;
    for (int32_t j = i + 1; j < t->n_ops && j <= i + 8 && E >= 2; j++) {
        int32_t k = mt_opclass_select_k(t, &t->ops[j], E, NULL);
        if (k > 0) {
            if (sel) *sel = j;
            return k;
        }
    }
    return 0;
}

/* The weight tensor whose storage tensor r's shares (r itself when it is a weight): a stacked expert
 * weight reaches a grouped matmul as a transposed view (HuggingFace's Mixtral: aten::_grouped_mm reads
 * gate_up_proj.transpose(-1, -2)), a tensor of its own in the trace. -1 when none. */
static int32_t weight_of(const mt_u64map *wst, const mt_trace *t, const trace_tref *r) {
    if (r->tensor < 0 || r->tensor >= t->n_tensors) return -1;
    const trace_tensor *x = &t->tensors[r->tensor];
    if (x->role == TRACE_ROLE_WEIGHT) return r->tensor;
    int64_t w;
    return x->storage_id > 0 && mt_u64map_get(wst, (uint64_t)x->storage_id, &w) ? (int32_t)w : -1;
}

/* The stacked expert weight [n, ...] (3-D, a weight or a view of one) that forward matmul o (bmm,
 * einsum, matmul, grouped mm) reads, NULL when none. */
static const trace_tref *stacked_weight(const mt_u64map *wst, const mt_trace *t, const trace_op *o) {
    if (o->phase != TRACE_PHASE_FORWARD || o->cls != MT_OPC_MATMUL) return NULL;
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        if (r->ndim == 3 && weight_of(wst, t, r) >= 0) return r;
    }
    return NULL;
}

/* The expert count n of a forward matmul over a stacked expert weight [n, ...], else 0. */
static int64_t stacked_experts(const mt_u64map *wst, const mt_trace *t, int32_t i) {
    const trace_tref *w = stacked_weight(wst, t, &t->ops[i]);
    return w && input_of(t, &t->ops[i], -1) ? dim(t, w, 0) : 0;
}

/* Linears per expert: the smallest m whose weight shapes repeat E times in lin[0 .. n); 0 when none. */
static int32_t per_expert(const mt_trace *t, const int32_t *lin, int32_t n, int32_t E) {
    for (int32_t m = 1; m <= 4 && (int64_t)m * E <= n; m++) {
        int ok = 1;
        for (int32_t j = m; j < m * E && ok; j++) ok = same_weight_shape(t, lin[j], lin[j % m]);
        if (ok) return m;
    }
    return 0;
}

typedef struct finder {
    const mt_trace *t;
    mt_moe *m;
    int32_t *lin;        /* forward linears after the router */
    int32_t cap_layers;
    int32_t prev_router; /* the last layer's router, -1 */
    mt_u64map wst;       /* storage id -> the weight tensor holding it (weight_of) */
    char *why;           /* the first candidate's reason for not being a MoE layer, or NULL */
    size_t why_n;
} finder;

/* Marks the ops of expert e of MoE layer k: the ops of the trace layer of each of its linears. */
static void mark_expert(finder *f, int32_t k, int32_t e, const int32_t *lin, int32_t m) {
    const mt_trace *t = f->t;
    mt_moe *x = f->m;
    for (int32_t j = 0; j < m; j++) {
        int32_t op = lin[j], layer = t->ops[op].layer;
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *o = &t->ops[i];
            int mine = layer >= 0 ? o->layer == layer : (i == op || o->fwd_op == op);
            if (!mine || (o->phase != TRACE_PHASE_FORWARD && o->phase != TRACE_PHASE_BACKWARD) || trace_op_is_comm(o))
                continue;
            x->op_moe[i] = k;
            x->op_expert[i] = e;
        }
        const trace_op *o = &t->ops[op]; /* its weight (or a view of it) and bias */
        for (int32_t q = 0; q < o->in_count; q++) {
            int32_t w = weight_of(&f->wst, t, &t->trefs[o->in_first + q]);
            if (w >= 0) x->l[k].grad_bytes += t->tensors[w].bytes;
        }
    }
}

/* Distinct weights among the E experts' first linears: fewer than E on one rank of an expert-parallel
 * job that runs each of its experts once per source rank (sparse_dist.py: (rank, expert) calls). */
static int32_t distinct_experts(const mt_trace *t, const int32_t *lin, int32_t E, int32_t m) {
    int32_t n = 0;
    for (int32_t e = 0; e < E; e++) {
        int32_t w = input_of(t, &t->ops[lin[e * m]], TRACE_ROLE_WEIGHT)->tensor, seen = 0;
        for (int32_t q = 0; q < e && !seen; q++) seen = input_of(t, &t->ops[lin[q * m]], TRACE_ROLE_WEIGHT)->tensor == w;
        n += !seen;
    }
    return n;
}

/* Room for one more layer; -1 ENOMEM. */
static int grow(finder *f) {
    mt_moe *x = f->m;
    if (x->n_layers < f->cap_layers) return 0;
    int32_t c = f->cap_layers ? 2 * f->cap_layers : 4;
    mt_moe_layer *l = realloc(x->l, (size_t)c * sizeof *l);
    double *tr = l ? realloc(x->traced, (size_t)c * MT_MOE_MAX_EXPERTS * sizeof *tr) : NULL;
    if (l) x->l = l;
    if (!tr) return -1;
    x->traced = tr;
    f->cap_layers = c;
    return 0;
}

static void why(finder *f, const char *fmt, int32_t r, int32_t E, int32_t k) {
    if (f->why && f->why_n && !f->why[0]) snprintf(f->why, f->why_n, fmt, r, E, k);
}

/* Storage of op o's first non-weight input (its tensor when the trace names no storage), -1. */
static int64_t input_storage(const mt_trace *t, const trace_op *o) {
    const trace_tref *in = input_of(t, o, -1);
    if (!in) return -1;
    const trace_tensor *x = &t->tensors[in->tensor];
    return x->storage_id > 0 ? x->storage_id : -2 - (int64_t)in->tensor;
}

/* Shared experts of layer id: the forward linears besides the router that read the router's input (its
 * storage: a view of it counts) between the previous and the next router, a dense FFN beside the routed
 * experts (DeepSeekMoE, Qwen2-MoE). Their widths over a routed expert's give the count. */
static void shared_experts(finder *f, int32_t id, int32_t lo, int32_t hi, int64_t expert_width) {
    const mt_trace *t = f->t;
    mt_moe_layer *L = &f->m->l[id];
    int64_t st = input_storage(t, &t->ops[L->router]), width = 0;
    for (int32_t i = lo; i < hi && st != -1; i++) {
        if (i == L->router || f->m->op_moe[i] >= 0 || !is_linear(t, i) || input_storage(t, &t->ops[i]) != st) continue;
        if (!L->shared_linears++) width = dim(t, input_of(t, &t->ops[i], TRACE_ROLE_WEIGHT), 0);
    }
    if (L->shared_linears)
        L->shared_experts = expert_width > 0 && width >= expert_width && width % expert_width == 0
                                ? (int32_t)(width / expert_width) : 1;
}

/* The MoE layer whose router is op r (selection op sel picking k after it), when its experts follow: E
 * repeated linears (looped experts), or matmuls over a stacked [E, ...] weight (batched experts); 1
 * when added, 0 (with the reason in f->why) when not. */
static int try_layer(finder *f, int32_t r, int32_t k, int32_t sel) {
    const mt_trace *t = f->t;
    const trace_op *o = &t->ops[r];
    const trace_tref *w = input_of(t, o, TRACE_ROLE_WEIGHT), *in = input_of(t, o, -1);
    int32_t E = (int32_t)dim(t, w, 0);
    if (E < 2 || E > MT_MOE_MAX_EXPERTS || k < 1 || k > E) {
        why(f, "a linear to %2$d outputs at op %1$d selects %3$d of them, outside 1..E (E at most 4096)", r, E, k);
        return 0;
    }
    int32_t n = 0, next = t->n_ops, n_stk = 0, stk[8];
    int64_t stk_n = 0;
    for (int32_t i = r + 1; i < t->n_ops; i++) {
        if (is_linear(t, i) && select_after(t, i, NULL) > 0) { /* the next router */
            next = i;
            break;
        }
        int64_t s = stacked_experts(&f->wst, t, i);
        if (s >= 1 && E % s == 0 && n_stk < 8 && (!n_stk || s == stk_n)) {
            stk[n_stk++] = i;
            stk_n = s;
        } else if (n_stk && is_linear(t, i)) {
            break; /* batched experts end where a dense linear follows them */
        }
        if (is_linear(t, i) && n < 4 * E) f->lin[n++] = i;
    }
    int32_t m = 0, local = E; /* one rank of an expert-parallel job holds E / w of the experts */
    for (; local >= 2 && !m; local--) /* one expert alone shows no repeating shapes: not found */
        if (E % local == 0) m = per_expert(t, f->lin, n, local);
    local++;
    int batched = 0;
    if (m == 0 && n_stk > 0 && (!n || f->lin[0] > stk[0])) { /* experts as one matmul over stacked weights */
        batched = 1;
        m = n_stk;
        local = (int32_t)stk_n;
    }
    if (m == 0) {
        why(f, "the router candidate at op %d (a linear to %d logits, top-%d) is followed neither by E experts' "
               "repeated linears nor by a matmul over a stacked [E, ...] weight", r, E, k);
        return 0;
    }
    mt_moe *x = f->m;
    if (grow(f) < 0) return -1;
    int32_t id = x->n_layers++;
    mt_moe_layer *L = &x->l[id];
    memset(L, 0, sizeof *L);
    *L = (mt_moe_layer){.router = r, .select_op = sel, .batched = (int8_t)batched, .experts = E, .local = local,
                        .top_k = k, .per_expert = m, .first_fwd = -1, .last_fwd = -1, .first_bwd = -1, .last_bwd = -1,
                        .tokens = rows(t, in), .hidden = (double)dim(t, in, in->ndim - 1),
                        .itemsize = t->tensors[in->tensor].itemsize > 0 ? t->tensors[in->tensor].itemsize : 4};
    int64_t width = 0;
    if (batched) { /* every expert takes the same rows: the buffer [E, C, d] */
        const trace_tref *xin = input_of(t, &t->ops[stk[0]], -1), *sw = stacked_weight(&f->wst, t, &t->ops[stk[0]]);
        for (int32_t e = 0; e < local; e++) x->traced[(size_t)id * MT_MOE_MAX_EXPERTS + e] = rows(t, xin) / local;
        L->routed = rows(t, xin);
        width = dim(t, sw, 2);
        mark_expert(f, id, 0, stk, m);
    } else {
        for (int32_t e = 0; e < local; e++) {
            const trace_tref *xin = input_of(t, &t->ops[f->lin[e * m]], -1);
            x->traced[(size_t)id * MT_MOE_MAX_EXPERTS + e] = rows(t, xin);
            L->routed += rows(t, xin);
            mark_expert(f, id, e, f->lin + e * m, m);
        }
        width = dim(t, input_of(t, &t->ops[f->lin[0]], TRACE_ROLE_WEIGHT), 0);
        if (local == E) L->local = distinct_experts(t, f->lin, E, m);
    }
    L->grad_bytes *= (double)E / local; /* every expert's, as one GPU of the plan holds E / ep */
    shared_experts(f, id, f->prev_router + 1, next, width);
    f->prev_router = r;
    return 1;
}

/* ---- experts named by the user ---------------------------------------------------------- */

/* A module path's expert: the key of its shortest dot-prefix whose tail (from the start or after a dot)
 * matches the glob, 0 when none. */
static uint64_t module_key(const char *path, const char *glob) {
    char buf[512];
    size_t n = strlen(path);
    if (n >= sizeof buf) return 0;
    for (size_t j = 1; j <= n; j++) {
        if (j < n && path[j] != '.') continue;
        memcpy(buf, path, j);
        buf[j] = 0;
        for (size_t s = 0; s < j; s++) {
            if (s && buf[s - 1] != '.') continue;
            if (fnmatch(glob, buf + s, 0) == 0) {
                uint64_t h = 1469598103934665603ULL;
                for (size_t q = 0; q < j; q++) h = (h ^ (unsigned char)buf[q]) * 1099511628211ULL;
                return h | 1ULL << 63;
            }
        }
    }
    return 0;
}

/* The expert op o runs in, by name: inside a record_function "mitosis.expert..." or one matching the
 * --moe-pattern glob (key: that annotation's instance), or in an nn.Module whose path matches the glob
 * (key: the path up to the match); 0 none. */
static uint64_t expert_key(const mt_trace *t, const trace_op *o) {
    if (o->phase != TRACE_PHASE_FORWARD) return 0;
    if (o->mark && (!strncmp(o->mark, "mitosis.expert", 14) ||
                    (t->expert_pattern && fnmatch(t->expert_pattern, o->mark, 0) == 0)))
        return 1 + (uint64_t)(uint32_t)o->mark_id;
    if (t->expert_pattern && o->layer >= 0 && o->layer < t->n_layers && t->layers[o->layer].name)
        return module_key(t->layers[o->layer].name, t->expert_pattern);
    return 0;
}

static int reads_weight(const mt_trace *t, int32_t i) { return input_of(t, &t->ops[i], TRACE_ROLE_WEIGHT) != NULL; }

/* Adds the MoE layer of named experts: ops[first .. end) of the forward pass, whose weight-reading ops
 * f->lin[0 .. n) belong to experts key[0 .. n). 1 added, 0 not (no expert reads a weight), -1 ENOMEM. */
static int named_layer(finder *f, int32_t lo, int32_t first, const uint64_t *key, int32_t n) {
    const mt_trace *t = f->t;
    if (n == 0) return 0;
    uint64_t keys[MT_MOE_MAX_EXPERTS];
    int32_t E = 0, *ex = malloc((size_t)n * sizeof *ex), *mine = malloc((size_t)n * sizeof *mine);
    if (!ex || !mine) {
        free(ex);
        free(mine);
        return -1;
    }
    for (int32_t j = 0; j < n; j++) {
        int32_t e = 0;
        while (e < E && keys[e] != key[j]) e++;
        if (e == E && E < MT_MOE_MAX_EXPERTS) keys[E++] = key[j];
        ex[j] = e;
    }
    int32_t router = -1, sel = -1, k = 0;
    for (int32_t i = first - 1; i >= lo && router < 0; i--)
        if (is_linear(t, i)) router = i;
    if (router >= 0 && dim(t, input_of(t, &t->ops[router], TRACE_ROLE_WEIGHT), 0) != E) router = -1; /* not to E logits */
    if (router >= 0) k = select_after(t, router, &sel);
    mt_moe *x = f->m;
    if (grow(f) < 0) {
        free(ex);
        free(mine);
        return -1;
    }
    int32_t id = x->n_layers++;
    mt_moe_layer *L = &x->l[id];
    const trace_tref *rin = router >= 0 ? input_of(t, &t->ops[router], -1) : input_of(t, &t->ops[f->lin[0]], -1);
    *L = (mt_moe_layer){.router = router >= 0 ? router : first, .select_op = sel, .named = 1, .experts = E, .local = E,
                        .first_fwd = -1, .last_fwd = -1, .first_bwd = -1, .last_bwd = -1,
                        .hidden = rin ? (double)dim(t, rin, rin->ndim - 1) : 0,
                        .itemsize = rin && t->tensors[rin->tensor].itemsize > 0 ? t->tensors[rin->tensor].itemsize : 4};
    for (int32_t e = 0; e < E; e++) {
        int32_t m = 0;
        for (int32_t j = 0; j < n; j++)
            if (ex[j] == e) mine[m++] = f->lin[j];
        const trace_tref *xin = input_of(t, &t->ops[mine[0]], -1);
        double r = xin ? rows(t, xin) : 0;
        x->traced[(size_t)id * MT_MOE_MAX_EXPERTS + e] = r;
        L->routed += r;
        if (e == 0) L->per_expert = m;
        mark_expert(f, id, e, mine, m);
    }
    L->tokens = router >= 0 && rin ? rows(t, rin) : L->routed;
    L->top_k = k > 0 ? k : L->tokens > 0 && L->routed > L->tokens ? (int32_t)(L->routed / L->tokens + 0.5) : 1;
    if (router >= 0) {
        const trace_tref *w0 = input_of(t, &t->ops[f->lin[0]], TRACE_ROLE_WEIGHT);
        shared_experts(f, id, lo, t->n_ops, w0 && w0->ndim == 2 ? dim(t, w0, 0) : 0);
    }
    free(ex);
    free(mine);
    return 1;
}

/* The MoE layers of named experts: a layer is a run of expert ops and the ops between them, closed by a
 * weight-reading op outside every expert. 0 when nothing is named, 1 found, -1 ENOMEM. */
static int find_named(finder *f) {
    const mt_trace *t = f->t;
    uint64_t *key = malloc((4 * MT_MOE_MAX_EXPERTS + 1) * sizeof *key);
    if (!key) return -1;
    int32_t n = 0, first = -1, lo = 0, rc = 0, any = 0;
    for (int32_t i = 0; i <= t->n_ops && rc >= 0; i++) {
        uint64_t q = i < t->n_ops ? expert_key(t, &t->ops[i]) : 0;
        int closes = i == t->n_ops || (!q && first >= 0 && t->ops[i].phase == TRACE_PHASE_FORWARD && reads_weight(t, i));
        if (closes && first >= 0) {
            int r = named_layer(f, lo, first, key, n);
            rc = r < 0 ? -1 : rc;
            any |= r > 0;
            lo = i;
            first = -1;
            n = 0;
        }
        if (!q) continue;
        if (first < 0) first = i;
        if (reads_weight(t, i) && n < 4 * MT_MOE_MAX_EXPERTS) {
            f->lin[n] = i;
            key[n++] = q;
        }
    }
    free(key);
    return rc < 0 ? -1 : any;
}

/* first/last forward and backward ops of each layer's experts. */
static void extents(mt_moe *x, const mt_trace *t) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        int32_t k = x->op_moe[i];
        if (k < 0) continue;
        mt_moe_layer *L = &x->l[k];
        int fwd = t->ops[i].phase == TRACE_PHASE_FORWARD;
        int32_t *first = fwd ? &L->first_fwd : &L->first_bwd, *last = fwd ? &L->last_fwd : &L->last_bwd;
        if (*first < 0) *first = i;
        *last = i;
    }
}

mt_status mt_moe_find(const mt_trace *t, mt_moe **out, mt_error *err) { return mt_moe_find_why(t, out, NULL, 0, err); }

mt_status mt_moe_find_why(const mt_trace *t, mt_moe **out, char *why_buf, size_t why_n, mt_error *err) {
    *out = NULL;
    if (why_buf && why_n) why_buf[0] = 0;
    mt_moe *x = calloc(1, sizeof *x);
    finder f = {.t = t, .m = x, .prev_router = -1, .why = why_buf, .why_n = why_n};
    size_t n = (size_t)(t->n_ops > 0 ? t->n_ops : 1);
    if (x) {
        x->n_ops = t->n_ops;
        x->op_moe = malloc(n * sizeof *x->op_moe);
        x->op_expert = malloc(n * sizeof *x->op_expert);
        f.lin = malloc((4 * MT_MOE_MAX_EXPERTS + 1) * sizeof *f.lin);
    }
    mt_u64map_init(&f.wst);
    int wst_ok = 1;
    for (int32_t i = 0; i < t->n_tensors && wst_ok; i++)
        if (t->tensors[i].role == TRACE_ROLE_WEIGHT && t->tensors[i].storage_id > 0)
            wst_ok = mt_u64map_put(&f.wst, (uint64_t)t->tensors[i].storage_id, i, NULL) == MT_OK;
    if (!x || !x->op_moe || !x->op_expert || !f.lin || !wst_ok) {
        mt_u64map_destroy(&f.wst);
        free(f.lin);
        mt_moe_free(x);
        return mt_fail(err, MT_ENOMEM, "out of memory finding mixture-of-experts layers");
    }
    for (size_t i = 0; i < n; i++) x->op_moe[i] = x->op_expert[i] = -1;
    int named = find_named(&f), rc = named < 0 ? -1 : 0; /* experts the user named: no heuristics */
    for (int32_t i = 0; i < t->n_ops && rc >= 0 && named == 0; i++) {
        if (!is_linear(t, i) || x->op_moe[i] >= 0) continue;
        int32_t sel = -1, k = select_after(t, i, &sel);
        if (k > 0) rc = try_layer(&f, i, k, sel);
    }
    free(f.lin);
    mt_u64map_destroy(&f.wst);
    if (rc < 0) {
        mt_moe_free(x);
        return mt_fail(err, MT_ENOMEM, "out of memory finding mixture-of-experts layers");
    }
    if (x->n_layers == 0) {
        mt_moe_free(x);
        return MT_OK;
    }
    extents(x, t);
    *out = x;
    return MT_OK;
}

mt_status mt_moe_spans(mt_moe *m, const mt_trace *t) {
    if (m->op_span) return MT_OK;
    m->op_span = calloc((size_t)(m->n_ops > 0 ? m->n_ops : 1), sizeof *m->op_span);
    if (!m->op_span) return MT_ENOMEM;
    for (int32_t k = 0; k < m->n_layers; k++) {
        const mt_moe_layer *L = &m->l[k];
        for (int32_t i = L->router; i >= 0 && i <= L->last_fwd && i < m->n_ops; i++) m->op_span[i] = 1;
        if (L->router >= 0 && L->router < m->n_ops) m->op_span[L->router] = 2;
    }
    int32_t *last = malloc((size_t)MT_MOE_MAX_EXPERTS * sizeof *last); /* per expert: its last linear so far */
    if (!last) return MT_ENOMEM;
    for (int32_t k = 0; k < m->n_layers; k++) {
        const mt_moe_layer *L = &m->l[k];
        for (int32_t e = 0; e < MT_MOE_MAX_EXPERTS; e++) last[e] = -1;
        for (int32_t i = L->first_fwd; i >= 0 && i <= L->last_fwd && i < m->n_ops && i < t->n_ops; i++) {
            int32_t e = m->op_expert[i];
            if (e >= 0 && e < MT_MOE_MAX_EXPERTS && t->ops[i].tp == TRACE_TP_LINEAR && !L->batched) last[e] = i;
        }
        for (int32_t e = 0; e < MT_MOE_MAX_EXPERTS && e < L->experts; e++)
            if (last[e] >= 0) m->op_span[last[e]] = 3;
    }
    free(last);
    return MT_OK;
}

void mt_moe_free(mt_moe *m) {
    if (!m) return;
    free(m->op_span);
    free(m->l);
    free(m->traced);
    free(m->op_moe);
    free(m->op_expert);
    free(m->load);
    free(m->rank_share);
    free(m);
}

/* Zipf(s) shares over a seeded permutation of E experts into out (sum 1). */
static void zipf(double *out, int32_t E, double s, uint64_t seed, int32_t *perm) {
    for (int32_t e = 0; e < E; e++) perm[e] = e;
    uint64_t st = seed;
    for (int32_t e = E - 1; e > 0; e--) { /* Fisher-Yates */
        st = mt_hash64(st + 0x9e3779b97f4a7c15ULL);
        int32_t j = (int32_t)(st % (uint64_t)(e + 1)), tmp = perm[e];
        perm[e] = perm[j];
        perm[j] = tmp;
    }
    double sum = 0;
    for (int32_t r = 0; r < E; r++) sum += pow(r + 1, -s);
    for (int32_t r = 0; r < E; r++) out[perm[r]] = pow(r + 1, -s) / sum;
}

mt_status mt_moe_plan(mt_moe *m, int32_t ep, double skew, uint64_t seed, mt_error *err) {
    for (int32_t k = 0; k < m->n_layers; k++)
        if (ep < 1 || m->l[k].experts % ep)
            return mt_fail(err, MT_EINVAL, "--ep %d does not divide the %d experts of the trace's MoE layer %d (use a "
                           "divisor of %d)", ep, m->l[k].experts, k, m->l[k].experts);
    size_t n = (size_t)m->n_layers * MT_MOE_MAX_EXPERTS;
    free(m->load);
    free(m->rank_share);
    m->load = calloc(n, sizeof *m->load);
    m->rank_share = calloc((size_t)m->n_layers * (size_t)ep, sizeof *m->rank_share);
    int32_t *perm = malloc(MT_MOE_MAX_EXPERTS * sizeof *perm);
    if (!m->load || !m->rank_share || !perm) {
        free(perm);
        return mt_fail(err, MT_ENOMEM, "out of memory planning expert parallelism");
    }
    m->ep = ep;
    m->measured = skew < 0 && m->l[0].local == m->l[0].experts && !m->l[0].batched; /* a batched layer shows its buffers only */
    m->skew = skew;
    m->hot_share = -1;
    m->rank_max = 0;
    for (int32_t k = 0; k < m->n_layers; k++) {
        const mt_moe_layer *L = &m->l[k];
        double *ld = m->load + (size_t)k * MT_MOE_MAX_EXPERTS, *tr = m->traced + (size_t)k * MT_MOE_MAX_EXPERTS;
        int32_t E = L->experts, per = E / ep;
        if (skew >= 0) zipf(ld, E, skew, seed, perm); /* one permutation: the same experts hot in every layer */
        for (int32_t e = 0; e < E; e++) {
            double f0 = L->local == E && L->routed > 0 ? tr[e] / L->routed : 1.0 / E; /* a rank's trace: even */
            if (skew < 0) ld[e] = f0;
            m->rank_share[(size_t)k * ep + e / per] += ld[e];
            if (ld[e] > m->hot_share) {
                m->hot_share = ld[e];
                m->hot_layer = k;
                m->hot_expert = e;
                m->hot_rank = e / per;
            }
        }
        for (int32_t r = 0; r < ep; r++)
            if (m->rank_share[(size_t)k * ep + r] * ep > m->rank_max) m->rank_max = m->rank_share[(size_t)k * ep + r] * ep;
    }
    free(perm);
    return MT_OK;
}

double mt_moe_op_factor(const mt_moe *m, int32_t op, int32_t r) {
    if (!m || !m->rank_share || op < 0 || op >= m->n_ops || m->op_moe[op] < 0) return 1;
    int32_t k = m->op_moe[op];
    return r >= 0 && r < m->ep ? m->ep * m->rank_share[(size_t)k * m->ep + r] : 0;
}
