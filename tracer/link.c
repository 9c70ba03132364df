/* tracer/link.c — links Kineto events with Execution Trace nodes and builds the operators of
 * one step.
 *
 * Linking, first method that works: Kineto "Record function id" == ET rf_id; Kineto
 * "External id" == ET rf_id; else order per thread (ET nodes of one tid by id against Kineto
 * cpu_op/user_annotation of one thread by ts, at the offset where names agree best). A method
 * "works" when at least 90% of the pairs it makes have equal names.
 * Operators are the outermost cpu_ops of the step (user annotations are regions that set the
 * phase, except communication annotations such as gloo:all_reduce, which are ops). A kernel
 * belongs to the outermost op enclosing its cuda_runtime launch (same correlation).
 * Cost: O(E log E) for E events, plus O(T^2 * E * 64) for order linking over T threads.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "tracer/internal.h"
#include "util/vec.h"

#define ORDER_PROBE 64
#define ORDER_RESYNC 16

static int starts(const char *s, const char *prefix) {
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* ---- host nesting --------------------------------------------------------------------- */
typedef struct kev_key {
    int64_t tid, ts, neg_dur;
    int32_t annot_first; /* 0 for annotations so they enclose ops with the same span */
    int32_t idx;
} kev_key;

static int cmp_kev_key(const void *a, const void *b) {
    const kev_key *x = a, *y = b;
    if (x->tid != y->tid) return (x->tid > y->tid) - (x->tid < y->tid);
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    if (x->neg_dur != y->neg_dur) return (x->neg_dur > y->neg_dur) - (x->neg_dur < y->neg_dur);
    if (x->annot_first != y->annot_first) return x->annot_first - y->annot_first;
    return x->idx - y->idx;
}

/* Sorts event indices by (tid, ts, -dur) and fills parent/outer. */
static mt_status nest(kineto_data *k, int32_t **order_out) {
    int32_t *ord = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *ord);
    int32_t *stack = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *stack);
    if (!ord || !stack) {
        free(ord);
        free(stack);
        return MT_ENOMEM;
    }
    for (int64_t i = 0; i < k->n_ev; i++) {
        if (k->ev[i].kind == KEV_ANNOTATION && mt_opclass_is_comm_name(k->ev[i].name))
            k->ev[i].kind = KEV_OP; /* gloo:all_reduce and friends are operators */
    }
    kev_key *keys = malloc((size_t)(k->n_ev ? k->n_ev : 1) * sizeof *keys);
    if (!keys) {
        free(ord);
        free(stack);
        return MT_ENOMEM;
    }
    for (int64_t i = 0; i < k->n_ev; i++)
        keys[i] = (kev_key){k->ev[i].tid, k->ev[i].ts_ns, -k->ev[i].dur_ns,
                            k->ev[i].kind == KEV_ANNOTATION ? 0 : 1, (int32_t)i};
    qsort(keys, (size_t)k->n_ev, sizeof *keys, cmp_kev_key);
    for (int64_t i = 0; i < k->n_ev; i++) ord[i] = keys[i].idx;
    free(keys);
    int64_t sp = 0, cur_tid = 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        kev *x = &k->ev[ord[i]];
        if (i == 0 || x->tid != cur_tid) {
            sp = 0;
            cur_tid = x->tid;
        }
        while (sp > 0) {
            const kev *p = &k->ev[stack[sp - 1]];
            if (x->ts_ns < p->ts_ns + p->dur_ns || (x->ts_ns == p->ts_ns)) break;
            sp--;
        }
        x->parent = sp > 0 ? stack[sp - 1] : -1;
        if (x->kind == KEV_OP) {
            int32_t outer = x->parent >= 0 ? k->ev[x->parent].outer : -1;
            x->outer = outer >= 0 ? outer : ord[i];
        } else {
            x->outer = x->parent >= 0 ? k->ev[x->parent].outer : -1;
        }
        stack[sp++] = ord[i];
    }
    free(stack);
    *order_out = ord;
    return MT_OK;
}

/* ---- linking -------------------------------------------------------------------------- */
typedef struct link_try {
    int64_t matched, equal;
} link_try;

static void clear_links(kineto_data *k) {
    for (int64_t i = 0; i < k->n_ev; i++) k->ev[i].et_node = -1;
}

/* Links ET nodes to Kineto events through an id map (rf_id or External id). */
static mt_status link_by_id(kineto_data *k, et_data *e, int use_rf, link_try *res) {
    mt_u64map m;
    mt_u64map_init(&m);
    for (int64_t i = 0; i < k->n_ev; i++) {
        int64_t key = use_rf ? k->ev[i].rf_id : k->ev[i].ext_id;
        if (key >= 0 && mt_u64map_put(&m, key, i, NULL) != MT_OK) {
            mt_u64map_destroy(&m);
            return MT_ENOMEM;
        }
    }
    clear_links(k);
    res->matched = res->equal = 0;
    for (int64_t j = 0; j < e->n_nodes; j++) {
        const et_node *n = &e->nodes[j];
        int64_t ki;
        if (n->is_meta || n->rf_id < 0 || !mt_u64map_get(&m, n->rf_id, &ki)) continue;
        res->matched++;
        if (k->ev[ki].name == n->name) res->equal++; /* interned: pointer equality */
        k->ev[ki].et_node = j;
    }
    mt_u64map_destroy(&m);
    return MT_OK;
}

