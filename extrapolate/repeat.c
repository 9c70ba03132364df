/* extrapolate/repeat.c — see repeat.h. */
#include "extrapolate/repeat.h"

#include <stdio.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "extrapolate/blocks.h"
#include "tracer/builder.h"
#include "tracer/strpool.h"

enum { NPH = TRACE_PHASE_COUNT, NONE = -1, PENDING = -2 };

/* One op of the result: the op of t it repeats and its copy (-1: the op itself). */
typedef struct slot {
    int32_t src, copy;
} slot;

typedef struct rep {
    const mt_trace *t;
    mt_blocks b;
    int32_t n, copies;
    int32_t *ob;     /* op -> its block, NONE */
    int32_t *tb;     /* tensor -> its block, NONE */
    int32_t *rk;     /* op -> its rank among its block's ops of its phase */
    int32_t *trk;    /* tensor -> its rank among its block's tensors */
    int32_t *tcnt;   /* block -> its tensors */
    int32_t *lst;    /* ops by (block, phase, op): lst[loff[blk * NPH + ph] ..] */
    int32_t *loff;   /* count x NPH + 1 offsets */
    int32_t *onew;   /* op -> new index, -1 dropped */
    int32_t *onear;  /* op -> new index, a dropped op's the next kept op's */
    int32_t *seg;    /* copy x NPH -> the new index of its first op of that phase */
    int32_t *tnew;   /* tensor -> new index, -1 dropped */
    int32_t *tseg;   /* copy -> the new index of its first tensor */
    int32_t anchor[NPH]; /* per phase the last block's last op (backward: its first), -1 none: no copy
                          * gets ops of that phase */
    slot *seq;       /* the result's ops */
    int32_t n_seq;
    int64_t *start;  /* the result's ops' new host starts */
    int64_t seq_off, et_off, mark_off, id_off, st_off; /* id offsets per copy */
} rep;

static int32_t tmpl(const rep *r, int32_t c) { return c % r->b.count; }

/* The result's index of op i as copy c repeats it (c < 0: the op itself). */
static int32_t map_op(const rep *r, int32_t i, int32_t c) {
    if (i < 0) return i;
    if (c >= 0 && r->ob[i] == tmpl(r, c) && r->anchor[r->t->ops[i].phase] >= 0)
        return r->seg[c * NPH + r->t->ops[i].phase] + r->rk[i];
    return r->onew[i];
}

static int32_t map_near(const rep *r, int32_t i, int32_t c) {
    int32_t m = map_op(r, i, c);
    return m < 0 && i >= 0 ? r->onear[i] : m;
}

static int32_t map_tensor(const rep *r, int32_t x, int32_t c) {
    if (x < 0) return x;
    if (c >= 0 && r->tb[x] == tmpl(r, c)) return r->tseg[c] + r->trk[x];
    return r->tnew[x];
}

/* The tensor of op o's use q (inputs, then outputs). */
static int32_t ref_tensor(const mt_trace *t, const trace_op *o, int32_t q) {
    return t->trefs[q < o->in_count ? o->in_first + q : o->out_first + q - o->in_count].tensor;
}


static int64_t shift_id(int64_t id, int32_t c, int64_t off) { return c >= 0 && id >= 0 ? id + (c + 1) * off : id; }

static int64_t slot_ns(const mt_trace *t, int32_t i) {
    return i + 1 < t->n_ops ? t->ops[i + 1].cpu_start_ns - t->ops[i].cpu_start_ns : t->ops[i].cpu_dur_ns;
}

static int is_state(trace_role role) {
    return role == TRACE_ROLE_WEIGHT || role == TRACE_ROLE_GRADIENT || role == TRACE_ROLE_OPTSTATE;
}

/* ---- what a block's op reads across a block boundary, rewired in the result ----------------------
 * In t, block b's forward reads block b-1's output (block 0 the embedding's, outside the blocks), its
 * backward block b+1's input gradient (the last block the head's); the head reads the last block's
 * output. In the result, block B (B < k: traced block B; B >= k: copy B - k, repeating block
 * (B - k) mod k) reads the same tensor of block B - d, d the offset its template reads across in t,
 * and the ops after the blocks read block N - 1's: a copied block's input is the previous copy's
 * output, so dependencies, pipeline cut tensors and activation lifetimes follow the result's chain.
 * The same tensor of another block is found by position: the op at the same rank among its block's
 * ops of that phase, the same use (the blocks repeat op for op; their tensors' ranks need not). */

/* The tensor that block b2's op at op i's place reads or writes at use q, -1 none. */
static int32_t pos_tensor(const rep *r, int32_t i, int32_t q, int32_t b2) {
    const mt_trace *t = r->t;
    const trace_op *o = &t->ops[i];
    if (r->ob[i] < 0 || b2 < 0 || b2 >= r->b.count) return -1;
    int32_t k = r->loff[b2 * NPH + o->phase] + r->rk[i];
    if (k >= r->loff[b2 * NPH + o->phase + 1]) return -1;
    const trace_op *o2 = &t->ops[r->lst[k]];
    if (o2->in_count != o->in_count || o2->out_count != o->out_count) return -1;
    return ref_tensor(t, o2, q);
}

