/* netmodels/topofile.c — topology files: JSON (jansson) and CSV link lists (libcsv).
 * Formats in topologies.h. Every error names the file and the JSON path or CSV line. */
#include <csv.h>
#include <jansson.h>
#include <stdlib.h>
#include <string.h>

#include "netmodels/topologies.h"
#include "util/fileio.h"
#include "util/units.h"

static mt_node_kind kind_from_name(const char *n) {
    if (!strncmp(n, "nic", 3)) return MT_NODE_NIC;
    if (!strncmp(n, "host", 4) || !strncmp(n, "cpu", 3)) return MT_NODE_HOST;
    if (!strncmp(n, "sw", 2)) return MT_NODE_SWITCH;
    return MT_NODE_GPU;
}

static int kind_from_word(const char *w, mt_node_kind *k) {
    static const char *words[] = {"gpu", "nic", "host", "switch"};
    for (int i = 0; i < 4; i++)
        if (!strcmp(w, words[i])) {
            *k = (mt_node_kind)i;
            return 1;
        }
    if (!strcmp(w, "cpu")) {
        *k = MT_NODE_HOST;
        return 1;
    }
    return 0;
}

/* A bandwidth written without a unit is bytes/s in a topology file (documented, topologies.h), but
 * one below this is refused: 100 B/s is no interconnect, it is a forgotten unit ("100GB/s"). */
#define BARE_BW_MIN_BPS 1e6

/* A bandwidth from a file's text or number (bare: without a unit), refused when bare and below
 * BARE_BW_MIN_BPS. */
static mt_status file_bw(const char *text, double num, int is_text, double *out, mt_error *e) {
    int bare = 1;
    if (is_text) MT_CHECK(mt_parse_bandwidth_Bps(text, out, &bare, e));
    else *out = num;
    if (!bare || *out >= BARE_BW_MIN_BPS) return MT_OK;
    char t[40], hint[160];
    if (!is_text) snprintf(t, sizeof t, "%.17g", num);
    return mt_fail(e, MT_EFORMAT, "bandwidth %s has no unit, so it reads as %g B/s, too slow for any link (a number "
                   "without a unit is bytes/s and must be at least 1e6): %s", is_text ? text : t, *out,
                   mt_bandwidth_unit_hint(is_text ? text : t, hint, sizeof hint));
}

/* A quantity from a JSON value: string with units, or a number in the base unit. */
static mt_status json_qty(const char *path, const char *where, json_t *v, int is_bw, double *out,
                          mt_error *err) {
    mt_error e = {0};
    mt_status rc;
    if (json_is_string(v))
        rc = is_bw ? file_bw(json_string_value(v), 0, 1, out, &e) : mt_parse_time_ns(json_string_value(v), out, &e);
    else if (json_is_number(v) && json_number_value(v) >= (is_bw ? 1e-300 : 0))
        rc = is_bw ? file_bw(NULL, json_number_value(v), 0, out, &e) : (*out = json_number_value(v), MT_OK);
    else
        rc = mt_fail(&e, MT_EFORMAT, "expected a %s like %s", is_bw ? "bandwidth" : "latency",
                     is_bw ? "\"100GB/s\"" : "\"500ns\"");
    if (rc == MT_OK && (is_bw ? *out > 1e18 : *out * 1e3 > (double)MT_LINK_LAT_MAX_PS))
        rc = mt_fail(&e, MT_EFORMAT, "%s is out of range (a link has 0 to 1e18 B/s and 0 to 1 s)",
                     is_bw ? "the bandwidth" : "the latency");
    if (rc != MT_OK) return mt_fail(err, MT_EFORMAT, "%s: %s: %s", path, where, e.msg);
    return MT_OK;
}

