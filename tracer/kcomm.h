/* tracer/kcomm.h — what the traced job communicated, from the Kineto trace alone (kcomm.c): the
 * job's world size, rank and process groups (distributedInfo), and for each of the step's
 * collective calls (trace_coll) its kind, bytes, dtype, group and process group, whether it is one
 * collective of the step or a call whose work ran elsewhere, and the op that issued it.
 *
 * Sources, first that says: record_param_comms' args ("Collective name", "In msg nelems",
 * "Out msg nelems", "dtype", "Group size", "Process Group Name" / "Description") anywhere in the
 * call's nest (the c10d:: op around it, an op such as DDP's AccumulateGrad around both); else the
 * tensors ("Input Dims", "Input type") of its backend event (nccl:*, gloo:*) and of its c10d:: op;
 * the group else from pg_config, a reduce-scatter's or all-gather's element ratio, or the world
 * size (marked as assumed, TRACE_GROUP_WORLD).
 * Invariant after mt_kcomm_instances: every call is an instance or not (trace_coll.instance), and
 * issued_by names a compute op or -1. Costs: dist O(groups), a call O(its nest's events), the
 * instances O(calls^2) in the worst case (a pending call matched by kind), O(calls + ops) typically.
 */
#ifndef MT_TRACER_KCOMM_H
#define MT_TRACER_KCOMM_H

#include <stdint.h>

#include "tracer/kineto.h"
#include "tracer/trace.h"

/* The document's distributedInfo into t->dist (world 0, rank -1 without it). Values that are not
 * what Kineto writes (a negative rank, a world of 0) are ignored, not refused: the trace is then
 * simply not known to be one rank of a job. MT_ENOMEM only. */
mt_status mt_kcomm_dist(const kineto_data *k, mt_trace *t);

/* Fills c's bytes, dtype, group, process group and wait flag (and its kind when the nest names
 * it better) from the events of its nest: the call's event at position pos of ord (the events by
 * thread and start, khost.h) and those nested in it. t->dist must be read. */
void mt_kcomm_call(const kineto_data *k, const int32_t *ord, int64_t pos, mt_trace *t, trace_coll *c);

/* Once every op and call is emitted (ops sorted): marks the calls that are the step's collectives
 * (trace_coll.instance) and the op that issued each (issued_by); a backend event with no call
 * around it (gloo's worker thread) takes the group and op of the earliest earlier call of its kind
 * that moved nothing itself. */
void mt_kcomm_instances(mt_trace *t);

#endif
