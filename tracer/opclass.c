/* tracer/opclass.c — the operator classifier (see opclass.h): name tables and the questions
 * answered from them. Lists of names are tables (name_pat, name_class); the code walks them.
 */
#include "tracer/opclass.h"

#include <ctype.h>
#include <string.h>

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

/* ---- name patterns ---------------------------------------------------------------------- */
/* A pattern matches a whole name (EXACT), its start (PREFIX) or any part (SUB), looked for in
 * the op's name, its representative kind (kind, or the name when the op has none), or both. */
enum { EXACT, PREFIX, SUB };
enum { ON_NAME = 1, ON_KIND = 2, ON_BOTH = 3 };
typedef struct name_pat {
    const char *s;
    unsigned char how, on;
} name_pat;

static int pat_hit(const char *s, const name_pat *p) {
    if (!s) return 0;
    if (p->how == EXACT) return !strcmp(s, p->s);
    if (p->how == PREFIX) return starts(s, p->s);
    return strstr(s, p->s) != NULL;
}

static int any_pat(const char *name, const char *kind, const name_pat *tab, size_t n) {
    for (size_t i = 0; i < n; i++)
        if (((tab[i].on & ON_NAME) && pat_hit(name, &tab[i])) || ((tab[i].on & ON_KIND) && pat_hit(kind, &tab[i])))
            return 1;
    return 0;
}
#define ANY_PAT(name, kind, tab) any_pat((name), (kind), (tab), sizeof(tab) / sizeof((tab)[0]))

/* ---- classes ---------------------------------------------------------------------------- */

static const char *const class_names[MT_OPC_COUNT] = {
    [MT_OPC_NONE] = "none",
    [MT_OPC_CONV] = "conv",
    [MT_OPC_CONV_BWD] = "conv_bwd",
    [MT_OPC_MATMUL] = "matmul",
    [MT_OPC_MATMUL_BWD] = "matmul_bwd",
    [MT_OPC_ATTN] = "attention",
    [MT_OPC_ATTN_BWD] = "attention_bwd",
    [MT_OPC_ELEMWISE] = "elementwise",
    [MT_OPC_ELEMWISE_BWD] = "elementwise_bwd",
    [MT_OPC_NORM] = "norm",
    [MT_OPC_NORM_BWD] = "norm_bwd",
    [MT_OPC_SOFTMAX] = "softmax",
    [MT_OPC_SOFTMAX_BWD] = "softmax_bwd",
    [MT_OPC_POOL] = "pool",
    [MT_OPC_POOL_BWD] = "pool_bwd",
    [MT_OPC_EMBEDDING] = "embedding",
    [MT_OPC_EMBEDDING_BWD] = "embedding_bwd",
    [MT_OPC_LOSS] = "loss",
    [MT_OPC_LOSS_BWD] = "loss_bwd",
    [MT_OPC_OPTIMIZER] = "optimizer",
    [MT_OPC_COPY] = "copy",
    [MT_OPC_COMM] = "comm",
    [MT_OPC_UNKNOWN] = "unknown",
};

const char *mt_opclass_name(mt_opclass c) {
    return (unsigned)c < MT_OPC_COUNT ? class_names[c] : "?";
}

mt_opclass mt_opclass_parse(const char *name) {
    for (int c = 0; c < MT_OPC_COUNT; c++)
        if (name && !strcmp(name, class_names[c])) return (mt_opclass)c;
    return MT_OPC_COUNT;
}

int mt_opclass_is_compute(mt_opclass c) {
    return c == MT_OPC_CONV || c == MT_OPC_CONV_BWD || c == MT_OPC_MATMUL ||
           c == MT_OPC_MATMUL_BWD || c == MT_OPC_ATTN || c == MT_OPC_ATTN_BWD;
}

int mt_opclass_is_backward(mt_opclass c) {
    return c == MT_OPC_CONV_BWD || c == MT_OPC_MATMUL_BWD || c == MT_OPC_ATTN_BWD ||
           c == MT_OPC_ELEMWISE_BWD || c == MT_OPC_NORM_BWD || c == MT_OPC_SOFTMAX_BWD ||
           c == MT_OPC_POOL_BWD || c == MT_OPC_EMBEDDING_BWD || c == MT_OPC_LOSS_BWD;
}

/* Forward class -> its backward class (itself when it has none). */
mt_opclass mt_opclass_backward_of(mt_opclass c) {
    switch (c) {
    case MT_OPC_CONV: return MT_OPC_CONV_BWD;
    case MT_OPC_MATMUL: return MT_OPC_MATMUL_BWD;
    case MT_OPC_ATTN: return MT_OPC_ATTN_BWD;
    case MT_OPC_ELEMWISE: return MT_OPC_ELEMWISE_BWD;
    case MT_OPC_NORM: return MT_OPC_NORM_BWD;
    case MT_OPC_SOFTMAX: return MT_OPC_SOFTMAX_BWD;
    case MT_OPC_POOL: return MT_OPC_POOL_BWD;
    case MT_OPC_EMBEDDING: return MT_OPC_EMBEDDING_BWD;
    case MT_OPC_LOSS: return MT_OPC_LOSS_BWD;
    default: return c;
    }
}

/* Backward class -> the forward class whose formula its work derives from. */
mt_opclass mt_opclass_forward_of(mt_opclass c) {
    for (int f = 0; f < MT_OPC_COUNT; f++)
        if (mt_opclass_backward_of((mt_opclass)f) == c && f != (int)c) return (mt_opclass)f;
    return c;
}

typedef struct { const char *name; mt_opclass cls; } name_class;