/* Tensor x of block tb[x] as block j2 has it (x when j2 is its own block), -1 none. */
static int32_t counterpart(const rep *r, int32_t x, int32_t j2) {
    const mt_trace *t = r->t;
    int32_t f = t->tensors[x].first_op;
    if (r->tb[x] == j2) return x;
    if (f < 0 || r->ob[f] != r->tb[x]) return -1;
    for (int32_t q = 0; q < t->ops[f].in_count + t->ops[f].out_count; q++) {
        if (ref_tensor(t, &t->ops[f], q) != x) continue;
        int32_t y = pos_tensor(r, f, q, j2);
        return y >= 0 && r->tb[y] == j2 ? y : -1;
    }
    return -1;
}

/* The result's index of tensor x (of a block) as the result's block B has it, -1 none. */
static int32_t instance(const rep *r, int32_t x, int32_t B) {
    int32_t K = r->b.count;
    if (B < 0 || B >= r->n) return -1;
    int32_t y = counterpart(r, x, B < K ? B : tmpl(r, B - K));
    if (y < 0) return -1;
    return B < K ? r->tnew[y] : r->tseg[B - K] + r->trk[y];
}

/* Use q of op i as the result's block B (op i's block's copy, or itself) has it: x of the same block,
 * of no block and no chain, a state or an op outside forward and backward: as map_tensor. */
static int32_t block_use(const rep *r, int32_t i, int32_t q, int32_t B, int32_t x, int32_t dflt) {
    int32_t b = r->ob[i], j = r->tb[x], d, src = x, y;
    if (j == b) return dflt;
    if (j >= 0) d = b - j;
    else if ((y = pos_tensor(r, i, q, b + 1)) >= 0 && r->tb[y] == b) d = 1, src = y; /* the chain's start */
    else if ((y = pos_tensor(r, i, q, b - 1)) >= 0 && r->tb[y] == b) d = -1, src = y; /* its end */
    else return dflt;
    if (B - d >= 0 && B - d < r->n) {
        int32_t m = instance(r, src, B - d);
        return m >= 0 ? m : dflt;
    }
    if (j < 0 || d > 0) return dflt; /* before block 0: the embedding's, as in t */
    y = pos_tensor(r, i, q, r->b.count - 1); /* after block N - 1: what the last traced block reads */
    return y >= 0 && r->tb[y] < 0 && r->tnew[y] >= 0 ? r->tnew[y] : dflt;
}

/* The result's tensor of use q of op i as copy c repeats it (c < 0: the op itself). */
static int32_t map_use(const rep *r, int32_t i, int32_t q, int32_t c) {
    const mt_trace *t = r->t;
    const trace_op *o = &t->ops[i];
    int32_t x = ref_tensor(t, o, q), dflt = map_tensor(r, x, c);
    if (x < 0 || (o->phase != TRACE_PHASE_FORWARD && o->phase != TRACE_PHASE_BACKWARD) ||
        is_state(t->tensors[x].role))
        return dflt;
    if (r->ob[i] >= 0) return block_use(r, i, q, c >= 0 ? r->b.count + c : r->ob[i], x, dflt);
    if (r->tb[x] < 0 || o->layer < r->b.first + r->b.count * r->b.layers) return dflt;
    int32_t m = instance(r, x, r->n - r->b.count + r->tb[x]); /* after the blocks: the last ones' */
    return m >= 0 ? m : dflt;
}

/* The block of an op of no layer from the tensors it touches: PENDING when none says, NONE when
 * they disagree or a state tensor (weight, gradient, optimizer state) of no block is among them. */
static int32_t vote(const rep *r, const trace_op *o, int32_t i) {
    const mt_trace *t = r->t;
    int32_t j = PENDING;
    int opt = o->phase == TRACE_PHASE_OPTIMIZER; /* its temporaries (scalars, reused buffers) say nothing */
    for (int32_t q = 0; q < o->in_count + o->out_count; q++) {
        int32_t x = ref_tensor(t, o, q);
        if (x < 0 || t->tensors[x].first_op == i || r->tb[x] == PENDING || (opt && !is_state(t->tensors[x].role)))
            continue;
        if (r->tb[x] == NONE) {
            if (is_state(t->tensors[x].role)) return NONE;
            continue;
        }
        if (j == PENDING) j = r->tb[x];
        else if (j != r->tb[x]) return NONE;
    }
    return j;
}

/* Optimizer state of no block follows its parameter: in an op of no block over lists (a foreach or
 * fused step: `_foreach_lerp_(exp_avgs, grads, w)`, `_foreach_addcdiv_(params, exp_avgs, denoms)`,
 * `_fused_adam_(params, grads, exp_avgs, ...)`), element q of one list argument and element q of
 * another of the same length belong to the same parameter. A state (or a temporary: the gradient
 * lists a step makes) of no block at q takes the block of what is at q in the other list, until
 * nothing changes (exp_avg_sq reaches its block through the gradient list that exp_avg reached). */
static const trace_tref *use_at(const mt_trace *t, const trace_op *o, int32_t q) {
    return &t->trefs[q < o->in_count ? o->in_first + q : o->out_first + q - o->in_count];
}

