/* include/mitosis.h — libmitosis, the public C API of mitosis: load a one-GPU trace once,
 * simulate it on N GPUs under a plan, compare plans or sweep a setting, and read the answers by
 * accessor or as the JSON `mitosis simulate --json` / `mitosis compare --json` print.
 *
 * Shape (after SQLite and libcurl's easy API): opaque handles, each *_new / *_open paired with a
 * *_free that cannot fail; options set by name on a configuration handle; one call runs; results
 * read back by getters. Every fallible function returns a mitosis_code (MITOSIS_OK == 0) and, on
 * failure, fills the caller's mitosis_error (may be NULL) with the code and the one-line message
 * the command line prints after "mitosis CMD: ". Misuse never crashes: a NULL handle, output
 * pointer, name, file or argv (or argc below 0) is MITOSIS_EINVAL naming the function and the
 * argument ("mitosis_simulate: argument 'out' is NULL"); a getter given a NULL handle answers NaN
 * (a double), -1 (a count or size) or NULL (a string); *_free(NULL) does nothing.
 *
 * Options: a configuration is built for one command ("simulate" or "compare") from named options,
 * the long flags of `mitosis CMD --help` without the leading "--" (or with it): "gpus" = "8",
 * "topology" = "dgx-h100", "sp" = NULL (a switch; "true"/"false" too). They go through the same
 * flag tables and checks as the command line, so a misspelt option, a value out of range or a
 * combination that cannot mean anything is refused with the CLI's message. Output flags (--json,
 * --timeline, --csv, --html ...) are not options here: read the result, or mitosis_result_write.
 *
 * Threads: handles are independent: different threads may simulate at once (on one trace too: a
 * trace is only read once opened); one handle is not to be used by two threads at once. The
 * library has one lock, and it is the process's (run/job.h's lock policy, the same for `mitosis
 * serve`'s workers and compare's threads): Debian's igraph is not thread-safe (its error handler
 * and "finally" stack are globals), so every call into it (building, freezing and freeing a
 * topology, the network model) runs under one process-wide recursive lock; a run whose simulation
 * calls igraph throughout (--routing latency) and mitosis_cluster hold that lock for the whole
 * run. Nothing else is serialised: other runs go on at once and give the serial results (checked
 * by ThreadSanitizer in CI). A program that calls igraph itself, on other threads, races with the
 * library: there is no way to take the lock from outside. Lifetimes: a result or comparison
 * keeps what it needs of its configuration, but reads the trace: free them before the trace.
 * Process-wide side effects, once per process, at the first mitosis_trace_open,
 * mitosis_config_new or mitosis_cluster (and at the start of the `mitosis` binary): igraph's error
 * handler becomes "print and ignore" and its warning handler "ignore" (an igraph error is a
 * mitosis error, not an abort), and OpenBLAS runs on one thread (openblas_set_num_threads(1): the
 * fits are small and the library's callers bring their own threads). A program that uses igraph
 * or OpenBLAS itself sees these settings, and a handler it sets before that first call is
 * replaced. Nothing else global is changed: no signal handler, locale, environment variable,
 * working directory or umask; files are written only where a call is told to (a folder's files
 * staged beside it, then moved in).
 * Versioning: the soname is libmitosis.so.MITOSIS_ABI; only symbols prefixed mitosis_ are exported.
 */
#ifndef MITOSIS_H
#define MITOSIS_H

