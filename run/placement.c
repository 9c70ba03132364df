/* run/placement.c — see placement.h. */
#include "run/placement.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "util/ranges.h"
#include "util/u64map.h"

static int32_t nodes_of(const mt_fabric_slots *f) { return (f->total + f->gpn - 1) / f->gpn; }

/* The lowest free GPUs, in order. */
static mt_status place_packed(const mt_fabric_slots *f, int32_t n, uint64_t seed, int32_t *out, mt_error *err) {
    (void)seed, (void)err;
    int32_t k = 0;
    for (int32_t g = 0; g < f->total && k < n; g++)
        if (!f->used[g]) out[k++] = g;
    return MT_OK;
}

/* One GPU per node in turn: rank r on the (r mod nodes)-th node that still has a free GPU. */
static mt_status place_spread(const mt_fabric_slots *f, int32_t n, uint64_t seed, int32_t *out, mt_error *err) {
    (void)seed;
    int32_t nodes = nodes_of(f), k = 0;
    int32_t *next = calloc((size_t)nodes, sizeof *next); /* per node: the next local index to look at */
    if (!next) return mt_fail(err, MT_ENOMEM, "out of memory placing a job");
    while (k < n) {
        for (int32_t nd = 0; nd < nodes && k < n; nd++) {
            int32_t base = nd * f->gpn;
            while (next[nd] < f->gpn && base + next[nd] < f->total && f->used[base + next[nd]]) next[nd]++;
            if (next[nd] < f->gpn && base + next[nd] < f->total) out[k++] = base + next[nd]++;
        }
    }
    free(next);
    return MT_OK;
}

/* A uniform choice among the free GPUs (Fisher-Yates on splitmix64 draws from the seed). */
static mt_status place_random(const mt_fabric_slots *f, int32_t n, uint64_t seed, int32_t *out, mt_error *err) {
    int32_t *free_gpus = malloc((size_t)f->total * sizeof *free_gpus), m = 0;
    if (!free_gpus) return mt_fail(err, MT_ENOMEM, "out of memory placing a job");
    for (int32_t g = 0; g < f->total; g++)
        if (!f->used[g]) free_gpus[m++] = g;
    uint64_t s = seed;
    for (int32_t i = 0; i < n; i++) {
        s += 0x9E3779B97F4A7C15ull;
        int32_t j = i + (int32_t)(mt_hash64(s) % (uint64_t)(m - i));
        int32_t t = free_gpus[i];
        free_gpus[i] = free_gpus[j];
        free_gpus[j] = t;
        out[i] = free_gpus[i];
    }
    free(free_gpus);
    return MT_OK;
}

/* Ranks in rows of gpn: row q on one node, rank r at local index r mod gpn, so that the ranks a
 * data-parallel group joins across nodes sit on one rail; a row of k < gpn ranks (a job smaller
 * than a node, or its last row) takes k consecutive free local indices of one node. */
static mt_status place_rail(const mt_fabric_slots *f, int32_t n, uint64_t seed, int32_t *out, mt_error *err) {
    (void)seed;
    int32_t nodes = nodes_of(f);
    uint8_t *taken = calloc((size_t)nodes, 1); /* nodes this job's rows use */
    if (!taken) return mt_fail(err, MT_ENOMEM, "out of memory placing a job");
    for (int32_t r0 = 0; r0 < n; r0 += f->gpn) {
        int32_t k = n - r0 < f->gpn ? n - r0 : f->gpn, found = 0;
        for (int32_t nd = 0; nd < nodes && !found; nd++) {
            int32_t base = nd * f->gpn;
            if (taken[nd] || base + f->gpn > f->total) continue;
            for (int32_t s = 0; s + k <= f->gpn && !found; s += (k == f->gpn ? f->gpn : 1)) {
                int ok = 1;
                for (int32_t i = 0; i < k && ok; i++) ok = !f->used[base + s + i];
                if (!ok) continue;
                for (int32_t i = 0; i < k; i++) out[r0 + i] = base + s + i;
                taken[nd] = 1;
                found = 1;
            }
        }
        if (!found) {
            free(taken);
            return mt_fail(err, MT_EINVAL, "no node has %d free GPUs side by side for rail-aligned placement (use "
                           "packed or an explicit list)", (int)k);
        }
    }
    free(taken);
    return MT_OK;
}

static const mt_placement_policy PACKED = {"packed", "the lowest-numbered free GPUs: fill nodes in order",
                                           place_packed};
static const mt_placement_policy SPREAD = {"spread", "round-robin over nodes: rank r on the (r mod nodes)-th node "
                                           "with a free GPU", place_spread};