typedef struct seq {
    int64_t tid;
    int32_t *idx;
    int64_t n, cap;
} seq;

static void seqs_free(seq *s, int64_t n) {
    for (int64_t i = 0; i < n; i++) free(s[i].idx);
    free(s);
}

static int64_t find_seq(seq **s, int64_t *n, int64_t *cap, int64_t tid) {
    for (int64_t i = 0; i < *n; i++)
        if ((*s)[i].tid == tid) return i;
    if (mt_vec_reserve(s, cap, *n + 1)) return -1;
    memset(&(*s)[*n], 0, sizeof **s);
    (*s)[*n].tid = tid;
    return (*n)++;
}

/* Order linking restricted to Kineto events starting in [ws, we). */
static mt_status link_by_order(kineto_data *k, const int32_t *ord, et_data *e, int64_t ws,
                               int64_t we, link_try *res) {
    seq *es = NULL, *ks = NULL;
    int64_t nes = 0, ces = 0, nks = 0, cks = 0;
    mt_status rc = MT_ENOMEM;
    for (int64_t j = 0; j < e->n_nodes; j++) { /* nodes are sorted by id */
        if (e->nodes[j].is_meta) continue;
        int64_t s = find_seq(&es, &nes, &ces, e->nodes[j].tid);
        if (s < 0 || mt_vec_reserve(&es[s].idx, &es[s].cap, es[s].n + 1)) goto out;
        es[s].idx[es[s].n++] = (int32_t)j;
    }
    for (int64_t i = 0; i < k->n_ev; i++) { /* ord is sorted by tid, ts */
        const kev *x = &k->ev[ord[i]];
        if (x->ts_ns < ws || x->ts_ns >= we) continue;
        int64_t s = find_seq(&ks, &nks, &cks, x->tid);
        if (s < 0 || mt_vec_reserve(&ks[s].idx, &ks[s].cap, ks[s].n + 1)) goto out;
        ks[s].idx[ks[s].n++] = ord[i];
    }
    clear_links(k);
    res->matched = res->equal = 0;
    char *used = calloc((size_t)(nks ? nks : 1), 1);
    if (!used) goto out;
    for (int64_t a = 0; a < nes; a++) {
        const seq *E = &es[a];
        int64_t best_b = -1, best_off = -1, best_score = 0;
        for (int64_t b = 0; b < nks; b++) {
            if (used[b]) continue;
            const seq *K = &ks[b];
            for (int64_t off = 0; off < K->n; off++) {
                if (k->ev[K->idx[off]].name != e->nodes[E->idx[0]].name) continue;
                int64_t probe = E->n < ORDER_PROBE ? E->n : ORDER_PROBE, score = 0;
                for (int64_t i = 0; i < probe && off + i < K->n; i++)
                    score += k->ev[K->idx[off + i]].name == e->nodes[E->idx[i]].name;
                if (score >= best_score && score > 0) { /* ties: the later step */
                    best_score = score;
                    best_b = b;
                    best_off = off;
                }
            }
        }
        if (best_b < 0) continue;
        used[best_b] = 1;
        /* Walk both sequences; on a mismatch resynchronise by skipping a few events on either
         * side (one side may hold annotations or helper ops the other lacks). */
        const seq *K = &ks[best_b];
        int64_t i = 0, j = best_off;
        while (i < E->n && j < K->n) {
            const char *en = e->nodes[E->idx[i]].name;
            kev *x = &k->ev[K->idx[j]];
            if (x->name == en) {
                x->et_node = E->idx[i];
                res->matched++;
                res->equal++;
                i++;
                j++;
                continue;
            }
            int64_t jj = 0, ii = 0;
            for (int64_t d = 1; d <= ORDER_RESYNC && !jj && j + d < K->n; d++)
                if (k->ev[K->idx[j + d]].name == en) jj = j + d;
            for (int64_t d = 1; d <= ORDER_RESYNC && !ii && i + d < E->n; d++)
                if (e->nodes[E->idx[i + d]].name == x->name) ii = i + d;
            if (jj && (!ii || jj - j <= ii - i)) j = jj;
            else if (ii) i = ii;
            else {
                i++;
                j++;
            }
        }
    }
    free(used);
    rc = MT_OK;
out:
    seqs_free(es, nes);
    seqs_free(ks, nks);
    return rc;
}

static int64_t et_op_count(const et_data *e) {
    int64_t n = 0;
    for (int64_t j = 0; j < e->n_nodes; j++) n += !e->nodes[j].is_meta;
    return n;
}

typedef struct window {
    int64_t start, end;
    int number;
} window;