/* The uses of the list argument starting at use q (0 when q is not its first use). */
static int32_t list_len(const mt_trace *t, const trace_op *o, int32_t q) {
    int32_t end = q < o->in_count ? o->in_count : o->in_count + o->out_count, len = 1;
    if (q != 0 && q != o->in_count && use_at(t, o, q - 1)->arg == use_at(t, o, q)->arg) return 0;
    while (q + len < end && use_at(t, o, q + len)->arg == use_at(t, o, q)->arg) len++;
    return len;
}

static int follows(const rep *r, int32_t x) {
    trace_role role = r->t->tensors[x].role;
    return r->tb[x] == NONE && (role == TRACE_ROLE_OPTSTATE || role == TRACE_ROLE_OTHER);
}

/* One round over op i's lists; returns how many tensors took a block. */
static int pair_states(rep *r, int32_t i) {
    const mt_trace *t = r->t;
    const trace_op *o = &t->ops[i];
    int32_t n = o->in_count + o->out_count;
    int moved = 0;
    for (int32_t a = 0; a < n; a++) {
        int32_t len = list_len(t, o, a);
        for (int32_t b = 0; len >= 2 && b < n; b++)
            for (int32_t q = 0; b != a && list_len(t, o, b) == len && q < len; q++) {
                int32_t s = use_at(t, o, a + q)->tensor, p = use_at(t, o, b + q)->tensor;
                if (s >= 0 && p >= 0 && follows(r, s) && r->tb[p] >= 0) r->tb[s] = r->tb[p], moved++;
            }
    }
    return moved;
}

static void own(rep *r) {
    const mt_trace *t = r->t;
    int32_t end = r->b.first + r->b.count * r->b.layers;
    for (int32_t x = 0; x < t->n_tensors; x++) r->tb[x] = t->tensors[x].first_op < 0 ? NONE : PENDING;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->layer >= r->b.first && o->layer < end) r->ob[i] = (o->layer - r->b.first) / r->b.layers;
        else r->ob[i] = o->layer >= 0 ? NONE : vote(r, o, i);
        if (r->ob[i] == PENDING) continue; /* its tensors wait for it */
        for (int32_t q = 0; q < o->in_count + o->out_count; q++) {
            int32_t x = ref_tensor(t, o, q);
            if (x >= 0 && t->tensors[x].first_op == i) r->tb[x] = r->ob[i];
        }
    }
    /* an op no tensor places: an optimizer op (a step counter) goes with the next optimizer op, a
     * backward op (AccumulateGrad of a gradient made inside it) with the backward op before it (the
     * one that made the gradient: autograd runs AccumulateGrad as soon as its input is ready) */
    int32_t next = NONE;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) {
        if (t->ops[i].phase != TRACE_PHASE_OPTIMIZER) {
            next = NONE;
            continue;
        }
        if (r->ob[i] == PENDING) r->ob[i] = next;
        next = r->ob[i];
    }
    int32_t prev = NONE;
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (t->ops[i].phase != TRACE_PHASE_BACKWARD) {
            prev = NONE;
            if (r->ob[i] == PENDING) r->ob[i] = NONE;
            continue;
        }
        if (r->ob[i] == PENDING) r->ob[i] = prev;
        prev = r->ob[i];
    }
    for (int32_t x = 0; x < t->n_tensors; x++)
        if (r->tb[x] == PENDING) r->tb[x] = r->ob[t->tensors[x].first_op];
    for (int moved = 1, round = 0; moved && round < 8; round++) {
        moved = 0;
        for (int32_t i = 0; i < t->n_ops; i++)
            if (r->ob[i] == NONE) moved += pair_states(r, i);
    }
}

static mt_status alloc_all(rep *r) {
    const mt_trace *t = r->t;
    size_t no = (size_t)t->n_ops + 1, nt = (size_t)t->n_tensors + 1, nb = (size_t)r->b.count;
    r->ob = malloc(no * sizeof *r->ob);
    r->rk = malloc(no * sizeof *r->rk);
    r->onew = malloc(no * sizeof *r->onew);
    r->onear = malloc(no * sizeof *r->onear);
    r->lst = malloc(no * sizeof *r->lst);
    r->tb = malloc(nt * sizeof *r->tb);
    r->trk = malloc(nt * sizeof *r->trk);
    r->tnew = malloc(nt * sizeof *r->tnew);
    r->tcnt = calloc(nb, sizeof *r->tcnt);
    r->loff = calloc(nb * NPH + 1, sizeof *r->loff);
    r->seg = calloc((size_t)r->copies * NPH + 1, sizeof *r->seg);
    r->tseg = calloc((size_t)r->copies + 1, sizeof *r->tseg);
    return r->ob && r->rk && r->onew && r->onear && r->lst && r->tb && r->trk && r->tnew && r->tcnt && r->loff &&
                   r->seg && r->tseg ? MT_OK : MT_ENOMEM;
}

static void free_all(rep *r) {
    free(r->ob), free(r->rk), free(r->onew), free(r->onear), free(r->lst), free(r->tb), free(r->trk);
    free(r->tnew), free(r->tcnt), free(r->loff), free(r->seg), free(r->tseg), free(r->seq), free(r->start);
}

