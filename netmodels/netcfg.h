/* netmodels/netcfg.h — the network configuration of a run, from flag tables (util/flags.h):
 * the model (--network), the topology (--topology and the tier flags --link-bw, --link-lat,
 * --nic-bw, --nic-lat, --routing, --ecmp) and each model's own parameters (declared by the
 * model: netmodels/registry.h, network/netmodel.h mt_netmodel_kind); a check after parsing that
 * refuses, in one line naming the flag, every flag that does not apply to the chosen model or
 * topology; and the builders of the topology and the model.
 *
 * Use: mt_netcfg_init; parse with the tables bound by mt_netcfg_binds (mt_flags_parse), or
 * argument by argument with mt_netcfg_take; mt_netcfg_check; then mt_netcfg_topology and
 * mt_netcfg_model (or mt_netcfg_spec for the spec a run will use).
 * Invariants: `model` is a registry index; params[i] holds model i's parameter struct, filled
 * with its defaults by init and written by its flags; the struct has no pointers of its own
 * (topology points into argv), so it may be copied by value.
 * Costs: parsing O(flags); the check O(flags given x flags).
 */
#ifndef MT_NETMODELS_NETCFG_H
#define MT_NETMODELS_NETCFG_H

#include <stddef.h>
#include <stdio.h>

#include "netmodels/registry.h"
#include "netmodels/topologies.h"
#include "network/netmodel.h"
#include "util/err.h"
#include "util/flags.h"

enum { MT_NETCFG_GIVEN_MAX = 32, MT_NETCFG_TABLES = 3 + MT_NETMODEL_COUNT };

typedef struct mt_netcfg {
    const char *topology; /* --topology SPEC; NULL: not given (see mt_netcfg_spec) */
    int model;            /* --network: index in the registry (0, flow, by default) */
    mt_topo_params tp;    /* the tier flags */
    _Alignas(max_align_t) unsigned char params[MT_NETMODEL_COUNT][MT_NETMODEL_PARAMS_MAX];
    const mt_flag *given[MT_NETCFG_GIVEN_MAX]; /* flags given through mt_netcfg_take */
    int32_t n_given;
} mt_netcfg;

/* Defaults: flow, no topology, every tier at its preset's default, every model's defaults. */
void mt_netcfg_init(mt_netcfg *c);

/* The flag tables (network, link tier, NIC tier, then each model's own); returns their count
 * (at most MT_NETCFG_TABLES). For --help, man pages and completion. */
int mt_netcfg_tables(const mt_flag_table **out);
/* The same tables bound to c, for mt_flags_parse; returns their count. */
int mt_netcfg_binds(mt_netcfg *c, mt_flag_bind *out);
/* For a command that walks argv itself: when argv[*i] is a network flag, stores its value,
 * remembers it was given, advances *i past it and returns 1; 0 when it is not ours; -1 with a
 * one-line message naming the flag for a bad or missing value or a repeat. */
int mt_netcfg_take(mt_netcfg *c, int argc, char **argv, int *i, mt_error *err);

/* Parses argv (from argv[1]) against the command's own table (bound to own_base; may be NULL)
 * and the network tables bound to c, positional arguments to pos (NULL: refused), then checks c
 * (mt_netcfg_check). On --help, stops with seen->help set and checks nothing. seen is required. */
mt_status mt_netcfg_parse(mt_netcfg *c, int argc, char **argv, const mt_flag_table *own, void *own_base,
                          mt_flag_positional_fn pos, void *pos_ctx, const char *cmd, mt_flag_seen *seen,
                          mt_error *err);

/* After parsing: refuses (MT_EINVAL, one line naming the flag and what to do) a model's flag
 * without that model; a link-tier flag with a model that does not use the topology's links; a
 * NIC-tier flag without a topology that has a NIC tier; a --topology spec that is not valid for
 * its preset (dgx-h100:16, ring:8,k=4; a spec with {gpus} / {nodes} placeholders is checked by
 * its preset name only); and whatever the model's own check refuses. seen: the flags an
 * mt_flags_parse found (NULL: only those given through mt_netcfg_take). */
mt_status mt_netcfg_check(const mt_netcfg *c, const mt_flag_seen *seen, mt_error *err);

/* The chosen model's kind and name ("flow"). */
const mt_netmodel_kind *mt_netcfg_kind(const mt_netcfg *c);
const char *mt_netcfg_model_name(const mt_netcfg *c);

/* The topology spec a run on `gpus` GPUs uses, into buf (returned): --topology; else, for a
 * model that uses links and gpus > 0, switch:GPUS; else "" (none: a model without links, or
 * gpus 0 where the caller requires --topology). */
const char *mt_netcfg_spec(const mt_netcfg *c, int32_t gpus, char *buf, size_t len);
/* Builds that topology into *out (NULL when the spec is ""; then a model that uses links is
 * MT_EINVAL "--topology is required"). Errors name the spec or file. */
mt_status mt_netcfg_topology(const mt_netcfg *c, int32_t gpus, mt_topo **out, mt_error *err);
/* Creates the chosen model with its parameters on topo (NULL for a model without links and no
 * topology: its own endpoints) and sched; *out is freed with mt_net_free. */
mt_status mt_netcfg_model(const mt_netcfg *c, mt_topo *topo, mt_sched sched, mt_netmodel *out, mt_error *err);

/* The network options as --help text: every table, the units note and the presets. */
void mt_netcfg_help(FILE *out);

#endif
