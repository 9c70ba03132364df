/* serve/guard.c — see guard.h. */
#include "serve/guard.h"

#include <arpa/inet.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/random.h>

int mt_guard_port(const mt_guard *g) { return __atomic_load_n(&g->port, __ATOMIC_ACQUIRE); }

void mt_guard_set_port(mt_guard *g, int port) { __atomic_store_n(&g->port, port, __ATOMIC_RELEASE); }

mt_status mt_guard_init(mt_guard *g, const char *listen, int port, mt_error *err) {
    memset(g, 0, sizeof *g);
    snprintf(g->listen, sizeof g->listen, "%s", strcmp(listen, "localhost") ? listen : "127.0.0.1");
    g->any = !strcmp(g->listen, "0.0.0.0") || !strcmp(g->listen, "::");
    g->port = port;
    unsigned char raw[MT_GUARD_TOKEN_LEN / 2];
    if (getrandom(raw, sizeof raw, 0) != (ssize_t)sizeof raw)
        return mt_fail(err, MT_EIO, "cannot read the kernel's random source for the server's token");
    for (size_t k = 0; k < sizeof raw; k++) snprintf(g->token + 2 * k, 3, "%02x", raw[k]);
    return MT_OK;
}

/* name (an address literal, unbracketed) as family af's bytes into a; 0 when it is none. */
static int addr_of(const char *name, int af, unsigned char *a) { return inet_pton(af, name, a) == 1; }

/* An address literal or "localhost" that is this machine's loopback or the listening address. */
static int name_ok(const mt_guard *g, const char *name, int bracketed) {
    unsigned char a[16], l[16];
    if (!bracketed && !strcasecmp(name, "localhost")) return 1;
    int af = bracketed ? AF_INET6 : AF_INET;
    if (!addr_of(name, af, a)) return 0;
    if (g->any) return 1;
    if (af == AF_INET ? a[0] == 127 : !memcmp(a, (const unsigned char[16]){[15] = 1}, 16)) return 1;
    return addr_of(g->listen, af, l) && !memcmp(a, l, af == AF_INET ? 4 : 16);
}

int mt_guard_host_ok(const mt_guard *g, const char *host) {
    char name[64];
    const char *rest;
    int bracketed = host[0] == '[';
    if (bracketed) {
        const char *end = strchr(host, ']');
        if (!end || (size_t)(end - host - 1) >= sizeof name) return 0;
        memcpy(name, host + 1, (size_t)(end - host - 1));
        name[end - host - 1] = 0;
        rest = end + 1;
    } else {
        size_t n = strcspn(host, ":");
        if (n >= sizeof name) return 0;
        memcpy(name, host, n);
        name[n] = 0;
        rest = host + n;
    }
    long port = 80;
    if (*rest) {
        char *end = NULL;
        if (rest[0] != ':' || rest[1] < '0' || rest[1] > '9' || strlen(rest) > 6) return 0;
        port = strtol(rest + 1, &end, 10);
        if (*end) return 0;
    }
    return port == mt_guard_port(g) && name_ok(g, name, bracketed);
}

/* "http://HOST" followed by nothing (an Origin) or by a path, query or fragment (a Referer). */
static int url_ok(const mt_guard *g, const char *url, int path_allowed) {
    if (strncasecmp(url, "http://", 7)) return 0;
    const char *h = url + 7;
    size_t n = strcspn(h, "/?#");
    if (h[n] && !path_allowed) return 0;
    char host[128];
    if (n == 0 || n >= sizeof host) return 0;
    memcpy(host, h, n);
    host[n] = 0;
    return mt_guard_host_ok(g, host);
}

static int changes_state(const char *method) {
    return strcmp(method, "GET") && strcmp(method, "HEAD") && strcmp(method, "OPTIONS");
}

/* "application/json", optionally with parameters ("; charset=utf-8"). */
static int is_json_type(const char *t) {
    static const char J[] = "application/json";
    if (!t || strncasecmp(t, J, sizeof J - 1)) return 0;
    t += sizeof J - 1;
    while (*t == ' ') t++;
    return !*t || *t == ';';
}

/* The token compared in time independent of where it differs. */
static int token_ok(const mt_guard *g, const char *t) {
    if (!t || strlen(t) != MT_GUARD_TOKEN_LEN) return 0;
    unsigned diff = 0;
    for (int k = 0; k < MT_GUARD_TOKEN_LEN; k++) diff |= (unsigned)(t[k] ^ g->token[k]);
    return diff == 0;
}

unsigned mt_guard_check(const mt_guard *g, const mt_guard_req *r, char *msg, size_t len) {
    char here[96];
    int v6 = strchr(g->listen, ':') != NULL;
    snprintf(here, sizeof here, "http://%s%s%s:%d/", v6 ? "[" : "", g->any ? (v6 ? "::1" : "127.0.0.1") : g->listen,
             v6 ? "]" : "", mt_guard_port(g));
    if (!r->host || !*r->host)
        return snprintf(msg, len, "a request needs a Host header naming this server (%s)", here), 400;
    if (!mt_guard_host_ok(g, r->host))
        return snprintf(msg, len, "Host '%.80s' is not this server's address: open %s (names other than localhost "
                        "and the address are refused, against DNS rebinding)", r->host, here), 421;
    if (!changes_state(r->method)) return 0;
    if (r->origin) {
        if (!url_ok(g, r->origin, 0))
            return snprintf(msg, len, "Origin '%.80s' is not this server: only its own page (%s) may change it",
                            r->origin, here), 403;
    } else if (r->fetch_site && strcmp(r->fetch_site, "same-origin") && strcmp(r->fetch_site, "none")) {
        return snprintf(msg, len, "a %.20s request (Sec-Fetch-Site) is refused: only this server's page (%s) may "
                        "change it", r->fetch_site, here), 403;
    } else if (r->referer && !url_ok(g, r->referer, 1)) {
        return snprintf(msg, len, "a request from another site (Referer '%.80s') is refused: only this server's page "
                        "(%s) may change it", r->referer, here), 403;
    }
    if (r->body == MT_GUARD_JSON && !is_json_type(r->content_type))
        return snprintf(msg, len, "the body must be sent as Content-Type: application/json (got '%.60s')",
                        r->content_type ? r->content_type : "none"), 415;
    if (r->body == MT_GUARD_UPLOAD && !token_ok(g, r->token) && !r->origin)
        return snprintf(msg, len, "an upload needs the header X-Mitosis-Token with this server's token (the page's "
                        "<meta name=\"mitosis-token\">), or this server's Origin"), 403;
    return 0;
}
