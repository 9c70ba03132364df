/* run/device.c — see device.h. */
#include "run/device.h"

#include <stdio.h>
#include <string.h>

#include "netmodels/topologies.h"
#include "perfmodel/gpuspec.h"

static void clock_note(const mt_pm_opts *pm, mt_run_device *out);

static const char *trace_path(const mt_trace *t) {
    return t->kineto_path ? t->kineto_path : t->et_path ? t->et_path : "the trace";
}

/* The table's name for a GPU named by the user (H100 -> H100-SXM); the name itself when the table
 * does not know it (the performance model then refuses it, listing the known ones). */
static const char *canonical(const mt_pm_opts *pm, const char *name, char *buf, size_t len) {
    mt_gpu_table *tab = NULL;
    snprintf(buf, len, "%s", name);
    if (mt_gpu_table_new(pm->gpu_specs_path, &tab, NULL) == MT_OK) {
        const mt_gpu_spec *g = mt_gpu_find(tab, name);
        if (g) snprintf(buf, len, "%s", g->name);
    }
    mt_gpu_table_free(tab);
    return buf;
}

/* ", not the topology's X: --target-gpu X moves them" when the topology promises a GPU other than
 * the traced one (a GPU trace keeps its own times unless a target is named), else "". */
static const char *other_gpu(const mt_pm_opts *pm, const char *traced, const char *topology, char *buf,
                             size_t len) {
    const char *topo = mt_topo_spec_gpu(topology);
    buf[0] = '\0';
    if (!topo || !traced) return buf;
    mt_gpu_table *tab = NULL;
    if (mt_gpu_table_new(pm->gpu_specs_path, &tab, NULL) == MT_OK) {
        const mt_gpu_spec *a = mt_gpu_find(tab, traced), *b = mt_gpu_find(tab, topo);
        if (a && b && a != b)
            snprintf(buf, len, ", not the topology's %s: --target-gpu %s moves them there", b->name, b->name);
    }
    mt_gpu_table_free(tab);
    return buf;
}

static mt_status cpu_trace(mt_pm_opts *pm, const char *topology, const mt_trace *t, mt_run_device *out,
                           mt_error *err) {
    const char *path = trace_path(t);
    if (pm->trace_gpu)
        return mt_fail(err, MT_EINVAL, "--trace-gpu %s: %s was recorded on a CPU (says %s), so its times are not %s "
                       "times; to predict a GPU, name it with --target-gpu (analytical roofline model)", pm->trace_gpu,
                       path, t->recorded_on.source, pm->trace_gpu);
    const char *topo_gpu = mt_topo_spec_gpu(topology);
    out->target = pm->target_gpu ? pm->target_gpu : topo_gpu;
    out->target_from = pm->target_gpu ? "--target-gpu" : topo_gpu ? "the topology" : NULL;
    if (!out->target) {
        if (pm->kind == MT_PM_ROOFLINE || pm->kind == MT_PM_ANALYTICAL)
            return mt_fail(err, MT_EINVAL, "--perf-model %s: %s was recorded on a CPU, so there is no GPU to take "
                           "peaks from: name the GPU to predict with --target-gpu (or a topology of GPUs such as "
                           "dgx-h100)", mt_pm_kind_name(pm->kind), path);
        out->cpu_ranks = 1;
        snprintf(out->label, sizeof out->label, "CPU processes: the trace's CPU times, %s model (trace recorded on "
                 "CPU; --target-gpu predicts a GPU)", mt_pm_kind_name(pm->kind));
        return MT_OK;
    }
    char name[64];
    canonical(pm, out->target, name, sizeof name);
    if (pm->kind == MT_PM_LINEAR)
        return mt_fail(err, MT_EINVAL, "--perf-model linear: %s was recorded on a CPU and the linear model keeps each "
                       "op's measured (CPU) time; predict %s with --perf-model analytical (the default for a CPU "
                       "trace and a GPU)", path, name);
    pm->kind = MT_PM_ANALYTICAL;
    pm->target_gpu = out->target;
    out->analytical = 1;
    snprintf(out->label, sizeof out->label, "analytical roofline for %s (trace recorded on CPU: its times are not "
             "used; GPU from %s)", name, out->target_from);
    clock_note(pm, out);
    return MT_OK;
}