/* Ranks and lists of each block's ops per phase and of its tensors. */
static void rank(rep *r) {
    const mt_trace *t = r->t;
    int32_t *cnt = r->loff + 1;
    for (int32_t i = 0; i < t->n_ops; i++)
        if (r->ob[i] >= 0) r->rk[i] = cnt[r->ob[i] * NPH + t->ops[i].phase]++;
    for (int32_t k = 0; k < r->b.count * NPH; k++) r->loff[k + 1] += r->loff[k];
    for (int32_t i = 0; i < t->n_ops; i++)
        if (r->ob[i] >= 0) r->lst[r->loff[r->ob[i] * NPH + t->ops[i].phase] + r->rk[i]] = i;
    for (int32_t x = 0; x < t->n_tensors; x++)
        if (r->tb[x] >= 0) r->trk[x] = r->tcnt[r->tb[x]]++;
    for (int ph = 0; ph < NPH; ph++) r->anchor[ph] = -1;
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_phase ph = t->ops[i].phase;
        if (r->ob[i] != r->b.count - 1) continue;
        if (ph != TRACE_PHASE_BACKWARD || r->anchor[ph] < 0) r->anchor[ph] = i; /* backward: the first */
    }
}

static void emit_copy(rep *r, int32_t c, trace_phase ph) {
    int32_t blk = tmpl(r, c);
    r->seg[c * NPH + ph] = r->n_seq;
    for (int32_t k = r->loff[blk * NPH + ph]; k < r->loff[blk * NPH + ph + 1]; k++)
        r->seq[r->n_seq++] = (slot){r->lst[k], c};
}

/* A weight, gradient or optimizer state of a block cut away: it goes with its block, even when an op
 * over every parameter (a foreach step, a bucket's collective) that stays reads it. */
static int cut_state(const rep *r, int32_t x) { return r->tb[x] >= r->n && is_state(r->t->tensors[x].role); }

/* The result's op sequence, its new op and tensor indices and host starts. */
static mt_status sequence(rep *r, int64_t n_new) {
    const mt_trace *t = r->t;
    const int32_t *anchor = r->anchor;
    r->seq = malloc((size_t)(n_new + 1) * sizeof *r->seq);
    r->start = malloc((size_t)(n_new + 1) * sizeof *r->start);
    if (!r->seq || !r->start) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_phase ph = t->ops[i].phase;
        if (ph == TRACE_PHASE_BACKWARD && i == anchor[ph])
            for (int32_t c = r->copies - 1; c >= 0; c--) emit_copy(r, c, ph);
        r->onew[i] = r->ob[i] < r->n ? r->n_seq : -1;
        if (r->onew[i] >= 0) r->seq[r->n_seq++] = (slot){i, -1};
        if (ph != TRACE_PHASE_BACKWARD && i == anchor[ph])
            for (int32_t c = 0; c < r->copies; c++) emit_copy(r, c, ph);
    }
    int32_t near = r->n_seq > 0 ? r->n_seq - 1 : 0;
    for (int32_t i = t->n_ops - 1; i >= 0; i--) r->onear[i] = r->onew[i] >= 0 ? (near = r->onew[i]) : near;
    if (r->n_seq > 0) r->start[0] = t->ops[r->seq[0].src].cpu_start_ns;
    for (int32_t j = 1; j < r->n_seq; j++) r->start[j] = r->start[j - 1] + slot_ns(t, r->seq[j - 1].src);
    /* tensors: the kept ones in order, then each copy's */
    unsigned char *read = calloc((size_t)t->n_tensors + 1, 1);
    if (!read) return MT_ENOMEM;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (r->onew[i] < 0) continue;
        for (int32_t q = 0; q < o->in_count + o->out_count; q++) {
            int32_t x = ref_tensor(t, o, q);
            if (x >= 0 && !cut_state(r, x)) read[x] = 1;
        }
    }
    int32_t nt = 0;
    for (int32_t x = 0; x < t->n_tensors; x++) r->tnew[x] = r->tb[x] < r->n || read[x] ? nt++ : -1;
    free(read);
    for (int32_t c = 0; c < r->copies; c++) {
        r->tseg[c] = nt;
        nt += r->tcnt[tmpl(r, c)];
    }
    r->tseg[r->copies] = nt;
    return MT_OK;
}

static int64_t delta(const rep *r, int32_t j) { return r->start[j] - r->t->ops[r->seq[j].src].cpu_start_ns; }

/* A layer name the builder numbered ("L12:aten::linear") renumbered; others kept. */
static const char *layer_name(mt_trace *o, const char *name, int32_t idx) {
    if (!name || name[0] != 'L') return name;
    const char *c = name + 1;
    while (*c >= '0' && *c <= '9') c++;
    if (c == name + 1 || *c != ':') return name;
    char buf[256];
    snprintf(buf, sizeof buf, "L%d%s", (int)idx, c);
    return mt_strpool_intern(o->pool, buf, -1);
}

