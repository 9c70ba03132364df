/* run/cluster.c — see cluster.h. */
#include "run/cluster.h"

#include <jansson.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "network/nettap.h"
#include "run/flags.h"
#include "util/fileio.h"
#include "util/u64map.h"
#include "run/placement.h"
#include "run/whatif.h"

static char *dupstr(const char *s) {
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d) memcpy(d, s, n);
    return d;
}

/* A path in the file: as given when absolute or present from here, else beside the file. */
static char *resolve_path(const char *file, const char *p) {
    if (p[0] == '/' || access(p, F_OK) == 0) return dupstr(p);
    const char *slash = strrchr(file, '/');
    if (!slash) return dupstr(p);
    size_t dn = (size_t)(slash - file) + 1, pn = strlen(p);
    char *out = malloc(dn + pn + 1);
    if (!out) return NULL;
    memcpy(out, file, dn);
    memcpy(out + dn, p, pn + 1);
    return out;
}

/* A JSON array of strings (or numbers) -> argv after a leading "cluster"; anything else is refused. */
static mt_status take_args(const char *file, const char *what, json_t *v, char ***argv, int *argc, mt_error *err) {
    *argv = NULL;
    *argc = 0;
    size_t cap = 2;
    if (v && json_is_array(v)) cap += json_array_size(v);
    else if (v) /* a string split on spaces would break a path with a space: a list, as argv */
        return mt_fail(err, MT_EINVAL, "%s: %s must be a list of flags, e.g. [\"--gpus\", \"8\"]", file, what);
    char **a = calloc(cap, sizeof *a);
    if (!a) return mt_fail(err, MT_ENOMEM, "out of memory reading %s", file);
    int n = 0;
    a[n++] = dupstr("cluster");
    if (v && json_is_array(v)) {
        size_t i;
        json_t *x;
        json_array_foreach(v, i, x) {
            if (!json_is_string(x) && !json_is_number(x)) {
                for (int k = 0; k < n; k++) free(a[k]);
                free(a);
                return mt_fail(err, MT_EINVAL, "%s: %s[%zu] must be a string", file, what, i);
            }
            char buf[64];
            if (json_is_integer(x)) snprintf(buf, sizeof buf, "%lld", (long long)json_integer_value(x));
            else if (json_is_real(x)) snprintf(buf, sizeof buf, "%.17g", json_real_value(x));
            a[n++] = dupstr(json_is_string(x) ? json_string_value(x) : buf);
        }
    }
    *argv = a;
    *argc = n;
    return MT_OK;
}

static void free_args(char **a, int n) {
    for (int i = 0; i < n; i++) free(a[i]);
    free(a);
}

/* 1 when f is one of the network's flags. */
static int is_net_flag(const mt_flag *f) {
    const mt_flag_table *t[MT_NETCFG_TABLES];
    int n = mt_netcfg_tables(t);
    for (int k = 0; k < n; k++)
        if (f >= t[k]->flags && f < t[k]->flags + t[k]->n) return 1;
    return 0;
}

/* GPUs per node a spec implies: multinode's gpus=G, a fat-tree's K/2 per edge switch, else 8. */
static int32_t node_size(const char *spec) {
    const char *g = strstr(spec, "gpus=");
    if (!strncmp(spec, "multinode", 9) && g) return (int32_t)atoi(g + 5);
    const char *k = strstr(spec, "k=");
    if (!strncmp(spec, "fattree", 7) && k && atoi(k + 2) >= 2) return (int32_t)(atoi(k + 2) / 2);
    return 8;
}

/* The job's keys are the file's: name, trace, args, placement, start_ms, steps. */
static mt_status job_keys(const mt_cluster *c, json_t *jj, int32_t idx, mt_error *err) {
    static const char *const KEYS[] = {"name", "trace", "args", "placement", "start_ms", "steps", NULL};
    const char *key;
    json_t *v;
    json_object_foreach(jj, key, v) {
        int ok = 0;
        for (int k = 0; KEYS[k]; k++) ok |= !strcmp(key, KEYS[k]);
        if (!ok)
            return mt_fail(err, MT_EINVAL, "%s: jobs[%d] has an unknown key '%s' (name, trace, args, placement, "
                           "start_ms, steps)", c->file, (int)idx, key);
    }
    return MT_OK;
}

/* "placement": a policy name, or a list of GPUs [0, 1, 2] kept as "0,1,2". */
static mt_status job_placement(const mt_cluster *c, mt_cluster_job *j, json_t *pl, mt_error *err) {
    if (pl && json_is_array(pl)) {
        size_t n = json_array_size(pl), i;
        char *s = calloc(n * 12 + 1, 1);
        if (!s) return mt_fail(err, MT_ENOMEM, "out of memory reading %s", c->file);
        json_t *x;
        json_array_foreach(pl, i, x) {
            if (!json_is_integer(x) || json_integer_value(x) < 0 || json_integer_value(x) > INT32_MAX) {
                free(s);
                return mt_fail(err, MT_EINVAL, "%s: job %s: placement[%zu] must be a GPU number >= 0 (GPUs are "
                               "numbered from 0)", c->file, j->name, i);
            }
            snprintf(s + strlen(s), 13, "%s%lld", i ? "," : "", (long long)json_integer_value(x));
        }
        j->placement = s;
    } else if (pl && json_is_string(pl)) {
        j->placement = dupstr(json_string_value(pl));
    } else if (pl) {
        return mt_fail(err, MT_EINVAL, "%s: job %s: placement must be a policy name or a list of GPUs", c->file,
                       j->name);
    }
    return MT_OK;
}

