"""Multi-process recordings for tracer/collect.py.

--dist ddp|pipeline|embedding|moe --world N: N processes on this machine (torch.distributed, gloo,
CPU, each pinned to its own core) run one training job; rank 0 records its step (Kineto + ET,
with the job's distributedInfo as Kineto writes it), every rank times the same steps, and
meta.json gets the job's measured step (per step the slowest rank, median over the steps) beside
rank 0's own times.  Workloads:

  ddp        DistributedDataParallel of --model (bool buffers, constants, are not broadcast);
  pipeline   resmlp cut into --world stages of whole blocks (rank r holds blocks
             [r*L/N, (r+1)*L/N), the last rank the head and the loss), GPipe over
             --micro-batches: every forward with dist.send of its output to the next rank, then
             every backward with dist.send of its input's gradient to the previous rank;
             meta.json records the bytes rank 0 sends per micro-batch;
  embedding  dlrm-tiny with its tables sharded table-wise, moe  moe-tiny with its experts split
             over the ranks: the all-to-all jobs, in sparse_dist.py.

--sibling-load (one process): the recording runs on core 0 while a sibling process runs the same
model's step without communication on core 1, so that the recorded op times carry the contention
each rank of a two-process run sees on a two-core machine.
"""

import json
import os
import socket
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import collect as C  # noqa: E402  (the recorder's helpers: same folder)
import sparse_dist  # noqa: E402  (the all-to-all jobs: moe, embedding)


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def pin(core):
    """Runs this process on one core (core modulo the machine's cores: a process pinned before
    may pin its child elsewhere); False when it cannot."""
    try:
        os.sched_setaffinity(0, {core % (os.cpu_count() or 1)})
        return True
    except (AttributeError, OSError):
        return False


def dist_info(world):
    """distributedInfo as Kineto writes it for the default process group."""
    return {"backend": "gloo", "rank": 0, "world_size": world, "pg_count": 1,
            "pg_config": [{"pg_name": "0", "pg_desc": "default_pg", "backend_config": "cpu:gloo",
                           "pg_size": world, "ranks": list(range(world))}]}


# ---------------------------------------------------------------------------------------------
# Workloads: each returns (step function, model parameters on this rank, info for meta.json)
# ---------------------------------------------------------------------------------------------

def ddp_workload(args, rank, device, dtype):
    import torch
    model, inputs, loss_fn, opt, info = C.build_workload(args, device, dtype)
    model.train()
    skip = [n for n, b in model.named_buffers() if not b.is_floating_point()]
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, skip)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = opt or C.make_optimizer(args.optimizer, ddp)

    def step():
        opt.zero_grad(set_to_none=True)
        if isinstance(inputs, dict):
            out = ddp(**inputs)
        elif isinstance(inputs, (tuple, list)):
            out = ddp(*inputs)
        else:
            out = ddp(inputs)
        loss_fn(out).backward()
        opt.step()

    return step, sum(p.numel() for p in model.parameters()), info


