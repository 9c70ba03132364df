/* Unit tests for netmodels/netcfg and the model registry: flags parsed from the tables into the
 * configuration (each model's own into its params), the refusals of flags that do not apply
 * (another model's flag, a tier flag the model or the topology lacks, a preset argument the
 * preset does not take), the argv-walking path, the default topology, and models created from
 * the configuration — with the link operations a model lacks refused in one line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <igraph.h>
#include <stdio.h>
#include <string.h>

#include "netmodels/netcfg.h"
#include "netmodels/photonic.h"
#include "sim/engine.h"

/* Parses the space-separated words of line into c with mt_netcfg_parse (no own table). */
static mt_status parse(mt_netcfg *c, const char *line, mt_error *err) {
    static char buf[512];
    char *argv[32];
    int argc = 0;
    snprintf(buf, sizeof buf, "test %s", line);
    for (char *s = strtok(buf, " "); s && argc < 32; s = strtok(NULL, " ")) argv[argc++] = s;
    mt_netcfg_init(c);
    mt_flag_seen seen;
    memset(err, 0, sizeof *err);
    return mt_netcfg_parse(c, argc, argv, NULL, NULL, NULL, NULL, "test", &seen, err);
}

static void flags_fill_the_configuration(void **state) {
    (void)state;
    mt_netcfg c;
    mt_error err;
    assert_int_equal(parse(&c, "--topology dgx-h100 --link-bw 400Gbps --nic-lat 3us --routing latency --ecmp", &err),
                     MT_OK);
    assert_string_equal(c.topology, "dgx-h100");
    assert_true(c.tp.link_bw_Bps == 50e9);
    assert_true(c.tp.nic_lat_ns == 3000);
    assert_true(c.tp.link_lat_ns < 0); /* not given: the preset's */
    assert_int_equal(c.tp.metric, MT_ROUTE_LATENCY);
    assert_int_equal(c.tp.ecmp, 1);
    assert_string_equal(mt_netcfg_model_name(&c), "flow");
    /* the photonic flags land in the photonic model's own params */
    assert_int_equal(parse(&c, "--network photonic --ports 4 --port-bw 10GB/s --setup-lat 1ms --endpoints 12", &err),
                     MT_OK);
    assert_string_equal(mt_netcfg_model_name(&c), "photonic");
    const mt_photonic_params *p = (const mt_photonic_params *)c.params[mt_netmodel_find("photonic")];
    assert_int_equal(p->ports, 4);
    assert_true(p->port_bw_Bps == 10e9);
    assert_true(p->setup_ns == 1e6);
    assert_int_equal(p->endpoints, 12);
    assert_true(p->buffer_bytes == 64.0 * 1048576); /* default kept */
}