/* The file's description of job idx: its name, trace, placement, start, steps and args. */
static mt_status job_schema(const mt_cluster *c, mt_cluster_job *j, json_t *jj, int32_t idx, mt_error *err) {
    MT_CHECK(job_keys(c, jj, idx, err));
    json_t *nm = json_object_get(jj, "name");
    if (nm && !json_is_string(nm)) return mt_fail(err, MT_EINVAL, "%s: jobs[%d].name must be a string", c->file, (int)idx);
    snprintf(j->name, sizeof j->name, "%s", nm ? json_string_value(nm) : "");
    if (!j->name[0]) snprintf(j->name, sizeof j->name, "job%d", (int)idx);
    for (int32_t k = 0; k < idx; k++)
        if (!strcmp(c->jobs[k].name, j->name))
            return mt_fail(err, MT_EINVAL, "%s: two jobs are named '%s' (names must differ)", c->file, j->name);
    json_t *tr = json_object_get(jj, "trace");
    if (!json_is_string(tr))
        return mt_fail(err, MT_EINVAL, "%s: job %s has no \"trace\" (a trace folder, as simulate takes)", c->file,
                       j->name);
    if (!(j->trace = resolve_path(c->file, json_string_value(tr))))
        return mt_fail(err, MT_ENOMEM, "out of memory reading %s", c->file);
    MT_CHECK(job_placement(c, j, json_object_get(jj, "placement"), err));
    json_t *st = json_object_get(jj, "start_ms"), *sp = json_object_get(jj, "steps");
    if (st && (!json_is_number(st) || json_number_value(st) < 0 || json_number_value(st) > 1e9))
        return mt_fail(err, MT_EINVAL, "%s: job %s: start_ms must be a number of milliseconds from 0 to 1e9", c->file,
                       j->name);
    if (sp && (!json_is_integer(sp) || json_integer_value(sp) < 1 || json_integer_value(sp) > 100000))
        return mt_fail(err, MT_EINVAL, "%s: job %s: steps must be an integer 1..100000", c->file, j->name);
    j->start_ms = st ? json_number_value(st) : 0;
    j->steps = sp ? (int32_t)json_integer_value(sp) : 0;
    char what[96];
    snprintf(what, sizeof what, "job %s's args", j->name);
    return take_args(c->file, what, json_object_get(jj, "args"), &j->argv, &j->argc, err);
}

/* Its configuration through the front door (run/job.h), from simulate's tables; what a cluster job
 * cannot take refused. */
static mt_status job_parse(const mt_cluster *c, mt_cluster_job *j, mt_error *err) {
    MT_CHECK(mt_job_open(&j->job, MT_JOB_CLUSTER, err));
    mt_run_config *cfg = &j->job.rc;
    cfg->gpus_per_node = c->gpn;
    char cmd[96];
    snprintf(cmd, sizeof cmd, "cluster job %s", j->name);
    if (mt_job_parse(&j->job, j->argc, j->argv, cmd, NULL, 0, 0, err) != MT_OK)
        return mt_error_prefix(err, "%s: job %s", c->file, j->name);
    const mt_flag_seen *seen = &j->job.seen;
    for (int32_t k = 0; k < seen->n; k++)
        if (is_net_flag(seen->flag[k]))
            return mt_fail(err, MT_EINVAL, "%s: job %s: %s belongs to the cluster's fabric (the file's \"topology\" "
                           "and \"network\"), not to a job", c->file, j->name, seen->flag[k]->name);
    if (seen->help) return mt_fail(err, MT_EINVAL, "%s: job %s: --help is not a job flag", c->file, j->name);
    if (cfg->n_paths > 0)
        return mt_fail(err, MT_EINVAL, "%s: job %s: its args name a trace ('%s'); give it as \"trace\"", c->file,
                       j->name, cfg->paths[0]);
    if (mt_whatif_perturbs(cfg))
        return mt_fail(err, MT_EINVAL, "%s: job %s: what-if flags are not modelled in a cluster run (simulate the job "
                       "alone for them)", c->file, j->name);
    if (cfg->dry_run) return mt_fail(err, MT_EINVAL, "%s: job %s: --dry-run is not a job flag", c->file, j->name);
    return mt_run_config_add_path(cfg, j->trace, err);
}

/* Appends "\x1fNAME=VALUE" (or s alone when name is NULL) to key, which has room (sized by job_cache_keys). */
static void key_add(char *key, size_t *len, const char *name, const char *value) {
    size_t n = name ? strlen(name) : 0, v = value ? strlen(value) : 0;
    char *p = key + *len;
    if (name) *p++ = '\x1f';
    memcpy(p, name ? name : value, name ? n : v);
    p += name ? n : v;
    if (name) {
        *p++ = '=';
        memcpy(p, value ? value : "", v);
        p += v;
    }
    *p = '\0';
    *len = (size_t)(p - key);
}

