"""collect.py --dist moe's expert split (tracer/sparse_dist.py) against the unsplit model: 2 gloo
processes, each builds MODEL, keeps an unsplit copy with the same weights, splits the other as
moe_workload does (experts over the ranks, all-to-all dispatch and combine; bmm-moe-tiny: slices of
the stacked weights and equal-split capacity buffers) and runs both on its own inputs: the loss and
every dense parameter's gradient must agree (a dense parameter sees only this rank's tokens; the
experts' gradients hold both ranks' tokens and are left out).
usage: moe_split.py TRACER_DIR MODEL[,MODEL...] OUT_PREFIX   (exit 1 when any differs)
Several models run one after another in the same 2 processes (torch and gloo started once; issue 47);
each prints a line "MODEL OK|BAD loss loss OK|BAD loss loss" (rank 0, rank 1), or "MODEL missing"."""
import copy, os, sys
sys.path.insert(0, sys.argv[1])
import multiprocessing, multiprocessing.connection

def run(rank, models, store, out):  # a spawned rank: only the ranks import torch (this file's parent does not)
    global torch, dist
    import torch, torch.distributed as dist
    import collect as C
    real, real_ddp = C.build_workload, torch.nn.parallel.DistributedDataParallel
    for i, model_name in enumerate(models):
        try:
            check(C, rank, model_name, out + "-" + model_name, store if i == 0 else None)
        finally:  # the next model starts from collect.py's own functions
            C.build_workload, torch.nn.parallel.DistributedDataParallel = real, real_ddp
    dist.destroy_process_group(); os._exit(0)

def check(C, rank, model_name, out, store):
    import sparse_dist
    args = C.parse_args(["--model", model_name, "--batch", "2", "--layers", "2", "--hidden", "32", "--heads", "2",
                         "--experts", "4", "--seq-len", "8", "--vocab", "64", "--threads", "1", "--warmup", "0",
                         "--steps", "1", "--capacity-factor", "2.0", "--world", "2", "--dist", "moe", "-o", out + ".unused"])
    device, dtype = C.setup_torch(args)
    if store:  # a file rendezvous (as collect_dist.py): no port for a job beside this one to take
        dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=2)
    ref, ids, loss_fn, _, _ = C.build_workload(args, device, dtype, seed=args.seed + rank)
    ref = copy.deepcopy(ref)
    real = C.build_workload

    def same_weights(*a, **k):  # the model moe_workload splits starts from ref's weights
        r = real(*a, **k)
        r[0].load_state_dict(ref.state_dict())
        return r
    C.build_workload = same_weights
    captured = {}
    real_ddp = torch.nn.parallel.DistributedDataParallel
    class DDP(real_ddp):
        def __init__(self, model, *a, **k):
            captured["m"] = model
            super().__init__(model, *a, **k)
    torch.nn.parallel.DistributedDataParallel = DDP
    sparse_dist.moe_workload(args, rank, device, dtype)
    m = captured["m"]
    ls = loss_fn(m(ids)); ls.backward()
    lr = loss_fn(ref(ids)); lr.backward()
    bad = abs(ls.item() - lr.item()) > 1e-5 * abs(lr.item())
    gr = dict(ref.named_parameters())
    for n, p in m.named_parameters():
        if p.grad is None or n.endswith((".w_in", ".w_out")) or ".experts." in n:
            continue
        if not torch.allclose(p.grad, gr[n].grad, rtol=1e-4, atol=1e-6):
            bad = True
            print("rank %d: %s differs" % (rank, n))
    open(out + ".%d" % rank, "w").write("%s %.7f %.7f\n" % ("BAD" if bad else "OK", ls.item(), lr.item()))

if __name__ == "__main__":
    models, out, ok = sys.argv[2].split(","), sys.argv[3], True
    ctx = multiprocessing.get_context("spawn")
    procs = [ctx.Process(target=run, args=(r, models, out + ".store", out)) for r in range(2)]
    for p in procs:
        p.start()
    live = list(procs)
    while live:  # as mp.spawn: the first rank to fail stops the other (its lines are then missing, below)
        multiprocessing.connection.wait([p.sentinel for p in live])
        for p in [p for p in live if p.exitcode is not None]:
            live.remove(p)
            if p.exitcode != 0:
                for q in live:
                    q.terminate()
    for m in models:
        try:
            lines = [open("%s-%s.%d" % (out, m, r)).read().strip() for r in (0, 1)]
        except OSError:
            lines = ["missing"]
        print(m, *lines)
        ok = ok and all(l.startswith("OK") for l in lines)
    sys.exit(0 if ok else 1)