static mt_status do_link(const char *kpath, kineto_data *k, const int32_t *ord, const char *epath,
                         et_data *e, const window *win, int64_t n_win,
                         const trace_load_opts *opts, trace_link_stats *st, mt_error *err) {
    int64_t total = et_op_count(e);
    link_try r = {0, 0};
    int any_rf = 0;
    for (int64_t i = 0; i < k->n_ev && !any_rf; i++) any_rf = k->ev[i].rf_id >= 0;
    trace_link_method tried[3];
    int nt = 0;
    if (any_rf) tried[nt++] = TRACE_LINK_RF_ID;
    tried[nt++] = TRACE_LINK_EXTERNAL;
    tried[nt++] = TRACE_LINK_ORDER;
    for (int t = 0; t < nt; t++) {
        mt_status rc = MT_OK;
        if (tried[t] != TRACE_LINK_ORDER) {
            rc = link_by_id(k, e, tried[t] == TRACE_LINK_RF_ID, &r);
        } else { /* the ET covers one step: align it with each step, keep the best (ties: later) */
            int64_t best = -1, best_w = 0;
            for (int64_t w = 0; w < n_win && rc == MT_OK; w++) {
                if (opts->step >= 0 && win[w].number != opts->step) continue;
                rc = link_by_order(k, ord, e, win[w].start, win[w].end, &r);
                if (r.equal >= best) {
                    best = r.equal;
                    best_w = w;
                }
            }
            if (rc == MT_OK) rc = link_by_order(k, ord, e, win[best_w].start, win[best_w].end, &r);
        }
        if (rc != MT_OK) return mt_fail(err, rc, "%s: out of memory linking", kpath);
        st->method = tried[t];
        if (r.matched > 0 && r.equal * 10 >= r.matched * 9 &&
            (double)r.equal >= opts->min_link_ratio * (double)total)
            break;
    }
    st->matched = r.equal;
    st->unmatched = total - r.equal;
    st->names_equal = r.equal;
    if ((double)r.equal < opts->min_link_ratio * (double)total)
        return mt_fail(err, MT_EFORMAT,
                       "%s and %s do not describe the same run: only %ld of %ld Execution "
                       "Trace nodes match a Kineto event (best method: %s); record both in the "
                       "same step, or pass the Kineto file alone",
                       kpath, epath, (long)r.equal, (long)total,
                       mt_trace_link_method_name(st->method));
    /* Keep only links whose names agree. */
    for (int64_t i = 0; i < k->n_ev; i++)
        if (k->ev[i].et_node >= 0 && e->nodes[k->ev[i].et_node].name != k->ev[i].name)
            k->ev[i].et_node = -1;
    return MT_OK;
}

/* ---- steps ---------------------------------------------------------------------------- */
static int cmp_window(const void *a, const void *b) {
    const window *x = a, *y = b;
    return (x->start > y->start) - (x->start < y->start);
}

static int is_sync_call(const char *name) {
    static const char *const calls[] = {"cudaStreamSynchronize", "cudaDeviceSynchronize", "cudaEventSynchronize",
                                        "cudaMemcpy", "cudaMemcpy2D", "cuStreamSynchronize", "cuCtxSynchronize",
                                        "cuEventSynchronize", "hipStreamSynchronize", "hipDeviceSynchronize",
                                        "hipEventSynchronize", "hipMemcpy", "hipMemcpyWithStream"};
    for (size_t i = 0; i < sizeof calls / sizeof *calls; i++)
        if (!strcmp(name, calls[i])) return 1;
    return 0;
}

static int cmp_sync(const void *a, const void *b) {
    const trace_sync *x = a, *y = b;
    return (x->ts_ns > y->ts_ns) - (x->ts_ns < y->ts_ns);
}

/* The step's blocking host calls, each given to the op whose host interval holds it (ops are
 * sorted by cpu_start). Runs after mt_tb_finish. */
static mt_status collect_syncs(const kineto_data *k, trace *t) {
    int64_t cap = 0;
    for (int64_t i = 0; i < k->n_rt; i++) {
        const krt *r = &k->rt[i];
        if (!r->name || !is_sync_call(r->name) || r->ts_ns < t->step_start_ns || r->ts_ns > t->host_end_ns) continue;
        if (mt_vec_reserve(&t->syncs, &cap, (int64_t)t->n_syncs + 1)) return MT_ENOMEM;
        int32_t lo = 0, hi = t->n_ops - 1, op = -1;
        while (lo <= hi) {
            int32_t mid = lo + (hi - lo) / 2;
            if (t->ops[mid].cpu_start_ns <= r->ts_ns) op = mid, lo = mid + 1;
            else hi = mid - 1;
        }
        t->syncs[t->n_syncs++] = (trace_sync){r->ts_ns, r->dur_ns, op, r->name};
    }
    if (t->n_syncs > 1) qsort(t->syncs, (size_t)t->n_syncs, sizeof *t->syncs, cmp_sync);
    return MT_OK;
}

