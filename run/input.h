/* run/input.h — what every run of a command shares: the loaded trace, its performance model and
 * the calibration against the measured step, made once and used by every simulation (simulate's
 * run and baseline, every compared plan, every swept value).
 * Invariant after mt_run_input_open: t has operator times, pm is bound to t, and the run
 * configuration's host_scale/op_scale hold the calibrated factors (1 without calibration). With
 * --blocks N (c->blocks) t is the loaded trace's repeating block repeated or cut to N; calibration,
 * which compares with the step measured for the traced model, runs on the loaded trace first. With
 * --seq N t is the loaded trace at sequence length N (extrapolate/seqlen.h), before --blocks.
 */
#ifndef MT_RUN_INPUT_H
#define MT_RUN_INPUT_H

#include "extrapolate/seqlen.h"
#include "perfmodel/perfmodel.h"
#include "report/replay.h"
#include "run/config.h"
#include "run/device.h"
#include "tracer/meta.h"
#include "tracer/trace.h"
#include "util/outpath.h"

typedef struct mt_run_input {
    mt_trace *t;            /* the trace the run uses: the loaded one, or with --blocks the one repeated
                          * from it (extrapolate/repeat.h) */
    mt_trace *traced;       /* with --blocks or --seq: the loaded trace (t's strings live in it); else NULL */
    mt_trace *mid;          /* with both: the loaded trace at --seq, which t repeats the blocks of; else NULL */
    mt_seqinfo seq;      /* with --seq: the traced and asked sequence lengths (extrapolate/seqlen.h) */
    mt_perfmodel *pm;
    mt_calibration cal;
    mt_commfit commfit;  /* the network fitted to the traced collectives (run/commfit.h) */
    mt_run_device dev;   /* what the ranks are and where their op times come from (run/device.h) */
    int borrowed;        /* the loaded trace belongs to the caller (mt_run_input_bind): close leaves it */
} mt_run_input;

/* Loads c's trace, checks that it has operator times, applies the recording device's rules
 * (run/device.h: may set c->pm), creates the performance model and, when c asks for it,
 * calibrates (which sets c->host_scale and c->op_scale). On failure nothing is kept
 * and err says why. */
mt_status mt_run_input_open(mt_run_config *c, mt_run_input *in, mt_error *err);
void mt_run_input_close(mt_run_input *in);

/* The same from a trace the caller loaded and keeps (libmitosis loads a trace once for many
 * runs): checks its operator times, resolves the device, creates the performance model and
 * calibrates. t is only read; mt_run_input_close leaves it to the caller. Calibration reads the
 * meta.json beside c->paths[0]. */
mt_status mt_run_input_bind(mt_run_config *c, const mt_trace *t, mt_run_input *in, mt_error *err);

/* Records every file c reads (util/outpath.h): its trace paths (and meta.json beside them), the
 * topology file, --scenario, --model and --gpu-specs files. */
void mt_run_inputs_add(const mt_run_config *c, mt_out_inputs *s);
/* The outputs checked against c's inputs, before anything is opened (util/outpath.h). */
mt_status mt_run_check_outputs(const mt_run_config *c, const mt_out_spec *outs, int n, mt_error *err);

#endif
