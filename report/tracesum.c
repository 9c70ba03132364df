/* report/tracesum.c — see tracesum.h. */
#include "report/tracesum.h"

#include <stdlib.h>
#include <string.h>

#include "extrapolate/blocks.h"
#include "extrapolate/traced.h"
#include "perfmodel/work.h"
#include "tracer/device.h"
#include "util/units.h"

static double ms(int64_t ns) { return (double)ns / 1e6; }

/* Streams that ran compute kernels (kernels of no known stream count as one). */
static int32_t compute_streams(const mt_trace *t) {
    int32_t n = 0, seen[64];
    for (int32_t i = 0; i < t->n_kernels && n < 64; i++) {
        if (t->kernels[i].comm) continue;
        int32_t q = 0;
        while (q < n && seen[q] != t->kernels[i].stream) q++;
        if (q == n) seen[n++] = t->kernels[i].stream;
    }
    return n;
}

/* CPU time of the trace's own collective calls. */
static int64_t coll_calls_ns(const mt_trace *t) {
    int64_t ns = 0;
    for (int32_t i = 0; i < t->n_colls; i++) ns += t->colls[i].dur_ns;
    return ns;
}

/* The traced step that a measurement compares with: the wall time with kernels, else the op sum. */
static double traced_ms(const mt_trace *t) {
    return t->has_device_time ? ms(t->step_end_ns - t->step_start_ns) : ms(mt_trace_total_dev_ns(t));
}

/* The step's own collectives, one per instance (trace_coll.instance). */
static json_t *collectives_json(const mt_trace *t) {
    json_t *a = json_array();
    for (int32_t i = 0; i < t->n_colls; i++) {
        const trace_coll *c = &t->colls[i];
        if (!c->instance) continue;
        const trace_op *op = c->op >= 0 && c->op < t->n_ops ? &t->ops[c->op] : NULL;
        json_array_append_new(a, json_pack("{s:s?,s:s,s:f,s:i,s:s,s:s?,s:s?,s:s,s:f}", "op", op ? op->name : NULL,
                                           "collective", mt_trace_comm_name(c->kind), "bytes", c->bytes,
                                           "group_size", c->group, "group_from", mt_trace_group_src_name(c->group_src),
                                           "dtype", c->dtype, "process_group", c->pg, "phase",
                                           mt_trace_phase_name(op ? op->phase : TRACE_PHASE_OTHER), "host_ms",
                                           ms(c->dur_ns)));
    }
    return a;
}

static json_t *traced_plan_json(const mt_trace *t) {
    mt_traced_plan p;
    mt_traced_plan_read(t, &p);
    json_t *o = json_pack("{s:i,s:i,s:s?,s:b,s:i,s:i,s:f,s:f,s:s}", "world_size", p.world_size, "rank", p.rank,
                          "backend", p.backend, "multi_rank", p.multi_rank, "collectives", p.n_colls,
                          "groups_assumed", p.n_group_assumed, "allreduce_bytes", p.allreduce_bytes,
                          "allreduce_param_share", p.param_share, "parameter_sync", mt_traced_sync_name(p.sync));
    if (p.sync == MT_TRACED_PIPELINE) json_object_set_new(o, "pipeline_micro_batches", json_integer(p.pipe_micro));
    json_t *kinds = json_object();
    for (int k = 0; k <= TRACE_COMM_OTHER; k++) {
        const mt_traced_kind *x = &p.kinds[k];
        if (x->count)
            json_object_set_new(kinds, mt_trace_comm_name((trace_comm)k),
                                json_pack("{s:i,s:f,s:i,s:i}", "count", x->count, "bytes", x->bytes, "group_min",
                                          x->group_min, "group_max", x->group_max));
    }
    json_object_set_new(o, "by_kind", kinds);
    return o;
}

/* What tensor parallelism sees in the forward pass: ops per TP kind (the classifier's), and the
 * ops no rule recognises (class unknown): they stay replicated outside a column region. */
