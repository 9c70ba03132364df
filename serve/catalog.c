/* serve/catalog.c — see catalog.h. */
#define _XOPEN_SOURCE 700
#include "serve/catalog.h"

#include <dirent.h>
#include <errno.h>
#include <ftw.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "report/tracesum.h"
#include "tracer/meta.h"
#include "tracer/trace.h"

enum { MAX_ENTRIES = 1024, ID_MAX = 160 };

typedef struct entry {
    char id[ID_MAX];
    char name[128];
    const char *source;       /* "shipped", "--traces DIR", "upload" */
    mt_catalog_paths paths;
    json_t *summary;          /* cached inspect JSON, NULL until asked */
} entry;

struct mt_catalog {
    pthread_mutex_t mu;
    entry *e;
    int n;
    char root[256];           /* the private upload folder */
    int next_upload;
    char sources[MT_CATALOG_MAX_DIRS][MT_CATALOG_PATH_MAX + 16];
};

struct mt_upload {
    mt_catalog *c;
    char dir[320];
    int n_files, number;
    FILE *f;
    double bytes, max_bytes;
};

static int is_dir(const char *p) {
    struct stat st;
    return stat(p, &st) == 0 && S_ISDIR(st.st_mode);
}

static mt_status add_entry(mt_catalog *c, const char *id, const char *name, const char *source, mt_error *err) {
    if (c->n >= MAX_ENTRIES) return mt_fail(err, MT_EINVAL, "too many traces (at most %d)", MAX_ENTRIES);
    if (strlen(id) >= ID_MAX) return MT_OK; /* a name too long to be an id: not offered */
    entry *x = &c->e[c->n++];
    memset(x, 0, sizeof *x);
    snprintf(x->id, sizeof x->id, "%s", id);
    snprintf(x->name, sizeof x->name, "%s", name);
    x->source = source;
    return MT_OK;
}

static int cmp_name(const void *a, const void *b) { return strcmp(*(char *const *)a, *(char *const *)b); }

/* Every sub-folder of dir, sorted, as "<prefix>/NAME". */
static mt_status scan(mt_catalog *c, const char *dir, const char *prefix, const char *source, mt_error *err) {
    DIR *d = opendir(dir);
    if (!d) return mt_fail(err, MT_EIO, "--traces %s: cannot open the folder: %s", dir, strerror(errno));
    char *names[MAX_ENTRIES];
    int n = 0;
    struct dirent *de;
    char p[MT_CATALOG_PATH_MAX];
    while ((de = readdir(d)) && n < MAX_ENTRIES) {
        if (de->d_name[0] == '.') continue;
        if ((size_t)snprintf(p, sizeof p, "%s/%s", dir, de->d_name) >= sizeof p || !is_dir(p)) continue;
        if (!(names[n] = strdup(de->d_name))) break;
        n++;
    }
    closedir(d);
    qsort(names, (size_t)n, sizeof *names, cmp_name);
    mt_status st = MT_OK;
    for (int k = 0; k < n; k++) {
        char id[ID_MAX + 64];
        snprintf(id, sizeof id, "%s/%s", prefix, names[k]);
        if (st == MT_OK && (st = add_entry(c, id, names[k], source, err)) == MT_OK && c->n > 0 &&
            !strcmp(c->e[c->n - 1].id, id)) {
            mt_catalog_paths *ps = &c->e[c->n - 1].paths;
            snprintf(ps->path[0], sizeof ps->path[0], "%s/%s", dir, names[k]);
            ps->n = 1;
        }
        free(names[k]);
    }
    return st;
}

