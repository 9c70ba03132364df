/* tracer/ksync.h — where a Kineto trace shows the host waiting for the device (ksync.c): the
 * step's synchronising host calls (trace_sync).
 *
 * A host call is a synchronisation point when
 *  - it is one by name (cudaStreamSynchronize, cudaDeviceSynchronize, cudaEventSynchronize, a
 *    synchronous cudaMemcpy; their cu* and hip* forms), or
 *  - it is a memory copy (cudaMemcpyAsync, ...) to pageable host memory (CUDA returns only once
 *    the copy is done), or one whose timing shows that it waited for the device: its copy started
 *    before the call returned, although the work ahead of the copy on its stream ended only after
 *    the call began (the host stayed in the call until the device reached the copy).
 * It is blocked from its start to the end of its copy when it made one (what follows, copying out
 * of the staging buffer, is host work), else for the whole call; a copy waits for its own stream,
 * the other calls for every stream.
 * Invariant after mt_ksync_syncs: t->syncs is sorted by ts_ns, each given to the op whose host
 * interval [cpu_start, next op's cpu_start) holds it (-1 before the first op).
 * Cost: O(G log G + R log ops) for G device events and R runtime calls.
 */
#ifndef MT_TRACER_KSYNC_H
#define MT_TRACER_KSYNC_H

#include "tracer/kineto.h"
#include "tracer/trace.h"

/* Fills t->syncs with the step's synchronising calls. Runs after the ops are final (sorted by
 * cpu_start). MT_ENOMEM on allocation failure. */
mt_status mt_ksync_syncs(const kineto_data *k, trace *t);

#endif
