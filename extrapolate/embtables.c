/* extrapolate/embtables.c — see embtables.h. */
#include "extrapolate/embtables.h"

#include <string.h>

static int32_t weight_of(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++) {
        int32_t w = t->trefs[o->in_first + j].tensor;
        if (w >= 0 && w < t->n_tensors && t->tensors[w].role == TRACE_ROLE_WEIGHT) return w;
    }
    return -1;
}

int mt_emb_is_table(const mt_trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    return o->phase == TRACE_PHASE_FORWARD && o->tp == TRACE_TP_EMBEDDING && o->out_count >= 1 && weight_of(t, o) >= 0;
}

int32_t mt_emb_table_weight(const mt_trace *t, int32_t i) { return weight_of(t, &t->ops[i]); }

double mt_emb_table_bytes(const mt_trace *t, int32_t i) {
    int32_t w = weight_of(t, &t->ops[i]);
    return w >= 0 ? t->tensors[w].bytes : 0;
}

double mt_emb_pooled_bytes(const mt_trace *t, int32_t i) {
    int32_t x = t->trefs[t->ops[i].out_first].tensor;
    return x >= 0 && x < t->n_tensors ? t->tensors[x].bytes : 0;
}

int32_t mt_emb_bag_count(const mt_trace *t) {
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_ops; i++)
        n += mt_emb_is_table(t, i) && t->ops[i].name && strstr(t->ops[i].name, "embedding_bag") != NULL;
    return n;
}

/* 1 when bag op i reads offsets not made by arange. */
static int jagged(const mt_trace *t, int32_t i) {
    const trace_op *o = &t->ops[i];
    int seen = 0;
    for (int32_t j = 0; j < o->in_count; j++) {
        int32_t x = t->trefs[o->in_first + j].tensor;
        if (x < 0 || x >= t->n_tensors || t->tensors[x].role == TRACE_ROLE_WEIGHT) continue;
        if (seen++ == 0) continue; /* the ids */
        int32_t p = t->tensors[x].first_op;
        return p >= 0 && p < t->n_ops && p != i && t->ops[p].name && !strstr(t->ops[p].name, "arange");
    }
    return 0;
}

int32_t mt_emb_jagged_count(const mt_trace *t) {
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_ops; i++)
        n += mt_emb_is_table(t, i) && t->ops[i].name && strstr(t->ops[i].name, "embedding_bag") != NULL && jagged(t, i);
    return n;
}

int32_t mt_emb_dense_count(const mt_trace *t) {
    int32_t n = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (!mt_emb_is_table(t, i) || !t->ops[i].name || strstr(t->ops[i].name, "embedding_bag")) continue;
        int32_t w = weight_of(t, &t->ops[i]), seen = 0;
        for (int32_t q = 0; q < i && !seen; q++)
            seen = mt_emb_is_table(t, q) && !strstr(t->ops[q].name ? t->ops[q].name : "", "embedding_bag") &&
                   weight_of(t, &t->ops[q]) == w;
        n += !seen;
    }
    return n;
}
