/* report/recognised.c — see recognised.h. */
#include "report/recognised.h"

#include "extrapolate/embtables.h"
#include "extrapolate/moe.h"
#include "extrapolate/tpsites.h"

typedef struct found {
    mt_tp_sites tp;
    mt_moe *moe;
    char why[256];
    int32_t bags, jagged, dense, pos;
} found;

static mt_status find(const mt_trace *t, found *f, mt_error *err) {
    mt_tp_sites_find(t, &f->tp);
    MT_CHECK(mt_moe_find_why(t, &f->moe, f->why, sizeof f->why, err));
    f->bags = mt_emb_bag_count(t);
    f->jagged = mt_emb_jagged_count(t);
    f->dense = mt_emb_dense_count(t);
    f->pos = 0;
    for (int32_t i = 0; i < t->n_ops; i++)
        f->pos += t->ops[i].phase == TRACE_PHASE_FORWARD && t->ops[i].tp == TRACE_TP_POS_EMBEDDING;
    return MT_OK;
}

static const char *op_name(const mt_trace *t, int32_t i) {
    return i >= 0 && i < t->n_ops && t->ops[i].name ? t->ops[i].name : "?";
}

/* Why no MoE layer was found (the finder's first refused candidate, else no candidate at all). */
static const char *moe_why_not(const found *f) {
    return f->why[0] ? f->why
                     : "no linear to E logits is followed by a selection (topk, max, argmax, sort) over them; name "
                       "the experts with record_function(\"mitosis.expert\") if the router is elsewhere";
}

mt_status mt_recognised_print(FILE *out, const mt_trace *t, mt_error *err) {
    found f;
    MT_CHECK(find(t, &f, err));
    const mt_tp_sites *s = &f.tp;
    fprintf(out, "\nrecognised (docs/recognition.md)\n");
    fprintf(out, "  layers     %d weight layers (a layer starts at each op reading a weight)\n", t->n_layers);
    fprintf(out, "  TP sites   %d linears: fused QKV %d, grouped-query attention %d", s->linears, s->fused_qkv, s->gqa);
    if (s->gqa) fprintf(out, " (q %lld wide, k/v %lld: %lld query heads per K/V head)", (long long)s->gqa_q_width,
                        (long long)s->gqa_kv_width, (long long)(s->gqa_q_width / s->gqa_kv_width));
    fprintf(out, ", gated MLP (SwiGLU) pairs %d; RMSNorm %d, LayerNorm %d, rotary rotations %d\n", s->swiglu, s->rmsnorm,
            s->layernorm, s->rotary);
    if (f.moe) {
        const mt_moe *m = f.moe;
        fprintf(out, "  MoE        %d layer%s (--ep splits their experts)\n", m->n_layers, m->n_layers == 1 ? "" : "s");
        for (int32_t k = 0; k < m->n_layers; k++) {
            const mt_moe_layer *L = &m->l[k];
            if (L->named && L->select_op < 0)
                fprintf(out, "    layer %d: experts named (mitosis.expert or --moe-pattern), no router linear to %d logits "
                        "before them: top-%d from their rows; %d experts", k, L->experts, L->top_k, L->experts);
            else
                fprintf(out, "    layer %d: %srouter op %d (%s, %d logits) -> %s top-%d; %d experts", k,
                        L->named ? "experts named, " : "", L->router, op_name(t, L->router), L->experts,
                        op_name(t, L->select_op), L->top_k, L->experts);
            if (L->local != L->experts) fprintf(out, " (%d in this trace)", L->local);
            if (L->batched)
                fprintf(out, " batched: %d matmul%s over stacked [E, ...] weights", L->per_expert, L->per_expert == 1 ? "" : "s");
            else
                fprintf(out, " looped: %d linear%s each", L->per_expert, L->per_expert == 1 ? "" : "s");
            fprintf(out, "; %.0f rows routed of %.0f tokens", L->routed, L->tokens);
            if (L->shared_linears)
                fprintf(out, "; shared experts %d (%d linears beside the routed ones, replicated)", L->shared_experts,
                        L->shared_linears);
            fprintf(out, "\n");
        }
    } else {
        fprintf(out, "  MoE        none: %s\n", moe_why_not(&f));
    }
    fprintf(out, "  tables     %d embedding bag%s (%d with jagged ids and offsets), %d dense embedding table%s, %d "
            "position embedding%s\n", f.bags, f.bags == 1 ? "" : "s", f.jagged, f.dense, f.dense == 1 ? "" : "s", f.pos,
            f.pos == 1 ? "" : "s");
    mt_moe_free(f.moe);
    return MT_OK;
}

json_t *mt_recognised_json(const mt_trace *t, mt_error *err) {
    found f;
    if (find(t, &f, err) != MT_OK) return NULL;
    const mt_tp_sites *s = &f.tp;
    json_t *o = json_object(), *ml = json_array();
    json_object_set_new(o, "layers", json_integer(t->n_layers));
    json_object_set_new(o, "tp_sites",
                        json_pack("{s:i,s:i,s:i,s:I,s:I,s:i,s:i,s:i,s:i}", "linears", s->linears, "fused_qkv",
                                  s->fused_qkv, "gqa", s->gqa, "gqa_q_width", (json_int_t)s->gqa_q_width,
                                  "gqa_kv_width", (json_int_t)s->gqa_kv_width, "swiglu", s->swiglu, "rmsnorm",
                                  s->rmsnorm, "layernorm", s->layernorm, "rotary", s->rotary));
    for (int32_t k = 0; f.moe && k < f.moe->n_layers; k++) {
        const mt_moe_layer *L = &f.moe->l[k];
        json_array_append_new(ml, json_pack("{s:i,s:s,s:s,s:b,s:i,s:i,s:i,s:s,s:i,s:f,s:f,s:i,s:i}", "router",
                                            L->router, "router_op", op_name(t, L->router), "select",
                                            L->select_op >= 0 ? op_name(t, L->select_op) : "none", "named", L->named,
                                            "experts", L->experts, "experts_in_trace", L->local, "top_k", L->top_k,
                                            "experts_as", L->batched ? "batched" : "looped", "per_expert",
                                            L->per_expert, "routed_rows", L->routed, "tokens", L->tokens,
                                            "shared_experts", L->shared_experts, "shared_linears", L->shared_linears));
    }
    json_object_set_new(o, "moe", json_pack("{s:o,s:s?}", "layers", ml, "why_not", f.moe ? NULL : moe_why_not(&f)));
    json_object_set_new(o, "tables", json_pack("{s:i,s:i,s:i,s:i}", "bags", f.bags, "jagged", f.jagged, "dense",
                                               f.dense, "positions", f.pos));
    mt_moe_free(f.moe);
    return o;
}