/* aten names, without "aten::" and a trailing in-place '_'. */
static const name_class aten_tab[] = {
    {"conv1d", MT_OPC_CONV}, {"conv2d", MT_OPC_CONV}, {"conv3d", MT_OPC_CONV},
    {"convolution", MT_OPC_CONV}, {"_convolution", MT_OPC_CONV},
    {"cudnn_convolution", MT_OPC_CONV}, {"miopen_convolution", MT_OPC_CONV},
    {"mkldnn_convolution", MT_OPC_CONV}, {"conv_transpose1d", MT_OPC_CONV},
    {"conv_transpose2d", MT_OPC_CONV}, {"conv_transpose3d", MT_OPC_CONV},
    {"cudnn_convolution_transpose", MT_OPC_CONV}, {"thnn_conv2d", MT_OPC_CONV},
    {"_slow_conv2d_forward", MT_OPC_CONV}, {"_conv_depthwise2d", MT_OPC_CONV},
    {"conv_depthwise3d", MT_OPC_CONV}, {"_nnpack_spatial_convolution", MT_OPC_CONV},
    {"linear", MT_OPC_MATMUL}, {"addmm", MT_OPC_MATMUL}, {"mm", MT_OPC_MATMUL},
    {"bmm", MT_OPC_MATMUL}, {"matmul", MT_OPC_MATMUL}, {"baddbmm", MT_OPC_MATMUL},
    {"addbmm", MT_OPC_MATMUL}, {"mv", MT_OPC_MATMUL}, {"addmv", MT_OPC_MATMUL},
    {"dot", MT_OPC_MATMUL}, {"_addmm_activation", MT_OPC_MATMUL},
    {"_scaled_mm", MT_OPC_MATMUL}, {"mkldnn_linear", MT_OPC_MATMUL},
    {"_grouped_mm", MT_OPC_MATMUL}, {"grouped_mm", MT_OPC_MATMUL}, {"_scaled_grouped_mm", MT_OPC_MATMUL},
    {"scaled_dot_product_attention", MT_OPC_ATTN},
    {"_scaled_dot_product_flash_attention", MT_OPC_ATTN},
    {"_scaled_dot_product_efficient_attention", MT_OPC_ATTN},
    {"_scaled_dot_product_cudnn_attention", MT_OPC_ATTN},
    {"_scaled_dot_product_attention_math", MT_OPC_ATTN},
    {"_scaled_dot_product_flash_attention_for_cpu", MT_OPC_ATTN},
    {"_flash_attention_forward", MT_OPC_ATTN}, {"_flash_attention", MT_OPC_ATTN},
    {"_efficient_attention_forward", MT_OPC_ATTN}, {"_efficient_attention", MT_OPC_ATTN},
    {"layer_norm", MT_OPC_NORM}, {"native_layer_norm", MT_OPC_NORM},
    {"batch_norm", MT_OPC_NORM}, {"native_batch_norm", MT_OPC_NORM},
    {"_batch_norm_impl_index", MT_OPC_NORM}, {"cudnn_batch_norm", MT_OPC_NORM},
    {"miopen_batch_norm", MT_OPC_NORM}, {"_native_batch_norm_legit", MT_OPC_NORM},
    {"_native_batch_norm_legit_no_training", MT_OPC_NORM}, {"group_norm", MT_OPC_NORM},
    {"native_group_norm", MT_OPC_NORM}, {"instance_norm", MT_OPC_NORM},
    {"rms_norm", MT_OPC_NORM}, {"_fused_rms_norm", MT_OPC_NORM},
    {"softmax", MT_OPC_SOFTMAX}, {"_softmax", MT_OPC_SOFTMAX},
    {"log_softmax", MT_OPC_SOFTMAX}, {"_log_softmax", MT_OPC_SOFTMAX},
    {"max_pool1d", MT_OPC_POOL}, {"max_pool2d", MT_OPC_POOL}, {"max_pool3d", MT_OPC_POOL},
    {"max_pool2d_with_indices", MT_OPC_POOL}, {"max_pool3d_with_indices", MT_OPC_POOL},
    {"avg_pool1d", MT_OPC_POOL}, {"avg_pool2d", MT_OPC_POOL}, {"avg_pool3d", MT_OPC_POOL},
    {"adaptive_avg_pool1d", MT_OPC_POOL}, {"adaptive_avg_pool2d", MT_OPC_POOL},
    {"adaptive_avg_pool3d", MT_OPC_POOL}, {"_adaptive_avg_pool2d", MT_OPC_POOL},
    {"_adaptive_avg_pool3d", MT_OPC_POOL}, {"adaptive_max_pool2d", MT_OPC_POOL},
    {"mkldnn_max_pool2d", MT_OPC_POOL},
    {"embedding", MT_OPC_EMBEDDING}, {"embedding_dense", MT_OPC_EMBEDDING},
    {"embedding_bag", MT_OPC_EMBEDDING}, {"_embedding_bag", MT_OPC_EMBEDDING},
    {"embedding_sparse", MT_OPC_EMBEDDING},
    {"cross_entropy_loss", MT_OPC_LOSS}, {"nll_loss", MT_OPC_LOSS},
    {"nll_loss_nd", MT_OPC_LOSS}, {"nll_loss_forward", MT_OPC_LOSS}, {"nll_loss2d", MT_OPC_LOSS},
    {"nll_loss2d_forward", MT_OPC_LOSS}, {"mse_loss", MT_OPC_LOSS}, {"l1_loss", MT_OPC_LOSS},
    {"binary_cross_entropy", MT_OPC_LOSS}, {"binary_cross_entropy_with_logits", MT_OPC_LOSS},
    {"smooth_l1_loss", MT_OPC_LOSS}, {"huber_loss", MT_OPC_LOSS}, {"kl_div", MT_OPC_LOSS},
    {"_fused_adam", MT_OPC_OPTIMIZER}, {"_fused_adamw", MT_OPC_OPTIMIZER},
    {"_fused_sgd", MT_OPC_OPTIMIZER}, {"_fused_adagrad", MT_OPC_OPTIMIZER},
    {"copy", MT_OPC_COPY}, {"to", MT_OPC_COPY}, {"_to_copy", MT_OPC_COPY},
    {"clone", MT_OPC_COPY}, {"contiguous", MT_OPC_COPY}, {"cat", MT_OPC_COPY},
    {"_cat", MT_OPC_COPY}, {"stack", MT_OPC_COPY}, {"zero", MT_OPC_COPY},
    {"zeros", MT_OPC_COPY}, {"zeros_like", MT_OPC_COPY}, {"ones", MT_OPC_COPY},
    {"ones_like", MT_OPC_COPY}, {"fill", MT_OPC_COPY}, {"full", MT_OPC_COPY},
    {"full_like", MT_OPC_COPY}, {"new_zeros", MT_OPC_COPY}, {"new_ones", MT_OPC_COPY},
    {"new_full", MT_OPC_COPY}, {"arange", MT_OPC_COPY}, {"index_select", MT_OPC_COPY},
    {"gather", MT_OPC_COPY}, {"scatter", MT_OPC_COPY}, {"scatter_add", MT_OPC_COPY},
    {"index", MT_OPC_COPY}, {"index_put", MT_OPC_COPY}, {"index_add", MT_OPC_COPY},
    {"index_copy", MT_OPC_COPY}, {"masked_select", MT_OPC_COPY}, {"repeat", MT_OPC_COPY},
    {"flip", MT_OPC_COPY}, {"roll", MT_OPC_COPY}, {"pad", MT_OPC_COPY},
    {"constant_pad_nd", MT_OPC_COPY}, {"reflection_pad2d", MT_OPC_COPY},
    {"upsample_nearest2d", MT_OPC_COPY}, {"upsample_bilinear2d", MT_OPC_COPY},
    {"pin_memory", MT_OPC_COPY}, {"_pin_memory", MT_OPC_COPY}, {"nonzero", MT_OPC_COPY},
    {"topk", MT_OPC_COPY}, {"sort", MT_OPC_COPY}, {"argsort", MT_OPC_COPY},
    {"view", MT_OPC_NONE}, {"reshape", MT_OPC_NONE}, {"_reshape_alias", MT_OPC_NONE},
    {"_unsafe_view", MT_OPC_NONE}, {"t", MT_OPC_NONE}, {"transpose", MT_OPC_NONE},
    {"permute", MT_OPC_NONE}, {"flatten", MT_OPC_NONE}, {"unflatten", MT_OPC_NONE},
    {"unsqueeze", MT_OPC_NONE}, {"squeeze", MT_OPC_NONE}, {"expand", MT_OPC_NONE},
    {"expand_as", MT_OPC_NONE}, {"view_as", MT_OPC_NONE}, {"as_strided", MT_OPC_NONE},
    {"slice", MT_OPC_NONE}, {"select", MT_OPC_NONE}, {"narrow", MT_OPC_NONE},
    {"split", MT_OPC_NONE}, {"split_with_sizes", MT_OPC_NONE}, {"chunk", MT_OPC_NONE},
    {"unbind", MT_OPC_NONE}, {"detach", MT_OPC_NONE}, {"alias", MT_OPC_NONE},
    {"item", MT_OPC_NONE}, {"_local_scalar_dense", MT_OPC_NONE}, {"size", MT_OPC_NONE},
    {"stride", MT_OPC_NONE}, {"empty", MT_OPC_NONE}, {"empty_like", MT_OPC_NONE},
    {"empty_strided", MT_OPC_NONE}, {"new_empty", MT_OPC_NONE},
    {"new_empty_strided", MT_OPC_NONE}, {"resize", MT_OPC_NONE}, {"set", MT_OPC_NONE},
    {"lift_fresh", MT_OPC_NONE}, {"numpy_T", MT_OPC_NONE}, {"result_type", MT_OPC_NONE},
    {"is_nonzero", MT_OPC_NONE}, {"record_stream", MT_OPC_NONE}, {"requires_grad", MT_OPC_NONE},
    {"_has_compatible_shallow_copy_type", MT_OPC_NONE}, {"manual_seed", MT_OPC_NONE},
    {"relu", MT_OPC_ELEMWISE}, {"relu6", MT_OPC_ELEMWISE}, {"gelu", MT_OPC_ELEMWISE},
    {"silu", MT_OPC_ELEMWISE}, {"sigmoid", MT_OPC_ELEMWISE}, {"tanh", MT_OPC_ELEMWISE},
    {"threshold", MT_OPC_ELEMWISE}, {"hardtanh", MT_OPC_ELEMWISE},
    {"leaky_relu", MT_OPC_ELEMWISE}, {"elu", MT_OPC_ELEMWISE}, {"selu", MT_OPC_ELEMWISE},
    {"celu", MT_OPC_ELEMWISE}, {"prelu", MT_OPC_ELEMWISE}, {"softplus", MT_OPC_ELEMWISE},
    {"hardswish", MT_OPC_ELEMWISE}, {"hardsigmoid", MT_OPC_ELEMWISE},
    {"mish", MT_OPC_ELEMWISE}, {"glu", MT_OPC_ELEMWISE}, {"add", MT_OPC_ELEMWISE},
    {"sub", MT_OPC_ELEMWISE}, {"rsub", MT_OPC_ELEMWISE}, {"mul", MT_OPC_ELEMWISE},
    {"div", MT_OPC_ELEMWISE}, {"neg", MT_OPC_ELEMWISE}, {"exp", MT_OPC_ELEMWISE},
    {"log", MT_OPC_ELEMWISE}, {"pow", MT_OPC_ELEMWISE}, {"sqrt", MT_OPC_ELEMWISE},
    {"rsqrt", MT_OPC_ELEMWISE}, {"abs", MT_OPC_ELEMWISE}, {"clamp", MT_OPC_ELEMWISE},
    {"clamp_min", MT_OPC_ELEMWISE}, {"clamp_max", MT_OPC_ELEMWISE},
    {"where", MT_OPC_ELEMWISE}, {"masked_fill", MT_OPC_ELEMWISE},
    {"dropout", MT_OPC_ELEMWISE}, {"native_dropout", MT_OPC_ELEMWISE},
    {"feature_dropout", MT_OPC_ELEMWISE}, {"bernoulli", MT_OPC_ELEMWISE},
    {"addcmul", MT_OPC_ELEMWISE}, {"addcdiv", MT_OPC_ELEMWISE}, {"lerp", MT_OPC_ELEMWISE},
    {"sum", MT_OPC_ELEMWISE}, {"mean", MT_OPC_ELEMWISE}, {"amax", MT_OPC_ELEMWISE},
    {"amin", MT_OPC_ELEMWISE}, {"max", MT_OPC_ELEMWISE}, {"min", MT_OPC_ELEMWISE},
    {"argmax", MT_OPC_ELEMWISE}, {"var", MT_OPC_ELEMWISE}, {"std", MT_OPC_ELEMWISE},
    {"var_mean", MT_OPC_ELEMWISE}, {"norm", MT_OPC_ELEMWISE},
    {"linalg_vector_norm", MT_OPC_ELEMWISE}, {"cumsum", MT_OPC_ELEMWISE},
    {"sign", MT_OPC_ELEMWISE}, {"square", MT_OPC_ELEMWISE}, {"reciprocal", MT_OPC_ELEMWISE},
    {"maximum", MT_OPC_ELEMWISE}, {"minimum", MT_OPC_ELEMWISE}, {"eq", MT_OPC_ELEMWISE},
    {"ne", MT_OPC_ELEMWISE}, {"lt", MT_OPC_ELEMWISE}, {"gt", MT_OPC_ELEMWISE},
    {"le", MT_OPC_ELEMWISE}, {"ge", MT_OPC_ELEMWISE}, {"logical_not", MT_OPC_ELEMWISE},
    {"logical_and", MT_OPC_ELEMWISE}, {"logical_or", MT_OPC_ELEMWISE},
    {"bitwise_and", MT_OPC_ELEMWISE}, {"bitwise_or", MT_OPC_ELEMWISE},
    {"triu", MT_OPC_ELEMWISE}, {"tril", MT_OPC_ELEMWISE}, {"erf", MT_OPC_ELEMWISE},
    {"cos", MT_OPC_ELEMWISE}, {"sin", MT_OPC_ELEMWISE}, {"floor", MT_OPC_ELEMWISE},
    {"ceil", MT_OPC_ELEMWISE}, {"round", MT_OPC_ELEMWISE}, {"isnan", MT_OPC_ELEMWISE},
    {"isinf", MT_OPC_ELEMWISE}, {"isfinite", MT_OPC_ELEMWISE}, {"nan_to_num", MT_OPC_ELEMWISE},
    {"uniform", MT_OPC_ELEMWISE}, {"normal", MT_OPC_ELEMWISE}, {"rand", MT_OPC_ELEMWISE},
    {"randn", MT_OPC_ELEMWISE}, {"rand_like", MT_OPC_ELEMWISE},
    {"clip_grad_norm", MT_OPC_ELEMWISE},
};

