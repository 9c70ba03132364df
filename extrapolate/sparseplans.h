/* extrapolate/sparseplans.h — the expert-parallel and sharded-embedding variants `mitosis compare`
 * lists beside its plans (--sparse-plans): for a plan with D > 1 data-parallel replicas (DDP, not
 * ZeRO/FSDP), ep=E for each E > 1 dividing D and every MoE layer's expert count (dp becomes D / E:
 * the same GPUs), and emb=table|row|column over the D replicas.
 * auto: ep when the trace has MoE layers (moe.h), table, row and column when it has embedding_bag
 * tables (embtables.h). Cost O(plans x divisors) plus one trace scan.
 */
#ifndef MT_EXTRAPOLATE_SPARSEPLANS_H
#define MT_EXTRAPOLATE_SPARSEPLANS_H

#include <stdint.h>

#include "extrapolate/plan.h"
#include "tracer/trace.h"
#include "util/err.h"

enum { MT_SPARSE_EP = 1, MT_SPARSE_TABLE = 2, MT_SPARSE_ROW = 4, MT_SPARSE_COLUMN = 8, MT_SPARSE_AUTO = 16 };
#define MT_SPARSE_CHOICES "auto, none or a list of ep, table, row, column"

/* "auto", "none" or "ep,table" into a mask (auto = MT_SPARSE_AUTO); MT_EINVAL naming the bad one. */
mt_status mt_sparse_parse(const char *s, unsigned *out, mt_error *err);

/* Appends the variants of each of the *n plans (*plans realloc'd). */
mt_status mt_sparse_expand(const mt_trace *t, unsigned kinds, mt_plan **plans, int32_t *n, mt_error *err);

#endif
