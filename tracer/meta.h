/* tracer/meta.h — the ground truth recorded beside a trace, and how a run was calibrated to it.
 *
 * Recording a step slows it: the profiler and the Execution Trace observer run callbacks around
 * every operator. tracer/collect.py therefore times 10-20 more steps without the profiler and
 * writes their median to `meta.json` beside the trace ({"batch": B, "step_time_ms": {"median":
 * MS, ...}}). Calibration (run/calibrate.h) scales the traced times so that one GPU at the traced
 * batch takes that time; mt_calibration records what it found, for the reports.
 * Invariant: a measured time read here is in (0, 1e9] ms and belongs to the trace's batch.
 */
#ifndef MT_TRACER_META_H
#define MT_TRACER_META_H

#include <stddef.h>

#include "tracer/trace.h"
#include "util/err.h"

/* The measured step (ms) from the meta.json beside a trace (path0: its folder, or one of its
 * files; the file's name goes to src). MT_EIO when there is no meta.json; MT_EINVAL (naming
 * the file) for a missing or out-of-range step_time_ms.median or a batch other than the
 * trace's; the file's own error when it is not JSON. */
mt_status mt_trace_meta_measured(const char *path0, const mt_trace *t, double *ms, char *src, size_t srclen,
                                 mt_error *err);

/* 1 when a meta.json beside path0 holds a step_time_ms.median key at all (whatever its value), or
 * is not JSON: a file of provenance alone (TrioSim's) gives no measured step, one with the key gives
 * it or is damaged. Read as configuration files are (mt_json_load_config: bounded, regular files). */
int mt_trace_meta_has_measured(const char *path0);

/* A Kineto trace without its Execution Trace has no tensor shapes to find the batch in (the first
 * op's input guessed it: 8,192 for a batch of 8 sequences of 1,024): when the meta.json beside it
 * gives an integer "batch" > 0, that is the trace's batch, and t->warning says so. No meta.json,
 * another format, or no such key: nothing changes. */
void mt_trace_meta_batch(mt_trace *t, const char *dir_or_file);

/* What a calibration found (all zero but the scales, 1, when none was asked for). */
typedef struct mt_calibration {
    int on;                /* 0: no calibration asked for */
    int automatic;         /* 1: not asked for, made because a GPU trace's meta.json gives its measured step */
    double measured_ms;    /* the target */
    char source[512];      /* the meta.json it came from, or "--measured-ms" */
    double uncalibrated_ms;/* one GPU, traced batch, before */
    double calibrated_ms;  /* the same after (equal to measured_ms within 1e-6 relative, unless
                              the host floor and operator scaling could not reach it) */
    double host_scale;     /* the factor on host times (1 without the host model) */
    double op_scale;       /* the factor on operator device times */
    int host;              /* the host model was on */
    int host_removed;      /* the host times went entirely (the host scale is at its floor) */
} mt_calibration;

#endif
