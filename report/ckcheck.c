/* report/ckcheck.c — what a Chakra consumer sees in per-rank ET files (see ckcheck.h). */
#include "report/ckcheck.h"

#include <stdlib.h>
#include <string.h>

typedef struct ckc_group {
    int32_t id, n, *members;     /* members ascending */
    int32_t users, last_user;    /* distinct ranks using it (ranks come in order) */
} ckc_group;

static int by_id(const void *a, const void *b) {
    const ckc_group *x = a, *y = b;
    return (x->id > y->id) - (x->id < y->id);
}
static int by_int(const void *a, const void *b) {
    int32_t x = *(const int32_t *)a, y = *(const int32_t *)b;
    return (x > y) - (x < y);
}

/* A decimal communicator id (digits only, < 2^31); -1 otherwise. */
static int64_t decimal_id(const char *s) {
    int64_t v = 0;
    if (!*s) return -1;
    for (; *s; s++) {
        if (*s < '0' || *s > '9' || v > INT32_MAX / 10) return -1;
        v = v * 10 + (*s - '0');
    }
    return v <= INT32_MAX ? v : -1;
}

static void groups_free(ckc_group *g, int32_t n) {
    for (int32_t i = 0; i < n; i++) free(g[i].members);
    free(g);
}

/* comm_groups.json: {"ID": [rank, ...], ...}; *n = -1 when the file is absent. */
static mt_status read_groups(const char *path, int32_t n_ranks, ckc_group **out, int32_t *n, mt_error *err) {
    *out = NULL, *n = -1;
    FILE *f = fopen(path, "r");
    if (!f) return MT_OK;
    json_error_t je;
    json_t *j = json_loadf(f, 0, &je);
    fclose(f);
    if (!j || !json_is_object(j)) {
        json_decref(j);
        return mt_fail(err, MT_EFORMAT, "%s: line %d: not a JSON object of communicator ids and rank lists "
                       "(ASTRA-sim's --comm-group-configuration)", path, j ? 1 : je.line);
    }
    size_t cnt = json_object_size(j);
    ckc_group *g = calloc(cnt + 1, sizeof *g);
    if (!g) return json_decref(j), mt_fail(err, MT_ENOMEM, "out of memory");
    int32_t k = 0;
    mt_status rc = MT_OK;
    const char *key;
    json_t *v;
    json_object_foreach(j, key, v) {
        int64_t id = decimal_id(key);
        size_t m = json_is_array(v) ? json_array_size(v) : 0;
        if (id <= 0 || !json_is_array(v)) {
            rc = mt_fail(err, MT_EFORMAT, "%s: communicator \"%s\": %s", path, key, id <= 0 ? "ids must be decimal "
                         "numbers above 0 (ASTRA-sim converts them with std::stoi; 0 means all ranks)" : "its value "
                         "must be a list of ranks");
            break;
        }
        ckc_group *c = &g[k++];
        c->id = (int32_t)id, c->n = (int32_t)m, c->last_user = -1;
        if (!(c->members = malloc((m + 1) * sizeof *c->members))) { rc = mt_fail(err, MT_ENOMEM, "out of memory"); break; }
        for (size_t i = 0; i < m && rc == MT_OK; i++) {
            json_t *x = json_array_get(v, i);
            json_int_t r = json_is_integer(x) ? json_integer_value(x) : -1;
            if (r < 0 || r >= n_ranks)
                rc = mt_fail(err, MT_EFORMAT, "%s: communicator %s lists %s, which is not a rank of the %d files", path,
                             key, json_is_integer(x) ? "a rank" : "a non-integer", (int)n_ranks);
            else c->members[i] = (int32_t)r;
        }
        if (rc != MT_OK) break;
        qsort(c->members, m, sizeof *c->members, by_int);
    }
    json_decref(j);
    if (rc != MT_OK) return groups_free(g, k), rc;
    qsort(g, (size_t)k, sizeof *g, by_id);
    *out = g, *n = k;
    return MT_OK;
}

static int is_member(const ckc_group *c, int32_t r) {
    return bsearch(&r, c->members, (size_t)c->n, sizeof r, by_int) != NULL;
}

/* Adds id to rank k's communicator list when new (kept ascending). */
static mt_status note_comm(mt_ckc_rank *k, int32_t id, mt_error *err) {
    int32_t i = 0;
    while (i < k->n_comms && k->comms[i] < id) i++;
    if (i < k->n_comms && k->comms[i] == id) return MT_OK;
    int32_t *c = realloc(k->comms, ((size_t)k->n_comms + 1) * sizeof *c);
    if (!c) return mt_fail(err, MT_ENOMEM, "out of memory");
    k->comms = c;
    memmove(c + i + 1, c + i, (size_t)(k->n_comms - i) * sizeof *c);
    c[i] = id;
    k->n_comms++;
    return MT_OK;
}

