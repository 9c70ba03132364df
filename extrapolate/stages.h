/* extrapolate/stages.h — the pipeline partitioner: a model's units (layers, else forward ops, in
 * forward order) cut into P contiguous stages.
 *
 * A unit's cost is its forward and backward device time plus its share of the step's optimizer
 * work (and of the parameter-sized ops after the forward, zero_grad): the share of the parameter
 * bytes its weights hold, as each stage runs the optimizer on its own weights. The cut minimises
 * the largest stage cost (binary search on the bound, greedy fill: O(units log time)): the slowest
 * stage sets the pipeline's pace, so no cut may be slower than this time-balanced cut.
 * Among the cuts as fast, cuts go where the fewest activation tensors cross (less to send): between
 * blocks, as pipeline frameworks cut a model (GPipe's balance of an nn.Sequential, Megatron's
 * layers). Inside a residual block the block's input crosses beside the branch's activation (two
 * tensors, or more), at its boundary only the block's output does. Each stage ends, left to right,
 * at the point with the fewest crossings that keeps it and the rest within the bound, the nearest
 * to an even share on a tie (O(units x P)).
 * With a send cost (mt_stages_cut_chunks' send_ns_per_byte > 0, from the network's link bandwidth)
 * a stage also weighs its sends: the activations crossing its right cut and the gradients crossing
 * its left cut, bytes of the traced batch x the cost per byte. The cut with the least slowest stage
 * so counted (an exact dynamic programme over stages and units, up to MT_STAGES_SENDS_MAX_UNITS
 * units) replaces the time-balanced one when it makes that slowest stage lighter; so it is never
 * worse than the time-balanced cut by this measure (ResNet-18 pp2: a cut between residual blocks,
 * one tensor crossing, instead of inside one, three).
 * Under --vpp the pieces are P x V model chunks, chunk c on stage c mod P (mt_stages_cut_chunks);
 * there sends are not weighed.
 * Cost: O(ops + trefs + tensors + units (log time + P)).
 *
 * Block cuts (mt_stages_cut_blocks), the default on a trace whose repeating block (blocks.h) holds
 * at least half its layers: as Megatron-Core and PyTorch's pipelining cut a transformer, at block
 * boundaries, the same number of blocks on every stage and every virtual chunk (Megatron's
 * num_layers / (P x V)), the layers before the first block (the embedding) on the first chunk, those
 * after the last (final norm, head, loss) on the last; or as many blocks per stage / chunk as a list
 * says (--pp-layers, Megatron's uneven first/last stages). When the blocks do not divide P x V and no
 * list is given Megatron refuses; mitosis then keeps the time-balanced cut and says so in a warning
 * (compare's plan lists keep such plans); --pp-cut blocks makes it a refusal.
 */
#ifndef MT_EXTRAPOLATE_STAGES_H
#define MT_EXTRAPOLATE_STAGES_H

#include <stddef.h>
#include <stdint.h>

#include "extrapolate/blocks.h"
#include "tracer/trace.h"
#include "util/err.h"

/* How the units were cut: time-balanced (the partitioner above), equal blocks, or a --pp-layers list. */
typedef enum { MT_CUT_TIME = 0, MT_CUT_BLOCKS, MT_CUT_LIST } mt_cut_kind;
/* What the plan asks (--pp-cut): blocks when the trace has a transformer block, else time; always
 * blocks (refused without a block or when they do not divide); always time-balanced. */
typedef enum { MT_PPCUT_AUTO = 0, MT_PPCUT_BLOCKS, MT_PPCUT_TIME } mt_ppcut;
#define MT_PPCUT_CHOICES "auto|blocks|time"
enum { MT_STAGES_LIST_MAX = 256 }; /* entries of a --pp-layers list; chunks a cut names */

typedef struct mt_stage_cut {
    mt_cut_kind kind;
    int32_t n_chunks;       /* blocks cut: P x V; 0 when time-balanced */
    int32_t blocks[MT_STAGES_LIST_MAX]; /* blocks of chunk c (c < n_chunks; chunk c on stage c mod P) */
    int32_t n_blocks;       /* the trace's blocks (0: none found) */
    int32_t first_layer;    /* the first block's first layer, layers per block */
    int32_t block_layers;
    char why_time[200];     /* time-balanced on a trace with blocks: why (blocks do not divide ...) */
    int32_t clean_points;   /* unit boundaries where the fewest activation tensors cross (none
                             * counts too: nothing to send) */
    int32_t min_crossing;   /* that fewest number, not counting none */
    int clean_only;         /* 1: every cut is at such a point */
} mt_stage_cut;

