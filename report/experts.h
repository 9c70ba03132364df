/* report/experts.h — expert parallelism in reports: the per-expert load of each MoE layer, the EP
 * ranks' shares, the straggler expert (extrapolate/moe.h). Each function does nothing (or returns
 * NULL) for a program without MoE layers. O(layers x experts).
 */
#ifndef MT_REPORT_EXPERTS_H
#define MT_REPORT_EXPERTS_H

#include <jansson.h>
#include <stdio.h>

#include "extrapolate/program.h"

/* {"ep", "shares": "traced"|"zipf", "layers": [{"experts", "top_k", "tokens", "routed", "dropped",
 *  "dispatch_bytes", "load": [share per expert], "tokens_per_expert": [tokens of the whole EP group
 *  per micro-batch], "rank_share": [per EP rank]}], "straggler": {"layer", "expert", "ep_rank",
 *  "share", "work_vs_even"}}; NULL without MoE layers. */
json_t *mt_experts_json(const mt_program *p);
/* "experts    2 MoE layers x 4 experts (top-2) over ep 4, traced shares; straggler: expert 2 of
 * layer 0 (31 % of its tokens) on EP rank 2, 1.2x an even rank's expert work" */
void mt_experts_print(FILE *out, const mt_program *p);

/* An HTML section: "Expert load", per MoE layer one bar per expert (its share of the routed
 * tokens, the straggler's marked) and the straggler named. */
void mt_experts_html(FILE *f, const mt_program *p);

#endif
