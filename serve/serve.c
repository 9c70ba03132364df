/* serve/serve.c — see serve.h: the daemon, the routing table and the request bodies. */
#include "serve/serve.h"

#include <arpa/inet.h>
#include <fcntl.h>
#include <limits.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <jansson.h>
#include <microhttpd.h>

#include "report/jsonw.h"
#include "run/compare.h"
#include "serve/clusterreq.h"
#include "serve/conns.h"
#include "serve/guard.h"
#include "serve/jobs.h"
#include "serve/options.h"
#include "serve/page.h"
#include "util/budget.h"

enum { JSON_BODY_MAX = 1 << 20, POST_BUFFER = 64 * 1024, PARSE_QUEUE_MAX = 64 };

typedef struct request request;

/* Uploads received and waiting for the parser thread (their connections suspended), FIFO. */
typedef struct parser {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int started, stop;
    request *q[PARSE_QUEUE_MAX];
    int head, n, cap;
    mt_budget *busy;          /* the parse in progress, cancelled by a stop */
} parser;

struct mt_serve {
    struct MHD_Daemon *d;
    mt_catalog *cat;
    mt_jobs *jobs;
    double max_upload_bytes, max_inflate_bytes;
    int port;
    parser ps;
    mt_guard guard;            /* Host, Origin and token rules (serve/guard.h) */
    mt_conns *conns;           /* the header deadline, refusals counted (serve/conns.h) */
    char *page;                /* the page, carrying this server's token */
};

typedef enum { BODY_NONE = 0, BODY_JSON, BODY_UPLOAD } body_kind;

/* One request being received (libmicrohttpd's per-connection pointer). */
struct request {
    const struct route *route;
    const char *rest;          /* the URL after a prefix route */
    char *body;                /* BODY_JSON */
    size_t len;
    mt_upload *up;             /* BODY_UPLOAD */
    struct MHD_PostProcessor *pp;
    char name[128];            /* the upload's "name" field */
    int file_started, file_off;
    int failed;                /* 0, or the HTTP status to answer with err */
    mt_error err;
    struct MHD_Connection *conn; /* while suspended for the parser */
    unsigned parsed;           /* the parser's answer: its HTTP status (0: not parsed yet) */
    json_t *answer;            /* 201: the new entry */
};

typedef enum MHD_Result (*handler_fn)(mt_serve *s, struct MHD_Connection *c, request *r);

typedef struct route {
    const char *method, *path;
    int prefix;                /* path is a prefix ("/api/runs/") */
    body_kind body;
    handler_fn fn;
} route;

/* ---- answers --------------------------------------------------------------------------------- */

/* Queues resp (released) with its content type; NULL resp: MHD_NO (the connection is closed). */
static enum MHD_Result send_response(struct MHD_Connection *c, unsigned status, struct MHD_Response *resp,
                                     const char *type) {
    if (!resp) return MHD_NO;
    MHD_add_response_header(resp, "Content-Type", type);
    MHD_add_response_header(resp, "Cache-Control", "no-store");
    MHD_add_response_header(resp, "X-Content-Type-Options", "nosniff");
    enum MHD_Result ret = MHD_queue_response(c, status, resp);
    MHD_destroy_response(resp);
    return ret;
}

static enum MHD_Result send_buf(struct MHD_Connection *c, unsigned status, char *buf, size_t len, const char *type) {
    struct MHD_Response *resp = MHD_create_response_from_buffer(len, buf, MHD_RESPMEM_MUST_FREE);
    if (!resp) free(buf);
    return send_response(c, status, resp, type);
}

/* Sends j (released) as JSON, reals as the CLI's --json (report/jsonw.h). */
static enum MHD_Result send_json(struct MHD_Connection *c, unsigned status, json_t *j) {
    char *s = j ? mt_jw_dumps(j) : NULL;
    json_decref(j);
    if (!s) return MHD_NO;
    return send_buf(c, status, s, strlen(s), "application/json");
}

static enum MHD_Result send_error(struct MHD_Connection *c, unsigned status, const char *msg) {
    return send_json(c, status, json_pack("{s:s}", "error", msg));
}

static unsigned status_of(mt_status st) { return st == MT_ENOMEM || st == MT_EINTERNAL ? 500 : 400; }

static enum MHD_Result send_file(struct MHD_Connection *c, const char *path, const char *type) {
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0 || fstat(fd, &st) != 0) {
        if (fd >= 0) close(fd);
        return send_error(c, 404, "no such file");
    }
    struct MHD_Response *resp = MHD_create_response_from_fd((uint64_t)st.st_size, fd);
    if (!resp) close(fd);
    return send_response(c, MHD_HTTP_OK, resp, type);
}

/* ---- handlers -------------------------------------------------------------------------------- */

