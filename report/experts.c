/* report/experts.c — see experts.h. */
#include "report/experts.h"

#include "extrapolate/moe.h"

static json_t *layer_json(const mt_moe *m, int32_t k, double bf) {
    const mt_moe_layer *L = &m->l[k];
    json_t *x = json_object(), *load = json_array(), *tok = json_array(), *rs = json_array();
    for (int32_t e = 0; e < L->experts; e++) {
        double f = m->load[(size_t)k * MT_MOE_MAX_EXPERTS + e];
        json_array_append_new(load, json_real(f));
        json_array_append_new(tok, json_real(f * L->routed * bf * m->ep));
    }
    for (int32_t r = 0; r < m->ep; r++) json_array_append_new(rs, json_real(m->rank_share[(size_t)k * m->ep + r]));
    json_object_set_new(x, "experts", json_integer(L->experts));
    json_object_set_new(x, "top_k", json_integer(L->top_k));
    json_object_set_new(x, "tokens", json_real(L->tokens * bf));
    json_object_set_new(x, "routed", json_real(L->routed * bf));
    json_object_set_new(x, "dropped", json_real((L->tokens * L->top_k - L->routed) * bf));
    json_object_set_new(x, "dispatch_bytes", json_real(L->routed * L->hidden * L->itemsize * bf));
    json_object_set_new(x, "load", load);
    json_object_set_new(x, "tokens_per_expert", tok);
    json_object_set_new(x, "rank_share", rs);
    return x;
}

json_t *mt_experts_json(const mt_program *p) {
    const mt_moe *m = p->moe;
    if (!m || !m->load) return NULL;
    json_t *o = json_object(), *ls = json_array();
    json_object_set_new(o, "ep", json_integer(m->ep));
    json_object_set_new(o, "shares", json_string(m->measured ? "traced" : m->skew >= 0 ? "zipf" : "even"));
    json_object_set_new(o, "skew", json_real(m->skew >= 0 ? m->skew : 0));
    for (int32_t k = 0; k < m->n_layers; k++) json_array_append_new(ls, layer_json(m, k, p->plan.batch_factor));
    json_object_set_new(o, "layers", ls);
    json_object_set_new(o, "straggler", json_pack("{s:i,s:i,s:i,s:f,s:f}", "layer", (int)m->hot_layer, "expert",
                                                  (int)m->hot_expert, "ep_rank", (int)m->hot_rank, "share",
                                                  m->hot_share, "work_vs_even", m->rank_max));
    return o;
}

void mt_experts_print(FILE *out, const mt_program *p) {
    const mt_moe *m = p->moe;
    if (!m || !m->load) return;
    const mt_moe_layer *L = &m->l[0];
    fprintf(out, "experts    %d MoE layer%s x %d experts (top-%d) over ep %d, %s shares; straggler: expert %d of layer "
            "%d (%.0f %% of its tokens) on EP rank %d, %.2fx an even rank's expert work\n", (int)m->n_layers,
            m->n_layers == 1 ? "" : "s", (int)L->experts, (int)L->top_k, (int)m->ep,
            m->measured ? "traced" : m->skew >= 0 ? "Zipf" : "even", (int)m->hot_expert, (int)m->hot_layer, 100 * m->hot_share,
            (int)m->hot_rank, m->rank_max);
}

void mt_experts_html(FILE *f, const mt_program *p) {
    const mt_moe *m = p->moe;
    if (!m || !m->load) return;
    int32_t E = m->l[0].experts, rows = m->n_layers < 64 ? m->n_layers : 64;
    const double L = 90, bw = E <= 64 ? 720.0 / E : 11.25, H = 60, top = 10;
    fprintf(f, "<h2>Expert load</h2>\n<p class=\"note\">Share of each MoE layer's routed tokens per expert (%s "
               "shares), over ep %d; the straggler: expert %d of layer %d (%.1f %%) on EP rank %d, %.2fx an even "
               "rank's expert work.</p>\n", m->measured ? "traced" : m->skew >= 0 ? "Zipf" : "even", (int)m->ep,
            (int)m->hot_expert, (int)m->hot_layer, 100 * m->hot_share, (int)m->hot_rank, m->rank_max);
    fprintf(f, "<svg id=\"expert-load\" width=\"%.0f\" height=\"%.0f\">", L + 740, top + rows * (H + 10) + 10);
    for (int32_t k = 0; k < rows; k++) {
        double y = top + k * (H + 10);
        fprintf(f, "<text x=\"%.0f\" y=\"%.1f\" text-anchor=\"end\">MoE layer %d</text>", L - 6, y + H / 2, (int)k);
        for (int32_t e = 0; e < m->l[k].experts && e < 64; e++) {
            double share = m->load[(size_t)k * MT_MOE_MAX_EXPERTS + e], h = share * H / (m->hot_share > 0 ? m->hot_share : 1);
            int hot = k == m->hot_layer && e == m->hot_expert;
            fprintf(f, "<rect class=\"%s\" x=\"%.2f\" y=\"%.2f\" width=\"%.2f\" height=\"%.2f\"><title>layer %d "
                       "expert %d (EP rank %d): %.1f %% of the tokens</title></rect>", hot ? "k-exp" : "k-comp",
                    L + e * bw, y + H - h, bw * 0.8, h, (int)k, (int)e, (int)(e / (m->l[k].experts / m->ep)), 100 * share);
        }
    }
    fprintf(f, "</svg>\n");
}
