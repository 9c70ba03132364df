/* netmodels/topospec.c — topology specs (see topologies.h): NAME[:ARG,...] checked against the
 * presets table (presets.c) parameter by parameter, or a file path; and mt_topo_build, which
 * resolves the tiers (flag, else the preset's default) and calls the preset's builder. */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"

void mt_topo_params_init(mt_topo_params *p) {
    memset(p, 0, sizeof *p);
    p->link_lat_ns = p->nic_lat_ns = -1;
}

int mt_topo_spec_is_file(const char *s) {
    size_t n = strlen(s);
    return strchr(s, '/') || (n > 5 && !strcmp(s + n - 5, ".json")) ||
           (n > 8 && !strcmp(s + n - 8, ".json.gz")) || (n > 4 && !strcmp(s + n - 4, ".csv"));
}

const mt_topo_preset *mt_topo_preset_find(const char *spec) {
    if (!spec || mt_topo_spec_is_file(spec)) return NULL;
    size_t len = strcspn(spec, ":");
    int32_t n;
    const mt_topo_preset *p = mt_topo_presets(&n);
    for (int32_t i = 0; i < n; i++)
        if (strlen(p[i].name) == len && !strncmp(p[i].name, spec, len)) return &p[i];
    return NULL;
}

const char *mt_topo_spec_gpu(const char *spec) {
    const mt_topo_preset *p = mt_topo_preset_find(spec);
    return p ? p->gpu : NULL;
}

/* The names of the presets (nic_only: those with a NIC tier), ", "-separated, into buf. */
static const char *names(char *buf, size_t len, int nic_only) {
    int32_t n;
    const mt_topo_preset *p = mt_topo_presets(&n);
    size_t at = 0;
    buf[0] = '\0';
    for (int32_t i = 0; i < n && at < len; i++)
        if (!nic_only || p[i].nic.bw_Bps > 0)
            at += (size_t)snprintf(buf + at, len - at, "%s%s", at ? ", " : "", p[i].name);
    return buf;
}

const char *mt_topo_presets_with_nic(char *buf, size_t len) { return names(buf, len, 1); }

/* "bad topology 'SPEC': why (use SYNTAX)", or the list of presets when there is no preset. */
__attribute__((format(printf, 4, 5))) static mt_status bad(mt_error *err, const char *text,
                                                           const mt_topo_preset *p, const char *fmt, ...) {
    char why[160], list[256];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof why, fmt, ap);
    va_end(ap);
    if (p) return mt_fail(err, MT_EINVAL, "bad topology '%s': %s (use %s)", text, why, p->syntax);
    return mt_fail(err, MT_EINVAL, "bad topology '%s': %s (presets: %s; or a .json/.csv file)", text, why,
                   names(list, sizeof list, 0));
}

typedef struct parse_state {
    const char *text;
    const mt_topo_preset *p;
    long *v;
    unsigned given; /* bit i: parameter i was given */
} parse_state;

static int param_count(const mt_topo_preset *p) {
    int n = 0;
    while (n < MT_PRESET_PARAMS_MAX && p->params[n].name) n++;
    return n;
}

/* Index of word w in "a|b|c", or -1. */
static long word_index(const char *words, const char *w) {
    long i = 0;
    size_t n = strlen(w);
    for (const char *s = words; s && *s; i++) {
        size_t len = strcspn(s, "|");
        if (len == n && !strncmp(s, w, n)) return i;
        s = s[len] ? s + len + 1 : NULL;
    }
    return -1;
}

/* Stores value text `val` into parameter i: a word of its choices, or a size in its range. */
static mt_status set_param(parse_state *st, int i, const char *val, mt_error *err) {
    const mt_preset_param *q = &st->p->params[i];
    if (st->given & (1u << i)) return bad(err, st->text, st->p, "%s is given twice", q->name);
    st->given |= 1u << i;
    if (q->words) {
        long k = word_index(q->words, val);
        if (k < 0) return bad(err, st->text, st->p, "%s must be one of %s (got '%.40s')", q->name, q->words, val);
        st->v[i] = k;
        return MT_OK;
    }
    char *end;
    errno = 0;
    long x = isdigit((unsigned char)*val) ? strtol(val, &end, 10) : -1;
    if (x < 0 || *end || errno) return bad(err, st->text, st->p, "'%.40s' is not a size", val);
    if (x < q->lo || x > q->hi) return bad(err, st->text, st->p, "%s must be %ld to %ld (got %ld)", q->name, q->lo, q->hi, x);
    if (q->even && x % 2) return bad(err, st->text, st->p, "%s must be even (got %ld)", q->name, x);
    st->v[i] = x;
    return MT_OK;
}

