/* report/clusterrep.h — a cluster run's answer (run/cluster.h) as text, JSON and CSV: per job its
 * placement, step alone and together, slowdown, exposed communication and peer waits, the links
 * where it met other jobs' traffic; the links shared most; the makespan and the worst slowdown.
 * Every format carries the same numbers (the JSON's): text rounds them, CSV writes them whole.
 */
#ifndef MT_REPORT_CLUSTERREP_H
#define MT_REPORT_CLUSTERREP_H

#include <stdio.h>

#include <jansson.h>

#include "extrapolate/plan.h"
#include "network/topology.h"
#include "sim/simulate.h"
#include "util/err.h"

/* A link where jobs met: its id and each job's bytes on it (alone runs). */
typedef struct mt_cluster_link {
    int32_t link;
    double total_bytes;
    int32_t n_jobs;           /* jobs with bytes on it (>= 2) */
} mt_cluster_link;

typedef struct mt_cluster_jobres {
    /* the job (borrowed from the cluster run that filled it) */
    const char *name, *trace, *placement; /* placement: its policy or list */
    const int32_t *gpus;                   /* fabric GPU per rank */
    int32_t n;
    double start_ms;
    mt_plan plan;                          /* as resolved */
    /* its runs */
    mt_sim_result *alone, *together;
    double alone_ms, together_ms, slowdown; /* per step (mean over its steps) */
    double exposed_ms, alone_exposed_ms;    /* the largest of its GPUs' exposed communication */
    double peer_ms;                         /* the largest of its GPUs' peer waits, together */
    double shared_bytes;                    /* its bytes (alone) on links other jobs used too */
    int32_t top_links[3];                   /* its shared links with most of its bytes, -1 none */
    double top_bytes[3], top_other[3];      /* its bytes there; the other jobs' */
} mt_cluster_jobres;

enum { MT_CLUSTER_HEAT = 32 };

typedef struct mt_cluster_result {
    const char *topology;      /* borrowed */
    const mt_topo *topo;       /* borrowed: link names */
    int32_t fabric_gpus, gpus_per_node;
    int32_t n_jobs;
    mt_cluster_jobres *jobs;
    int32_t n_links;           /* shared links, most bytes first */
    mt_cluster_link *links;
    int32_t n_heat;            /* the first min(n_links, MT_CLUSTER_HEAT) shared links ... */
    double *heat;              /* ... x n_jobs: each job's bytes on each (row-major) */
    double makespan_ms;        /* the last job's end, together */
    double worst_slowdown, mean_slowdown;
    int32_t worst_job;
    uint64_t events;           /* the together run's */
    int32_t alone_batches;     /* runs that gave the alone results (jobs sharing no link batched) */
    double wall_s;             /* all runs */
} mt_cluster_result;

/* `cluster --compare-placements`: the cluster under each placement policy, ranked by the worst
 * job's slowdown, then the mean (run/cluster.h mt_cluster_compare_placements fills it). */
enum { MT_CLUSTER_POLICIES_MAX = 16 };
typedef struct mt_cluster_placements {
    const char *topology;      /* borrowed */
    int32_t n_jobs;
    int n;                     /* rows, best first */
    struct {
        const char *placement; /* the policy's name (static) */
        double worst_slowdown, mean_slowdown, makespan_ms;
    } row[MT_CLUSTER_POLICIES_MAX];
} mt_cluster_placements;

json_t *mt_cluster_placements_json(const mt_cluster_placements *p);
void mt_cluster_placements_print(FILE *out, const mt_cluster_placements *p);

json_t *mt_cluster_json(const mt_cluster_result *r);
void mt_cluster_print(FILE *out, const mt_cluster_result *r);
/* DIR/jobs.csv (a row per job) and DIR/shared_links.csv (a row per shared link and job on it). */
mt_status mt_cluster_csv(const char *dir, const mt_cluster_result *r, mt_error *err);

/* A self-contained HTML report: the jobs as rows (slowdown bars), the shared links as a heat map
 * (a row per link, a column per job that used it, each cell its bytes there). */
mt_status mt_cluster_html(const char *path, const mt_cluster_result *r, mt_error *err);

/* The together run's spans for a timeline (--timeline): recorded through sim/simulate.h's span
 * observer, one mt_cluster_tap per job as its span_ctx. Memory O(spans). */
typedef struct mt_cluster_span {
    int32_t job, rank;
    int8_t kind;   /* mt_span_kind */
    int8_t coll;   /* MT_SPAN_COLL: its mt_coll_op */
    mt_time_ps start, end;
} mt_cluster_span;
typedef struct mt_cluster_spans {
    mt_cluster_span *v;
    size_t n, cap;
    int oom;
} mt_cluster_spans;
typedef struct mt_cluster_tap {
    mt_cluster_spans *to;
    int32_t job;
} mt_cluster_tap;
/* An mt_span_fn: ctx is an mt_cluster_tap. */
void mt_cluster_span_record(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start,
                            mt_time_ps end);
void mt_cluster_spans_free(mt_cluster_spans *s);
/* Perfetto / chrome://tracing JSON: one process per job (pid = job + 1, named after it), per GPU
 * of it a compute thread (ops, exposed, peer wait, bubble, host wait), a collective thread and a
 * send thread; absolute simulated time in us (a job starting later starts later). */
mt_status mt_cluster_timeline(const char *path, const mt_cluster_result *r, mt_cluster_spans *s, mt_error *err);

/* The placement of a job as GPU ranges in rank order ("0-7,16-23"), into buf (returned). */
const char *mt_cluster_gpus_str(const mt_cluster_jobres *j, char *buf, size_t len);

#endif
