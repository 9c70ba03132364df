/* netmodels/registry.c — see registry.h. */
#include "netmodels/registry.h"

#include <string.h>

#define MT_NETMODEL_ENTRY_(name) &mt_netmodel_kind_##name,
static const mt_netmodel_kind *const kinds[MT_NETMODEL_COUNT] = {MT_NETMODELS(MT_NETMODEL_ENTRY_)};
#undef MT_NETMODEL_ENTRY_

const mt_netmodel_kind *mt_netmodel_kind_at(int i) { return i >= 0 && i < MT_NETMODEL_COUNT ? kinds[i] : NULL; }

int mt_netmodel_find(const char *name) {
    for (int i = 0; name && i < MT_NETMODEL_COUNT; i++)
        if (!strcmp(name, kinds[i]->name)) return i;
    return -1;
}

mt_status mt_netmodel_create(const char *name, mt_topo *topo, const void *params, mt_sched sched,
                             mt_netmodel *out, mt_error *err) {
    out->ops = NULL;
    out->self = NULL;
    int i = mt_netmodel_find(name);
    if (i < 0)
        return mt_fail(err, MT_EINVAL, "unknown network model '%s' (use one of %s)", name ? name : "",
                       MT_NETMODEL_CHOICES);
    return kinds[i]->create(params, topo, sched, out, err);
}
