/* serve/jobs.h — the web UI's runs: a queue and ONE worker thread that calls run/ (simulate or
 * compare), with each run's state, progress, answer and files.
 *
 * Why one worker: Debian's igraph is built without thread safety (IGRAPH_THREAD_SAFE 0: its
 * error and "finally" stacks are globals), and every simulation builds igraph topologies, so runs
 * must not overlap; a single worker serialises them without a lock around run/. Requests are
 * answered by the HTTP threads meanwhile (they only parse, list and read files).
 *
 * A run: submitted with its parsed options (serve/options.h, checked before it is queued, so a
 * bad option is a 400 and never a failed run); queued -> running -> done | failed. Done: the
 * result is exactly the JSON `mitosis simulate --json` / `compare --json` prints for the same
 * options (report/summary.h mt_summary_json, report/comparison.h mt_comparison_json) but for the
 * server's folders, written as catalogue ids (serve/catalog.h mt_catalog_redact), and the
 * files sit in the run's folder under the catalogue's private folder: report.html (both),
 * timeline.json (GPUs 0-15) and the CSV tables (simulate). Failed: the run's one-line error.
 * Progress: compare reports plan i of n (run/compare.h's callback); simulate only its elapsed
 * time. Runs live as long as the server (a restart loses them; in-flight ones are not resumed).
 * Invariant: a run's state only moves forward (queued -> running -> done | failed); its result
 * and files are set once, when it is done, and never change after.
 * Thread safety: all functions may be called from any thread (one mutex and a condition).
 * Costs: O(1) per call besides the JSON built; the worker's run costs the run's.
 */
#ifndef MT_SERVE_JOBS_H
#define MT_SERVE_JOBS_H

#include <stddef.h>

#include <jansson.h>

#include "serve/catalog.h"
#include "serve/options.h"
#include "util/err.h"

enum { MT_JOBS_MAX = 10000 };

typedef struct mt_jobs mt_jobs;

/* Starts the worker; run folders go under dir (which must exist). The catalogue's paths are
 * taken out of every run's result, files and error (mt_catalog_redact): a client never sees the
 * server's paths. cat outlives the runs. */
mt_status mt_jobs_new(const char *dir, const mt_catalog *cat, mt_jobs **out, mt_error *err);
/* Stops the worker after the run in progress (queued runs are dropped), removes nothing. */
void mt_jobs_free(mt_jobs *j);

/* Queues a run; takes o (its contents move into the run, o is left empty). *id: the run's id.
 * request: the client's body, kept for the status. MT_EINVAL past MT_JOBS_MAX runs. */
mt_status mt_jobs_submit(mt_jobs *j, mt_serve_opts *o, const char *trace_id, const json_t *request, int *id,
                         mt_error *err);
/* {id, command, trace, options, status, progress{done,total,label}, elapsed_s, error, files[],
 * result} of run id (a new reference), NULL when there is none. */
json_t *mt_jobs_status_json(mt_jobs *j, int id);
/* [{id, command, trace, status}] of every run, newest last. */
json_t *mt_jobs_list_json(mt_jobs *j);
/* The path of file `name` of a finished run into buf, when the run has it (names: the entries of
 * files[] in its status). Returns 0 when it has not (unknown run, not done, no such file). */
int mt_jobs_file(mt_jobs *j, int id, const char *name, char *buf, size_t len);
/* The content type of a run file name ("text/html; charset=utf-8"). */
const char *mt_jobs_file_type(const char *name);

#endif