/* Step windows: ProfilerStep#N annotations; else Optimizer.step ends; else the whole trace. */
static mt_status find_steps(const kineto_data *k, window **out, int64_t *n_out) {
    window *w = NULL;
    int64_t n = 0, cap = 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->kind != KEV_ANNOTATION || !starts(x->name, "ProfilerStep#")) continue;
        if (mt_vec_reserve(&w, &cap, n + 1)) goto nomem;
        w[n].start = x->ts_ns;
        w[n].end = x->ts_ns + x->dur_ns;
        w[n].number = atoi(x->name + 13);
        n++;
    }
    if (n == 0) {
        for (int64_t i = 0; i < k->n_ev; i++) {
            const kev *x = &k->ev[i];
            if (x->kind != KEV_ANNOTATION || !starts(x->name, "Optimizer.step")) continue;
            if (mt_vec_reserve(&w, &cap, n + 1)) goto nomem;
            w[n].start = 0;
            w[n].end = x->ts_ns + x->dur_ns;
            n++;
        }
        if (n > 0) qsort(w, (size_t)n, sizeof *w, cmp_window);
        for (int64_t i = 0; i < n; i++) {
            w[i].start = i == 0 ? INT64_MIN : w[i - 1].end;
            w[i].number = (int)i;
        }
        if (n > 0) w[n - 1].end = INT64_MAX; /* the last step keeps trailing work */
    } else {
        qsort(w, (size_t)n, sizeof *w, cmp_window);
    }
    if (n == 0) {
        if (mt_vec_reserve(&w, &cap, 1)) goto nomem;
        w[0].start = INT64_MIN;
        w[0].end = INT64_MAX;
        w[0].number = -1;
        n = 1;
    }
    *out = w;
    *n_out = n;
    return MT_OK;
nomem:
    free(w);
    return MT_ENOMEM;
}

/* ---- phases ---------------------------------------------------------------------------- */
static int in_region(const kineto_data *k, const kev *x, const char *prefix) {
    for (int32_t p = x->parent; p >= 0; p = k->ev[p].parent)
        if (k->ev[p].kind == KEV_ANNOTATION && starts(k->ev[p].name, prefix)) return 1;
    return 0;
}

/* ---- building ops ----------------------------------------------------------------------- */
typedef struct cand {
    int64_t ts;
    int64_t tid;
    int32_t kev;   /* Kineto outermost op, -1 for an ET-only node */
    int32_t node;  /* ET node index, -1 */
} cand;

static int cmp_cand(const void *a, const void *b) {
    const cand *x = a, *y = b;
    if (x->ts != y->ts) return (x->ts > y->ts) - (x->ts < y->ts);
    if (x->tid != y->tid) return (x->tid > y->tid) - (x->tid < y->tid);
    return (x->kev > y->kev) - (x->kev < y->kev);
}

/* Adds the tensors of ET node `j` (or of its first descendants that have any) to the last op. */
static mt_status add_et_tensors(trace_builder *b, const et_data *e, int32_t j, int depth) {
    const et_node *n = &e->nodes[j];
    if (n->in_count + n->out_count == 0) {
        if (depth > 8) return MT_OK;
        /* inputs of all children first, then their outputs, keeping "inputs then outputs" */
        for (int pass = 0; pass < 2; pass++)
            for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling) {
                const et_node *cn = &e->nodes[c];
                if (cn->in_count + cn->out_count == 0) continue;
                int32_t first = pass ? cn->out_first : cn->in_first;
                int32_t cnt = pass ? cn->out_count : cn->in_count;
                for (int32_t v = 0; v < cnt; v++) {
                    const et_val *x = &e->vals[first + v];
                    int32_t ti = mt_tb_tensor(b, x->tid_, x->storage, x->offset, x->numel,
                                                x->itemsize, x->dtype, x->device);
                    if (ti < 0) return MT_ENOMEM;
                    MT_CHECK(mt_tb_add_tref(b, ti, e->dims + x->shape_off, x->ndim, x->arg, pass));
                }
            }
        return MT_OK;
    }
    for (int pass = 0; pass < 2; pass++) {
        int32_t first = pass ? n->out_first : n->in_first;
        int32_t cnt = pass ? n->out_count : n->in_count;
        for (int32_t v = 0; v < cnt; v++) {
            const et_val *x = &e->vals[first + v];
            int32_t ti = mt_tb_tensor(b, x->tid_, x->storage, x->offset, x->numel, x->itemsize,
                                        x->dtype, x->device);
            if (ti < 0) return MT_ENOMEM;
            MT_CHECK(mt_tb_add_tref(b, ti, e->dims + x->shape_off, x->ndim, x->arg, pass));
        }
    }
    return MT_OK;
}

/* A record_function region: a name without "::" that is not a communication op, with children. */
static int et_is_region(const et_data *e, const et_node *n) {
    (void)e;
    return !n->is_meta && n->first_child >= 0 && !strstr(n->name, "::") &&
           !mt_opclass_is_comm_name(n->name);
}

/* First descendant (preorder, self included) whose name starts with "aten::", else NULL. */
static const char *et_kind(const et_data *e, int32_t j, int depth) {
    const et_node *n = &e->nodes[j];
    if (starts(n->name, "aten::") || starts(n->name, "c10d::") || starts(n->name, "nccl:"))
        return n->name;
    if (depth > 8) return NULL;
    for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling) {
        const char *r = et_kind(e, c, depth + 1);
        if (r) return r;
    }
    return NULL;
}