static enum MHD_Result h_page(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)r;
    struct MHD_Response *resp = MHD_create_response_from_buffer(mt_serve_page_len, s->page, MHD_RESPMEM_PERSISTENT);
    if (resp) MHD_add_response_header(resp, "Content-Security-Policy", "default-src 'self' 'unsafe-inline'");
    return send_response(c, MHD_HTTP_OK, resp, "text/html; charset=utf-8");
}

static enum MHD_Result h_options(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)s, (void)r;
    json_t *values = mt_serve_opts_values_json();
    if (!values) return send_error(c, 500, "cannot read the GPU table");
    return send_json(c, 200, json_pack("{s:o, s:o, s:o}", "simulate", mt_serve_opts_json(MT_SERVE_SIMULATE),
                                       "compare", mt_serve_opts_json(MT_SERVE_COMPARE), "values", values));
}

static enum MHD_Result h_traces(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)r;
    return send_json(c, 200, mt_catalog_list_json(s->cat));
}

static enum MHD_Result h_trace(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)r;
    const char *id = MHD_lookup_connection_value(c, MHD_GET_ARGUMENT_KIND, "id");
    json_t *o = NULL;
    mt_error err = {0};
    mt_status st = mt_catalog_summary(s->cat, id, &o, &err);
    return st == MT_OK ? send_json(c, 200, o) : send_error(c, status_of(st), err.msg);
}

/* Received: the connection is suspended and the upload queued for the parser thread; called again
 * once the parser resumed it, with its answer. A full queue: 503 at once. */
static enum MHD_Result h_upload(mt_serve *s, struct MHD_Connection *c, request *r) {
    if (r->parsed) {
        json_t *o = r->answer;
        r->answer = NULL;
        return r->parsed == 201 ? send_json(c, 201, o) : send_error(c, r->parsed, r->err.msg);
    }
    if (r->pp) MHD_destroy_post_processor(r->pp);
    r->pp = NULL;
    parser *p = &s->ps;
    pthread_mutex_lock(&p->mu);
    int room = !p->stop && p->n < p->cap;
    if (room) {
        r->conn = c;
        MHD_suspend_connection(c); /* before the parser can see it: it resumes only what is suspended */
        p->q[(p->head + p->n++) % PARSE_QUEUE_MAX] = r;
        pthread_cond_signal(&p->cv);
    }
    pthread_mutex_unlock(&p->mu);
    if (room) return MHD_YES;
    return send_error(c, 503, "uploads are being parsed: try again in a few seconds (mitosis serve --parse-queue N)");
}

/* The parser thread's answer for r (its upload parsed or refused), and r's connection resumed: after
 * this r belongs to libmicrohttpd again. */
static void parsed(request *r, unsigned status) {
    r->parsed = status;
    MHD_resume_connection(r->conn);
}

static void *parse_loop(void *arg) {
    mt_serve *s = arg;
    parser *p = &s->ps;
    pthread_mutex_lock(&p->mu);
    for (;;) {
        while (!p->stop && p->n == 0) pthread_cond_wait(&p->cv, &p->mu);
        if (p->n == 0) break;
        request *r = p->q[p->head];
        p->head = (p->head + 1) % PARSE_QUEUE_MAX;
        p->n--;
        mt_upload *up = r->up;
        r->up = NULL;
        if (p->stop) { /* stopping: the waiting ones are refused */
            pthread_mutex_unlock(&p->mu);
            mt_upload_abort(up);
            snprintf(r->err.msg, sizeof r->err.msg, "the server is stopping");
            parsed(r, 503);
            pthread_mutex_lock(&p->mu);
            continue;
        }
        mt_budget b;
        mt_budget_init(&b);
        b.max_inflate_bytes = s->max_inflate_bytes;
        p->busy = &b;
        pthread_mutex_unlock(&p->mu);
        mt_budget_bind(&b);
        json_t *o = NULL;
        mt_status st = mt_upload_finish(up, r->name, &o, &r->err);
        mt_budget_bind(NULL);
        r->answer = st == MT_OK ? o : NULL;
        pthread_mutex_lock(&p->mu);
        p->busy = NULL;
        pthread_mutex_unlock(&p->mu);
        parsed(r, st == MT_OK ? 201 : status_of(st));
        pthread_mutex_lock(&p->mu);
    }
    pthread_mutex_unlock(&p->mu);
    return NULL;
}

/* Every waiting upload refused, the one being parsed cancelled, the thread joined. */
static void parser_stop(parser *p) {
    if (!p->started) return;
    pthread_mutex_lock(&p->mu);
    p->stop = 1;
    if (p->busy) mt_budget_cancel(p->busy);
    pthread_cond_signal(&p->cv);
    pthread_mutex_unlock(&p->mu);
    pthread_join(p->th, NULL);
    p->started = 0;
}

static const char *const REQUEST_KEYS[] = {"command", "trace", "options", "files", "cluster"};

