/* sim/simulate.h — runs the extrapolated step: N virtual GPUs walking their stage programs
 * (extrapolate/program.h) on the event engine, with every collective and pipeline transfer
 * simulated on a network model.
 *
 * Each virtual GPU has a compute stream (its program cursor), one communication stream per
 * group it belongs to, of every kind in the program's group table (extrapolate/group.h; a group
 * runs its collectives one at a time, in issue order, as NCCL does on one communicator; a kind
 * whose groups would have one rank has none, and its collectives do nothing) and asynchronous
 * point-to-point sends. The simulator never asks which strategy a kind serves. A collective starts when every
 * member has issued it and the group's previous collective has finished; blocking collectives
 * hold the members' compute streams until they finish. A pipeline RECV waits for the matching
 * micro-batch's delivery.
 *
 * Per GPU the step time splits exactly (integer ps) into
 *   compute + stretch + host wait + exposed communication + peer wait + bubble + idle = step time
 * (docs/attribution.md). Stretch is the time compute took longer because collectives ran beside
 * it (mt_sim_opts.comm_slow; 0 without): compute is what the work takes alone. Compute is device busy time (with the host model, the union of the work
 * on the GPU's streams: sim/busy.h, also while the compute stream waits); host wait is device
 * time waiting for the host to launch work (host model only); the rest of a compute-stream wait
 * is split by what it waited for:
 *  - at a collective (a blocking one, a wait for a group's pending collectives, the optimizer's
 *    wait for DDP buckets): each collective instance records when its last member issued it
 *    (ready); the part of the wait before the latest ready time of the instances it waited for is
 *    peer wait (another rank had not arrived: skew, straggler, pipeline order), the rest is
 *    exposed communication (network time not hidden, queueing behind the group's earlier
 *    collectives included);
 *  - at a pipeline RECV: the part before the sender issued the send is bubble (another stage had
 *    not produced the data), the part from its issue to its delivery is exposed communication.
 * Idle is the tail after the GPU finished while others ran. Communication (comm_ps) is the union
 * of the intervals in which the GPU's collectives, its sends or pipeline data coming to it were
 * in flight (issue to delivery), overlapped or not; so exposed <= comm.
 * The GPU waited for: per GPU, the rank it waited for longest in total (peer wait credited to
 * the last issuer of the latest-ready instance, among simultaneous issuers the lowest rank;
 * bubble to the sender of the data), with how long and the task of its longest single wait.
 *
 * With opts.steps = K > 1 every GPU walks its program K times (step k + 1 starts on a GPU as
 * soon as it has finished step k); collectives are matched by issue order across steps and
 * pipeline receives count arrivals per (micro-batch, direction), so step k's RECV takes step
 * k's data. The per-GPU times then cover all K steps.
 *
 * A run whose event queue empties while a GPU has not finished is MT_ESTUCK, with a message
 * naming the GPU and what it waits for. Costs: memory O(program + N x micro-batches + in-flight
 * collectives); time O(N x tasks + network events).
 */
#ifndef MT_SIM_SIMULATE_H
#define MT_SIM_SIMULATE_H

#include <stdint.h>

#include "extrapolate/hostmodel.h"
#include "extrapolate/program.h"
#include "network/netmodel.h"
#include "sim/engine.h"
#include "util/err.h"

typedef enum {
    MT_SPAN_COMPUTE = 0,  /* a COMPUTE task (its items ran back to back from start) */
    MT_SPAN_COLL,         /* a collective this GPU took part in: start -> finish */
    MT_SPAN_SEND,         /* a pipeline send: issue -> delivery */
    MT_SPAN_WAIT,         /* compute stream blocked on communication in flight (exposed): at a
                           * collective after its last member issued it, at a RECV while the
                           * data travelled */
    MT_SPAN_HOST,         /* device idle waiting for the host to launch its next work (host
                           * model only; task = the task it waits to start, or
                           * &mt_host_tail_task when the device has finished and the host
                           * thread has not) */
    MT_SPAN_PEER,         /* compute stream blocked at a collective before its last member issued
                           * it (peer wait; task: the waiting task) */
    MT_SPAN_BUBBLE        /* compute stream blocked at a RECV before the data was sent (bubble) */
} mt_span_kind;

