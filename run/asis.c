/* run/asis.c — see asis.h. */
#include "run/asis.h"

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "report/chakra.h"
#include "sim/engine.h"
#include "util/fileio.h"

int32_t mt_asis_rank_of(const char *file, size_t *name_len) {
    const char *base = strrchr(file, '/');
    base = base ? base + 1 : file;
    size_t len = strlen(base);
    if (len < 5 || strcmp(base + len - 3, ".et")) return -1;
    size_t end = len - 3, beg = end;
    while (beg > 0 && base[beg - 1] >= '0' && base[beg - 1] <= '9') beg--;
    if (beg == end || beg < 2 || base[beg - 1] != '.' || end - beg > 7) return -1;
    if (name_len) *name_len = beg - 1;
    return (int32_t)strtol(base + beg, NULL, 10);
}

typedef struct rank_file { int32_t rank; char *path; } rank_file;

static mt_status add_file(rank_file **f, int32_t *n, int32_t *cap, const char *path, int explicit_path, mt_error *err) {
    struct stat st;
    if (explicit_path && stat(path, &st) != 0)
        return mt_fail(err, MT_EIO, "%s: %s (give Chakra ET files named NAME.RANK.et, or a directory of them)", path,
                       strerror(errno));
    if (mt_asis_rank_of(path, NULL) < 0) {
        if (!explicit_path) return MT_OK;
        return mt_fail(err, MT_EINVAL, "%s: not a Chakra ET rank file: the ranks of a job are files named NAME.RANK.et "
                       "(e.g. all_reduce.0.et), or a directory of them", path);
    }
    if (*n == *cap) {
        int32_t c = *cap ? *cap * 2 : 16;
        rank_file *nf = realloc(*f, (size_t)c * sizeof *nf);
        if (!nf) return mt_fail(err, MT_ENOMEM, "out of memory");
        *f = nf, *cap = c;
    }
    size_t l = strlen(path) + 1;
    if (!((*f)[*n].path = malloc(l))) return mt_fail(err, MT_ENOMEM, "out of memory");
    memcpy((*f)[*n].path, path, l);
    (*f)[(*n)++].rank = mt_asis_rank_of(path, NULL);
    return MT_OK;
}

static mt_status scan(const char *dir, rank_file **f, int32_t *n, int32_t *cap, mt_error *err) {
    DIR *d = opendir(dir);
    if (!d) return mt_fail(err, MT_EIO, "%s: cannot open directory", dir);
    struct dirent *de;
    mt_status rc = MT_OK;
    char path[4096];
    while (rc == MT_OK && (de = readdir(d))) {
        if (de->d_name[0] == '.') continue;
        snprintf(path, sizeof path, "%s/%s", dir, de->d_name);
        rc = add_file(f, n, cap, path, 0, err);
    }
    closedir(d);
    return rc;
}

static int by_rank(const void *a, const void *b) {
    const rank_file *x = a, *y = b;
    return (x->rank > y->rank) - (x->rank < y->rank);
}

/* Files sorted by rank: ranks 0 .. n-1 once each, one NAME (into out->name). */
static mt_status check_files(rank_file *f, int32_t n, const mt_run_config *c, mt_asis_job *out, mt_error *err) {
    if (n == 0)
        return mt_fail(err, MT_EINVAL, "%s: no Chakra ET files (NAME.RANK.et) found", c->n_paths ? c->paths[0] : "");
    qsort(f, (size_t)n, sizeof *f, by_rank);
    size_t nl;
    mt_asis_rank_of(f[0].path, &nl);
    const char *b0 = strrchr(f[0].path, '/');
    b0 = b0 ? b0 + 1 : f[0].path;
    snprintf(out->name, sizeof out->name, "%.*s", (int)nl, b0);
    for (int32_t i = 0; i < n; i++) {
        size_t l;
        mt_asis_rank_of(f[i].path, &l);
        const char *b = strrchr(f[i].path, '/');
        b = b ? b + 1 : f[i].path;
        if (l != nl || strncmp(b, b0, nl))
            return mt_fail(err, MT_EINVAL, "%s and %s are two workloads (names differ): give one set of NAME.RANK.et "
                           "files", f[0].path, f[i].path);
        if (f[i].rank != i)
            return mt_fail(err, MT_EINVAL, "%s: rank %d %s (the ranks must be 0 .. %d, one file each)", f[i].path,
                           (int)f[i].rank, f[i].rank < i ? "appears twice" : "comes after a missing rank",
                           (int)(n - 1));
    }
    return MT_OK;
}

