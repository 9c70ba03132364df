/* tracer/khost.h — the host side of a Kineto trace, from its events alone (khost.c): which event
 * encloses which, the training steps, and the thread, region and nn.Module around an event (the
 * blocking calls: ksync.h). The linker (link.c) and the op emitter (emit.c) ask these.
 *
 * Invariant after mt_khost_nest: ord lists every event by (tid, ts, -dur, annotations first,
 * index); each event's parent is the innermost event of its thread enclosing its start, and its
 * outer the outermost KEV_OP above it (itself when it is one). Communication annotations
 * (gloo:all_reduce, record_param_comms) count as ops.
 * Costs: nest O(E log E); steps O(E + S log S); the per-event questions
 * O(depth), O(E) and O(modules).
 */
#ifndef MT_TRACER_KHOST_H
#define MT_TRACER_KHOST_H

#include <stdint.h>

#include "tracer/kineto.h"
#include "tracer/trace.h"

/* A training step: events starting in [start, end); number is N of ProfilerStep#N, else the
 * step's index, -1 for the whole trace. */
typedef struct kstep {
    int64_t start, end;
    int number;
} kstep;

/* Fills parent/outer of every event and returns the order above in *order_out (malloc'd). */
mt_status mt_khost_nest(kineto_data *k, int32_t **order_out);
/* Steps by start: ProfilerStep#N annotations; else the spans ending at each Optimizer.step (the
 * last one keeps trailing work); else one step holding the whole trace. Never empty. */
mt_status mt_khost_steps(const kineto_data *k, kstep **out, int64_t *n_out);
/* 1 when an annotation named prefix... encloses event x. */
int mt_khost_in_region(const kineto_data *k, const kev *x, const char *prefix);
/* 1 when most outermost ops of thread tid are autograd evaluate_function, the first of them too:
 * the backward thread (not a CPU step's one thread, which begins with its forward). */
int mt_khost_backward_thread(const kineto_data *k, int64_t tid);
/* The innermost nn.Module event on x's thread holding x's start, or NULL. */
const char *mt_khost_module(const kineto_data *k, const kev *x);
/* The innermost user annotation enclosing x (not a ProfilerStep#, not a collective's), -1 none. */
int32_t mt_khost_annotation(const kineto_data *k, const kev *x);

#endif
