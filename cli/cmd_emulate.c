/* cli/cmd_emulate.c — `mpirun -np N mitosis emulate TRACE [plan] [network] [options]`: every MPI
 * rank walks one virtual GPU's program over the real network and rank 0 prints the measured step
 * beside the `simulate` prediction (emulate/emulate.h does the work; this file holds the flag
 * table, the usage text and the calls). Built without MPI, the command says so and exits 2.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "emulate/emulate.h" /* the emulate command's engine: a peer of run/, built with MPI only */
#include "run/flags.h"
#include "run/job.h"
#include "run/show.h"

typedef struct emu_cli {
    mt_emu_opts o;
    int as_json, check;
    double threshold;
} emu_cli;

static mt_status set_coll(void *base, const char *v, mt_error *err) {
    emu_cli *c = base;
    if (!strcmp(v, "schedule")) c->o.coll = 0;
    else if (!strcmp(v, "mpi")) c->o.coll = 1;
    else return mt_fail(err, MT_EINVAL, "--coll: '%s' is not schedule or mpi", v);
    return MT_OK;
}

#define EMU(field) offsetof(emu_cli, field)
static const mt_flag EMULATION[] = {
    {"--time-scale", MT_FLAG_DOUBLE, EMU(o.time_scale), "F", "every compute wait x F (0.1: a step 10 times shorter); "
     "the prediction is scaled alike (default 1)", 0, 1e6, 1},
    {"--bytes-scale", MT_FLAG_DOUBLE, EMU(o.bytes_scale), "F", "every message x F (collective buffers and pipeline "
     "sends), in the prediction too (default 1)", 0, 1e6, 1},
    {"--coll", MT_FLAG_CALL, 0, "schedule|mpi", "schedule: each collective as the simulator's send/receive schedule "
     "for the plan's --algo, as non-blocking MPI point-to-point (default); mpi: MPI's own non-blocking collectives "
     "(MPI_Iallreduce, ...)", .choices = "schedule|mpi", .call = set_coll},
    {"--check", MT_FLAG_SWITCH, EMU(check), NULL, "network check: list the collectives and rank pairs slower than "
     "predicted by more than the threshold and name the ranks whose every transfer is slow, with their links. "
     "`--check 0.3` (or 30%) sets the threshold (default 0.25)"},
    {"--check-threshold", MT_FLAG_DOUBLE, EMU(threshold), "F", "the --check threshold as a fraction (0.25 = 25% "
     "slower than predicted)", 0, 100, 1},
    {"--timeout", MT_FLAG_TIME, EMU(o.timeout_ns), "T", "give up any wait (for a collective, a transfer, a peer) "
     "longer than T (a dead rank, a cut link): one line on every surviving rank, then the job is aborted (default 60s)", 1e6, 1e13},
    {"--poll", MT_FLAG_TIME, EMU(o.poll_ns), "T", "while communication is in flight, test it every T and sleep in "
     "between (default 20us; 0 spins: most precise on dedicated cores, slower when ranks share cores)", 0, 1e9},
    {"--json", MT_FLAG_SWITCH, EMU(as_json), NULL, "the report as JSON on stdout (rank 0)"},
    {"--timeline", MT_FLAG_STRING, EMU(o.timeline), "FILE", "what was measured, as the same Perfetto / "
     "chrome://tracing JSON as simulate --timeline (rank 0 writes it)", .complete = "file"},
};
#undef EMU
static const mt_flag_table EMULATION_FLAGS = MT_FLAG_TABLE("Emulation", EMULATION);

static void usage(FILE *out) {
    fprintf(out, "usage: mpirun -np N mitosis emulate TRACE [plan] [--topology SPEC] [network] [options]\n\n"
                 "Each MPI rank walks the program of one of the plan's N virtual GPUs in real time: compute as a wait "
                 "to an\nabsolute deadline, every collective and pipeline send as real messages of the real sizes. "
                 "Rank 0 prints\nthe measured step beside the simulate prediction for the same plan on the described "
                 "network (describe\nthe real one: e.g. --link-bw 1Gbps --link-lat 100us for examples/testbed.sh "
                 "N 1gbit 100us).\nThe host model is off. Needs a build with MPI.\n\n");
    mt_run_flags_help(out, 1);
    mt_flags_help(out, &EMULATION_FLAGS);
}

