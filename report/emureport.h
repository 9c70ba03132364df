/* report/emureport.h — what `mitosis emulate` measured on a real network, beside what `simulate`
 * predicts for the same plan and network: the step per rank (and the max), each rank's breakdown
 * (compute wait, communication in flight, exposed communication, pipeline bubble), every
 * collective instance (measured and predicted time, algbw/busbw as nccl-tests computes them) and
 * every rank pair that exchanged bytes (measured transfer time against the time the described
 * network gives one transfer alone); the network check (`--check THRESHOLD`) flags collectives
 * and pairs slower than predicted by more than THRESHOLD and names the ranks whose every pair is
 * slow (a slow link attaches them).
 *
 * Plain data: emulate/ fills it on rank 0 from every rank's records; this file only judges and
 * prints, so the check is unit-testable without MPI. Invariant: arrays hold n_* valid entries;
 * times are in ms (steps, breakdown) and us (collectives, pairs). Costs: O(ranks + colls + pairs).
 */
#ifndef MT_REPORT_EMUREPORT_H
#define MT_REPORT_EMUREPORT_H

#include <stdint.h>
#include <stdio.h>

#include <jansson.h>

typedef struct mt_emu_rank {
    int32_t rank;
    double step_ms, compute_ms, comm_ms, exposed_ms, bubble_ms; /* measured */
    double pred_step_ms, pred_compute_ms, pred_comm_ms, pred_exposed_ms, pred_bubble_ms;
} mt_emu_rank;

typedef struct mt_emu_coll {
    char op[16];          /* "allreduce" */
    char algo[16];        /* "ring", or "mpi" (the MPI library's own) */
    char group[16];       /* its group kind: "dp", "tp" */
    int32_t first_rank;   /* the group's member 0 (world rank) */
    int32_t nranks;
    int32_t step, seq;    /* step, and its place among its group's collectives of that step */
    int32_t layer;        /* the layer that caused it, -1 */
    double bytes;         /* per-rank buffer as the program has it, after --bytes-scale */
    double meas_us;       /* from the last member's start to the last member's end */
    double pred_us;       /* the simulated instance (0: not simulated) */
    double busbw_factor;  /* nccl-tests: busbw = algbw x this */
    int8_t slow;          /* set by mt_emu_check */
} mt_emu_coll;

typedef struct mt_emu_pair {
    int32_t src, dst;     /* world ranks */
    int32_t n;            /* transfers */
    double bytes;         /* all of them */
    double meas_us;       /* sum of the measured transfer times (sender's post -> receiver's completion) */
    double pred_us;       /* sum of each transfer alone on the described network: bytes / route
                           * bandwidth + route latency */
    int8_t slow;          /* set by mt_emu_check */
} mt_emu_pair;

typedef struct mt_emu_report {
    int32_t nranks;
    const char *coll_mode;   /* "schedule" or "mpi" */
    char topology[128];      /* the described network ("switch:4") */
    double time_scale, bytes_scale, poll_us;
    mt_emu_rank *ranks;
    mt_emu_coll *colls;  int32_t n_colls;
    mt_emu_pair *pairs;  int32_t n_pairs;
    /* the check (mt_emu_check) */
    int check;               /* 1: --check given */
    double threshold;        /* e.g. 0.25: slower than predicted by more than 25% */
    int32_t slow_colls, slow_pairs;
    int32_t *suspects;       /* ranks every one of whose pairs is slow (n_suspects of them) */
    int32_t n_suspects;
    char **suspect_links;    /* per suspect: its attachment as the topology names it (may be NULL) */
} mt_emu_report;

/* Max over ranks of the measured / predicted step, in ms. */
double mt_emu_step_ms(const mt_emu_report *r);
double mt_emu_pred_step_ms(const mt_emu_report *r);
/* (measured - predicted) / predicted, 0 when nothing was predicted. */
double mt_emu_error(double measured, double predicted);

/* Flags collectives and pairs whose measured time exceeds (1 + threshold) x the predicted, and
 * fills suspects: ranks with at least one pair whose pairs are all slow, unless every pair is
 * slow (then no rank stands out). Returns 0, or
 * -1 when out of memory (suspects then empty). O(ranks + colls + pairs). */
int mt_emu_check(mt_emu_report *r, double threshold);
void mt_emu_report_free(mt_emu_report *r);

/* Text: the step table, per-rank breakdown, collectives (nccl-tests columns plus the prediction
 * and its error), pairs when checking, then the check's verdict. */
void mt_emu_report_print(FILE *out, const mt_emu_report *r);
/* The same as JSON. */
json_t *mt_emu_report_json(const mt_emu_report *r);

#endif