/* The optional files a run request asks for: "files": ["timeline", "csv"] (absent: none), the
 * outputs the server offers (serve/jobs.h). */
static mt_status parse_wants(const json_t *files, unsigned *want, mt_error *err) {
    *want = 0;
    if (!files) return MT_OK;
    size_t k;
    const json_t *v;
    char names[128];
    mt_output_names(1, MT_JOBS_ALWAYS, names, sizeof names);
    if (!json_is_array(files)) return mt_fail(err, MT_EINVAL, "\"files\" must be a list of %s", names);
    json_array_foreach(files, k, v) {
        unsigned bit = json_is_string(v) ? mt_jobs_want_bit(json_string_value(v)) : 0;
        if (!bit) return mt_fail(err, MT_EINVAL, "\"files\": each entry is %s", names);
        *want |= bit;
    }
    return MT_OK;
}

static mt_status check_request(const json_t *req, mt_error *err) {
    if (!json_is_object(req))
        return mt_fail(err, MT_EINVAL, "the body must be a JSON object {\"command\", \"trace\", \"options\"}");
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)req, key, v) {
        int known = 0;
        for (size_t k = 0; k < sizeof REQUEST_KEYS / sizeof *REQUEST_KEYS; k++) known |= !strcmp(key, REQUEST_KEYS[k]);
        if (!known)
            return mt_fail(err, MT_EINVAL, "unknown key '%.100s' (a run is {\"command\", \"trace\", \"options\", "
                           "\"files\"}, a cluster run {\"command\": \"cluster\", \"cluster\"})", key);
    }
    const char *cmd = json_string_value(json_object_get(req, "command"));
    if (cmd && !strcmp(cmd, "cluster")) {
        if (json_object_get(req, "trace") || json_object_get(req, "options"))
            return mt_fail(err, MT_EINVAL, "a cluster run names its traces and options per job, in \"cluster\": "
                           "{\"jobs\": [{\"trace\", \"options\"}]}");
        return MT_OK;
    }
    if (json_object_get(req, "cluster"))
        return mt_fail(err, MT_EINVAL, "\"cluster\" is for \"command\": \"cluster\"");
    if (!json_is_string(json_object_get(req, "trace")))
        return mt_fail(err, MT_EINVAL, "\"trace\" must be a trace id from GET /api/traces");
    return MT_OK;
}

/* A comparison's plans counted before it is queued: too many is refused as the run would. */
static mt_status count_plans(mt_serve *s, const char *trace_id, const mt_serve_opts *o, mt_error *err) {
    json_t *entry = NULL;
    MT_CHECK(mt_catalog_summary(s->cat, trace_id, &entry, err));
    json_int_t batch = json_integer_value(json_object_get(json_object_get(entry, "summary"), "batch_size"));
    json_decref(entry);
    int32_t n = 0;
    return mt_compare_plan_count(&o->job.rc, &o->job.cc, batch > 0 ? (int64_t)batch : 0, &n, err);
}

/* Parses and checks a run request's body (r->body) as a run would take it: *req and *o filled
 * (the caller frees both), or the one-line problem in r->err. */
static mt_status parse_run(mt_serve *s, request *r, json_t **req, mt_serve_opts *o, unsigned *want) {
    json_error_t jerr;
    memset(o, 0, sizeof *o);
    *req = json_loadb(r->body ? r->body : "", r->len, JSON_REJECT_DUPLICATES, &jerr);
    if (!*req)
        return mt_fail(&r->err, MT_EINVAL, "malformed JSON body at line %d column %d: %s", jerr.line, jerr.column,
                       jerr.text);
    mt_serve_cmd cmd = MT_SERVE_SIMULATE;
    mt_catalog_paths ps;
    const char *tid = json_string_value(json_object_get(*req, "trace"));
    json_t *cmdv = json_object_get(*req, "command");
    mt_status st = check_request(*req, &r->err);
    if (st == MT_OK && cmdv) st = mt_serve_cmd_parse(json_string_value(cmdv), &cmd, &r->err);
    if (st == MT_OK) st = parse_wants(json_object_get(*req, "files"), want, &r->err);
    if (st == MT_OK && cmd == MT_SERVE_CLUSTER) { /* its traces and options are per job (serve/clusterreq.h) */
        o->cmd = cmd;
        st = mt_serve_cluster_file(s->cat, json_object_get(*req, "cluster"), &o->cluster, &r->err);
        if (st == MT_OK && (*want & ~mt_jobs_want_bit("timeline")))
            st = mt_fail(&r->err, MT_EINVAL, "\"files\": a cluster run writes its report and JSON (the command line "
                         "writes its CSV tables)");
        if (st != MT_OK) mt_catalog_redact(s->cat, r->err.msg, sizeof r->err.msg);
        return st;
    }
    if (st == MT_OK) st = mt_catalog_paths_of(s->cat, tid, &ps, &r->err);
    const char *paths[MT_CATALOG_MAX_FILES];
    for (int k = 0; st == MT_OK && k < ps.n; k++) paths[k] = ps.path[k];
    if (st == MT_OK) st = mt_serve_opts_parse(cmd, json_object_get(*req, "options"), paths, ps.n, o, &r->err);
    if (st == MT_OK && cmd == MT_SERVE_COMPARE) st = count_plans(s, tid, o, &r->err);
    if (st != MT_OK) mt_catalog_redact(s->cat, r->err.msg, sizeof r->err.msg);
    return st;
}