/* What decides sharing: the trace and the flags outside the plan (in_key); the steps and the plan
 * flags (run_key). */
static mt_status job_cache_keys(const mt_cluster *c, mt_cluster_job *j, mt_error *err) {
    const mt_flag_seen *seen = &j->job.seen;
    size_t kl = strlen(j->trace) + 2;
    for (int32_t k = 0; k < seen->n; k++)
        kl += strlen(seen->flag[k]->name) + (seen->value[k] ? strlen(seen->value[k]) : 0) + 2;
    j->in_key = calloc(kl, 1);
    j->run_key = calloc(kl + strlen(j->trace) + 64, 1);
    if (!j->in_key || !j->run_key) return mt_fail(err, MT_ENOMEM, "out of memory reading %s", c->file);
    size_t in_len = 0, run_len = 0;
    key_add(j->in_key, &in_len, NULL, j->trace);
    char steps[48];
    snprintf(steps, sizeof steps, "\x1f%d", (int)j->steps);
    key_add(j->run_key, &run_len, NULL, steps);
    for (int32_t k = 0; k < seen->n; k++) {
        const mt_flag *f = seen->flag[k];
        int plan = f >= MT_RUN_PLAN_FLAGS.flags && f < MT_RUN_PLAN_FLAGS.flags + MT_RUN_PLAN_FLAGS.n;
        key_add(plan ? j->run_key : j->in_key, plan ? &run_len : &in_len, f->name, seen->value[k]);
    }
    return MT_OK;
}

/* An earlier job with the same in_key lends its input (and, with the same run_key, its program);
 * else the job loads its own. Then its program is built. */
static mt_status job_input_and_program(mt_cluster *c, mt_cluster_job *j, int32_t idx, mt_error *err) {
    j->in_from = j->run_from = -1;
    for (int32_t k = 0; k < idx && j->in_from < 0; k++)
        if (!strcmp(c->jobs[k].in_key, j->in_key)) j->in_from = c->jobs[k].in_from >= 0 ? c->jobs[k].in_from : k;
    mt_status st;
    if (j->in_from >= 0) {
        for (int32_t k = j->in_from; k < idx && j->run_from < 0; k++)
            if (c->jobs[k].in_from == j->in_from || k == j->in_from)
                if (!strcmp(c->jobs[k].run_key, j->run_key))
                    j->run_from = c->jobs[k].run_from >= 0 ? c->jobs[k].run_from : k;
        /* its input borrowed, with its calibration and device rules */
        st = mt_job_share(&j->job, &c->jobs[j->in_from].job, err);
        if (st == MT_OK && j->run_from >= 0) { /* the same program too */
            j->n = c->jobs[j->run_from].n;
            return MT_OK;
        }
    } else {
        st = mt_job_load(&j->job, NULL, err);
    }
    if (st != MT_OK) return mt_error_prefix(err, "%s: job %s", c->file, j->name);
    mt_simrun_cfg sc = mt_simrun_cfg_of(&j->job.rc, 0);
    sc.sim.no_fold = "a cluster job";
    sc.sim.steps = j->steps > 0 ? j->steps : j->job.rc.steps > 0 ? j->job.rc.steps : 1;
    if (sc.plan.algo == MT_ALGO_AUTO) /* NCCL's tuner would need the nodes the placement gives each group */
        sc.plan.algo = MT_ALGO_RING;
    if (mt_simrun_build_program(j->job.in.t, j->job.in.pm, &sc, &j->run, err) != MT_OK)
        return mt_error_prefix(err, "%s: job %s", c->file, j->name);
    j->n = j->run.plan.gpus;
    return MT_OK;
}

static mt_status load_job(mt_cluster *c, json_t *jj, int32_t idx, mt_error *err) {
    mt_cluster_job *j = &c->jobs[idx];
    j->in_from = j->run_from = -1;
    MT_CHECK(job_schema(c, j, jj, idx, err));
    MT_CHECK(job_parse(c, j, err));
    /* jobs with the same trace and the same flags outside the plan share the loaded trace (and with
     * the same plan flags too, the program): 1,000 jobs of one model load it once */
    MT_CHECK(job_cache_keys(c, j, err));
    return job_input_and_program(c, j, idx, err);
}

mt_status mt_cluster_check_outputs(const mt_cluster *c, const mt_out_spec *outs, int n, mt_error *err) {
    mt_out_inputs s;
    mt_out_inputs_init(&s);
    mt_out_inputs_add(&s, c->file, MT_OUT_FILE);
    mt_out_inputs_add(&s, c->topology, MT_OUT_FILE); /* a topology file beside the job file */
    for (int32_t k = 0; k < c->n_jobs; k++) mt_run_inputs_add(&c->jobs[k].job.rc, &s);
    mt_status rc = mt_out_check_all(&s, outs, n, err);
    mt_out_inputs_free(&s);
    return rc;
}

const mt_simrun *mt_cluster_job_run(const mt_cluster *c, int32_t j) {
    return c->jobs[j].run_from >= 0 ? &c->jobs[c->jobs[j].run_from].run : &c->jobs[j].run;
}