mt_status mt_catalog_new(const char *shipped, const char *const *dirs, int n_dirs, mt_catalog **out,
                         mt_error *err) {
    if (n_dirs > MT_CATALOG_MAX_DIRS) return mt_fail(err, MT_EINVAL, "--traces: at most %d folders", MT_CATALOG_MAX_DIRS);
    mt_catalog *c = calloc(1, sizeof *c);
    if (!c || !(c->e = calloc(MAX_ENTRIES, sizeof *c->e))) {
        free(c);
        return mt_fail(err, MT_ENOMEM, "out of memory");
    }
    pthread_mutex_init(&c->mu, NULL);
    const char *tmp = getenv("TMPDIR");
    snprintf(c->root, sizeof c->root, "%s/mitosis-serve-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    mt_status st = MT_OK;
    if (!mkdtemp(c->root)) {
        st = mt_fail(err, MT_EIO, "cannot create the upload folder %s: %s (set TMPDIR to a writable folder)",
                     c->root, strerror(errno));
        c->root[0] = 0;
    }
    if (st == MT_OK && shipped && is_dir(shipped)) st = scan(c, shipped, "shipped", "shipped with mitosis", err);
    for (int k = 0; st == MT_OK && k < n_dirs; k++) {
        char prefix[16];
        snprintf(prefix, sizeof prefix, "dir%d", k + 1);
        snprintf(c->sources[k], sizeof c->sources[k], "--traces %s", dirs[k]);
        st = scan(c, dirs[k], prefix, c->sources[k], err);
    }
    if (st != MT_OK) {
        mt_catalog_free(c);
        return st;
    }
    *out = c;
    return MT_OK;
}

static int rm_one(const char *path, const struct stat *sb, int flag, struct FTW *ftw) {
    (void)sb, (void)flag, (void)ftw;
    remove(path);
    return 0;
}

static void rm_tree(const char *dir) {
    if (dir && *dir) nftw(dir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

void mt_catalog_free(mt_catalog *c) {
    if (!c) return;
    rm_tree(c->root);
    for (int k = 0; k < c->n; k++) json_decref(c->e[k].summary);
    pthread_mutex_destroy(&c->mu);
    free(c->e);
    free(c);
}

const char *mt_catalog_dir(const mt_catalog *c) { return c->root; }

static json_t *entry_json(const entry *x) {
    return json_pack("{s:s, s:s, s:s}", "id", x->id, "name", x->name, "source", x->source);
}

json_t *mt_catalog_list_json(mt_catalog *c) {
    json_t *a = json_array();
    pthread_mutex_lock(&c->mu);
    for (int k = 0; k < c->n; k++) json_array_append_new(a, entry_json(&c->e[k]));
    pthread_mutex_unlock(&c->mu);
    return a;
}

static entry *find(mt_catalog *c, const char *id) {
    for (int k = 0; k < c->n; k++)
        if (!strcmp(c->e[k].id, id)) return &c->e[k];
    return NULL;
}

static mt_status refuse(const char *id, mt_error *err) {
    if (!id || !*id) return mt_fail(err, MT_EINVAL, "no trace given (\"trace\": an id from GET /api/traces)");
    if (id[0] == '/' || strstr(id, ".."))
        return mt_fail(err, MT_EINVAL, "trace '%.200s' refused: a trace is named by its id from GET /api/traces, "
                       "never by a path", id);
    return mt_fail(err, MT_EINVAL, "unknown trace '%.200s' (GET /api/traces lists them)", id);
}

mt_status mt_catalog_paths_of(mt_catalog *c, const char *id, mt_catalog_paths *out, mt_error *err) {
    pthread_mutex_lock(&c->mu);
    entry *x = id ? find(c, id) : NULL;
    if (x) *out = x->paths;
    pthread_mutex_unlock(&c->mu);
    return x ? MT_OK : refuse(id, err);
}

/* inspect --json's object for the trace at ps (with the measured step beside a folder). */
static mt_status load_summary(const mt_catalog_paths *ps, json_t **out, mt_error *err) {
    const char *paths[MT_CATALOG_MAX_FILES];
    for (int k = 0; k < ps->n; k++) paths[k] = ps->path[k];
    trace_load_opts opts;
    mt_trace_load_opts_init(&opts);
    trace *t = NULL;
    MT_CHECK(mt_trace_load(paths, ps->n, &opts, &t, err));
    char src[MT_CATALOG_PATH_MAX + 16];
    double measured = 0;
    if (mt_trace_meta_measured(paths[0], t, &measured, src, sizeof src, NULL) != MT_OK) measured = 0;
    *out = mt_tracesum_json(t, measured);
    mt_trace_free(t);
    return *out ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
}

static json_t *with_summary(const entry *x, json_t *summary) {
    json_t *o = entry_json(x);
    json_object_set(o, "summary", summary);
    return o;
}

mt_status mt_catalog_summary(mt_catalog *c, const char *id, json_t **out, mt_error *err) {
    mt_catalog_paths ps;
    MT_CHECK(mt_catalog_paths_of(c, id, &ps, err));
    pthread_mutex_lock(&c->mu);
    entry *x = find(c, id);
    json_t *have = x ? json_incref(x->summary) : NULL;
    pthread_mutex_unlock(&c->mu);
    if (!have) MT_CHECK(load_summary(&ps, &have, err));
    pthread_mutex_lock(&c->mu);
    x = find(c, id);
    if (x && !x->summary) x->summary = json_incref(have);
    *out = with_summary(x, have);
    pthread_mutex_unlock(&c->mu);
    json_decref(have);
    return MT_OK;
}

/* ---- uploads ------------------------------------------------------------------------------ */

mt_status mt_upload_begin(mt_catalog *c, double max_bytes, mt_upload **out, mt_error *err) {
    mt_upload *u = calloc(1, sizeof *u);
    if (!u) return mt_fail(err, MT_ENOMEM, "out of memory");
    u->c = c;
    u->max_bytes = max_bytes;
    pthread_mutex_lock(&c->mu);
    u->number = ++c->next_upload;
    pthread_mutex_unlock(&c->mu);
    snprintf(u->dir, sizeof u->dir, "%s/upload-%d", c->root, u->number);
    if (mkdir(u->dir, 0700) != 0) {
        free(u);
        return mt_fail(err, MT_EIO, "cannot store the upload: %s", strerror(errno));
    }
    *out = u;
    return MT_OK;
}

mt_status mt_upload_file(mt_upload *u, mt_error *err) {
    if (u->f) fclose(u->f);
    u->f = NULL;
    if (u->n_files >= MT_CATALOG_MAX_FILES)
        return mt_fail(err, MT_EINVAL, "upload: at most %d files (a Kineto + ET pair, or trace.csv + tensor.csv)",
                       MT_CATALOG_MAX_FILES);
    char p[MT_CATALOG_PATH_MAX];
    snprintf(p, sizeof p, "%s/file-%d", u->dir, u->n_files);
    if (!(u->f = fopen(p, "wb"))) return mt_fail(err, MT_EIO, "cannot store the upload: %s", strerror(errno));
    u->n_files++;
    return MT_OK;
}

mt_status mt_upload_write(mt_upload *u, const char *data, size_t len, mt_error *err) {
    if (!u->f) MT_CHECK(mt_upload_file(u, err));
    u->bytes += (double)len;
    if (u->bytes > u->max_bytes)
        return mt_fail(err, MT_EINVAL, "upload over the limit of %.0f bytes (mitosis serve --max-upload SIZE)",
                       u->max_bytes);
    if (len && fwrite(data, 1, len, u->f) != len)
        return mt_fail(err, MT_EIO, "cannot store the upload: %s", strerror(errno));
    return MT_OK;
}

void mt_upload_abort(mt_upload *u) {
    if (!u) return;
    if (u->f) fclose(u->f);
    rm_tree(u->dir);
    free(u);
}

static mt_status list_upload(mt_upload *u, const char *name, const mt_catalog_paths *ps, json_t *summary,
                             json_t **out, mt_error *err) {
    mt_catalog *c = u->c;
    char id[32];
    snprintf(id, sizeof id, "upload/%d", u->number);
    pthread_mutex_lock(&c->mu);
    mt_status st = add_entry(c, id, name && *name ? name : id, "upload", err);
    if (st == MT_OK) {
        entry *x = &c->e[c->n - 1];
        x->paths = *ps;
        x->summary = json_incref(summary);
        *out = with_summary(x, summary);
    }
    pthread_mutex_unlock(&c->mu);
    return st;
}

/* The reader's message names the stored file ("DIR/file-0: ..."): the client needs "file-0" only. */
static void strip_dir(mt_error *err, const char *dir) {
    if (!err) return;
    size_t n = strlen(dir);
    char *p;
    while ((p = strstr(err->msg, dir)) && p[n] == '/') memmove(p, p + n + 1, strlen(p + n + 1) + 1);
}

mt_status mt_upload_finish(mt_upload *u, const char *name, json_t **out, mt_error *err) {
    if (u->f) fclose(u->f);
    u->f = NULL;
    mt_status st = MT_OK;
    if (u->n_files == 0) st = mt_fail(err, MT_EINVAL, "upload: no file received (send the trace's files as "
                                      "multipart/form-data)");
    mt_catalog_paths ps = {.n = u->n_files};
    for (int k = 0; k < u->n_files; k++) snprintf(ps.path[k], sizeof ps.path[k], "%s/file-%d", u->dir, k);
    json_t *summary = NULL;
    if (st == MT_OK && (st = load_summary(&ps, &summary, err)) != MT_OK) {
        strip_dir(err, u->dir);
        mt_error_prefix(err, "upload");
    }
    if (st == MT_OK) st = list_upload(u, name, &ps, summary, out, err);
    json_decref(summary);
    if (st != MT_OK) {
        mt_upload_abort(u);
        return st;
    }
    free(u);
    return MT_OK;
}