static const char *const tp_kind_keys[] = {"other", "linear", "conv", "embedding", "closer", "weight_grad",
                                           "position_embedding", "vocab_loss"};
enum { N_TP_KINDS = (int)(sizeof tp_kind_keys / sizeof tp_kind_keys[0]) };

static int tp_unrecognised(const trace_op *o) {
    return o->phase == TRACE_PHASE_FORWARD && !trace_op_is_comm(o) && o->cls == MT_OPC_UNKNOWN;
}

static void tp_counts(const mt_trace *t, int32_t *n, int32_t *unrec) {
    memset(n, 0, N_TP_KINDS * sizeof *n);
    *unrec = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *o = &t->ops[i];
        if (o->phase != TRACE_PHASE_FORWARD || trace_op_is_comm(o)) continue;
        if ((unsigned)o->tp < N_TP_KINDS) n[o->tp]++;
        *unrec += tp_unrecognised(o);
    }
}

static json_t *tp_json(const mt_trace *t) {
    int32_t n[N_TP_KINDS], unrec;
    tp_counts(t, n, &unrec);
    json_t *o = json_object(), *arr = json_array();
    for (int k = 1; k < N_TP_KINDS; k++)
        if (k != TRACE_TP_WEIGHT_GRAD) json_object_set_new(o, tp_kind_keys[k], json_integer(n[k]));
    for (int32_t i = 0; i < t->n_ops; i++)
        if (tp_unrecognised(&t->ops[i]))
            json_array_append_new(arr, json_pack("{s:i,s:s}", "op", (int)i, "name", t->ops[i].name));
    json_object_set_new(o, "unrecognised", arr);
    return o;
}