def pipeline_workload(args, rank, device, dtype):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    if args.model != "resmlp":
        C.fail("--dist pipeline cuts resmlp into stages of whole blocks (got --model %s)" % args.model)
    W, M, L = args.world, args.micro_batches, args.layers
    if L < W:
        C.fail("--dist pipeline needs --layers >= --world (%d blocks for %d stages)" % (L, W))
    model = C._builtin_modules()["ResMLP"](args.hidden, L).to(device=device, dtype=dtype)
    first, last = rank * L // W, (rank + 1) * L // W
    head = rank == W - 1
    params = [p for i, b in enumerate(model.blocks) if first <= i < last for p in b.parameters()]
    if head:
        params += list(model.head.parameters())
    opt = torch.optim.SGD(params, lr=1e-3, momentum=0.9) if args.optimizer == "sgd" else \
        torch.optim.Adam(params, lr=1e-4)
    gen = torch.Generator().manual_seed(args.seed)
    x = torch.randn(args.batch, args.hidden, generator=gen).to(device=device, dtype=dtype)
    y = torch.randint(0, 10, (args.batch,), generator=gen).to(device)
    mb = args.batch // M
    sent = []

    def step():
        opt.zero_grad(set_to_none=True)
        ins, outs = [], []
        for m in range(M):
            if rank == 0:
                xin = x[m * mb:(m + 1) * mb]
            else:
                xin = torch.empty(mb, args.hidden, dtype=dtype)
                dist.recv(xin, rank - 1)
                xin.requires_grad_()
            out = model.run(xin, first, last, head)
            if head:
                out = F.cross_entropy(out.float(), y[m * mb:(m + 1) * mb]) / M
            else:
                act = out.detach()
                dist.send(act, rank + 1)
                sent.append(act.numel() * act.element_size())
            ins.append(xin)
            outs.append(out)
        for m in range(M):
            if head:
                outs[m].backward()
            else:
                g = torch.empty_like(outs[m])
                dist.recv(g, rank + 1)
                outs[m].backward(g)
            if rank > 0:
                dist.send(ins[m].grad, rank - 1)
        opt.step()

    info = {"hidden": args.hidden, "layers": L, "stage_blocks": [r * L // W for r in range(W + 1)],
            "micro_batches": M, "sent": sent}
    return step, sum(p.numel() for p in params), info


WORKLOADS = {"ddp": ddp_workload, "pipeline": pipeline_workload, "embedding": sparse_dist.embedding_workload,
             "moe": sparse_dist.moe_workload}


# ---------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------

def _rank_main(rank, args, port, result_path):
    import torch
    import torch.distributed as dist
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    pinned = pin(rank)
    if args.threads is None:
        args.threads = 1
    device, dtype = C.setup_torch(args)
    if device.type != "cpu":
        C.fail("--dist runs on CPU (gloo); use --device cpu")
    dist.init_process_group("gloo", rank=rank, world_size=args.world)
    try:
        step, n_params, info = WORKLOADS[args.dist](args, rank, device, dtype)
        for _ in range(args.warmup):
            step()
        dist.barrier()
        if rank == 0:
            os.makedirs(args.out, exist_ok=True)
            rec = C.profile_step(step, args.warmup, device, args.out, {"distributedInfo": dist_info(args.world)})
        else:
            step()
        times, _ = C.time_steps(step, args.steps, device, before=dist.barrier)
        every = [None] * args.world
        dist.all_gather_object(every, times)
        if rank == 0:
            job = [max(r[i] for r in every) for i in range(args.steps)]
            meta = C.base_meta(args, device, n_params, args.optimizer)
            meta.update(rec)
            meta["step_time_ms"] = dict(C.stats(job), all=[round(t, 3) for t in job], timer="time.perf_counter",
                                        note="the job's step: per step the slowest rank's, after a barrier")
            meta["step_wall_ms"] = C.stats(job)
            sent = info.pop("sent", None)
            meta["dist"] = {
                "mode": args.dist, "world": args.world, "rank": 0, "backend": "gloo", "pinned": pinned,
                "threads_per_rank": torch.get_num_threads(),
                "rank_step_ms": [C.stats(r) for r in every],
            }
            if sent:
                meta["dist"]["sent_bytes_per_micro_batch"] = sent[0]
            C.write_meta(args, meta, info)
            with open(result_path, "w") as f:
                json.dump({"job_ms": meta["step_time_ms"]["median"], "ops": rec["kineto_cpu_ops"]}, f)
    finally:
        dist.destroy_process_group()
    # Done and written: leave now. Left to the interpreter's teardown, a process sometimes hangs
    # there for good (torch 1.13's gloo: a worker thread the exit waits for; seen with the short
    # steps of --dist embedding), and the job with it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def run_dist(args):
    import torch.distributed as dist
    import torch.multiprocessing as mp
    if not dist.is_available() or not dist.is_gloo_available():
        C.fail("--dist needs torch.distributed with gloo, which this PyTorch lacks")
    if args.device not in (None, "cpu"):
        C.fail("--dist runs on CPU (gloo); use --device cpu")
    args.device = "cpu"
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "result.json")
        try:
            mp.spawn(_rank_main, args=(args, free_port(), res), nprocs=args.world, join=True)
        except mp.ProcessRaisedException as e:
            msg = str(e).strip().splitlines()
            C.fail("a rank of the --dist %s job failed: %s" % (args.dist, msg[-1] if msg else e))
        with open(res) as f:
            r = json.load(f)
    print("%s: --dist %s, %d ranks: rank 0 %s batch %d: %d cpu ops; job step %.3f ms (median of %d) -> %s"
          % (C.PROG, args.dist, args.world, args.model, args.batch, r["ops"], r["job_ms"], args.steps, args.out))


# ---------------------------------------------------------------------------------------------
# The sibling load
# ---------------------------------------------------------------------------------------------

def _sibling_main(args, core, stop, ready):
    pin(core)
    device, dtype = C.setup_torch(args)
    model, inputs, loss_fn, opt, _ = C.build_workload(args, device, dtype)
    model.train()
    opt = opt or C.make_optimizer(args.optimizer, model)
    ready.set()
    n = 0
    while not stop.is_set():
        opt.zero_grad(set_to_none=True)
        if isinstance(inputs, dict):
            out = model(**inputs)
        elif isinstance(inputs, (tuple, list)):
            out = model(*inputs)
        else:
            out = model(inputs)
        loss_fn(out).backward()
        opt.step()
        n += 1


class Sibling:
    """A process stepping the same model on another core until stop()."""

    def __init__(self, args):
        import torch.multiprocessing as mp
        ctx = mp.get_context("spawn")
        self.stop_ev, ready = ctx.Event(), ctx.Event()
        self.core = 1
        self.proc = ctx.Process(target=_sibling_main, args=(args, self.core, self.stop_ev, ready), daemon=True)
        self.proc.start()
        self.pinned = pin(0)
        if not ready.wait(600):
            self.stop()
            C.fail("the --sibling-load process did not start")
        time.sleep(0.5)  # its first steps warm up too

    def describe(self):
        return {"core": self.core, "recording_pinned_to_core_0": self.pinned,
                "what": "the same model's step, no communication, in a loop"}

    def stop(self):
        self.stop_ev.set()
        self.proc.join(60)
        if self.proc.is_alive():
            self.proc.terminate()


def start_sibling(args):
    return Sibling(args)
