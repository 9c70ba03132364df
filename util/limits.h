/* util/limits.h — the largest job mitosis takes.
 *
 * MT_GPUS_MAX is the one bound on a GPU count: --gpus/--dp/--tp/--pp and collective's --ranks (their
 * flag checks, which name the flag), compare's --sweep gpus=, a plan (extrapolate/plan.c), a
 * collective schedule's ranks (extrapolate/collective.c), a photonic model's endpoints and every
 * topology preset's GPUs (netmodels/topologies.h: switch:N, the default topology of --gpus N). So a
 * count one of them accepts, the others accept: `--gpus N` never fails on a topology the user did
 * not type. 2^20 = 1,048,576 GPUs: a power of two so that dp x tp x pp of powers of two reach it
 * exactly; bench/bench_scale.sh measures DDP and a 3-D hybrid at this size (docs/scale.md).
 */
#ifndef MT_UTIL_LIMITS_H
#define MT_UTIL_LIMITS_H

#define MT_GPUS_MAX (1 << 20)

#endif
