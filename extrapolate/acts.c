/* extrapolate/acts.c — the activations a micro-batch keeps for backward (see acts.h). */
#include <stdlib.h>

#include "extrapolate/acts.h"

/* Every activation tensor a forward op made (the fallback without the trace's saved set). */
static int32_t made_in_forward(const mt_trace *t, mt_act *a) {
    int32_t n = 0;
    for (int32_t x = 0; x < t->n_tensors; x++) {
        const trace_tensor *tt = &t->tensors[x];
        int32_t f = tt->first_op;
        if (tt->role != TRACE_ROLE_ACTIVATION || f < 0 || f >= t->n_ops || t->ops[f].phase != TRACE_PHASE_FORWARD ||
            tt->bytes <= 0)
            continue;
        if (a) a[n] = (mt_act){f, -1, tt->storage_id, tt->bytes};
        n++;
    }
    return n;
}

static int by_op(const void *x, const void *y) {
    const mt_act *a = x, *b = y;
    return a->op < b->op ? -1 : a->op > b->op;
}

mt_status mt_acts_of_trace(const mt_trace *t, mt_act **out, int32_t *n) {
    *out = NULL;
    *n = 0;
    int32_t m = 0;
    if (t->has_saved)
        for (int32_t k = 0; k < t->n_saved; k++) m += t->saved[k].op >= 0 && t->saved[k].op < t->n_ops && t->saved[k].bytes > 0;
    else m = made_in_forward(t, NULL);
    if (m == 0) return MT_OK;
    mt_act *a = malloc((size_t)m * sizeof *a);
    if (!a) return MT_ENOMEM;
    if (t->has_saved) {
        m = 0;
        for (int32_t k = 0; k < t->n_saved; k++) {
            const trace_saved *s = &t->saved[k];
            if (s->op >= 0 && s->op < t->n_ops && s->bytes > 0) a[m++] = (mt_act){s->op, s->last_bwd, s->storage_id, s->bytes};
        }
    } else {
        made_in_forward(t, a);
        qsort(a, (size_t)m, sizeof *a, by_op);
    }
    *out = a;
    *n = m;
    return MT_OK;
}