/* Communication kind/group/bytes of an ET subtree: bytes are the input tensors of the first
 * record_param_comms (or nccl:/gloo: op) found, i.e. the buffer the collective moves. */
static void et_comm(const et_data *e, int32_t j, int depth, trace_comm *kind, int32_t *group,
                    double *bytes) {
    const et_node *n = &e->nodes[j];
    if (*kind == TRACE_COMM_NONE) *kind = mt_opclass_comm_of(n->name);
    if (*bytes <= 0 && (!strcmp(n->name, "record_param_comms") || starts(n->name, "nccl:") ||
                        starts(n->name, "gloo:")))
        for (int32_t v = 0; v < n->in_count; v++)
            *bytes += (double)e->vals[n->in_first + v].numel * e->vals[n->in_first + v].itemsize;
    if ((*kind == TRACE_COMM_NONE || *kind == TRACE_COMM_OTHER) && n->comm_name) {
        trace_comm c = mt_opclass_comm_of(n->comm_name);
        if (c != TRACE_COMM_NONE) *kind = c;
    }
    if (!*group && n->comm_group) *group = n->comm_group;
    if (depth > 6) return;
    for (int32_t c = n->first_child; c >= 0; c = e->nodes[c].next_sibling)
        et_comm(e, c, depth + 1, kind, group, bytes);
}

/* Kineto-only tensors: "Input Dims" / "Input type" of the op or its first nested op having them. */
static mt_status add_kineto_tensors(trace_builder *b, const kineto_data *k, const int32_t *ord,
                                    int64_t pos, int32_t outer) {
    json_t *dims = NULL, *types = NULL;
    for (int64_t i = pos; i < k->n_ev; i++) {
        const kev *x = &k->ev[ord[i]];
        if (i > pos && x->outer != outer) break;
        json_t *d = x->args ? json_object_get(x->args, "Input Dims") : NULL;
        if (json_is_array(d) && json_array_size(d) > 0) {
            dims = d;
            types = json_object_get(x->args, "Input type");
            break;
        }
    }
    if (!dims) return MT_OK;
    size_t a;
    json_t *d;
    int64_t shape[16];
    json_array_foreach(dims, a, d) {
        if (!json_is_array(d) || json_array_size(d) == 0) continue;
        const char *ty = json_is_array(types) ? json_string_value(json_array_get(types, a)) : NULL;
        int32_t isz = mt_trace_dtype_size(ty);
        if (ty && isz == 0) continue; /* Scalar, ScalarList, ... */
        int32_t nd = 0;
        int64_t numel = 1;
        size_t q;
        json_t *v;
        json_array_foreach(d, q, v) {
            if (!json_is_integer(v) || nd >= 16) break;
            shape[nd++] = (int64_t)json_integer_value(v);
            numel *= shape[nd - 1];
        }
        if (nd == 0) continue;
        const char *dt = ty ? mt_strpool_intern(b->t->pool, ty, -1) : NULL;
        int32_t ti = mt_tb_anon_tensor(b, numel, isz ? isz : 4, dt);
        if (ti < 0) return MT_ENOMEM;
        MT_CHECK(mt_tb_add_tref(b, ti, shape, nd, (int32_t)a, 0));
    }
    return MT_OK;
}

/* Thread whose outermost ops are mostly autograd evaluate_function: the backward thread. */
static int is_backward_thread(const kineto_data *k, int64_t tid) {
    int64_t bw = 0, all = 0;
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->tid != tid || x->kind != KEV_OP || x->outer != i) continue;
        all++;
        bw += starts(x->name, "autograd::engine::evaluate_function");
    }
    return all > 0 && bw * 2 > all;
}

static const char *module_for(const kineto_data *k, const kev *x) {
    /* innermost nn.Module event on the same thread containing x's start */
    const char *best = NULL;
    int64_t best_ts = INT64_MIN;
    for (int64_t i = 0; i < k->n_mod; i++) {
        const kmod *m = &k->mod[i];
        if (m->tid != x->tid || m->ts_ns > x->ts_ns || m->ts_ns + m->dur_ns < x->ts_ns) continue;
        if (m->ts_ns >= best_ts) {
            best_ts = m->ts_ns;
            best = m->name;
        }
    }
    return best;
}

