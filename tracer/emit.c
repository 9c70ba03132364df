/* tracer/emit.c — building the trace's operators from Kineto events and their linked ET nodes
 * (see emit.h). */
#include <stdlib.h>
#include <string.h>

#include "tracer/emit.h"
#include "tracer/kcomm.h"
#include "tracer/limits.h"
#include "tracer/opclass.h"
#include "util/u64map.h"
#include "util/vec.h"

static int starts(const char *s, const char *prefix) { return strncmp(s, prefix, strlen(prefix)) == 0; }

/* ---- tensors ---------------------------------------------------------------------------- */

/* Node n's inputs (pass 0) or outputs (pass 1) as tensor uses of the last op. */
mt_status mt_emit_et_vals(trace_builder *b, const et_data *e, const et_node *n, int pass) {
    int32_t first = pass ? n->out_first : n->in_first, cnt = pass ? n->out_count : n->in_count;
    for (int32_t v = 0; v < cnt; v++) {
        const et_val *x = &e->vals[first + v];
        int32_t ti = (pass ? mt_tb_out_tensor : mt_tb_tensor)(b, x->tid_, x->storage, x->offset, x->numel, x->itemsize,
                                                             x->dtype, x->device);
        if (ti < 0) return MT_ENOMEM;
        MT_CHECK(mt_tb_add_tref(b, ti, e->dims + x->shape_off, x->ndim, x->arg, pass));
    }
    return MT_OK;
}

mt_status mt_emit_et_tensors(trace_builder *b, const et_data *e, int32_t j) {
    const et_node *n = &e->nodes[j];
    int own = n->in_count + n->out_count > 0;
    /* without tensors of its own: inputs of all children first, then their outputs */
    for (int pass = 0; pass < 2; pass++) {
        if (own) MT_CHECK(mt_emit_et_vals(b, e, n, pass));
        else
            for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling) MT_CHECK(mt_emit_et_vals(b, e, &e->nodes[c], pass));
    }
    return MT_OK;
}

/* Kineto-only tensors: "Input Dims" / "Input type" of the op or its first nested op having them. */
static mt_status add_kineto_tensors(trace_builder *b, const kineto_data *k, const int32_t *ord,
                                    int64_t pos, int32_t outer) {
    const kargs *args = NULL;
    for (int64_t i = pos; i < k->n_ev; i++) {
        const kev *x = &k->ev[ord[i]];
        if (i > pos && x->outer != outer) break;
        if (x->a.n_in > 0) {
            args = &x->a;
            break;
        }
    }
    int64_t shape[16];
    for (int32_t a = 0; args && a < args->n_in; a++) {
        const kinput *in = &k->inputs[args->in_first + a];
        if (in->size <= 0) continue;
        const char *ty = in->type;
        int32_t isz = mt_trace_dtype_size(ty);
        if (ty && isz == 0) continue; /* Scalar, ScalarList, ... */
        int32_t nd = 0;
        int64_t numel = 1;
        while (nd < in->ndim && nd < 16) {
            shape[nd] = k->dims[in->dim_first + nd];
            numel *= shape[nd++];
        }
        if (nd == 0) continue;
        int32_t ti = mt_tb_anon_tensor(b, numel, isz ? isz : 4, ty);
        if (ti < 0) return MT_ENOMEM;
        MT_CHECK(mt_tb_add_tref(b, ti, shape, nd, a, 0));
    }
    return MT_OK;
}

/* ---- the emitter ------------------------------------------------------------------------ */

typedef struct cand {
    int64_t ts;
    int64_t tid;
    int32_t kev;   /* Kineto outermost op */
    int32_t node;  /* linked ET node index, -1 */
} cand;

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    if (x->tid != y->tid) return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->kev > y->kev) - (x->kev < y->kev);
}

typedef struct emitter {
    trace_builder *b;
    mt_trace *t;
    const kineto_data *k;
    const int32_t *ord;        /* events by (tid, ts, -dur): mt_khost_nest */
    const et_data *e;          /* NULL without an Execution Trace */
    cand *cands;               /* the step's outermost ops, sorted by cmp_cand */
    int64_t n_cands, cap_cands;
    int64_t *kev_pos;          /* position of each event in ord */
    int64_t cap_colls;         /* of t->colls */
    int32_t *op_of_kev;        /* the op emitted for an outermost event, else -1 */
    int64_t first_bw_ts;       /* start of the step's first backward op */
    int64_t bw_tid;            /* thread of the last is-backward-thread answer */
    int bw_tid_is;
    int leading;               /* still in the leading data-movement ops of the step */
} emitter;

