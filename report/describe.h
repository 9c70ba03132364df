/* report/describe.h — what the report writers (timeline.h, csvout.h) read, and what a recorded
 * span means: its stream, its name, its collective group and algorithm, the GPU a send goes to,
 * and the operators of a compute span laid out in time.
 *
 * A COMPUTE span holds the operators items[item_first ..] of its GPU's stage program; they ran
 * back to back from the span's start, each for its duration scaled by the span's length over
 * the task's (a GPU slowed by --gpu-speed stretches them alike), rounded so that the operators
 * tile the span exactly. Everything here is O(1) per call, except the item walk (O(1) a step).
 */
#ifndef MT_REPORT_DESCRIBE_H
#define MT_REPORT_DESCRIBE_H

#include <stddef.h>
#include <stdint.h>

#include "extrapolate/program.h"
#include "network/netmodel.h"
#include "network/topology.h"
#include "report/record.h"
#include "sim/simulate.h"

/* One finished simulation as the writers see it. The writers sort rec's spans. */
typedef struct mt_report_src {
    const mt_program *prog;    /* plan, stage programs, and the trace for op and layer names */
    const mt_sim_result *res;
    mt_recorder *rec;          /* the spans and link samples; NULL: none recorded */
    const mt_topo *topo;       /* link names and bandwidths; NULL when the model has none */
    const mt_netmodel *net;    /* per-link statistics (when mt_net_has_links); may be NULL */
    int32_t ranks_per_node;    /* as the simulation had it (mt_sim_opts), for algorithm names */
} mt_report_src;

/* The stream (timeline track, ops.csv `stream`) of a span. A pipeline send is drawn on its
 * sender's `send` stream and its arrival on the receiver's `recv` stream; `host` is the device
 * waiting for its host thread to launch work (host model). */
typedef enum {
    MT_STREAM_COMPUTE = 0,
    MT_STREAM_HOST,
    MT_STREAM_WAIT,
    MT_STREAM_TP,
    MT_STREAM_DP,
    MT_STREAM_RECV,
    MT_STREAM_SEND,
    MT_STREAM_COUNT
} mt_stream;

mt_stream mt_span_stream(const mt_span *s);
/* "compute", "host", "wait", "tp", "dp", "recv", "send". */
const char *mt_stream_name(mt_stream st);

/* The stage program rank runs. */
const mt_stage_program *mt_rank_stage(const mt_program *p, int32_t rank);
/* Layer name, or "" for -1 / out of range. */
const char *mt_layer_name(const mt_program *p, int32_t layer);
/* The phase of a non-compute span's work ("forward", "backward", ...; a send's from its
 * direction), "" when it has none. */
const char *mt_span_phase(const mt_span *s);

/* SEND spans: the receiving GPU. */
int32_t mt_send_peer(const mt_program *p, const mt_span *s);

/* COLL spans (and WAIT spans on a collective): the group's size, its first member (group rank
 * 0) and a label naming the group ("dp 1, stage 0" for a TP group, "stage 0, tp 1" for a DP
 * group) into buf. */
int32_t mt_coll_group(const mt_program *p, const mt_span *s, int32_t *first_rank, char *buf, size_t len);
/* The algorithm the collective ran (sim/simulate.h mt_sim_coll_algo). */
mt_coll_algo mt_coll_span_algo(const mt_report_src *src, const mt_span *s);
/* "tp-forward", "tp-backward", "dp-gradients". */
const char *mt_coll_why_name(mt_coll_why w);

/* A readable name into buf: "allreduce 26.21 MB (dp)", "send activations mb 3 to GPU 5",
 * "wait for activations mb 3 from GPU 4", "host launches aten::mm", "compute". receiving != 0
 * names a send's arrival
 * instead ("recv activations mb 3 from GPU 4"). Returns buf. */
char *mt_span_name(const mt_program *p, const mt_span *s, int receiving, char *buf, size_t len);

/* Walks the operators of a COMPUTE span. */
typedef struct mt_item_walk {
    const mt_item *items;
    int32_t n, i;
    int64_t total_ps, done_ps; /* sum of the items' durations; of those before item i */
    mt_time_ps start, len;     /* the span */
} mt_item_walk;

void mt_item_walk_init(mt_item_walk *w, const mt_program *p, const mt_span *s);
/* The next operator and its [start, end); 0 when there are no more. */
int mt_item_walk_next(mt_item_walk *w, const mt_item **item, mt_time_ps *start, mt_time_ps *end);

#endif