static mt_status build_layers(const rep *r, mt_trace *o) {
    const mt_trace *t = r->t;
    int32_t F = r->b.first, p = r->b.layers, k = r->b.count;
    o->n_layers = t->n_layers + (r->n - k) * p;
    o->layers = calloc((size_t)o->n_layers + 1, sizeof *o->layers);
    if (!o->layers) return MT_ENOMEM;
    for (int32_t l = 0; l < o->n_layers; l++) {
        int32_t src = l;
        if (l >= F + r->n * p) src = l - (r->n - k) * p;
        else if (l >= F + k * p) src = F + tmpl(r, (l - F) / p - k) * p + (l - F) % p;
        o->layers[l] = t->layers[src];
        if (!(o->layers[l].name = layer_name(o, t->layers[src].name, l))) return MT_ENOMEM;
    }
    return MT_OK;
}

static int32_t new_layer(const rep *r, int32_t layer, int32_t c) {
    int32_t F = r->b.first, p = r->b.layers, k = r->b.count;
    if (layer < F) return layer;
    if (layer >= F + k * p) return layer + (r->n - k) * p;
    return c < 0 ? layer : F + (k + c) * p + (layer - F) % p;
}

/* The factor on the device time of an optimizer op of no block with kernels (a foreach or fused
 * step over every parameter, PyTorch 2.x's default on GPUs, and its temporaries: the state lists it
 * makes belong to no block): the model's weight bytes at n blocks over the traced ones. */
static double weight_factor(const rep *r) {
    const mt_trace *t = r->t;
    double in_blocks = 0, all = 0;
    for (int32_t x = 0; x < t->n_tensors; x++) {
        if (t->tensors[x].role != TRACE_ROLE_WEIGHT) continue;
        all += t->tensors[x].bytes;
        if (r->tb[x] >= 0) in_blocks += t->tensors[x].bytes;
    }
    return all > 0 ? (all + in_blocks * (r->n - r->b.count) / r->b.count) / all : 1;
}

static int steps_every_parameter(const rep *r, int32_t i) {
    return r->ob[i] == NONE && r->t->ops[i].phase == TRACE_PHASE_OPTIMIZER && r->t->ops[i].kernel_count > 0;
}

/* Ops, their tensor uses and kernels. */
static mt_status build_ops(const rep *r, mt_trace *o) {
    const mt_trace *t = r->t;
    int64_t n_trefs = 0, n_dims = 0, n_k = 0;
    for (int32_t j = 0; j < r->n_seq; j++) {
        const trace_op *s = &t->ops[r->seq[j].src];
        n_trefs += s->in_count + s->out_count;
        n_k += s->kernel_count;
        for (int32_t q = 0; q < s->in_count + s->out_count; q++)
            n_dims += t->trefs[q < s->in_count ? s->in_first + q : s->out_first + q - s->in_count].ndim;
    }
    if (n_trefs > INT32_MAX || n_dims > INT32_MAX || n_k > INT32_MAX) return MT_ENOMEM;
    o->ops = malloc(((size_t)r->n_seq + 1) * sizeof *o->ops);
    o->trefs = malloc(((size_t)n_trefs + 1) * sizeof *o->trefs);
    o->dims = malloc(((size_t)n_dims + 1) * sizeof *o->dims);
    o->kernels = malloc(((size_t)n_k + 1) * sizeof *o->kernels);
    if (!o->ops || !o->trefs || !o->dims || !o->kernels) return MT_ENOMEM;
    o->n_trefs = o->n_dims = o->n_kernels = 0;
    const double wf = weight_factor(r);
    for (int32_t j = 0; j < r->n_seq; j++) {
        int32_t c = r->seq[j].copy;
        const trace_op *s = &t->ops[r->seq[j].src];
        trace_op *d = &o->ops[j];
        int64_t dt = delta(r, j);
        *d = *s;
        d->id = j;
        d->layer = s->layer < 0 ? -1 : new_layer(r, s->layer, c);
        d->cpu_start_ns += dt, d->dev_start_ns += dt, d->dev_end_ns += dt;
        d->fwd_op = map_op(r, s->fwd_op, c);
        d->seq = shift_id(s->seq, c, r->seq_off);
        d->et_node = shift_id(s->et_node, c, r->et_off);
        d->mark_id = (int32_t)shift_id(s->mark_id, c, r->mark_off);
        for (int pass = 0; pass < 2; pass++) {
            int32_t first = pass ? s->out_first : s->in_first, n = pass ? s->out_count : s->in_count;
            *(pass ? &d->out_first : &d->in_first) = o->n_trefs;
            for (int32_t q = 0; q < n; q++) {
                trace_tref tr = t->trefs[first + q];
                if (tr.tensor >= 0 && cut_state(r, tr.tensor)) { /* its list shortens */
                    (*(pass ? &d->out_count : &d->in_count))--;
                    continue;
                }
                memcpy(o->dims + o->n_dims, t->dims + tr.shape_off, (size_t)tr.ndim * sizeof *o->dims);
                tr.shape_off = o->n_dims;
                o->n_dims += tr.ndim;
                tr.tensor = map_use(r, r->seq[j].src, pass ? s->in_count + q : q, c);
                o->trefs[o->n_trefs++] = tr;
            }
        }
        /* its kernels lengthen with the model (the op's device times follow: mt_tb_retotal) */
        double f = steps_every_parameter(r, r->seq[j].src) ? wf : 1;
        for (int32_t q = 0; q < s->kernel_count; q++) {
            trace_kernel kk = t->kernels[s->kernel_first + q];
            kk.op = j;
            if (f != 1) {
                kk.start_ns = s->dev_start_ns + (int64_t)llround((double)(kk.start_ns - s->dev_start_ns) * f);
                kk.dur_ns = (int64_t)llround((double)kk.dur_ns * f);
            }
            kk.start_ns += dt;
            if (kk.launch_ns >= 0) kk.launch_ns += dt;
            o->kernels[o->n_kernels++] = kk;
        }
    }
    o->n_ops = r->n_seq;
    return MT_OK;
}

