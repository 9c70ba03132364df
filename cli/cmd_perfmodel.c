/* cli/cmd_perfmodel.c — `mitosis perfmodel fit|show|predict|gpus`: fit the per-class linear
 * operator model, print it, predict a single-GPU step at another batch/GPU, list the GPU table
 * (run/perfmodel.h does the work, run/show.h prints it). */
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli/commands.h"
#include "run/perfmodel.h"
#include "run/show.h"
#include "util/outpath.h"

enum { MAX_INPUTS = 64 };

typedef struct pm_cli {
    const char *inputs[MAX_INPUTS]; /* fit: traces; show: the model; predict: the trace */
    int n_inputs;
    const char *csvs[MAX_INPUTS];
    int n_csvs;
    const char *out;
    mt_pm_opts o;
    double batch, factor;
    int32_t tp;
    int as_json;
} pm_cli;

static mt_status add_csv(void *base, const char *v, mt_error *err) {
    pm_cli *c = base;
    if (c->n_csvs >= MAX_INPUTS) return mt_fail(err, MT_EINVAL, "too many --csv files (at most %d)", MAX_INPUTS);
    c->csvs[c->n_csvs++] = v;
    return MT_OK;
}

static mt_status set_model(void *base, const char *v, mt_error *err) {
    pm_cli *c = base;
    c->o.model_path = v;
    c->o.kind = MT_PM_LINEAR;
    return MT_OK;
}

#define PM(field) offsetof(pm_cli, field)
static const mt_flag FIT[] = {
    {"--csv", MT_FLAG_CALL, 0, "FILE", "a CSV of measured ops (columns op, time_us|time_ns|time_ms, input_shapes, "
     "output_shapes, dtype, phase, flops, bytes, class); repeatable", .call = add_csv, .repeat = 1,
     .complete = "file"},
    {"-o", MT_FLAG_STRING, PM(out), "MODEL.json", "the model to write (required)", .complete = "file"},
    {"--output", MT_FLAG_STRING, PM(out), "MODEL.json", "the same as -o", .complete = "file"},
};
static const mt_flag PREDICT[] = {
    {"--perf-model", MT_FLAG_CHOICE, PM(o.kind), MT_PM_KIND_CHOICES, "the model (default trace; analytical for "
     "a CPU-recorded trace with --target-gpu)", .choices = MT_PM_KIND_CHOICES},
    {"--model", MT_FLAG_CALL, 0, "MODEL.json", "a fitted model (implies --perf-model linear)", .call = set_model,
     .complete = "file"},
    {"--batch", MT_FLAG_DOUBLE, PM(batch), "N", "predict at batch N", .lo = 0, .hi = 1e12, .lo_open = 1},
    {"--batch-factor", MT_FLAG_DOUBLE, PM(factor), "F", "predict at F times the traced batch", .lo = 0, .hi = 1e12,
     .lo_open = 1},
    {"--tp", MT_FLAG_INT, PM(tp), "N", "each op split N ways", .lo = 1, .hi = 1 << 20},
    {"--target-gpu", MT_FLAG_STRING, PM(o.target_gpu), "GPU", "predict for this GPU (mitosis perfmodel gpus)"},
    {"--trace-gpu", MT_FLAG_STRING, PM(o.trace_gpu), "GPU", "the GPU the trace ran on, when the trace does not "
     "say (TrioSim CSV)"},
    {"--tf32", MT_FLAG_CHOICE, PM(o.tf32), MT_TF32_CHOICES, "fp32 ops on TF32 tensor cores where the GPU has "
     "them: conv (PyTorch's default), all (matmul.allow_tf32 too), none", .choices = MT_TF32_CHOICES},
    {"--gpu-specs", MT_FLAG_STRING, PM(o.gpu_specs_path), "FILE", "extra GPU table (JSON)", .complete = "file"},
    {"--gpu-clock", MT_FLAG_DOUBLE, PM(o.gpu_clock_MHz), "MHz", "the predicted GPU at this SM clock (a power cap): "
     "compute peaks scale by MHz / its table clock, HBM bandwidth does not", .lo = 1, .hi = 10000},
    {"--json", MT_FLAG_SWITCH, PM(as_json), NULL, "the prediction as JSON"},
};
static const mt_flag SHOW[] = {
    {"--json", MT_FLAG_SWITCH, PM(as_json), NULL, "the model as JSON (the MODEL.json document)"},
};
static const mt_flag GPUS[] = {
    {"--json", MT_FLAG_SWITCH, PM(as_json), NULL, "the table as JSON"},
    {"--gpu-specs", MT_FLAG_STRING, PM(o.gpu_specs_path), "FILE", "extra GPU table (JSON): {\"gpus\": [{\"name\", "
     "\"match\", \"mem_GBps\", \"mem_GB\", \"tflops\": {\"fp32\", \"tf32\", \"bf16\", \"fp16\", \"fp8\", "
     "\"fp64\"}, optional \"link_GBps\", \"sms\", \"tdp_W\", \"boost_MHz\"}]}", .complete = "file"},
};
#undef PM
static const mt_flag_table FIT_FLAGS = MT_FLAG_TABLE("perfmodel fit", FIT);
static const mt_flag_table PREDICT_FLAGS = MT_FLAG_TABLE("perfmodel predict", PREDICT);
static const mt_flag_table SHOW_FLAGS = MT_FLAG_TABLE("perfmodel show", SHOW);
static const mt_flag_table GPUS_FLAGS = MT_FLAG_TABLE("perfmodel gpus", GPUS);
static const mt_flag_table *const TABLES[] = {&FIT_FLAGS, &SHOW_FLAGS, &PREDICT_FLAGS, &GPUS_FLAGS, NULL};

