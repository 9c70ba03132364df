/* tracer/saved.h — the activations backward reads: which storages a forward op allocated that a
 * backward op (its nested ops included) reads again, and until which backward op.
 *
 * A training step keeps a forward tensor after its forward readers only when autograd saved it for
 * backward (a matmul's inputs, a softmax's output, a GeLU's input, ...); scores that only feed a
 * softmax, a bias add's output, a mask fill's input are freed in forward. The Execution Trace
 * records every nested op's tensors (ET tensor ids and storage ids), and the backward's nested ops
 * read the saved tensors (a view of one reads its storage), so the saved set is read off the trace
 * instead of assumed from a table of operators.
 * Derivation (mt_saved_build): the ET nodes in id order (= start order, parents first), each
 * belonging to the outermost op whose linked node is its ancestor. A node *allocates* a storage
 * when one of its outputs has a storage none of its inputs has, and no earlier node of the same
 * outermost op allocated it (a parent and its child report the same output); the storage is then
 * bound to that op until another op allocates it (an address reused after a free). A backward op's
 * node reading a storage bound to a forward op's allocation marks that allocation saved, until the
 * latest such backward op.
 * The backward's own temporaries (bwd_temps) come the same way: a backward op's allocations that
 * no op outside backward reads (activation gradients, scratch; not a parameter's gradient, which
 * the optimizer reads), each held from its op to its last backward reader (last_bwd; the op itself
 * when none reads it).
 * Invariant: saved[k].op is a forward op, saved[k].last_bwd a backward op after it, saved[k].bytes
 * > 0, and each (op, storage) appears once; t->has_saved is 1 when the trace's backward ops were
 * linked to ET nodes (else the set is unknown and n_saved is 0).
 * Cost: O(ET nodes + tensor values) with a hash map over storage ids.
 */
#ifndef MT_TRACER_SAVED_H
#define MT_TRACER_SAVED_H

#include "tracer/et.h"
#include "tracer/trace.h"
#include "util/err.h"

/* Fills t->saved, t->n_saved, t->bwd_temps, t->n_bwd_temps and t->has_saved from the ET e the ops of t are linked to
 * (ops[i].et_node). MT_ENOMEM only. */
mt_status mt_saved_build(const et_data *e, mt_trace *t, mt_error *err);

#endif
