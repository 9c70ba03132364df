/* report/kineto.c — the simulated step as per-rank Kineto JSON (see kineto.h). */
#include "report/kineto.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "report/chakra.h"
#include "sim/simulate.h"
#include "util/fileio.h"

enum { STREAM_COMPUTE = 7, STREAM_COLL = 20, STREAM_SEND = 30 };

static int by_start(const void *a, const void *b) {
    const mt_span *x = *(const mt_span *const *)a, *y = *(const mt_span *const *)b;
    return (x->start > y->start) - (x->start < y->start);
}

/* Microseconds with whole nanoseconds. */
static void us(FILE *f, mt_time_ps t) {
    long long ns = (long long)((t + 500) / 1000);
    fprintf(f, "%lld.%03lld", ns / 1000, ns % 1000);
}

static const char *nccl_kernel(mt_coll_op op) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return "ncclDevKernel_AllReduce_Sum_f32_RING_LL";
    case MT_COLL_ALLGATHER: return "ncclDevKernel_AllGather_RING_LL";
    case MT_COLL_REDUCESCATTER: return "ncclDevKernel_ReduceScatter_Sum_f32_RING_LL";
    case MT_COLL_BROADCAST: return "ncclDevKernel_Broadcast_RING_LL";
    case MT_COLL_REDUCE: return "ncclDevKernel_Reduce_Sum_f32_RING_LL";
    default: return "ncclDevKernel_SendRecv";
    }
}
static const char *coll_name(mt_coll_op op) {
    switch (op) {
    case MT_COLL_ALLREDUCE: return "allreduce";
    case MT_COLL_ALLGATHER: return "_allgather_base";
    case MT_COLL_REDUCESCATTER: return "_reduce_scatter_base";
    case MT_COLL_BROADCAST: return "broadcast";
    case MT_COLL_REDUCE: return "reduce";
    case MT_COLL_ALLTOALL: return "all_to_all";
    default: return "send";
    }
}

/* One kernel's args (after "device", "stream", "correlation", "External id"). */
static void kernel_args(FILE *f, const mt_report_src *src, int32_t r, const mt_span *sp) {
    const mt_task *k = sp->task;
    const mt_groups *g = &src->prog->groups;
    if (sp->kind == MT_SPAN_SEND) {
        fprintf(f, ", \"Collective name\": \"send\", \"In msg nelems\": %.0f, \"Out msg nelems\": %.0f, \"dtype\": "
                "\"Float\"", k->bytes / 4, k->bytes / 4);
        return;
    }
    int32_t n = mt_group_size(g, k->group);
    double in = k->bytes / 4, out = in;
    if (k->coll == MT_COLL_ALLGATHER && n > 0) in /= n;
    if (k->coll == MT_COLL_REDUCESCATTER && n > 0) out /= n;
    char kn[32];
    fprintf(f, ", \"Collective name\": \"%s\", \"In msg nelems\": %.0f, \"Out msg nelems\": %.0f, \"Group size\": %d, "
            "\"dtype\": \"Float\", \"Process Group Name\": \"%d\", \"Process Group Description\": \"%s.%d\", "
            "\"Process Group Ranks\": \"[", coll_name(k->coll), in, out, (int)n, (int)mt_ckx_comm_id(g, k->group, r),
            mt_group_kind_name(g, k->group, kn, sizeof kn), (int)mt_group_id(g, k->group, r));
    int32_t *m = malloc(((size_t)n + 1) * sizeof *m);
    if (m) mt_ckx_members(g, k->group, r, m);
    for (int32_t i = 0; m && i < n; i++) fprintf(f, "%s%d", i ? ", " : "", (int)m[i]);
    free(m);
    fprintf(f, "]\"");
}

static void kernel_name(char *buf, size_t len, const mt_span *sp) {
    const mt_task *k = sp->task;
    if (sp->kind == MT_SPAN_COMPUTE) snprintf(buf, len, "mitosis_compute_layer%d_mb%d", (int)k->layer, (int)k->mb);
    else snprintf(buf, len, "%s", sp->kind == MT_SPAN_SEND ? "ncclDevKernel_SendRecv" : nccl_kernel(k->coll));
}

