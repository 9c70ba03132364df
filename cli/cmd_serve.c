/* cli/cmd_serve.c — `mitosis serve`: the web UI (serve/serve.h does the work; this file holds the
 * flags, the usage text, and waits for Ctrl-C). */
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cli/commands.h"
#include "serve/serve.h"

#ifndef MITOSIS_SHIPPED_TRACES
#define MITOSIS_SHIPPED_TRACES NULL
#endif

static mt_status add_traces(void *base, const char *v, mt_error *err) {
    mt_serve_config *c = base;
    if (c->n_traces >= MT_CATALOG_MAX_DIRS)
        return mt_fail(err, MT_EINVAL, "--traces: at most %d folders", MT_CATALOG_MAX_DIRS);
    c->traces[c->n_traces++] = v;
    return MT_OK;
}

#define CFG(field) offsetof(mt_serve_config, field)
static const mt_flag OWN[] = {
    {"--port", MT_FLAG_INT, CFG(port), "P", "TCP port (default 8080; 0: any free port, printed at start)", .lo = 0,
     .hi = 65535},
    {"--listen", MT_FLAG_STRING, CFG(listen), "ADDR", "address to listen on (default 127.0.0.1: this machine only; "
     "another address lets anyone who reaches it run simulations and upload files, and is warned about)"},
    {"--traces", MT_FLAG_CALL, 0, "DIR", "offer every sub-folder of DIR as a trace, beside the shipped ones "
     "(repeatable)", .call = add_traces, .repeat = 1, .complete = "dir"},
    {"--max-upload", MT_FLAG_BYTES, CFG(max_upload_bytes), "SIZE", "largest upload, all its files together "
     "(default 256MiB)", .lo = 0, .lo_open = 1},
    {"--threads", MT_FLAG_INT, CFG(threads), "N", "HTTP threads answering requests (default 4; runs go to "
     "--workers)", .lo = 1, .hi = 64},
    {"--workers", MT_FLAG_INT, CFG(jobs.workers), "N", "runs at once (default 2; a --routing latency run holds "
     "igraph's lock throughout, so it runs beside no topology build)", .lo = 1, .hi = 64},
    {"--max-queued", MT_FLAG_INT, CFG(jobs.max_queued), "N", "runs waiting at most; past it a run is refused with "
     "503 (default 64)", .lo = 1, .hi = 100000},
    {"--max-run-seconds", MT_FLAG_DOUBLE, CFG(jobs.max_run_s), "S", "a run estimated longer is refused before it "
     "starts, and a running one is stopped after S seconds of wall time (default 600)", .lo = 0, .lo_open = 1},
    {"--max-events", MT_FLAG_DOUBLE, CFG(jobs.max_events), "N", "a run estimated at more engine events is refused "
     "before it starts (default 2e9)", .lo = 0, .lo_open = 1},
    {"--max-run-memory", MT_FLAG_BYTES, CFG(jobs.max_mem_bytes), "SIZE", "a run estimated to need more memory is "
     "refused before it starts (default: a third of this machine's memory)", .lo = 0, .lo_open = 1},
    {"--max-run-bytes", MT_FLAG_BYTES, CFG(jobs.max_run_bytes), "SIZE", "what a run's report, timeline and tables "
     "record in memory, and its optional files on disk, at most (default 64MiB)", .lo = 0, .lo_open = 1},
    {"--keep-runs", MT_FLAG_INT, CFG(jobs.keep_runs), "N", "finished runs kept; older ones are removed (default "
     "200)", .lo = 1, .hi = 10000000},
    {"--keep-bytes", MT_FLAG_BYTES, CFG(jobs.keep_bytes), "SIZE", "finished runs' files on disk at most, all "
     "together; the oldest runs are removed past it (default 1GiB)", .lo = 0, .lo_open = 1},
    {"--per-ip", MT_FLAG_INT, CFG(per_ip), "N", "connections from one address at most (default 32)", .lo = 1,
     .hi = 256},
    {"--timeout", MT_FLAG_INT, CFG(timeout_s), "S", "a connection idle for S seconds, or whose request headers are not all in S seconds after it opened (or after its "
     "previous request), is closed (default 10)", .lo = 1,
     .hi = 3600},
    {"--max-inflate", MT_FLAG_BYTES, CFG(max_inflate_bytes), "SIZE", "what one uploaded gzip file may inflate to "
     "(default 1GiB)", .lo = 0, .lo_open = 1},
    {"--parse-queue", MT_FLAG_INT, CFG(parse_queue), "N", "uploads waiting to be parsed at most; past it an upload "
     "is refused with 503 (default 4)", .lo = 1, .hi = 64},
};
#undef CFG
static const mt_flag_table OWN_FLAGS = MT_FLAG_TABLE("Serve", OWN);

static void usage(FILE *out) {
    fprintf(out, "usage: mitosis serve [--port P] [--listen ADDR] [--traces DIR]... [--max-upload SIZE]\n\n"
                 "A local web UI: open the printed address in a browser, choose a trace (shipped, from --traces\n"
                 "folders, or uploaded), describe the cluster, and run simulate or compare. The page is one\n"
                 "self-contained file (no network); the JSON API under /api takes the run options of\n"
                 "simulate and compare by name (README \"Web UI\"). Ctrl-C stops it; runs and uploads are\n"
                 "kept in a private temporary folder that is removed then; Ctrl-C and SIGTERM cancel every\n"
                 "run first (docs/serve.md).\n\n");
    mt_flags_help(out, &OWN_FLAGS);
}

static const mt_flag_table *const TABLES[] = {&OWN_FLAGS, NULL};
const mt_command mt_cmd_serve = {"serve", cmd_serve, "a local web UI and JSON API to run simulate and compare",
                                 "[--port P] [--listen ADDR] [--traces DIR]... [--max-upload SIZE]", usage, TABLES,
                                 MT_CMD_OWN};

int cmd_serve(int argc, char **argv) {
    mt_serve_config c;
    mt_serve_config_init(&c);
    c.shipped = MITOSIS_SHIPPED_TRACES;
    mt_error err = {0};
    mt_flag_bind bind = {&OWN_FLAGS, &c};
    mt_flag_seen seen;
    if (mt_flags_parse(argc, argv, 1, &bind, 1, NULL, NULL, "serve", &seen, &err) != MT_OK)
        return mt_cli_fail("serve", &err);
    if (seen.help) return usage(stdout), 0;
    /* Ctrl-C and SIGTERM are taken by sigwait below: block them before any thread starts. */
    sigset_t stop;
    sigemptyset(&stop);
    sigaddset(&stop, SIGINT);
    sigaddset(&stop, SIGTERM);
    pthread_sigmask(SIG_BLOCK, &stop, NULL);
    signal(SIGPIPE, SIG_IGN);
    mt_serve *s = NULL;
    if (mt_serve_new(&c, &s, &err) != MT_OK) return mt_cli_fail("serve", &err);
    if (!mt_serve_is_loopback(c.listen))
        mt_cli_warn("serve", "listening beyond this machine: anyone who can reach the address can run simulations "
                    "and upload files (there is no authentication)");
    int v6 = strchr(c.listen, ':') != NULL;
    printf("mitosis serve: http://%s%s%s:%d/ (Ctrl-C stops)\n", v6 ? "[" : "", c.listen, v6 ? "]" : "",
           mt_serve_port(s));
    fflush(stdout);
    int sig = 0;
    sigwait(&stop, &sig);
    mt_serve_free(s); /* every run cancelled, the private folder removed */
    printf("mitosis serve: stopped\n");
    fflush(stdout);
    return 0;
}
