/* cli/planopts.c — see planopts.h. */
#include "cli/planopts.h"

#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "perfmodel/gpuspec.h"
#include "util/units.h"

void mt_planopts_init(mt_planopts *o) {
    memset(o, 0, sizeof *o);
    mt_plan_init(&o->plan);
    mt_netopts_init(&o->net);
    mt_trace_load_opts_init(&o->topts);
    mt_pm_opts_init(&o->pm);
    o->gpus_per_node = 8;
    o->host_model = MT_HOST_AUTO;
    o->host_scale = 1;
    o->op_scale = 1;
}

void mt_planopts_help(FILE *out) {
    fprintf(out,
            "  --dp D --tp T --pp P  data-, tensor- and pipeline-parallel sizes\n"
            "  --strategy S          dp (all-reduce after backward, as DataParallel), ddp (bucketed,\n"
            "                        overlapping backward; the default data-parallel mode), tp, pp:\n"
            "                        with no sizes given, all N GPUs go to that strategy\n"
            "  --batch GLOBAL        global batch (simulate's default: the traced batch per replica;\n"
            "                        compare's: see above)\n"
            "  --micro-batches M     pipeline micro-batches (default P)\n"
            "  --schedule gpipe|1f1b pipeline schedule (default 1f1b)\n"
            "  --bucket SIZE         DDP bucket size (default 25MiB; the first bucket filled in\n"
            "                        backward is capped at --first-bucket, default 1MiB, as PyTorch)\n"
            "  --placement ORDER     rank order of t, p, d, innermost first (default tpd: TP ranks\n"
            "                        adjacent, then stages, then replicas)\n"
            "  --algo ring|tree|direct|hier|ringflow   collective algorithm (default ring)\n"
            "  --ring-model auto|steps|flow   ring all-reduce/reduce-scatter/all-gather as every\n"
            "                        step's sends (steps, O(N^2) sends) or as N pipelined flows\n"
            "                        plus the per-step latencies (flow, O(N)); both give\n"
            "                        2(N-1)/N S/B + 2(N-1) alpha on uniform links. auto: steps\n"
            "                        up to 64 ranks, flow above (default)\n"
            "  --chunks C            collective pipeline chunks (default by algorithm)\n"
            "  --gpus-per-node G     hier: ranks per node (default 8)\n"
            "  --gpu-mem SIZE        warn when a GPU's estimated peak memory exceeds SIZE\n"
            "                        (default: the --target-gpu's memory from the GPU table, else\n"
            "                        the traced GPU's when known)\n"
            "Operator times (perfmodel/, see mitosis perfmodel --help):\n"
            "  --perf-model trace|linear|roofline  how a resized or moved op's time is predicted:\n"
            "                        trace scales batch-dependent ops proportionally (default),\n"
            "                        linear uses a fitted a*FLOPs + b*bytes + c per op class,\n"
            "                        roofline scales by FLOPs or bytes against the GPU's peaks;\n"
            "                        every op keeps its measured residual\n"
            "  --model FILE          fitted model.json (mitosis perfmodel fit); linear without it\n"
            "                        fits on the trace itself\n"
            "  --target-gpu NAME     predict for another GPU (mitosis perfmodel gpus lists them)\n"
            "  --gpu-specs FILE      extra GPU table (JSON)\n"
            "  --trace-gpu NAME      the GPU the trace ran on, when the trace does not say (TrioSim CSV)\n"
            "Host (CPU) side (extrapolate/hostmodel.h):\n"
            "  --host-model none|trace  trace: each GPU's host thread replays the trace's CPU time per\n"
            "                        op, launches kernels (they cannot start before launch + launch\n"
            "                        latency) and blocks at synchronising calls; none: GPU work only.\n"
            "                        Default trace when the trace has kernel launches, else none\n"
            "  --host-scale F        multiply the traced host (CPU) times by F: a faster (F < 1) or\n"
            "                        slower CPU, or the profiler's own overhead taken out (default 1)\n"
            "Calibration (the profiler slows the step it records; see cli/calibrate.h):\n"
            "  --calibrate           scale the traced times so that one GPU at the traced batch takes\n"
            "                        the step time measured without the profiler, read from the\n"
            "                        meta.json beside the trace (tracer/collect.py writes it): host\n"
            "                        times under the host model, else operator times\n"
            "  --measured-ms MS      the same, to a step time you measured yourself\n"
            "Trace:\n"
            "  --step N              which ProfilerStep of the trace (see mitosis inspect)\n");
}

