/* util/limits.h — the largest job mitosis takes: one named constant that every place bounding a
 * GPU count uses (the topology presets' size, --gpus/--dp/--tp/--pp/--ep, switch:N, compare's
 * --sweep gpus=, the photonic model's endpoints, `collective --ranks`), so that they agree.
 * 2^20 = 1,048,576 GPUs: a power of two so that dp x tp x pp of powers of two reach it exactly;
 * bench/bench_scale.sh measures DDP and a 3-D hybrid at this size (docs/scale.md).
 */
#ifndef MT_UTIL_LIMITS_H
#define MT_UTIL_LIMITS_H

#define MT_GPUS_MAX (1 << 20)

#endif
