/* extrapolate/pass_moecut.c — a pipeline cut inside a MoE layer is refused, with or without --ep.
 * A MoE layer (moe.h: its router, the token dispatch, the experts, the combine) runs in one model
 * chunk: Megatron-Core and PyTorch's pipelining cut between transformer blocks, and the expert
 * all-to-alls pair up inside one stage. pass_ep.c checks the same when it runs (--ep, --expert-skew);
 * this pass checks the plans it does not see (--pp or --vpp on a MoE trace without them).
 * Invariant: it emits nothing; with pp x vpp 1, --ep or --expert-skew it does nothing.
 * Cost: mt_moe_find, O(ops + trefs), once per program.
 */
#include <stdlib.h>

#include "extrapolate/build.h"
#include "extrapolate/moe.h"

static int checked_elsewhere(const mt_plan *pl) { return pl->ep > 1 || pl->expert_skew >= 0; }

static mt_status moecut_prepare(mt_bld *b, void **st, mt_error *err) {
    const mt_plan *pl = b->plan;
    *st = NULL;
    if ((int64_t)pl->pp * pl->vpp <= 1 || checked_elsewhere(pl)) return MT_OK;
    mt_moe *m = NULL;
    MT_CHECK(mt_moe_find(b->t, &m, err));
    *st = m;
    return MT_OK;
}

static void moecut_release(void *st) { mt_moe_free(st); }

static mt_status moecut_analyse(mt_bld *b, void *st, mt_error *err) {
    const mt_moe *m = st;
    for (int32_t k = 0; m && k < m->n_layers; k++) {
        const mt_moe_layer *L = &m->l[k];
        int32_t c0 = mt_bld_op_chunk(b, L->router), c1 = mt_bld_op_chunk(b, L->last_fwd);
        if (c0 == c1 && mt_bld_op_chunk(b, L->first_fwd) == c0) continue;
        return mt_fail(err, MT_EINVAL, "--pp %d --vpp %d cuts MoE layer %d (router op %d .. experts' last op %d) between "
                       "model chunks %d and %d: a pipeline cut inside a MoE layer is not modelled (frameworks cut "
                       "between blocks); cut at block boundaries or choose another --pp or --vpp",
                       b->plan->pp, b->plan->vpp, (int)k, (int)L->router, (int)L->last_fwd,
                       (int)c0, (int)c1);
    }
    return MT_OK;
}

const mt_pass mt_pass_moecut = {
    .name = "moecut",
    .prepare = moecut_prepare,
    .release = moecut_release,
    .analyse = moecut_analyse,
};