/* The outermost ops starting in [ws, we), sorted; 0 on allocation failure. */
static int collect_cands(emitter *em, int64_t ws, int64_t we) {
    const kineto_data *k = em->k;
    em->first_bw_ts = INT64_MAX;
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->kind != KEV_OP || x->outer != i || x->ts_ns < ws || x->ts_ns >= we) continue;
        if (mt_vec_reserve(&em->cands, &em->cap_cands, em->n_cands + 1)) return 0;
        em->cands[em->n_cands++] = (cand){x->ts_ns, x->tid, (int32_t)i, (int32_t)x->et_node};
        if (mt_opclass_is_backward_name(x->name) && x->ts_ns < em->first_bw_ts) em->first_bw_ts = x->ts_ns;
    }
    if (em->n_cands > 0) qsort(em->cands, (size_t)em->n_cands, sizeof *em->cands, cmp_cand);
    em->kev_pos = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *em->kev_pos);
    em->op_of_kev = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *em->op_of_kev);
    if (!em->kev_pos || !em->op_of_kev) return 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        em->kev_pos[em->ord[i]] = i;
        em->op_of_kev[i] = -1;
    }
    return 1;
}

/* The first event nested in outermost event c (in ord order) whose name starts with prefix. */
static const kev *nested_named(const emitter *em, int32_t c, const char *prefix) {
    for (int64_t i = em->kev_pos[c] + 1; i < em->k->n_ev; i++) {
        const kev *y = &em->k->ev[em->ord[i]];
        if (y->outer != c) break;
        if (starts(y->name, prefix)) return y;
    }
    return NULL;
}

/* Representative op: the linked ET node's, else its own aten:: name, else its first nested one. */
static const char *op_kind(const emitter *em, int32_t c, const kev *x) {
    const char *kind = x->et_node >= 0 ? mt_et_kind(em->e, (int32_t)x->et_node) : NULL;
    if (!kind && starts(x->name, "aten::")) kind = x->name;
    const kev *y = kind ? NULL : nested_named(em, c, "aten::");
    if (y) kind = y->name;
    return kind ? kind : x->name;
}

static trace_phase op_phase(emitter *em, const kev *x) {
    if (x->tid != em->bw_tid) {
        em->bw_tid = x->tid;
        em->bw_tid_is = mt_khost_backward_thread(em->k, x->tid);
    }
    if (mt_khost_in_region(em->k, x, "Optimizer.step") || mt_opclass_is_optimizer_name(x->name))
        return TRACE_PHASE_OPTIMIZER;
    if (mt_khost_in_region(em->k, x, "Optimizer.zero_grad") || mt_opclass_is_zero_grad_name(x->name))
        return TRACE_PHASE_OTHER;
    if (em->bw_tid_is || mt_opclass_is_backward_name(x->name)) return TRACE_PHASE_BACKWARD;
    if (x->ts_ns >= em->first_bw_ts) return TRACE_PHASE_OTHER;
    if (em->leading && mt_opclass_is_data_movement_name(x->name)) return TRACE_PHASE_OTHER;
    em->leading = 0;
    return TRACE_PHASE_FORWARD;
}

/* Comm kind and group: the op's name, its ET subtree, else its nested events (a
 * record_param_comms carries the collective's name and group size in its args). */
static void op_comm(const emitter *em, int32_t c, const kev *x, trace_op *op) {
    op->comm = mt_opclass_comm_of(x->name);
    if (x->et_node >= 0) mt_et_comm(em->e, (int32_t)x->et_node, &op->comm, &op->comm_group, &op->comm_bytes);
    for (int64_t i = em->kev_pos[c] + 1; i < em->k->n_ev && op->comm == TRACE_COMM_NONE; i++) {
        const kev *y = &em->k->ev[em->ord[i]];
        if (y->outer != c) break;
        op->comm = mt_opclass_comm_of(y->name);
        if (!strcmp(y->name, "record_param_comms")) {
            const kcollargs *ca = mt_kineto_coll(em->k, &y->a);
            if (ca->coll_name) op->comm = mt_opclass_comm_of(ca->coll_name);
            if (ca->group) op->comm_group = ca->group;
        }
    }
}

