/* perfmodel/commslow.c — compute slowed by communication (commslow.h). */
#include "perfmodel/commslow.h"

#include <string.h>

/* NCCL's achieved fraction of link bandwidth: ring on NVLink, on NICs (extrapolate/nccl.h's
 * MT_NCCL_RING_EFF and MT_NCCL_NET_EFF, which perfmodel/ may not include). */
#define RING_EFF 0.80
#define NET_EFF 0.85

/* u / (1 - u) for the share u = 2 e B / HBM of HBM bandwidth a collective uses. */
static double mem_slowdown(double e, double link_Bps, double hbm_Bps) {
    if (!(link_Bps > 0)) return 0;
    double u = 2 * e * link_Bps / hbm_Bps;
    if (u > MT_CSLOW_HBM_USE_MAX) u = MT_CSLOW_HBM_USE_MAX;
    return u / (1 - u);
}

int mt_cslow_model(const mt_gpu_spec *g, int ch_intra, int ch_inter, double intra_Bps, double inter_Bps,
                   mt_cslow *out) {
    memset(out, 0, sizeof *out);
    if (!g || g->sms <= 0 || !(g->mem_Bps > 0) || ch_intra < 0 || ch_intra >= g->sms || ch_inter < 0 ||
        ch_inter >= g->sms)
        return 0;
    out->sm_intra = (double)ch_intra / (g->sms - ch_intra);
    out->sm_inter = (double)ch_inter / (g->sms - ch_inter);
    out->mem_intra = mem_slowdown(RING_EFF, intra_Bps, g->mem_Bps);
    out->mem_inter = mem_slowdown(NET_EFF, inter_Bps, g->mem_Bps);
    return 1;
}

void mt_cslow_op(const mt_cslow *m, const mt_gpu_spec *g, const mt_work *w, mt_tf32 tf, float out[2]) {
    double bytes = w->bytes_act + w->bytes_fixed;
    int compute = w->flops > 0 && (!(bytes > 0) || mt_roofline_compute_bound(g, mt_unit_column(g, w, tf), w->flops, bytes));
    if (compute || !(bytes > 0)) {
        out[0] = (float)m->sm_intra;
        out[1] = (float)m->sm_inter;
        return;
    }
    out[0] = (float)m->mem_intra;
    out[1] = (float)m->mem_inter;
}

void mt_cslow_ops(const mt_cslow *m, const mt_gpu_spec *g, mt_tf32 tf, const mt_trace *t, double fixed, float *out) {
    for (int32_t i = 0; i < t->n_ops; i++) {
        if (!m) {
            out[2 * (size_t)i] = out[2 * (size_t)i + 1] = (float)fixed;
            continue;
        }
        mt_work w;
        mt_work_of_trace_op(t, i, &w);
        mt_cslow_op(m, g, &w, tf, &out[2 * (size_t)i]);
    }
}