static mt_status load(const char *path, const mt_netcfg *net, int net_given, mt_cluster *c, mt_error *err) {
    if (!(c->file = dupstr(path))) return mt_fail(err, MT_ENOMEM, "out of memory");
    json_error_t je;
    char *text = NULL;
    size_t text_len = 0;
    MT_CHECK(mt_read_config(path, &text, &text_len, err)); /* bounded, a regular file only */
    json_t *root = json_loadb(text, text_len, JSON_REJECT_DUPLICATES, &je);
    free(text);
    if (!root)
        return mt_fail(err, MT_EINVAL, "%s: not a cluster job file (line %d: %s); see mitosis cluster --help", path,
                       je.line, je.text);
    mt_status rc = MT_OK;
    const char *key;
    json_t *v;
    if (!json_is_object(root)) rc = mt_fail(err, MT_EINVAL, "%s: a cluster file is a JSON object with \"jobs\"", path);
    if (rc == MT_OK) json_object_foreach(root, key, v) {
            if (strcmp(key, "topology") && strcmp(key, "gpus_per_node") && strcmp(key, "network") &&
                strcmp(key, "placement") && strcmp(key, "jobs") && strcmp(key, "comment")) {
                rc = mt_fail(err, MT_EINVAL, "%s: unknown key '%s' (topology, gpus_per_node, network, placement, jobs)",
                             path, key);
                break;
            }
        }
    json_t *jobs = rc == MT_OK ? json_object_get(root, "jobs") : NULL;
    if (rc == MT_OK && (!json_is_array(jobs) || json_array_size(jobs) == 0))
        rc = mt_fail(err, MT_EINVAL, "%s: \"jobs\" must be a non-empty list of jobs", path);
    if (rc == MT_OK && json_array_size(jobs) > 100000) rc = mt_fail(err, MT_EINVAL, "%s: more than 100,000 jobs", path);
    /* the fabric: the file's network flags, then the command line's on top */
    c->net = *net;
    json_t *topo = rc == MT_OK ? json_object_get(root, "topology") : NULL;
    if (rc == MT_OK && topo && !json_is_string(topo))
        rc = mt_fail(err, MT_EINVAL, "%s: \"topology\" must be a spec such as fattree:k=8", path);
    if (rc == MT_OK) rc = take_args(path, "\"network\"", json_object_get(root, "network"), &c->net_argv, &c->net_argc, err);
    if (rc == MT_OK && !net_given) {
        mt_netcfg_init(&c->net);
        for (int i = 1; rc == MT_OK && i < c->net_argc;) {
            int t = mt_netcfg_take(&c->net, c->net_argc, c->net_argv, &i, err);
            if (t < 0) rc = mt_error_prefix(err, "%s: \"network\"", path);
            else if (t == 0)
                rc = mt_fail(err, MT_EINVAL, "%s: \"network\": '%s' is not a network flag", path, c->net_argv[i]);
        }
        if (rc == MT_OK && !c->net.topology && topo) {
            const char *t = json_string_value(topo);
            size_t tl = strlen(t);
            int file = tl > 5 && (!strcmp(t + tl - 5, ".json") || !strcmp(t + tl - 4, ".csv"));
            char *rp = file ? resolve_path(path, t) : NULL; /* a topology file beside the job file */
            snprintf(c->topology, sizeof c->topology, "%s", rp ? rp : t);
            free(rp);
            c->net.topology = c->topology;
        }
        if (rc == MT_OK && mt_netcfg_check(&c->net, NULL, err) != MT_OK)
            rc = mt_error_prefix(err, "%s: \"topology\" / \"network\"", path); /* name the file it came from */
    }
    if (rc == MT_OK && !c->net.topology)
        rc = mt_fail(err, MT_EINVAL, "%s: no topology (give \"topology\" in the file or --topology)", path);
    if (rc == MT_OK) {
        if (c->net.topology != c->topology) snprintf(c->topology, sizeof c->topology, "%s", c->net.topology);
        c->net.topology = c->topology; /* the file's string dies with root */
        rc = mt_netcfg_topology(&c->net, 0, &c->topo, err);
        if (rc != MT_OK && !net_given) mt_error_prefix(err, "%s: \"topology\"", path);
    }
    if (rc == MT_OK && !c->topo) rc = mt_fail(err, MT_EINVAL, "%s: a cluster needs a topology with links", path);
    if (rc == MT_OK) mt_topo_gpus(c->topo, &c->total);
    json_t *gpn = rc == MT_OK ? json_object_get(root, "gpus_per_node") : NULL;
    if (rc == MT_OK && gpn && (!json_is_integer(gpn) || json_integer_value(gpn) < 1))
        rc = mt_fail(err, MT_EINVAL, "%s: gpus_per_node must be an integer >= 1", path);
    if (rc == MT_OK && gpn && c->total > 0 && json_integer_value(gpn) > c->total)
        rc = mt_fail(err, MT_EINVAL, "%s: gpus_per_node %lld is more than the topology's %d GPUs", path,
                     (long long)json_integer_value(gpn), (int)c->total);
    c->gpn = rc == MT_OK && gpn ? (int32_t)json_integer_value(gpn) : node_size(c->topology);
    if (c->gpn < 1) c->gpn = 1;
    if (c->gpn > c->total && c->total > 0) c->gpn = c->total; /* a preset's node size on a smaller fabric */
    json_t *pl = rc == MT_OK ? json_object_get(root, "placement") : NULL;
    if (rc == MT_OK && pl && !(json_is_string(pl) && mt_placement_is_policy(json_string_value(pl))))
        rc = mt_fail(err, MT_EINVAL, "%s: \"placement\" must be a policy: packed, spread, random[:SEED], rail-aligned",
                     path);
    if (rc == MT_OK && !(c->placement = dupstr(pl ? json_string_value(pl) : "packed")))
        rc = mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) {
        c->n_jobs = (int32_t)json_array_size(jobs);
        if (!(c->jobs = calloc((size_t)c->n_jobs, sizeof *c->jobs))) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    }
    for (int32_t k = 0; rc == MT_OK && k < c->n_jobs; k++) {
        json_t *jj = json_array_get(jobs, (size_t)k);
        if (!json_is_object(jj)) rc = mt_fail(err, MT_EINVAL, "%s: jobs[%d] must be an object", path, (int)k);
        else rc = load_job(c, jj, k, err);
    }
    json_decref(root);
    return rc;
}