static enum MHD_Result h_submit(mt_serve *s, struct MHD_Connection *c, request *r) {
    json_t *req = NULL;
    mt_serve_opts o;
    unsigned want = 0;
    mt_status st = parse_run(s, r, &req, &o, &want);
    int id = 0, full = 0;
    if (st == MT_OK) {
        st = mt_jobs_submit(s->jobs, &o, json_string_value(json_object_get(req, "trace")), req, want, &id, &r->err);
        full = st == MT_EINVAL;
    }
    mt_serve_opts_free(&o);
    json_decref(req);
    if (st != MT_OK) return send_error(c, full ? 503 : status_of(st), r->err.msg);
    return send_json(c, 202, json_pack("{s:i}", "id", id));
}

/* The same checks as a run's, without running: 200 {"ok": true} or the 4xx a run would get. */
static enum MHD_Result h_check(mt_serve *s, struct MHD_Connection *c, request *r) {
    json_t *req = NULL;
    mt_serve_opts o;
    unsigned want = 0;
    mt_status st = parse_run(s, r, &req, &o, &want);
    mt_serve_opts_free(&o);
    json_decref(req);
    if (st != MT_OK) return send_error(c, status_of(st), r->err.msg);
    return send_json(c, 200, json_pack("{s:b}", "ok", 1));
}

static enum MHD_Result h_runs(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)r;
    return send_json(c, 200, mt_jobs_list_json(s->jobs));
}

#define NO_RUN "no such run (GET /api/runs lists them; finished runs past --keep-runs or --keep-bytes are removed, oldest first)"

/* The run id at the start of rest, 0 when there is none; *end: after it. */
static int run_id(const char *rest, char **end) {
    long id = strtol(rest, end, 10);
    return *end == rest || id < 1 || id > INT_MAX || (**end && **end != '/') ? 0 : (int)id;
}

/* A run's status with its result.json spliced in as "result", streamed from the file (a kept run
 * holds no result in memory: serve/jobs.h): head (the status, its closing brace replaced by
 * `"result": `), the file, "\n}". */
typedef struct spliced {
    char *head;
    size_t head_len;
    int fd;
    uint64_t file_len;
} spliced;

static const char SPLICE_TAIL[] = "\n}";

static ssize_t read_spliced(void *cls, uint64_t pos, char *buf, size_t max) {
    spliced *x = cls;
    if (pos < x->head_len) {
        size_t n = x->head_len - (size_t)pos < max ? x->head_len - (size_t)pos : max;
        memcpy(buf, x->head + pos, n);
        return (ssize_t)n;
    }
    pos -= x->head_len;
    if (pos < x->file_len) {
        size_t n = x->file_len - pos < max ? (size_t)(x->file_len - pos) : max;
        ssize_t got = pread(x->fd, buf, n, (off_t)pos);
        return got > 0 ? got : MHD_CONTENT_READER_END_WITH_ERROR;
    }
    pos -= x->file_len;
    if (pos >= sizeof SPLICE_TAIL - 1) return MHD_CONTENT_READER_END_OF_STREAM;
    size_t n = sizeof SPLICE_TAIL - 1 - (size_t)pos < max ? sizeof SPLICE_TAIL - 1 - (size_t)pos : max;
    memcpy(buf, SPLICE_TAIL + pos, n);
    return (ssize_t)n;
}

static void free_spliced(void *cls) {
    spliced *x = cls;
    close(x->fd);
    free(x->head);
    free(x);
}

static enum MHD_Result send_status(struct MHD_Connection *c, json_t *o, int fd) {
    struct stat sb;
    if (fd < 0 || fstat(fd, &sb) != 0) {
        if (fd >= 0) close(fd);
        json_object_set_new(o, "result", json_null());
        return send_json(c, 200, o);
    }
    spliced *x = calloc(1, sizeof *x);
    char *text = mt_jw_dumps(o);
    json_decref(o);
    size_t n = text ? strlen(text) : 0;
    char *head = n >= 2 ? realloc(text, n + 32) : NULL;
    if (!x || !head) {
        free(x);
        free(head ? head : text);
        close(fd);
        return send_error(c, 500, "out of memory");
    }
    snprintf(head + n - 2, 32, ",\n  \"result\": "); /* over the closing "\n}" */
    x->head = head;
    x->head_len = strlen(head);
    x->fd = fd;
    x->file_len = (uint64_t)sb.st_size;
    struct MHD_Response *resp = MHD_create_response_from_callback(x->head_len + x->file_len + sizeof SPLICE_TAIL - 1,
                                                                  64 * 1024, read_spliced, x, free_spliced);
    if (!resp) free_spliced(x);
    return send_response(c, 200, resp, "application/json");
}

