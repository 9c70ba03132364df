/* run/topology.c — `mitosis topo` as a library call (run/topology.h). */
#include <string.h>

#include "report/progress.h"
#include "report/toposum.h"
#include "run/show.h"
#include "run/topology.h"
#include "util/outpath.h"

void mt_topology_opts_init(mt_topology_opts *o) {
    memset(o, 0, sizeof *o);
    mt_netcfg_init(&o->net);
}

static mt_status write_dot(const mt_topo *t, const char *dot, FILE *out, mt_error *err) {
    if (!strcmp(dot, "-")) return mt_topo_write_dot(t, out, err); /* stdout is checked at exit */
    mt_out_file f; /* a temporary renamed onto dot when complete (util/outpath.h) */
    MT_CHECK(mt_out_open(&f, dot, "--dot", err));
    return mt_out_close(&f, mt_topo_write_dot(t, f.f, err), err);
}

/* The graph never overwrites the topology file it is drawn from (util/outpath.h). */
static mt_status check_dot(const mt_topology_opts *o, mt_error *err) {
    if (!o->dot) return MT_OK;
    mt_out_inputs ins;
    mt_out_inputs_init(&ins);
    mt_out_inputs_add(&ins, o->net.topology, MT_OUT_FILE);
    mt_status ok = mt_out_check_file(&ins, "--dot", o->dot, err);
    mt_out_inputs_free(&ins);
    return ok;
}

/* The phase on a terminal (o->progress; NULL: none). */
static void phase(mt_progress *pg, const mt_topology_opts *o, const char *what) {
    if (o->progress) mt_progress_phase(pg, what);
}

mt_status mt_run_topology(const mt_topology_opts *o, FILE *out, mt_error *err) {
    MT_CHECK(check_dot(o, err));
    mt_topo *t = NULL;
    mt_progress pg = {0};
    if (o->progress) mt_progress_init(&pg, o->progress, 0);
    char what[320];
    snprintf(what, sizeof what, "topology  building %s", o->net.topology);
    phase(&pg, o, what);
    mt_status rc = mt_netcfg_topology(&o->net, 0, &t, err);
    json_t *sum = NULL;
    if (rc == MT_OK) {
        snprintf(what, sizeof what, "topology  %s: %d nodes, %d links; bisection (max-flow)", o->net.topology,
                 (int)mt_topo_nnodes(t), (int)mt_topo_nlinks(t));
        phase(&pg, o, what);
        rc = mt_toposum_json(t, o->route_a, o->route_b, &sum, err);
    }
    if (o->progress) mt_progress_end(&pg);
    int dot_out = o->dot && !strcmp(o->dot, "-");
    /* the file first: a failing run prints only its error */
    if (rc == MT_OK && o->dot && !dot_out) rc = write_dot(t, o->dot, out, err);
    if (rc == MT_OK && !o->as_json) mt_toposum_print(out, sum);
    if (rc == MT_OK && o->as_json) mt_show_json(out, sum);
    else json_decref(sum);
    if (rc == MT_OK && dot_out) rc = write_dot(t, o->dot, out, err);
    if (t) mt_topo_free(t);
    return rc;
}