static mt_status load_json_into(mt_topo *t, const char *path, json_t *root, const mt_topo_params *p,
                                mt_error *err) {
    char where[96];
    double def_bw = p->link_bw_Bps > 0 ? p->link_bw_Bps : mt_topo_file_tier.bw_Bps;
    double def_lat = p->link_lat_ns >= 0 ? p->link_lat_ns : mt_topo_file_tier.lat_ns;
    if (!json_is_object(root))
        return mt_fail(err, MT_EFORMAT, "%s: the top level must be an object with \"nodes\" and "
                       "\"links\"", path);
    json_t *defs = json_object_get(root, "defaults");
    if (defs) {
        json_t *v;
        if ((v = json_object_get(defs, "bandwidth")) && p->link_bw_Bps <= 0)
            MT_CHECK(json_qty(path, "defaults.bandwidth", v, 1, &def_bw, err));
        if ((v = json_object_get(defs, "latency")) && p->link_lat_ns < 0)
            MT_CHECK(json_qty(path, "defaults.latency", v, 0, &def_lat, err));
    }
    json_t *nodes = json_object_get(root, "nodes"), *links = json_object_get(root, "links");
    if (!json_is_array(nodes) || !json_is_array(links))
        return mt_fail(err, MT_EFORMAT, "%s: needs arrays \"nodes\" and \"links\"", path);
    size_t i;
    json_t *n;
    json_array_foreach(nodes, i, n) {
        const char *name = json_is_string(n) ? json_string_value(n)
                                             : json_string_value(json_object_get(n, "name"));
        if (!name || !*name)
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu]: expected a name or {\"name\": ...}",
                           path, i);
        mt_node_kind k = kind_from_name(name);
        json_t *kv = json_is_object(n) ? json_object_get(n, "kind") : NULL;
        if (kv && (!json_is_string(kv) || !kind_from_word(json_string_value(kv), &k)))
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu].kind: use gpu, nic, host or switch",
                           path, i);
        mt_error e = {0};
        if (mt_topo_add_node(t, k, name, &e) < 0)
            return mt_fail(err, MT_EFORMAT, "%s: nodes[%zu]: %s", path, i, e.msg);
    }
    json_t *l;
    json_array_foreach(links, i, l) {
        int32_t a = mt_topo_find(t, json_string_value(json_object_get(l, "src")));
        int32_t b = mt_topo_find(t, json_string_value(json_object_get(l, "dst")));
        if (a < 0 || b < 0)
            return mt_fail(err, MT_EFORMAT, "%s: links[%zu].%s: missing or unknown node", path, i,
                           a < 0 ? "src" : "dst");
        double bw = def_bw, lat = def_lat;
        json_t *v;
        snprintf(where, sizeof where, "links[%zu].bandwidth", i);
        if ((v = json_object_get(l, "bandwidth"))) MT_CHECK(json_qty(path, where, v, 1, &bw, err));
        snprintf(where, sizeof where, "links[%zu].latency", i);
        if ((v = json_object_get(l, "latency"))) MT_CHECK(json_qty(path, where, v, 0, &lat, err));
        json_t *dup = json_object_get(l, "duplex");
        mt_error e = {0};
        mt_time_ps lat_ps = (mt_time_ps)(lat * 1000 + 0.5);
        mt_status rc = (dup && json_is_false(dup))
                           ? (mt_topo_add_link(t, a, b, bw, lat_ps, &e) < 0 ? e.code : MT_OK)
                           : mt_topo_add_duplex(t, a, b, bw, lat_ps, &e);
        if (rc != MT_OK) return mt_fail(err, MT_EFORMAT, "%s: links[%zu]: %s", path, i, e.msg);
    }
    json_t *ov = json_object_get(root, "overrides");
    if (ov && !json_is_array(ov))
        return mt_fail(err, MT_EFORMAT, "%s: \"overrides\" must be an array", path);
    json_array_foreach(ov, i, l) {
        int32_t a = mt_topo_find(t, json_string_value(json_object_get(l, "src")));
        int32_t b = mt_topo_find(t, json_string_value(json_object_get(l, "dst")));
        int found = 0;
        for (int32_t k = 0; k < mt_topo_nlinks(t); k++) {
            mt_link *lk = mt_topo_link_mut(t, k);
            if (lk->src != a || lk->dst != b) continue;
            json_t *v;
            double q;
            snprintf(where, sizeof where, "overrides[%zu].bandwidth", i);
            if ((v = json_object_get(l, "bandwidth"))) {
                MT_CHECK(json_qty(path, where, v, 1, &q, err));
                lk->bw_Bps = q;
            }
            snprintf(where, sizeof where, "overrides[%zu].latency", i);
            if ((v = json_object_get(l, "latency"))) {
                MT_CHECK(json_qty(path, where, v, 0, &q, err));
                lk->lat_ps = (mt_time_ps)(q * 1000 + 0.5);
            }
            found = 1;
        }
        if (!found)
            return mt_fail(err, MT_EFORMAT, "%s: overrides[%zu]: no link from src to dst", path, i);
    }
    return MT_OK;
}

mt_status mt_topo_load_json(const char *path, const mt_topo_params *p, mt_topo **out,
                            mt_error *err) {
    *out = NULL;
    json_t *root;
    MT_CHECK(mt_json_load_config(path, &root, err));
    mt_topo *t = mt_topo_new(path);
    mt_status rc = t ? load_json_into(t, path, root, p, err)
                     : mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    json_decref(root);
    if (rc != MT_OK) {
        mt_topo_free(t);
        return rc;
    }
    mt_topo_set_routing(t, p->metric, p->ecmp);
    *out = t;
    return MT_OK;
}