/* /api/runs/N or /api/runs/N/FILE. */
static enum MHD_Result h_run(mt_serve *s, struct MHD_Connection *c, request *r) {
    char *end = NULL;
    int id = run_id(r->rest, &end);
    if (!id) return send_error(c, 404, NO_RUN);
    if (!*end) {
        int fd = -1;
        json_t *o = mt_jobs_status_json(s->jobs, id, &fd);
        return o ? send_status(c, o, fd) : send_error(c, 404, NO_RUN);
    }
    char path[2048];
    if (!mt_jobs_file(s->jobs, id, end + 1, path, sizeof path))
        return send_error(c, 404, "no such file for this run (its status lists \"files\")");
    return send_file(c, path, mt_jobs_file_type(end + 1));
}

/* DELETE /api/runs/N: cancel (queued, running) or remove (finished). */
static enum MHD_Result h_delete(mt_serve *s, struct MHD_Connection *c, request *r) {
    char *end = NULL;
    int id = run_id(r->rest, &end);
    json_t *o = id && !*end ? mt_jobs_cancel(s->jobs, id) : NULL;
    return o ? send_json(c, 200, o) : send_error(c, 404, NO_RUN);
}

/* The icon: two cells dividing, inline SVG (no binary file). */
static const char FAVICON[] =
    "<svg xmlns=\"http://www.w3.org/2000/svg\" viewBox=\"0 0 32 32\"><circle cx=\"11\" cy=\"16\" r=\"9\" "
    "fill=\"#2f6fd6\"/><circle cx=\"21\" cy=\"16\" r=\"9\" fill=\"#e07b28\" fill-opacity=\"0.85\"/></svg>";

static enum MHD_Result h_favicon(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)s, (void)r;
    struct MHD_Response *resp =
        MHD_create_response_from_buffer(sizeof FAVICON - 1, (void *)FAVICON, MHD_RESPMEM_PERSISTENT);
    return send_response(c, MHD_HTTP_OK, resp, "image/svg+xml");
}

/* GET /api/server: the connections now, refused at the limits and closed for slow headers. */
static enum MHD_Result h_server(mt_serve *s, struct MHD_Connection *c, request *r) {
    (void)r;
    mt_conns_stats st;
    mt_conns_get(s->conns, &st);
    return send_json(c, 200, json_pack("{s:{s:I, s:I, s:I, s:I}}", "connections", "open", (json_int_t)st.open,
                                       "refused", (json_int_t)st.refused, "slow_headers",
                                       (json_int_t)st.slow_headers, "dropped", (json_int_t)st.dropped));
}

static const route ROUTES[] = {
    {"GET", "/", 0, BODY_NONE, h_page},
    {"GET", "/index.html", 0, BODY_NONE, h_page},
    {"GET", "/api/options", 0, BODY_NONE, h_options},
    {"GET", "/api/traces", 0, BODY_NONE, h_traces},
    {"POST", "/api/traces", 0, BODY_UPLOAD, h_upload},
    {"GET", "/api/trace", 0, BODY_NONE, h_trace},
    {"GET", "/api/runs", 0, BODY_NONE, h_runs},
    {"GET", "/api/server", 0, BODY_NONE, h_server},
    {"POST", "/api/runs", 0, BODY_JSON, h_submit},
    {"POST", "/api/check", 0, BODY_JSON, h_check},
    {"GET", "/api/runs/", 1, BODY_NONE, h_run},
    {"DELETE", "/api/runs/", 1, BODY_NONE, h_delete},
    {"GET", "/favicon.ico", 0, BODY_NONE, h_favicon},
    {"GET", "/favicon.svg", 0, BODY_NONE, h_favicon},
};
enum { N_ROUTES = sizeof ROUTES / sizeof ROUTES[0] };

/* The route for method and url; *path_known: some route has this path. */
static const route *find_route(const char *method, const char *url, int *path_known) {
    *path_known = 0;
    for (int k = 0; k < N_ROUTES; k++) {
        const route *x = &ROUTES[k];
        int match = x->prefix ? !strncmp(url, x->path, strlen(x->path)) : !strcmp(url, x->path);
        if (!match) continue;
        *path_known = 1;
        if (!strcmp(method, x->method)) return x;
    }
    return NULL;
}

