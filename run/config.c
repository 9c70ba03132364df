/* run/config.c — see config.h. */
#include "run/config.h"

#include <string.h>

#include "extrapolate/traced.h"
#include "perfmodel/gpuspec.h"

mt_status mt_run_config_init(mt_run_config *c, mt_error *err) {
    memset(c, 0, sizeof *c);
    mt_trace_load_opts_init(&c->topts);
    mt_plan_init(&c->plan);
    c->strategy = MT_STRATEGY_NONE;
    c->gpus_per_node = 8;
    mt_netcfg_init(&c->net);
    mt_pm_opts_init(&c->pm);
    c->host_model = MT_HOST_AUTO;
    c->host_scale = 1;
    c->op_scale = 1;
    c->comm_slowdown = MT_COMM_SLOW_AUTO;
    c->seed = -1;
    if (!(c->scenario = mt_scenario_new())) return mt_fail(err, MT_ENOMEM, "out of memory creating a scenario");
    return MT_OK;
}

void mt_run_config_free(mt_run_config *c) {
    if (!c) return;
    mt_scenario_free(c->scenario);
    c->scenario = NULL;
}

mt_status mt_run_config_add_path(mt_run_config *c, const char *path, mt_error *err) {
    if (c->n_paths >= MT_RUN_MAX_PATHS)
        return mt_fail(err, MT_EINVAL, "too many trace paths (at most %d: a folder, or a trace's files)",
                       MT_RUN_MAX_PATHS);
    c->paths[c->n_paths++] = path;
    return MT_OK;
}

mt_plan mt_run_plan(const mt_run_config *c, int32_t gpus) {
    mt_plan p = c->plan;
    if (gpus > 0) p.gpus = gpus;
    if (c->seed >= 0) p.expert_seed = (uint64_t)c->seed; /* --seed also seeds --expert-skew */
    if (c->strategy == MT_STRATEGY_DP) p.dp_mode = MT_DP_SYNC;
    if (c->strategy == MT_STRATEGY_DDP) p.dp_mode = MT_DP_DDP;
    if (c->strategy != MT_STRATEGY_NONE && !p.dp && !p.tp && !p.pp) {
        if (c->strategy == MT_STRATEGY_TP) p.tp = p.gpus;
        else if (c->strategy == MT_STRATEGY_PP) p.pp = p.gpus;
        else p.dp = p.gpus;
    }
    return p;
}

mt_status mt_run_check_gpus(const mt_run_config *c, const mt_trace *t, mt_error *err) {
    if (c->plan.gpus || c->plan.dp || c->plan.tp || c->plan.pp) return MT_OK;
    mt_traced_plan tp;
    mt_traced_plan_read(t, &tp);
    if (tp.multi_rank) return MT_OK;
    return mt_fail(err, MT_EINVAL, "--gpus is required (or give --dp/--tp/--pp): %s is one GPU's trace (only the trace "
                   "of one rank of a multi-GPU job, with its distributedInfo, defaults to the job's world size)",
                   t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "the trace");
}

double mt_run_mem_limit(const mt_run_config *c, const mt_trace *t, const char **source) {
    const char *src_local;
    if (!source) source = &src_local;
    if (c->gpu_mem > 0) {
        *source = "--gpu-mem";
        return c->gpu_mem;
    }
    if (c->pm.target_gpu) { /* the target GPU's memory (0 when the table does not know it) */
        mt_gpu_table *tab = NULL;
        double m = 0;
        if (mt_gpu_table_new(c->pm.gpu_specs_path, &tab, NULL) == MT_OK) {
            const mt_gpu_spec *g = mt_gpu_find(tab, c->pm.target_gpu);
            m = g ? g->mem_bytes : 0;
        }
        mt_gpu_table_free(tab);
        *source = "the target GPU's; --gpu-mem changes it";
        return m;
    }
    *source = "the traced GPU's; --gpu-mem changes it";
    return (double)t->device_mem_bytes;
}
