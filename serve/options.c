/* serve/options.c — see options.h. */
#include "serve/options.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/netcfg.h"
#include "netmodels/photonic.h"
#include "netmodels/topologies.h"
#include "perfmodel/gpuspec.h"
#include "run/placement.h"
#include "util/units.h"

/* The web API's commands, as the run's (run/job.h). */
static const mt_job_cmd JOB_CMD[] = {MT_JOB_SIMULATE, MT_JOB_COMPARE, MT_JOB_CLUSTER};

mt_status mt_serve_cmd_parse(const char *name, mt_serve_cmd *cmd, mt_error *err) {
    for (int k = 0; k <= MT_SERVE_CLUSTER; k++)
        if (name && !strcmp(name, mt_job_cmd_name(JOB_CMD[k]))) {
            *cmd = (mt_serve_cmd)k;
            return MT_OK;
        }
    return mt_fail(err, MT_EINVAL, "\"command\" must be \"simulate\", \"compare\" or \"cluster\" (got '%s')",
                   name ? name : "");
}

const char *mt_serve_cmd_name(mt_serve_cmd cmd) { return mt_job_cmd_name(JOB_CMD[cmd <= MT_SERVE_CLUSTER ? cmd : 0]); }

/* The run options a command takes (a cluster request's jobs: simulate's). */
static mt_job_cmd job_cmd(mt_serve_cmd cmd) { return cmd == MT_SERVE_COMPARE ? MT_JOB_COMPARE : MT_JOB_SIMULATE; }

/* Flags that take a file or a word (a topology file or a preset spec): the API takes the words. */
static const struct {
    const char *flag;
    int (*is_path)(const char *value);
} PATH_OR_WORD[] = {
    {"--topology", mt_topo_spec_is_file},
};

static int (*path_test(const mt_flag *f))(const char *) {
    for (size_t k = 0; k < sizeof PATH_OR_WORD / sizeof *PATH_OR_WORD; k++)
        if (!strcmp(f->name, PATH_OR_WORD[k].flag)) return PATH_OR_WORD[k].is_path;
    return NULL;
}

/* Takes only a path on the server: the API never takes one. */
static int names_path(const mt_flag *f) {
    return f->complete && (!strcmp(f->complete, "file") || !strcmp(f->complete, "dir")) && !path_test(f);
}

/* A value that would open a file on the server. */
static mt_status refuse_path(const mt_flag *f, const char *key, const char *text, mt_error *err) {
    int (*is_path)(const char *) = path_test(f);
    if (!is_path || !is_path(text)) return MT_OK;
    return mt_fail(err, MT_EINVAL, "option '%s': '%.200s' is a file on the server, which the web API does not open "
                   "(give a preset, e.g. dgx-h100, or use the command line)", key, text);
}

static mt_status push(mt_serve_opts *o, const char *s, mt_error *err) {
    if (o->argv.n >= MT_SERVE_OPTS_MAX_ARGS - 1)
        return mt_fail(err, MT_EINVAL, "too many options (at most %d values)", MT_SERVE_OPTS_MAX_ARGS / 2);
    return mt_job_words_push(&o->argv, s) ? mt_fail(err, MT_ENOMEM, "out of memory") : MT_OK;
}

/* One JSON value as the flag's text ("8", "300GB/s"). */
static mt_status value_text(const char *key, const json_t *v, char *buf, size_t len, mt_error *err) {
    if (json_is_string(v)) {
        snprintf(buf, len, "%s", json_string_value(v));
        if (strlen(json_string_value(v)) >= len) return mt_fail(err, MT_EINVAL, "option '%s': value too long", key);
        return MT_OK;
    }
    if (json_is_integer(v)) {
        snprintf(buf, len, "%lld", (long long)json_integer_value(v));
        return MT_OK;
    }
    if (json_is_real(v) && isfinite(json_real_value(v))) {
        snprintf(buf, len, "%.17g", json_real_value(v));
        return MT_OK;
    }
    return mt_fail(err, MT_EINVAL, "option '%s' takes a string or a number", key);
}