/* ---- request bodies --------------------------------------------------------------------------- */

static enum MHD_Result on_part(void *cls, enum MHD_ValueKind kind, const char *key, const char *filename,
                               const char *content_type, const char *encoding, const char *data, uint64_t off,
                               size_t size) {
    (void)kind, (void)content_type, (void)encoding;
    request *r = cls;
    if (!filename) {
        if (key && !strcmp(key, "name")) {
            size_t have = strlen(r->name), n = size < sizeof r->name - 1 - have ? size : sizeof r->name - 1 - have;
            memcpy(r->name + have, data, n);
            r->name[have + n] = 0;
        }
        return MHD_YES;
    }
    mt_status st = MT_OK;
    if (off == 0 && !(r->file_started && r->file_off == 0)) {
        st = mt_upload_file(r->up, &r->err);
        r->file_started = 1;
    }
    r->file_off += (int)(size > 0);
    if (st == MT_OK) st = mt_upload_write(r->up, data, size, &r->err);
    if (st != MT_OK) r->failed = strstr(r->err.msg, "over the limit") ? 413 : 400;
    return st == MT_OK ? MHD_YES : MHD_NO;
}

static const char *header(struct MHD_Connection *c, const char *name) {
    return MHD_lookup_connection_value(c, MHD_HEADER_KIND, name);
}

/* The Host, Origin and content-type rules (serve/guard.h) for a request to route x (NULL: none). */
static unsigned guard(mt_serve *s, struct MHD_Connection *c, request *r, const route *x, const char *method) {
    static const mt_guard_body BODIES[] = {[BODY_NONE] = MT_GUARD_NO_BODY, [BODY_JSON] = MT_GUARD_JSON,
                                           [BODY_UPLOAD] = MT_GUARD_UPLOAD};
    mt_guard_req q = {method, x ? BODIES[x->body] : MT_GUARD_NO_BODY, header(c, MHD_HTTP_HEADER_HOST),
                      header(c, "Origin"), header(c, "Referer"), header(c, "Sec-Fetch-Site"),
                      header(c, MHD_HTTP_HEADER_CONTENT_TYPE), header(c, "X-Mitosis-Token")};
    return mt_guard_check(&s->guard, &q, r->err.msg, sizeof r->err.msg);
}

/* First call of a request: its route, and refusals that need no body. 0: go on. */
static unsigned begin(mt_serve *s, struct MHD_Connection *c, request *r, const char *url, const char *method) {
    int known = 0;
    const route *x = find_route(method, url, &known);
    unsigned refused = guard(s, c, r, x, method);
    if (refused) return refused;
    if (strstr(url, "..")) return snprintf(r->err.msg, sizeof r->err.msg, "path refused: '..' in the URL"), 400;
    r->route = x;
    if (!r->route) return snprintf(r->err.msg, sizeof r->err.msg, known ? "method not allowed" : "not found"),
                   known ? 405 : 404;
    r->rest = url + strlen(r->route->path);
    const char *cl = MHD_lookup_connection_value(c, MHD_HEADER_KIND, MHD_HTTP_HEADER_CONTENT_LENGTH);
    double len = cl ? strtod(cl, NULL) : 0;
    double max = r->route->body == BODY_UPLOAD ? s->max_upload_bytes + POST_BUFFER : JSON_BODY_MAX;
    if (len > max)
        return snprintf(r->err.msg, sizeof r->err.msg, "request body over the limit of %.0f bytes%s", max,
                        r->route->body == BODY_UPLOAD ? " (mitosis serve --max-upload SIZE)" : ""), 413;
    if (r->route->body != BODY_UPLOAD) return 0;
    mt_status st = mt_upload_begin(s->cat, s->max_upload_bytes, &r->up, &r->err);
    if (st != MT_OK) return 500;
    r->pp = MHD_create_post_processor(c, POST_BUFFER, on_part, r);
    if (!r->pp)
        return snprintf(r->err.msg, sizeof r->err.msg, "an upload is multipart/form-data (the trace's files, and "
                        "optionally a field \"name\")"), 400;
    return 0;
}

static void append_body(request *r, const char *data, size_t size) {
    if (r->failed) return;
    if (r->route->body == BODY_UPLOAD) {
        if (MHD_post_process(r->pp, data, size) != MHD_YES && !r->failed) {
            r->failed = 400;
            snprintf(r->err.msg, sizeof r->err.msg, "upload: malformed multipart/form-data body");
        }
        return;
    }
    if (r->route->body != BODY_JSON || r->len + size > JSON_BODY_MAX) {
        r->failed = r->route->body == BODY_JSON ? 413 : 400;
        snprintf(r->err.msg, sizeof r->err.msg, r->failed == 413 ? "request body over the limit" : "unexpected body");
        return;
    }
    char *b = realloc(r->body, r->len + size + 1);
    if (!b) {
        r->failed = 500;
        snprintf(r->err.msg, sizeof r->err.msg, "out of memory");
        return;
    }
    memcpy(b + r->len, data, size);
    r->body = b;
    r->len += size;
    b[r->len] = 0;
}