mt_status mt_link_build(const char *kpath, kineto_data *k, const char *epath, et_data *e,
                     const trace_load_opts *opts, trace *t, mt_error *err) {
    mt_status rc = MT_OK;
    int32_t *ord = NULL;
    window *win = NULL;
    int64_t n_win = 0;
    cand *cands = NULL;
    int64_t n_cands = 0, cap_cands = 0;
    builder_layer_hint *hints = NULL;
    int64_t cap_hints = 0;
    int32_t *op_of_kev = NULL;
    int64_t *kev_pos = NULL;
    trace_builder b;
    mt_tb_init(&b, t);
    mt_u64map rt_by_corr, kev_by_ext;
    mt_u64map_init(&rt_by_corr);
    mt_u64map_init(&kev_by_ext);

    if (!k) { /* Execution Trace alone: no timings */
        t->format = TRACE_FORMAT_ET;
        for (int64_t j = 0; j < e->n_nodes; j++) {
            const et_node *n = &e->nodes[j];
            int64_t p;
            if (n->is_meta || !mt_u64map_get(&e->by_id, n->parent, &p)) continue;
            const et_node *pn = &e->nodes[p];
            /* Regions (record_function annotations such as Optimizer.step#..., ProfilerStep#N,
             * DistributedDataParallel.forward) hold the ops; ops are their top-level children. */
            int region_child = !pn->is_meta && et_is_region(e, pn);
            if (!pn->is_meta && !region_child) continue;
            if (region_child) { /* a region's parent chain must reach the thread root */
                int64_t gp = -1;
                const et_node *q = pn;
                while (!q->is_meta && et_is_region(e, q) && mt_u64map_get(&e->by_id, q->parent, &gp))
                    q = &e->nodes[gp];
                if (!q->is_meta) continue;
            }
            if (et_is_region(e, n)) continue; /* its children are the ops */
            trace_op op = {0};
            op.name = n->name;
            op.kind = et_kind(e, (int32_t)j, 0);
            if (!op.kind) op.kind = n->name;
            op.tid = n->tid;
            op.seq = n->seq;
            op.et_node = n->id;
            op.phase = (region_child && starts(pn->name, "Optimizer.step")) || mt_opclass_is_optimizer_name(n->name)
                           ? TRACE_PHASE_OPTIMIZER
                       : mt_opclass_is_backward_name(n->name) ? TRACE_PHASE_BACKWARD
                       : region_child ? TRACE_PHASE_OTHER : TRACE_PHASE_FORWARD;
            op.comm = TRACE_COMM_NONE;
            et_comm(e, (int32_t)j, 0, &op.comm, &op.comm_group, &op.comm_bytes);
            op.layer = -1;
            if (mt_tb_add_op(&b, &op) < 0) goto nomem;
            if ((rc = add_et_tensors(&b, e, (int32_t)j, 0)) != MT_OK) goto nomem;
        }
        t->link.method = TRACE_LINK_NONE;
        t->link.matched = t->n_ops;
        rc = mt_tb_finish(&b, NULL, err);
        goto out;
    }

    if (nest(k, &ord) != MT_OK) goto nomem;
    if (find_steps(k, &win, &n_win) != MT_OK) goto nomem;
    if (e) {
        if ((rc = do_link(kpath, k, ord, epath, e, win, n_win, opts, &t->link, err)) != MT_OK)
            goto out;
    } else {
        t->link.method = TRACE_LINK_NONE;
    }

    /* Choose the step. */
    int64_t w_sel = n_win - 1;
    if (opts->step >= 0) {
        w_sel = -1;
        for (int64_t w = 0; w < n_win; w++)
            if (win[w].number == opts->step) w_sel = w;
        if (w_sel < 0) {
            rc = mt_fail(err, MT_EINVAL, "%s: no step %d in the trace (steps %d to %d); pick "
                         "one of those with --step", kpath, opts->step, win[0].number,
                         win[n_win - 1].number);
            goto out;
        }
    } else if (e && n_win > 1) {
        int64_t best = -1;
        for (int64_t w = 0; w < n_win; w++) {
            int64_t c = 0;
            for (int64_t i = 0; i < k->n_ev; i++)
                c += k->ev[i].et_node >= 0 && k->ev[i].ts_ns >= win[w].start &&
                     k->ev[i].ts_ns < win[w].end;
            if (c > best) {
                best = c;
                w_sel = w;
            }
        }
    }
    if (opts->step < 0 && !e) /* the last step that holds operators */
        for (int64_t w = n_win - 1; w >= 0; w--) {
            int any = 0;
            for (int64_t i = 0; i < k->n_ev && !any; i++)
                any = k->ev[i].kind == KEV_OP && k->ev[i].outer == i &&
                      k->ev[i].ts_ns >= win[w].start && k->ev[i].ts_ns < win[w].end;
            if (any) {
                w_sel = w;
                break;
            }
        }
    t->step = win[w_sel].number;
    t->n_steps = (int)n_win;
    int64_t ws = win[w_sel].start, we = win[w_sel].end;

    /* Candidates: outermost ops starting inside the step window. */
    int64_t first_bw_ts = INT64_MAX;
    for (int64_t i = 0; i < k->n_ev; i++) {
        const kev *x = &k->ev[i];
        if (x->kind != KEV_OP || x->outer != i || x->ts_ns < ws || x->ts_ns >= we) continue;
        if (mt_vec_reserve(&cands, &cap_cands, n_cands + 1)) goto nomem;
        cands[n_cands++] = (cand){x->ts_ns, x->tid, (int32_t)i, (int32_t)x->et_node};
        if (mt_opclass_is_backward_name(x->name) && x->ts_ns < first_bw_ts) first_bw_ts = x->ts_ns;
    }
    if (n_cands == 0) {
        rc = mt_fail(err, MT_EFORMAT, "%s: the selected step has no operators (empty step): "
                     "profile a complete training step", kpath);
        goto out;
    }
    qsort(cands, (size_t)n_cands, sizeof *cands, cmp_cand);

    /* Position of every event in `ord`, for nested lookups. */
    kev_pos = malloc((size_t)k->n_ev * sizeof *kev_pos);
    op_of_kev = malloc((size_t)k->n_ev * sizeof *op_of_kev);
    if (!kev_pos || !op_of_kev) goto nomem;
    for (int64_t i = 0; i < k->n_ev; i++) {
        kev_pos[ord[i]] = i;
        op_of_kev[i] = -1;
    }

    int64_t bw_tid_cache = INT64_MIN;
    int bw_tid_is = 0;
    int leading = 1; /* still in the leading data-movement ops of the main thread */
    t->step_start_ns = INT64_MAX;
    t->step_end_ns = INT64_MIN;
    for (int64_t c = 0; c < n_cands; c++) {
        const kev *x = &k->ev[cands[c].kev];
        trace_op op = {0};
        op.name = x->name;
        op.tid = x->tid;
        op.cpu_start_ns = x->ts_ns;
        op.cpu_dur_ns = x->dur_ns;
        op.seq = x->seq;
        op.layer = -1;
        op.et_node = x->et_node >= 0 ? e->nodes[x->et_node].id : -1;
        op.kind = x->et_node >= 0 ? et_kind(e, (int32_t)x->et_node, 0) : NULL;
        if (!op.kind && starts(x->name, "aten::")) op.kind = x->name;
        if (!op.kind) { /* first nested aten op in Kineto */
            for (int64_t i = kev_pos[cands[c].kev] + 1; i < k->n_ev; i++) {
                const kev *y = &k->ev[ord[i]];
                if (y->outer != cands[c].kev) break;
                if (starts(y->name, "aten::")) {
                    op.kind = y->name;
                    break;
                }
            }
        }
        if (!op.kind) op.kind = x->name;
        if (x->seq < 0 && x->et_node >= 0) op.seq = e->nodes[x->et_node].seq;
        /* phase */
        if (x->tid != bw_tid_cache) {
            bw_tid_cache = x->tid;
            bw_tid_is = is_backward_thread(k, x->tid);
        }
        if (in_region(k, x, "Optimizer.step") || mt_opclass_is_optimizer_name(x->name))
            op.phase = TRACE_PHASE_OPTIMIZER;
        else if (in_region(k, x, "Optimizer.zero_grad") || strstr(x->name, "zero_grad"))
            op.phase = TRACE_PHASE_OTHER;
        else if (bw_tid_is || mt_opclass_is_backward_name(x->name))
            op.phase = TRACE_PHASE_BACKWARD;
        else if (x->ts_ns >= first_bw_ts)
            op.phase = TRACE_PHASE_OTHER;
        else if (leading && mt_opclass_is_data_movement_name(x->name))
            op.phase = TRACE_PHASE_OTHER;
        else {
            op.phase = TRACE_PHASE_FORWARD;
            leading = 0;
        }
        /* communication */
        op.comm = mt_opclass_comm_of(x->name);
        if (x->et_node >= 0)
            et_comm(e, (int32_t)x->et_node, 0, &op.comm, &op.comm_group, &op.comm_bytes);
        for (int64_t i = kev_pos[cands[c].kev] + 1; i < k->n_ev && op.comm == TRACE_COMM_NONE; i++) {
            const kev *y = &k->ev[ord[i]];
            if (y->outer != cands[c].kev) break;
            op.comm = mt_opclass_comm_of(y->name);
            if (!strcmp(y->name, "record_param_comms") && y->args) {
                json_t *cn = json_object_get(y->args, "Collective name");
                if (json_is_string(cn)) op.comm = mt_opclass_comm_of(json_string_value(cn));
                json_t *gs = json_object_get(y->args, "Group size");
                if (trace_group_size(gs)) op.comm_group = trace_group_size(gs);
            }
        }
        int32_t oi = mt_tb_add_op(&b, &op);
        if (oi < 0) goto nomem;
        op_of_kev[cands[c].kev] = oi;
        if (x->et_node >= 0) rc = add_et_tensors(&b, e, (int32_t)x->et_node, 0);
        else rc = add_kineto_tensors(&b, k, ord, kev_pos[cands[c].kev], cands[c].kev);
        if (rc != MT_OK) goto nomem;
        trace_op *o = &t->ops[oi];
        if (o->comm != TRACE_COMM_NONE && o->comm_bytes <= 0)
            for (int32_t q = 0; q < o->in_count; q++)
                o->comm_bytes += t->tensors[t->trefs[o->in_first + q].tensor].bytes;
        if (x->ts_ns < t->step_start_ns) t->step_start_ns = x->ts_ns;
        if (x->ts_ns + x->dur_ns > t->step_end_ns) t->step_end_ns = x->ts_ns + x->dur_ns;
    }
    if (win[w_sel].number >= 0 && ws != INT64_MIN) {
        t->step_start_ns = ws;
        if (we != INT64_MAX) t->step_end_ns = we;
    }
    t->host_end_ns = t->step_end_ns; /* before kernel ends extend step_end_ns */

    /* Kernels: correlation -> runtime launch -> enclosing outermost op. */
    for (int64_t i = 0; i < k->n_rt; i++)
        if (k->rt[i].correlation >= 0 && mt_u64map_put(&rt_by_corr, k->rt[i].correlation, i, NULL) != MT_OK)
            goto nomem;
    for (int64_t i = 0; i < k->n_ev; i++)
        if (k->ev[i].ext_id >= 0 && mt_u64map_put(&kev_by_ext, k->ev[i].ext_id, i, NULL) != MT_OK)
            goto nomem;
    /* Per-thread outermost ops sorted by ts, for the enclosing-op search. */
    for (int64_t g = 0; g < k->n_gpu; g++) {
        const kgpu *kg = &k->gpu[g];
        int32_t owner_kev = -1;
        int64_t ri, launch = -1; /* the launching runtime call's host time */
        if (kg->correlation >= 0 && mt_u64map_get(&rt_by_corr, kg->correlation, &ri)) {
            const krt *r = &k->rt[ri];
            launch = r->ts_ns;
            /* binary search the last event in `ord` on r->tid with ts <= r->ts_ns */
            int64_t lo = 0, hi = k->n_ev - 1, pos = -1;
            while (lo <= hi) {
                int64_t mid = (lo + hi) / 2;
                const kev *m = &k->ev[ord[mid]];
                if (m->tid < r->tid || (m->tid == r->tid && m->ts_ns <= r->ts_ns)) {
                    pos = mid;
                    lo = mid + 1;
                } else {
                    hi = mid - 1;
                }
            }
            if (pos >= 0 && k->ev[ord[pos]].tid == r->tid) {
                /* walk up the nesting from the latest-starting event to one that encloses */
                for (int32_t q = ord[pos]; q >= 0; q = k->ev[q].parent) {
                    const kev *m = &k->ev[q];
                    if (m->ts_ns <= r->ts_ns && r->ts_ns <= m->ts_ns + m->dur_ns) {
                        owner_kev = m->outer;
                        break;
                    }
                }
            }
        }
        if (owner_kev < 0 && kg->ext_id >= 0) {
            int64_t ki;
            if (mt_u64map_get(&kev_by_ext, kg->ext_id, &ki)) owner_kev = k->ev[ki].outer;
        }
        if (owner_kev < 0 || op_of_kev[owner_kev] < 0) continue;
        trace_kernel kk = {kg->ts_ns, kg->dur_ns, op_of_kev[owner_kev], kg->stream, kg->name, kg->kind, launch};
        if (mt_tb_add_kernel(&b, &kk) < 0) goto nomem;
    }

    if (k->n_mod > 0) {
        if (mt_vec_reserve(&hints, &cap_hints, t->n_ops)) goto nomem;
        for (int64_t c = 0; c < n_cands; c++)
            hints[c].module = t->ops[c].phase == TRACE_PHASE_FORWARD
                                  ? module_for(k, &k->ev[cands[c].kev]) : NULL;
    }
    /* Backward op -> forward op: autograd sequence numbers of every op nested in a forward op
     * (aten::linear's seq sits on its inner addmm) point at the outermost forward op. */
    {
        mt_u64map fwd_by_seq;
        mt_u64map_init(&fwd_by_seq);
        int64_t dummy;
        for (int64_t i = 0; i < k->n_ev; i++) {
            const kev *x = &k->ev[i];
            if (x->seq < 0 || x->outer < 0 || op_of_kev[x->outer] < 0) continue;
            int32_t oi = op_of_kev[x->outer];
            if (t->ops[oi].phase != TRACE_PHASE_FORWARD || mt_u64map_get(&fwd_by_seq, x->seq, &dummy))
                continue;
            if (mt_u64map_put(&fwd_by_seq, x->seq, oi, NULL) != MT_OK) {
                mt_u64map_destroy(&fwd_by_seq);
                goto nomem;
            }
        }
        for (int32_t i = 0; i < t->n_ops; i++) {
            trace_op *o = &t->ops[i];
            int64_t f;
            if (o->phase == TRACE_PHASE_BACKWARD && o->seq >= 0 && mt_u64map_get(&fwd_by_seq, o->seq, &f))
                o->fwd_op = (int32_t)f;
        }
        mt_u64map_destroy(&fwd_by_seq);
    }
    t->device_name = k->device_name;
    t->device_mem_bytes = k->device_mem;
    rc = mt_tb_finish(&b, hints, err);
    if (rc == MT_OK && collect_syncs(k, t) != MT_OK) goto nomem;
    goto out;
nomem:
    rc = mt_fail(err, MT_ENOMEM, "%s: out of memory building operators", kpath);
out:
    free(ord);
    free(win);
    free(cands);
    free(hints);
    free(kev_pos);
    free(op_of_kev);
    mt_u64map_destroy(&rt_by_corr);
    mt_u64map_destroy(&kev_by_ext);
    mt_tb_destroy(&b);
    return rc;
}
