/* perfmodel/perfmodel.h — operator time models: how long a traced op takes at another batch size,
 * tensor split or GPU.
 *
 * Four kinds (`simulate --perf-model trace|linear|roofline|analytical`):
 *   trace      the traced time scaled proportionally (batch-dependent ops × batch factor, / split);
 *   linear     a regression per operator class, time = a·FLOPs + b·bytes + c with a, b, c >= 0,
 *              fitted on the trace itself or loaded from a model.json (`mitosis perfmodel fit`);
 *   roofline   time ∝ max(FLOPs / peak, bytes / bandwidth) on the trace's GPU;
 *   analytical the time on the target GPU (else the traced one) from the op's work alone, measured
 *              times unused (perfmodel/analytical.h): what a CPU-recorded trace is predicted with.
 * Whatever the kind but analytical, a resized op keeps its measured residual:
 *     new time = measured × predicted(new work) / predicted(traced work),
 * so an op the model mispredicts at the traced size is still right there. Ops without shapes,
 * ops of an unfitted class and communication ops fall back to proportional scaling; ops of class
 * `none` (views, allocation, host-only) keep their time under linear and roofline.
 * With a target GPU (`--target-gpu`), every op moves from the trace's GPU to the target keeping
 * its traced efficiency (achieved / roofline) on the same kind of unit, at the unit's typical
 * efficiency on another kind (a TF32 convolution on a V100 runs on CUDA cores), never below the
 * target's roofline (perfmodel/mathunit.h); which fp32 ops use TF32 is the math mode (--tf32).
 *
 * Files: work.h (classes, FLOPs/bytes), fit.h (NNLS), gpuspec.h (GPU table, roofline),
 * mathunit.h (units and moving an op between GPUs).
 */
#ifndef MT_PERFMODEL_PERFMODEL_H
#define MT_PERFMODEL_PERFMODEL_H

#include <stdint.h>

#include <jansson.h>

#include "perfmodel/analytical.h"
#include "perfmodel/fit.h"
#include "perfmodel/gpuspec.h"
#include "perfmodel/mathunit.h"
#include "perfmodel/work.h"
#include "tracer/trace.h"
#include "util/err.h"

typedef enum { MT_PM_TRACE = 0, MT_PM_LINEAR, MT_PM_ROOFLINE, MT_PM_ANALYTICAL, MT_PM_KIND_COUNT } mt_pm_kind;

#define MT_PM_KIND_CHOICES "trace|linear|roofline|analytical"

const char *mt_pm_kind_name(mt_pm_kind k);
/* "trace", "linear", "roofline", "analytical" -> 0 and *out; -1 for anything else. */
int mt_pm_kind_parse(const char *s, mt_pm_kind *out);

typedef struct mt_pm_opts {
    mt_pm_kind kind;
    const char *model_path;     /* fitted model.json; NULL: fit on the trace itself (linear) */
    const char *target_gpu;     /* NULL: the trace's own GPU */
    const char *gpu_specs_path; /* extra GPU table JSON, NULL */
    const char *trace_gpu;      /* the traced GPU when the trace does not name it (TrioSim CSV
                                   has no device); NULL: the trace's own device */
    mt_tf32 tf32;               /* which fp32 matrix ops ran and run on TF32 (default: conv) */
    double gpu_clock_MHz;       /* the predicted GPU (target, else traced) at this clock; 0: its own */
} mt_pm_opts;

void mt_pm_opts_init(mt_pm_opts *o);

/* ---- the linear model: one fit per operator class ---------------------------------------- */

enum { MT_LIN_FLOPS = 0, MT_LIN_BYTES = 1, MT_LIN_CONST = 2 }; /* columns of mt_fit_result */

typedef struct mt_linmodel {
    char device[128];                 /* GPU (or CPU) the data came from; "" unknown */
    int n_traces;                     /* traces fitted on */
    int64_t n_csv_rows;               /* CSV rows fitted on */
    mt_fit_result cls[MT_OPC_COUNT];  /* coef[0] ns/FLOP, coef[1] ns/byte, coef[2] ns */
} mt_linmodel;

/* Fitting data: (class, FLOPs, bytes, measured ns) rows from traces and CSV files. */
typedef struct mt_pm_data mt_pm_data;

mt_status mt_pm_data_new(mt_pm_data **out, mt_error *err);
void mt_pm_data_free(mt_pm_data *d);
mt_status mt_pm_data_add(mt_pm_data *d, mt_opclass c, double flops, double bytes, double time_ns,
                         mt_error *err);
