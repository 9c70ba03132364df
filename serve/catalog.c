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

enum { MAX_ENTRIES = 1024, ID_MAX = 160, MAX_PREFIXES = MT_CATALOG_MAX_DIRS + 3 };

/* A folder of the server's and what clients see instead (mt_catalog_redact). */
typedef struct shown_as {
    char path[MT_CATALOG_PATH_MAX + 16];
    char shown[32];
} shown_as;

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
    char sources[MT_CATALOG_MAX_DIRS][32];
    shown_as pre[MAX_PREFIXES]; /* longest first */
    int n_pre;
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

static void add_prefix(mt_catalog *c, const char *path, const char *shown);
static int longest_first(const void *a, const void *b);

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
        snprintf(c->sources[k], sizeof c->sources[k], "--traces folder %d", k + 1);
        st = scan(c, dirs[k], prefix, c->sources[k], err);
    }
    if (st != MT_OK) {
        mt_catalog_free(c);
        return st;
    }
    if (c->root[0]) {
        char up[MT_CATALOG_PATH_MAX];
        snprintf(up, sizeof up, "%s/upload-", c->root);
        add_prefix(c, up, "upload/");
        snprintf(up, sizeof up, "%s/", c->root);
        add_prefix(c, up, "");
    }
    if (shipped) add_prefix(c, shipped, "shipped");
    for (int k = 0; k < n_dirs; k++) {
        char shown[16];
        snprintf(shown, sizeof shown, "dir%d", k + 1);
        add_prefix(c, dirs[k], shown);
    }
    qsort(c->pre, (size_t)c->n_pre, sizeof *c->pre, longest_first);
    *out = c;
    return MT_OK;
}

/* ---- the server's paths, never shown ------------------------------------------------------ */

static void add_prefix(mt_catalog *c, const char *path, const char *shown) {
    size_t n = strlen(path);
    while (n > 1 && path[n - 1] == '/' && strcmp(shown, "") && strcmp(shown, "upload/")) n--; /* "dir/" as "dir" */
    if (n < 2 || n >= sizeof c->pre[0].path || c->n_pre >= MAX_PREFIXES) return;
    memcpy(c->pre[c->n_pre].path, path, n);
    c->pre[c->n_pre].path[n] = 0;
    snprintf(c->pre[c->n_pre].shown, sizeof c->pre[c->n_pre].shown, "%s", shown);
    c->n_pre++;
}

static int longest_first(const void *a, const void *b) {
    size_t la = strlen(((const shown_as *)a)->path), lb = strlen(((const shown_as *)b)->path);
    return la < lb ? 1 : la > lb ? -1 : 0;
}

char *mt_catalog_redacted(const mt_catalog *c, const char *text, size_t len, size_t *out_len) {
    size_t cap = len + 1, n = 0;
    char *out = malloc(cap);
    if (!out) return NULL;
    for (size_t i = 0; i < len;) {
        const shown_as *hit = NULL;
        for (int k = 0; k < c->n_pre && !hit; k++) {
            size_t pl = strlen(c->pre[k].path);
            if (pl <= len - i && !memcmp(text + i, c->pre[k].path, pl)) hit = &c->pre[k];
        }
        if (!hit) {
            out[n++] = text[i++];
            continue;
        }
        size_t sl = strlen(hit->shown);
        if (n + sl + (len - i) + 1 > cap) { /* shown names are shorter than most paths; grow when not */
            cap = n + sl + (len - i) + 1;
            char *more = realloc(out, cap);
            if (!more) {
                free(out);
                return NULL;
            }
            out = more;
        }
        memcpy(out + n, hit->shown, sl);
        n += sl;
        i += strlen(hit->path);
    }
    out[n] = 0;
    if (out_len) *out_len = n;
    return out;
}

void mt_catalog_redact(const mt_catalog *c, char *msg, size_t size) {
    char *r = mt_catalog_redacted(c, msg, strlen(msg), NULL);
    if (r) snprintf(msg, size, "%s", r);
    free(r);
}

/* v redacted: a new string, or NULL when v is no string (or out of memory). */
static json_t *redacted_string(const mt_catalog *c, const json_t *v) {
    if (!json_is_string(v)) return NULL;
    size_t n = 0;
    char *r = mt_catalog_redacted(c, json_string_value(v), json_string_length(v), &n);
    json_t *o = r ? json_stringn(r, n) : NULL;
    free(r);
    return o;
}

void mt_catalog_redact_json(const mt_catalog *c, json_t *j) {
    size_t i;
    const char *key;
    json_t *v, *r;
    json_object_foreach(j, key, v) {
        if ((r = redacted_string(c, v))) json_object_set_new(j, key, r);
        else mt_catalog_redact_json(c, v);
    }
    json_array_foreach(j, i, v) {
        if ((r = redacted_string(c, v))) json_array_set_new(j, i, r);
        else mt_catalog_redact_json(c, v);
    }
}

mt_status mt_catalog_redact_file(const mt_catalog *c, const char *path, mt_error *err) {
    FILE *f = fopen(path, "rb");
    if (!f) return MT_OK; /* a file the run did not write */
    char *buf = NULL;
    size_t len = 0, cap = 0, got;
    char chunk[65536];
    mt_status st = MT_OK;
    while (st == MT_OK && (got = fread(chunk, 1, sizeof chunk, f)) > 0) {
        if (len + got > cap) {
            cap = (len + got) * 2;
            char *more = realloc(buf, cap);
            if (!more) st = mt_fail(err, MT_ENOMEM, "out of memory");
            else buf = more;
        }
        if (st == MT_OK) memcpy(buf + len, chunk, got), len += got;
    }
    fclose(f);
    size_t rlen = 0;
    char *r = st == MT_OK && len ? mt_catalog_redacted(c, buf, len, &rlen) : NULL;
    if (st == MT_OK && len && !r) st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (r && (rlen != len || memcmp(r, buf, len))) {
        f = fopen(path, "wb");
        if (!f || fwrite(r, 1, rlen, f) != rlen) st = mt_fail(err, MT_EIO, "cannot rewrite a run file");
        if (f && fclose(f) != 0 && st == MT_OK) st = mt_fail(err, MT_EIO, "cannot rewrite a run file");
    }
    free(r);
    free(buf);
    return st;
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
static mt_status load_summary(const mt_catalog *c, const mt_catalog_paths *ps, json_t **out, mt_error *err) {
    const char *paths[MT_CATALOG_MAX_FILES];
    for (int k = 0; k < ps->n; k++) paths[k] = ps->path[k];
    trace_load_opts opts;
    mt_trace_load_opts_init(&opts);
    mt_trace *t = NULL;
    MT_CHECK(mt_trace_load(paths, ps->n, &opts, &t, err));
    char src[MT_CATALOG_PATH_MAX + 16];
    double measured = 0;
    if (mt_trace_meta_measured(paths[0], t, &measured, src, sizeof src, NULL) != MT_OK) measured = 0;
    *out = mt_tracesum_json(t, measured);
    mt_trace_free(t);
    if (*out) mt_catalog_redact_json(c, *out);
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
    mt_status st = have ? MT_OK : load_summary(c, &ps, &have, err);
    if (st != MT_OK) {
        mt_catalog_redact(c, err->msg, sizeof err->msg);
        return st;
    }
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
    if (st == MT_OK && (st = load_summary(u->c, &ps, &summary, err)) != MT_OK) {
        strip_dir(err, u->dir);
        mt_catalog_redact(u->c, err->msg, sizeof err->msg);
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