static int32_t stream_of(const mt_span *sp) {
    return sp->kind == MT_SPAN_COMPUTE ? STREAM_COMPUTE : sp->kind == MT_SPAN_SEND ? STREAM_SEND
                                                                                   : STREAM_COLL + sp->task->group;
}

static mt_status write_rank(const mt_report_src *src, const char *dir, int32_t r, const mt_span **sp, int64_t n,
                            mt_error *err) {
    char path[4096];
    snprintf(path, sizeof path, "%s/mitosis_rank%d.pt.trace.json", dir, (int)r);
    FILE *f = fopen(path, "w");
    if (!f) return mt_fail(err, MT_EIO, "cannot write '%s': %s (choose a writable --kineto directory)", path,
                           strerror(errno));
    int32_t N = src->res->n_gpus, dev = r % 8, cpu = 100000 + r;
    mt_time_ps step = src->res->step_ps;
    fprintf(f, "{\n  \"schemaVersion\": 1,\n  \"distributedInfo\": {\"backend\": \"nccl\", \"rank\": %d, "
            "\"world_size\": %d},\n", (int)r, (int)N);
    fprintf(f, "  \"deviceProperties\": [{\"id\": %d, \"name\": \"mitosis simulated GPU\", \"totalGlobalMem\": "
            "85899345920, \"computeMajor\": 9, \"computeMinor\": 0, \"maxThreadsPerBlock\": 1024, \"maxThreadsPerMultiprocessor\": "
            "2048, \"regsPerBlock\": 65536, \"regsPerMultiprocessor\": 65536, \"warpSize\": 32, \"sharedMemPerBlock\": "
            "49152, \"sharedMemPerMultiprocessor\": 233472, \"numSms\": 132, \"sharedMemPerBlockOptin\": 232448}],\n",
            dev);
    fprintf(f, "  \"traceName\": \"mitosis simulate, rank %d\",\n  \"displayTimeUnit\": \"ms\",\n  \"traceEvents\": [\n",
            (int)r);
    fprintf(f, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"python "
            "rank %d\"}},\n", cpu, (int)r);
    fprintf(f, "  {\"ph\": \"M\", \"name\": \"process_name\", \"pid\": %d, \"tid\": 0, \"args\": {\"name\": \"GPU %d\"}},\n",
            dev, dev);
    fprintf(f, "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#1\", \"pid\": %d, \"tid\": 1, "
            "\"ts\": 0.000, \"dur\": ", cpu);
    us(f, step);
    fprintf(f, ", \"args\": {\"External id\": 1}},\n");
    fprintf(f, "  {\"ph\": \"X\", \"cat\": \"user_annotation\", \"name\": \"ProfilerStep#2\", \"pid\": %d, \"tid\": 1, "
            "\"ts\": ", cpu);
    us(f, step);
    fprintf(f, ", \"dur\": 1.000, \"args\": {\"External id\": 2}}");
    mt_time_ps cursor = 0; /* the host thread's launches, one after another */
    for (int64_t i = 0; i < n; i++) {
        const mt_span *s = sp[i];
        char name[96];
        kernel_name(name, sizeof name, s);
        mt_time_ps at = s->start > cursor ? s->start : cursor;
        if (at + 3000 > step) at = step > 3000 ? step - 3000 : 0; /* inside the step */
        cursor = at + 3000;
        long long ext = 3 + i, corr = 1 + i;
        fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"cpu_op\", \"name\": \"mitosis::%s\", \"pid\": %d, \"tid\": 1, \"ts\": ",
                s->kind == MT_SPAN_COMPUTE ? "compute" : coll_name(s->kind == MT_SPAN_SEND ? MT_COLL_SENDRECV : s->task->coll),
                cpu);
        us(f, at);
        fprintf(f, ", \"dur\": 0.003, \"args\": {\"External id\": %lld}}", ext);
        fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"cudaLaunchKernel\", \"pid\": %d, \"tid\": 1, "
                "\"ts\": ", cpu);
        us(f, at + 1000);
        fprintf(f, ", \"dur\": 0.001, \"args\": {\"External id\": %lld, \"correlation\": %lld}}", ext, corr);
        fprintf(f, ",\n  {\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"%s\", \"pid\": %d, \"tid\": %d, \"ts\": ", name, dev,
                (int)stream_of(s));
        us(f, s->start);
        fprintf(f, ", \"dur\": ");
        us(f, s->end - s->start);
        fprintf(f, ", \"args\": {\"device\": %d, \"stream\": %d, \"correlation\": %lld, \"External id\": %lld", dev,
                (int)stream_of(s), corr, ext);
        if (s->kind != MT_SPAN_COMPUTE) kernel_args(f, src, r, s);
        fprintf(f, "}}");
        fprintf(f, ",\n  {\"ph\": \"s\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": %lld, \"pid\": %d, \"tid\": 1, \"ts\": ",
                corr, cpu);
        us(f, at + 1000);
        fprintf(f, "},\n  {\"ph\": \"f\", \"bp\": \"e\", \"cat\": \"ac2g\", \"name\": \"ac2g\", \"id\": %lld, \"pid\": %d, "
                "\"tid\": %d, \"ts\": ", corr, dev, (int)stream_of(s));
        us(f, s->start);
        fprintf(f, "}");
    }
    fprintf(f, "\n  ]\n}\n");
    if (ferror(f) | fclose(f)) {
        mt_remove_partial(path);
        return mt_fail(err, MT_EIO, "cannot write '%s': %s (check the disk space)", path, strerror(errno));
    }
    return MT_OK;
}

