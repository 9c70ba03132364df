/* cli/cmd_collective.c — `mitosis collective`: time one collective (or a size sweep) on a
 * topology and network model, nccl-tests style: the flags (--sweep's binary bounds parsed here),
 * the usage text and the calls (run/collective.h times it, report/colltable.h prints it). */
#include <math.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "cli/commands.h"
#include "report/colltable.h"
#include "run/collective.h"
#include "util/flags.h"
#include "util/limits.h"
#include "util/units.h"

typedef struct coll_cli {
    mt_collective_config c;
    int as_json;
} coll_cli;

static mt_status take_op(void *base, const char *v, mt_error *err) {
    return mt_coll_op_parse(v, &((coll_cli *)base)->c.cp.op, err);
}

static mt_status take_algo(void *base, const char *v, mt_error *err) {
    mt_collective_config *c = &((coll_cli *)base)->c;
    c->nccl = v && !strcmp(v, "nccl");
    return c->nccl ? MT_OK : mt_coll_algo_parse(v, &c->cp.algo, err);
}

static mt_status take_nccl_algo(void *base, const char *v, mt_error *err) {
    for (int a = 0; a < MT_NCCL_ALGO_COUNT; a++)
        if (v && !strcmp(v, mt_nccl_algo_name((mt_nccl_algo)a))) {
            ((coll_cli *)base)->c.nccl_force = 1 + a;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "--nccl-algo: unknown '%s' (use tree, ring or nvls)", v ? v : "");
}

static mt_status take_arch(void *base, const char *v, mt_error *err) {
    mt_nccl_arch a;
    if (mt_nccl_arch_parse(v, &a))
        return mt_fail(err, MT_EINVAL, "--nccl-arch: unknown '%s' (use " MT_NCCL_ARCH_CHOICES ")", v);
    ((coll_cli *)base)->c.nccl_arch = 1 + (int)a;
    return MT_OK;
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
    mt_collective_config *c = &((coll_cli *)base)->c;
    char lo[64];
    const char *colon = strchr(v, ':');
    size_t len = colon ? (size_t)(colon - v) : 0;
    if (colon && len < sizeof lo) memcpy(lo, v, len), lo[len] = '\0';
    if (!colon || len >= sizeof lo || sweep_bound(lo, &c->lo) != MT_OK || sweep_bound(colon + 1, &c->hi) != MT_OK ||
        !(c->lo > 0) || c->hi < c->lo || c->hi / c->lo > ldexp(1, MT_COLL_TABLE_MAX - 1))
        return mt_fail(err, MT_EINVAL, "--sweep needs MIN:MAX with 0 < MIN <= MAX <= 2^%d MIN, e.g. 1K:1G (got '%s')",
                       MT_COLL_TABLE_MAX - 1, v);
    return MT_OK;
}

static const mt_flag FLAGS[] = {
    {"--op", MT_FLAG_CALL, 0, "OP",
     "allreduce (default), reducescatter, allgather, broadcast, reduce, alltoall or sendrecv", .call = take_op},
    {"--bytes", MT_FLAG_BYTES, offsetof(coll_cli, c.bytes), "SIZE",
     "message size per rank (all-gather: its output), e.g. 1G (1e9 B), 8MiB", .lo = 0},
    {"--sweep", MT_FLAG_CALL, 0, "MIN:MAX",
     "instead of --bytes: sizes MIN, 2 MIN, 4 MIN, ... up to MAX, as nccl-tests -b MIN -e MAX; here K, M, G, T "
     "are binary (1K:1G: 1 KiB to 1 GiB, 21 sizes)", .call = take_sweep},
    {"--dtype", MT_FLAG_CHOICE, offsetof(coll_cli, c.dtype), "TYPE",
     "element type, for the count column: " MT_COLL_DTYPES " (default float)", .choices = MT_COLL_DTYPES},
    {"--algo", MT_FLAG_CALL, 0, "ALGO", "ring (default), tree, direct, hier, ringflow or relay (all-to-all as "
     "ASTRA-sim's ring): that schedule simulated on the network; nccl: NCCL's tuner picks the algorithm (ring, "
     "tree, NVLS) and protocol (LL, LL128, Simple) per size and times it in closed form at the bandwidths "
     "nccl-tests reaches (docs/network.md); its choice is the last column", .call = take_algo},
    {"--nccl-algo", MT_FLAG_CALL, 0, "tree|ring|nvls", "--algo nccl: only this algorithm (as NCCL_ALGO=...), "
     "its protocol still chosen per size", .call = take_nccl_algo, .choices = "tree|ring|nvls"},
    {"--nccl-arch", MT_FLAG_CALL, 0, MT_NCCL_ARCH_CHOICES, "--algo nccl: the GPU generation (NVLS from hopper; "
     "default: the topology's GPU, else hopper)", .call = take_arch, .choices = MT_NCCL_ARCH_CHOICES},
    {"--chunks", MT_FLAG_INT, offsetof(coll_cli, c.cp.chunks), "N",
     "pipeline chunks (default: 1, or by size for chains and trees)", .lo = 1, .hi = 4096},
    {"--ranks", MT_FLAG_INT, offsetof(coll_cli, c.ranks), "N", "ranks (default: every GPU of the topology)", .lo = 1,
     .hi = MT_GPUS_MAX},
    {"--gpus-per-node", MT_FLAG_INT, offsetof(coll_cli, c.cp.ranks_per_node), "G", "hier: ranks per node (default 8)",
     .lo = 1, .hi = 1 << 20},
    {"--root", MT_FLAG_INT, offsetof(coll_cli, c.cp.root), "R", "broadcast / reduce root; sendrecv source (default 0)",
     .lo = 0, .hi = 1 << 20},
    {"--peer", MT_FLAG_INT, offsetof(coll_cli, c.cp.peer), "P", "sendrecv destination", .lo = 0, .hi = 1 << 20},
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

int cmd_collective(int argc, char **argv) {
    coll_cli c;
    memset(&c, 0, sizeof c);
    mt_collective_config_init(&c.c);
    mt_error err = {0};
    mt_flag_seen seen;
    if (mt_netcfg_parse(&c.c.net, argc, argv, &TABLE, &c, NULL, NULL, "collective", &seen, &err) != MT_OK)
        return mt_cli_fail("collective", &err);
    if (seen.help) return usage(stdout), 0;
    if ((c.c.nccl_arch || c.c.nccl_force) && !c.c.nccl) {
        mt_fail(&err, MT_EINVAL, "--%s applies to --algo nccl only (add it, or leave --%s out)",
                c.c.nccl_arch ? "nccl-arch" : "nccl-algo", c.c.nccl_arch ? "nccl-arch" : "nccl-algo");
        return mt_cli_fail("collective", &err);
    }
    mt_coll_table t;
    if (mt_run_collective(&c.c, &t, &err) != MT_OK) return mt_cli_fail("collective", &err);
    if (c.as_json) {
        mt_cli_print_json(mt_coll_table_json(&t));
    } else {
        mt_coll_table_print(stdout, &t);
    }
    return 0;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_collective = {"collective", cmd_collective, "time a collective on a topology (nccl-tests style table)",
                                  "--op OP --bytes SIZE|--sweep MIN:MAX [--topology SPEC] [options]", usage, TABLES, MT_CMD_NET};