enum { MT_STAGES_SENDS_MAX_UNITS = 4096 }; /* beyond: sends not weighed (the programme is O(U^2)) */

/* stage_of_unit[u] for u < n_units, given unit[op] (-1: none) for every op of t. Every stage gets
 * at least one unit (n_units >= P, checked by the caller). MT_ENOMEM only. */
mt_status mt_stages_cut(const mt_trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t *stage_of_unit,
                        mt_stage_cut *info);

/* Interleaved pipelines (--vpp V): the units cut into P x V contiguous model chunks the same way
 * (chunk_of_unit[u]; chunk c runs on stage c mod P), except that the time-balanced cut with its
 * chunk boundaries moved to even the stages replaces it when that makes the busiest stage (the sum
 * of its V chunks) lighter. V = 1 with send_ns_per_byte 0 is mt_stages_cut; V = 1 with a send cost
 * weighs each stage's sends (above). n_units >= P x V. MT_ENOMEM only. */
mt_status mt_stages_cut_chunks(const mt_trace *t, const int32_t *unit, int32_t n_units, int32_t P, int32_t V,
                               double send_ns_per_byte, int32_t *chunk_of_unit, mt_stage_cut *info);

/* 1 when t's repeating block (bl, from mt_blocks_find) makes it a model cut at blocks by default:
 * the blocks hold at least half the trace's layers (a transformer's; not a ResNet's two alike
 * residual blocks among 41 layers). */
int mt_stages_blocks_default(const mt_trace *t, const mt_blocks *bl);

/* The block cut of U units (the trace's layers, unit = layer) into P x V chunks, chunk_of_unit[u]:
 * `per` (n_per entries: P, each a stage's blocks split evenly over its V chunks, or P x V, each a
 * chunk's in model order; NULL/0: equal) blocks per chunk, the layers before the first block on
 * chunk 0 and after the last on the last chunk. *info gets the kind and the blocks per chunk.
 * MT_EINVAL (one line naming --pp-layers or --pp/--vpp) when the blocks do not divide, a list does
 * not add up to the blocks or has an empty chunk. O(U + P x V). */
mt_status mt_stages_cut_blocks(const mt_trace *t, const mt_blocks *bl, int32_t U, int32_t P, int32_t V, const int32_t *per, int32_t n_per,
                               int32_t *chunk_of_unit, mt_stage_cut *info, mt_error *err);

/* free_x[x] = 1 for each tensor made in forward from no batch data: by ops reading no weight, no
 * input and only such tensors (positions from arange, their rotary cos/sin, a causal mask). A
 * pipeline stage makes its own (Megatron's rotary embedding and masks on every stage, torchtitan's
 * freqs_cis buffer): such a tensor is not sent across a cut. NULL on allocation failure; free()
 * it. O(ops + trefs). */
unsigned char *mt_stages_batch_free(const mt_trace *t);

/* A cut between chunks falls between layers, and the tracer starts a layer at each op reading a
 * weight: the weight-free ops that end a chunk's last layer (an RMSNorm's pow, mean, rsqrt before its
 * weight's mul; a ResNet block's add and ReLU; a CNN's pooling) may belong to the next. At each chunk
 * boundary those trailing ops (after the layer's last op reading a weight) run from the point where
 * the fewest activation bytes cross the cut (as mt_pp_boundaries counts them) on the next chunk: unit[]
 * of those forward ops, and of the backward ops linked to them (fwd_op), becomes the next layer. On a
 * tie nothing moves (a CNN's cut keeps its pooled output; a GPT block's residual add). RMSNorm Llama
 * at a block cut: the residual stream alone crosses (B S h), not it and the normalised copy. Traces
 * without layers (unit = op) are left as they are. O(P x V x (ops + trefs + tensors)); MT_ENOMEM only. */
mt_status mt_stages_settle_cuts(const mt_trace *t, int32_t *unit, const int32_t *chunk_of_unit, int32_t U);

/* "blocks 4+4" (the blocks per chunk, chunk order), "blocks 7+8+8+9 (--pp-layers)", "time-balanced". */
const char *mt_stages_cut_describe(const mt_stage_cut *c, char *buf, size_t len);

/* "7,8,8,9" into per[] (at most MT_STAGES_LIST_MAX positive counts); MT_EINVAL naming --pp-layers. */
mt_status mt_stages_list_parse(const char *s, int32_t *per, int32_t *n, mt_error *err);

#endif