/* The task an MT_SPAN_HOST span names when the device waits for its host to end the step. */
extern const mt_task mt_host_tail_task;

/* Optional observer (timelines): called once per span when it ends. */
typedef void (*mt_span_fn)(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task,
                           mt_time_ps start, mt_time_ps end);

/* Optional progress report (a progress line): called from inside the run every 256 finished
 * compute tasks with the tasks done so far over all GPUs and their total (every GPU's program
 * length). It must be cheap; each call costs the run O(N) to count. */
typedef void (*mt_progress_fn)(void *ctx, int64_t done, int64_t total);

/* Optional what-if hook (sim/scenario.h provides one): the factor by which item `item` of
 * COMPUTE task `task` takes longer on GPU `rank` in step `step` (1 = as traced, 2 = twice as
 * long). Must return > 0 and depend only on its arguments (runs are deterministic). */
typedef double (*mt_compute_factor_fn)(void *ctx, int32_t rank, int32_t step, const mt_task *task,
                                       const mt_item *item);

/* A new network model and engine (the old ones freed), at time 0, for a rerun. */
typedef mt_status (*mt_sim_fresh_fn)(void *ctx, mt_netmodel **net, mt_engine **e, mt_error *err);

typedef struct mt_sim_opts {
    int32_t ranks_per_node;   /* for the hier algorithm (default 8) */
    const double *gpu_speed;  /* per rank: compute durations are divided by it; NULL = 1 */
    mt_span_fn on_span;
    void *span_ctx;
    /* Host model (NULL: GPU only, every task starts as soon as the device is free). With it,
     * each GPU has a host thread that must launch an op before the device runs it (see
     * extrapolate/hostmodel.h); build the program with one_op_per_task. */
    const mt_hostmodel *host;
    mt_progress_fn on_progress;
    void *progress_ctx;
    int32_t steps;            /* training steps run back to back (<= 1: one) */
    mt_compute_factor_fn compute_factor; /* NULL: none */
    void *factor_ctx;
    /* Symmetry folding (see mt_simulate): no_fold names why it is off (e.g. "--no-fold", "a
     * what-if scenario"), NULL lets it run where it is exact; `fresh` gives a new network and
     * engine for the unfolded rerun when the replicas diverge (NULL: no folding). */
    const char *no_fold;
    /* Network folding on top (see mt_simulate): no_netfold names why it is off ("--no-net-fold"),
     * NULL lets it run where its checks hold. */
    const char *no_netfold;
    mt_sim_fresh_fn fresh;
    void *fresh_ctx;
    /* Collectives one group runs at once, in issue order (<= 1: one at a time, as on one NCCL
     * stream; 2: gloo's ProcessGroupGloo and its two worker threads, the default of
     * ProcessGroupGloo::Options::threads). Concurrent ones share the links. */
    int32_t coll_lanes;
    /* --algo nccl: the fabric NCCL's tuner sees (extrapolate/nccl.h; nranks and nnodes are set per
     * group); NULL otherwise. Must outlive the run. */
    const struct mt_nccl_fabric *nccl;
    /* Compute slowed by communication (perfmodel/commslow.h): per trace op, two slowdowns s >= 0,
     * beside collectives inside one node and beside collectives across nodes; NULL: none. While
     * collectives run on a GPU its compute task progresses at 1 / (1 + s), s its items' mean
     * weighted by their times (the inside-a-node one while any in flight stays inside a node);
     * the time this adds is stretch_ps. Pipeline sends do not slow compute. Must outlive the run. */
    const float *comm_slow;
} mt_sim_opts;

void mt_sim_opts_init(mt_sim_opts *o);

/* Bytes a GPU sent, by class: collectives by their op (broadcast and reduce: other), pipeline
 * sends and traced send/recv pairs: p2p. */
typedef enum {
    MT_TRAFFIC_ALLREDUCE = 0,
    MT_TRAFFIC_ALLGATHER,
    MT_TRAFFIC_REDUCESCATTER,
    MT_TRAFFIC_ALLTOALL,
    MT_TRAFFIC_P2P,
    MT_TRAFFIC_OTHER,
    MT_TRAFFIC_CLASSES
} mt_traffic;