static const mt_flag_table *const TABLES[] = {&EMULATION_FLAGS, NULL};
const mt_command mt_cmd_emulate = {
    "emulate", cmd_emulate, "run the extrapolated step on real MPI ranks over a real network, beside its prediction",
    "TRACE [plan] [--topology SPEC] [options] (under mpirun -np N)", usage, TABLES, MT_CMD_RUN};

/* The rank the launcher gave this process (before MPI starts), 0 outside a launcher. */
static int launcher_rank(void) {
    const char *names[] = {"OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"};
    for (int i = 0; i < 3; i++)
        if (getenv(names[i])) return atoi(getenv(names[i]));
    return 0;
}

/* `--check 0.3` / `--check 30%`: the optional value is taken out of av (a copy of argv) into the
 * threshold. Returns the new argument count. */
static int check_value(int argc, char **av, emu_cli *c) {
    int n = 0;
    for (int i = 0; i < argc; i++) {
        av[n++] = av[i];
        if (strcmp(av[i], "--check") || i + 1 >= argc) continue;
        char *end;
        double v = strtod(av[i + 1], &end);
        if (end == av[i + 1] || (*end && strcmp(end, "%"))) continue;
        c->threshold = *end ? v / 100 : v;
        i++;
    }
    return n;
}

static int fail_rank0(const mt_error *err) { return launcher_rank() == 0 ? mt_cli_fail("emulate", err) : mt_exit_code(err->code); }

#ifdef MITOSIS_HAVE_MPI
static int run(mt_run_config *rc, mt_run_input *in, emu_cli *c) {
    mt_error err = {0};
    mt_emulation *em = NULL;
    mt_emu_report rep;
    memset(&rep, 0, sizeof rep);
    if (mt_emulate_begin(&em, &err) != MT_OK) return fail_rank0(&err);
    c->o.threshold = c->check ? c->threshold : -1;
    mt_status st = mt_emulate_run(em, rc, in, &c->o, &rep, &err);
    if (st != MT_OK) {
        if (mt_emulate_rank(em) == 0 || st != MT_EINVAL) mt_cli_fail("emulate", &err);
        fflush(stderr);
        mt_emulate_abort(em, mt_exit_code(st));
    }
    if (mt_emulate_rank(em) == 0) mt_show_emu(stdout, &rep, c->as_json);
    mt_emu_report_free(&rep);
    mt_emulate_end(em);
    return 0;
}
#else
static int run(mt_run_config *rc, mt_run_input *in, emu_cli *c) {
    mt_error err;
    mt_fail(&err, MT_EINVAL, "this build has no MPI: install OpenMPI (apt-get install libopenmpi-dev openmpi-bin) "
            "and rebuild");
    return fail_rank0(&err);
}
#endif

int cmd_emulate(int argc, char **argv) {
    mt_job job;
    emu_cli c;
    memset(&c, 0, sizeof c);
    mt_emu_opts_init(&c.o);
    c.threshold = 0.25;
    mt_error err = {0};
    if (mt_job_open(&job, MT_JOB_EMULATE, &err) != MT_OK) return fail_rank0(&err);
    char **av = malloc((size_t)(argc + 1) * sizeof *av);
    if (!av) return mt_job_close(&job), 70;
    memcpy(av, argv, (size_t)argc * sizeof *av);
    int ac = check_value(argc, av, &c);
    int code = 0;
    const mt_flag_bind own = {&EMULATION_FLAGS, &c};
    mt_status st = mt_job_parse(&job, ac, av, NULL, &own, 1, 0, &err);
    if (st == MT_OK && job.seen.help) {
        usage(stdout);
        goto out;
    }
    if (st == MT_OK && mt_flag_given(&job.seen, "--check-threshold") && !c.check)
        st = mt_fail(&err, MT_EINVAL, "--check-threshold needs --check");
    if (st == MT_OK && job.rc.n_paths == 0)
        st = mt_fail(&err, MT_EINVAL, "no trace given (usage: mpirun -np N mitosis emulate TRACE [plan])");
    const mt_out_spec outs[] = {{"--timeline", c.o.timeline, 0}};
    if (st == MT_OK) st = mt_run_check_outputs(&job.rc, outs, 1, &err);
    if (st == MT_OK) st = mt_job_load(&job, NULL, &err);
    code = st == MT_OK ? run(&job.rc, &job.in, &c) : fail_rank0(&err);
out:
    free(av);
    mt_job_close(&job);
    return code;
}
