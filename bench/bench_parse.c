/* bench/bench_parse.c — parse + link time of trace pairs (default: every pair in
 * ../shared/traces, or the paths given). Prints a table: best of 5 runs, wall clock.
 * Usage: bench_parse [DIR...]
 */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "tracer/trace.h"
#include "util/fileio.h"

static double now_s(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

static double json_mb(const char *path) {
    char *buf = NULL;
    size_t len = 0;
    if (!path || mt_read_file(path, &buf, &len, NULL) != MT_OK) return 0;
    free(buf);
    return (double)len / 1e6;
}

static void bench(const char *dir) {
    const char *paths[1] = {dir};
    double best = 1e30;
    mt_trace *keep = NULL;
    for (int r = 0; r < 5; r++) {
        mt_trace *t = NULL;
        mt_error err = {0};
        double t0 = now_s();
        mt_status rc = mt_trace_load(paths, 1, NULL, &t, &err);
        double dt = now_s() - t0;
        if (rc != MT_OK) {
            printf("%-34s error: %s\n", dir, err.msg);
            return;
        }
        if (dt < best) best = dt;
        if (keep) mt_trace_free(keep);
        keep = t;
    }
    const char *name = strrchr(dir, '/');
    name = name && name[1] ? name + 1 : dir;
    printf("%-34s %9.1f %9.1f %7d %8d %10.1f\n", name, json_mb(keep->kineto_path),
           json_mb(keep->et_path), keep->n_ops, keep->n_kernels, best * 1e3);
    mt_trace_free(keep);
}

int main(int argc, char **argv) {
    printf("%-34s %9s %9s %7s %8s %10s\n", "trace", "kineto MB", "et MB", "ops", "kernels",
           "load ms");
    if (argc > 1) {
        for (int i = 1; i < argc; i++) bench(argv[i]);
        return 0;
    }
    const char *root = "../shared/traces";
    static const char *const pairs[] = {"param-resnet", "param-linear-rtx2080ti",
                                        "triosim-vgg13-h100-bs512", "hta-simple-add-a100",
                                        "triosim-csv-resnet50-h100-bs128"};
    for (size_t i = 0; i < sizeof pairs / sizeof pairs[0]; i++) {
        char p[512];
        snprintf(p, sizeof p, "%s/%s", root, pairs[i]);
        if (mt_is_dir(p)) bench(p);
        else printf("%-34s skipped: %s absent\n", pairs[i], p);
    }
    return 0;
}