/* autograd node names without "Backward<N>". */
static const name_class node_tab[] = {
    {"Convolution", MT_OPC_CONV_BWD}, {"CudnnConvolution", MT_OPC_CONV_BWD},
    {"MkldnnConvolution", MT_OPC_CONV_BWD}, {"SlowConv2D", MT_OPC_CONV_BWD},
    {"ThnnConv2D", MT_OPC_CONV_BWD}, {"ConvDepthwise2D", MT_OPC_CONV_BWD},
    {"CudnnConvolutionTranspose", MT_OPC_CONV_BWD},
    {"Addmm", MT_OPC_MATMUL_BWD}, {"Mm", MT_OPC_MATMUL_BWD}, {"Bmm", MT_OPC_MATMUL_BWD},
    {"Baddbmm", MT_OPC_MATMUL_BWD}, {"Addbmm", MT_OPC_MATMUL_BWD}, {"Mv", MT_OPC_MATMUL_BWD},
    {"Addmv", MT_OPC_MATMUL_BWD}, {"Dot", MT_OPC_MATMUL_BWD}, {"Linear", MT_OPC_MATMUL_BWD},
    {"Matmul", MT_OPC_MATMUL_BWD}, {"MkldnnLinear", MT_OPC_MATMUL_BWD}, {"GroupedMm", MT_OPC_MATMUL_BWD},
    {"ScaledDotProductFlashAttention", MT_OPC_ATTN_BWD},
    {"ScaledDotProductEfficientAttention", MT_OPC_ATTN_BWD},
    {"ScaledDotProductCudnnAttention", MT_OPC_ATTN_BWD},
    {"ScaledDotProductFlashAttentionForCpu", MT_OPC_ATTN_BWD},
    {"FlashAttention", MT_OPC_ATTN_BWD}, {"EfficientAttention", MT_OPC_ATTN_BWD},
    {"NativeBatchNorm", MT_OPC_NORM_BWD}, {"CudnnBatchNorm", MT_OPC_NORM_BWD},
    {"MiopenBatchNorm", MT_OPC_NORM_BWD}, {"NativeLayerNorm", MT_OPC_NORM_BWD},
    {"NativeGroupNorm", MT_OPC_NORM_BWD}, {"FusedRmsNorm", MT_OPC_NORM_BWD},
    {"NativeBatchNormLegit", MT_OPC_NORM_BWD},
    {"Softmax", MT_OPC_SOFTMAX_BWD}, {"LogSoftmax", MT_OPC_SOFTMAX_BWD},
    {"MaxPool2DWithIndices", MT_OPC_POOL_BWD}, {"MaxPool3DWithIndices", MT_OPC_POOL_BWD},
    {"AvgPool2D", MT_OPC_POOL_BWD}, {"AvgPool3D", MT_OPC_POOL_BWD},
    {"AdaptiveAvgPool2D", MT_OPC_POOL_BWD}, {"AdaptiveAvgPool3D", MT_OPC_POOL_BWD},
    {"AdaptiveMaxPool2D", MT_OPC_POOL_BWD}, {"MaxPool2D", MT_OPC_POOL_BWD},
    {"Embedding", MT_OPC_EMBEDDING_BWD}, {"EmbeddingDense", MT_OPC_EMBEDDING_BWD},
    {"EmbeddingBag", MT_OPC_EMBEDDING_BWD},
    {"NllLoss", MT_OPC_LOSS_BWD}, {"NllLoss2D", MT_OPC_LOSS_BWD}, {"MseLoss", MT_OPC_LOSS_BWD},
    {"L1Loss", MT_OPC_LOSS_BWD}, {"BinaryCrossEntropy", MT_OPC_LOSS_BWD},
    {"BinaryCrossEntropyWithLogits", MT_OPC_LOSS_BWD}, {"SmoothL1Loss", MT_OPC_LOSS_BWD},
    {"HuberLoss", MT_OPC_LOSS_BWD}, {"KlDiv", MT_OPC_LOSS_BWD},
    {"View", MT_OPC_NONE}, {"Reshape", MT_OPC_NONE}, {"ReshapeAlias", MT_OPC_NONE},
    {"UnsafeView", MT_OPC_NONE}, {"T", MT_OPC_NONE}, {"Transpose", MT_OPC_NONE},
    {"Permute", MT_OPC_NONE}, {"Squeeze", MT_OPC_NONE}, {"Unsqueeze", MT_OPC_NONE},
    {"Alias", MT_OPC_NONE}, {"Detach", MT_OPC_NONE}, {"Clone", MT_OPC_NONE},
    {"Cat", MT_OPC_NONE}, {"Split", MT_OPC_NONE}, {"SplitWithSizes", MT_OPC_NONE},
    {"AsStrided", MT_OPC_NONE}, {"Flatten", MT_OPC_NONE}, {"Unflatten", MT_OPC_NONE},
    {"Slice", MT_OPC_COPY}, {"Select", MT_OPC_COPY}, {"Unbind", MT_OPC_COPY},
    {"Stack", MT_OPC_COPY}, {"Index", MT_OPC_COPY}, {"IndexSelect", MT_OPC_COPY},
    {"Gather", MT_OPC_COPY}, {"Scatter", MT_OPC_COPY}, {"ToCopy", MT_OPC_COPY},
    {"Copy", MT_OPC_COPY}, {"Copys", MT_OPC_COPY}, {"ConstantPadNd", MT_OPC_COPY},
    {"Repeat", MT_OPC_COPY}, {"UpsampleNearest2D", MT_OPC_COPY},
    {"UpsampleBilinear2D", MT_OPC_COPY},
    {"Relu", MT_OPC_ELEMWISE_BWD}, {"Threshold", MT_OPC_ELEMWISE_BWD},
    {"Gelu", MT_OPC_ELEMWISE_BWD}, {"Silu", MT_OPC_ELEMWISE_BWD},
    {"Sigmoid", MT_OPC_ELEMWISE_BWD}, {"Tanh", MT_OPC_ELEMWISE_BWD},
    {"Hardtanh", MT_OPC_ELEMWISE_BWD}, {"LeakyRelu", MT_OPC_ELEMWISE_BWD},
    {"Elu", MT_OPC_ELEMWISE_BWD}, {"Softplus", MT_OPC_ELEMWISE_BWD},
    {"Hardswish", MT_OPC_ELEMWISE_BWD}, {"Hardsigmoid", MT_OPC_ELEMWISE_BWD},
    {"Mish", MT_OPC_ELEMWISE_BWD}, {"Add", MT_OPC_ELEMWISE_BWD},
    {"Sub", MT_OPC_ELEMWISE_BWD}, {"Rsub", MT_OPC_ELEMWISE_BWD},
    {"Mul", MT_OPC_ELEMWISE_BWD}, {"Div", MT_OPC_ELEMWISE_BWD},
    {"Neg", MT_OPC_ELEMWISE_BWD}, {"Exp", MT_OPC_ELEMWISE_BWD},
    {"Log", MT_OPC_ELEMWISE_BWD}, {"Pow", MT_OPC_ELEMWISE_BWD},
    {"Sqrt", MT_OPC_ELEMWISE_BWD}, {"Rsqrt", MT_OPC_ELEMWISE_BWD},
    {"Abs", MT_OPC_ELEMWISE_BWD}, {"Clamp", MT_OPC_ELEMWISE_BWD},
    {"ClampMin", MT_OPC_ELEMWISE_BWD}, {"MaskedFill", MT_OPC_ELEMWISE_BWD},
    {"Where", MT_OPC_ELEMWISE_BWD}, {"NativeDropout", MT_OPC_ELEMWISE_BWD},
    {"Dropout", MT_OPC_ELEMWISE_BWD}, {"Sum", MT_OPC_ELEMWISE_BWD},
    {"Mean", MT_OPC_ELEMWISE_BWD}, {"Expand", MT_OPC_ELEMWISE_BWD},
    {"Erf", MT_OPC_ELEMWISE_BWD}, {"Square", MT_OPC_ELEMWISE_BWD},
    {"Max", MT_OPC_ELEMWISE_BWD}, {"Amax", MT_OPC_ELEMWISE_BWD},
    {"Norm", MT_OPC_ELEMWISE_BWD}, {"LinalgVectorNorm", MT_OPC_ELEMWISE_BWD},
    {"Var", MT_OPC_ELEMWISE_BWD}, {"Std", MT_OPC_ELEMWISE_BWD},
    {"Cumsum", MT_OPC_ELEMWISE_BWD}, {"Reciprocal", MT_OPC_ELEMWISE_BWD},
    {"Maximum", MT_OPC_ELEMWISE_BWD}, {"Minimum", MT_OPC_ELEMWISE_BWD},
    {"Tril", MT_OPC_ELEMWISE_BWD}, {"Triu", MT_OPC_ELEMWISE_BWD},
    {"Cos", MT_OPC_ELEMWISE_BWD}, {"Sin", MT_OPC_ELEMWISE_BWD},
    {"Addcmul", MT_OPC_ELEMWISE_BWD}, {"Addcdiv", MT_OPC_ELEMWISE_BWD},
    {"Lerp", MT_OPC_ELEMWISE_BWD}, {"Prelu", MT_OPC_ELEMWISE_BWD},
    {"Glu", MT_OPC_ELEMWISE_BWD},
};