static int astra_has(int32_t t) {
    return t == MT_CK_ALL_REDUCE || t == MT_CK_ALL_TO_ALL || t == MT_CK_ALL_GATHER || t == MT_CK_REDUCE_SCATTER ||
           t == MT_CK_BROADCAST;
}

static mt_status check_node(const mt_ck_graph *g, int32_t r, const mt_ck_node *nd, ckc_group *grp, int32_t ng,
                            const char *gpath, mt_ckc_rank *k, mt_error *err) {
    switch (nd->type) {
    case MT_CK_COMP:
        if (nd->is_cpu) { k->cpu++; return MT_OK; }
        k->gpu++;
        k->gpu_us += (double)nd->micros;
        if (nd->is_delay) k->delays++, k->delay_us += (double)nd->micros;
        return MT_OK;
    case MT_CK_SEND: k->send++, k->send_bytes += nd->comm_bytes; return MT_OK;
    case MT_CK_RECV: k->recv++; return MT_OK;
    case MT_CK_METADATA: k->meta++; return MT_OK;
    case MT_CK_MEM_LOAD: case MT_CK_MEM_STORE: k->mem++; return MT_OK;
    case MT_CK_COLL: break;
    default: k->invalid++; return MT_OK;
    }
    if (!astra_has(nd->comm_type))
        return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\"): collective %s (%d) has no implementation in ASTRA-sim "
                       "(it takes ALL_REDUCE, ALL_GATHER, REDUCE_SCATTER, ALL_TO_ALL, BROADCAST)", g->path,
                       (unsigned long long)nd->id, nd->name, mt_ck_comm_name(nd->comm_type), (int)nd->comm_type);
    k->coll[nd->comm_type]++;
    k->coll_bytes[nd->comm_type] += nd->comm_bytes;
    const char *pg = nd->pg ? nd->pg : "";
    int64_t id = *pg ? decimal_id(pg) : 0;
    if (id < 0)
        return mt_fail(err, MT_EFORMAT, "%s: node %llu (\"%s\"): pg_name \"%s\" is not a decimal communicator id "
                       "(ASTRA-sim converts it with std::stoi and every rank stops silently; re-export with this "
                       "mitosis)", g->path, (unsigned long long)nd->id, nd->name, pg);
    MT_CHECK(note_comm(k, (int32_t)id, err));
    if (id == 0) return MT_OK;
    if (ng < 0)
        return mt_fail(err, MT_EFORMAT, "%s: node %llu: communicator %s needs %s (ASTRA-sim's "
                       "--comm-group-configuration), which is missing", g->path, (unsigned long long)nd->id, pg, gpath);
    ckc_group key = {.id = (int32_t)id}, *c = bsearch(&key, grp, (size_t)ng, sizeof key, by_id);
    if (!c)
        return mt_fail(err, MT_EFORMAT, "%s: node %llu: communicator %s is not in %s (ASTRA-sim exits on it)", g->path,
                       (unsigned long long)nd->id, pg, gpath);
    if (!is_member(c, r))
        return mt_fail(err, MT_EFORMAT, "%s: node %llu: rank %d uses communicator %s, but %s does not list it among "
                       "its members", g->path, (unsigned long long)nd->id, (int)r, pg, gpath);
    if (c->last_user != r) c->users++, c->last_user = r;
    return MT_OK;
}

mt_status mt_ckc_check(const mt_ck_graph *g, int32_t n, const char *groups_path, mt_ckc_report *out, mt_error *err) {
    memset(out, 0, sizeof *out);
    ckc_group *grp = NULL;
    int32_t ng = -1;
    MT_CHECK(read_groups(groups_path, n, &grp, &ng, err));
    out->n = n;
    out->has_groups = ng >= 0;
    out->n_groups = ng > 0 ? ng : 0;
    mt_status rc = (out->r = calloc((size_t)n + 1, sizeof *out->r)) ? MT_OK : mt_fail(err, MT_ENOMEM, "out of memory");
    int ag_in = 0, ag_out = 0;
    for (int32_t r = 0; r < n && rc == MT_OK; r++) {
        for (int32_t i = 0; i < g[r].n_nodes && rc == MT_OK; i++)
            rc = check_node(&g[r], r, &g[r].nodes[i], grp, ng, groups_path, &out->r[r], err);
        if (g[r].ag_input) ag_in = 1;
        else ag_out = 1;
    }
    for (int32_t i = 0; i < ng && rc == MT_OK; i++) /* everyone listed takes part, or nobody does */
        if (grp[i].users > 0 && grp[i].users != grp[i].n)
            rc = mt_fail(err, MT_EFORMAT, "%s: communicator %d lists %d ranks but %d of the files use it (its "
                         "collectives would wait for ranks that never join)", groups_path, (int)grp[i].id,
                         (int)grp[i].n, (int)grp[i].users);
    snprintf(out->convention, sizeof out->convention, "%s", ag_in && ag_out ? "mixed" : ag_out ? "output" : "input");
    int64_t cpu = 0, meta = 0;
    for (int32_t r = 0; r < n && rc == MT_OK; r++) cpu += out->r[r].cpu, meta += out->r[r].meta;
    if (cpu || meta)
        snprintf(out->warning, sizeof out->warning, "%lld CPU compute and %lld metadata nodes: ASTRA-sim runs them, "
                 "but its compute/communication overlap statistics refuse them", (long long)cpu, (long long)meta);
    groups_free(grp, ng > 0 ? ng : 0);
    if (rc != MT_OK) mt_ckc_free(out);
    return rc;
}