json_t *mt_tracesum_json(const mt_trace *t, double measured) {
    json_t *o = json_object();
    int64_t total = mt_trace_total_dev_ns(t);
    json_object_set_new(o, "format", json_string(mt_trace_format_name(t->format)));
    json_object_set_new(o, "files", json_pack("[s?s?]", t->kineto_path, t->et_path));
    json_object_set_new(o, "device", t->device_name ? json_string(t->device_name) : json_null());
    json_object_set_new(o, "recorded_on", mt_device_json(&t->recorded_on));
    json_object_set_new(o, "batch_size", json_integer(t->batch_size));
    json_object_set_new(o, "step", json_integer(t->step));
    json_object_set_new(o, "steps_in_trace", json_integer(t->n_steps));
    json_object_set_new(o, "ops", json_integer(t->n_ops));
    json_object_set_new(o, "kernels", json_integer(t->n_kernels));
    json_object_set_new(o, "kernels_left_out", json_integer(t->n_kernels_left_out));
    json_object_set_new(o, "cuda_graphs", json_pack("{s:i, s:I, s:f}", "launches", (int)t->n_graph_launches,
                                                    "kernels", (json_int_t)t->n_graph_kernels, "kernel_time_share",
                                                    t->graph_dev_share));
    json_object_set_new(o, "layers", json_integer(t->n_layers));
    json_object_set_new(o, "tensors", json_integer(t->n_tensors));
    json_t *tm = json_object();
    for (int p = 0; p < TRACE_PHASE_COUNT; p++)
        json_object_set_new(tm, mt_trace_phase_name((trace_phase)p), json_real(ms(t->phase_ns[p])));
    json_object_set_new(tm, "total", json_real(ms(total)));
    json_object_set_new(tm, "device_busy", json_real(ms(t->dev_union_ns)));
    json_object_set_new(tm, "compute_busy", json_real(ms(t->compute_union_ns)));
    json_object_set_new(tm, "communication", json_real(ms(t->comm_ns)));
    json_object_set_new(tm, "step_wall", json_real(ms(t->step_end_ns - t->step_start_ns)));
    json_object_set_new(tm, "host_wall", json_real(ms(t->host_end_ns - t->step_start_ns)));
    json_object_set_new(tm, "collective_calls", json_real(ms(coll_calls_ns(t))));
    json_object_set_new(o, "syncs", json_integer(t->n_syncs));
    json_object_set_new(o, "collective_calls", json_integer(t->n_colls));
    json_object_set_new(o, "streams", json_integer(compute_streams(t)));
    json_object_set_new(o, "stream_waits", json_integer(t->n_waits));
    json_object_set_new(o, "measured_step_ms", measured > 0 ? json_real(measured) : json_null());
    json_object_set_new(o, "time_ms", tm);
    json_object_set_new(o, "device_time_source",
                        json_string(t->has_device_time ? "kernels" : "cpu_duration"));
    json_object_set_new(o, "param_count", json_integer(t->param_count));
    json_object_set_new(o, "param_bytes", json_real(t->param_bytes));
    json_t *bytes = json_object();
    json_object_set_new(bytes, "weight", json_real(t->param_bytes));
    json_object_set_new(bytes, "gradient", json_real(t->grad_bytes));
    json_object_set_new(bytes, "optimizer_state", json_real(t->optstate_bytes));
    json_object_set_new(bytes, "activation", json_real(t->activation_bytes));
    json_object_set_new(bytes, "input", json_real(t->input_bytes));
    json_object_set_new(o, "tensor_bytes", bytes);
    json_t *link = json_object();
    json_object_set_new(link, "method", json_string(mt_trace_link_method_name(t->link.method)));
    json_object_set_new(link, "matched", json_integer(t->link.matched));
    json_object_set_new(link, "unmatched", json_integer(t->link.unmatched));
    json_object_set_new(o, "link", link);
    json_t *comm = json_array();
    for (int32_t i = 0; i < t->n_ops; i++) {
        const trace_op *op = &t->ops[i];
        if (op->comm == TRACE_COMM_NONE) continue;
        json_array_append_new(comm, json_pack("{s:s,s:s,s:f,s:i,s:f,s:s}", "name", op->name,
                                              "collective", mt_trace_comm_name(op->comm), "bytes",
                                              op->comm_bytes, "group_size", op->comm_group,
                                              "time_ms", ms(op->comm_dev_ns), "phase",
                                              mt_trace_phase_name(op->phase)));
    }
    json_object_set_new(o, "communication", comm);
    json_object_set_new(o, "collectives", collectives_json(t));
    json_object_set_new(o, "traced_plan", traced_plan_json(t));
    json_object_set_new(o, "tensor_parallel", tp_json(t));
    mt_blocks blk;
    mt_blocks_find(t, &blk);
    json_object_set_new(o, "blocks", blk.found ? json_pack("{s:i, s:i, s:i, s:i, s:f, s:f, s:f}", "count", (int)blk.count,
                                                          "first_layer", (int)blk.first, "layers", (int)blk.layers,
                                                          "ops", (int)blk.ops, "param_bytes", blk.param_bytes,
                                                          "fwd_ms", ms(blk.fwd_ns), "bwd_ms", ms(blk.bwd_ns))
                                               : json_null());
    return o;
}

/* The traced plan and the step's collectives, one per instance; group sizes the trace does not name
 * (the world size assumed) carry a '*'. */