static int lookup(const name_class *tab, size_t n, const char *s, size_t len, mt_opclass *out) {
    for (size_t i = 0; i < n; i++)
        if (strlen(tab[i].name) == len && !strncmp(tab[i].name, s, len)) {
            *out = tab[i].cls;
            return 1;
        }
    return 0;
}

static int is_elementwise_like(mt_opclass c) {
    return c == MT_OPC_ELEMWISE || c == MT_OPC_COPY;
}

/* Class of an aten name ("aten::relu_", "aten::convolution_backward"); 0 when not in the table. */
static int aten_class(const char *name, mt_opclass *out) {
    if (!name || !starts(name, "aten::")) return 0;
    const char *s = name + 6;
    size_t len = strlen(s);
    if (len > 1 && s[len - 1] == '_' && s[len - 2] != '_') len--; /* in-place */
    if (starts(s, "_foreach_")) {
        *out = MT_OPC_OPTIMIZER;
        return 1;
    }
    if (lookup(aten_tab, sizeof aten_tab / sizeof aten_tab[0], s, len, out)) return 1;
    /* "<stem>_backward", "<stem>_backward_data", "<stem>_backward_input" */
    const char *b = strstr(s, "_backward");
    if (b && (size_t)(b - s) < len) {
        mt_opclass c;
        if (lookup(aten_tab, sizeof aten_tab / sizeof aten_tab[0], s, (size_t)(b - s), &c)) {
            *out = mt_opclass_backward_of(c);
            return 1;
        }
    }
    return 0;
}

