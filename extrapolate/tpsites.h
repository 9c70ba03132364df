/* extrapolate/tpsites.h — the tensor-parallel sites of a trace's forward pass, recognised from ops
 * and tensors (no model names): what `mitosis inspect` reports and docs/recognition.md describes.
 *
 *   fused_qkv   a linear whose output is 3x its input width (nanoGPT c_attn, timm qkv);
 *   gqa         three linears in a row reading one input (q, k, v) where k and v are equally wide and
 *               narrower than q (grouped-query attention: q_width / kv_width query heads per K/V head);
 *   swiglu      two linears reading one input with the same weight shape, one of them through
 *               silu/gelu/sigmoid within a few ops (gate and up of a SwiGLU/GeGLU MLP);
 *   rmsnorm     an rsqrt followed within 4 ops by a mul reading a 1-D weight (x * rsqrt(mean(x^2) + e)
 *               * w; a fused rms_norm op counts too); layernorm: the layer_norm ops;
 *   rotary      rotations of rotary position embeddings: a neg followed within 2 ops by a cat
 *               (rotate_half), or a view_as_complex (the complex form), one per q and per k.
 * Invariant: counts only; nothing here changes how a plan splits ops (pass_tp.c's kinds do).
 * Cost: O(ops x 8).
 */
#ifndef MT_EXTRAPOLATE_TPSITES_H
#define MT_EXTRAPOLATE_TPSITES_H

#include <stdint.h>

#include "tracer/trace.h"

typedef struct mt_tp_sites {
    int32_t linears;            /* forward ops of TP kind LINEAR */
    int32_t fused_qkv, gqa, swiglu, rmsnorm, layernorm, rotary;
    int64_t gqa_q_width, gqa_kv_width; /* of the first GQA site */
    int32_t gqa_op;             /* its k projection, -1 */
} mt_tp_sites;

void mt_tp_sites_find(const mt_trace *t, mt_tp_sites *s);

#endif
