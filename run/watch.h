/* run/watch.h — a compare job watched from a terminal, over report/progress.h: the "loading
 * TRACE" phase, every row's cost before the rows run (the estimate line), then the rows done and
 * the time left ("plans: 3/61 done, 1.2 s, about 20 s left: ddp=4:tp=2").
 *
 * Use: mt_watch_init before mt_job_parse (it installs the job's progress callback), mt_watch_load
 * in place of mt_job_load, mt_watch_estimate before mt_job_run, mt_watch_end after it.
 * Invariant: tty gets lines only when it is a terminal (a piped stderr stays empty); the one line
 * written elsewhere is --dry-run's estimate, on stdout, which is then the answer.
 */
#ifndef MT_RUN_WATCH_H
#define MT_RUN_WATCH_H

#include <stdio.h>

#include "report/progress.h"
#include "run/job.h"

typedef struct mt_watch {
    FILE *tty;                   /* the terminal's stream (stderr) */
    const mt_compare_config *cc; /* the job's */
    mt_progress progress;
    int started;                 /* the rows have begun: the clock restarted with them */
    int dry_run;                 /* --dry-run: the estimate goes to stdout, alone */
} mt_watch;

/* Watches the compare job j on tty (its progress callback set). */
void mt_watch_init(mt_watch *w, mt_job *j, FILE *tty);
/* mt_job_load with a "loading TRACE" phase on the terminal; st: the status so far (not MT_OK:
 * nothing is loaded, st returned). */
mt_status mt_watch_load(mt_watch *w, mt_job *j, mt_status st, mt_error *err);
/* The estimate line before the rows run, when root (the process that prints: rank 0) and either
 * --dry-run (stdout) or tty is a terminal. */
void mt_watch_estimate(mt_watch *w, mt_job *j, int root);
/* Clears the progress line. */
void mt_watch_end(mt_watch *w);

#endif
