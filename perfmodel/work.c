/* perfmodel/work.c — operator classes and FLOPs/bytes from shapes (see work.h for the formulas).
 *
 * Names are matched in two tables: aten op names without the "aten::" prefix and without a
 * trailing in-place '_' (`relu_` -> `relu`), and autograd node names without the trailing
 * "Backward<N>" (`ConvolutionBackward0` -> `Convolution`). An aten name ending in "_backward"
 * (or "_backward_data") takes the backward variant of its stem's class.
 */
#include "perfmodel/work.h"

#include <ctype.h>
#include <string.h>

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
static mt_opclass bwd_of(mt_opclass c) {
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
static mt_opclass fwd_of(mt_opclass c) {
    for (int f = 0; f < MT_OPC_COUNT; f++)
        if (bwd_of((mt_opclass)f) == c && f != (int)c) return (mt_opclass)f;
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
    {"Matmul", MT_OPC_MATMUL_BWD}, {"MkldnnLinear", MT_OPC_MATMUL_BWD},
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

static int starts(const char *s, const char *p) { return !strncmp(s, p, strlen(p)); }

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
            *out = bwd_of(c);
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
                c = bwd_of(c);
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

/* ---- work ------------------------------------------------------------------------------- */

static double numel(const mt_tshape *s) {
    if (s->ndim <= 0) return s->numel;
    double n = 1;
    for (int32_t i = 0; i < s->ndim; i++) n *= (double)(s->dims[i] > 0 ? s->dims[i] : 0);
    return n;
}

static double tbytes(const mt_tshape *s) { return numel(s) * (s->itemsize > 0 ? s->itemsize : 4); }

static int is_fixed(const mt_tshape *s) {
    return s->role == TRACE_ROLE_WEIGHT || s->role == TRACE_ROLE_GRADIENT ||
           s->role == TRACE_ROLE_OPTSTATE || (s->ndim == 0 && s->numel <= 1);
}

static int64_t dim(const mt_tshape *s, int i) { /* negative i counts from the end */
    if (i < 0) i += s->ndim;
    return i >= 0 && i < s->ndim ? s->dims[i] : 0;
}

/* Sum the bytes of all tensors into act/fixed. */
static void sum_bytes(const mt_opdesc *d, mt_work *w) {
    for (int pass = 0; pass < 2; pass++) {
        const mt_tshape *v = pass ? d->out : d->in;
        int32_t n = pass ? d->n_out : d->n_in;
        for (int32_t i = 0; i < n; i++) {
            if (is_fixed(&v[i])) w->bytes_fixed += tbytes(&v[i]);
            else w->bytes_act += tbytes(&v[i]);
        }
    }
    w->bytes_act += d->extra_bytes_act;
    w->bytes_fixed += d->extra_bytes_fixed;
}

static double max_numel(const mt_opdesc *d) {
    double m = 0;
    for (int32_t i = 0; i < d->n_in; i++) if (numel(&d->in[i]) > m) m = numel(&d->in[i]);
    for (int32_t i = 0; i < d->n_out; i++) if (numel(&d->out[i]) > m) m = numel(&d->out[i]);
    return m;
}

/* any tensor use seen (a scalar tensor counts: its shape is known to be []) */
static int has_shapes(const mt_opdesc *d) {
    return d->n_in + d->n_out > 0 || d->extra_bytes_act + d->extra_bytes_fixed > 0;
}

static mt_dtype dtype_of(const mt_tshape *s, mt_opclass c) {
    const char *d = s ? s->dtype : NULL;
    int isz = s ? s->itemsize : 4;
    if (d && (strstr(d, "BFloat16") || strstr(d, "bfloat16"))) return MT_DT_BF16;
    if (d && (strstr(d, "Half") || strstr(d, "half") || strstr(d, "float16"))) return MT_DT_FP16;
    if (d && strstr(d, "Float8")) return MT_DT_FP8;
    if (d && (strstr(d, "double") || strstr(d, "Double"))) return MT_DT_FP64;
    if (!d && isz == 2) return MT_DT_FP16;
    if (!d && isz == 8) return MT_DT_FP64;
    if (!d && isz == 1) return MT_DT_FP8;
    /* fp32: cuDNN convolutions use TF32 by default, matmuls do not (PyTorch >= 1.12) */
    return (c == MT_OPC_CONV || c == MT_OPC_CONV_BWD) ? MT_DT_TF32 : MT_DT_FP32;
}

static int name_has(const mt_opdesc *d, const char *needle) {
    return (d->name && strstr(d->name, needle)) || (d->kind && strstr(d->kind, needle));
}

/* conv FLOPs from x (input), wt (weight), y (output or NULL) */
static double conv_flops(const mt_tshape *x, const mt_tshape *wt, const mt_tshape *y,
                         int transposed, int bias) {
    if (!x || !wt || wt->ndim < 3 || x->ndim < 3 || dim(wt, 0) <= 0 || dim(x, 1) <= 0) return 0;
    double per_out = numel(wt) / (double)dim(wt, 0);
    double nout = y && y->ndim >= 3 ? numel(y) : numel(x) / (double)dim(x, 1) * (double)dim(wt, 0);
    if (transposed) return 2.0 * numel(x) * per_out + (bias ? nout : 0);
    return 2.0 * nout * per_out + (bias ? nout : 0);
}

static double matmul_flops(const mt_opdesc *d) {
    int shifted = name_has(d, "addmm") || name_has(d, "baddbmm") || name_has(d, "addbmm") ||
                  name_has(d, "addmv");
    int ia = shifted ? 1 : 0, ib = ia + 1;
    if (d->n_in <= ia) return 0;
    const mt_tshape *a = &d->in[ia];
    const mt_tshape *b = d->n_in > ib ? &d->in[ib] : NULL;
    int64_t k = dim(a, -1);
    if (a->ndim < 1 || k <= 0) return 0;
    int linear = name_has(d, "linear");
    double nout;
    if (d->n_out >= 1 && d->out[0].ndim >= 1) nout = numel(&d->out[0]);
    else if (!b) return 0;
    else {
        int64_t n = linear ? dim(b, 0) : (b->ndim >= 2 ? dim(b, -1) : 1);
        nout = numel(a) / (double)k * (double)(n > 0 ? n : 1);
    }
    if (a->ndim == 1 && b && b->ndim == 1) nout = 1; /* dot */
    double f = 2.0 * nout * (double)k;
    if ((linear && d->n_in >= 3) || shifted) f += nout;
    return f;
}

static double attn_flops(const mt_opdesc *d, int first) {
    if (d->n_in < first + 3) return 0;
    const mt_tshape *q = &d->in[first], *k = &d->in[first + 1], *v = &d->in[first + 2];
    if (q->ndim < 2 || k->ndim < 2 || v->ndim < 2) return 0;
    double lq = (double)dim(q, -2), dd = (double)dim(q, -1), lk = (double)dim(k, -2),
           dv = (double)dim(v, -1);
    if (lq <= 0 || dd <= 0) return 0;
    double bh = numel(q) / (lq * dd);
    return 2.0 * bh * lq * lk * (dd + dv);
}

/* Forward formula of class c applied to d's tensors. */
static void fwd_formula(mt_opclass c, const mt_opdesc *d, mt_work *w) {
    sum_bytes(d, w);
    const mt_tshape *in0 = d->n_in > 0 ? &d->in[0] : NULL;
    switch (c) {
    case MT_OPC_CONV:
        w->flops = conv_flops(in0, d->n_in > 1 ? &d->in[1] : NULL, d->n_out > 0 ? &d->out[0] : NULL,
                              name_has(d, "transpose"), d->n_in > 2 && d->in[2].ndim == 1);
        break;
    case MT_OPC_MATMUL: w->flops = matmul_flops(d); break;
    case MT_OPC_ATTN: w->flops = attn_flops(d, 0); break;
    case MT_OPC_NORM:
    case MT_OPC_SOFTMAX: w->flops = in0 ? 5.0 * numel(in0) : 0; break;
    case MT_OPC_LOSS: w->flops = in0 ? 4.0 * numel(in0) : 0; break;
    case MT_OPC_POOL: w->flops = in0 ? numel(in0) : 0; break;
    case MT_OPC_EMBEDDING: {
        /* aten::embedding(weight, indices): reads one row per index, writes the output */
        w->bytes_act = w->bytes_fixed = 0;
        if (d->n_in >= 2) {
            const mt_tshape *wt = &d->in[0], *idx = &d->in[1];
            double row = (double)dim(wt, -1) * (wt->itemsize > 0 ? wt->itemsize : 4);
            double outb = d->n_out > 0 && d->out[0].ndim > 0 ? tbytes(&d->out[0]) : numel(idx) * row;
            w->bytes_act = tbytes(idx) + 2.0 * outb;
        } else {
            sum_bytes(d, w);
        }
        break;
    }
    case MT_OPC_OPTIMIZER:
        w->flops = (w->bytes_act + w->bytes_fixed) / 8.0;
        break;
    case MT_OPC_ELEMWISE: w->flops = max_numel(d); break;
    default: break; /* copy, unknown, none, comm: bytes only */
    }
}

/* Backward work of class c derived from the forward op fd. */
static void bwd_from_fwd(mt_opclass c, const mt_opdesc *fd, mt_work *w) {
    mt_opclass fc = fwd_of(c);
    mt_work f = {0};
    fwd_formula(fc, fd, &f);
    double k_flops = 1, k_bytes = 1.5;
    switch (c) {
    case MT_OPC_CONV_BWD:
    case MT_OPC_MATMUL_BWD: {
        /* input and weight gradients; the model input needs no gradient */
        int ia = (c == MT_OPC_MATMUL_BWD && (name_has(fd, "addmm") || name_has(fd, "baddbmm"))) ? 1 : 0;
        int no_dgrad = fd->n_in > ia && fd->in[ia].role == TRACE_ROLE_INPUT;
        k_flops = no_dgrad ? 1 : 2;
        k_bytes = 2;
        break;
    }
    case MT_OPC_ATTN_BWD: k_flops = 2.5; k_bytes = 2; break;
    case MT_OPC_NORM_BWD: k_flops = 2; k_bytes = 2; break;
    case MT_OPC_POOL_BWD: k_bytes = 2; break;
    case MT_OPC_LOSS_BWD: k_bytes = 2; break;
    case MT_OPC_SOFTMAX_BWD: k_flops = 0.6; break;
    case MT_OPC_EMBEDDING_BWD: {
        /* dense gradient: zero the weight-sized gradient, add one row per index */
        w->flops = 0;
        w->bytes_act = f.bytes_act / 2.0;
        w->bytes_fixed = fd->n_in > 0 ? 2.0 * tbytes(&fd->in[0]) : 0;
        w->dtype = dtype_of(fd->n_in > 0 ? &fd->in[0] : NULL, c);
        return;
    }
    default: break;
    }
    w->flops = f.flops * k_flops;
    w->bytes_act = f.bytes_act * k_bytes;
    w->bytes_fixed = f.bytes_fixed * k_bytes;
    int ia = (c == MT_OPC_MATMUL_BWD && (name_has(fd, "addmm") || name_has(fd, "baddbmm"))) ? 1 : 0;
    w->dtype = dtype_of(fd->n_in > ia ? &fd->in[ia] : NULL, c);
}

/* Backward work from the op's own tensors (aten::*_backward kinds, TrioSim CSV rows). */
static void bwd_own(mt_opclass c, const mt_opdesc *d, mt_work *w) {
    sum_bytes(d, w);
    int only_grad = d->n_in + d->n_out <= 1;
    switch (c) {
    case MT_OPC_CONV_BWD:
        /* (grad_output, input, weight) as aten::convolution_backward takes them */
        if (d->n_in >= 3 && d->in[2].ndim >= 3) {
            double f = conv_flops(&d->in[1], &d->in[2], &d->in[0], name_has(d, "ranspose"), 0);
            int no_dgrad = d->in[1].role == TRACE_ROLE_INPUT ||
                           (d->n_out >= 1 && numel(&d->out[0]) == 0);
            w->flops = f * (no_dgrad ? 1 : 2);
            only_grad = 0;
        }
        break;
    case MT_OPC_ATTN_BWD: w->flops = 2.5 * attn_flops(d, 1); break;
    case MT_OPC_NORM_BWD: w->flops = d->n_in ? 8.0 * numel(&d->in[0]) : 0; break;
    case MT_OPC_SOFTMAX_BWD: w->flops = d->n_in ? 3.0 * numel(&d->in[0]) : 0; break;
    default: w->flops = mt_opclass_is_compute(c) ? 0 : max_numel(d); break;
    }
    if (only_grad) { /* read the gradient and a saved tensor, write the input gradient */
        w->bytes_act *= 3;
        w->bytes_fixed *= 3;
    }
    w->dtype = dtype_of(d->n_in > 1 ? &d->in[1] : d->n_in ? &d->in[0] : NULL, c);
}

void mt_work_of(const mt_opdesc *d, mt_work *w) {
    memset(w, 0, sizeof *w);
    w->cls = mt_opclass_of(d->name, d->kind, d->phase, d->comm);
    w->dtype = MT_DT_FP32;
    if (mt_opclass_is_backward(w->cls)) {
        if (d->fwd && has_shapes(d->fwd)) {
            bwd_from_fwd(w->cls, d->fwd, w);
            w->from_fwd = 1;
            w->has_shapes = 1;
            if (w->flops > 0 || mt_work_bytes(w) > 0) return;
            memset(w, 0, sizeof *w);
            w->cls = mt_opclass_of(d->name, d->kind, d->phase, d->comm);
        }
        bwd_own(w->cls, d, w);
        w->has_shapes = has_shapes(d);
        return;
    }
    fwd_formula(w->cls, d, w);
    int ia = (w->cls == MT_OPC_MATMUL && (name_has(d, "addmm") || name_has(d, "baddbmm"))) ? 1 : 0;
    w->dtype = dtype_of(d->n_in > ia ? &d->in[ia] : d->n_out ? &d->out[0] : NULL, w->cls);
    w->has_shapes = has_shapes(d);
}

/* ---- from a trace ----------------------------------------------------------------------- */

static void fill_side(const trace *t, const trace_tref *r, int32_t n, mt_tshape *v, int32_t *kept,
                      double *extra_act, double *extra_fixed) {
    *kept = 0;
    for (int32_t i = 0; i < n; i++) {
        const trace_tensor *x = &t->tensors[r[i].tensor];
        mt_tshape s = {t->dims + r[i].shape_off, r[i].ndim, x->itemsize, (double)x->numel,
                       x->role, x->dtype};
        if (*kept < MT_OPDESC_MAXT) {
            v[(*kept)++] = s;
        } else if (is_fixed(&s)) {
            *extra_fixed += tbytes(&s);
        } else {
            *extra_act += tbytes(&s);
        }
    }
}

void mt_opdesc_from_trace(const trace *t, int32_t op, mt_opdesc *d) {
    memset(d, 0, sizeof *d);
    const trace_op *o = &t->ops[op];
    d->name = o->name;
    d->kind = o->kind;
    d->phase = o->phase;
    d->comm = o->comm != TRACE_COMM_NONE;
    fill_side(t, trace_op_inputs(t, o), o->in_count, d->in, &d->n_in, &d->extra_bytes_act,
              &d->extra_bytes_fixed);
    fill_side(t, trace_op_outputs(t, o), o->out_count, d->out, &d->n_out, &d->extra_bytes_act,
              &d->extra_bytes_fixed);
}

void mt_work_of_trace_op(const trace *t, int32_t op, mt_work *w) {
    mt_opdesc d, f;
    mt_opdesc_from_trace(t, op, &d);
    int32_t fo = t->ops[op].fwd_op;
    if (fo >= 0 && fo < t->n_ops && fo != op) {
        mt_opdesc_from_trace(t, fo, &f);
        d.fwd = &f;
    }
    mt_work_of(&d, w);
}

mt_work mt_work_scale(const mt_work *w, int batch_dependent, double batch_factor, int32_t tp_split) {
    mt_work r = *w;
    double f = batch_dependent ? batch_factor : 1.0;
    double s = tp_split > 1 ? 1.0 / (double)tp_split : 1.0;
    r.flops = w->flops * f * s;
    r.bytes_act = w->bytes_act * f * s;
    r.bytes_fixed = w->bytes_fixed * s;
    return r;
}