#define EVAL_PREFIX "autograd::engine::evaluate_function: "

/* Class of an autograd node ("...evaluate_function: ConvolutionBackward0"); 0 when unknown. */
static int node_class(const char *name, mt_opclass *out) {
    if (!name) return 0;
    const char *s = starts(name, EVAL_PREFIX) ? name + strlen(EVAL_PREFIX) : name;
    if (strstr(s, "AccumulateGrad")) {
        *out = MT_OPC_NONE;
        return 1;
    }
    if (starts(s, "torch::autograd::")) s += strlen("torch::autograd::");
    size_t len = strlen(s);
    while (len > 0 && isdigit((unsigned char)s[len - 1])) len--;
    const char *suf = "Backward";
    size_t sl = strlen(suf);
    if (len < sl || strncmp(s + len - sl, suf, sl)) {
        /* CopyBackwards, GraphRoot, ... */
        if (len >= sl + 1 && !strncmp(s + len - sl - 1, "Backwards", sl + 1)) len -= 1;
        else return 0;
    }
    return lookup(node_tab, sizeof node_tab / sizeof node_tab[0], s, len - sl, out);
}

mt_opclass mt_opclass_of(const char *name, const char *kind, trace_phase phase, int comm) {
    if (comm) return MT_OPC_COMM;
    mt_opclass c = MT_OPC_UNKNOWN;
    int found = 0;
    if (name && (starts(name, EVAL_PREFIX) || strstr(name, "Backward"))) {
        found = node_class(name, &c);
        if (!found && kind && starts(kind, "aten::") && aten_class(kind, &c)) {
            /* an unknown node whose first aten op is known: e.g. a custom Function */
            found = 1;
            if (!mt_opclass_is_backward(c) && c != MT_OPC_NONE && c != MT_OPC_COPY)
                c = mt_opclass_backward_of(c);
        }
    } else {
        found = aten_class(name, &c) || aten_class(kind, &c);
    }
    if (!found) return MT_OPC_UNKNOWN;
    if (phase == TRACE_PHASE_OPTIMIZER && (is_elementwise_like(c) || c == MT_OPC_ELEMWISE_BWD))
        return MT_OPC_OPTIMIZER;
    if (phase == TRACE_PHASE_BACKWARD && c == MT_OPC_ELEMWISE) return MT_OPC_ELEMWISE_BWD;
    return c;
}