mt_status mt_cluster_load(const char *path, const mt_netcfg *net, int net_given, mt_cluster *c, mt_error *err) {
    memset(c, 0, sizeof *c);
    mt_status rc = load(path, net, net_given, c, err);
    if (rc != MT_OK) mt_cluster_free(c);
    return rc;
}

mt_status mt_cluster_place(mt_cluster *c, const char *policy, mt_error *err) {
    mt_fabric_slots f = {c->total, c->gpn, calloc((size_t)(c->total > 0 ? c->total : 1), 1)};
    if (!f.used) return mt_fail(err, MT_ENOMEM, "out of memory placing jobs");
    int32_t need = 0;
    for (int32_t k = 0; k < c->n_jobs; k++) need += c->jobs[k].n;
    mt_status rc = need > c->total
                       ? mt_fail(err, MT_EINVAL, "%s: the jobs need %d GPUs, the fabric (%s) has %d", c->file,
                                 (int)need, c->topology, (int)c->total)
                       : MT_OK;
    for (int32_t k = 0; rc == MT_OK && k < c->n_jobs; k++) {
        mt_cluster_job *j = &c->jobs[k];
        const char *spec = j->placement ? j->placement : c->placement;
        if (policy && mt_placement_is_policy(spec)) spec = policy;
        free(j->gpus);
        if (!(j->gpus = malloc((size_t)(j->n > 0 ? j->n : 1) * sizeof *j->gpus)))
            rc = mt_fail(err, MT_ENOMEM, "out of memory placing jobs");
        else rc = mt_place(&f, j->name, spec, j->n, j->gpus, err);
        j->placed_by = spec;
        if (rc != MT_OK) mt_error_prefix(err, "%s", c->file);
    }
    free(f.used);
    return rc;
}

void mt_cluster_free(mt_cluster *c) {
    if (!c) return;
    for (int32_t k = 0; c->jobs && k < c->n_jobs; k++) {
        mt_cluster_job *j = &c->jobs[k];
        if (j->run_from < 0) mt_simrun_free(&j->run);
        mt_job_close(&j->job); /* a borrowed input is the lender's */
        free(j->in_key);
        free(j->run_key);
        free_args(j->argv, j->argc);
        free(j->trace);
        free(j->placement);
        free(j->gpus);
    }
    free(c->jobs);
    free_args(c->net_argv, c->net_argc);
    mt_topo_free(c->topo);
    free(c->placement);
    free(c->file);
    memset(c, 0, sizeof *c);
}

/* ---- running ------------------------------------------------------------------------------- */

static double step_ms(const mt_sim_result *r) { return (double)r->step_ps / 1e9 / (r->n_steps > 0 ? r->n_steps : 1); }

static double max_of(const mt_sim_result *r, int peer) {
    mt_time_ps m = 0;
    for (int32_t i = 0; i < r->n_gpus; i++) {
        mt_time_ps v = peer ? r->gpus[i].peer_wait_ps : r->gpus[i].exposed_ps;
        if (v > m) m = v;
    }
    return (double)m / 1e9 / (r->n_steps > 0 ? r->n_steps : 1);
}

/* Jobs js (n of them) on a fresh engine and network of the cluster's fabric. pairs: when not
 * NULL, each job's traffic by endpoint pair is counted (a tap per job) and handed to pairs_fn. */
