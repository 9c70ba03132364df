/* run/pool.c — see pool.h. */
#include "run/pool.h"

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "util/budget.h"

struct mt_pool {
    const mt_pool_map_cfg *cfg;
    pthread_mutex_t claim;  /* next, done, fail_at, err */
    int32_t next, done;
    int32_t fail_at;        /* the lowest failing item, n when none */
    mt_budget *budget;      /* the caller's (util/budget.h), bound in every worker */
    mt_error err;           /* its error */
};

int32_t mt_pool_cores(void) {
    long n = sysconf(_SC_NPROCESSORS_ONLN);
    return n < 1 ? 1 : n > 4096 ? 4096 : (int32_t)n;
}

/* One lock for the whole process (igraph's globals are the process's), recursive so that a thread
 * holding it for a whole run (serve/jobs.c: a --routing latency run) may enter the sections inside. */
static pthread_mutex_t serial_mu;
static pthread_once_t serial_once = PTHREAD_ONCE_INIT;

static void serial_init(void) {
    pthread_mutexattr_t a;
    pthread_mutexattr_init(&a);
    pthread_mutexattr_settype(&a, PTHREAD_MUTEX_RECURSIVE);
    pthread_mutex_init(&serial_mu, &a);
    pthread_mutexattr_destroy(&a);
}

void mt_pool_lock(mt_pool *pool) {
    (void)pool;
    pthread_once(&serial_once, serial_init);
    pthread_mutex_lock(&serial_mu);
}

void mt_pool_unlock(mt_pool *pool) {
    (void)pool;
    pthread_mutex_unlock(&serial_mu);
}

/* The next item to run, or -1 when none is left (or every later item is after a failure). */
static int32_t claim(mt_pool *p) {
    pthread_mutex_lock(&p->claim);
    int32_t i = p->next < p->fail_at ? p->next++ : -1;
    if (i >= 0 && p->cfg->start) p->cfg->start(p->cfg->start_ctx, i, p->done, p->cfg->n);
    pthread_mutex_unlock(&p->claim);
    return i;
}

static void finish(mt_pool *p, int32_t i, mt_status rc, const mt_error *e) {
    pthread_mutex_lock(&p->claim);
    p->done++;
    if (rc != MT_OK && i < p->fail_at) {
        p->fail_at = i;
        p->err = *e;
        p->err.code = rc;
    }
    pthread_mutex_unlock(&p->claim);
}

static void *worker(void *arg) {
    mt_pool *p = arg;
    mt_budget_bind(p->budget);
    for (int32_t i; (i = claim(p)) >= 0;) {
        mt_error e = {0};
        mt_status rc = mt_budget_check(&e); /* cancelled or past its wall limit: no further item */
        if (rc == MT_OK) rc = p->cfg->fn(p->cfg->ctx, p, i, &e);
        finish(p, i, rc, &e);
    }
    return NULL;
}

/* jobs <= 1: in order, in this thread, stopping at the first failure. */
static mt_status serial(const mt_pool_map_cfg *cfg, int32_t *failed, mt_error *err) {
    for (int32_t i = 0; i < cfg->n; i++) {
        if (cfg->start) cfg->start(cfg->start_ctx, i, i, cfg->n);
        mt_error e = {0};
        mt_status rc = mt_budget_check(&e);
        if (rc == MT_OK) rc = cfg->fn(cfg->ctx, NULL, i, &e);
        if (rc != MT_OK) {
            *failed = i;
            if (err) *err = e;
            return rc;
        }
    }
    return MT_OK;
}

mt_status mt_pool_map(const mt_pool_map_cfg *cfg, int32_t *failed, mt_error *err) {
    int32_t none;
    if (!failed) failed = &none;
    *failed = cfg->n;
    int32_t jobs = cfg->jobs < 1 ? 1 : cfg->jobs > cfg->n ? cfg->n : cfg->jobs;
    pthread_t *th = jobs > 1 ? calloc((size_t)jobs, sizeof *th) : NULL;
    if (!th) return serial(cfg, failed, err);
    mt_pool p = {.cfg = cfg, .fail_at = cfg->n, .budget = mt_budget_current()};
    pthread_mutex_init(&p.claim, NULL);
    int32_t started = 0;
    for (int32_t k = 1; k < jobs; k++) /* this thread is worker 0 */
        if (pthread_create(&th[started], NULL, worker, &p) == 0) started++;
    worker(&p);
    for (int32_t k = 0; k < started; k++) pthread_join(th[k], NULL);
    pthread_mutex_destroy(&p.claim);
    free(th);
    *failed = p.fail_at;
    if (p.fail_at == cfg->n) return MT_OK;
    if (err) *err = p.err;
    return p.err.code;
}
