/* extrapolate/statemem.c — parameters, gradients and optimizer state per GPU (statemem.h). */
#include "extrapolate/statemem.h"
#include "extrapolate/precision.h"

#include <math.h>

int32_t mt_state_shard(const mt_plan *pl) {
    int32_t cp = pl->cp > 1 ? pl->cp : 1;
    if (mt_plan_replicas(pl) * cp <= 1 || (pl->zero <= 0 && !pl->fsdp && !pl->dist_opt)) return 1;
    return mt_plan_shard(pl) * cp;
}

/* n bytes over k ranks: each holds ceil(n / k) (a flat buffer padded to a multiple of k). */
static double shard_of(double n, int32_t k) { return k > 1 ? ceil(n / k - 1e-9) : n; }

static double whole(double x) { return x > 0 ? ceil(x - 1e-6) : 0; }

mt_state_mem mt_state_memory_scaled(const mt_plan *pl, const mt_state_bytes *w, const mt_prec_scale *sc) {
    static const mt_prec_scale traced = {1, 1, 1, 1, 0, 1};
    if (!sc) sc = &traced;
    int32_t k = mt_state_shard(pl);
    int params_sharded = k > 1 && (pl->zero >= 3 || pl->fsdp);
    int grads_sharded = k > 1 && (pl->zero >= 2 || pl->fsdp);
    double rep = whole(w->replicated), own = whole(w->owned), mine = shard_of(rep, k);
    mt_state_mem m;
    m.params = whole(own * sc->param) +
               (params_sharded ? whole(mine * sc->shard) + whole(w->gathered * sc->param) : whole(rep * sc->param));
    m.grads = whole((own + (grads_sharded ? mine : rep)) * sc->grad);
    m.optimizer = whole(w->opt_per_param * sc->optim * (own + mine)) +
                  whole(sc->master * (own + (params_sharded ? 0 : mine)));
    return m;
}

mt_state_mem mt_state_memory(const mt_plan *pl, const mt_state_bytes *w) { return mt_state_memory_scaled(pl, w, NULL); }