/* The next positional parameter not given yet, or -1. */
static int next_positional(const parse_state *st) {
    for (int i = 0; i < param_count(st->p); i++)
        if (st->p->params[i].positional && !(st->given & (1u << i))) return i;
    return -1;
}

/* One ARG: key=value, a word of a word parameter, or a size (`8`, or `4x4` for two). */
static mt_status take_arg(parse_state *st, char *tok, mt_error *err) {
    int n = param_count(st->p);
    char *eq = strchr(tok, '=');
    if (eq) {
        *eq = '\0';
        for (int i = 0; i < n; i++)
            if (!strcmp(st->p->params[i].name, tok)) return set_param(st, i, eq + 1, err);
        return bad(err, st->text, st->p, "%s takes no key '%.40s'", st->p->name, tok);
    }
    for (int i = 0; i < n; i++)
        if (st->p->params[i].words && word_index(st->p->params[i].words, tok) >= 0) return set_param(st, i, tok, err);
    char *x = strchr(tok, 'x');
    if (x) *x = '\0';
    for (const char *part = tok; part; part = x ? x + 1 : NULL) {
        int i = next_positional(st);
        if (i < 0)
            return bad(err, st->text, st->p, "%s takes no %s '%.40s'", st->p->name,
                       n ? "further size" : "argument", part);
        MT_CHECK(set_param(st, i, part, err));
        if (part != tok) break;
    }
    return MT_OK;
}

mt_status mt_topo_spec_parse(const char *text, mt_topo_spec *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    if (!text || !*text) return bad(err, "", NULL, "empty");
    const mt_topo_preset *p = mt_topo_preset_find(text);
    if (!p) return bad(err, text, NULL, "unknown preset '%.*s'", (int)strcspn(text, ":"), text);
    parse_state st = {text, p, out->v, 0};
    int n = param_count(p);
    for (int i = 0; i < n; i++) out->v[i] = p->params[i].def;
    const char *colon = strchr(text, ':');
    char buf[256];
    if (colon && strlen(colon + 1) >= sizeof buf) return bad(err, text, p, "arguments too long");
    snprintf(buf, sizeof buf, "%s", colon ? colon + 1 : "");
    for (char *save = NULL, *tok = strtok_r(buf, ",", &save); tok; tok = strtok_r(NULL, ",", &save))
        MT_CHECK(take_arg(&st, tok, err));
    for (int i = 0; i < n; i++)
        if (out->v[i] < 0) return bad(err, text, p, "%s needs %s", p->name, p->params[i].name);
    if (p->gpus(out->v) > MT_PRESET_MAX_GPUS)
        return bad(err, text, p, "too many GPUs (at most %d)", (int)MT_PRESET_MAX_GPUS);
    out->preset = p;
    return MT_OK;
}

static mt_tier resolve(double bw, double lat_ns, mt_tier def) {
    return (mt_tier){bw > 0 ? bw : def.bw_Bps, lat_ns >= 0 ? lat_ns : def.lat_ns};
}

mt_status mt_topo_build(const char *text, const mt_topo_params *p, mt_topo **out, mt_error *err) {
    *out = NULL;
    size_t n = text ? strlen(text) : 0;
    if (n && mt_topo_spec_is_file(text))
        return (n > 4 && !strcmp(text + n - 4, ".csv")) ? mt_topo_load_csv(text, p, out, err)
                                                        : mt_topo_load_json(text, p, out, err);
    mt_topo_spec s;
    MT_CHECK(mt_topo_spec_parse(text, &s, err));
    mt_topo *t = mt_topo_new(text);
    if (!t) return mt_fail(err, MT_ENOMEM, "out of memory building '%s'", text);
    mt_status rc = s.preset->build(t, s.v, resolve(p->link_bw_Bps, p->link_lat_ns, s.preset->link),
                                   resolve(p->nic_bw_Bps, p->nic_lat_ns, s.preset->nic), err);
    if (rc != MT_OK) {
        mt_topo_free(t);
        return rc;
    }
    mt_topo_set_routing(t, p->metric, p->ecmp);
    mt_topo_set_router(t, s.preset->preds, s.v, MT_PRESET_PARAMS_MAX);
    *out = t;
    return MT_OK;
}
