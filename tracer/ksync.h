/* tracer/ksync.h — where a Kineto trace shows the host or a stream waiting (ksync.c): the step's
 * synchronising host calls (trace_sync) and its waits of one stream for another (trace_wait).
 *
 * A host call is a synchronisation point when
 *  - it is one by name (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, a
 *    synchronous cudaMemcpy; their cu* and hip* forms), or
 *  - it is a memory copy (cudaMemcpyAsync, ...) to pageable host memory (CUDA returns only once
 *    the copy is done), or one whose timing shows that it waited for the device: its copy started
 *    before the call returned, although the work ahead of the copy on its stream ended only after
 *    the call began (the host stayed in the call until the device reached the copy).
 * It is blocked from its start to the end of its copy when it made one (what follows, copying out
 * of the staging buffer, is host work), else for the whole call. A copy waits for its own stream,
 * a stream or event synchronisation for the stream its cuda_sync event names, the others (and
 * every call of a trace without cuda_sync events) for every stream.
 *
 * A stream waits for another where the trace's cuda_sync "Stream Wait Event" events say so
 * (PyTorch >= 2.3: the waiting stream, the stream and the cudaEventRecord call waited for). A
 * trace without them has only its cudaStreamWaitEvent calls: the waiting stream is that of the
 * next device work its thread launches, and it waits (as of the call) for the other stream whose
 * work launched before the call ended last, no later than that next work started in the trace.
 *
 * Invariant after mt_ksync_find: t->syncs and t->waits are sorted by ts_ns, each given to the op
 * whose host interval [cpu_start, next op's cpu_start) holds its call (-1 before the first op).
 * Cost: O((G + R) log (G + R) + R log ops) for G device events and R runtime calls.
 */
#ifndef MT_TRACER_KSYNC_H
#define MT_TRACER_KSYNC_H

#include "tracer/kineto.h"
#include "tracer/trace.h"

/* Fills t->syncs and t->waits with the step's synchronising calls and stream waits. Runs after
 * the ops are final (sorted by cpu_start). MT_ENOMEM on allocation failure. */
mt_status mt_ksync_find(const kineto_data *k, mt_trace *t);

#endif
