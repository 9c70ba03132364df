/* tracer/triosim.h — a trace from TrioSim's merged CSV pair (readers and builder: triosim.c).
 *
 * The readers (mt_reader_triosim_ops, mt_reader_triosim_tensors in reader.h) load trace.csv and
 * tensor.csv as tables; mt_triosim_build turns the two tables into the trace's ops (file order,
 * back to back, one synthetic kernel each of its Operator_cudatimenooverlap, else of its
 * Operator_cudatime with t->warning saying so), tensors and tensor uses. A file cut short is an
 * error naming its line; one cut at a line break sets t->warning (see triosim.c).
 * Cost: O(cells).
 */
#ifndef MT_TRACER_TRIOSIM_H
#define MT_TRACER_TRIOSIM_H

#include "tracer/csvtable.h"
#include "tracer/trace.h"

/* Builds t (pool set, everything else empty) from the tables; messages name the file and line. */
mt_status mt_triosim_build(const char *trace_csv, const csv_table *ops, const char *tensor_csv,
                           const csv_table *tensors, mt_trace *t, mt_error *err);

#endif