/* ---- communication ---------------------------------------------------------------------- */

/* Prefixes of communication op and kernel names; the first that matches is stripped. */
static const char *const comm_prefixes[] = {"nccl:", "gloo:", "c10d::", "ncclDevKernel_", "ncclKernel_"};

/* Collective names (lower case) by prefix, first match wins: "reduce_scatter" before "reduce". */
static const struct { const char *key; trace_comm kind; } comm_tab[] = {
    {"reduce_scatter", TRACE_COMM_REDUCESCATTER}, {"reducescatter", TRACE_COMM_REDUCESCATTER},
    {"_reduce_scatter_base", TRACE_COMM_REDUCESCATTER},
    {"all_reduce", TRACE_COMM_ALLREDUCE}, {"allreduce", TRACE_COMM_ALLREDUCE},
    {"all_gather", TRACE_COMM_ALLGATHER}, {"allgather", TRACE_COMM_ALLGATHER},
    {"_allgather_base", TRACE_COMM_ALLGATHER}, {"_all_gather_base", TRACE_COMM_ALLGATHER},
    {"all_to_all", TRACE_COMM_ALLTOALL}, {"alltoall", TRACE_COMM_ALLTOALL},
    {"sendrecv", TRACE_COMM_SEND}, {"send", TRACE_COMM_SEND}, {"recv", TRACE_COMM_RECV},
    {"broadcast", TRACE_COMM_BROADCAST}, {"reduce", TRACE_COMM_REDUCE},
    {"barrier", TRACE_COMM_BARRIER},
};