mt_status mt_kineto_write(const mt_report_src *src, const char *dir, const mt_span_filter *ranks, mt_error *err) {
    const mt_recorder *rec = src->rec;
    int32_t N = src->res->n_gpus;
    int64_t *cnt = calloc((size_t)N + 2, sizeof *cnt);
    const mt_span **sp = malloc(((size_t)rec->n_spans + 1) * sizeof *sp);
    mt_status rc = cnt && sp ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    for (int64_t i = 0; i < rec->n_spans && rc == MT_OK; i++) {
        const mt_span *s = &rec->spans[i];
        int k = s->kind == MT_SPAN_COMPUTE || s->kind == MT_SPAN_COLL || s->kind == MT_SPAN_SEND;
        if (k && s->rank >= 0 && s->rank < N) cnt[s->rank + 2]++;
    }
    for (int32_t r = 0; r < N && rc == MT_OK; r++) cnt[r + 2] += cnt[r + 1];
    for (int64_t i = 0; i < rec->n_spans && rc == MT_OK; i++) { /* by rank: cnt[r] .. cnt[r + 1] */
        const mt_span *s = &rec->spans[i];
        int k = s->kind == MT_SPAN_COMPUTE || s->kind == MT_SPAN_COLL || s->kind == MT_SPAN_SEND;
        if (k && s->rank >= 0 && s->rank < N) sp[cnt[s->rank + 1]++] = s;
    }
    int32_t last = -1;
    for (int32_t r = 0; r < N && rc == MT_OK; r++) {
        if (!mt_span_filter_rank(ranks, r)) continue;
        qsort(sp + cnt[r], (size_t)(cnt[r + 1] - cnt[r]), sizeof *sp, by_start);
        rc = write_rank(src, dir, r, sp + cnt[r], cnt[r + 1] - cnt[r], err);
        if (rc == MT_OK) last = r;
    }
    for (int32_t r = 0; rc != MT_OK && r <= last; r++) { /* no partial set */
        if (!mt_span_filter_rank(ranks, r)) continue;
        char path[4096];
        snprintf(path, sizeof path, "%s/mitosis_rank%d.pt.trace.json", dir, (int)r);
        mt_remove_partial(path);
    }
    free(cnt);
    free(sp);
    return rc;
}
