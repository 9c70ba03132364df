/* extrapolate/embtables.h — the embedding tables of a trace: forward ops of TP kind EMBEDDING
 * (Embedding, EmbeddingBag) reading a weight, the table. What pass_emb.c shards and compare's
 * sparse plans look for. All O(the op's tensors) but mt_emb_count, O(ops).
 */
#ifndef MT_EXTRAPOLATE_EMBTABLES_H
#define MT_EXTRAPOLATE_EMBTABLES_H

#include <stdint.h>

#include "tracer/trace.h"

/* 1 when op i looks up a table. */
int mt_emb_is_table(const trace *t, int32_t i);
/* Its table: the weight tensor it reads, -1. */
int32_t mt_emb_table_weight(const trace *t, int32_t i);
/* Its table's bytes; the bytes of its (pooled) output at the traced batch. */
double mt_emb_table_bytes(const trace *t, int32_t i);
double mt_emb_pooled_bytes(const trace *t, int32_t i);
/* Tables looked up by an embedding_bag (a recommendation model's pooled lookups). */
int32_t mt_emb_bag_count(const trace *t);

#endif