#ifdef __cplusplus
extern "C" {
#endif

#define MITOSIS_VERSION "0.2.0"
#define MITOSIS_VERSION_NUMBER 2000 /* major * 1000000 + minor * 1000 + patch */
#define MITOSIS_ABI 0               /* the soname's number: changes when this header breaks callers */

#if defined(MITOSIS_BUILDING) && defined(__GNUC__)
#define MITOSIS_API __attribute__((visibility("default")))
#else
#define MITOSIS_API
#endif

/* The codes (the CLI's exit code for each: mitosis_exit_code). */
enum mitosis_code {
    MITOSIS_OK = 0,
    MITOSIS_EIO = 1,      /* file missing or unreadable */
    MITOSIS_EFORMAT = 2,  /* malformed input */
    MITOSIS_EINVAL = 3,   /* bad option or impossible plan / topology */
    MITOSIS_ENOMEM = 4,
    MITOSIS_ENOROUTE = 5, /* the topology has no route between two GPUs */
    MITOSIS_ESTUCK = 6,   /* the simulation ended with work pending */
    MITOSIS_EINTERNAL = 7 /* a bug */
};

enum { MITOSIS_ERROR_MAX = 1024 };

typedef struct mitosis_error {
    int code;                          /* enum mitosis_code */
    char message[MITOSIS_ERROR_MAX];   /* one line, "" when code is MITOSIS_OK */
} mitosis_error;

typedef struct mitosis_trace mitosis_trace;           /* a loaded trace (read-only once open) */
typedef struct mitosis_config mitosis_config;         /* a command and its named options */
typedef struct mitosis_result mitosis_result;         /* one simulation */
typedef struct mitosis_comparison mitosis_comparison; /* a compare: ranked plans or a sweep */

/* "0.2.0" (the library's, which may differ from the header's MITOSIS_VERSION). */
MITOSIS_API const char *mitosis_version(void);
/* The code's short name ("invalid argument", as mt_status_name); "?" for an unknown code. */
MITOSIS_API const char *mitosis_code_name(int code);
/* The exit code the CLI gives for a code: 0, 2 bad input, 3 stuck, 70 internal. */
MITOSIS_API int mitosis_exit_code(int code);
/* Frees a string the library returned as owned by the caller (mitosis_trace_json). */
MITOSIS_API void mitosis_string_free(char *s);

/* ---- traces ------------------------------------------------------------------------------ */

/* Loads a trace: a folder, or its files (Kineto JSON + Execution Trace, a TrioSim CSV, ...), as
 * `mitosis inspect` does; step -1: the step the ET covers (else ProfilerStep#step). Operator times
 * are checked when the trace is first simulated. Cost: reading the files. */
MITOSIS_API int mitosis_trace_open(const char *const *paths, int n_paths, int step, mitosis_trace **out,
                                   mitosis_error *err);
MITOSIS_API void mitosis_trace_free(mitosis_trace *t);
/* The summary `mitosis inspect --json` prints (with "ops" listing every operator when ops != 0),
 * malloc'd: free with mitosis_string_free. NULL when out of memory. */
MITOSIS_API char *mitosis_trace_json(const mitosis_trace *t, int ops);
/* Counts and the traced batch (0 unknown). */
MITOSIS_API int mitosis_trace_ops(const mitosis_trace *t);
MITOSIS_API long long mitosis_trace_batch(const mitosis_trace *t);

/* ---- configurations ----------------------------------------------------------------------- */

/* A configuration for command "simulate" or "compare", with every option at its default. */
MITOSIS_API int mitosis_config_new(const char *command, mitosis_config **out, mitosis_error *err);
MITOSIS_API void mitosis_config_free(mitosis_config *c);
/* A copy (its options and their values). NULL when out of memory. */
MITOSIS_API mitosis_config *mitosis_config_copy(const mitosis_config *c);
/* Sets option `name` ("gpus" or "--gpus") to `value` (NULL, "true" or "" for a switch; "false"
 * unsets a switch). A repeatable option (slow-gpu, slow-link, fail-link, scenario) adds a value;
 * any other replaces its earlier one. The whole configuration is then checked as the command line
 * would check it; on failure the configuration is unchanged. Cost: O(options x flags). */
MITOSIS_API int mitosis_config_set(mitosis_config *c, const char *name, const char *value, mitosis_error *err);
/* Removes every value of option `name` (MITOSIS_OK when it was not set). */
MITOSIS_API int mitosis_config_unset(mitosis_config *c, const char *name, mitosis_error *err);
/* Sets options from command-line words ("--gpus", "8", "--sp", ...), each as mitosis_config_set. */
MITOSIS_API int mitosis_config_set_args(mitosis_config *c, int argc, const char *const *argv, mitosis_error *err);
/* The command, and the options as command-line words (argv-style, for messages and replay):
 * the count, and word i (NULL out of range). */
MITOSIS_API const char *mitosis_config_command(const mitosis_config *c);
MITOSIS_API int mitosis_config_words(const mitosis_config *c);
MITOSIS_API const char *mitosis_config_word(const mitosis_config *c, int i);

/* ---- simulate ----------------------------------------------------------------------------- */

/* `mitosis simulate` on t with a "simulate" configuration. Cost: the simulation's (twice with a
 * perturbing what-if: the unperturbed baseline). */
MITOSIS_API int mitosis_simulate(const mitosis_trace *t, const mitosis_config *c, mitosis_result **out,
                                 mitosis_error *err);
MITOSIS_API void mitosis_result_free(mitosis_result *r);
/* The step time in ms (mean over --steps); the unperturbed baseline's (0 without a what-if). */
MITOSIS_API double mitosis_result_step_ms(const mitosis_result *r);
MITOSIS_API double mitosis_result_base_step_ms(const mitosis_result *r);
/* The GPUs simulated and the resolved plan's sizes. */
MITOSIS_API int mitosis_result_gpus(const mitosis_result *r);
MITOSIS_API int mitosis_result_dp(const mitosis_result *r);
MITOSIS_API int mitosis_result_tp(const mitosis_result *r);
MITOSIS_API int mitosis_result_pp(const mitosis_result *r);
/* The largest estimated peak memory of a GPU, bytes; GPU i's (0 out of range). */
MITOSIS_API double mitosis_result_peak_mem_bytes(const mitosis_result *r);
MITOSIS_API double mitosis_result_gpu_mem_bytes(const mitosis_result *r, int gpu);
/* Samples per second (-1 unknown batch). */
MITOSIS_API double mitosis_result_samples_per_s(const mitosis_result *r);
/* What `mitosis simulate --json` prints, byte for byte (owned by r). */
MITOSIS_API const char *mitosis_result_json(const mitosis_result *r);
/* The warnings the CLI prints after the result ("GPU 3 needs an estimated ... GB ..."). */
MITOSIS_API int mitosis_result_warnings(const mitosis_result *r);
MITOSIS_API const char *mitosis_result_warning(const mitosis_result *r, int i);
/* Writes a file of the run: `what` is an output's name ("timeline": Perfetto JSON, "csv": a folder
 * of tables, "html": the report, "chakra": Chakra ET per rank, "kineto": PyTorch-profiler JSON
 * per rank; the list is mitosis_output_name below), the same as `mitosis simulate --NAME PATH`.
 * The simulation runs again with a recorder (it is deterministic: the same numbers), so this
 * costs a run. The configuration's options of that output apply ("chakra-json", "chakra-ranks",
 * "chakra-comm-only", "kineto-ranks", "timeline-gpus", "timeline-window": simulate's output options);
 * one of another output is refused, and so is a path the CLI refuses, with its message. */
/* The outputs mitosis_result_write takes (one table with the CLI's output flags and the web
 * API's files): their count; the i-th's name, its one-line help, and 1 when it is a folder (NULL
 * or -1 out of range). */
MITOSIS_API int mitosis_outputs(void);
MITOSIS_API const char *mitosis_output_name(int i);
MITOSIS_API const char *mitosis_output_help(int i);
MITOSIS_API int mitosis_output_is_dir(int i);
MITOSIS_API int mitosis_result_write(const mitosis_result *r, const char *what, const char *path,
                                     mitosis_error *err);

/* ---- compare ------------------------------------------------------------------------------ */

/* ---- clusters ---------------------------------------------------------------------------- */

/* `mitosis cluster FILE --json` (docs/cluster.md): the jobs of a cluster file placed on its fabric
 * (placement: a policy overriding the file's policy-placed jobs, or NULL), simulated together and
 * alone. *json: the CLI's JSON text, freed with mitosis_string_free. */
MITOSIS_API int mitosis_cluster(const char *file, const char *placement, char **json, mitosis_error *err);

/* The --topology template spec for one run of gpus GPUs, as compare --sweep fills it: {gpus} is
 * gpus, {nodes} gpus / gpus_per_node, refused when gpus does not fill whole nodes. *out: the spec,
 * freed with mitosis_string_free. */
MITOSIS_API int mitosis_topology_fill(const char *spec, int gpus, int gpus_per_node, char **out, mitosis_error *err);

/* `mitosis compare` on t with a "compare" configuration: every plan for --gpus, a --plans list,
 * or one plan under --sweep NAME=VALUES. Cost: one simulation per row, on "jobs" threads. */
MITOSIS_API int mitosis_compare(const mitosis_trace *t, const mitosis_config *c, mitosis_comparison **out,
                                mitosis_error *err);
MITOSIS_API void mitosis_comparison_free(mitosis_comparison *c);
/* What `mitosis compare --json` prints, byte for byte but "wall_s" (owned by c). */
MITOSIS_API const char *mitosis_comparison_json(const mitosis_comparison *c);
/* The rows (ranked fastest first for plans, in order for a sweep); row i's label, step time (0
 * for a skipped row), peak memory per GPU (bytes) and whether it ran; the fastest row (-1 none). */
MITOSIS_API int mitosis_comparison_rows(const mitosis_comparison *c);
MITOSIS_API const char *mitosis_comparison_label(const mitosis_comparison *c, int i);
MITOSIS_API double mitosis_comparison_step_ms(const mitosis_comparison *c, int i);
MITOSIS_API double mitosis_comparison_mem_bytes(const mitosis_comparison *c, int i);
MITOSIS_API int mitosis_comparison_ran(const mitosis_comparison *c, int i);
MITOSIS_API int mitosis_comparison_best(const mitosis_comparison *c);

#ifdef __cplusplus
}
#endif

#endif