/* ---- CSV ---- */
typedef struct csv_ctx {
    mt_topo *t;
    const char *path;
    char *f[6];
    int nf;
    long line;
    mt_status rc;
    mt_error *err;
} csv_ctx;

static void csv_field(void *s, size_t len, void *data) {
    csv_ctx *c = data;
    if (c->nf < 6) {
        c->f[c->nf] = strndup(s ? s : "", len);
        if (!c->f[c->nf] && c->rc == MT_OK)
            c->rc = mt_fail(c->err, MT_ENOMEM, "%s: out of memory", c->path);
    }
    c->nf++;
}

static int32_t csv_node(csv_ctx *c, const char *name) {
    int32_t id = mt_topo_find(c->t, name);
    if (id >= 0) return id;
    mt_error e = {0};
    id = mt_topo_add_node(c->t, kind_from_name(name), name, &e);
    if (id < 0) c->rc = mt_fail(c->err, MT_EFORMAT, "%s:%ld: %s", c->path, c->line, e.msg);
    return id;
}

static void csv_row(int term, void *data) {
    (void)term;
    csv_ctx *c = data;
    c->line++;
    int n = c->nf < 6 ? c->nf : 6;
    if (c->rc != MT_OK) goto done;
    if (c->nf == 1 && c->f[0] && !*c->f[0]) goto done; /* blank line */
    if (c->line == 1 && c->nf >= 1 && !strcmp(c->f[0], "src")) goto done; /* header */
    if (c->nf < 4 || c->nf > 5 || !*c->f[0] || !*c->f[1]) {
        c->rc = mt_fail(c->err, MT_EFORMAT, "%s:%ld: expected src,dst,bandwidth,latency[,directed] "
                        "(got %d fields)", c->path, c->line, c->nf);
        goto done;
    }
    double bw, lat;
    mt_error e = {0};
    if (file_bw(c->f[2], 0, 1, &bw, &e) != MT_OK || mt_parse_time_ns(c->f[3], &lat, &e) != MT_OK) {
        c->rc = mt_fail(c->err, MT_EFORMAT, "%s:%ld: %s", c->path, c->line, e.msg);
        goto done;
    }
    int directed = c->nf == 5 && !strcmp(c->f[4], "directed");
    if (c->nf == 5 && !directed && strcmp(c->f[4], "duplex")) {
        c->rc = mt_fail(c->err, MT_EFORMAT, "%s:%ld: 5th field must be directed or duplex",
                        c->path, c->line);
        goto done;
    }
    int32_t a = csv_node(c, c->f[0]), b = a >= 0 ? csv_node(c, c->f[1]) : -1;
    if (a < 0 || b < 0) goto done;
    mt_time_ps lat_ps = (mt_time_ps)(lat * 1000 + 0.5);
    mt_status rc = directed ? (mt_topo_add_link(c->t, a, b, bw, lat_ps, &e) < 0 ? e.code : MT_OK)
                            : mt_topo_add_duplex(c->t, a, b, bw, lat_ps, &e);
    if (rc != MT_OK) c->rc = mt_fail(c->err, MT_EFORMAT, "%s:%ld: %s", c->path, c->line, e.msg);
done:
    for (int i = 0; i < n; i++) free(c->f[i]);
    c->nf = 0;
}

mt_status mt_topo_load_csv(const char *path, const mt_topo_params *p, mt_topo **out,
                           mt_error *err) {
    *out = NULL;
    char *buf;
    size_t len;
    MT_CHECK(mt_read_config(path, &buf, &len, err));
    csv_ctx c = {.t = mt_topo_new(path), .path = path, .err = err};
    struct csv_parser parser;
    if (!c.t || csv_init(&parser, CSV_APPEND_NULL) != 0) {
        free(buf);
        mt_topo_free(c.t);
        return mt_fail(err, MT_ENOMEM, "%s: out of memory", path);
    }
    if (csv_parse(&parser, buf, len, csv_field, csv_row, &c) != len && c.rc == MT_OK)
        c.rc = mt_fail(err, MT_EFORMAT, "%s:%ld: %s", path, c.line + 1,
                       csv_strerror(csv_error(&parser)));
    if (c.rc == MT_OK) csv_fini(&parser, csv_field, csv_row, &c);
    for (int i = 0; i < c.nf && i < 6; i++) free(c.f[i]);
    csv_free(&parser);
    free(buf);
    if (c.rc == MT_OK && mt_topo_nlinks(c.t) == 0)
        c.rc = mt_fail(err, MT_EFORMAT, "%s: no links (expected rows src,dst,bandwidth,latency)", path);
    if (c.rc != MT_OK) {
        mt_topo_free(c.t);
        return c.rc;
    }
    mt_topo_set_routing(c.t, p->metric, p->ecmp);
    *out = c.t;
    return MT_OK;
}
