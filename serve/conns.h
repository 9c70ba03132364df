/* serve/conns.h — the server's connections watched: a deadline on each request's headers, and
 * the connections refused at the limits counted rather than logged one line each (issue 42).
 *
 * libmicrohttpd's idle timeout restarts with every byte, so a client that trickles a header line
 * every few seconds holds its connection for ever; 300 of them from distinct loopback addresses
 * fill the 256-connection limit past any per-address cap. Here every connection's header phase
 * (from its accept, or from the end of its previous request on a kept-alive connection, to the
 * first call of the request's handler, when the headers are all in) must end within header_s: a
 * watcher thread shuts the socket down past it (libmicrohttpd then sees the end of the stream and
 * closes the connection), unless bytes wait unread in the socket (then the server's HTTP thread
 * is the slow one, busy with another request: the client is not blamed). A request's body is not under this deadline (an upload may take
 * minutes), only under the idle timeout.
 * libmicrohttpd logs one line per connection refused at its limits (the global one and the
 * per-address one), and one per connection that ends mid-request; mt_conns_log takes its log
 * (MHD_OPTION_EXTERNAL_LOGGER), counts those, and prints any other message only the first time
 * its format is seen, counting its repeats (a client can cause one per connection). The watcher
 * prints at most one summary line every MT_CONNS_SUMMARY_S seconds, only when something was
 * refused, closed or repeated since the last one, and one at mt_conns_free.
 * Invariant: a watched socket is only shut down while it is registered, and it is unregistered
 * (MHD_CONNECTION_NOTIFY_CLOSED, under the lock) before libmicrohttpd closes it, so the watcher
 * never touches a closed or reused descriptor.
 * Thread safety: every function may be called from any thread (one mutex).
 * Costs: O(1) per callback; the watcher O(open connections) every MT_CONNS_TICK_MS.
 */
#ifndef MT_SERVE_CONNS_H
#define MT_SERVE_CONNS_H

#include <stdarg.h>
#include <stdint.h>

#include <microhttpd.h>

#include "util/err.h"

enum { MT_CONNS_TICK_MS = 200, MT_CONNS_SUMMARY_S = 10 };

typedef struct mt_conns mt_conns;

typedef struct mt_conns_stats {
    int64_t open;             /* connections now */
    int64_t refused;          /* refused at the global or the per-address limit, since the start */
    int64_t slow_headers;     /* closed for headers past the deadline, since the start */
    int64_t dropped;          /* ended mid-request (the client gone, or shut at the deadline) */
    int64_t repeats;          /* other libmicrohttpd messages not printed (their format seen before) */
} mt_conns_stats;

/* Starts the watcher: headers must arrive within header_s (> 0) of a connection's start or of its
 * previous request's end. */
mt_status mt_conns_new(double header_s, mt_conns **out, mt_error *err);
/* Stops the watcher and prints the last summary line; call after libmicrohttpd stopped. */
void mt_conns_free(mt_conns *w);

/* MHD_OPTION_NOTIFY_CONNECTION's callback (cls: the mt_conns). */
void mt_conns_notify(void *cls, struct MHD_Connection *c, void **socket_context,
                     enum MHD_ConnectionNotificationCode toe);
/* The request's headers are in (the handler's first call): its connection leaves the deadline. */
void mt_conns_head_done(mt_conns *w, struct MHD_Connection *c);
/* The request ended (the completion callback): the next request's headers start now. */
void mt_conns_request_done(mt_conns *w, struct MHD_Connection *c);
/* MHD_OPTION_EXTERNAL_LOGGER's callback (cls: the mt_conns). */
void mt_conns_log(void *cls, const char *fmt, va_list ap);

void mt_conns_get(mt_conns *w, mt_conns_stats *out);

#endif