/* The collective kind of call y: its name, or record_param_comms' "Collective name"; dflt when
 * neither says. */
static trace_comm call_kind(const kineto_data *kd, const kev *y, trace_comm dflt) {
    trace_comm k = mt_opclass_comm_of(y->name);
    const char *cn = !strcmp(y->name, "record_param_comms") ? mt_kineto_coll(kd, &y->a)->coll_name : NULL;
    if (cn && mt_opclass_comm_of(cn) != TRACE_COMM_NONE) k = mt_opclass_comm_of(cn);
    return k != TRACE_COMM_NONE ? k : dflt;
}

static mt_status add_coll(emitter *em, const kev *y, int32_t op, trace_comm kind) {
    mt_trace *t = em->t;
    if (mt_vec_reserve(&t->colls, &em->cap_colls, (int64_t)t->n_colls + 1)) return MT_ENOMEM;
    trace_coll *c = &t->colls[t->n_colls++];
    *c = (trace_coll){.ts_ns = y->ts_ns, .dur_ns = y->dur_ns, .op = op, .kind = kind};
    mt_kcomm_call(em->k, em->ord, em->kev_pos[y - em->k->ev], t, c); /* what it moved, on which group */
    return MT_OK;
}

/* Op oi's collective calls (outermost event c): the op itself when its name is one, else the
 * outermost communication events nested in it (a nest's events follow its outermost one in ord,
 * by start). Marks an op that only encloses its calls (comm_inside). */
static mt_status op_colls(emitter *em, int32_t c, const kev *x, int32_t oi) {
    trace_op *o = &em->t->ops[oi];
    if (mt_opclass_is_comm_name(x->name)) return add_coll(em, x, oi, call_kind(em->k, x, o->comm));
    o->comm_inside = o->comm != TRACE_COMM_NONE;
    int64_t inside_until = INT64_MIN; /* the end of the last call taken: events before it are in it */
    for (int64_t i = em->kev_pos[c] + 1; i < em->k->n_ev; i++) {
        const kev *y = &em->k->ev[em->ord[i]];
        if (y->outer != c) break;
        if (y->ts_ns < inside_until || !mt_opclass_is_comm_name(y->name)) continue;
        MT_CHECK(add_coll(em, y, oi, call_kind(em->k, y, o->comm)));
        inside_until = y->ts_ns + y->dur_ns;
    }
    return MT_OK;
}

/* The tensors of outermost event c's linked ET node: its own; without any, those of the ET
 * nodes linked to the events nested directly in c (Kineto's nesting, by time on c's thread),
 * inputs first, then outputs — the ET node's children when none of those is linked. The ET's own
 * parent links are not used there: PyTorch's observer can miss a record function's end (seen
 * with gloo: an AccumulateGrad's evaluate_function "holding" the optimizer step that came after
 * it), and a weight would then count as that gradient accumulation's input. */
static mt_status emit_et_tensors(emitter *em, int32_t c, const kev *x) {
    const et_node *n = &em->e->nodes[x->et_node];
    if (n->in_count + n->out_count > 0) return mt_emit_et_tensors(em->b, em->e, (int32_t)x->et_node);
    int linked = 0;
    for (int64_t i = em->kev_pos[c] + 1; i < em->k->n_ev && !linked; i++) {
        const kev *y = &em->k->ev[em->ord[i]];
        if (y->outer != c) break;
        linked = y->parent == c && y->et_node >= 0;
    }
    if (!linked) return mt_emit_et_tensors(em->b, em->e, (int32_t)x->et_node);
    for (int pass = 0; pass < 2; pass++)
        for (int64_t i = em->kev_pos[c] + 1; i < em->k->n_ev; i++) {
            const kev *y = &em->k->ev[em->ord[i]];
            if (y->outer != c) break;
            if (y->parent == c && y->et_node >= 0)
                MT_CHECK(mt_emit_et_vals(em->b, em->e, &em->e->nodes[y->et_node], pass));
        }
    return MT_OK;
}

