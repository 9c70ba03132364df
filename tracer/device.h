/* tracer/device.h — what a trace was recorded on: a GPU (named or not), a CPU, or unknown.
 *
 * Read at load time, first answer wins:
 *   1. a Kineto trace's deviceProperties naming a device    -> GPU, that name
 *   2. the meta.json beside the trace (tracer/collect.py writes it; a shipped trace folder may
 *      carry one): "device": "cpu" -> CPU, "cuda[:N]"/"gpu" -> GPU, named by "device_name"
 *   3. GPU work in the trace: Kineto kernels, TrioSim CSV (CUDA times), Chakra GPU compute nodes
 *                                                             -> GPU, name unknown
 *   4. a Kineto trace with an empty deviceProperties and no kernels (PyTorch's CPU-only
 *      profiler output)                                       -> CPU
 *   5. otherwise (an Execution Trace alone)                    -> unknown
 * A meta.json naming a GPU also names the trace's GPU (trace.device_name) when the trace itself
 * does not (a TrioSim CSV), so the GPU table finds it.
 * Invariant after mt_trace_load: t->recorded_on.source is never NULL; kind CPU implies
 * t->device_name == NULL (a CPU is not in the GPU table) and that op times are CPU durations.
 */
#ifndef MT_TRACER_DEVICE_H
#define MT_TRACER_DEVICE_H

#include <jansson.h>

#include "tracer/trace.h"

/* Step 1 and the Kineto half of step 4 (tracer/link.c): name is the first deviceProperties entry's
 * name (NULL none), n_props the array's length (-1 when the document has none). */
void mt_device_from_kineto(mt_trace *t, const char *name, int n_props);

/* Steps 2-5, after the trace is built: dir_or_file is the trace's folder or one of its files
 * (meta.json is looked for in that folder). A meta.json that is not JSON, or whose "device" is
 * not a string, is ignored (its other readers report it). O(size of meta.json). */
void mt_device_resolve(mt_trace *t, const char *dir_or_file);

/* "cpu", "gpu", "unknown". */
const char *mt_device_kind_name(trace_dev_kind k);

/* One line for humans: "GPU NVIDIA H100 80GB HBM3 [Kineto deviceProperties]", "CPU AMD EPYC
 * [meta.json]", "unknown device [...]". Returns buf. */
char *mt_device_describe(const mt_trace *t, char *buf, size_t len);

/* {"kind": "cpu"|"gpu"|"unknown", "name": NAME|null, "source": ...}: every output's `recorded_on`. */
json_t *mt_device_json(const trace_device *d);

#endif