static mt_status build_tensors(const rep *r, mt_trace *o) {
    const mt_trace *t = r->t;
    int32_t nt = r->tseg[r->copies];
    o->tensors = malloc(((size_t)nt + 1) * sizeof *o->tensors);
    if (!o->tensors) return MT_ENOMEM;
    for (int32_t x = 0; x < t->n_tensors; x++) {
        if (r->tnew[x] >= 0) {
            trace_tensor *d = &o->tensors[r->tnew[x]];
            *d = t->tensors[x];
            d->first_op = map_near(r, d->first_op, -1);
        }
        if (r->tb[x] < 0) continue;
        for (int32_t c = r->tb[x]; c < r->copies; c += r->b.count) { /* the copies repeating its block */
            trace_tensor *d = &o->tensors[r->tseg[c] + r->trk[x]];
            *d = t->tensors[x];
            d->et_id = shift_id(d->et_id, c, r->id_off);
            d->storage_id = shift_id(d->storage_id, c, r->st_off);
            d->first_op = map_near(r, d->first_op, c);
        }
    }
    o->n_tensors = nt;
    return MT_OK;
}

/* Entries per op of t: first[op] .. first[op + 1] index `idx` (entries of op -1 are left out). */
static mt_status by_op(const mt_trace *t, const int32_t *ops, size_t stride, int32_t n, int32_t **first, int32_t **idx) {
    *first = calloc((size_t)t->n_ops + 2, sizeof **first);
    *idx = malloc(((size_t)n + 1) * sizeof **idx);
    if (!*first || !*idx) return MT_ENOMEM;
    for (int32_t e = 0; e < n; e++) {
        int32_t op = *(const int32_t *)((const char *)ops + (size_t)e * stride);
        if (op >= 0 && op < t->n_ops) (*first)[op + 2]++;
    }
    for (int32_t i = 0; i < t->n_ops; i++) (*first)[i + 2] += (*first)[i + 1];
    for (int32_t e = 0; e < n; e++) {
        int32_t op = *(const int32_t *)((const char *)ops + (size_t)e * stride);
        if (op >= 0 && op < t->n_ops) (*idx)[(*first)[op + 1]++] = e;
    }
    return MT_OK;
}

#define OPS_OF(arr) (&(arr)[0].op), sizeof (arr)[0]

static int cmp_sync(const void *a, const void *b) {
    int64_t x = ((const trace_sync *)a)->ts_ns, y = ((const trace_sync *)b)->ts_ns;
    return (x > y) - (x < y);
}
static int cmp_coll(const void *a, const void *b) {
    int64_t x = ((const trace_coll *)a)->ts_ns, y = ((const trace_coll *)b)->ts_ns;
    return (x > y) - (x < y);
}
static int cmp_wait(const void *a, const void *b) {
    int64_t x = ((const trace_wait *)a)->ts_ns, y = ((const trace_wait *)b)->ts_ns;
    return (x > y) - (x < y);
}

/* Saved activations, backward temporaries, host syncs, stream waits and collectives of each op of
 * the result (those before the first op kept as they are). */