/* Emits the op of candidate c with its tensors; widens the step to hold it. */
static mt_status emit_op(emitter *em, const cand *c) {
    const kev *x = &em->k->ev[c->kev];
    const et_node *n = x->et_node >= 0 ? &em->e->nodes[x->et_node] : NULL;
    trace_op op = {0};
    op.name = x->name;
    op.tid = x->tid;
    op.cpu_start_ns = x->ts_ns;
    op.cpu_dur_ns = x->dur_ns;
    op.seq = x->seq < 0 && n ? n->seq : x->seq;
    op.layer = -1;
    op.et_node = n ? n->id : -1;
    op.kind = op_kind(em, c->kev, x);
    op.phase = op_phase(em, x);
    int32_t a = mt_khost_annotation(em->k, x);
    op.mark = a >= 0 ? em->k->ev[a].name : NULL;
    op.mark_id = a;
    op_comm(em, c->kev, x, &op);
    int32_t oi = mt_tb_add_op(em->b, &op);
    if (oi < 0) return MT_ENOMEM;
    em->op_of_kev[c->kev] = oi;
    MT_CHECK(op_colls(em, c->kev, x, oi));
    MT_CHECK(n ? emit_et_tensors(em, c->kev, x)
               : add_kineto_tensors(em->b, em->k, em->ord, em->kev_pos[c->kev], c->kev));
    mt_trace *t = em->t;
    trace_op *o = &t->ops[oi];
    if (o->comm != TRACE_COMM_NONE && o->comm_bytes <= 0)
        for (int32_t q = 0; q < o->in_count; q++) o->comm_bytes += t->tensors[t->trefs[o->in_first + q].tensor].bytes;
    if (x->ts_ns < t->step_start_ns) t->step_start_ns = x->ts_ns;
    if (x->ts_ns + x->dur_ns > t->step_end_ns) t->step_end_ns = x->ts_ns + x->dur_ns;
    return MT_OK;
}

/* ---- kernels ---------------------------------------------------------------------------- */

/* The outermost event enclosing the host call r: the latest-starting event of r's thread at or
 * before r (binary search in ord), walked up to one whose span holds r. -1 when none. *in_comm
 * becomes 1 when an enclosing event is a collective call (r is part of issuing it). */
static int32_t enclosing_op(const emitter *em, const krt *r, int *in_comm) {
    const kineto_data *k = em->k;
    int64_t lo = 0, hi = k->n_ev - 1, pos = -1;
    while (lo <= hi) {
        int64_t mid = (lo + hi) / 2;
        const kev *m = &k->ev[em->ord[mid]];
        if (m->tid < r->tid || (m->tid == r->tid && m->ts_ns <= r->ts_ns)) {
            pos = mid;
            lo = mid + 1;
        } else {
            hi = mid - 1;
        }
    }
    *in_comm = 0;
    if (pos < 0 || k->ev[em->ord[pos]].tid != r->tid) return -1;
    int32_t q = em->ord[pos];
    while (q >= 0 && !(k->ev[q].ts_ns <= r->ts_ns && r->ts_ns <= k->ev[q].ts_ns + k->ev[q].dur_ns))
        q = k->ev[q].parent;
    if (q < 0) return -1;
    for (int32_t p = q; p >= 0 && !*in_comm; p = k->ev[p].parent) *in_comm = mt_opclass_is_comm_name(k->ev[p].name);
    return k->ev[q].outer;
}

/* 1 when host or device time ts falls in the step [start, end) (an open side is unbounded). */
static int in_step(const kstep *step, int64_t ts) {
    return (step->start == INT64_MIN || ts >= step->start) && (step->end == INT64_MAX || ts < step->end);
}

/* The op owning kernel kg (-1 when none can: see below); *launch gets its launch time or -1,
 * *in_comm 1 when it was launched inside a collective call. */
static int32_t kernel_owner(const emitter *em, const mt_u64map *rt_by_corr, const mt_u64map *kev_by_ext,
                            const kgpu *kg, int64_t *launch, int *in_comm) {
    const kineto_data *k = em->k;
    int32_t owner = -1;
    int64_t ri, ki;
    *launch = -1;
    *in_comm = 0;
    if (kg->correlation >= 0 && mt_u64map_get(rt_by_corr, kg->correlation, &ri)) {
        *launch = k->rt[ri].ts_ns;
        owner = enclosing_op(em, &k->rt[ri], in_comm);
    }
    if (owner < 0 && kg->ext_id >= 0 && mt_u64map_get(kev_by_ext, kg->ext_id, &ki)) owner = k->ev[ki].outer;
    return owner;
}

