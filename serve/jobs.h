/* serve/jobs.h — the web UI's runs: a bounded queue and `workers` threads that call run/
 * (simulate or compare), with each run's state, progress, answer and files; cancellation, limits
 * and eviction.
 *
 * A run: submitted with its parsed options (serve/options.h, checked before it is queued, so a
 * bad option is a 400 and never a failed run); queued -> running -> done | failed | cancelled
 * (queued -> cancelled directly). Done: the result is the JSON `mitosis simulate --json` /
 * `compare --json` / `cluster --json` prints for the same options (report/summary.h
 * mt_summary_json, report/comparison.h mt_comparison_json, report/clusterrep.h mt_cluster_json)
 * but for the server's folders, written as catalogue ids (serve/catalog.h mt_catalog_redact), plus
 * the verdict (report/verdict.h): simulate's "speedup", "efficiency", "one_gpu" (its one-GPU
 * baseline, run/compare.h mt_compare_baseline: one more one-GPU simulation) and "holdback"; each
 * compare row's "efficiency" and "holdback". Files, in the run's folder under the catalogue's
 * private folder: result.json and report.html always (a cluster run: its job file cluster.json too); timeline.json (GPUs 0-15) and the CSV tables
 * (simulate) only when the request asked for them (mt_jobs_want_bit). Failed: the run's one-line
 * error. Progress: compare reports plan i of n (run/compare.h's callback); simulate the tasks
 * simulated of all GPUs' programs (label "tasks simulated"; 0 while the trace loads and the run is
 * built); a queued run its place in the queue (1: next).
 *
 * Limits (mt_jobs_config): each run carries a budget (util/budget.h) bound to its worker thread:
 * it is refused before it starts when its estimate (run/estimate.h) exceeds max_events,
 * max_run_s or max_mem_bytes, stopped at max_run_s of wall time (the engine checks between
 * events, compare between plans), and stopped within a second by mt_jobs_cancel. What the files
 * record is held under max_run_bytes of memory (report/record.h: past it they stop, and the status
 * says where: "files_note"), and files over max_run_bytes on disk are dropped (result.json and
 * report.html kept); a result.json over max_run_bytes fails the run (one line naming the flag).
 * A finished run keeps no result in memory (it is read from result.json when asked for), and what
 * it does hold (its request) counts with its files against keep_bytes. At most max_queued runs
 * wait. Finished runs beyond keep_runs, or whose files and memory pass keep_bytes in all, are
 * removed oldest first; a download in progress keeps its open file (a
 * removed file stays readable through an open descriptor), and a removed run answers 404.
 *
 * Threads: `workers` runs at once. The simulation is thread-safe but for igraph (Debian builds it
 * without IGRAPH_THREAD_SAFE: its error and "finally" stacks are globals): topologies are built and
 * freed under run/pool.h's process-wide lock, and a --routing latency run (igraph's Dijkstra in
 * every route search while it simulates) holds that lock for its whole run, so it runs alone
 * beside other runs' simulation but never beside another build. Everything else a run touches is
 * its own (its options, input, scenario copy, engine, network, recorder), and the readers keep no
 * global state (compare already runs its plans on threads: run/pool.h).
 * Invariant: a run's state only moves forward; its result and files are set once, when it ends,
 * and never change after (they may be removed whole).
 * Thread safety: all functions may be called from any thread (one mutex and a condition).
 * Costs: O(1) per call besides the JSON built and the queue position (O(queued)); eviction
 * O(runs kept) per finished run.
 */
#ifndef MT_SERVE_JOBS_H
#define MT_SERVE_JOBS_H

#include <stddef.h>

#include <jansson.h>

#include "serve/catalog.h"
#include "serve/options.h"
#include "util/err.h"

/* The files of a run come from the output table (run/outputs.h): an output with a `web` name is
 * written into the run's folder under it; MT_JOBS_ALWAYS of every simulate run, the others only
 * when the request asks for them by name ("files": ["timeline", "csv"]). A request's `want` has
 * bit mt_jobs_want_bit(name) for each. */
#define MT_JOBS_ALWAYS "html"
/* The bit of an optional output the server offers ("timeline"), 0 for any other name. */
unsigned mt_jobs_want_bit(const char *name);

typedef struct mt_jobs_config {
    int workers;             /* runs at once (default 2) */
    int max_queued;          /* runs waiting at most (default 64); past it a submit is refused */
    int keep_runs;           /* finished runs kept (default 200) */
    double keep_bytes;       /* their files on disk and requests in memory, all together (default 1 GiB) */
    double max_run_s;        /* wall-clock limit of a run, and of its estimate (default 600) */
    double max_events;       /* engine events a run may be estimated at (default 2e9) */
    double max_mem_bytes;    /* memory a run may be estimated at (default: physical / (workers + 1)) */
    double max_run_bytes;    /* one run's files and result.json, and what they record in memory (default 64 MiB) */
} mt_jobs_config;

/* The defaults above (the memory one from this machine's physical memory). */
void mt_jobs_config_init(mt_jobs_config *c);

typedef struct mt_jobs mt_jobs;

/* Starts the workers; run folders go under dir (which must exist). The catalogue's paths are
 * taken out of every run's result, files and error (mt_catalog_redact): a client never sees the
 * server's paths. cat outlives the runs. */
mt_status mt_jobs_new(const char *dir, const mt_catalog *cat, const mt_jobs_config *c, mt_jobs **out,
                      mt_error *err);
/* Cancels every run (queued and running), waits for the workers (a running run stops within
 * MT_BUDGET_EVERY events) and frees everything; removes nothing on disk. */
void mt_jobs_free(mt_jobs *j);

/* Queues a run; takes o (its contents move into the run, o is left empty). want: MT_JOBS_WANT_*
 * bits. *id: the run's id. request: the client's body, kept for the status. MT_EINVAL when
 * max_queued runs already wait. */
mt_status mt_jobs_submit(mt_jobs *j, mt_serve_opts *o, const char *trace_id, const json_t *request, unsigned want,
                         int *id, mt_error *err);
/* Cancels run id: a queued run at once, a running one as soon as its worker sees it (the status
 * says "cancelled" then); a finished run is removed with its files. Returns its status JSON after
 * the call ({id, status}), NULL when there is no such run. */
json_t *mt_jobs_cancel(mt_jobs *j, int id);
/* {id, command, trace, request, status, queue_position, progress{done,total,label}, elapsed_s,
 * error, files[], files_note} of run id (a new reference), NULL when there is none (never was, or
 * removed). A done run's result is not held in memory: *result_fd is its result.json opened for
 * reading (the caller closes it; it stays readable if the run is removed meanwhile), -1 when the
 * run is not done. */
json_t *mt_jobs_status_json(mt_jobs *j, int id, int *result_fd);
/* [{id, command, trace, status, queue_position}] of every run kept, newest last. */
json_t *mt_jobs_list_json(mt_jobs *j);
/* The path of file `name` of a finished run into buf, when the run has it (names: the entries of
 * files[] in its status). Returns 0 when it has not (unknown run, not done, no such file). */
int mt_jobs_file(mt_jobs *j, int id, const char *name, char *buf, size_t len);
/* The content type of a run file name ("text/html; charset=utf-8"). */
const char *mt_jobs_file_type(const char *name);

/* Runs kept and their files' bytes on disk (tests, the status line). */
void mt_jobs_usage(mt_jobs *j, int *runs, double *bytes);

#endif