/* "allreduce", "allgather", "reducescatter", "alltoall", "p2p", "other". */
const char *mt_traffic_name(mt_traffic c);

typedef struct mt_gpu_stats {
    int32_t rank, dp, stage, tp;
    mt_time_ps finish_ps;    /* when its last task ended */
    mt_time_ps compute_ps;
    mt_time_ps stretch_ps;   /* compute stretched by communication (mt_sim_opts.comm_slow) */
    mt_time_ps comm_ps;      /* collectives and sends in flight (may overlap compute) */
    mt_time_ps exposed_ps;   /* compute stream waiting on communication in flight */
    mt_time_ps peer_wait_ps; /* compute stream waiting at a collective for a member to issue it */
    mt_time_ps bubble_ps;    /* compute stream waiting for pipeline data not yet sent */
    int32_t waited_for;      /* the rank whose lateness it waited for longest in total, -1 none */
    mt_time_ps waited_for_ps; /* how long (peer wait and bubble credited to it) */
    int32_t waited_pc;       /* its longest single wait for waited_for: the task index in its
                              * stage program (a COLL, WAIT_* or RECV), -1 none */
    mt_time_ps idle_ps;      /* step_ps - finish_ps */
    mt_time_ps host_wait_ps; /* device idle waiting for the host to launch work (host model) */
    mt_time_ps host_busy_ps; /* host thread working (host model) */
    mt_time_ps host_sync_ps; /* host thread blocked in synchronising calls (host model) */
    int32_t peak_live_mb;    /* most micro-batches whose activations were held at once */
    mt_time_ps peak_mem_from_ps; /* when the forward began that brought them to peak_live_mb: the
                                  * activation peak builds through it and holds until the next
                                  * backward frees (the first time, in a run of several steps) */
    double peak_mem_bytes;   /* parameters + gradients + optimizer state + peak activations; with one
                              * micro-batch per step, the gradients the backward makes while its
                              * activations free count only as far as both are held at once
                              * (mt_stage_program.mem_bwd_peak_bytes) */
    double mem_params_bytes, mem_grads_bytes, mem_optimizer_bytes; /* its stage's, per GPU: sharded
                                * where the plan shards them, parameters with one gathered unit */
    double mem_activations_bytes; /* peak_live_mb x the stage's activations per micro-batch */
    double traffic_bytes[MT_TRAFFIC_CLASSES]; /* bytes it sent (each collective's schedule: what its
                                * rank sends in it), all steps */
} mt_gpu_stats;

typedef struct mt_sim_result {
    mt_time_ps step_ps;      /* the last GPU's finish (of the last step when steps > 1) */
    int32_t n_steps;
    mt_time_ps *step_end_ps; /* per step: when its last GPU finished it (step_end_ps[n-1] = step_ps) */
    int32_t n_gpus;
    mt_gpu_stats *gpus;
    int32_t n_layers;
    double *layer_compute_ps; /* per layer: compute on one GPU of its stage (all micro-batches) */
    double *layer_comm_ps;    /* per layer: mean time of the collectives it caused, per GPU */
    uint64_t events;          /* engine events processed */
    uint64_t collectives;     /* collective instances run (each counted once per group) */
    uint64_t sends;           /* pipeline sends */
    double coll_bytes;        /* sum over collective instances of the per-rank buffer */
    double kind_traffic_bytes[MT_GROUP_KINDS_MAX]; /* bytes sent on each group kind's collectives,
                                                    * all GPUs (program's group table order) */
    double pp_traffic_bytes;  /* bytes of pipeline sends, all GPUs */
    double sim_wall_s;        /* host seconds the simulation took */
    int folded;               /* 1: one representative per data-parallel class walked its program */
    int32_t walkers;          /* GPUs that walked their programs (N unless folded) */
    char fold_why[256];       /* why the run was folded, or why not */
    int net_folded;           /* 1: the network carried replica 0's own traffic for every replica */
    uint64_t net_copies;      /* net_folded: copies that ran as flows (where traffic between replicas met them) */
    char net_fold_why[256];   /* folded runs: why the network folded, or why not */
} mt_sim_result;