mt_status mt_run_asis_load(const mt_run_config *c, mt_asis_job *out, mt_error *err) {
    rank_file *f = NULL;
    int32_t n = 0, cap = 0;
    mt_status rc = MT_OK;
    for (int i = 0; i < c->n_paths && rc == MT_OK; i++)
        rc = mt_is_dir(c->paths[i]) ? scan(c->paths[i], &f, &n, &cap, err) : add_file(&f, &n, &cap, c->paths[i], 1, err);
    if (rc == MT_OK) rc = check_files(f, n, c, out, err);
    if (rc == MT_OK && !(out->g = calloc((size_t)n, sizeof *out->g))) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    for (int32_t i = 0; i < n && rc == MT_OK; i++) {
        rc = mt_ck_read(f[i].path, &out->g[i], err);
        if (rc == MT_OK) out->n = i + 1;
    }
    for (int32_t i = 0; i < n; i++) free(f[i].path);
    free(f);
    return rc;
}

static mt_status simulate(const mt_run_config *c, mt_asis_job *out, mt_error *err) {
    mt_topo *topo = NULL;
    mt_engine *e = NULL;
    mt_netmodel net = {0};
    mt_netcfg_spec(&c->net, out->n, out->topology, sizeof out->topology);
    mt_status rc = mt_netcfg_topology(&c->net, out->n, &topo, err);
    if (rc == MT_OK && !(e = mt_engine_new())) rc = mt_fail(err, MT_ENOMEM, "out of memory");
    if (rc == MT_OK) rc = mt_netcfg_model(&c->net, topo, mt_engine_sched(e), &net, err);
    mt_asis_opts o;
    mt_asis_opts_init(&o);
    o.algo = c->plan.algo == MT_ALGO_AUTO ? MT_ALGO_RING : c->plan.algo; /* the graph's own schedules */
    if (rc == MT_OK && o.algo == MT_ALGO_NCCL)
        rc = mt_fail(err, MT_EINVAL, "--algo nccl does not apply to --as-is (the graphs' collectives run as "
                     "schedules: use ring, tree, direct or hier)");
    o.chunks = c->plan.chunks;
    o.ranks_per_node = c->gpus_per_node > 0 ? c->gpus_per_node : 8;
    if (rc == MT_OK) rc = mt_asis_run(out->g, out->n, &net, e, &o, &out->res, err);
    mt_net_free(&net);
    mt_engine_free(e);
    mt_topo_free(topo);
    return rc;
}

mt_status mt_run_asis(const mt_run_config *c, mt_asis_job *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    mt_status rc = mt_run_asis_load(c, out, err);
    if (rc == MT_OK) rc = simulate(c, out, err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    out->wall_s = (double)(t1.tv_sec - t0.tv_sec) + 1e-9 * (double)(t1.tv_nsec - t0.tv_nsec);
    if (rc != MT_OK) mt_asis_job_free(out);
    return rc;
}

void mt_asis_job_free(mt_asis_job *r) {
    for (int32_t i = 0; i < r->n; i++) mt_ck_graph_free(&r->g[i]);
    free(r->g);
    mt_asis_result_free(&r->res);
    memset(r, 0, sizeof *r);
}

mt_asis_summary mt_asis_job_summary(const mt_asis_job *r, const mt_run_config *c) {
    mt_asis_summary s = {c->n_paths ? c->paths[0] : "", r->name, r->n ? r->g[0].version : "",
                         mt_netcfg_model_name(&c->net), r->topology, &r->res, r->wall_s};
    return s;
}

mt_status mt_run_chakra_check(const mt_run_config *c, const char *groups, mt_ckc_report *out, mt_error *err) {
    if (c->n_paths == 0)
        return mt_fail(err, MT_EINVAL, "give the directory of NAME.RANK.et files (see mitosis chakra-check --help)");
    char gpath[4096];
    const char *p0 = c->paths[0];
    if (groups) snprintf(gpath, sizeof gpath, "%s", groups);
    else if (mt_is_dir(p0)) snprintf(gpath, sizeof gpath, "%s/%s", p0, MT_CKX_COMM_GROUPS);
    else {
        const char *sl = strrchr(p0, '/');
        snprintf(gpath, sizeof gpath, "%.*s%s", sl ? (int)(sl - p0 + 1) : 0, p0, MT_CKX_COMM_GROUPS);
    }
    mt_asis_job job;
    memset(&job, 0, sizeof job);
    mt_status rc = mt_run_asis_load(c, &job, err);
    if (rc == MT_OK) rc = mt_ckc_check(job.g, job.n, gpath, out, err);
    mt_asis_job_free(&job);
    return rc;
}
