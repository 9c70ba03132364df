/* cli/cmd_collective.c — `mitosis collective`: time one collective (or a size sweep) on a
 * topology and network model; prints an nccl-tests style table (size, count, type, time, algbw,
 * busbw), or the same rows as JSON. */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "extrapolate/collective.h"
#include "netmodels/netcfg.h"
#include "sim/collexec.h"
#include "sim/engine.h"
#include "util/flags.h"
#include "util/units.h"

/* Element types as nccl-tests names them; DTYPE_BYTES[i] is the size of the i-th. */
#define DTYPES "float|half|bfloat16|double|int8|uint8|int32|uint32|int64|uint64"
static const int DTYPE_BYTES[] = {4, 2, 2, 8, 1, 1, 4, 4, 8, 8};

enum { MAX_ROWS = 64 };

typedef struct coll_cli {
    mt_coll_params cp;
    double bytes, lo, hi; /* --bytes (< 0: not given); --sweep MIN:MAX (lo < 0: not given) */
    int dtype, as_json;
    int32_t ranks;
    mt_netcfg net;
} coll_cli;

static mt_status take_op(void *base, const char *v, mt_error *err) {
    return mt_coll_op_parse(v, &((coll_cli *)base)->cp.op, err);
}

static mt_status take_algo(void *base, const char *v, mt_error *err) {
    return mt_coll_algo_parse(v, &((coll_cli *)base)->cp.algo, err);
}

/* A --sweep bound: a bare K, M, G or T suffix is binary (1K = 1024, as nccl-tests -b/-e);
 * anything else as every size flag (KB decimal, KiB binary, a bare number of bytes). */
static mt_status sweep_bound(const char *s, double *out) {
    static const char units[] = "KMGT";
    size_t n = strlen(s);
    const char *u = n > 1 ? strchr(units, s[n - 1]) : NULL;
    if (!u || !*u) return mt_parse_bytes(s, out, NULL);
    char *end;
    double v = strtod(s, &end);
    if (end != s + n - 1 || !isfinite(v)) return MT_EINVAL;
    *out = ldexp(v, 10 * (int)(u - units + 1));
    return MT_OK;
}

static mt_status take_sweep(void *base, const char *v, mt_error *err) {
    coll_cli *c = base;
    char lo[64];
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : 0;
    if (colon && len < sizeof lo) memcpy(lo, v, len), lo[len] = '\0';
    if (!colon || len >= sizeof lo || sweep_bound(lo, &c->lo) != MT_OK || sweep_bound(colon + 1, &c->hi) != MT_OK ||
        !(c->lo > 0) || c->hi < c->lo || c->hi / c->lo > ldexp(1, MAX_ROWS - 1))
        return mt_fail(err, MT_EINVAL, "--sweep needs MIN:MAX with 0 < MIN <= MAX <= 2^%d MIN, e.g. 1K:1G (got '%s')",
                       MAX_ROWS - 1, v);
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--op", MT_FLAG_CALL, 0, "OP",
     "allreduce (default), reducescatter, allgather, broadcast, reduce, alltoall or sendrecv", .call = take_op},
    {"--bytes", MT_FLAG_BYTES, offsetof(coll_cli, bytes), "SIZE",
     "message size per rank (all-gather: its output), e.g. 1G (1e9 B), 8MiB", .lo = 0},
    {"--sweep", MT_FLAG_CALL, 0, "MIN:MAX",
     "instead of --bytes: sizes MIN, 2 MIN, 4 MIN, ... up to MAX, as nccl-tests -b MIN -e MAX; here K, M, G, T "
     "are binary (1K:1G: 1 KiB to 1 GiB, 21 sizes)", .call = take_sweep},
    {"--dtype", MT_FLAG_CHOICE, offsetof(coll_cli, dtype), "TYPE",
     "element type, for the count column: " DTYPES " (default float)", .choices = DTYPES},
    {"--algo", MT_FLAG_CALL, 0, "ALGO", "ring (default), tree, direct, hier or ringflow", .call = take_algo},
    {"--chunks", MT_FLAG_INT, offsetof(coll_cli, cp.chunks), "N",
     "pipeline chunks (default: 1, or by size for chains and trees)", .lo = 1, .hi = 4096},
    {"--ranks", MT_FLAG_INT, offsetof(coll_cli, ranks), "N", "ranks (default: every GPU of the topology)", .lo = 1,
     .hi = 1 << 20},
    {"--gpus-per-node", MT_FLAG_INT, offsetof(coll_cli, cp.ranks_per_node), "G", "hier: ranks per node (default 8)",
     .lo = 1, .hi = 1 << 20},
    {"--root", MT_FLAG_INT, offsetof(coll_cli, cp.root), "R", "broadcast / reduce root; sendrecv source (default 0)",
     .lo = 0, .hi = 1 << 20},
    {"--peer", MT_FLAG_INT, offsetof(coll_cli, cp.peer), "P", "sendrecv destination", .lo = 0, .hi = 1 << 20},
    {"--json", MT_FLAG_SWITCH, offsetof(coll_cli, as_json), NULL, "the same rows as JSON on stdout"},
};
static const mt_flag_table TABLE = MT_FLAG_TABLE("Options", FLAGS);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis collective [--op OP] --bytes SIZE|--sweep MIN:MAX --topology SPEC [options]\n"
                 "Times one collective on a topology and network model, nccl-tests style. Columns: size (B),\n"
                 "count (elements of --dtype in size, rounded down), type, time (us), algbw = size / time (GB/s),\n"
                 "busbw = algbw x the nccl-tests factor (all-reduce 2(n-1)/n, all-gather / reduce-scatter /\n"
                 "all-to-all (n-1)/n, else 1).\n\n");
    mt_flags_help(out, &TABLE);
    mt_netcfg_help(out);
}

