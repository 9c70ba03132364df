/* run/show.c — a command's answer as text or JSON (run/show.h), over report/'s writers. */
#include <stdlib.h>

#include "report/jsonw.h"
#include "report/perfreport.h"
#include "run/show.h"

void mt_show_json(FILE *out, json_t *j) {
    if (!j) return;
    char *s = mt_jw_dumps(j);
    if (s) fprintf(out, "%s\n", s);
    free(s);
    json_decref(j);
}

void mt_show_summary(FILE *out, const mt_run_summary *s, int as_json, int per_gpu, int layers) {
    if (as_json) mt_summary_json_write(out, s); /* streamed */
    else mt_summary_print(out, s, per_gpu, layers);
}

void mt_show_asis(FILE *out, const mt_asis_job *run, const mt_run_config *c, int as_json, int per_rank) {
    mt_asis_summary s = mt_asis_job_summary(run, c);
    if (as_json) mt_show_json(out, mt_asis_json(&s));
    else mt_asis_print(out, &s, per_rank);
}

void mt_show_comparison(FILE *out, const mt_comparison *c, int as_json) {
    if (as_json) mt_show_json(out, mt_comparison_json(c));
    else mt_comparison_print(out, c);
}

void mt_show_hop(FILE *out, const mt_hop_table *t, int as_json) {
    if (as_json) mt_show_json(out, mt_hop_table_json(t));
    else mt_hop_table_print(out, t);
}

void mt_show_coll(FILE *out, const mt_coll_table *t, int as_json) {
    if (as_json) mt_show_json(out, mt_coll_table_json(t));
    else mt_coll_table_print(out, t);
}

void mt_show_cluster(FILE *out, const mt_cluster_result *r, int as_json) {
    if (as_json) mt_show_json(out, mt_cluster_json(r));
    else mt_cluster_print(out, r);
}

void mt_show_placements(FILE *out, const mt_cluster_placements *p, int as_json) {
    if (as_json) mt_show_json(out, mt_cluster_placements_json(p));
    else mt_cluster_placements_print(out, p);
}

void mt_show_ckc(FILE *out, const mt_ckc_report *r, int as_json) {
    if (as_json) mt_show_json(out, mt_ckc_json(r));
    else mt_ckc_print(out, r);
}

void mt_show_linmodel(FILE *out, const mt_linmodel *m, int as_json) {
    if (as_json) mt_show_json(out, mt_linmodel_json(m));
    else mt_perfreport_model(out, m);
}

void mt_show_prediction(FILE *out, const mt_prediction *p, int as_json) {
    if (as_json) mt_show_json(out, mt_perfreport_prediction_json(&p->view));
    else mt_perfreport_prediction(out, &p->view);
}

void mt_show_gpus(FILE *out, const mt_gpu_table *t, int as_json) {
    if (as_json) mt_show_json(out, mt_perfreport_gpus_json(t));
    else mt_perfreport_gpus(out, t);
}

void mt_show_emu(FILE *out, const mt_emu_report *r, int as_json) {
    if (as_json) mt_show_json(out, mt_emu_report_json(r));
    else mt_emu_report_print(out, r);
}