static void print_traced(FILE *out, const mt_trace *t) {
    mt_traced_plan p;
    mt_traced_plan_read(t, &p);
    if (!p.multi_rank && p.n_colls == 0) return;
    char line[512], b[32];
    mt_traced_plan_describe(&p, line, sizeof line);
    fprintf(out, "\ntraced plan %s\n", line);
    if (p.multi_rank)
        fprintf(out, "            simulate keeps these collectives (--comm regenerate: the plan's instead)\n");
    fprintf(out, "  %-28s %-14s %12s %6s %-8s %-10s %9s\n", "issued by", "collective", "bytes", "group", "dtype",
            "phase", "host ms");
    for (int32_t i = 0; i < t->n_colls; i++) {
        const trace_coll *c = &t->colls[i];
        if (!c->instance) continue;
        const trace_op *op = c->issued_by >= 0 && c->issued_by < t->n_ops ? &t->ops[c->issued_by] : NULL;
        const trace_op *own = c->op >= 0 && c->op < t->n_ops ? &t->ops[c->op] : NULL;
        snprintf(b, sizeof b, "%d%s", c->group, c->group_src == TRACE_GROUP_WORLD ? "*" : "");
        fprintf(out, "  %-28.28s %-14s %12.0f %6s %-8.8s %-10s %9.3f\n", op ? op->name : "(step start)",
                mt_trace_comm_name(c->kind), c->bytes, b, c->dtype ? c->dtype : "?",
                mt_trace_phase_name((op ? op : own) ? (op ? op : own)->phase : TRACE_PHASE_OTHER), ms(c->dur_ns));
    }
    if (p.n_group_assumed)
        fprintf(out, "  * the trace names no group: the job's world size is assumed\n");
}

/* The tensors, TP sites, blocks, communication, traced plan, layers and (list_ops) operators. */
static void tensors_and_rest(FILE *out, const mt_trace *t, int list_ops) {
    char b1[32], b2[32];
    fprintf(out, "\ntensors    weights %s, gradients %s, optimizer state %s, activations %s\n",
           mt_fmt_bytes(t->param_bytes, b1, sizeof b1), mt_fmt_bytes(t->grad_bytes, b2, sizeof b2),
           mt_fmt_bytes(t->optstate_bytes, (char[32]){0}, 32),
           mt_fmt_bytes(t->activation_bytes, (char[32]){0}, 32));
    int32_t tpn[N_TP_KINDS], unrec;
    tp_counts(t, tpn, &unrec);
    fprintf(out, "tensor par linear %d, embedding %d (positions %d, replicated), vocabulary loss %d, conv %d, norm "
            "or closer %d; %d op%s no rule recognises (replicated outside a column region)\n", tpn[TRACE_TP_LINEAR],
            tpn[TRACE_TP_EMBEDDING], tpn[TRACE_TP_POS_EMBEDDING], tpn[TRACE_TP_VOCAB_LOSS], tpn[TRACE_TP_CONV],
            tpn[TRACE_TP_CLOSER], unrec, mt_plural(unrec));
    mt_blocks blk;
    mt_blocks_find(t, &blk);
    char bl[320];
    mt_blocks_describe(t, &blk, bl, sizeof bl);
    fprintf(out, "blocks     %s\n", bl);
    int n_comm = 0;
    for (int32_t i = 0; i < t->n_ops; i++) n_comm += t->ops[i].comm != TRACE_COMM_NONE;
    if (n_comm) {
        fprintf(out, "\ncommunication (%d op%s, %.3f ms device time, kept apart from compute; %d call%s, %.3f ms "
               "of host time)\n", n_comm, mt_plural(n_comm), ms(t->comm_ns), t->n_colls, mt_plural(t->n_colls),
               ms(coll_calls_ns(t)));
        fprintf(out, "  %-28s %-14s %12s %6s %10s\n", "op", "collective", "bytes", "group", "ms");
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *op = &t->ops[i];
            if (op->comm == TRACE_COMM_NONE) continue;
            fprintf(out, "  %-28.28s %-14s %12.0f %6d %10.3f\n", op->name, mt_trace_comm_name(op->comm),
                   op->comm_bytes, op->comm_group, ms(op->comm_dev_ns));
        }
    }
    print_traced(out, t);
    if (t->n_layers) {
        fprintf(out, "\n%-32s %5s %12s %12s %12s\n", "layer", "ops", "fwd ms", "bwd ms", "params");
        for (int32_t i = 0; i < t->n_layers; i++) {
            const trace_layer *l = &t->layers[i];
            fprintf(out, "%-32.32s %5d %12.3f %12.3f %12s\n", l->name, l->n_ops,
                   ms(l->dev_ns[TRACE_PHASE_FORWARD]), ms(l->dev_ns[TRACE_PHASE_BACKWARD]),
                   mt_fmt_bytes(l->param_bytes, b1, sizeof b1));
        }
    }
    if (list_ops) {
        fprintf(out, "\n%6s %-10s %5s %10s %4s %4s %7s  %s\n", "op", "phase", "layer", "dev ms", "krn",
               "in", "et", "name");
        for (int32_t i = 0; i < t->n_ops; i++) {
            const trace_op *op = &t->ops[i];
            fprintf(out, "%6d %-10s %5d %10.3f %4d %4d %7ld  %s\n", i, mt_trace_phase_name(op->phase),
                   op->layer, ms(op->dev_ns), op->kernel_count, op->in_count, (long)op->et_node,
                   op->name);
        }
    }
}