static enum MHD_Result on_request(void *cls, struct MHD_Connection *c, const char *url, const char *method,
                                  const char *version, const char *upload_data, size_t *upload_data_size,
                                  void **con_cls) {
    (void)version;
    mt_serve *s = cls;
    request *r = *con_cls;
    if (!r) {
        if (!(r = calloc(1, sizeof *r))) return MHD_NO;
        *con_cls = r;
        mt_conns_head_done(s->conns, c); /* the headers are in */
        unsigned status = begin(s, c, r, url, method);
        if (status) return send_error(c, status, r->err.msg);
        return MHD_YES;
    }
    if (*upload_data_size) {
        append_body(r, upload_data, *upload_data_size);
        *upload_data_size = 0;
        return MHD_YES;
    }
    if (r->failed) return send_error(c, (unsigned)r->failed, r->err.msg);
    return r->route->fn(s, c, r);
}

/* Called for every request at its end, finished or not (a client that went away). */
static void on_completed(void *cls, struct MHD_Connection *c, void **con_cls, enum MHD_RequestTerminationCode toe) {
    (void)toe;
    mt_serve *s = cls;
    mt_conns_request_done(s->conns, c); /* a kept-alive connection's next headers start now */
    request *r = *con_cls;
    if (!r) return;
    if (r->pp) MHD_destroy_post_processor(r->pp);
    mt_upload_abort(r->up);
    json_decref(r->answer);
    free(r->body);
    free(r);
    *con_cls = NULL;
}

/* ---- the server -------------------------------------------------------------------------------- */

void mt_serve_config_init(mt_serve_config *c) {
    memset(c, 0, sizeof *c);
    c->listen = "127.0.0.1";
    c->port = 8080;
    c->max_upload_bytes = 256.0 * 1024 * 1024;
    c->max_inflate_bytes = 1024.0 * 1024 * 1024;
    c->threads = 4;
    c->per_ip = 32;
    c->timeout_s = 10;
    c->parse_queue = 4;
    mt_jobs_config_init(&c->jobs);
}

/* libmicrohttpd's unescaping of URLs and queries (%HH), but "%00" stays as written: a NUL would
 * cut an id short ("upload/1%00.x" read as "upload/1"). */
static size_t unescape(void *cls, struct MHD_Connection *c, char *str) {
    (void)cls, (void)c;
    static const char HEX[] = "0123456789abcdef";
    char *w = str;
    for (const char *p = str; *p;) {
        const char *h1 = p[0] == '%' && p[1] ? strchr(HEX, p[1] | 0x20) : NULL;
        const char *h2 = h1 && p[2] ? strchr(HEX, p[2] | 0x20) : NULL;
        int v = h1 && h2 ? (int)(h1 - HEX) * 16 + (int)(h2 - HEX) : -1;
        if (v > 0) {
            *w++ = (char)v;
            p += 3;
        } else {
            *w++ = *p++;
        }
    }
    *w = 0;
    return (size_t)(w - str);
}

int mt_serve_is_loopback(const char *addr) {
    struct in_addr a4;
    struct in6_addr a6;
    if (!strcmp(addr, "localhost")) return 1;
    if (inet_pton(AF_INET, addr, &a4) == 1) return (ntohl(a4.s_addr) >> 24) == 127;
    return inet_pton(AF_INET6, addr, &a6) == 1 && IN6_IS_ADDR_LOOPBACK(&a6);
}

