/* serve/clusterreq.c — see clusterreq.h. */
#define _XOPEN_SOURCE 700 /* realpath */
#include "serve/clusterreq.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"
#include "serve/options.h"

/* options (a JSON object of run options, NULL: none) checked as simulate's for the trace at path,
 * as the flag list the job file takes (["--gpus", "8", ...]) into *out. what: "job a", "network". */
static mt_status flag_list(const json_t *options, const char *path, const char *what, json_t **out, mt_error *err) {
    mt_serve_opts o;
    const char *paths[1] = {path};
    if (mt_serve_opts_parse(MT_SERVE_SIMULATE, options, paths, 1, &o, err) != MT_OK)
        return mt_error_prefix(err, "cluster: %s", what);
    json_t *a = json_array();
    for (int k = 1; k < o.argv.n && strcmp(o.argv.w[k], "--"); k++) json_array_append_new(a, json_string(o.argv.w[k]));
    mt_serve_opts_free(&o);
    *out = a;
    return MT_OK;
}

/* Fails unless every key of o is one of keys (NULL-terminated); where: "cluster", "cluster job 2". */
static mt_status known_keys(const json_t *o, const char *const *keys, const char *where, const char *list,
                            mt_error *err) {
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)o, key, v) {
        int ok = 0;
        for (int k = 0; keys[k]; k++) ok |= !strcmp(key, keys[k]);
        if (!ok) return mt_fail(err, MT_EINVAL, "%s: unknown key '%.100s' (%s)", where, key, list);
    }
    return MT_OK;
}

/* The path a cluster job reads for trace id: its folder, or an upload's one file, made absolute
 * (the loader resolves relative paths against the job file's folder). */
static mt_status trace_path(mt_catalog *cat, const json_t *id, int k, char *buf, mt_error *err) {
    if (!json_is_string(id))
        return mt_fail(err, MT_EINVAL, "cluster: job %d: \"trace\" must be a trace id from GET /api/traces", k);
    mt_catalog_paths ps;
    MT_CHECK(mt_catalog_paths_of(cat, json_string_value(id), &ps, err));
    if (ps.n != 1)
        return mt_fail(err, MT_EINVAL, "cluster: job %d: trace %.100s is an upload of %d files; a cluster job reads a "
                       "trace folder or one file (simulate and compare take it)", k, json_string_value(id), ps.n);
    if (!realpath(ps.path[0], buf)) return mt_fail(err, MT_EIO, "cluster: job %d: trace %.100s cannot be read", k,
                                                   json_string_value(id));
    return MT_OK;
}

static const char *const JOB_KEYS[] = {"name", "trace", "options", "placement", "start_ms", "steps", NULL};

/* Job k of the request as the job file's entry. */
static mt_status job_entry(mt_catalog *cat, const json_t *jr, int k, json_t **out, mt_error *err) {
    char where[48], path[PATH_MAX];
    snprintf(where, sizeof where, "cluster: job %d", k);
    if (!json_is_object(jr)) return mt_fail(err, MT_EINVAL, "%s must be an object {name, trace, options, ...}", where);
    MT_CHECK(known_keys(jr, JOB_KEYS, where, "name, trace, options, placement, start_ms, steps", err));
    MT_CHECK(trace_path(cat, json_object_get(jr, "trace"), k, path, err));
    json_t *args = NULL;
    snprintf(where, sizeof where, "job %d", k);
    MT_CHECK(flag_list(json_object_get(jr, "options"), path, where, &args, err));
    json_t *e = json_pack("{s:s, s:o}", "trace", path, "args", args);
    for (int i = 0; JOB_KEYS[i]; i++) { /* the rest as given: the loader checks them, naming the job */
        json_t *v = json_object_get(jr, JOB_KEYS[i]);
        if (v && strcmp(JOB_KEYS[i], "trace") && strcmp(JOB_KEYS[i], "options")) json_object_set(e, JOB_KEYS[i], v);
    }
    *out = e;
    return MT_OK;
}

static const char *const KEYS[] = {"topology", "gpus_per_node", "network", "placement", "jobs", NULL};

/* The fabric's keys of the request into f: topology (a spec, never a file), gpus_per_node,
 * placement as given, network as a flag list. first: a job's trace path (the options' check needs
 * one). */
static mt_status fabric(const json_t *cl, json_t *f, const char *first, mt_error *err) {
    const json_t *topo = json_object_get(cl, "topology");
    if (topo && (!json_is_string(topo) || mt_topo_spec_is_file(json_string_value(topo))))
        return mt_fail(err, MT_EINVAL, "cluster: \"topology\" must be a preset spec such as fattree:k=4 (the web API "
                       "opens no topology file)");
    for (int i = 0; KEYS[i]; i++) {
        json_t *v = json_object_get(cl, KEYS[i]);
        if (v && strcmp(KEYS[i], "network") && strcmp(KEYS[i], "jobs")) json_object_set(f, KEYS[i], v);
    }
    const json_t *net = json_object_get(cl, "network");
    if (!net) return MT_OK;
    json_t *list = NULL;
    MT_CHECK(flag_list(net, first, "\"network\"", &list, err));
    json_object_set_new(f, "network", list);
    return MT_OK;
}

mt_status mt_serve_cluster_file(mt_catalog *cat, const json_t *cl, json_t **out, mt_error *err) {
    if (!json_is_object(cl))
        return mt_fail(err, MT_EINVAL, "a cluster run needs \"cluster\": {\"topology\", \"placement\", "
                       "\"jobs\": [...]}");
    MT_CHECK(known_keys(cl, KEYS, "cluster", "topology, gpus_per_node, network, placement, jobs", err));
    const json_t *jobs = json_object_get(cl, "jobs");
    size_t n = json_array_size(jobs);
    if (!json_is_array(jobs) || n == 0 || n > MT_SERVE_CLUSTER_JOBS)
        return mt_fail(err, MT_EINVAL, "cluster: \"jobs\" must be a list of 1 to %d jobs (the command line takes more)",
                       MT_SERVE_CLUSTER_JOBS);
    json_t *f = json_object(), *list = json_array();
    mt_status st = MT_OK;
    char first[PATH_MAX] = "";
    for (size_t k = 0; st == MT_OK && k < n; k++) {
        json_t *e = NULL;
        st = job_entry(cat, json_array_get(jobs, k), (int)k, &e, err);
        if (st == MT_OK && k == 0) snprintf(first, sizeof first, "%s", json_string_value(json_object_get(e, "trace")));
        if (st == MT_OK) json_array_append_new(list, e);
    }
    json_object_set_new(f, "jobs", list);
    if (st == MT_OK) st = fabric(cl, f, first, err);
    if (st != MT_OK) {
        json_decref(f);
        return st;
    }
    *out = f;
    return MT_OK;
}