/* 1: --help printed; 0: parsed; -1: error in err. */
static int parse(coll_cli *c, int argc, char **argv, mt_error *err) {
    mt_flag_seen seen;
    if (mt_netcfg_parse(&c->net, argc, argv, &TABLE, c, NULL, NULL, "collective", &seen, err) != MT_OK) return -1;
    if (seen.help) return usage(stdout), 1;
    if ((c->bytes >= 0) == (c->lo > 0))
        return mt_fail(err, MT_EINVAL, "give --bytes SIZE or --sweep MIN:MAX%s (see --help)",
                       c->bytes >= 0 ? ", not both" : ""), -1;
    return 0;
}

/* A fresh engine and model (the topology's routes stay cached); nep: its endpoint count, and
 * when bytes >= 0 the collective's time for that size. */
static mt_status run_one(const coll_cli *c, mt_topo *topo, double bytes, int32_t *nep, double *us, mt_error *err) {
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    mt_status rc = e ? mt_netcfg_model(&c->net, topo, mt_engine_sched(e), &net, err)
                     : mt_fail(err, MT_ENOMEM, "out of memory");
    const int32_t *eps;
    if (rc == MT_OK) *nep = mt_net_endpoints(&net, &eps);
    mt_coll_schedule *s = NULL;
    mt_coll_params cp = c->cp;
    cp.bytes = bytes;
    mt_time_ps t = 0;
    if (rc == MT_OK && bytes >= 0) rc = mt_coll_build(&cp, &s, err);
    if (rc == MT_OK && s) rc = mt_collexec_time(s, &net, e, NULL, &t, err);
    if (rc == MT_OK) *us = (double)t / 1e6;
    mt_coll_free(s);
    mt_net_free(&net);
    mt_engine_free(e);
    return rc;
}

typedef struct row {
    double size, us;
} row;

/* The i-th word of DTYPES into buf. */
static const char *dtype_name(int i, char *buf, size_t len) {
    const char *w = DTYPES;
    while (i-- > 0) w = strchr(w, '|') + 1;
    snprintf(buf, len, "%.*s", (int)strcspn(w, "|"), w);
    return buf;
}

static double algbw_GBps(const row *r) { return r->us > 0 ? r->size / (r->us * 1e-6) / 1e9 : 0; }

/* A whole number as a JSON integer, anything else as a real. */
static json_t *json_num(double x) {
    return x == floor(x) && fabs(x) < 9e15 ? json_integer((json_int_t)x) : json_real(x);
}

