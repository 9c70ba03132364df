/* run/placement.h — where a cluster job's ranks go on the fabric's GPUs: a policy from a table
 * (packed, spread, random, rail-aligned) or an explicit list.
 *
 * The fabric's GPUs are its endpoints in order (0..total-1), grouped into nodes of gpn
 * consecutive GPUs (GPU g is on node g / gpn, at local index g % gpn). Jobs are placed one after
 * another; `used` marks the GPUs earlier jobs took, and a placement takes only free GPUs, each
 * once. Invariant: a successful placement writes n distinct free GPUs into out (rank order) and
 * marks them used; a failed one (one line naming the job and what to do) changes nothing.
 * Deterministic: random uses its seed only.
 */
#ifndef MT_RUN_PLACEMENT_H
#define MT_RUN_PLACEMENT_H

#include <stdint.h>

#include "util/err.h"

typedef struct mt_fabric_slots {
    int32_t total;    /* GPUs of the fabric */
    int32_t gpn;      /* GPUs per node (>= 1) */
    uint8_t *used;    /* total entries: 1 = taken by an earlier job */
} mt_fabric_slots;

/* One policy: its name (as a job file writes it), what it does, how it picks n GPUs. */
typedef struct mt_placement_policy {
    const char *name;
    const char *help;
    mt_status (*place)(const mt_fabric_slots *f, int32_t n, uint64_t seed, int32_t *out, mt_error *err);
} mt_placement_policy;

/* The policies, NULL-terminated (the table the job file, --placement and the help read). */
extern const mt_placement_policy *const MT_PLACEMENT_POLICIES[];

/* Places job `job` (its name, for messages) of n ranks by spec: a policy name ("random" takes
 * "random:SEED", default seed 1) or an explicit list of GPUs and ranges in rank order
 * ("0-7,16-23"). */
mt_status mt_place(mt_fabric_slots *f, const char *job, const char *spec, int32_t n, int32_t *out, mt_error *err);

/* 1 when spec names a policy (not an explicit list). */
int mt_placement_is_policy(const char *spec);

#endif