typedef mt_status (*pairs_fn)(void *ctx, int32_t job, const mt_nettap_pair *p, int32_t n, mt_error *err);
static mt_status run_set(mt_cluster *c, const int32_t *js, int32_t n, mt_sim_result **outs, pairs_fn on_pairs,
                         void *pairs_ctx, uint64_t *events, mt_cluster_spans *spans, mt_error *err) {
    mt_engine *e = mt_engine_new();
    if (!e) return mt_fail(err, MT_ENOMEM, "out of memory creating the engine");
    mt_netmodel net = {0};
    mt_status rc = mt_netcfg_model(&c->net, c->topo, mt_engine_sched(e), &net, err);
    mt_sim_job *sj = calloc((size_t)n, sizeof *sj);
    mt_sim_opts *so = calloc((size_t)n, sizeof *so);
    mt_cluster_tap *taps = calloc((size_t)n, sizeof *taps);
    mt_netmodel *tapnet = calloc((size_t)n, sizeof *tapnet);
    if (rc == MT_OK && (!sj || !so || !taps || !tapnet)) rc = mt_fail(err, MT_ENOMEM, "out of memory setting up jobs");
    for (int32_t k = 0; rc == MT_OK && k < n; k++) {
        mt_cluster_job *j = &c->jobs[js[k]];
        const mt_simrun *run = mt_cluster_job_run(c, js[k]);
        so[k] = run->sim;
        so[k].host = run->host;
        so[k].comm_slow = run->comm_slow;
        if (spans) {
            taps[k] = (mt_cluster_tap){spans, js[k]};
            so[k].on_span = mt_cluster_span_record;
            so[k].span_ctx = &taps[k];
        }
        sj[k] = (mt_sim_job){run->prog, &so[k], j->gpus, (mt_time_ps)llround(j->start_ms * 1e9), NULL};
        if (on_pairs) {
            rc = mt_nettap_new(&net, &tapnet[k], err);
            sj[k].net = &tapnet[k];
        }
    }
    if (rc == MT_OK) rc = mt_simulate_jobs(sj, n, &net, e, outs, err);
    if (rc == MT_OK && events) *events = mt_engine_events(e);
    for (int32_t k = 0; rc == MT_OK && on_pairs && k < n; k++) {
        int32_t np;
        const mt_nettap_pair *p = mt_nettap_pairs(&tapnet[k], &np);
        rc = on_pairs(pairs_ctx, js[k], p, np, err);
    }
    for (int32_t k = 0; tapnet && k < n; k++) mt_net_free(&tapnet[k]);
    free(tapnet);
    free(sj);
    free(so);
    free(taps);
    mt_net_free(&net);
    mt_engine_free(e);
    return rc;
}

/* Each job's bytes per link, from its pairs routed on the fabric (sparse: its links only). */
typedef struct joblinks {
    int32_t *link;
    double *bytes;
    int32_t n, cap;
} joblinks;

typedef struct linkacc {
    mt_cluster *c;
    joblinks *jl;        /* per job */
    mt_u64map at;        /* scratch: link -> index in the job's arrays */
} linkacc;

static mt_status add_pairs(void *ctx, int32_t job, const mt_nettap_pair *p, int32_t n, mt_error *err) {
    linkacc *a = ctx;
    joblinks *jl = &a->jl[job];
    mt_u64map_destroy(&a->at);
    mt_u64map_init(&a->at);
    for (int32_t i = 0; i < n; i++) {
        if (p[i].bytes <= 0 || p[i].src == p[i].dst) continue;
        const int32_t *links;
        int32_t nl;
        MT_CHECK(mt_topo_route(a->c->topo, p[i].src, p[i].dst, &links, &nl, err));
        for (int32_t k = 0; k < nl; k++) {
            int64_t at;
            if (!mt_u64map_get(&a->at, (uint64_t)links[k], &at)) {
                if (jl->n == jl->cap) {
                    int32_t cap = jl->cap ? 2 * jl->cap : 16;
                    int32_t *l = realloc(jl->link, (size_t)cap * sizeof *l);
                    if (l) jl->link = l;
                    double *b = realloc(jl->bytes, (size_t)cap * sizeof *b);
                    if (b) jl->bytes = b;
                    if (!l || !b) return mt_fail(err, MT_ENOMEM, "out of memory summing link bytes");
                    jl->cap = cap;
                }
                at = jl->n++;
                jl->link[at] = links[k];
                jl->bytes[at] = 0;
                MT_CHECK(mt_u64map_put(&a->at, (uint64_t)links[k], at, err));
            }
            jl->bytes[at] += p[i].bytes;
        }
    }
    return MT_OK;
}

static int by_bytes(const void *a, const void *b) {
    const mt_cluster_link *x = a, *y = b;
    return x->total_bytes < y->total_bytes ? 1 : x->total_bytes > y->total_bytes ? -1 : x->link - y->link;
}