void mt_tracesum_print(FILE *out, const mt_trace *t, int list_ops, double measured) {
    char b1[32];
    int64_t total = mt_trace_total_dev_ns(t);
    fprintf(out, "trace      %s%s%s\n", t->kineto_path ? t->kineto_path : "",
           t->et_path ? " + " : "", t->et_path ? t->et_path : "");
    fprintf(out, "format     %s   link: %s (%ld matched, %ld unmatched)\n", mt_trace_format_name(t->format),
           mt_trace_link_method_name(t->link.method), (long)t->link.matched, (long)t->link.unmatched);
    char dev[320];
    fprintf(out, "device     %s\n", mt_device_describe(t, dev, sizeof dev));
    if (t->step >= 0) fprintf(out, "step       %d (%d in trace)\n", t->step, t->n_steps);
    if (t->batch_size > 0) fprintf(out, "batch      %ld\n", (long)t->batch_size);
    else fprintf(out, "batch      unknown (no operator reads the model input with a weight in a known phase)\n");
    fprintf(out, "params     %ld (%s)\n", (long)t->param_count, mt_fmt_bytes(t->param_bytes, b1, sizeof b1));
    fprintf(out, "ops        %d outermost, %d kernel%s", t->n_ops, t->n_kernels, mt_plural(t->n_kernels));
    if (t->n_kernels_left_out > 0)
        fprintf(out, " (+%lld left out: no op launched %s)", (long long)t->n_kernels_left_out,
                t->n_kernels_left_out == 1 ? "it" : "them");
    fprintf(out, ", %d layer%s, %d tensor%s\n", t->n_layers, mt_plural(t->n_layers), t->n_tensors,
            mt_plural(t->n_tensors));
    if (t->n_graph_launches > 0)
        fprintf(out, "cuda graphs %d launch%s ran %lld kernels, %.0f %% of the kernel time: the operators inside a "
                "graph are not in the trace\n            (data parallelism and ZeRO/FSDP see them; --tp, --pp, --cp, "
                "--ep and --recompute cannot split them)\n", t->n_graph_launches,
                t->n_graph_launches == 1 ? "" : "es", (long long)t->n_graph_kernels, 100 * t->graph_dev_share);
    if (t->format == TRACE_FORMAT_ET) { /* no times at all: a table of zeros would read as a 0 ms step */
        fprintf(out, "\ntimes      none: an Execution Trace alone has no operator times (give the Kineto trace of "
                "the same step beside it)\n");
        tensors_and_rest(out, t, list_ops);
        return;
    }
    fprintf(out, "\n%-12s %12s %7s\n", "phase", "device ms", "share");
    for (int p = 0; p < TRACE_PHASE_COUNT; p++)
        fprintf(out, "%-12s %12.3f %6.1f%%\n", mt_trace_phase_name((trace_phase)p), ms(t->phase_ns[p]),
               total ? 100.0 * (double)t->phase_ns[p] / (double)total : 0.0);
    fprintf(out, "%-12s %12.3f\n", "total", ms(total));
    fprintf(out, "%-12s %12.3f   (union of kernel intervals%s)\n", "busy", ms(t->dev_union_ns),
           t->has_device_time ? "" : ": no kernels, CPU durations used");
    int64_t wall = t->step_end_ns - t->step_start_ns;
    fprintf(out, "%-12s %12.3f", "step wall", ms(wall));
    if (t->has_device_time && wall > 0)
        fprintf(out, "   (GPU busy %.0f%%; host %.3f ms, %d synchronising call%s; compute on %d stream%s, %d "
                "stream wait%s)", 100.0 * (double)t->dev_union_ns / (double)wall, ms(t->host_end_ns - t->step_start_ns),
                t->n_syncs, mt_plural(t->n_syncs), compute_streams(t), mt_plural(compute_streams(t)), t->n_waits,
                mt_plural(t->n_waits));
    fprintf(out, "\n");
    if (measured > 0)
        fprintf(out, "%-12s %12.3f   (median of the unprofiled steps, meta.json: the traced step is %+.1f%%;\n"
               "%-12s %12s    %s)\n", "measured", measured,
               100.0 * (traced_ms(t) - measured) / measured, "",
               "", t->has_device_time && t->dist.world_size <= 1
                       ? "simulate calibrates a GPU trace to it by default; --no-calibrate keeps the profiled times"
                       : "--calibrate takes the profiler's share out");
    tensors_and_rest(out, t, list_ops);
}

