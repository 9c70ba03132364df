/* report/csvout.h — the simulated step as CSV tables, written through libcsv (text fields
 * quoted by csv_fwrite, numbers bare; one header row; "\n" line ends).
 *
 * Into a directory (created with its parents when missing):
 *   ops.csv          gpu, stream, name, layer, phase, micro_batch, start_us, end_us, dur_us:
 *                    one row per operator of every compute span (laid out as in describe.h) and
 *                    one per collective, pipeline send and wait span, per GPU by start time.
 *                    Times are exact to the picosecond; a GPU's compute rows add up to its
 *                    compute_ms.
 *   gpus.csv         rank, dp, stage, tp, compute_ms, comm_ms, exposed_comm_ms, peer_wait_ms,
 *                    host_wait_ms, bubble_ms, idle_ms, step_ms, peak_mem_bytes, host_busy_ms,
 *                    host_sync_ms, waited_for (a rank, empty: none), waited_for_ms;
 *                    compute + host wait + exposed + peer wait + bubble + idle = step.
 *   layers.csv       layer_index, layer, compute_ms, comm_ms (sim/simulate.h's per-layer sums).
 *   links.csv        link, src, dst, bandwidth_GBps, bytes, busy_ms, utilisation, peak_flows:
 *                    every link of the topology (models with links: flow; header alone otherwise);
 *                    utilisation = bytes / (bandwidth x step time).
 *   collectives.csv  group, group_id, gpus, op, why, layer, bytes, algorithm, start_us, time_us,
 *                    algbw_GBps, busbw_GBps: one row per collective instance; algbw = bytes /
 *                    time, busbw = algbw x the nccl-tests factor (all-reduce 2(n-1)/n,
 *                    all-gather and reduce-scatter (n-1)/n, broadcast and reduce 1).
 * ops.csv and collectives.csv come from src->rec and show what it kept (every GPU, all time,
 * unless its filter says otherwise); without a recorder they hold their header alone.
 * Cost: O(rows) time, O(1) memory beyond the recorder (whose spans it sorts).
 */
#ifndef MT_REPORT_CSVOUT_H
#define MT_REPORT_CSVOUT_H

#include "report/describe.h"
#include "util/err.h"

/* Creates dir (and its parents) when missing and checks that files can be made in it, so that a
 * bad directory is reported before a long simulation. MT_EIO with a message naming it. */
mt_status mt_csv_prepare_dir(const char *dir, mt_error *err);

/* The names of the five files, NULL-terminated (for util/outpath.h's folder check). */
extern const char *const MT_CSV_FILES[];

/* Writes the five files into dir (mt_csv_prepare_dir first). MT_EIO naming the file that could
 * not be written, MT_ENOMEM when the recorder ran out of memory. */
mt_status mt_csv_write_dir(const mt_report_src *src, const char *dir, mt_error *err);

#endif