/* One row per op with shapes and device time (classes none and comm are left out). */
mt_status mt_pm_data_add_trace(mt_pm_data *d, const mt_trace *t, mt_error *err);
/* A CSV of measured ops (header required, columns by name, any order):
 *   op            aten or autograd name ("aten::conv2d", "ConvolutionBackward0"); required
 *   time_us | time_ns | time_ms   measured device time; one required
 *   input_shapes  "[512,3,224,224];[64,3,3,3];[64]" (or a JSON list of lists); "[]" a scalar
 *   output_shapes same form, optional
 *   dtype         float, c10::BFloat16, ... (default float)
 *   phase         forward, backward, optimizer, other (default: backward for *Backward names)
 *   flops, bytes  override the derived work; class  overrides the class (names as in show)
 * Errors name the file and line. */
mt_status mt_pm_data_add_csv(mt_pm_data *d, const char *path, mt_error *err);
int64_t mt_pm_data_rows(const mt_pm_data *d);
/* Warning collected while adding (mixed devices); "" none. */
const char *mt_pm_data_warning(const mt_pm_data *d);

/* Fits every class with rows: compute classes on {FLOPs, bytes, 1}, the others on {bytes, 1},
 * rows weighted by 1/time (relative error). Classes without rows have used == 0. */
mt_status mt_linmodel_fit(const mt_pm_data *d, mt_linmodel *m, mt_error *err);
/* Predicted ns for the class, or -1 when the class has no fit. */
double mt_linmodel_predict_ns(const mt_linmodel *m, mt_opclass c, double flops, double bytes);
/* JSON: {"format": "mitosis-perfmodel", "version": 1, "device", "sources", "classes": {name:
 * {n, terms, ns_per_flop, ns_per_byte, ns, rel_rmse, warning}}}. Errors are one line naming the
 * file (and the JSON path). */
mt_status mt_linmodel_save(const mt_linmodel *m, const char *path, mt_error *err);
/* The same document as a new jansson object (`mitosis perfmodel show --json`). */
json_t *mt_linmodel_json(const mt_linmodel *m);
mt_status mt_linmodel_load(const char *path, mt_linmodel *m, mt_error *err);

/* ---- the op-time model bound to one trace ------------------------------------------------ */

typedef struct mt_perfmodel mt_perfmodel;

/* Precomputes the work of every op of t (t must outlive the model). Fails (one line) for an
 * unreadable or bad model.json or GPU table, an unknown --target-gpu, or a target/roofline model
 * whose trace device is not in the GPU table. Cost: O(ops + tensor uses) plus the fit. */
mt_status mt_perfmodel_new(const mt_trace *t, const mt_pm_opts *o, mt_perfmodel **out, mt_error *err);

/* Matches mt_optime_fn (extrapolate/program.h): ctx is the mt_perfmodel*. Returns ns, >= 0.
 * A trace other than the model's own is served too (work computed on the fly). O(1) for the
 * model's trace. */
double mt_perfmodel_op_time_ns(void *ctx, const mt_trace *t, int32_t op, double batch_factor,
                               int32_t tp_split);

void mt_perfmodel_free(mt_perfmodel *pm);

/* Warnings of the construction (degraded fits, device mismatch, ops without shapes); "" none. */
const char *mt_perfmodel_warning(const mt_perfmodel *pm);
const mt_work *mt_perfmodel_op_work(const mt_perfmodel *pm, int32_t op);
const mt_gpu_spec *mt_perfmodel_source_gpu(const mt_perfmodel *pm); /* NULL when unknown */
const mt_gpu_spec *mt_perfmodel_target_gpu(const mt_perfmodel *pm); /* NULL: same GPU */
mt_tf32 mt_perfmodel_tf32(const mt_perfmodel *pm); /* the TF32 mode it runs fp32 matrix ops in */
const mt_gpu_spec *mt_perfmodel_gpu(const mt_perfmodel *pm); /* the predicted GPU: target, else traced; NULL */

/* Roofline floor of op `op` of the model's trace on the target GPU (the traced one without a
 * target): max(FLOPs / peak of its unit, bytes / bandwidth) at batch_factor and tp_split, ns; 0
 * for ops without device work (views, allocation, communication, no shapes, no device time in
 * the trace: a CPU tensor's _foreach_add_) or an unknown GPU.
 * No op's predicted time on a target GPU is below it. O(1). */
double mt_perfmodel_op_floor_ns(const mt_perfmodel *pm, int32_t op, double batch_factor, int32_t tp_split);
/* The serial step's floor: the sum over ops of mt_perfmodel_op_floor_ns. O(ops). */
double mt_perfmodel_floor_ns(const mt_perfmodel *pm, double batch_factor, int32_t tp_split);

/* Serial single-GPU step: sum over ops of their predicted times, per phase (ns). */
void mt_perfmodel_step_ns(mt_perfmodel *pm, double batch_factor, int32_t tp_split,
                          double phase_ns[TRACE_PHASE_COUNT]);

#endif