/* Each kernel to the op of the outermost event enclosing its launch (correlation), else of its
 * External id; kernels of another step's ops are dropped. A kernel that no op owns at all and that
 * was launched (else ran) inside the step is counted in t->n_kernels_left_out. */
static mt_status attach_kernels(emitter *em, const kstep *step) {
    const kineto_data *k = em->k;
    mt_u64map rt_by_corr, kev_by_ext;
    mt_u64map_init(&rt_by_corr);
    mt_u64map_init(&kev_by_ext);
    mt_status rc = MT_OK;
    for (int64_t i = 0; i < k->n_rt && rc == MT_OK; i++)
        if (k->rt[i].correlation >= 0) rc = mt_u64map_put(&rt_by_corr, k->rt[i].correlation, i, NULL);
    for (int64_t i = 0; i < k->n_ev && rc == MT_OK; i++)
        if (k->ev[i].ext_id >= 0) rc = mt_u64map_put(&kev_by_ext, k->ev[i].ext_id, i, NULL);
    mt_u64map graphs; /* the cudaGraphLaunch calls seen, by correlation */
    mt_u64map_init(&graphs);
    double all_ns = 0, graph_ns = 0;
    for (int64_t g = 0; g < k->n_gpu && rc == MT_OK; g++) {
        const kgpu *kg = &k->gpu[g];
        int64_t launch, ri;
        int in_comm = 0;
        int32_t owner = kernel_owner(em, &rt_by_corr, &kev_by_ext, kg, &launch, &in_comm);
        if (owner < 0) em->t->n_kernels_left_out += in_step(step, launch >= 0 ? launch : kg->ts_ns);
        if (owner < 0 || em->op_of_kev[owner] < 0) continue;
        all_ns += (double)kg->dur_ns;
        if (kg->correlation >= 0 && mt_u64map_get(&rt_by_corr, kg->correlation, &ri) &&
            strstr(k->rt[ri].name, "GraphLaunch")) { /* cudaGraphLaunch, hipGraphLaunch */
            em->t->n_graph_kernels++;
            graph_ns += (double)kg->dur_ns;
            if (!mt_u64map_get(&graphs, (uint64_t)kg->correlation, NULL)) {
                em->t->n_graph_launches++;
                if (mt_u64map_put(&graphs, (uint64_t)kg->correlation, 1, NULL) != MT_OK) rc = MT_ENOMEM;
            }
        }
        in_comm |= mt_opclass_comm_of(kg->name) != TRACE_COMM_NONE; /* ncclKernel_*, ncclDevKernel_* */
        trace_kernel kk = {kg->ts_ns, kg->dur_ns, em->op_of_kev[owner], kg->stream, kg->name, kg->kind, launch,
                           (int8_t)in_comm};
        if (mt_tb_add_kernel(em->b, &kk) < 0) rc = MT_ENOMEM;
    }
    mt_u64map_destroy(&rt_by_corr);
    mt_u64map_destroy(&kev_by_ext);
    mt_u64map_destroy(&graphs);
    em->t->graph_dev_share = all_ns > 0 ? graph_ns / all_ns : 0;
    return rc == MT_OK ? MT_OK : MT_ENOMEM;
}

/* Refuses a step whose GPU kernels mostly belong to no operator: the op times would be CPU times
 * or a fraction of the device work, silently. (Fewer left out: a warning, mt_trace_warning.) */
static mt_status check_attached(const mt_trace *t, const char *kpath, mt_error *err) {
    int64_t left = t->n_kernels_left_out, total = left + t->n_kernels;
    if (left == 0 || 2 * left <= total) return MT_OK;
    return mt_fail(err, MT_EFORMAT, "%s: %lld of the step's %lld GPU kernels cannot be attached to any operator "
                   "(no cuda_runtime launch with their correlation id inside an op, no op with their External id), "
                   "so the operator times would be wrong: re-record the trace with CPU and CUDA activities, or "
                   "re-export it with its cuda_runtime events", kpath, (long long)left, (long long)total);
}

/* ---- forward ops and modules ------------------------------------------------------------ */

