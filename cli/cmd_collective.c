/* cli/cmd_collective.c — `mitosis collective`: time one collective (or a size sweep) on a
 * topology and network model, nccl-tests style: the flags, the usage text and the calls
 * (run/collective.h parses the option words and times it, run/show.h prints it). */
#include <stddef.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "run/collective.h"
#include "run/flags.h"
#include "run/show.h"
#include "util/flags.h"
#include "util/limits.h"

typedef struct coll_cli {
    mt_collective_config c;
    int as_json;
} coll_cli;

static mt_status take_op(void *base, const char *v, mt_error *err) {
    return mt_collective_set_op(&((coll_cli *)base)->c, v, err);
}
static mt_status take_algo(void *base, const char *v, mt_error *err) {
    return mt_collective_set_algo(&((coll_cli *)base)->c, v, err);
}
static mt_status take_nccl_algo(void *base, const char *v, mt_error *err) {
    return mt_collective_set_nccl_algo(&((coll_cli *)base)->c, v, err);
}
static mt_status take_arch(void *base, const char *v, mt_error *err) {
    return mt_collective_set_nccl_arch(&((coll_cli *)base)->c, v, err);
}
static mt_status take_sweep(void *base, const char *v, mt_error *err) {
    return mt_collective_set_sweep(&((coll_cli *)base)->c, v, err);
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
    mt_run_net_help(out);
}

int cmd_collective(int argc, char **argv) {
    coll_cli c;
    memset(&c, 0, sizeof c);
    mt_collective_config_init(&c.c);
    mt_error err = {0};
    mt_flag_seen seen;
    if (mt_run_net_parse(&c.c.net, argc, argv, &TABLE, &c, NULL, NULL, "collective", &seen, &err) != MT_OK)
        return mt_cli_fail("collective", &err);
    if (seen.help) return usage(stdout), 0;
    mt_coll_table t;
    if (mt_collective_check(&c.c, &err) != MT_OK || mt_run_collective(&c.c, &t, &err) != MT_OK)
        return mt_cli_fail("collective", &err);
    mt_show_coll(stdout, &t, c.as_json);
    return 0;
}

static const mt_flag_table *const TABLES[] = {&TABLE, NULL};
const mt_command mt_cmd_collective = {"collective", cmd_collective, "time a collective on a topology (nccl-tests style table)",
                                  "--op OP --bytes SIZE|--sweep MIN:MAX [--topology SPEC] [options]", usage, TABLES, MT_CMD_NET};