/* Flags whose value is parsed by one of plan.h's, collective.h's or perfmodel.h's parsers. */
static int take_named(mt_planopts *o, const char *f, const char *v, mt_error *err) {
    if (!strcmp(f, "--strategy")) {
        if (!v) return mt_fail(err, MT_EINVAL, "--strategy needs dp, ddp, tp or pp"), -1;
        if (strcmp(v, "dp") && strcmp(v, "ddp") && strcmp(v, "tp") && strcmp(v, "pp"))
            return mt_fail(err, MT_EINVAL, "unknown --strategy '%s' (use dp, ddp, tp or pp)", v), -1;
        o->strategy = v;
        if (!strcmp(v, "dp")) o->plan.dp_mode = MT_DP_SYNC;
        if (!strcmp(v, "ddp")) o->plan.dp_mode = MT_DP_DDP;
    } else if (!strcmp(f, "--schedule")) {
        if (!v) return mt_fail(err, MT_EINVAL, "--schedule needs gpipe or 1f1b"), -1;
        if (mt_pp_schedule_parse(v, &o->plan.schedule, err) != MT_OK) return -1;
        o->schedule_set = 1;
    } else if (!strcmp(f, "--placement")) {
        if (!v) return mt_fail(err, MT_EINVAL, "--placement needs an order such as tpd"), -1;
        if (mt_placement_parse(v, o->plan.placement, err) != MT_OK) return -1;
    } else if (!strcmp(f, "--algo")) {
        if (!v) return mt_fail(err, MT_EINVAL, "--algo needs ring, tree, direct, hier or ringflow"), -1;
        if (mt_coll_algo_parse(v, &o->plan.algo, err) != MT_OK) return -1;
    } else if (!strcmp(f, "--perf-model")) {
        if (!v || mt_pm_kind_parse(v, &o->pm.kind) != 0)
            return mt_fail(err, MT_EINVAL, "--perf-model needs trace, linear or roofline (got '%s')",
                           v ? v : ""), -1;
    } else if (!strcmp(f, "--model") || !strcmp(f, "--target-gpu") || !strcmp(f, "--gpu-specs") ||
               !strcmp(f, "--trace-gpu")) {
        if (!v) return mt_fail(err, MT_EINVAL, "%s needs a value", f), -1;
        if (!strcmp(f, "--model")) o->pm.model_path = v;
        else if (!strcmp(f, "--trace-gpu")) o->pm.trace_gpu = v;
        else if (!strcmp(f, "--target-gpu")) o->pm.target_gpu = v;
        else o->pm.gpu_specs_path = v;
    } else if (!strcmp(f, "--host-scale")) {
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        if (!v || *end || !(x > 0) || x > 1e6)
            return mt_fail(err, MT_EINVAL, "--host-scale needs a factor > 0 such as 0.5 (got '%s')", v ? v : ""), -1;
        o->host_scale = x;
    } else if (!strcmp(f, "--measured-ms")) {
        char *end = NULL;
        double x = v ? strtod(v, &end) : 0;
        if (!v || *end || !(x > 0) || x > 1e9)
            return mt_fail(err, MT_EINVAL, "--measured-ms needs the measured step time in ms, > 0 (got '%s')",
                           v ? v : ""), -1;
        o->measured_ms = x;
    } else if (!strcmp(f, "--host-model")) {
        if (v && !strcmp(v, "none")) o->host_model = MT_HOST_NONE;
        else if (v && !strcmp(v, "trace")) o->host_model = MT_HOST_TRACE;
        else return mt_fail(err, MT_EINVAL, "--host-model needs none or trace (got '%s')", v ? v : ""), -1;
    } else if (!strcmp(f, "--ring-model")) {
        if (v && !strcmp(v, "auto")) o->plan.ringflow_above = 64;
        else if (v && !strcmp(v, "steps")) o->plan.ringflow_above = -1;
        else if (v && !strcmp(v, "flow")) o->plan.ringflow_above = 0;
        else return mt_fail(err, MT_EINVAL, "--ring-model needs auto, steps or flow"), -1;
    } else if (!strcmp(f, "--bucket") || !strcmp(f, "--gpu-mem") || !strcmp(f, "--first-bucket")) {
        double b;
        if (!v || mt_parse_bytes(v, &b, err) != MT_OK || b <= 0)
            return mt_fail(err, MT_EINVAL, "%s needs a size such as 25MiB or 80GB (got '%s')", f,
                           v ? v : ""), -1;
        if (!strcmp(f, "--bucket")) o->plan.bucket_bytes = b;
        else if (!strcmp(f, "--first-bucket")) o->plan.first_bucket_bytes = b;
        else o->gpu_mem = b;
    } else {
        return 0;
    }
    return 1;
}

