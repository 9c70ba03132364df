/* network/lmm.h — the max-min fair-share solver on its own (after SimGrid's lmm): a system of
 * CONSTRAINTS (a capacity: a link's bandwidth) and VARIABLES (a value: a flow's rate), where a
 * variable uses a list of constraints (an ELEMENT per pair). solve() gives every variable its
 * max-min fair value: no variable can grow without shrinking one whose value is not larger
 * (progressive filling: the constraint with the smallest fair share rem / unfixed fixes the
 * value of its unfixed variables, whose value is taken off their other constraints; repeat).
 *
 * Incremental: every change (a variable attached or detached, a capacity set) marks the
 * constraints it touches in the MODIFIED SET. solve() re-solves only the connected component of
 * variables and constraints reachable from the modified constraints — no other value can
 * change — and returns at once when the set is empty. After a solve, mt_lmm_solved_vars /
 * _cnsts list the component (in a deterministic breadth-first order from the modified
 * constraints, in the order they were marked) and mt_lmm_changed_vars those whose value moved.
 * There is no topology and no time in here: the caller (netmodels/flow.c) maps links and flows
 * onto constraints and variables and decides when to solve.
 *
 * Invariants: a variable is on each constraint of its list exactly once (slot s of constraint c
 * holds (v, k) with cnsts(v)[k] == c and slots(v)[k] == s); a constraint is in the modified set
 * at most once; values are those of the last solve that reached the variable (0 before any).
 * Costs: attach/detach O(constraints of the variable); set_capacity O(1); a solve
 * O(E log C) for a component with E elements and C constraints; memory O(elements).
 */
#ifndef MT_NETWORK_LMM_H
#define MT_NETWORK_LMM_H

#include <stdint.h>

#include "util/err.h"

typedef struct mt_lmm mt_lmm;

/* An empty system; NULL when out of memory. */
mt_lmm *mt_lmm_new(void);
void mt_lmm_free(mt_lmm *s);

/* ---- constraints ---- */

/* Room for ncnsts constraints in all (so that many mt_lmm_cnst_new do not grow the arrays by
 * doubling); 0 when out of memory (the constraints are kept). */
int mt_lmm_reserve(mt_lmm *s, int64_t ncnsts);
/* Adds a constraint of capacity >= 0; returns its id (0, 1, ... in creation order) or -1 when out
 * of memory. O(1) amortised. */
int32_t mt_lmm_cnst_new(mt_lmm *s, double capacity);
/* The capacity of constraint c of a lazy system (flow.c: the link's bandwidth), asked the first
 * time c's capacity is needed (a solve reaches it, or mt_lmm_cnst_capacity) unless set before. */
typedef double (*mt_lmm_cap_fn)(void *ctx, int32_t c);
/* Makes constraints 0 .. n-1 of an empty system at once, each of capacity cap_of(ctx, c): their
 * state is zero memory until a constraint is first used (no page of unused ones is touched).
 * 0 when out of memory or the system is not empty. */
int mt_lmm_cnsts_lazy(mt_lmm *s, int64_t n, mt_lmm_cap_fn cap_of, void *ctx);
/* Sets the capacity and marks the constraint modified (even without variables). */
void mt_lmm_cnst_set_capacity(mt_lmm *s, int32_t c, double capacity);
double mt_lmm_cnst_capacity(const mt_lmm *s, int32_t c);
/* Number of variables on c, and the k-th of them (0 <= k < that number; the order changes when
 * one is detached: the last takes its slot). */
int32_t mt_lmm_cnst_nvars(const mt_lmm *s, int32_t c);
int32_t mt_lmm_cnst_var(const mt_lmm *s, int32_t c, int32_t k);
/* The capacity used by c's variables as of the last solve that reached c:
 * capacity - what was left (at most the capacity, never below 0 left). */
double mt_lmm_cnst_usage(const mt_lmm *s, int32_t c);

/* ---- variables ---- */

/* A new variable with value 0 and no constraints; `data` is the caller's (its flow id). Returns
 * its id (ids of freed variables are reused) or -1 when out of memory. */
int32_t mt_lmm_var_new(mt_lmm *s, int64_t data);
/* Puts v (which uses no constraint now) on constraints cnsts[0..n) in that order and marks
 * each modified. MT_ENOMEM leaves v and every constraint unchanged. */
mt_status mt_lmm_var_attach(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, mt_error *err);
/* mt_lmm_var_attach without marking anything modified, the value set to `value`: for a variable
 * that joins a component as a copy whose solve is known (network folding, netmodels/flow.c). */
mt_status mt_lmm_var_attach_quiet(mt_lmm *s, int32_t v, const int32_t *cnsts, int32_t n, double value,
                                  mt_error *err);
/* Puts c's variables in the order vars[0..n) (n = its variable count, a permutation of them), as
 * if they had been attached and detached in the history that gave another constraint that order. */
void mt_lmm_cnst_order(mt_lmm *s, int32_t c, const int32_t *vars, int32_t n);
/* 1 when c is in the modified set (a solve is pending for its component). */
int mt_lmm_cnst_modified(const mt_lmm *s, int32_t c);
/* Marks c modified (its component is solved by the next solve). */
void mt_lmm_cnst_touch(mt_lmm *s, int32_t c);
/* Takes v off all its constraints; marks modified those that still have variables. v keeps its
 * list (mt_lmm_var_cnsts) until it is attached again or freed, and its value. */
void mt_lmm_var_detach(mt_lmm *s, int32_t v);
/* Detaches v (when attached) and releases its id. */
void mt_lmm_var_free(mt_lmm *s, int32_t v);
/* v's constraint list (as attached); returns its length. */
int32_t mt_lmm_var_cnsts(const mt_lmm *s, int32_t v, const int32_t **cnsts);
double mt_lmm_var_value(const mt_lmm *s, int32_t v);
int64_t mt_lmm_var_data(const mt_lmm *s, int32_t v);

/* ---- solving ---- */

/* 1 when something changed since the last solve (the modified set is not empty). */
int mt_lmm_modified(const mt_lmm *s);
/* Re-solves the component reachable from the modified constraints (constraints without
 * variables are dropped from the set and not solved) and empties the set. Returns at once when
 * the set is empty. MT_ENOMEM (message in err) leaves values as they were. */
mt_status mt_lmm_solve(mt_lmm *s, mt_error *err);
/* What the last solve reached: its variables and constraints (breadth-first from the modified
 * constraints), and the variables whose value it changed. Valid until the next solve. */
const int32_t *mt_lmm_solved_vars(const mt_lmm *s, int32_t *n);
const int32_t *mt_lmm_solved_cnsts(const mt_lmm *s, int32_t *n);
const int32_t *mt_lmm_changed_vars(const mt_lmm *s, int32_t *n);

#endif