trace_comm mt_opclass_comm_of(const char *name) {
    if (!name) return TRACE_COMM_NONE;
    const char *s = name;
    for (size_t i = 0; i < sizeof comm_prefixes / sizeof *comm_prefixes && s == name; i++)
        if (starts(name, comm_prefixes[i])) s = name + strlen(comm_prefixes[i]);
    /* Bare names (from record_param_comms' collective_name) are accepted too. */
    char low[64];
    size_t n = 0;
    for (; s[n] && n + 1 < sizeof low; n++) low[n] = (char)(s[n] >= 'A' && s[n] <= 'Z' ? s[n] + 32 : s[n]);
    low[n] = '\0';
    if (n >= 4 && !strcmp(low + n - 4, "wait")) return TRACE_COMM_NONE; /* ReduceScatterBase_Wait waits, moves nothing */
    for (size_t i = 0; i < sizeof comm_tab / sizeof *comm_tab; i++)
        if (starts(low, comm_tab[i].key)) return comm_tab[i].kind;
    return s != name ? TRACE_COMM_OTHER : TRACE_COMM_NONE;
}

int mt_opclass_is_comm_name(const char *name) {
    return mt_opclass_comm_of(name) != TRACE_COMM_NONE || !strcmp(name, "record_param_comms");
}

/* ---- phase and tensor hints from names -------------------------------------------------- */

static const name_pat backward_names[] = {
    {"autograd::engine::evaluate_function", PREFIX, ON_NAME}, {"Backward0", SUB, ON_NAME},
    {"Backward1", SUB, ON_NAME},
};
static const name_pat optimizer_names[] = {
    {"_foreach_", SUB, ON_NAME}, {"_fused_adam", SUB, ON_NAME}, {"_fused_sgd", SUB, ON_NAME},
    {"Optimizer.step", PREFIX, ON_NAME},
};
static const name_pat data_movement_names[] = {
    {"aten::to", EXACT, ON_NAME}, {"aten::_to_copy", EXACT, ON_NAME}, {"aten::copy_", EXACT, ON_NAME},
    {"aten::empty", EXACT, ON_NAME}, {"aten::empty_strided", EXACT, ON_NAME}, {"aten::zeros", EXACT, ON_NAME},
    {"aten::lift_fresh", EXACT, ON_NAME}, {"aten::item", EXACT, ON_NAME},
    {"aten::_local_scalar_dense", EXACT, ON_NAME}, {"aten::random_", EXACT, ON_NAME},
    {"aten::randint", EXACT, ON_NAME}, {"aten::detach", EXACT, ON_NAME}, {"aten::detach_", EXACT, ON_NAME},
    {"aten::pin_memory", EXACT, ON_NAME}, {"aten::set_", EXACT, ON_NAME},
    {"enumerate(DataLoader)", EXACT, ON_NAME}, {"aten::stack", EXACT, ON_NAME}, {"aten::cat", EXACT, ON_NAME},
    {"aten::as_tensor", EXACT, ON_NAME},
};

int mt_opclass_is_backward_name(const char *name) { return ANY_PAT(name, NULL, backward_names); }
int mt_opclass_is_optimizer_name(const char *name) { return ANY_PAT(name, NULL, optimizer_names); }
int mt_opclass_is_data_movement_name(const char *name) { return ANY_PAT(name, NULL, data_movement_names); }
int mt_opclass_is_zero_grad_name(const char *name) { return name && strstr(name, "zero_grad") != NULL; }
int mt_opclass_is_grad_accum_name(const char *name) { return name && strstr(name, "AccumulateGrad") != NULL; }

int mt_opclass_is_inplace_name(const char *kind) {
    size_t n = kind ? strlen(kind) : 0;
    return n > 1 && kind[n - 1] == '_' && kind[n - 2] != '_';
}

/* ---- per trace op ----------------------------------------------------------------------- */

static int tensor_role(const mt_trace *t, const trace_tref *r) {
    return r->tensor >= 0 && r->tensor < t->n_tensors ? (int)t->tensors[r->tensor].role : -1;
}

static int reads_weight(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++)
        if (tensor_role(t, &t->trefs[o->in_first + j]) == TRACE_ROLE_WEIGHT) return 1;
    return 0;
}

