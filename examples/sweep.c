/* examples/sweep.c — libmitosis from C: load a trace once, simulate it at 8, 16, ... GPUs under
 * one plan, print a table (GPUs, step ms, samples/s, peak memory per GPU).
 *
 *   example_sweep TRACE [FROM TO] [OPTION VALUE ...]
 *   example_sweep traces/cpu-gpt-tiny-b8 8 1024 --tp 2 --topology dgx-h100
 *
 * Build against an installed library: cc sweep.c $(pkg-config --cflags --libs mitosis).
 */
#include <stdio.h>
#include <stdlib.h>

#include <mitosis.h>

int main(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "usage: %s TRACE [FROM TO] [OPTION VALUE ...]\n", argv[0]);
        return 2;
    }
    int from = argc > 3 ? atoi(argv[2]) : 8, to = argc > 3 ? atoi(argv[3]) : 1024;
    int first_opt = argc > 3 ? 4 : 2;
    mitosis_error err;
    mitosis_trace *t = NULL;
    mitosis_config *c = NULL;
    const char *path = argv[1];
    if (mitosis_trace_open(&path, 1, -1, &t, &err) != MITOSIS_OK ||
        mitosis_config_new("simulate", &c, &err) != MITOSIS_OK ||
        mitosis_config_set_args(c, argc - first_opt, (const char *const *)argv + first_opt, &err) != MITOSIS_OK) {
        fprintf(stderr, "sweep: %s\n", err.message);
        mitosis_config_free(c);
        mitosis_trace_free(t);
        return mitosis_exit_code(err.code);
    }
    printf("%8s %6s %12s %14s %14s\n", "gpus", "plan", "step_ms", "samples/s", "mem/GPU GB");
    int code = 0;
    for (int n = from; n <= to; n *= 2) {
        char gpus[16];
        snprintf(gpus, sizeof gpus, "%d", n);
        mitosis_result *r = NULL;
        if (mitosis_config_set(c, "gpus", gpus, &err) != MITOSIS_OK || mitosis_simulate(t, c, &r, &err) != MITOSIS_OK) {
            fprintf(stderr, "sweep: %d GPUs: %s\n", n, err.message);
            code = mitosis_exit_code(err.code);
            break;
        }
        char plan[32];
        snprintf(plan, sizeof plan, "%dx%dx%d", mitosis_result_dp(r), mitosis_result_tp(r), mitosis_result_pp(r));
        printf("%8d %6s %12.3f %14.1f %14.3f\n", mitosis_result_gpus(r), plan, mitosis_result_step_ms(r),
               mitosis_result_samples_per_s(r), mitosis_result_peak_mem_bytes(r) / 1e9);
        mitosis_result_free(r);
    }
    mitosis_config_free(c);
    mitosis_trace_free(t);
    return code;
}
