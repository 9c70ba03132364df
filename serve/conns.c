/* serve/conns.c — see conns.h. */
#include "serve/conns.h"

#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <time.h>

#include "util/budget.h"

enum { MT_CONNS_SEEN_MAX = 64 };

typedef struct conn {
    int fd;
    double t0_s;              /* when its current header phase began */
    int in_head;              /* waiting for a request's headers */
    int shut;                 /* shut down for its deadline */
    struct conn *prev, *next;
} conn;

struct mt_conns {
    pthread_mutex_t mu;
    pthread_cond_t cv;
    pthread_t th;
    int stop;
    double header_s;
    conn *head;
    mt_conns_stats st;
    int64_t said_refused, said_slow, said_dropped, said_repeats; /* as of the last summary line */
    const char *seen[MT_CONNS_SEEN_MAX]; /* libmicrohttpd's message formats printed once already */
    int n_seen;
    double said_s;
};

/* Under the lock: one line when something was refused or closed since the last one. */
static void summary(mt_conns *w) {
    int64_t refused = w->st.refused - w->said_refused, slow = w->st.slow_headers - w->said_slow,
            dropped = w->st.dropped - w->said_dropped;
    int64_t repeats = w->st.repeats - w->said_repeats;
    if (!refused && !slow && !repeats) return;
    fprintf(stderr, "mitosis serve: in the last %.0f s, %lld connection(s) refused at the limits (--per-ip, 256 at "
            "once), %lld closed for headers not in within %.0f s (--timeout), %lld ended mid-request, %lld other "
            "libmicrohttpd message(s) repeated\n", mt_budget_now_s() - w->said_s, (long long)refused, (long long)slow,
            w->header_s, (long long)dropped, (long long)repeats);
    w->said_repeats = w->st.repeats;
    w->said_refused = w->st.refused;
    w->said_slow = w->st.slow_headers;
    w->said_dropped = w->st.dropped;
    w->said_s = mt_budget_now_s();
}

static void *watch(void *arg) {
    mt_conns *w = arg;
    pthread_mutex_lock(&w->mu);
    while (!w->stop) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += MT_CONNS_TICK_MS * 1000000L;
        ts.tv_sec += ts.tv_nsec / 1000000000L;
        ts.tv_nsec %= 1000000000L;
        pthread_cond_timedwait(&w->cv, &w->mu, &ts);
        double now = mt_budget_now_s();
        for (conn *c = w->head; c; c = c->next) {
            if (!c->in_head || c->shut || now - c->t0_s <= w->header_s) continue;
            int unread = 0; /* bytes the server has not read yet: its HTTP thread is busy, not the client slow */
            if (ioctl(c->fd, FIONREAD, &unread) == 0 && unread > 0) continue;
            shutdown(c->fd, SHUT_RDWR); /* registered, so still open (conns.h) */
            c->shut = 1;
            w->st.slow_headers++;
        }
        if (now - w->said_s >= MT_CONNS_SUMMARY_S) summary(w);
    }
    summary(w);
    pthread_mutex_unlock(&w->mu);
    return NULL;
}

mt_status mt_conns_new(double header_s, mt_conns **out, mt_error *err) {
    mt_conns *w = calloc(1, sizeof *w);
    if (!w) return mt_fail(err, MT_ENOMEM, "out of memory");
    w->header_s = header_s > 0 ? header_s : 10;
    w->said_s = mt_budget_now_s();
    pthread_mutex_init(&w->mu, NULL);
    pthread_cond_init(&w->cv, NULL);
    if (pthread_create(&w->th, NULL, watch, w) != 0) {
        pthread_cond_destroy(&w->cv);
        pthread_mutex_destroy(&w->mu);
        free(w);
        return mt_fail(err, MT_ENOMEM, "cannot start the connection watcher thread");
    }
    *out = w;
    return MT_OK;
}