/* Shared links and each job's top ones, from the jobs' link bytes. */
static mt_status shared_links(const mt_cluster *c, const joblinks *jl, mt_cluster_result *r, mt_error *err) {
    int32_t nl = mt_topo_nlinks(c->topo);
    double *total = calloc((size_t)(nl > 0 ? nl : 1), sizeof *total);
    int32_t *users = calloc((size_t)(nl > 0 ? nl : 1), sizeof *users);
    if (!total || !users) {
        free(total);
        free(users);
        return mt_fail(err, MT_ENOMEM, "out of memory summing link bytes");
    }
    int32_t n_shared = 0;
    for (int32_t k = 0; k < c->n_jobs; k++)
        for (int32_t i = 0; i < jl[k].n; i++) {
            total[jl[k].link[i]] += jl[k].bytes[i];
            n_shared += ++users[jl[k].link[i]] == 2;
        }
    r->links = calloc((size_t)(n_shared > 0 ? n_shared : 1), sizeof *r->links);
    if (!r->links) {
        free(total);
        free(users);
        return mt_fail(err, MT_ENOMEM, "out of memory summing link bytes");
    }
    for (int32_t l = 0; l < nl; l++)
        if (users[l] >= 2) r->links[r->n_links++] = (mt_cluster_link){l, total[l], users[l]};
    for (int32_t k = 0; k < c->n_jobs; k++) {
        mt_cluster_jobres *jr = &r->jobs[k];
        for (int t = 0; t < 3; t++) jr->top_links[t] = -1;
        for (int32_t i = 0; i < jl[k].n; i++) {
            int32_t l = jl[k].link[i];
            double b = jl[k].bytes[i];
            if (users[l] < 2) continue;
            jr->shared_bytes += b;
            for (int t = 0; t < 3; t++)
                if (jr->top_links[t] < 0 || b > jr->top_bytes[t] || (b == jr->top_bytes[t] && l < jr->top_links[t])) {
                    for (int u = 2; u > t; u--) {
                        jr->top_links[u] = jr->top_links[u - 1];
                        jr->top_bytes[u] = jr->top_bytes[u - 1];
                        jr->top_other[u] = jr->top_other[u - 1];
                    }
                    jr->top_links[t] = l;
                    jr->top_bytes[t] = b;
                    jr->top_other[t] = total[l] - b;
                    break;
                }
        }
    }
    qsort(r->links, (size_t)r->n_links, sizeof *r->links, by_bytes);
    r->n_heat = r->n_links < MT_CLUSTER_HEAT ? r->n_links : MT_CLUSTER_HEAT;
    r->heat = calloc((size_t)(r->n_heat > 0 ? r->n_heat : 1) * (size_t)c->n_jobs, sizeof *r->heat);
    if (!r->heat) {
        free(total);
        free(users);
        return mt_fail(err, MT_ENOMEM, "out of memory summing link bytes");
    }
    for (int32_t l = 0; l < nl; l++) users[l] = -1; /* now: the heat row of a link, -1 none */
    for (int32_t h = 0; h < r->n_heat; h++) users[r->links[h].link] = h;
    for (int32_t k = 0; k < c->n_jobs; k++)
        for (int32_t i = 0; i < jl[k].n; i++)
            if (users[jl[k].link[i]] >= 0) r->heat[(size_t)users[jl[k].link[i]] * (size_t)c->n_jobs + (size_t)k] = jl[k].bytes[i];
    free(total);
    free(users);
    return MT_OK;
}

/* The alone runs in batches of jobs whose traffic shares no link (the max-min solver's components
 * are independent, so each job runs in its batch exactly as alone); first fit in job order. With
 * ECMP a pair's route is the model's hash choice, not the topology's route: one job a batch then
 * (and with MT_CLUSTER_ALONE=1, for checking). A model without links: jobs on disjoint GPUs never
 * meet, one batch. */
static mt_status alone_runs(mt_cluster *c, const joblinks *jl, mt_cluster_result *r, int32_t *batches,
                            mt_error *err) {
    int32_t n = c->n_jobs;
    int solo = c->net.tp.ecmp || (getenv("MT_CLUSTER_ALONE") && !strcmp(getenv("MT_CLUSTER_ALONE"), "1"));
    int32_t *batch = malloc((size_t)n * sizeof *batch), nb = 0;
    mt_u64map *used = calloc((size_t)n, sizeof *used); /* per batch: its links */
    int32_t *js = malloc((size_t)n * sizeof *js);
    mt_sim_result **outs = calloc((size_t)n, sizeof *outs);
    mt_status rc = batch && used && js && outs ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory batching jobs");
    for (int32_t k = 0; rc == MT_OK && k < n; k++) {
        int32_t b = solo ? nb : 0;
        for (; b < nb; b++) {
            int clash = 0;
            for (int32_t i = 0; i < jl[k].n && !clash; i++) clash = mt_u64map_get(&used[b], (uint64_t)jl[k].link[i], NULL);
            if (!clash) break;
        }
        if (b == nb) mt_u64map_init(&used[nb++]);
        batch[k] = b;
        for (int32_t i = 0; rc == MT_OK && i < jl[k].n; i++) rc = mt_u64map_put(&used[b], (uint64_t)jl[k].link[i], 1, err);
    }
    for (int32_t b = 0; rc == MT_OK && b < nb; b++) {
        int32_t m = 0;
        for (int32_t k = 0; k < n; k++)
            if (batch[k] == b) js[m++] = k;
        rc = run_set(c, js, m, outs, NULL, NULL, NULL, NULL, err);
        for (int32_t i = 0; rc == MT_OK && i < m; i++) r->jobs[js[i]].alone = outs[i];
    }
    for (int32_t b = 0; used && b < nb; b++) mt_u64map_destroy(&used[b]);
    free(used);
    free(batch);
    free(js);
    free(outs);
    *batches = nb;
    return rc;
}

