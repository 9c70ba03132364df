/* run/outputs.c — see outputs.h. */
#include "run/outputs.h"

#include <stdio.h>
#include <string.h>

#include "report/chakra.h"
#include "run/simulate.h"

const char *const MT_OUT_CHAKRA_FILES[] = {"mitosis.*.et", "mitosis.*.json", MT_CKX_COMM_GROUPS, NULL};
const char *const MT_OUT_KINETO_FILES[] = {"mitosis_rank*.pt.trace.json", NULL};

#define ROW_(name, field, flag, metavar, complete, files, web, mime, early, help) \
    {#name, flag, metavar, complete, files, web, mime, early, help, offsetof(mt_sim_outputs, field)},
const mt_output MT_OUTPUTS[MT_N_OUTPUTS] = {MT_SIM_OUTPUTS(ROW_)};
#undef ROW_

const mt_output *mt_output_find(const char *name) {
    for (int k = 0; name && k < MT_N_OUTPUTS; k++)
        if (!strcmp(MT_OUTPUTS[k].name, name)) return &MT_OUTPUTS[k];
    return NULL;
}

const char *mt_output_names(int web_only, const char *skip, char *buf, size_t len) {
    const char *pick[MT_N_OUTPUTS];
    int n = 0;
    for (int k = 0; k < MT_N_OUTPUTS; k++)
        if ((!web_only || MT_OUTPUTS[k].web) && !(skip && !strcmp(skip, MT_OUTPUTS[k].name)))
            pick[n++] = MT_OUTPUTS[k].name;
    size_t at = 0;
    buf[0] = '\0';
    for (int k = 0; k < n && at < len; k++)
        at += (size_t)snprintf(buf + at, len - at, "%s\"%s\"", k == 0 ? "" : k + 1 < n ? ", " : " or ", pick[k]);
    return buf;
}

const char *mt_sim_output_path(const mt_sim_outputs *o, const mt_output *d) {
    return *(const char *const *)((const char *)o + d->path);
}

void mt_sim_output_set(mt_sim_outputs *o, const mt_output *d, const char *path) {
    *(const char **)((char *)o + d->path) = path;
}

int mt_sim_output_specs(const mt_sim_outputs *o, mt_out_spec *specs) {
    for (int k = 0; k < MT_N_OUTPUTS; k++)
        specs[k] = (mt_out_spec){MT_OUTPUTS[k].flag, mt_sim_output_path(o, &MT_OUTPUTS[k]), MT_OUTPUTS[k].files != NULL};
    return MT_N_OUTPUTS;
}