/* The web API's own floor on bandwidths (the CLI's flags take any positive one, `topo` shows a
 * 100 B/s link): a step over a link slower than 1 MB/s runs past the simulator's clock (about 53
 * days of simulated time) for any model worth simulating, so a run would fail after its start. */
static mt_status web_limits(const mt_flag *f, const char *key, const char *text, mt_error *err) {
    double bps = 0;
    if (f->kind != MT_FLAG_BANDWIDTH || mt_parse_bandwidth(text, &bps, NULL) != MT_OK) return MT_OK;
    if (bps >= MT_SERVE_MIN_BW_BPS) return MT_OK;
    return mt_fail(err, MT_EINVAL, "--%s %s is under the web page's floor of 1MB/s (a step would run past the "
                   "simulator's range; the command line takes it)", key, text);
}

static mt_status add_option(mt_serve_opts *o, const char *key, const json_t *v, mt_error *err) {
    char name[80], text[512];
    if (!*key || key[0] == '-' || strlen(key) > 60)
        return mt_fail(err, MT_EINVAL, "option '%s': write option names without the leading -- (e.g. \"gpus\")", key);
    snprintf(name, sizeof name, "--%s", key);
    const mt_flag *f = mt_job_find_flag(job_cmd(o->cmd), name);
    if (!f)
        return mt_fail(err, MT_EINVAL, "unknown option '%s' for %s (the API takes the run options of `mitosis %s "
                       "--help`, without the leading --)", key, mt_serve_cmd_name(o->cmd), mt_serve_cmd_name(o->cmd));
    if (names_path(f))
        return mt_fail(err, MT_EINVAL, "option '%s' names a file on the server, which the web API does not open "
                       "(use the command line)", key);
    if (!f->metavar) {
        if (json_is_false(v)) return MT_OK;
        if (!json_is_true(v)) return mt_fail(err, MT_EINVAL, "option '%s' is a switch: true or false", key);
        return push(o, name, err);
    }
    if (json_is_array(v)) {
        if (!f->repeat) return mt_fail(err, MT_EINVAL, "option '%s' takes one value, not a list", key);
        size_t i;
        const json_t *x;
        json_array_foreach(v, i, x) {
            MT_CHECK(value_text(key, x, text, sizeof text, err));
            MT_CHECK(refuse_path(f, key, text, err));
            MT_CHECK(web_limits(f, key, text, err));
            MT_CHECK(push(o, name, err));
            MT_CHECK(push(o, text, err));
        }
        return MT_OK;
    }
    MT_CHECK(value_text(key, v, text, sizeof text, err));
    MT_CHECK(refuse_path(f, key, text, err));
    MT_CHECK(web_limits(f, key, text, err));
    MT_CHECK(push(o, name, err));
    return push(o, text, err);
}

static mt_status build_argv(mt_serve_opts *o, const json_t *options, const char *const *paths, int n_paths,
                            mt_error *err) {
    MT_CHECK(push(o, mt_serve_cmd_name(o->cmd), err));
    if (options && !json_is_object(options))
        return mt_fail(err, MT_EINVAL, "\"options\" must be a JSON object of option names and values");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)options, key, v) MT_CHECK(add_option(o, key, v, err));
    MT_CHECK(push(o, "--", err));
    for (int k = 0; k < n_paths; k++) MT_CHECK(push(o, paths[k], err));
    return MT_OK;
}

mt_status mt_serve_opts_parse(mt_serve_cmd cmd, const json_t *options, const char *const *paths, int n_paths,
                              mt_serve_opts *o, mt_error *err) {
    memset(o, 0, sizeof *o);
    o->cmd = cmd;
    mt_status st = build_argv(o, options, paths, n_paths, err);
    if (st == MT_OK && (st = mt_job_open(&o->job, job_cmd(cmd), err)) == MT_OK) o->job_live = 1;
    if (st == MT_OK) st = mt_job_parse(&o->job, o->argv.n, o->argv.w, mt_serve_cmd_name(cmd), NULL, 0, 0, err);
    if (st != MT_OK) mt_serve_opts_free(o);
    return st;
}

