/* tracer/match.h — matching Kineto events with Execution Trace nodes (match.c).
 *
 * Methods, first that works: Kineto "Record function id" == ET rf_id (when Kineto has any);
 * Kineto "External id" == ET rf_id; else order per thread (ET nodes of one tid by id against
 * the Kineto cpu_op/user_annotation events of one thread by ts, at the offset where names agree
 * best over the first 64, resynchronising over up to 16 events on a mismatch; the ET covers one
 * step, so it is aligned with each step and the best kept, ties to the later). A method works
 * when at least 90% of the pairs it makes have equal names and they are at least
 * opts->min_link_ratio of the ET's op nodes.
 * Invariant on success: kev.et_node is the index of the ET node matched to the event, only where
 * their (interned) names are equal, else -1. Cost: O(E + N) per id method; O(T^2 x E x 64) for
 * order over T threads, per step tried.
 */
#ifndef MT_TRACER_MATCH_H
#define MT_TRACER_MATCH_H

#include <stdint.h>

#include "tracer/et.h"
#include "tracer/khost.h"
#include "tracer/kineto.h"

/* Matches k (nested: ord from mt_khost_nest; steps from mt_khost_steps) with e, filling st. A
 * pair that does not match well enough is refused naming both files. */
mt_status mt_match_link(const char *kpath, kineto_data *k, const int32_t *ord, const char *epath, et_data *e,
                        const kstep *steps, int64_t n_steps, const trace_load_opts *opts, trace_link_stats *st,
                        mt_error *err);

#endif