static void print_json(const coll_cli *c, const char *spec, const row *rows, int n) {
    char type[16];
    dtype_name(c->dtype, type, sizeof type);
    double factor = mt_coll_busbw_factor(c->cp.op, c->cp.nranks);
    json_t *o = json_pack("{s:s, s:s, s:i, s:s?, s:s, s:s}", "op", mt_coll_op_name(c->cp.op), "algo",
                          mt_coll_algo_name(c->cp.algo), "ranks", (int)c->cp.nranks, "topology", *spec ? spec : NULL,
                          "network", mt_netcfg_model_name(&c->net), "type", type);
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_pack("{s:o, s:o, s:s, s:f, s:f, s:f}", "size_bytes", json_num(rows[i].size),
                                           "count", json_num(floor(rows[i].size / DTYPE_BYTES[c->dtype])), "type",
                                           type, "time_us", rows[i].us, "algbw_GBps", algbw_GBps(&rows[i]),
                                           "busbw_GBps", algbw_GBps(&rows[i]) * factor));
    json_object_set_new(o, "rows", a);
    char *s = json_dumps(o, JSON_INDENT(2) | JSON_REAL_PRECISION(10));
    if (s) puts(s);
    free(s);
    json_decref(o);
}

static void print_table(const coll_cli *c, const char *spec, const row *rows, int n) {
    char type[16];
    dtype_name(c->dtype, type, sizeof type);
    double factor = mt_coll_busbw_factor(c->cp.op, c->cp.nranks);
    printf("# %s, algo %s, %d ranks, %s, network %s\n", mt_coll_op_name(c->cp.op), mt_coll_algo_name(c->cp.algo),
           (int)c->cp.nranks, *spec ? spec : "(no topology)", mt_netcfg_model_name(&c->net));
    printf("#%15s %13s %9s %14s %13s %13s\n", "size(B)", "count", "type", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    for (int i = 0; i < n; i++)
        printf(" %15.0f %13.0f %9s %14.3f %13.2f %13.2f\n", rows[i].size, floor(rows[i].size / DTYPE_BYTES[c->dtype]),
               type, rows[i].us, algbw_GBps(&rows[i]), algbw_GBps(&rows[i]) * factor);
}

/* Times every size; the ranks default to every endpoint of the model. */
static mt_status run(coll_cli *c, mt_topo *topo, row *rows, int *n, mt_error *err) {
    int32_t nep = 0;
    double us;
    MT_CHECK(run_one(c, topo, -1, &nep, &us, err));
    c->cp.nranks = c->ranks ? c->ranks : nep;
    if (c->cp.nranks > nep)
        return mt_fail(err, MT_EINVAL, "--ranks %d exceeds the %d GPUs of the topology", (int)c->cp.nranks, (int)nep);
    double lo = c->lo > 0 ? c->lo : c->bytes, hi = c->lo > 0 ? c->hi : c->bytes;
    *n = 0;
    for (double size = lo; size <= hi * (1 + 1e-12) && *n < MAX_ROWS; size *= 2) {
        MT_CHECK(run_one(c, topo, size, &nep, &rows[*n].us, err));
        rows[(*n)++].size = size;
        if (size == 0) break;
    }
    return MT_OK;
}

int cmd_collective(int argc, char **argv) {
    coll_cli c;
    memset(&c, 0, sizeof c);
    mt_coll_params_init(&c.cp);
    c.cp.ranks_per_node = 8;
    c.bytes = c.lo = c.hi = -1;
    mt_netcfg_init(&c.net);
    mt_error err = {0};
    int pr = parse(&c, argc, argv, &err);
    if (pr) return pr > 0 ? 0 : mt_cli_fail("collective", &err);
    mt_topo *topo = NULL;
    row rows[MAX_ROWS];
    int n = 0;
    char spec[256];
    mt_netcfg_spec(&c.net, 0, spec, sizeof spec);
    mt_status rc = mt_netcfg_topology(&c.net, 0, &topo, &err);
    if (rc == MT_OK) rc = run(&c, topo, rows, &n, &err);
    if (rc == MT_OK) (c.as_json ? print_json : print_table)(&c, spec, rows, n);
    mt_topo_free(topo);
    return rc == MT_OK ? 0 : mt_cli_fail("collective", &err);
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_collective = {"collective", cmd_collective, "time a collective on a topology (nccl-tests style table)",
                                  "--op OP --bytes SIZE|--sweep MIN:MAX [--topology SPEC] [options]", usage, TABLES, MT_CMD_NET};