mt_status mt_run_device_apply(mt_pm_opts *pm, const char *topology, const mt_trace *t, mt_run_device *out,
                              mt_error *err) {
    memset(out, 0, sizeof *out);
    out->recorded_on = t->recorded_on;
    if (t->recorded_on.kind == TRACE_DEV_CPU) return cpu_trace(pm, topology, t, out, err);
    const char *traced = t->device_name ? t->device_name : pm->trace_gpu;
    char name[64], note[160];
    out->target = pm->target_gpu;
    out->target_from = pm->target_gpu ? "--target-gpu" : NULL;
    out->analytical = pm->kind == MT_PM_ANALYTICAL;
    if (out->analytical)
        snprintf(out->label, sizeof out->label, "analytical roofline for %s (the trace's times are not used)",
                 out->target ? canonical(pm, out->target, name, sizeof name) : traced ? traced : "the traced GPU");
    else if (out->target)
        snprintf(out->label, sizeof out->label, "%s model, moved from %s to %s", mt_pm_kind_name(pm->kind),
                 traced ? traced : "the traced GPU", canonical(pm, out->target, name, sizeof name));
    else
        snprintf(out->label, sizeof out->label, "%s model on the traced %s (%s)%s", mt_pm_kind_name(pm->kind),
                 t->recorded_on.kind == TRACE_DEV_GPU ? "GPU" : "device", traced ? traced : "model unknown",
                 other_gpu(pm, traced, topology, note, sizeof note));
    clock_note(pm, out);
    return MT_OK;
}

mt_status mt_run_device_resolve(mt_run_config *c, const mt_trace *t, mt_run_device *out, mt_error *err) {
    MT_CHECK(mt_run_device_apply(&c->pm, c->net.topology, t, out, err));
    if (t->recorded_on.kind != TRACE_DEV_CPU || !out->analytical) return MT_OK;
    const char *path = trace_path(t);
    if (c->calibrate || c->measured_ms > 0)
        return mt_fail(err, MT_EINVAL, "%s: %s was recorded on a CPU: its measured step is a CPU step, and the "
                       "analytical %s times cannot be calibrated to it (leave the calibration out)",
                       c->calibrate ? "--calibrate" : "--measured-ms", path, out->target);
    if (c->host_model == MT_HOST_TRACE)
        return mt_fail(err, MT_EINVAL, "--host-model trace: %s was recorded on a CPU, where an op's host time is "
                       "its compute too; predict %s with --host-model none (the default for this trace)", path,
                       out->target);
    return MT_OK;
}

void mt_run_device_note_op_scale(mt_run_device *d, double op_scale, const char *source) {
    const char *tag = "(the trace's times are not used)";
    char *at = strstr(d->label, tag);
    if (!d->analytical || op_scale == 1 || !at) return;
    snprintf(at, sizeof d->label - (size_t)(at - d->label), "(its times scaled by %.4f to the step measured without "
             "the profiler, %s; --no-calibrate keeps the model's own)", op_scale, source && *source ? source : "meta.json");
}

/* " at N MHz" for --gpu-clock on the label. */
static void clock_note(const mt_pm_opts *pm, mt_run_device *out) {
    size_t n = strlen(out->label);
    if (pm->gpu_clock_MHz > 0 && n + 1 < sizeof out->label)
        snprintf(out->label + n, sizeof out->label - n, ", at %.0f MHz (--gpu-clock)", pm->gpu_clock_MHz);
}

int mt_run_device_host_warning(const mt_run_device *d, double ops_per_gpu, double step_ms, char *buf, size_t len) {
    if (len) buf[0] = 0;
    double lo = ops_per_gpu * MT_EAGER_HOST_US_LO / 1e3, hi = ops_per_gpu * MT_EAGER_HOST_US_HI / 1e3;
    if (!d->analytical || d->cpu_ranks || !(step_ms > 0) || lo <= 0.5 * step_ms) return 0;
    snprintf(buf, len, "GPU time only: eager PyTorch needs host time per operator too (%.1f to %.1f us on the lent "
             "H100, docs/devices.md), so this step's %.0f operators per GPU need about %.1f to %.1f ms of host against "
             "%.3f ms predicted: it is likely host-bound unless CUDA graphs or torch.compile remove that", MT_EAGER_HOST_US_LO,
             MT_EAGER_HOST_US_HI, ops_per_gpu, lo, hi, step_ms);
    return 1;
}
