/* serve/serve.h — `mitosis serve`: a local HTTP server (libmicrohttpd) with one self-contained
 * page (serve/page.html, .css, .js, embedded at build time) and a small JSON API over run/, the
 * web front-end peer of cli/.
 *
 * Routes (one table in serve.c; every answer is JSON {"error": "one line"} with a 4xx on a bad
 * request, 404 for an unknown route, run or file):
 *   GET  /                     the page
 *   GET  /api/options          the run options simulate and compare take ({simulate:[..],
 *                              compare:[..]}, from the CLI's flag tables: name, help, range)
 *   GET  /api/traces           [{id, name, source}] (serve/catalog.h)
 *   GET  /api/trace?id=ID      {id, name, source, summary}: summary is `inspect --json`
 *   POST /api/traces           upload (multipart/form-data: 1-4 files, optional field "name"),
 *                              at most max_upload_bytes: 413 over it, 400 when the readers refuse
 *   POST /api/runs             {"command": "simulate"|"compare", "trace": ID, "options": {..}}
 *                              -> 202 {"id": N} (serve/options.h: the CLI's options by name)
 *   POST /api/check            the same body, checked as POST /api/runs checks it (the CLI's flag
 *                              parser, the web floor on bandwidths, a comparison's plan count),
 *                              not run: 200 {"ok": true} or the 4xx and message a run would get
 *   GET  /api/runs             [{id, command, trace, status}]
 *   GET  /api/runs/N           status, progress, and when done the same JSON as `--json`
 *                              (the server's folders written as catalogue ids: catalog.h)
 *   GET  /api/runs/N/FILE      result.json, report.html, timeline.json, csv/NAME.csv
 * A URL holding ".." is refused (400) before routing; no path from a client is opened.
 * Threads: libmicrohttpd's pool answers requests; runs go to serve/jobs.h's one worker (igraph
 * is not thread-safe on Debian). A client that disconnects mid-request or mid-upload only has its
 * request freed (its partial upload removed).
 * Invariant: every request's state (its body, its upload) is freed by libmicrohttpd's completion
 * callback, however the request ends. Costs: a request O(its body + its answer); a run's cost is
 * the run's (serve/jobs.h).
 */
#ifndef MT_SERVE_SERVE_H
#define MT_SERVE_SERVE_H

#include <stdint.h>

#include "serve/catalog.h"
#include "util/err.h"

typedef struct mt_serve_config {
    const char *listen;        /* IPv4 or IPv6 address (default "127.0.0.1") */
    int port;                  /* 0: any free port (mt_serve_port tells) */
    const char *shipped;       /* the shipped traces folder, NULL or absent: none */
    const char *traces[MT_CATALOG_MAX_DIRS]; /* --traces folders */
    int n_traces;
    double max_upload_bytes;   /* per upload, all files together */
    int threads;               /* HTTP threads (default 4) */
} mt_serve_config;

void mt_serve_config_init(mt_serve_config *c);

typedef struct mt_serve mt_serve;

/* Scans the trace folders, starts the run worker and listens. Errors name the address or
 * folder (address in use, not an address, unreadable folder). */
mt_status mt_serve_new(const mt_serve_config *c, mt_serve **out, mt_error *err);
/* The port it listens on. */
int mt_serve_port(const mt_serve *s);
/* Stops listening, waits for the run in progress, removes the uploads and run files. */
void mt_serve_free(mt_serve *s);

/* 1 when addr is a loopback address (127.0.0.0/8, ::1, "localhost"). */
int mt_serve_is_loopback(const char *addr);

#endif