static void usage(FILE *out) {
    fprintf(out,
            "usage: mitosis perfmodel fit TRACE... [--csv FILE]... -o MODEL.json\n"
            "       mitosis perfmodel show MODEL.json [--json]\n"
            "       mitosis perfmodel predict TRACE [--perf-model " MT_PM_KIND_CHOICES "]\n"
            "                [--model MODEL.json] [--batch N | --batch-factor F] [--tp N]\n"
            "                [--target-gpu GPU] [--trace-gpu GPU] [--tf32 conv|all|none]\n"
            "                [--gpu-specs FILE] [--json]\n"
            "       mitosis perfmodel gpus [--gpu-specs FILE] [--json]\n\n"
            "fit      fits time = a*FLOPs + b*bytes + c (a, b, c >= 0) per operator class on the\n"
            "         ops of every TRACE (a directory or a single trace file each) and of every CSV\n"
            "         of measured ops; writes MODEL.json. Classes with too few points or collinear\n"
            "         features get a simpler model and a warning on stderr.\n"
            "show     prints a fitted model (effective TFLOP/s = 1/a, GB/s = 1/b, constant).\n"
            "predict  the serial single-GPU step (sum of op times) per phase at --batch N (or\n"
            "         --batch-factor F times the traced batch), each op split --tp ways, on\n"
            "         --target-gpu (default: the trace's GPU). --perf-model linear fits on the\n"
            "         trace itself unless --model is given. A resized op keeps its measured\n"
            "         residual: measured x predicted(new)/predicted(traced); a moved op keeps\n"
            "         its efficiency on the same kind of unit, never beats the target's roofline.\n"
            "gpus     the GPU table: dense peak TFLOP/s per dtype, bandwidth (decimal GB/s), memory.\n\n");
    for (int k = 0; TABLES[k]; k++) mt_flags_help(out, TABLES[k]);
}

const mt_command mt_cmd_perfmodel = {"perfmodel", cmd_perfmodel,
                                     "fit/show operator time models, predict a step at another batch or GPU",
                                     "fit|show|predict|gpus [ARGS...]", usage, TABLES, MT_CMD_OWN};

static mt_status take_input(void *ctx, const char *arg, mt_error *err) {
    pm_cli *c = ctx;
    if (c->n_inputs >= MAX_INPUTS) return mt_fail(err, MT_EINVAL, "too many inputs (at most %d)", MAX_INPUTS);
    c->inputs[c->n_inputs++] = arg;
    return MT_OK;
}

