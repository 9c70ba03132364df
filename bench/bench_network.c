/* bench/bench_network.c — throughput of the event engine and the flow model.
 *
 * Prints one table: raw engine events/s (schedule + run), then full ring all-reduce
 * schedules on 1024 GPUs on a ring and on one switch, and a one-step pattern (all 1024
 * GPUs send at once, the unit of every ring step). "flow events" are flow starts + drains;
 * the goal is >= 5 M flow events/s. Run from a Release build: build/bench_network [N].
 */
#include <igraph.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include "extrapolate/collective.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/collexec.h"
#include "sim/engine.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec + ts.tv_nsec * 1e-9;
}

static void nop(void *ctx, uint64_t arg) {
    (void)ctx;
    (void)arg;
}

static void row(const char *name, double wall, uint64_t events, uint64_t flow_events,
                mt_time_ps sim_ps) {
    printf("%-34s %10.3f %12llu %12llu %10.2f %10.2f %14.3f\n", name, wall,
           (unsigned long long)events, (unsigned long long)flow_events, events / wall / 1e6,
           flow_events ? flow_events / wall / 1e6 : 0.0, (double)sim_ps / 1e6);
}

static int engine_only(uint64_t n) {
    mt_engine *e = mt_engine_new();
    if (!e) return 1;
    double t0 = now_s();
    uint64_t x = 88172645463325252ULL;
    /* keep ~64k pending: each handler-free round schedules a batch then drains it */
    for (uint64_t done = 0; done < n; done += 65536) {
        for (int i = 0; i < 65536; i++) {
            x ^= x << 13, x ^= x >> 7, x ^= x << 17;
            mt_engine_at(e, mt_engine_now(e) + (mt_time_ps)(x % 1000000), nop, NULL, 0);
        }
        mt_engine_run(e, MT_TIME_NEVER, NULL);
    }
    double wall = now_s() - t0;
    row("engine: schedule+run random", wall, mt_engine_events(e), 0, mt_engine_now(e));
    mt_engine_free(e);
    return 0;
}

static int collective(const char *spec, int n, int steps_only) {
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = 100e9;
    tp.link_lat_ns = 500;
    mt_topo *t;
    mt_error err = {0};
    if (mt_topo_build(spec, &tp, &t, &err) != MT_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    mt_coll_params p;
    mt_coll_params_init(&p);
    p.nranks = n;
    p.bytes = 1e9;
    if (steps_only) { /* one step: everyone sends S/N to its neighbour at once */
        p.op = MT_COLL_ALLTOALL;
        p.algo = MT_ALGO_RING;
    }
    mt_coll_schedule *s;
    if (mt_coll_build(&p, &s, &err) != MT_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    if (steps_only) s->nsends = (uint32_t)n, s->ndeps = 0; /* keep the first step only */
    mt_engine *e = mt_engine_new();
    mt_netmodel net;
    if (mt_netmodel_create("flow", t, NULL, mt_engine_sched(e), &net, &err) != MT_OK)
        return fprintf(stderr, "%s\n", err.msg), 1;
    /* warm the route cache so the table measures the simulation, not igraph */
    const int32_t *eps;
    mt_net_endpoints(&net, &eps);
    for (int i = 0; i < n; i++) {
        const int32_t *r;
        int32_t h;
        mt_topo_route(t, eps[i], eps[(i + 1) % n], &r, &h, NULL);
    }
    double t0 = now_s();
    mt_time_ps ps = 0;
    if (mt_collexec_time(s, &net, e, NULL, &ps, &err) != MT_OK) return fprintf(stderr, "%s\n", err.msg), 1;
    double wall = now_s() - t0;
    mt_netstats st;
    mt_net_stats(&net, &st);
    char name[64];
    snprintf(name, sizeof name, "%s %s (%u sends)", spec, steps_only ? "1 step" : "ring allreduce",
             s->nsends);
    row(name, wall, mt_engine_events(e), st.flow_events, ps);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_coll_free(s);
    mt_topo_free(t);
    return 0;
}

int main(int argc, char **argv) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    int n = argc > 1 ? atoi(argv[1]) : 1024;
    if (n < 2) n = 1024;
    char ring[32], sw[32];
    snprintf(ring, sizeof ring, "ring:%d", n);
    snprintf(sw, sizeof sw, "switch:%d", n);
    printf("%-34s %10s %12s %12s %10s %10s %14s\n", "scenario (1 GB, 100 GB/s, 500 ns)", "wall(s)",
           "events", "flow events", "Mev/s", "Mflowev/s", "sim time(us)");
    int rc = engine_only(10000000);
    rc |= collective(ring, n, 1);
    rc |= collective(sw, n, 1);
    rc |= collective(ring, n, 0);
    rc |= collective(sw, n, 0);
    return rc;
}
