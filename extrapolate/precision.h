/* extrapolate/precision.h — the precision policy of a training job: the dtype parameters are gathered
 * and computed in, the dtype gradients are reduced (and held) in, whether an fp32 master copy of the
 * parameters exists, and the optimizer states' dtype.
 *
 * Named policies, as users write them (`--precision NAME[,part=DTYPE...]`):
 *   fp32        param fp32, reduce fp32, no master, optimizer fp32 (also torch.autocast over an fp32
 *               model: its parameters, gradients and states are fp32);
 *   bf16        pure bf16: param, reduce and optimizer states bf16, no master (the shipped Llama traces);
 *   bf16-mixed  param bf16, reduce fp32, master fp32, optimizer fp32: FSDP2's
 *               MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32) over fp32 sharded parameters,
 *               Megatron's bf16 with fp32 main grads and distributed optimizer, DeepSpeed's bf16 + fp32
 *               master and Adam;
 *   fp16-mixed  as bf16-mixed with fp16 parameters (loss scaling costs nothing here);
 *   fp8-mixed   bf16-mixed with the linear layers' GEMMs in FP8, as Transformer Engine (NeMo's and
 *               Megatron's fp8 recipes) or torchao's float8 linears (torchtitan) run them: weights
 *               still bf16 with an fp32 master, the GEMMs at the GPU's FP8 peak, the FP8 casts (with
 *               their amax) added as memory-bound work (perfmodel/fp8.h);
 *   traced      what the trace ran (the default).
 * Parts override a name or the traced policy: param=, reduce=, optim= take fp32|bf16|fp16; master=
 * takes fp32|none; gemm= takes fp8 (FP8 linear GEMMs) or traced.
 * The traced policy is read from the trace (mt_precision_traced): the weights', gradients' and
 * optimizer states' dtypes (bytes-weighted), no master copy (PyTorch's optimizers update the model's
 * own parameters).
 * What follows the policy (mt_prec_scale, asked over traced): parameters held and gathered, the
 * sharded parameters (the fp32 master where there is one: FSDP2 shards fp32 and gathers bf16),
 * gradients and their reduction's bytes, optimizer states, the master copy held with the optimizer
 * state where parameters are not sharded, and the optimizer step's time (memory-bound: bytes touched
 * per parameter). The forward and backward kernels run as traced.
 * Invariant: a resolved policy has every part set (param, reduce, optim a float dtype; master fp32 or
 * none); the scale of a policy over itself is 1 everywhere.
 */
#ifndef MT_EXTRAPOLATE_PRECISION_H
#define MT_EXTRAPOLATE_PRECISION_H

#include <stddef.h>

#include "tracer/trace.h"
#include "util/err.h"

typedef enum { MT_PREC_UNSET = 0, MT_PREC_FP32, MT_PREC_BF16, MT_PREC_FP16, MT_PREC_NONE } mt_prec_dtype;

typedef struct mt_precision {
    mt_prec_dtype param, reduce, master, optim; /* MT_PREC_UNSET: as traced; master MT_PREC_NONE: no master copy */
    char name[16];                         /* the named policy asked, "" none */
    int8_t fp8;                            /* 1: the linear layers' GEMMs in FP8 (gemm=fp8); 0 as traced */
} mt_precision;

#define MT_PRECISION_NAMES "fp32|bf16|bf16-mixed|fp16-mixed|fp8-mixed|traced"

/* spec: "NAME", "NAME,part=DTYPE,...", or parts alone, into *out (cleared first). One-line MT_EINVAL
 * naming --precision otherwise. */
mt_status mt_precision_parse(const char *spec, mt_precision *out, mt_error *err);
/* The policy t ran: parts from its tensors' dtypes (fp32 where unknown), no master. */
void mt_precision_traced(const mt_trace *t, mt_precision *out);
/* asked's parts over traced's: every part set. */
void mt_precision_resolve(const mt_precision *asked, const mt_precision *traced, mt_precision *out);
/* "bf16-mixed (param bf16, reduce fp32, master fp32, optimizer fp32)" or, unnamed, the matching name
 * or "custom (...)". */
const char *mt_precision_describe(const mt_precision *p, char *buf, size_t len);
const char *mt_prec_dtype_name(mt_prec_dtype d);
/* Bytes per element: 4, 2, 2; 0 for none or unset. */
int mt_prec_dtype_bytes(mt_prec_dtype d);

typedef struct mt_prec_scale { /* asked bytes per traced byte */
    double param;   /* parameters held whole and gathered, their all-gathers */
    double shard;   /* sharded parameters (ZeRO-3 / FSDP): the master's dtype where there is one */
    double grad;    /* gradients held and reduced */
    double optim;   /* optimizer states */
    double master;  /* master copy held with the optimizer states, per traced parameter byte (0 none) */
    double opt_time;/* the optimizer step's time: bytes touched per parameter */
} mt_prec_scale;

/* The scale from traced to asked (both resolved); states_per_param: optimizer state elements per
 * parameter (2 for Adam). */
void mt_precision_scale(const mt_precision *traced, const mt_precision *asked, double states_per_param,
                        mt_prec_scale *out);
/* Optimizer state elements per parameter in t (its state bytes over its parameter count and state dtype). */
double mt_precision_states_per_param(const mt_trace *t, const mt_precision *traced);

#endif
