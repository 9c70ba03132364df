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
 *                              -> 202 {"id": N} (serve/options.h: the CLI's options by name), or
 *                              {"command": "cluster", "cluster": {..}} (serve/clusterreq.h)
 *   POST /api/check            the same body, checked as POST /api/runs checks it (the CLI's flag
 *                              parser, the web floor on bandwidths, a comparison's plan count),
 *                              not run: 200 {"ok": true} or the 4xx and message a run would get
 *   GET  /api/server           {connections: {open, refused, slow_headers, dropped}} (serve/conns.h)
 *   GET  /api/runs             [{id, command, trace, status}]
 *   GET  /api/runs/N           status, progress, and when done the same JSON as `--json`
 *                              (the server's folders written as catalogue ids: catalog.h)
 *   GET  /api/runs/N/FILE      result.json, report.html, timeline.json, csv/NAME.csv
 *   DELETE /api/runs/N         cancels a queued or running run (stopped within a second), removes
 *                              a finished one: {id, status: cancelled|cancelling|removed}
 *   GET  /favicon.ico, /favicon.svg   the icon (an inline SVG)
 * Every request passes serve/guard.h's rules first (Host names this server, else 421; a change
 * from a foreign Origin 403; a JSON body without Content-Type: application/json 415; an upload
 * without the page's X-Mitosis-Token or this server's Origin 403).
 * A URL holding ".." is refused (400) before routing; no path from a client is opened. "%00" in a
 * URL or a query is never decoded (so an id holding it is no listed id and is refused).
 * Threads: libmicrohttpd's pool answers requests (event-driven: a slow client holds a connection,
 * not a thread; at most per_ip connections per address, closed after timeout_s idle, and shut when
 * a request's headers are not all in within timeout_s: serve/conns.h); runs go to
 * serve/jobs.h's workers; an upload, once received, is parsed by ONE parser thread (its connection
 * suspended meanwhile, at most parse_queue waiting, each file inflated to at most
 * max_inflate_bytes), so neither a big upload nor a gzip bomb holds an HTTP thread. A client that
 * disconnects mid-request or mid-upload only has its request freed (its partial upload removed).
 * Invariant: every request's state (its body, its upload) is freed by libmicrohttpd's completion
 * callback, however the request ends. Costs: a request O(its body + its answer); a run's cost is
 * the run's (serve/jobs.h).
 */
#ifndef MT_SERVE_SERVE_H
#define MT_SERVE_SERVE_H

#include <stdint.h>

#include "serve/catalog.h"
#include "serve/jobs.h"
#include "util/err.h"

typedef struct mt_serve_config {
    const char *listen;        /* IPv4 or IPv6 address (default "127.0.0.1") */
    int port;                  /* 0: any free port (mt_serve_port tells) */
    const char *shipped;       /* the shipped traces folder, NULL or absent: none */
    const char *traces[MT_CATALOG_MAX_DIRS]; /* --traces folders */
    int n_traces;
    double max_upload_bytes;   /* per upload, all files together */
    double max_inflate_bytes;  /* what one uploaded gzip file may inflate to (default 1 GiB) */
    int threads;               /* HTTP threads (default 4) */
    int per_ip;                /* connections from one address at most (default 32) */
    int timeout_s;             /* a connection idle this long is closed (default 10) */
    int parse_queue;           /* uploads waiting to be parsed at most (default 4; past it: 503) */
    mt_jobs_config jobs;       /* workers, limits and eviction of the runs (serve/jobs.h) */
} mt_serve_config;

void mt_serve_config_init(mt_serve_config *c);

typedef struct mt_serve mt_serve;

/* Scans the trace folders, starts the run worker and listens. Errors name the address or
 * folder (address in use, not an address, unreadable folder). */
mt_status mt_serve_new(const mt_serve_config *c, mt_serve **out, mt_error *err);
/* The port it listens on. */
int mt_serve_port(const mt_serve *s);
/* Stops the parser (the upload being parsed is cancelled), stops listening, cancels every run
 * (stopped within a second), removes the uploads and run files. */
void mt_serve_free(mt_serve *s);

/* 1 when addr is a loopback address (127.0.0.0/8, ::1, "localhost"). */
int mt_serve_is_loopback(const char *addr);

#endif