static void refuses_flags_that_do_not_apply(void **state) {
    (void)state;
    const struct {
        const char *line, *want;
    } bad[] = {
        {"--network photonic --link-bw 1GB/s", "--link-bw does not apply to --network photonic"},
        {"--network photonic --topology ring:4 --routing latency", "--routing does not apply to --network photonic"},
        {"--ports 4", "--ports applies to --network photonic only (the model is flow"},
        {"--topology ring:8 --setup-lat 1ms", "--setup-lat applies to --network photonic only"},
        {"--topology ring:8 --nic-bw 10GB/s", "--nic-bw does not apply to ring, which has no NIC tier (presets with "
                                              "one: dgx-a100, dgx-h100, multinode)"},
        {"--nic-lat 1us", "--nic-lat needs a --topology with a NIC tier"},
        {"--topology net.csv --nic-bw 1GB/s", "--nic-bw does not apply to a topology file"},
        {"--topology dgx-h100:16", "bad topology 'dgx-h100:16': dgx-h100 takes no argument '16' (use dgx-h100)"},
        {"--topology ring:8,k=4", "bad topology 'ring:8,k=4': ring takes no key 'k' (use ring:N[,uni])"},
        {"--topology blob:{gpus}", "unknown preset 'blob'"},
        {"--network photonic --topology ring:4 --endpoints 8", "--endpoints applies without --topology"},
        {"--network magic", "--network needs flow or photonic (got 'magic')"},
        {"--ports 0 --network photonic", "--ports needs an integer in 1..4096"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        mt_netcfg c;
        mt_error err;
        assert_int_equal(parse(&c, bad[i].line, &err), MT_EINVAL);
        if (!strstr(err.msg, bad[i].want) || strchr(err.msg, '\n'))
            fail_msg("'%s': got '%s', want '%s'", bad[i].line, err.msg, bad[i].want);
    }
    /* what does apply: NIC flags on presets with NICs (also behind a {nodes} placeholder) */
    mt_netcfg c;
    mt_error err;
    assert_int_equal(parse(&c, "--topology multinode:nodes={nodes},gpus=8 --nic-bw 10GB/s", &err), MT_OK);
    assert_int_equal(parse(&c, "--topology ring:4 --link-bw 1GB/s --ecmp", &err), MT_OK);
    assert_int_equal(parse(&c, "--network photonic --topology ring:4 --ports 2", &err), MT_OK);
}

/* The argv-walking path (commands that parse argument by argument) gives the same result and
 * remembers what was given for the check. */
static void take_one_by_one(void **state) {
    (void)state;
    char *argv[] = {"sim", "trace", "--ports", "4", "--link-bw=10GB/s", "--ecmp", "--gpus", "8"};
    int argc = 8, i = 1, taken = 0;
    mt_netcfg c;
    mt_netcfg_init(&c);
    mt_error err = {0};
    while (i < argc) {
        int t = mt_netcfg_take(&c, argc, argv, &i, &err);
        assert_true(t >= 0);
        if (t) taken++;
        else i++;
    }
    assert_int_equal(taken, 3);
    assert_true(c.tp.link_bw_Bps == 10e9);
    assert_int_equal(c.tp.ecmp, 1);
    assert_int_equal(mt_netcfg_check(&c, NULL, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--ports applies to --network photonic only"));
    char *again[] = {"sim", "--ecmp"};
    i = 1;
    assert_int_equal(mt_netcfg_take(&c, 2, again, &i, &err), -1);
    assert_non_null(strstr(err.msg, "--ecmp is given twice"));
    char *missing[] = {"sim", "--link-lat"};
    mt_netcfg_init(&c);
    i = 1;
    assert_int_equal(mt_netcfg_take(&c, 2, missing, &i, &err), -1);
    assert_non_null(strstr(err.msg, "--link-lat needs a value"));
}

static void default_topology_and_models(void **state) {
    (void)state;
    mt_netcfg c;
    mt_error err;
    char spec[64];
    assert_int_equal(parse(&c, "", &err), MT_OK);
    assert_string_equal(mt_netcfg_spec(&c, 16, spec, sizeof spec), "switch:16");
    assert_string_equal(mt_netcfg_spec(&c, 0, spec, sizeof spec), "");
    mt_topo *t = NULL;
    assert_int_equal(mt_netcfg_topology(&c, 0, &t, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "--topology is required"));
    assert_int_equal(mt_netcfg_topology(&c, 4, &t, &err), MT_OK);
    mt_engine *e = mt_engine_new();
    mt_netmodel flow, ph;
    assert_int_equal(mt_netcfg_model(&c, t, mt_engine_sched(e), &flow, &err), MT_OK);
    for (int op = 0; op < MT_NETOP_COUNT; op++) assert_true(mt_net_can(&flow, (mt_netop)op));
    /* photonic: its own endpoints without a topology, and no link operations */
    assert_int_equal(parse(&c, "--network photonic --endpoints 12", &err), MT_OK);
    assert_string_equal(mt_netcfg_spec(&c, 16, spec, sizeof spec), "");
    assert_int_equal(mt_netcfg_model(&c, NULL, mt_engine_sched(e), &ph, &err), MT_OK);
    const int32_t *eps;
    assert_int_equal(mt_net_endpoints(&ph, &eps), 12);
    for (int op = 0; op < MT_NETOP_SEND_SENT; op++) assert_false(mt_net_can(&ph, (mt_netop)op));
    assert_true(mt_net_can(&ph, MT_NETOP_SEND_SENT)); /* when the last chunk has left */
    assert_int_equal(mt_net_set_link_factor(&ph, 0, 0.5, &err), MT_EINVAL);
    assert_string_equal(err.msg, "the photonic model cannot change a link's bandwidth (it has no links; use "
                                 "--network flow)");
    mt_link_stats st;
    assert_int_equal(mt_net_link_stats(&ph, 0, &st, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "cannot report per-link statistics"));
    assert_int_equal(mt_net_fail_link(&ph, 0, &err), MT_EINVAL);
    assert_false(mt_net_has_links(&ph));
    /* on a topology: one endpoint per GPU */
    mt_netmodel ph8;
    assert_int_equal(mt_netmodel_create("photonic", t, NULL, mt_engine_sched(e), &ph8, &err), MT_OK);
    assert_int_equal(mt_net_endpoints(&ph8, &eps), 4);
    mt_net_free(&ph8);
    assert_int_equal(mt_netmodel_create("magic", t, NULL, mt_engine_sched(e), &ph8, &err), MT_EINVAL);
    assert_non_null(strstr(err.msg, "unknown network model 'magic' (use one of flow|photonic)"));
    mt_net_free(&ph);
    mt_net_free(&flow);
    mt_engine_free(e);
    mt_topo_free(t);
}

static void help_lists_every_table(void **state) {
    (void)state;
    char *buf = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&buf, &len);
    mt_netcfg_help(f);
    fclose(f);
    const char *want[] = {"--topology SPEC", "--network MODEL", "--link-bw BW", "--nic-lat T", "--ecmp",
                          "Photonic model (--network photonic):", "--port-bw BW", "--endpoints N",
                          "1 GB/s = 1e9 B/s", "Topologies (--topology SPEC", "ring:N[,uni]", "FILE.json"};
    for (size_t i = 0; i < sizeof want / sizeof want[0]; i++)
        if (!strstr(buf, want[i])) fail_msg("help lacks '%s'", want[i]);
    free(buf);
    const mt_flag_table *t[MT_NETCFG_TABLES];
    assert_int_equal(mt_netcfg_tables(t), 4); /* network, links, NIC, photonic (flow has no flags) */
}

int main(void) {
    igraph_set_error_handler(igraph_error_handler_printignore);
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(flags_fill_the_configuration),
        cmocka_unit_test(refuses_flags_that_do_not_apply),
        cmocka_unit_test(take_one_by_one),
        cmocka_unit_test(default_topology_and_models),
        cmocka_unit_test(help_lists_every_table),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