/* ---- ops without a FLOP formula ---- */

typedef struct unk {
    const char *name;
    int count;
    double dev_ns, bytes;
} unk;

/* Distinct unknown-class op names with count, device time and bytes; caller frees. */
static int collect_unknown(const mt_trace *t, unk **out) {
    unk *v = NULL;
    int n = 0;
    for (int32_t i = 0; i < t->n_ops; i++) {
        mt_work w;
        mt_work_of_trace_op(t, i, &w);
        if (w.cls != MT_OPC_UNKNOWN) continue;
        int k = 0;
        while (k < n && strcmp(v[k].name, t->ops[i].name)) k++;
        if (k == n) {
            unk *nv = realloc(v, (size_t)(n + 1) * sizeof *v);
            if (!nv) break;
            v = nv;
            v[n++] = (unk){t->ops[i].name, 0, 0, 0};
        }
        v[k].count++;
        v[k].dev_ns += (double)t->ops[i].dev_ns;
        v[k].bytes += mt_work_bytes(&w);
    }
    *out = v;
    return n;
}

void mt_tracesum_print_unknown_ops(FILE *out, const mt_trace *t) {
    unk *v = NULL;
    int n = collect_unknown(t, &v);
    fprintf(out, "\nunknown ops (no FLOP formula: modelled by the bytes of their tensors): %d\n", n);
    if (n) fprintf(out, "  %-60s %6s %12s %14s\n", "op", "count", "device ms", "bytes");
    for (int k = 0; k < n; k++)
        fprintf(out, "  %-60.60s %6d %12.3f %14.0f\n", v[k].name, v[k].count, v[k].dev_ns / 1e6, v[k].bytes);
    free(v);
}

void mt_tracesum_unknown_ops_json(const mt_trace *t, json_t *o) {
    unk *v = NULL;
    int n = collect_unknown(t, &v);
    json_t *arr = json_array();
    for (int k = 0; k < n; k++)
        json_array_append_new(arr, json_pack("{s:s,s:i,s:f,s:f}", "name", v[k].name, "count",
                                             v[k].count, "time_ms", v[k].dev_ns / 1e6, "bytes",
                                             v[k].bytes));
    json_object_set_new(o, "unknown_ops", arr);
    free(v);
}
