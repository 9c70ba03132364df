/* util/limits.h — the largest job mitosis takes.
 *
 * MT_MAX_GPUS is the one bound on a GPU count: --gpus and collective's --ranks (their flag checks,
 * which name the flag), a plan (extrapolate/plan.c), a collective schedule's ranks
 * (extrapolate/collective.c), a photonic model's endpoints and every topology preset's GPUs
 * (netmodels/topologies.h: switch:N, the default topology of --gpus N). So a count one of them
 * accepts, the others accept: `--gpus N` never fails on a topology the user did not type.
 * Raising it is this one line (and whatever memory and time the larger runs need).
 */
#ifndef MT_UTIL_LIMITS_H
#define MT_UTIL_LIMITS_H

#define MT_MAX_GPUS 1000000

#endif
