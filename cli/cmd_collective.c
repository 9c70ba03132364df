/* cli/cmd_collective.c — `mitosis collective`: time one collective (or a size sweep) on a
 * topology and network model; prints an nccl-tests style table. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/args.h"
#include "cli/commands.h"
#include "cli/netopts.h"
#include "extrapolate/collective.h"
#include "sim/collexec.h"
#include "sim/engine.h"
#include "util/units.h"

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis collective --op OP --bytes SIZE --topology SPEC [options]\n"
            "  --op allreduce|reducescatter|allgather|broadcast|reduce|alltoall|sendrecv\n"
            "  --bytes SIZE        message size per rank (1G, 8MiB, ...)\n"
            "  --sweep MIN:MAX     sizes MIN, 2*MIN, ... up to MAX instead of --bytes\n"
            "  --algo ring|tree|direct|hier|ringflow   (default ring)\n"
            "  --chunks N          pipeline chunks (default: 1, or by size for chains/trees)\n"
            "  --ranks N           ranks (default: every GPU of the topology)\n"
            "  --gpus-per-node G   hier: ranks per node (default 8)\n"
            "  --root R / --peer P broadcast/reduce root; sendrecv source R and destination P\n"
            "Columns: size (B), time (us), algbw = size / time, busbw = algbw x the nccl-tests\n"
            "factor (all-reduce 2(n-1)/n, all-gather/reduce-scatter/all-to-all (n-1)/n, else 1).\n\n");
    mt_netopts_help(out);
}


/* Times one size on a fresh engine and model (the topology's routes stay cached). */
static mt_status time_one(const mt_netopts *o, mt_topo *topo, const mt_coll_params *cp,
                          double *out_us, mt_error *err) {
    mt_coll_schedule *s;
    MT_CHECK(mt_coll_build(cp, &s, err));
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    mt_status rc = e ? mt_netopts_model(o, topo, mt_engine_sched(e), &net, err)
                     : mt_fail(err, MT_ENOMEM, "out of memory");
    mt_time_ps t = 0;
    if (rc == MT_OK) rc = mt_collexec_time(s, &net, e, NULL, &t, err);
    if (rc == MT_OK) *out_us = (double)t / 1e6;
    mt_net_free(&net);
    mt_engine_free(e);
    mt_coll_free(s);
    return rc;
}

int cmd_collective(int argc, char **argv) {
    mt_netopts o;
    mt_netopts_init(&o);
    mt_coll_params cp;
    mt_coll_params_init(&cp);
    cp.ranks_per_node = 8;
    mt_error err = {0};
    double lo = -1, hi = -1;
    int32_t ranks = 0;
    int have_peer = 0;
    for (int i = 1; i < argc;) {
        int t = mt_netopts_take(&o, argc, argv, &i, &err);
        if (t < 0) return mt_cli_fail("collective", &err);
        if (t) continue;
        const char *f = argv[i], *v = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(f, "--help") || !strcmp(f, "-h")) {
            usage(stdout);
            return 0;
        }
        if (!v) {
            fprintf(stderr, "mitosis collective: unknown option or missing value '%s' (see --help)\n", f);
            return 2;
        }
        mt_status rc = MT_OK;
        if (!strcmp(f, "--op")) rc = mt_coll_op_parse(v, &cp.op, &err);
        else if (!strcmp(f, "--algo")) rc = mt_coll_algo_parse(v, &cp.algo, &err);
        else if (!strcmp(f, "--bytes")) rc = mt_parse_bytes(v, &lo, &err), hi = lo;
        else if (!strcmp(f, "--sweep")) {
            char buf[64];
            const char *colon = strchr(v, ':');
            if (!colon || (size_t)(colon - v) >= sizeof buf) {
                rc = mt_fail(&err, MT_EINVAL, "--sweep needs MIN:MAX, e.g. 8M:8G (got '%s')", v);
            } else {
                memcpy(buf, v, (size_t)(colon - v));
                buf[colon - v] = '\0';
                rc = mt_parse_bytes(buf, &lo, &err);
                if (rc == MT_OK) rc = mt_parse_bytes(colon + 1, &hi, &err);
                if (rc == MT_OK && (lo <= 0 || hi < lo))
                    rc = mt_fail(&err, MT_EINVAL, "--sweep needs 0 < MIN <= MAX (got '%s')", v);
            }
        } else if (!strcmp(f, "--chunks")) rc = mt_cli_int(f, v, 1, 4096, &cp.chunks, &err) ? MT_OK : MT_EINVAL;
        else if (!strcmp(f, "--ranks")) rc = mt_cli_int(f, v, 1, 1 << 20, &ranks, &err) ? MT_OK : MT_EINVAL;
        else if (!strcmp(f, "--gpus-per-node")) rc = mt_cli_int(f, v, 1, 1 << 20, &cp.ranks_per_node, &err) ? MT_OK : MT_EINVAL;
        else if (!strcmp(f, "--root")) rc = mt_cli_int(f, v, 0, 1 << 20, &cp.root, &err) ? MT_OK : MT_EINVAL;
        else if (!strcmp(f, "--peer")) rc = mt_cli_int(f, v, 0, 1 << 20, &cp.peer, &err) ? MT_OK : MT_EINVAL, have_peer = 1;
        else {
            fprintf(stderr, "mitosis collective: unknown option '%s' (see --help)\n", f);
            return 2;
        }
        if (rc != MT_OK) return mt_cli_fail("collective", &err);
        i += 2;
    }
    (void)have_peer;
    if (lo < 0) {
        fprintf(stderr, "mitosis collective: give --bytes SIZE or --sweep MIN:MAX (see --help)\n");
        return 2;
    }
    mt_topo *topo = NULL;
    if (mt_netopts_topology(&o, &topo, &err) != MT_OK) return mt_cli_fail("collective", &err);
    int32_t nep = o.ph.endpoints ? o.ph.endpoints : MT_PHOTONIC_ENDPOINTS;
    if (topo) mt_topo_gpus(topo, &nep);
    cp.nranks = ranks ? ranks : nep;
    int rc = 0;
    if (cp.nranks > nep) {
        fprintf(stderr, "mitosis collective: --ranks %d exceeds the %d GPUs of the topology\n",
                (int)cp.nranks, (int)nep);
        rc = 2;
        goto out;
    }
    printf("# %s, algo %s, %d ranks, %s, network %s\n", mt_coll_op_name(cp.op),
           mt_coll_algo_name(cp.algo), (int)cp.nranks, o.topology ? o.topology : "(no topology)",
           o.network);
    printf("#%15s %14s %13s %13s\n", "size(B)", "time(us)", "algbw(GB/s)", "busbw(GB/s)");
    double factor = mt_coll_busbw_factor(cp.op, cp.nranks);
    for (double size = lo; size <= hi * (1 + 1e-12); size *= 2) {
        cp.bytes = size;
        double us;
        if (time_one(&o, topo, &cp, &us, &err) != MT_OK) {
            rc = mt_cli_fail("collective", &err);
            goto out;
        }
        double algbw = us > 0 ? size / (us * 1e-6) / 1e9 : 0;
        printf(" %15.0f %14.3f %13.2f %13.2f\n", size, us, algbw, algbw * factor);
        if (size == 0) break;
    }
out:
    mt_topo_free(topo);
    return rc;
}