void mt_serve_opts_free(mt_serve_opts *o) {
    if (o->job_live) mt_job_close(&o->job);
    o->job_live = 0;
    mt_job_words_free(&o->argv);
    json_decref(o->cluster);
    o->cluster = NULL;
}

static const char *const KIND_NAMES[] = {"switch", "int", "int", "number", "bytes", "bandwidth", "time",
                                         "string", "choice", "text"};

static json_t *flag_json(const mt_flag_table *t, const mt_flag *f) {
    json_t *o = json_object();
    json_object_set_new(o, "name", json_string(f->name + 2));
    json_object_set_new(o, "section", json_string(t->section));
    json_object_set_new(o, "kind", json_string(KIND_NAMES[f->kind]));
    json_object_set_new(o, "metavar", f->metavar ? json_string(f->metavar) : json_null());
    json_object_set_new(o, "help", json_string(f->help ? f->help : ""));
    int ranged = f->kind >= MT_FLAG_INT && f->kind <= MT_FLAG_TIME;
    json_object_set_new(o, "lo", ranged ? json_real(f->lo) : json_null());
    json_object_set_new(o, "lo_open", json_boolean(f->lo_open));
    json_object_set_new(o, "hi", ranged && f->hi != 0 ? json_real(f->hi) : json_null());
    json_object_set_new(o, "choices", f->choices ? json_string(f->choices) : json_null());
    json_object_set_new(o, "repeat", json_boolean(f->repeat));
    return o;
}

json_t *mt_serve_opts_json(mt_serve_cmd cmd) {
    const mt_flag_table *t[MT_JOB_TABLES_MAX];
    int n = mt_job_tables(job_cmd(cmd), t);
    json_t *a = json_array();
    for (int k = 0; k < n; k++)
        for (int i = 0; i < t[k]->n; i++)
            if (!names_path(&t[k]->flags[i])) json_array_append_new(a, flag_json(t[k], &t[k]->flags[i]));
    return a;
}

json_t *mt_serve_opts_values_json(void) {
    mt_gpu_table *tab = NULL;
    if (mt_gpu_table_new(NULL, &tab, NULL) != MT_OK) return NULL;
    json_t *gpus = json_array();
    for (int k = 0; k < tab->n; k++)
        json_array_append_new(gpus, json_pack("{s:s, s:s, s:f}", "name", tab->gpus[k].name, "note", tab->gpus[k].note,
                                              "mem_bytes", tab->gpus[k].mem_bytes));
    mt_gpu_table_free(tab);
    int32_t n = 0;
    const mt_topo_preset *p = mt_topo_presets(&n);
    json_t *presets = json_array();
    for (int32_t k = 0; k < n; k++) {
        long v[MT_PRESET_PARAMS_MAX] = {0};
        long box = !p[k].params[0].name && p[k].gpus ? p[k].gpus(v) : 0; /* a fixed box (dgx-h100): its GPUs */
        json_array_append_new(presets, json_pack("{s:s, s:s, s:s, s:f, s:f, s:s?, s:o}", "name", p[k].name, "syntax",
                                                 p[k].syntax, "help", p[k].help, "link_bw_Bps", p[k].link.bw_Bps,
                                                 "nic_bw_Bps", p[k].nic.bw_Bps, "gpu", p[k].gpu, "gpus",
                                                 box > 0 ? json_integer(box) : json_null()));
    }
    json_t *places = json_array();
    for (int k = 0; MT_PLACEMENT_POLICIES[k]; k++)
        json_array_append_new(places, json_pack("{s:s, s:s}", "name", MT_PLACEMENT_POLICIES[k]->name, "help",
                                                MT_PLACEMENT_POLICIES[k]->help));
    mt_photonic_params ph; /* the photonic model's defaults: the wafer preset of the page */
    mt_photonic_params_init(&ph);
    json_t *wafer = json_pack("{s:i, s:i, s:f, s:f}", "endpoints", MT_PHOTONIC_ENDPOINTS, "ports", ph.ports,
                              "total_bw_Bps", ph.total_bw_Bps, "setup_ns", ph.setup_ns);
    return json_pack("{s:o, s:o, s:o, s:o}", "gpus", gpus, "presets", presets, "placements", places, "photonic",
                     wafer);
}
