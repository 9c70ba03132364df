/* tests/unit/runfix.h — one plan of a trace, built and simulated on a flow network, for unit tests
 * that assert on the result (include after cmocka.h).
 * Invariant: every step asserts MT_OK; the caller frees the run with fix_run_free.
 */
#ifndef MT_TESTS_RUNFIX_H
#define MT_TESTS_RUNFIX_H

#include "extrapolate/plan.h"
#include "extrapolate/program.h"
#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "sim/engine.h"
#include "sim/simulate.h"

typedef struct fix_run_out {
    mt_program *prog;
    mt_sim_result *res;
} fix_run_out;

/* pl resolved and built on t (program options po, NULL: defaults), simulated on topology `spec` with every link and NIC at bw B/s and
 * lat_ns of latency, default simulation options. */
static inline fix_run_out fix_run_opts(const mt_trace *t, mt_plan pl, const mt_program_opts *po, const char *spec,
                                       double bw, double lat_ns) {
    fix_run_out o = {0};
    mt_error err = {0};
    assert_int_equal(mt_plan_resolve(&pl, t, &err), MT_OK);
    assert_int_equal(mt_program_build(t, &pl, po, &o.prog, &err), MT_OK);
    mt_topo_params tp;
    mt_topo_params_init(&tp);
    tp.link_bw_Bps = tp.nic_bw_Bps = bw;
    tp.link_lat_ns = tp.nic_lat_ns = lat_ns;
    mt_topo *topo = NULL;
    assert_int_equal(mt_topo_build(spec, &tp, &topo, &err), MT_OK);
    mt_engine *e = mt_engine_new();
    mt_netmodel net = {0};
    assert_int_equal(mt_netmodel_create("flow", topo, NULL, mt_engine_sched(e), &net, &err), MT_OK);
    assert_int_equal(mt_simulate(o.prog, &net, e, NULL, &o.res, &err), MT_OK);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
    return o;
}

/* The same with the default program options. */
static inline fix_run_out fix_run(const mt_trace *t, mt_plan pl, const char *spec, double bw, double lat_ns) {
    return fix_run_opts(t, pl, NULL, spec, bw, lat_ns);
}

static inline void fix_run_free(fix_run_out *o) {
    mt_sim_result_free(o->res);
    mt_program_free(o->prog);
}

#endif