static const mt_placement_policy RANDOM = {"random", "free GPUs drawn at random, random:SEED (default seed 1)",
                                           place_random};
static const mt_placement_policy RAIL = {"rail-aligned", "whole rows of a node's GPUs, rank r at local index "
                                         "r mod G, so cross-node peers share a rail", place_rail};
const mt_placement_policy *const MT_PLACEMENT_POLICIES[] = {&PACKED, &SPREAD, &RANDOM, &RAIL, NULL};

static const mt_placement_policy *policy_of(const char *spec, uint64_t *seed) {
    *seed = 1;
    for (int i = 0; MT_PLACEMENT_POLICIES[i]; i++) {
        size_t len = strlen(MT_PLACEMENT_POLICIES[i]->name);
        if (strncmp(spec, MT_PLACEMENT_POLICIES[i]->name, len)) continue;
        if (!spec[len]) return MT_PLACEMENT_POLICIES[i];
        if (spec[len] == ':' && MT_PLACEMENT_POLICIES[i]->place == place_random) {
            char *end;
            errno = 0;
            if (!isdigit((unsigned char)spec[len + 1])) return NULL; /* strtoull takes "-1" as 2^64-1 */
            unsigned long long v = strtoull(spec + len + 1, &end, 10);
            if (end == spec + len + 1 || *end || errno) return NULL;
            *seed = v;
            return MT_PLACEMENT_POLICIES[i];
        }
    }
    return NULL;
}

int mt_placement_is_policy(const char *spec) {
    uint64_t seed;
    return policy_of(spec, &seed) != NULL;
}

/* An explicit list "0-7,16-23" in rank order: n distinct free GPUs. */
static mt_status place_list(const mt_fabric_slots *f, const char *job, const char *spec, int32_t n, int32_t *out,
                            mt_error *err) {
    uint8_t *mine = calloc((size_t)f->total, 1); /* GPUs listed so far */
    if (!mine) return mt_fail(err, MT_ENOMEM, "out of memory placing a job");
    int32_t k = 0;
    const char *p = spec;
    long a, b;
    int r = 0;
    mt_status rc = MT_OK;
    while (rc == MT_OK && (r = mt_range_next(&p, &a, &b)) > 0) {
        if (a < 0 || b < a || b >= f->total)
            rc = mt_fail(err, MT_EINVAL, "job %s: placement '%s': %ld-%ld is outside the fabric's GPUs 0-%d", job,
                         spec, a, b, (int)f->total - 1);
        for (long g = a; rc == MT_OK && g <= b; g++) {
            if (k == n)
                rc = mt_fail(err, MT_EINVAL, "job %s: placement '%s' lists more than its %d GPUs", job, spec, (int)n);
            else if (f->used[g])
                rc = mt_fail(err, MT_EINVAL, "job %s: placement '%s': GPU %ld is already taken by an earlier job "
                             "(placements must not overlap)", job, spec, g);
            else if (mine[g])
                rc = mt_fail(err, MT_EINVAL, "job %s: placement '%s' lists GPU %ld twice", job, spec, g);
            else
                mine[g] = 1, out[k++] = (int32_t)g;
        }
    }
    free(mine);
    if (rc != MT_OK) return rc;
    if (r < 0 || !*spec)
        return mt_fail(err, MT_EINVAL, "job %s: placement '%s' is neither a policy (packed, spread, random[:SEED], "
                       "rail-aligned) nor a list of GPUs such as 0-7,16-23", job, spec);
    if (k != n)
        return mt_fail(err, MT_EINVAL, "job %s: placement '%s' lists %d GPUs, the job's plan has %d", job, spec,
                       (int)k, (int)n);
    return MT_OK;
}

mt_status mt_place(mt_fabric_slots *f, const char *job, const char *spec, int32_t n, int32_t *out, mt_error *err) {
    int32_t free_n = 0;
    for (int32_t g = 0; g < f->total; g++) free_n += !f->used[g];
    if (n > free_n)
        return mt_fail(err, MT_EINVAL, "job %s needs %d GPUs; %d of the fabric's %d are free (a larger topology, or "
                       "fewer GPUs per job)", job, (int)n, (int)free_n, (int)f->total);
    uint64_t seed;
    const mt_placement_policy *pol = policy_of(spec, &seed);
    mt_status rc = pol ? pol->place(f, n, seed, out, err) : place_list(f, job, spec, n, out, err);
    if (rc != MT_OK) return pol ? mt_error_prefix(err, "job %s", job) : rc;
    for (int32_t i = 0; i < n; i++) f->used[out[i]] = 1;
    return MT_OK;
}