static mt_status build_per_op(const rep *r, mt_trace *o) {
    const mt_trace *t = r->t;
    int32_t *f[5] = {0}, *ix[5] = {0};
    mt_status rc = MT_OK;
    if (rc == MT_OK && t->n_saved) rc = by_op(t, OPS_OF(t->saved), t->n_saved, &f[0], &ix[0]);
    if (rc == MT_OK && t->n_bwd_temps) rc = by_op(t, OPS_OF(t->bwd_temps), t->n_bwd_temps, &f[1], &ix[1]);
    if (rc == MT_OK && t->n_syncs) rc = by_op(t, OPS_OF(t->syncs), t->n_syncs, &f[2], &ix[2]);
    if (rc == MT_OK && t->n_waits) rc = by_op(t, OPS_OF(t->waits), t->n_waits, &f[3], &ix[3]);
    if (rc == MT_OK && t->n_colls) rc = by_op(t, OPS_OF(t->colls), t->n_colls, &f[4], &ix[4]);
    int64_t cnt[5] = {0};
    for (int32_t j = 0; rc == MT_OK && j < r->n_seq; j++)
        for (int k = 0; k < 5; k++)
            if (f[k]) cnt[k] += f[k][r->seq[j].src + 1] - f[k][r->seq[j].src];
    if (rc == MT_OK) {
        for (int32_t e = 0; e < t->n_syncs; e++) cnt[2] += t->syncs[e].op < 0;
        for (int32_t e = 0; e < t->n_waits; e++) cnt[3] += t->waits[e].op < 0;
        for (int32_t e = 0; e < t->n_colls; e++) cnt[4] += t->colls[e].op < 0;
        for (int k = 0; k < 5; k++)
            if (cnt[k] > INT32_MAX) rc = MT_ENOMEM;
    }
    if (rc == MT_OK) {
        o->saved = malloc(((size_t)cnt[0] + 1) * sizeof *o->saved);
        o->bwd_temps = malloc(((size_t)cnt[1] + 1) * sizeof *o->bwd_temps);
        o->syncs = malloc(((size_t)cnt[2] + 1) * sizeof *o->syncs);
        o->waits = malloc(((size_t)cnt[3] + 1) * sizeof *o->waits);
        o->colls = malloc(((size_t)cnt[4] + 1) * sizeof *o->colls);
        if (!o->saved || !o->bwd_temps || !o->syncs || !o->waits || !o->colls) rc = MT_ENOMEM;
    }
    if (rc == MT_OK) {
        o->n_saved = o->n_bwd_temps = o->n_syncs = o->n_waits = o->n_colls = 0;
        for (int32_t e = 0; e < t->n_syncs; e++)
            if (t->syncs[e].op < 0) o->syncs[o->n_syncs++] = t->syncs[e];
        for (int32_t e = 0; e < t->n_waits; e++)
            if (t->waits[e].op < 0) o->waits[o->n_waits++] = t->waits[e];
        for (int32_t e = 0; e < t->n_colls; e++)
            if (t->colls[e].op < 0) o->colls[o->n_colls++] = t->colls[e];
    }
    for (int32_t j = 0; rc == MT_OK && j < r->n_seq; j++) {
        int32_t s = r->seq[j].src, c = r->seq[j].copy;
        int64_t dt = delta(r, j);
        for (int32_t e = f[0] ? f[0][s] : 0; f[0] && e < f[0][s + 1]; e++) {
            trace_saved v = t->saved[ix[0][e]];
            v.op = j, v.last_bwd = map_near(r, v.last_bwd, c), v.storage_id = shift_id(v.storage_id, c, r->st_off);
            o->saved[o->n_saved++] = v;
        }
        for (int32_t e = f[1] ? f[1][s] : 0; f[1] && e < f[1][s + 1]; e++) {
            trace_saved v = t->bwd_temps[ix[1][e]];
            v.op = j, v.last_bwd = map_near(r, v.last_bwd, c), v.storage_id = shift_id(v.storage_id, c, r->st_off);
            o->bwd_temps[o->n_bwd_temps++] = v;
        }
        for (int32_t e = f[2] ? f[2][s] : 0; f[2] && e < f[2][s + 1]; e++) {
            trace_sync v = t->syncs[ix[2][e]];
            v.op = j, v.ts_ns += dt;
            o->syncs[o->n_syncs++] = v;
        }
        for (int32_t e = f[3] ? f[3][s] : 0; f[3] && e < f[3][s + 1]; e++) {
            trace_wait v = t->waits[ix[3][e]];
            int32_t rec = map_near(r, v.rec_op, c);
            v.ts_ns += dt;
            if (rec >= 0) v.rec_ns += delta(r, rec);
            v.op = j, v.rec_op = rec;
            o->waits[o->n_waits++] = v;
        }
        for (int32_t e = f[4] ? f[4][s] : 0; f[4] && e < f[4][s + 1]; e++) {
            trace_coll v = t->colls[ix[4][e]];
            v.op = j, v.ts_ns += dt, v.issued_by = map_near(r, v.issued_by, c);
            o->colls[o->n_colls++] = v;
        }
    }
    for (int k = 0; k < 5; k++) free(f[k]), free(ix[k]);
    if (rc != MT_OK) return rc;
    if (o->n_syncs > 1) qsort(o->syncs, (size_t)o->n_syncs, sizeof *o->syncs, cmp_sync);
    if (o->n_waits > 1) qsort(o->waits, (size_t)o->n_waits, sizeof *o->waits, cmp_wait);
    if (o->n_colls > 1) qsort(o->colls, (size_t)o->n_colls, sizeof *o->colls, cmp_coll);
    return MT_OK;
}

static char *dup_or_null(const char *s, int *bad) {
    if (!s) return NULL;
    char *d = malloc(strlen(s) + 1);
    if (!d) *bad = 1;
    else strcpy(d, s);
    return d;
}

/* The result's own header: t's fields, its own paths, process groups and an empty pool. */
static mt_status header(const mt_trace *t, mt_trace *o) {
    *o = *t;
    o->ops = NULL, o->kernels = NULL, o->tensors = NULL, o->trefs = NULL, o->dims = NULL, o->layers = NULL;
    o->syncs = NULL, o->colls = NULL, o->waits = NULL, o->saved = NULL, o->bwd_temps = NULL;
    o->n_ops = o->n_kernels = o->n_tensors = o->n_trefs = o->n_dims = o->n_layers = 0;
    o->n_syncs = o->n_colls = o->n_waits = o->n_saved = o->n_bwd_temps = 0;
    int bad = 0;
    o->kineto_path = dup_or_null(t->kineto_path, &bad);
    o->et_path = dup_or_null(t->et_path, &bad);
    o->expert_pattern = dup_or_null(t->expert_pattern, &bad);
    o->dist.pgs = NULL;
    if (t->dist.n_pgs > 0 && (o->dist.pgs = malloc((size_t)t->dist.n_pgs * sizeof *o->dist.pgs)))
        memcpy(o->dist.pgs, t->dist.pgs, (size_t)t->dist.n_pgs * sizeof *o->dist.pgs);
    else if (t->dist.n_pgs > 0) bad = 1;
    o->pool = mt_strpool_new();
    return bad || !o->pool ? MT_ENOMEM : MT_OK;
}