void mt_conns_free(mt_conns *w) {
    if (!w) return;
    pthread_mutex_lock(&w->mu);
    w->stop = 1;
    pthread_cond_signal(&w->cv);
    pthread_mutex_unlock(&w->mu);
    pthread_join(w->th, NULL);
    for (conn *c = w->head, *n; c; c = n) { /* none once libmicrohttpd stopped; freed all the same */
        n = c->next;
        free(c);
    }
    pthread_cond_destroy(&w->cv);
    pthread_mutex_destroy(&w->mu);
    free(w);
}

void mt_conns_notify(void *cls, struct MHD_Connection *mc, void **socket_context,
                     enum MHD_ConnectionNotificationCode toe) {
    mt_conns *w = cls;
    conn *c = *socket_context;
    if (toe == MHD_CONNECTION_NOTIFY_STARTED) {
        const union MHD_ConnectionInfo *fd = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_CONNECTION_FD);
        if (!fd || !(c = calloc(1, sizeof *c))) return; /* unwatched: only the idle timeout holds it */
        c->fd = fd->connect_fd;
        c->in_head = 1;
        c->t0_s = mt_budget_now_s();
        pthread_mutex_lock(&w->mu);
        c->next = w->head;
        if (w->head) w->head->prev = c;
        w->head = c;
        w->st.open++;
        pthread_mutex_unlock(&w->mu);
        *socket_context = c;
        return;
    }
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    if (c->prev) c->prev->next = c->next;
    else w->head = c->next;
    if (c->next) c->next->prev = c->prev;
    w->st.open--;
    pthread_mutex_unlock(&w->mu);
    free(c);
    *socket_context = NULL;
}

static conn *conn_of(struct MHD_Connection *mc) {
    const union MHD_ConnectionInfo *i = MHD_get_connection_info(mc, MHD_CONNECTION_INFO_SOCKET_CONTEXT);
    return i ? i->socket_context : NULL;
}

static void set_head(mt_conns *w, struct MHD_Connection *mc, int in_head) {
    conn *c = conn_of(mc);
    if (!c) return;
    pthread_mutex_lock(&w->mu);
    c->in_head = in_head;
    c->t0_s = mt_budget_now_s();
    pthread_mutex_unlock(&w->mu);
}

void mt_conns_head_done(mt_conns *w, struct MHD_Connection *mc) { set_head(w, mc, 0); }
void mt_conns_request_done(mt_conns *w, struct MHD_Connection *mc) { set_head(w, mc, 1); }

void mt_conns_log(void *cls, const char *fmt, va_list ap) {
    mt_conns *w = cls;
    /* libmicrohttpd's words (daemon.c, connection.c 0.9.75) for both limits, and for a connection
     * that ended mid-request (a client gone, or one the deadline shut) */
    int refused = strstr(fmt, "connection limit") != NULL;
    if (refused || strstr(fmt, "socket is closed") || strstr(fmt, "closed by remote")) {
        pthread_mutex_lock(&w->mu);
        if (refused) w->st.refused++;
        else w->st.dropped++;
        pthread_mutex_unlock(&w->mu);
        return;
    }
    /* any other message: printed the first time its format is seen, then only counted (a client can
     * cause one per connection: a malformed request, a response it stopped reading) */
    pthread_mutex_lock(&w->mu);
    int seen = 0;
    for (int k = 0; k < w->n_seen && !seen; k++) seen = w->seen[k] == fmt;
    int fresh = !seen && w->n_seen < MT_CONNS_SEEN_MAX;
    if (fresh) w->seen[w->n_seen++] = fmt;
    else w->st.repeats++;
    pthread_mutex_unlock(&w->mu);
    if (!fresh) return;
    fprintf(stderr, "mitosis serve: libmicrohttpd: ");
    vfprintf(stderr, fmt, ap);
}

void mt_conns_get(mt_conns *w, mt_conns_stats *out) {
    pthread_mutex_lock(&w->mu);
    *out = w->st;
    pthread_mutex_unlock(&w->mu);
}