mt_status mt_cluster_run(mt_cluster *c, mt_cluster_spans *spans, mt_cluster_result *out, mt_error *err) {
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    memset(out, 0, sizeof *out);
    out->n_jobs = c->n_jobs;
    out->topology = c->topology;
    out->topo = c->topo;
    out->fabric_gpus = c->total;
    out->gpus_per_node = c->gpn;
    out->jobs = calloc((size_t)c->n_jobs, sizeof *out->jobs);
    int32_t *all = malloc((size_t)c->n_jobs * sizeof *all);
    mt_sim_result **tog = calloc((size_t)c->n_jobs, sizeof *tog);
    linkacc acc = {c, calloc((size_t)c->n_jobs, sizeof(joblinks)), {0}};
    mt_u64map_init(&acc.at);
    mt_status rc = out->jobs && all && tog && acc.jl ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory running jobs");
    for (int32_t k = 0; rc == MT_OK && k < c->n_jobs; k++) all[k] = k;
    if (rc == MT_OK) rc = run_set(c, all, c->n_jobs, tog, add_pairs, &acc, &out->events, spans, err);
    if (rc == MT_OK) rc = shared_links(c, acc.jl, out, err);
    if (rc == MT_OK) rc = alone_runs(c, acc.jl, out, &out->alone_batches, err);
    double sum = 0;
    for (int32_t k = 0; rc == MT_OK && k < c->n_jobs; k++) {
        mt_cluster_jobres *jr = &out->jobs[k];
        const mt_cluster_job *j = &c->jobs[k];
        jr->name = j->name;
        jr->trace = j->trace;
        jr->placement = j->placed_by;
        jr->gpus = j->gpus;
        jr->n = j->n;
        jr->start_ms = j->start_ms;
        jr->plan = mt_cluster_job_run(c, k)->plan;
        jr->together = tog[k];
        tog[k] = NULL;
        jr->alone_ms = step_ms(jr->alone);
        jr->together_ms = step_ms(jr->together);
        jr->slowdown = jr->alone_ms > 0 ? jr->together_ms / jr->alone_ms : 1;
        jr->exposed_ms = max_of(jr->together, 0);
        jr->alone_exposed_ms = max_of(jr->alone, 0);
        jr->peer_ms = max_of(jr->together, 1);
        double end = c->jobs[k].start_ms + (double)jr->together->step_ps / 1e9;
        if (end > out->makespan_ms) out->makespan_ms = end;
        if (k == 0 || jr->slowdown > out->worst_slowdown) out->worst_slowdown = jr->slowdown, out->worst_job = k;
        sum += jr->slowdown;
    }
    if (rc == MT_OK) out->mean_slowdown = sum / c->n_jobs;
    for (int32_t k = 0; tog && k < c->n_jobs; k++) mt_sim_result_free(tog[k]);
    for (int32_t k = 0; acc.jl && k < c->n_jobs; k++) {
        free(acc.jl[k].link);
        free(acc.jl[k].bytes);
    }
    free(acc.jl);
    mt_u64map_destroy(&acc.at);
    free(tog);
    free(all);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
    if (rc != MT_OK) mt_cluster_result_free(out);
    return rc;
}

void mt_cluster_result_free(mt_cluster_result *r) {
    if (!r) return;
    for (int32_t k = 0; r->jobs && k < r->n_jobs; k++) {
        mt_sim_result_free(r->jobs[k].alone);
        mt_sim_result_free(r->jobs[k].together);
    }
    free(r->jobs);
    free(r->links);
    free(r->heat);
    memset(r, 0, sizeof *r);
}

mt_status mt_cluster_run_files(mt_cluster *c, const char *policy, const mt_cluster_files *f, mt_cluster_result *out,
                               mt_error *err) {
    memset(out, 0, sizeof *out);
    mt_cluster_spans spans = {0};
    mt_status st = mt_cluster_place(c, policy, err);
    if (st == MT_OK) st = mt_cluster_run(c, f->timeline ? &spans : NULL, out, err);
    if (st == MT_OK && f->csv) st = mt_cluster_csv(f->csv, out, err);
    if (st == MT_OK && f->html) st = mt_cluster_html(f->html, out, err);
    if (st == MT_OK && f->timeline) st = mt_cluster_timeline(f->timeline, out, &spans, err);
    mt_cluster_spans_free(&spans);
    if (st != MT_OK) mt_cluster_result_free(out);
    return st;
}

mt_status mt_cluster_compare_placements(mt_cluster *c, mt_cluster_placements *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    out->topology = c->topology;
    out->n_jobs = c->n_jobs;
    int n = 0;
    while (MT_PLACEMENT_POLICIES[n] && n < MT_CLUSTER_POLICIES_MAX) n++;
    for (int i = 0; i < n; i++) {
        mt_cluster_result r;
        MT_CHECK(mt_cluster_place(c, MT_PLACEMENT_POLICIES[i]->name, err));
        MT_CHECK(mt_cluster_run(c, NULL, &r, err));
        /* insertion in rank order: worst, then mean slowdown (a tie keeps the table's order) */
        int k = out->n++;
        for (; k > 0; k--) {
            double w = out->row[k - 1].worst_slowdown, m = out->row[k - 1].mean_slowdown;
            if (!(r.worst_slowdown < w || (r.worst_slowdown == w && r.mean_slowdown < m))) break;
            out->row[k] = out->row[k - 1];
        }
        out->row[k].placement = MT_PLACEMENT_POLICIES[i]->name;
        out->row[k].worst_slowdown = r.worst_slowdown;
        out->row[k].mean_slowdown = r.mean_slowdown;
        out->row[k].makespan_ms = r.makespan_ms;
        mt_cluster_result_free(&r);
    }
    return MT_OK;
}