static int64_t max_plus_one(const mt_trace *t, int what) {
    int64_t m = 0;
    for (int32_t i = 0; what < 3 && i < t->n_ops; i++) {
        int64_t v = what == 0 ? t->ops[i].seq : what == 1 ? t->ops[i].et_node : t->ops[i].mark_id;
        if (v > m) m = v;
    }
    for (int32_t x = 0; what >= 3 && x < t->n_tensors; x++) {
        int64_t v = what == 3 ? t->tensors[x].et_id : t->tensors[x].storage_id;
        if (v > m) m = v;
    }
    for (int32_t e = 0; what == 4 && e < t->n_saved; e++)
        if (t->saved[e].storage_id > m) m = t->saved[e].storage_id;
    for (int32_t e = 0; what == 4 && e < t->n_bwd_temps; e++)
        if (t->bwd_temps[e].storage_id > m) m = t->bwd_temps[e].storage_id;
    return m + 1;
}

mt_status mt_blocks_repeat(const mt_trace *t, int32_t n, mt_trace **out, mt_error *err) {
    rep r;
    memset(&r, 0, sizeof r);
    r.t = t;
    r.n = n;
    mt_blocks_find(t, &r.b);
    const char *path = t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "the trace";
    if (!r.b.found)
        return mt_fail(err, MT_EINVAL, "--blocks: %s has no repeating block (no group of layers repeats; a trace of "
                       "one transformer block has none: trace two or more; mitosis inspect lists its layers), so there "
                       "is nothing to repeat", path);
    if (n < 1 || n > MT_REPEAT_MAX_BLOCKS)
        return mt_fail(err, MT_EINVAL, "--blocks needs 1 to %d blocks (got %d; the trace holds %d)",
                       MT_REPEAT_MAX_BLOCKS, (int)n, (int)r.b.count);
    r.copies = n > r.b.count ? n - r.b.count : 0;
    int64_t per_block = 0;
    for (int32_t l = r.b.first; l < r.b.first + r.b.count * r.b.layers; l++) per_block += t->layers[l].n_ops;
    per_block = per_block / r.b.count + 1;
    int64_t n_new = (int64_t)t->n_ops + (int64_t)r.copies * per_block * 2; /* ops of no layer: at most as many */
    if ((int64_t)t->n_ops + (int64_t)r.copies * per_block > MT_REPEAT_MAX_OPS)
        return mt_fail(err, MT_EINVAL, "--blocks %d: %s would hold about %lld ops, more than %d; ask for fewer blocks",
                       (int)n, path, (long long)((int64_t)t->n_ops + (int64_t)r.copies * per_block),
                       MT_REPEAT_MAX_OPS);
    r.seq_off = max_plus_one(t, 0), r.et_off = max_plus_one(t, 1), r.mark_off = max_plus_one(t, 2);
    r.id_off = max_plus_one(t, 3), r.st_off = max_plus_one(t, 4);
    mt_trace *o = calloc(1, sizeof *o);
    mt_status rc = o ? alloc_all(&r) : MT_ENOMEM;
    if (rc == MT_OK) {
        own(&r);
        rank(&r);
        /* the exact count now that every op has its block */
        n_new = t->n_ops;
        for (int32_t c = 0; c < r.copies; c++)
            for (int ph = 0; ph < NPH; ph++)
                if (r.anchor[ph] >= 0) n_new += r.loff[tmpl(&r, c) * NPH + ph + 1] - r.loff[tmpl(&r, c) * NPH + ph];
        if (n_new > MT_REPEAT_MAX_OPS) rc = MT_ENOMEM;
    }
    if (rc == MT_OK) rc = sequence(&r, n_new);
    if (rc == MT_OK) rc = header(t, o);
    if (rc == MT_OK) rc = build_layers(&r, o);
    if (rc == MT_OK) rc = build_ops(&r, o);
    if (rc == MT_OK) rc = build_tensors(&r, o);
    if (rc == MT_OK) rc = build_per_op(&r, o);
    if (rc == MT_OK && r.n_seq > 0) {
        int64_t d = delta(&r, r.n_seq - 1);
        o->host_end_ns += d, o->step_end_ns += d;
    }
    free_all(&r);
    if (rc == MT_OK) return mt_tb_retotal(o, err) == MT_OK ? (*out = o, MT_OK) : (mt_trace_free(o), MT_ENOMEM);
    mt_trace_free(o);
    return mt_fail(err, MT_ENOMEM, "--blocks %d: out of memory repeating the blocks of %s", (int)n, path);
}
