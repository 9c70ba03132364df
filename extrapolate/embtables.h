/* extrapolate/embtables.h — the embedding tables of a trace: forward ops of TP kind EMBEDDING
 * (Embedding, EmbeddingBag) reading a weight, the table. What pass_emb.c shards and compare's
 * sparse plans look for. All O(the op's tensors) but mt_emb_count, O(ops).
 */
#ifndef MT_EXTRAPOLATE_EMBTABLES_H
#define MT_EXTRAPOLATE_EMBTABLES_H

#include <stdint.h>

#include "tracer/trace.h"

/* 1 when op i looks up a table. */
int mt_emb_is_table(const mt_trace *t, int32_t i);
/* Its table: the weight tensor it reads, -1. */
int32_t mt_emb_table_weight(const mt_trace *t, int32_t i);
/* Its table's bytes; the bytes of its (pooled) output at the traced batch. */
double mt_emb_table_bytes(const mt_trace *t, int32_t i);
double mt_emb_pooled_bytes(const mt_trace *t, int32_t i);
/* Tables looked up by an embedding_bag (a recommendation model's pooled lookups). */
int32_t mt_emb_bag_count(const mt_trace *t);
/* Of those, the lookups fed jagged ids: an offsets input (the second non-weight input) that was not
 * made by aten::arange (PyTorch makes arange offsets for fixed-size 2-D bags; TorchRec's
 * KeyedJaggedTensor and user code build them from lengths by cumsum/cat). */
int32_t mt_emb_jagged_count(const mt_trace *t);
/* Distinct tables (weights) looked up by a plain embedding (not a bag), positions excluded. */
int32_t mt_emb_dense_count(const mt_trace *t);

#endif