/* Simulates program p on net (whose endpoints, in rank order, are the GPUs; it needs at
 * least N) using engine e (which must be fresh, at time 0, and the engine net was created
 * on). On success *out holds the result (free with mt_sim_result_free).
 *
 * Symmetry folding: data-parallel replicas run the same program; when nothing tells them apart
 * (o->no_fold NULL, o->fresh given, more than one replica, no per-GPU speeds, compute factors,
 * spans or embedding tables owned per replica), only the ranks of replica 0 walk their programs
 * and every other rank (a mirror) issues each collective and pipeline send at the moment its
 * representative does, so the network still carries every transfer of every GPU. That is exact
 * as long as every mirror's collectives and pipeline arrivals finish when its representative's
 * do; each one is checked, and at the first difference (an asymmetric fabric or placement) the
 * run stops and starts again unfolded on o->fresh's network and engine. A mirror's compute,
 * exposed, peer wait, bubble, host and finish times are its representative's (and whom it waited
 * for, the same rank in its own replica); its traffic and comm time are its own. res->folded, walkers and fold_why say which mode ran and why. Events then scale
 * with the replicas' transfers, not their programs.
 *
 * Network folding, on top (o->no_netfold NULL, a model that can fold: network/netmodel.h): the
 * collectives of group kinds whose groups lie inside one replica (tensor, context parallel...)
 * and the pipeline sends run on the network for replica 0 only; each stands for its copies in
 * the other replicas, whose instances and sends are bookkeeping that ends when replica 0's
 * does. The network checks as it goes that this is what the full network would do (no copy
 * meets traffic between replicas or another replica's copy on a link; every copy's route is
 * replica 0's shifted; no link perturbed), and the max-min solver's result for a component does
 * not depend on what else it solves (network/lmm.h), so the copies' rates would be replica 0's;
 * at the first failed check the run stops and starts again with the network unfolded.
 * res->net_folded and net_fold_why say which ran and why. Events then scale with replica 0's
 * own traffic and the traffic between replicas. */
mt_status mt_simulate(const mt_program *p, mt_netmodel *net, mt_engine *e, const mt_sim_opts *o,
                      mt_sim_result **out, mt_error *err);
void mt_sim_result_free(mt_sim_result *r);

/* A job of a cluster run: its program, options (steps, observers, per-rank speeds, host model;
 * folding never applies: NULL = defaults), its GPUs (indices into the network's endpoint list,
 * rank order, p->plan.gpus of them, no GPU in two jobs) and when it starts. */
typedef struct mt_sim_job {
    const mt_program *p;
    const mt_sim_opts *o;
    const int32_t *eps;
    mt_time_ps start_ps;
    mt_netmodel *net;   /* its view of the shared model (a tap: network/nettap.h), NULL: net itself */
} mt_sim_job;

/* Simulates n jobs at once on one engine and one network model (net on e, both fresh): each walks
 * its program on its own GPUs with its own groups; their transfers share the model's links (the
 * same max-min sharing as within a job). outs[j] is job j's result as mt_simulate gives it, its
 * times counted from the job's start (step_ps = its last GPU's finish - start_ps); events
 * counts the whole run's. Unfolded: a mirror cannot stand for a replica whose links carry
 * another job's traffic. A span observer sees absolute times. On failure no result is kept. */
mt_status mt_simulate_jobs(const mt_sim_job *jobs, int32_t n, mt_netmodel *net, mt_engine *e, mt_sim_result **outs,
                           mt_error *err);

/* The algorithm a collective of `op` over n ranks actually runs under plan pl: the plan's, except
 * that hier is for all-reduces over several whole nodes of ranks_per_node (<= 0: 8) ranks, tree
 * all-gathers run as rings, rings over more than pl->ringflow_above ranks run as ringflow, and auto
 * (not resolved: run/simrun.h resolves it) runs as ring. */
mt_coll_algo mt_sim_coll_algo(const mt_plan *pl, mt_coll_op op, int32_t n, int32_t ranks_per_node);

#endif