/* Tensor-parallel kinds by name, tried in this order (see mt_opclass_tp_of). */
static const name_pat linear_names[] = {{"aten::linear", SUB, ON_BOTH}, {"aten::addmm", SUB, ON_BOTH}};
static const name_pat matmul_names[] = {
    {"aten::mm", SUB, ON_KIND}, {"aten::matmul", SUB, ON_BOTH}, {"aten::baddbmm", SUB, ON_KIND},
};
static const name_pat conv_names[] = {
    {"conv", SUB, ON_NAME}, {"aten::conv", SUB, ON_KIND}, {"aten::_conv", SUB, ON_KIND},
    {"cudnn_convolution", SUB, ON_KIND},
};
static const name_pat embedding_names[] = {{"embedding", SUB, ON_NAME}};
/* Producers of position indices: an embedding reading their output is a position embedding. */
static const name_pat position_names[] = {{"aten::arange", PREFIX, ON_BOTH}};
/* Losses over the vocabulary that Megatron computes vocabulary-parallel (before CLOSER: "loss"). */
static const name_pat vocab_loss_names[] = {
    {"cross_entropy", SUB, ON_BOTH}, {"log_softmax", SUB, ON_BOTH}, {"aten::nll_loss", PREFIX, ON_BOTH},
};
static const name_pat closer_names[] = {{"norm", SUB, ON_BOTH}, {"loss", SUB, ON_BOTH}};
/* Parameter-sized work whatever its tensors say. */
static const name_pat fixed_size_names[] = {{"AccumulateGrad", SUB, ON_NAME}, {"zero_", SUB, ON_NAME}};

/* An embedding's indices are positions when a non-weight input was made by arange. */
/* 1 when the embedding's indices (its first tensor input besides the weight) come from arange. Only
 * the indices: an embedding bag's offsets come from arange too (PyTorch makes them for 2-D input). */
static int reads_positions(const mt_trace *t, const trace_op *o) {
    for (int32_t j = 0; j < o->in_count; j++) {
        const trace_tref *r = &t->trefs[o->in_first + j];
        if (tensor_role(t, r) == TRACE_ROLE_WEIGHT || tensor_role(t, r) < 0) continue;
        int32_t p = t->tensors[r->tensor].first_op;
        return p >= 0 && p < t->n_ops && p != o->id && ANY_PAT(t->ops[p].name, t->ops[p].kind, position_names);
    }
    return 0;
}

trace_tp mt_opclass_tp_of(const mt_trace *t, const trace_op *o) {
    const char *k = o->kind ? o->kind : o->name;
    int lin = ANY_PAT(o->name, k, linear_names);
    if (o->in_count == 0 ? lin : (lin || ANY_PAT(o->name, k, matmul_names)) && reads_weight(t, o))
        return TRACE_TP_LINEAR;
    if (ANY_PAT(o->name, k, conv_names)) return TRACE_TP_CONV;
    if (ANY_PAT(o->name, k, embedding_names))
        return reads_positions(t, o) ? TRACE_TP_POS_EMBEDDING : TRACE_TP_EMBEDDING;
    if (o->phase != TRACE_PHASE_BACKWARD && ANY_PAT(o->name, k, vocab_loss_names)) return TRACE_TP_VOCAB_LOSS;
    if (ANY_PAT(o->name, k, closer_names)) return TRACE_TP_CLOSER;
    if (mt_opclass_is_grad_accum_name(o->name)) return TRACE_TP_WEIGHT_GRAD;
    return TRACE_TP_NONE;
}

/* A router's selection of experts (mt_opclass_select_k): names without "aten::", k from the output
 * (topk) or 1. */
static const struct { const char *name; int k_from_output; } select_tab[] = {
    {"topk", 1}, {"max", 0}, {"argmax", 0}, {"amax", 0}, {"sort", 0}, {"argsort", 0},
};

int32_t mt_opclass_select_k(const mt_trace *t, const trace_op *o, int64_t width, const char **name) {
    if (o->phase != TRACE_PHASE_FORWARD || !o->name || !starts(o->name, "aten::") || o->in_count < 1 || o->out_count < 1)
        return 0;
    const char *n = o->name + 6;
    size_t len = strlen(n);
    if (len && n[len - 1] == '_') len--;
    for (size_t i = 0; i < sizeof select_tab / sizeof select_tab[0]; i++) {
        if (strlen(select_tab[i].name) != len || strncmp(n, select_tab[i].name, len)) continue;
        const trace_tref *in = &t->trefs[o->in_first], *out = &t->trefs[o->out_first];
        if (in->ndim < 1 || out->ndim < 1 || t->dims[in->shape_off + in->ndim - 1] != width) return 0;
        if (name) *name = select_tab[i].name;
        return select_tab[i].k_from_output ? (int32_t)t->dims[out->shape_off + out->ndim - 1] : 1;
    }
    return 0;
}

int mt_opclass_batch_dependent(const mt_trace *t, const trace_op *o) {
    if (trace_op_is_comm(o)) return 0;
    if (o->phase != TRACE_PHASE_FORWARD && o->phase != TRACE_PHASE_BACKWARD) return 0;
    if (ANY_PAT(o->name, NULL, fixed_size_names)) return 0;
    if (o->in_count + o->out_count == 0) return 1; /* no tensor information: assume it does */
    if (o->phase == TRACE_PHASE_FORWARD) {
        /* forward work on parameters alone (a weight transpose or cast) does not grow */
        int only_weights = o->in_count > 0;
        for (int32_t j = 0; j < o->in_count; j++)
            if (tensor_role(t, &t->trefs[o->in_first + j]) != TRACE_ROLE_WEIGHT) only_weights = 0;
        return !only_weights;
    }
    /* backward: anything but parameter-sized tensors is an activation or its gradient */
    for (int32_t j = 0; j < o->in_count + o->out_count; j++) {
        int r = tensor_role(t, &t->trefs[o->in_first + j]);
        if (r != TRACE_ROLE_WEIGHT && r != TRACE_ROLE_GRADIENT && r != TRACE_ROLE_OPTSTATE) return 1;
    }
    return 0;
}

void mt_opclass_trace(mt_trace *t) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        trace_op *o = &t->ops[i];
        o->cls = mt_opclass_of(o->name, o->kind, o->phase, trace_op_is_comm(o));
        o->tp = mt_opclass_tp_of(t, o);
        o->batch_dep = (int8_t)mt_opclass_batch_dependent(t, o);
    }
}
