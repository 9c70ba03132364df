/* serve/guard.h — who may drive `mitosis serve`: the Host, Origin and content-type rules that keep
 * a web page the user happens to visit from reading or changing the server (issue 42).
 *
 * Rules, checked on every request before its body is read (mt_guard_check):
 *  - Host (DNS rebinding): the Host header must name this server: "localhost", a loopback address
 *    (127.0.0.0/8, [::1]) or the address it listens on (any IP address when it listens on all,
 *    0.0.0.0 or ::), with its port (no port only when it listens on 80). A name that is not an
 *    address (evil.example, rebound to 127.0.0.1) is refused: 421. A request without Host: 400.
 *  - State-changing requests (POST, PUT, PATCH, DELETE): an Origin header, when sent, must be this
 *    server's (http:// and an accepted Host as above); without Origin, a Sec-Fetch-Site other than
 *    same-origin or none, or a Referer naming another site, is refused: 403.
 *  - A JSON body (POST /api/runs, /api/check) must be sent as Content-Type: application/json
 *    (a cross-site page can send text/plain or a form without asking the browser first; it cannot
 *    send application/json without a CORS preflight, which this server never grants): 415.
 *  - An upload (multipart/form-data, which a cross-site form can send) needs the header
 *    X-Mitosis-Token carrying this server's token (random, per server, in the page's
 *    <meta name="mitosis-token">) or an Origin header that is this server's: 403.
 * Invariant: the token is MT_GUARD_TOKEN_LEN hex characters, fixed for the server's life.
 * Thread safety: a guard is read-only after mt_guard_init. Costs: O(header lengths).
 */
#ifndef MT_SERVE_GUARD_H
#define MT_SERVE_GUARD_H

#include <stddef.h>

#include "util/err.h"

enum { MT_GUARD_TOKEN_LEN = 32, MT_GUARD_MSG_MAX = 320 };

/* The placeholder in page.html that the server's page copy carries the token in (same length). */
#define MT_GUARD_TOKEN_PLACEHOLDER "@@MITOSIS-TOKEN-PLACEHOLDER-32@@"

typedef struct mt_guard {
    char listen[64];     /* the address listened on, as given (or 127.0.0.1 for "localhost") */
    int any;             /* it listens on every address (0.0.0.0, ::) */
    int port;            /* read and set only through mt_guard_port / mt_guard_set_port (atomic) */
    char token[MT_GUARD_TOKEN_LEN + 1];
} mt_guard;

/* What a request's rules look at: its method, its headers (NULL when absent) and its body kind. */
typedef enum { MT_GUARD_NO_BODY = 0, MT_GUARD_JSON, MT_GUARD_UPLOAD } mt_guard_body;

typedef struct mt_guard_req {
    const char *method;
    mt_guard_body body;
    const char *host, *origin, *referer, *fetch_site, *content_type, *token;
} mt_guard_req;

/* A fresh token (from the kernel's random source); MT_EIO when it cannot be read. */
mt_status mt_guard_init(mt_guard *g, const char *listen, int port, mt_error *err);
/* The port requests must name, set once the daemon has bound it (port 0: the one it chose) while
 * its request threads already run: an atomic store and load (release / acquire). */
int mt_guard_port(const mt_guard *g);
void mt_guard_set_port(mt_guard *g, int port);
/* 1 when host (a Host header's value, "name:port") names this server. */
int mt_guard_host_ok(const mt_guard *g, const char *host);
/* 0 when the request may go on; else its HTTP status (400, 403, 415, 421) and one line in msg. */
unsigned mt_guard_check(const mt_guard *g, const mt_guard_req *r, char *msg, size_t len);

#endif