static mt_status fit(pm_cli *c, mt_error *err) {
    if (!c->out) return mt_fail(err, MT_EINVAL, "fit needs -o MODEL.json");
    if (!c->n_inputs && !c->n_csvs) return mt_fail(err, MT_EINVAL, "fit needs at least one TRACE or --csv FILE");
    mt_out_inputs ins; /* the model never overwrites what it is fitted on (util/outpath.h) */
    mt_out_inputs_init(&ins);
    for (int i = 0; i < c->n_inputs; i++) mt_out_inputs_add(&ins, c->inputs[i], MT_OUT_TRACE);
    for (int i = 0; i < c->n_csvs; i++) mt_out_inputs_add(&ins, c->csvs[i], MT_OUT_FILE);
    mt_out_inputs_add(&ins, c->o.gpu_specs_path, MT_OUT_FILE);
    mt_status ok = mt_out_check_file(&ins, "-o", c->out, err);
    mt_out_inputs_free(&ins);
    MT_CHECK(ok);
    MT_CHECK(mt_out_probe(c->out, "-o", err));
    mt_linmodel m;
    char warning[512];
    MT_CHECK(mt_run_fit(c->inputs, c->n_inputs, c->csvs, c->n_csvs, c->out, &m, warning, sizeof warning, err));
    mt_cli_warn("perfmodel", warning);
    for (int k = 0; k < MT_OPC_COUNT; k++)
        mt_cli_warn("perfmodel", mt_run_fit_class_warning(&m, k, warning, sizeof warning));
    mt_show_linmodel(stdout, &m, 0);
    printf("\nwrote %s\n", c->out);
    return MT_OK;
}

static mt_status show(pm_cli *c, mt_error *err) {
    if (c->n_inputs != 1) return mt_fail(err, MT_EINVAL, "show takes one MODEL.json");
    return mt_run_show_model(c->inputs[0], c->as_json, stdout, err);
}

static mt_status predict(pm_cli *c, mt_error *err) {
    if (c->n_inputs == 0) return mt_fail(err, MT_EINVAL, "predict needs a TRACE");
    if (c->n_inputs > 1) return mt_fail(err, MT_EINVAL, "predict takes one TRACE");
    mt_prediction p;
    MT_CHECK(mt_run_predict(c->inputs[0], &c->o, c->batch, c->factor, c->tp, &p, err));
    mt_cli_warn("perfmodel", p.trace_warning);
    mt_cli_warn("perfmodel", p.view.warning);
    mt_show_prediction(stdout, &p, c->as_json);
    mt_prediction_free(&p);
    return MT_OK;
}

static mt_status gpus(pm_cli *c, mt_error *err) {
    if (c->n_inputs) return mt_fail(err, MT_EINVAL, "gpus takes no argument ('%s'; only --gpu-specs FILE)", c->inputs[0]);
    return mt_run_gpus(c->o.gpu_specs_path, c->as_json, stdout, err);
}

static const struct {
    const char *name;
    const mt_flag_table *flags;
    mt_status (*run)(pm_cli *c, mt_error *err);
} SUBS[] = {{"fit", &FIT_FLAGS, fit}, {"show", &SHOW_FLAGS, show}, {"predict", &PREDICT_FLAGS, predict},
            {"gpus", &GPUS_FLAGS, gpus}};

int cmd_perfmodel(int argc, char **argv) {
    if (argc < 2) {
        fprintf(stderr, "mitosis perfmodel: give a subcommand: fit, show, predict or gpus (see --help)\n");
        return 2;
    }
    const char *sub = argv[1];
    if (!strcmp(sub, "--help") || !strcmp(sub, "-h") || !strcmp(sub, "help")) {
        usage(stdout);
        return 0;
    }
    pm_cli c;
    memset(&c, 0, sizeof c);
    mt_pm_opts_init(&c.o);
    c.tp = 1;
    mt_error err = {0};
    for (size_t k = 0; k < sizeof SUBS / sizeof SUBS[0]; k++) {
        if (strcmp(sub, SUBS[k].name)) continue;
        mt_flag_bind b = {SUBS[k].flags, &c};
        mt_flag_seen seen;
        mt_status rc = mt_flags_parse(argc, argv, 2, &b, 1, take_input, &c, "perfmodel", &seen, &err);
        if (rc == MT_OK && seen.help) {
            usage(stdout);
            return 0;
        }
        if (rc == MT_OK) rc = SUBS[k].run(&c, &err);
        return rc == MT_OK ? 0 : mt_cli_fail("perfmodel", &err);
    }
    fprintf(stderr, "mitosis perfmodel: unknown subcommand '%s' (fit, show, predict, gpus)\n", sub);
    return 2;
}