int mt_planopts_take(mt_planopts *o, int argc, char **argv, int *i, mt_error *err) {
    int t = mt_netopts_take(&o->net, argc, argv, i, err);
    if (t) return t;
    const char *f = argv[*i], *v = *i + 1 < argc ? argv[*i + 1] : NULL;
    if (!strcmp(f, "--help") || !strcmp(f, "-h")) return 2;
    if (!strcmp(f, "--calibrate")) {
        o->calibrate = 1;
        (*i)++;
        return 1;
    }
    if (f[0] != '-' || !f[1]) {
        if (o->n_paths >= MT_PLANOPTS_MAX_PATHS) return mt_fail(err, MT_EINVAL, "too many trace paths"), -1;
        o->paths[o->n_paths++] = f;
        (*i)++;
        return 1;
    }
    /* Integer flags: where the value goes and its range. */
    int32_t step = 0, batch = 0;
    const struct {
        const char *flag;
        int32_t *dst;
        long lo, hi;
    } ints[] = {
        {"--gpus", &o->plan.gpus, 1, 1 << 20},       {"--dp", &o->plan.dp, 1, 1 << 20},
        {"--tp", &o->plan.tp, 1, 1 << 20},           {"--pp", &o->plan.pp, 1, 1 << 20},
        {"--micro-batches", &o->plan.micro_batches, 1, 1 << 20},
        {"--chunks", &o->plan.chunks, 0, 4096},      {"--gpus-per-node", &o->gpus_per_node, 1, 1 << 20},
        {"--step", &step, 0, 1 << 30},               {"--batch", &batch, 1, 1 << 30},
    };
    for (size_t k = 0; k < sizeof ints / sizeof ints[0]; k++) {
        if (strcmp(f, ints[k].flag)) continue;
        if (!mt_cli_int(f, v, ints[k].lo, ints[k].hi, ints[k].dst, err)) return -1;
        if (ints[k].dst == &step) o->topts.step = step;
        if (ints[k].dst == &batch) o->plan.global_batch = batch;
        *i += 2;
        return 1;
    }
    int r = take_named(o, f, v, err);
    if (r > 0) *i += 2;
    return r;
}

mt_plan mt_planopts_plan(const mt_planopts *o, int32_t gpus) {
    mt_plan p = o->plan;
    if (gpus > 0) p.gpus = gpus;
    if (o->strategy && !p.dp && !p.tp && !p.pp) {
        if (!strcmp(o->strategy, "tp")) p.tp = p.gpus;
        else if (!strcmp(o->strategy, "pp")) p.pp = p.gpus;
        else p.dp = p.gpus;
    }
    return p;
}

double mt_planopts_mem_limit(const mt_planopts *o, const trace *t) {
    if (o->gpu_mem > 0) return o->gpu_mem;
    if (o->pm.target_gpu) { /* the target GPU's memory (0 when the table does not know it) */
        mt_gpu_table *tab = NULL;
        double m = 0;
        if (mt_gpu_table_new(o->pm.gpu_specs_path, &tab, NULL) == MT_OK) {
            const mt_gpu_spec *g = mt_gpu_find(tab, o->pm.target_gpu);
            m = g ? g->mem_bytes : 0;
        }
        mt_gpu_table_free(tab);
        return m;
    }
    return (double)t->device_mem_bytes;
}

mt_status mt_planopts_load(const mt_planopts *o, trace **t, mt_perfmodel **pm, mt_error *err) {
    *t = NULL;
    *pm = NULL;
    mt_status rc = mt_trace_load(o->paths, o->n_paths, &o->topts, t, err);
    if (rc == MT_OK) rc = mt_trace_check_timed(*t, err);
    if (rc == MT_OK) rc = mt_perfmodel_new(*t, &o->pm, pm, err);
    if (rc != MT_OK) {
        mt_trace_free(*t);
        *t = NULL;
        return rc;
    }
    return MT_OK;
}

void mt_planopts_warn(const mt_perfmodel *pm, const char *cmd) {
    const char *w = mt_perfmodel_warning(pm);
    if (w && *w) fprintf(stderr, "mitosis %s: warning: %s\n", cmd, w);
}