void mt_ckc_free(mt_ckc_report *r) {
    for (int32_t i = 0; r->r && i < r->n; i++) free(r->r[i].comms);
    free(r->r);
    memset(r, 0, sizeof *r);
}

json_t *mt_ckc_json(const mt_ckc_report *r) {
    json_t *ranks = json_array();
    for (int32_t i = 0; i < r->n; i++) {
        const mt_ckc_rank *k = &r->r[i];
        json_t *coll = json_object(), *comms = json_array();
        for (int t = 0; t < MT_CKC_TYPES; t++)
            if (k->coll[t])
                json_object_set_new(coll, mt_ck_comm_name(t), json_pack("{s:I, s:f}", "nodes", (json_int_t)k->coll[t],
                                                                       "bytes", k->coll_bytes[t]));
        for (int32_t c = 0; c < k->n_comms; c++) json_array_append_new(comms, json_integer(k->comms[c]));
        json_array_append_new(ranks, json_pack("{s:i, s:I, s:I, s:I, s:f, s:f, s:o, s:I, s:I, s:f, s:I, s:I, s:I, s:o}",
                                               "rank", (int)i, "gpu_nodes", (json_int_t)k->gpu, "delay_nodes",
                                               (json_int_t)k->delays, "cpu_nodes", (json_int_t)k->cpu, "gpu_us",
                                               k->gpu_us, "delay_us", k->delay_us, "collectives", coll, "sends",
                                               (json_int_t)k->send, "recvs", (json_int_t)k->recv, "send_bytes",
                                               k->send_bytes, "metadata_nodes", (json_int_t)k->meta, "memory_nodes",
                                               (json_int_t)k->mem, "invalid_nodes", (json_int_t)k->invalid,
                                               "communicators", comms));
    }
    return json_pack("{s:i, s:b, s:i, s:s, s:s, s:o}", "ranks", (int)r->n, "comm_groups", r->has_groups,
                     "communicators", (int)r->n_groups, "all_gather_comm_size", r->convention, "warning", r->warning,
                     "per_rank", ranks);
}

void mt_ckc_print(FILE *out, const mt_ckc_report *r) {
    fprintf(out, "Chakra check: %d ranks, %s (%d communicators), all-gather comm_size = each rank's %s\n", (int)r->n,
            r->has_groups ? "comm_groups.json" : "no comm_groups.json", (int)r->n_groups, r->convention);
    fprintf(out, "%5s %8s %7s %5s %7s %6s %6s %14s %14s  %s\n", "rank", "gpu", "delays", "cpu", "colls", "sends",
            "recvs", "gpu_us", "coll_MB", "communicators");
    for (int32_t i = 0; i < r->n; i++) {
        const mt_ckc_rank *k = &r->r[i];
        int64_t colls = 0;
        double bytes = 0;
        for (int t = 0; t < MT_CKC_TYPES; t++) colls += k->coll[t], bytes += k->coll_bytes[t];
        fprintf(out, "%5d %8lld %7lld %5lld %7lld %6lld %6lld %14.0f %14.3f  ", (int)i, (long long)k->gpu,
                (long long)k->delays, (long long)k->cpu, (long long)colls, (long long)k->send, (long long)k->recv,
                k->gpu_us, bytes / 1e6);
        for (int32_t c = 0; c < k->n_comms; c++) fprintf(out, "%s%d", c ? "," : "", (int)k->comms[c]);
        fprintf(out, "%s\n", k->n_comms ? "" : "-");
    }
    if (*r->warning) fprintf(out, "warning: %s\n", r->warning);
}
