/* emulate/emulate.c — see emulate.h. */
#include "emulate/emulate.h"

#include <stdlib.h>
#include <string.h>

#include "emulate/gather.h"
#include "emulate/mpienv.h"
#include "emulate/walker.h"
#include "run/simrun.h"
#include "run/whatif.h"
#include "util/vec.h"

struct mt_emulation {
    mt_mpienv env;
};

mt_status mt_emulate_begin(mt_emulation **out, mt_error *err) {
    *out = NULL;
    if (!mt_mpienv_launched())
        return mt_fail(err, MT_EINVAL, "not started by an MPI launcher: run it as mpirun -np N mitosis emulate ... "
                       "(N = the plan's GPUs)");
    mt_emulation *em = calloc(1, sizeof *em);
    if (!em) return mt_fail(err, MT_ENOMEM, "out of memory");
    mt_status rc = mt_mpienv_init(&em->env, err);
    if (rc != MT_OK) {
        free(em);
        return rc;
    }
    *out = em;
    return MT_OK;
}

int mt_emulate_rank(const mt_emulation *em) { return em ? em->env.rank : 0; }

void mt_emulate_abort(mt_emulation *em, int code) { mt_mpienv_abort(&em->env, code); }

void mt_emulate_end(mt_emulation *em) {
    if (!em) return;
    mt_mpienv_finalize(&em->env);
    free(em);
}

/* ---- the prediction ------------------------------------------------------------------------ */

typedef struct observer {
    mt_emu_pred pred;
    int32_t me, root, steps;
    const mt_stage_program *sp; /* this rank's */
    int64_t *comp_ns;           /* per step x task of sp: the simulated compute time */
    int32_t *occ;               /* per task of sp: COMPUTE spans seen (its step) */
    int failed;
} observer;

static void on_span(void *ctx, int32_t rank, mt_span_kind kind, const mt_task *task, mt_time_ps start, mt_time_ps end) {
    observer *ob = ctx;
    if (kind == MT_SPAN_COMPUTE && rank == ob->me) {
        int32_t pc = (int32_t)(task - ob->sp->tasks);
        if (pc < 0 || pc >= ob->sp->n_tasks || ob->occ[pc] >= ob->steps) return;
        ob->comp_ns[(size_t)ob->occ[pc]++ * (size_t)ob->sp->n_tasks + (size_t)pc] = (end - start) / 1000;
    } else if (kind == MT_SPAN_COLL && ob->root) {
        mt_emu_pred *p = &ob->pred;
        if (mt_vec_reserve(&p->colls, &p->cap_colls, p->n_colls + 1)) {
            ob->failed = 1;
            return;
        }
        p->colls[p->n_colls++] = (mt_emu_pspan){rank, task->group, end - start};
    }
}

/* Every collective buffer and pipeline send of the program x f. */
static void scale_bytes(mt_program *p, double f) {
    for (int32_t s = 0; s < p->n_stages; s++)
        for (int32_t i = 0; i < p->stages[s].n_tasks; i++) {
            mt_task *k = &p->stages[s].tasks[i];
            if (k->kind == MT_TASK_COLL || k->kind == MT_TASK_SEND) k->bytes *= f;
        }
}

/* Builds and simulates the scaled run; ob gets this rank's compute times (and, on rank 0, every
 * simulated collective). */
static mt_status predict(const mt_mpienv *env, const mt_run_config *rc, const mt_run_input *in, const mt_emu_opts *o,
                         mt_whatif *wi, mt_simrun *run, observer *ob, mt_error *err) {
    mt_simrun_cfg cfg = mt_simrun_cfg_of(rc, 0);
    cfg.host_model = MT_HOST_NONE;
    cfg.op_scale *= o->time_scale;
    mt_whatif_configure(wi, rc, in->t, &cfg);
    MT_CHECK(mt_simrun_build(in->t, in->pm, &cfg, run, err));
    if (run->plan.gpus != env->size)
        return mt_fail(err, MT_EINVAL, "the plan has %d GPUs but %d MPI ranks were started: launch with mpirun -np %d",
                       run->plan.gpus, env->size, run->plan.gpus);
    scale_bytes(run->prog, o->bytes_scale);
    ob->me = env->rank;
    ob->root = env->rank == 0;
    ob->steps = run->sim.steps < 1 ? 1 : run->sim.steps;
    mt_coords c;
    mt_mesh_coords(&run->prog->groups.mesh, env->rank, &c);
    ob->sp = &run->prog->stages[c.c[MT_DIM_PP]];
    ob->comp_ns = calloc((size_t)ob->steps * (size_t)(ob->sp->n_tasks + 1), sizeof *ob->comp_ns);
    ob->occ = calloc((size_t)ob->sp->n_tasks + 1, sizeof *ob->occ);
    if (!ob->comp_ns || !ob->occ) return mt_fail(err, MT_ENOMEM, "out of memory");
    run->sim.on_span = on_span;
    run->sim.span_ctx = ob;
    MT_CHECK(mt_simrun_exec(run, err));
    if (ob->failed) return mt_fail(err, MT_ENOMEM, "out of memory recording the prediction");
    ob->pred.run = run;
    return MT_OK;
}

mt_status mt_emulate_run(mt_emulation *em, const mt_run_config *rc, const mt_run_input *in, const mt_emu_opts *o,
                         mt_emu_report *rep, mt_error *err) {
    memset(rep, 0, sizeof *rep);
    mt_mpienv *env = &em->env;
    env->timeout_ns = (int64_t)o->timeout_ns;
    env->poll_ns = (int64_t)o->poll_ns;
    mt_whatif wi;
    mt_simrun run;
    memset(&run, 0, sizeof run);
    observer ob;
    memset(&ob, 0, sizeof ob);
    mt_walker *w = NULL;
    int64_t t0;
    mt_status st = predict(env, rc, in, o, &wi, &run, &ob, err);
    if (st == MT_OK)
        st = mt_walker_new(env, run.prog, run.sim.ranks_per_node, o->coll, ob.steps, ob.comp_ns, &w, err);
    if (st == MT_OK) st = mt_mpienv_common_start(env, 20000000, &t0, err);
    if (st == MT_OK) st = mt_walker_run(w, t0, err);
    if (st == MT_OK) st = mt_emu_gather(env, w, &ob.pred, o, rep, err);
    mt_walker_free(w);
    free(ob.comp_ns);
    free(ob.occ);
    free(ob.pred.colls);
    mt_simrun_free(&run);
    return st;
}
