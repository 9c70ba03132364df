/* extrapolate/planlist.h — plans as text: the plans `mitosis compare` runs: parsed from a --plans list, or every
 * feasible-looking plan for N GPUs; and the one-line label of a plan in the same syntax.
 *
 * Syntax of a list: plans separated by ',', each a ':'-separated list of fields
 *   dp=D          data-parallel size, one all-reduce after backward (DataParallel)
 *   ddp=D         data-parallel size, bucketed all-reduce overlapping backward (DDP)
 *   tp=T  pp=P    tensor- and pipeline-parallel sizes
 *   mb=M          pipeline micro-batches
 *   schedule=gpipe|1f1b (or just gpipe / 1f1b)
 *   vpp=V         interleaved 1F1B with V model chunks per GPU (plan.h)
 *   recompute=none|selective|full  activation recomputation
 *   placement=ORDER  bucket=SIZE  algo=ring|tree|direct|hier|ringflow
 *   zero=1|2|3    ZeRO stage over the DP group (plan.h)
 *   fsdp          FSDP full shard; fsdp_shard=G its hybrid sharding in groups of G
 *   ep=E          expert-parallel size (N = D x T x P x E)
 *   emb=table|row|column  sharded embedding tables (--embedding-shard)
 *   single        one GPU (all sizes 1)
 *   default       no field: everything from the command's flags
 * e.g. "ddp=8,dp=8,tp=2:ddp=4,pp=4:mb=8:schedule=gpipe". A size left out takes the GPUs left
 * over as in `simulate` (dp first); a plan without dp= or ddp= uses the command's data-parallel
 * mode (ddp unless --strategy dp). Every other setting comes from the command's flags (the base
 * plan).
 */
#ifndef MT_EXTRAPOLATE_PLANLIST_H
#define MT_EXTRAPOLATE_PLANLIST_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "extrapolate/plan.h"
#include "util/err.h"

/* Parses text into *out (malloc'd, *n plans), each starting from base. MT_EINVAL with a
 * message quoting the bad field. */
mt_status mt_planlist_parse(const char *text, const mt_plan *base, mt_plan **out, int32_t *n, mt_error *err);

/* The data-parallel modes auto lists (a bit mask): ddp, dp (DataParallel), zero1..zero3, fsdp, distopt. */
enum {
    MT_DPM_DDP = 1,
    MT_DPM_DP = 2,
    MT_DPM_ZERO1 = 4,
    MT_DPM_ZERO2 = 8,
    MT_DPM_ZERO3 = 16,
    MT_DPM_FSDP = 32,
    MT_DPM_DISTOPT = 64,
    MT_DPM_ALL = 127
};
#define MT_DP_MODES_CHOICES "all or a list of ddp, dp, zero1, zero2, zero3, fsdp, distopt"

/* "ddp,zero3,fsdp" or "all" into a mask; MT_EINVAL naming the bad one. */
mt_status mt_dp_modes_parse(const char *s, unsigned *out, mt_error *err);

/* Every plan for base->gpus GPUs: each ordered D x T x P = N (sizes set in base are kept
 * fixed), each mode of `modes` (MT_DPM_*; 0: ddp and dp) when D > 1 (only base's mode when
 * fixed_mode or base already shards with --zero / --fsdp), 1f1b and gpipe when P > 1
 * (only base's schedule when fixed_schedule), and P, 2P, 4P micro-batches that divide the
 * replica batch base->global_batch / D (any when the batch is 0, unknown; base's count when it
 * is set). Plans the trace may still refuse (too many stages) are included. O(N^(2/3)) plans. */
mt_status mt_planlist_auto(const mt_plan *base, int fixed_mode, int fixed_schedule, unsigned modes, mt_plan **out,
                           int32_t *n, mt_error *err);

/* The recompute modes and interleaving degrees compare lists: a mask (MT_RCM_*) and a list. */
enum { MT_RCM_NONE = 1, MT_RCM_SELECTIVE = 2, MT_RCM_FULL = 4, MT_RCM_ALL = 7, MT_VPP_LIST_MAX = 8 };
#define MT_RECOMPUTE_MODES_CHOICES "all or a list of none, selective, full"
/* "none,full" or "all" into a mask; MT_EINVAL naming --recompute-modes and the bad one. */
mt_status mt_recompute_modes_parse(const char *s, unsigned *out, mt_error *err);
/* "1,2,4" (each 1..1024, at most MT_VPP_LIST_MAX) into vals; MT_EINVAL naming flag. */
mt_status mt_size_list_parse(const char *flag, const char *s, int32_t *vals, int32_t *n, mt_error *err);
/* mt_size_list_parse for --vpp-sizes. */
mt_status mt_vpp_list_parse(const char *s, int32_t *vpps, int32_t *n, mt_error *err);

/* The sequence-parallel modes compare lists: off, on (Megatron SP where tp > 1), or both. */
enum { MT_SPM_OFF = 1, MT_SPM_ON = 2, MT_SPM_ALL = 3 };
mt_status mt_sp_modes_parse(const char *s, unsigned *out, mt_error *err);

/* Each plan of in[0 .. n) once per context-parallel size of cps (n_cps 0: the plan's own; C > 1 takes
 * its C ranks out of the plan's dp, so the GPU count stays: dp must be a multiple of C, else that
 * size is skipped) and per sequence-parallel mode of sp_modes (MT_SPM_*; 0: the plan's own; on only
 * where tp > 1). Order: sizes outer, off before on. *out is malloc'd. O(n x sizes x 2). */
mt_status mt_planlist_expand_seq(const mt_plan *in, int32_t n, const int32_t *cps, int32_t n_cps, unsigned sp_modes,
                                 mt_plan **out, int32_t *n_out, mt_error *err);

/* Each plan of in[0 .. n) once per recompute mode of `modes` (0: the plan's own), and, pipelined with
 * the 1f1b schedule (pp > 1), once per interleaving degree of vpps (n_vpps 0: the plan's own; a degree
 * V > 1 only where the micro-batches are unset or a multiple of P); other plans are not interleaved
 * (vpp 0). Order: degrees outer, modes inner, in list order. *out is malloc'd. O(n x modes x vpps). */
mt_status mt_planlist_expand(const mt_plan *in, int32_t n, unsigned modes, const int32_t *vpps, int32_t n_vpps,
                             mt_plan **out, int32_t *n_out, mt_error *err);

/* The plan's label in list syntax (sizes of 1, one micro-batch and default settings left out;
 * "single" for one GPU). Sizes still 0 (unresolved) are left out too ("default" when none is
 * set). */
void mt_planlist_label(const mt_plan *p, char *buf, size_t len);

/* The plan as a new jansson object: gpus, dp, tp, pp, dp_mode, schedule, micro_batches,
 * zero, fsdp, fsdp_shard, ep, embedding_shard, expert_skew (the last three when used), bucket_bytes, first_bucket_bytes, placement, algo, global_batch,
 * replica_batch, micro_batch, batch_factor. NULL when out of memory. */
json_t *mt_planlist_json(const mt_plan *p);

#endif