static mt_status start(mt_serve *s, const mt_serve_config *c, mt_error *err) {
    struct sockaddr_in a4;
    struct sockaddr_in6 a6;
    memset(&a4, 0, sizeof a4);
    memset(&a6, 0, sizeof a6);
    const char *addr = strcmp(c->listen, "localhost") ? c->listen : "127.0.0.1";
    /* poll, not epoll: with epoll (MHD_USE_AUTO) libmicrohttpd 0.9.75's thread pool missed some clients
     * that closed mid-upload under load (their partial uploads stayed until the timeout);
     * tests/integration/serve_http.sh cuts five uploads off among 50 requests. */
    unsigned flags = MHD_USE_POLL_INTERNAL_THREAD | MHD_USE_ERROR_LOG | MHD_ALLOW_SUSPEND_RESUME;
    struct sockaddr *sa = (struct sockaddr *)&a4;
    if (inet_pton(AF_INET, addr, &a4.sin_addr) == 1) {
        a4.sin_family = AF_INET;
        a4.sin_port = htons((uint16_t)c->port);
    } else if (inet_pton(AF_INET6, addr, &a6.sin6_addr) == 1) {
        a6.sin6_family = AF_INET6;
        a6.sin6_port = htons((uint16_t)c->port);
        sa = (struct sockaddr *)&a6;
        flags |= MHD_USE_IPv6;
    } else {
        return mt_fail(err, MT_EINVAL, "--listen needs an IPv4 or IPv6 address (got '%s')", c->listen);
    }
    s->d = MHD_start_daemon(flags, (uint16_t)c->port, NULL, NULL, on_request, s, MHD_OPTION_EXTERNAL_LOGGER,
                            mt_conns_log, s->conns, MHD_OPTION_SOCK_ADDR, sa,
                            MHD_OPTION_NOTIFY_COMPLETED, on_completed, s, MHD_OPTION_THREAD_POOL_SIZE,
                            (unsigned)(c->threads > 0 ? c->threads : 4), MHD_OPTION_CONNECTION_LIMIT, 256u,
                            MHD_OPTION_PER_IP_CONNECTION_LIMIT, (unsigned)(c->per_ip > 0 ? c->per_ip : 32),
                            MHD_OPTION_CONNECTION_TIMEOUT, (unsigned)(c->timeout_s > 0 ? c->timeout_s : 10),
                            MHD_OPTION_UNESCAPE_CALLBACK, unescape, NULL, MHD_OPTION_NOTIFY_CONNECTION,
                            mt_conns_notify, s->conns, MHD_OPTION_END);
    if (!s->d)
        return mt_fail(err, MT_EINVAL, "cannot listen on %s port %d (in use? choose another with --port)",
                       c->listen, c->port);
    const union MHD_DaemonInfo *info = MHD_get_daemon_info(s->d, MHD_DAEMON_INFO_BIND_PORT);
    s->port = info ? info->port : c->port;
    mt_guard_set_port(&s->guard, s->port); /* before any client can know it; the request threads run */
    return MT_OK;
}

mt_status mt_serve_new(const mt_serve_config *c, mt_serve **out, mt_error *err) {
    if (c->port < 0 || c->port > 65535) return mt_fail(err, MT_EINVAL, "--port needs 0..65535 (got %d)", c->port);
    mt_serve *s = calloc(1, sizeof *s);
    if (!s) return mt_fail(err, MT_ENOMEM, "out of memory");
    s->max_upload_bytes = c->max_upload_bytes;
    s->max_inflate_bytes = c->max_inflate_bytes;
    parser *p = &s->ps;
    pthread_mutex_init(&p->mu, NULL);
    pthread_cond_init(&p->cv, NULL);
    p->cap = c->parse_queue < 1 ? 1 : c->parse_queue > PARSE_QUEUE_MAX ? PARSE_QUEUE_MAX : c->parse_queue;
    mt_status st = mt_catalog_new(c->shipped, c->traces, c->n_traces, &s->cat, err);
    if (st == MT_OK) st = mt_jobs_new(mt_catalog_dir(s->cat), s->cat, &c->jobs, &s->jobs, err);
    if (st == MT_OK && pthread_create(&p->th, NULL, parse_loop, s) != 0)
        st = mt_fail(err, MT_ENOMEM, "cannot start the upload parser thread");
    p->started = st == MT_OK;
    if (st == MT_OK) st = mt_guard_init(&s->guard, c->listen, c->port, err);
    if (st == MT_OK) st = mt_conns_new(c->timeout_s > 0 ? c->timeout_s : 10, &s->conns, err);
    if (st == MT_OK && !(s->page = malloc(mt_serve_page_len + 1))) st = mt_fail(err, MT_ENOMEM, "out of memory");
    if (st == MT_OK) { /* the page carries the token an upload needs (serve/guard.h) */
        memcpy(s->page, mt_serve_page, mt_serve_page_len + 1);
        char *at = strstr(s->page, MT_GUARD_TOKEN_PLACEHOLDER);
        if (at) memcpy(at, s->guard.token, MT_GUARD_TOKEN_LEN);
        else st = mt_fail(err, MT_EINTERNAL, "the page has no place for the server's token");
    }
    if (st == MT_OK) st = start(s, c, err);
    if (st != MT_OK) {
        mt_serve_free(s);
        return st;
    }
    *out = s;
    return MT_OK;
}

int mt_serve_port(const mt_serve *s) { return s->port; }

void mt_serve_free(mt_serve *s) {
    if (!s) return;
    parser_stop(&s->ps); /* resumes every suspended connection: libmicrohttpd stops only without them */
    if (s->d) MHD_stop_daemon(s->d);
    mt_conns_free(s->conns); /* after the daemon: no connection is left to watch */
    mt_jobs_free(s->jobs);
    pthread_cond_destroy(&s->ps.cv);
    pthread_mutex_destroy(&s->ps.mu);
    mt_catalog_free(s->cat);
    free(s->page);
    free(s);
}