/* Backward op -> forward op: autograd sequence numbers of every event nested in a forward op
 * (aten::linear's seq sits on its inner addmm) point at the outermost forward op. An op records the
 * counter at its entry and making a node increments it, so forward ops that make none (a no-op
 * cast, a buffer's add_) share the number of the next op that does: the last of them made it. */
static mt_status link_fwd_ops(emitter *em) {
    const kineto_data *k = em->k;
    mt_trace *t = em->t;
    mt_u64map fwd_by_seq;
    mt_u64map_init(&fwd_by_seq);
    mt_status rc = MT_OK;
    for (int64_t i = 0; i < k->n_ev && rc == MT_OK; i++) {
        const kev *x = &k->ev[i];
        if (x->seq < 0 || x->outer < 0 || em->op_of_kev[x->outer] < 0) continue;
        int32_t oi = em->op_of_kev[x->outer];
        int64_t prev;
        if (t->ops[oi].phase != TRACE_PHASE_FORWARD || (mt_u64map_get(&fwd_by_seq, x->seq, &prev) && prev >= oi))
            continue;
        rc = mt_u64map_put(&fwd_by_seq, x->seq, oi, NULL);
    }
    for (int32_t i = 0; i < t->n_ops && rc == MT_OK; i++) {
        trace_op *o = &t->ops[i];
        int64_t f;
        if (o->phase == TRACE_PHASE_BACKWARD && o->seq >= 0 && mt_u64map_get(&fwd_by_seq, o->seq, &f))
            o->fwd_op = (int32_t)f;
    }
    mt_u64map_destroy(&fwd_by_seq);
    return rc == MT_OK ? MT_OK : MT_ENOMEM;
}

/* Each forward op's innermost nn.Module, when the trace has module events. */
static mt_status module_hints(const emitter *em, builder_layer_hint **hints) {
    *hints = NULL;
    if (em->k->n_mod == 0) return MT_OK;
    int64_t cap = 0;
    if (mt_vec_reserve(hints, &cap, em->t->n_ops)) return MT_ENOMEM;
    for (int64_t c = 0; c < em->n_cands; c++)
        (*hints)[c].module = em->t->ops[c].phase == TRACE_PHASE_FORWARD
                                 ? mt_khost_module(em->k, &em->k->ev[em->cands[c].kev]) : NULL;
    return MT_OK;
}

/* ---- the step --------------------------------------------------------------------------- */

mt_status mt_emit_kineto(trace_builder *b, const kineto_data *k, const int32_t *ord, const et_data *e,
                         const kstep *step, builder_layer_hint **hints, const char *kpath, mt_error *err) {
    mt_trace *t = b->t;
    emitter em = {.b = b, .t = t, .k = k, .ord = ord, .e = e, .bw_tid = INT64_MIN, .leading = 1};
    *hints = NULL;
    mt_status rc = collect_cands(&em, step->start, step->end) ? MT_OK : MT_ENOMEM;
    if (rc == MT_OK) rc = mt_kcomm_dist(k, t);
    if (rc == MT_OK && em.n_cands == 0) {
        rc = mt_fail(err, MT_EFORMAT, "%s: the selected step has no operators (empty step): "
                     "profile a complete training step", kpath);
        goto out;
    }
    t->step_start_ns = INT64_MAX;
    t->step_end_ns = INT64_MIN;
    for (int64_t c = 0; c < em.n_cands && rc == MT_OK; c++) rc = emit_op(&em, &em.cands[c]);
    if (step->number >= 0 && step->start != INT64_MIN) {
        t->step_start_ns = step->start;
        if (step->end != INT64_MAX) t->step_end_ns = step->end;
    }
    t->host_end_ns = t->step_end_ns; /* before kernel ends extend step_end_ns */
    if (rc == MT_OK) mt_kcomm_instances(t);
    if (rc == MT_OK) rc = attach_kernels(&em, step);
    if (rc == MT_OK) rc = module_hints(&em, hints);
    if (rc == MT_OK) rc = link_fwd_ops(&em);
    if (rc != MT_OK) rc = mt_fail(err, MT_ENOMEM, "%s: out of memory building operators", kpath);
    else rc = check_attached(t, kpath, err);
out:
    free(em.cands);
    free(em.kev_pos);
    free(em.op_of_kev);
    return rc;
}
