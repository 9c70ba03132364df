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
  embedding  dlrm-tiny with its tables sharded table-wise, moe  moe-tiny (or mixtral-, deepseek-,
             hash-moe-, bmm-moe-tiny) with its experts split over the ranks: the all-to-all jobs,
             in sparse_dist.py;
  zero1      DistributedDataParallel of --model stepped by torch.distributed.optim.
             ZeroRedundancyOptimizer (ZeRO-1, parameters_as_bucket_view=True): DDP all-reduces
             every gradient, each rank steps the optimizer on its shard of the parameters (its
             optimizer state only), then every rank's shard is broadcast from it as one flat
             bucket (N broadcasts per step, together the parameter bytes: an all-gather);
             meta.json's "zero" says which parameters each rank owns and what was communicated;
  tp         gpt-tiny split Megatron-style across the N ranks (every rank sees the same batch):
             q/k/v column-parallel by heads, the output projection row-parallel closed by an
             all_reduce, fc1 column-parallel, fc2 row-parallel closed by an all_reduce; the
             input of each column-parallel region goes through an autograd Function whose
             backward all-reduces its gradient.  Per layer: 2 all-reduces in forward and 2 in
             backward, each of a [batch, seq, hidden] tensor.  Token and position embeddings,
             LayerNorms and the (tied) LM head are replicated, not vocabulary-parallel: their
             gradients are equal on every rank and are not communicated.  With --tp-vocab the
             token embedding, the tied LM head and the cross-entropy are split by vocabulary as
             in Megatron-LM: an all-reduce after the embedding lookup, three of per-token
             values in the cross-entropy (maximum, target logit, sum of exponentials), one of
             the LM head's input gradient in backward; the position embedding stays replicated.
             meta.json's "tp" counts the all-reduces and bytes of a step by site and compares
             the first forward's loss with the unsplit model's.

The parent refuses (exit 2, one line naming the rank or file) a job whose ranks did not all
report the same steps, or whose recording is incomplete or inconsistent (verify_recording); the
ranks meet through a file in the job's temporary folder, not a TCP port.

--sibling-load (one process): the recording runs on core 0 while a sibling process runs the same
model's step without communication on core 1, so that the recorded op times carry the contention
each rank of a two-process run sees on a two-core machine.
"""

import json
import math
import os
import statistics
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import collect as C  # noqa: E402  (the recorder's helpers: same folder)
import sparse_dist  # noqa: E402  (the all-to-all jobs: moe, embedding)


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
    W, M, L = args.world, args.micro_batches, args.layers
    model = C._builtin_modules()["ResMLP"](args.hidden, L).to(device=device, dtype=dtype)
    first, last = rank * L // W, (rank + 1) * L // W
    head = rank == W - 1
    params = [p for i, b in enumerate(model.blocks) if first <= i < last for p in b.parameters()]
    if head:
        params += list(model.head.parameters())
    opt = C.make_optimizer(args.optimizer, params)
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


def _ddp_of(model):
    import torch
    skip = [n for n, b in model.named_buffers() if not b.is_floating_point()]
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, skip)
    return torch.nn.parallel.DistributedDataParallel(model)


def _call(model, inputs):
    if isinstance(inputs, dict):
        return model(**inputs)
    if isinstance(inputs, (tuple, list)):
        return model(*inputs)
    return model(inputs)


def zero1_workload(args, rank, device, dtype):
    import torch
    from torch.distributed.optim import ZeroRedundancyOptimizer
    model, inputs, loss_fn, opt, info = C.build_workload(args, device, dtype)
    if opt is not None:
        C.fail("--dist zero1 builds its own sharded optimizer (--optimizer); %s returned one" % args.model)
    model.train()
    ddp = _ddp_of(model)
    cls, kw = C.optimizer_spec(args.optimizer)
    params = [p for p in ddp.parameters() if p.requires_grad]
    opt = ZeroRedundancyOptimizer(params, optimizer_class=cls, parameters_as_bucket_view=True, **kw)
    W = args.world
    owner = opt._param_to_rank
    shard = [[p for p in params if owner[p] == r] for r in range(W)]
    nbytes = lambda ps: sum(p.numel() * p.element_size() for p in ps)
    names = {id(p): n for n, p in model.named_parameters()}

    def step():
        opt.zero_grad(set_to_none=True)
        loss_fn(_call(ddp, inputs)).backward()
        opt.step()

    def after(info):
        state = [t for st in opt.optim.state.values() for t in st.values() if torch.is_tensor(t) and t.dim() > 0]
        info["zero"] = {
            "stage": 1, "optimizer": cls.__name__, "parameters_as_bucket_view": True,
            "shard_parameters": [sum(p.numel() for p in ps) for ps in shard],
            "shard_bytes": [nbytes(ps) for ps in shard],
            "rank0_owns": [names.get(id(p), "?") for p in shard[0]],
            "rank0_optimizer_state_bytes": sum(t.numel() * t.element_size() for t in state),
            "allreduce_bytes_per_step": nbytes(params),
            "broadcasts_per_step": W,
            "broadcast_bytes_per_step": [nbytes(ps) for ps in shard],
            "note": "DDP all-reduces every gradient (allreduce_bytes_per_step, in its buckets); "
                    "rank r steps the optimizer on shard r only, then broadcasts its shard as one "
                    "flat bucket (broadcast_bytes_per_step[r], rank r the source)",
        }

    info["_after"] = after
    return step, sum(p.numel() for p in model.parameters()), info


def tp_workload(args, rank, device, dtype):
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    import torch.distributed as dist
    W = args.world
    vocab_par = args.tp_vocab
    full, ids, loss_fn, _, info = C.build_workload(args, device, dtype)
    labels = ids.roll(-1, dims=1)  # build_workload's next-token targets
    count = {}

    def all_reduce(t, phase, site, op=None):
        """An in-place all-reduce, counted by phase (forward/backward) and site (layer, embedding,
        cross_entropy, lm_head)."""
        t = t.contiguous()
        dist.all_reduce(t, op=op or dist.ReduceOp.SUM)
        c = count.setdefault(site, {"forward": 0, "backward": 0, "bytes": 0})
        c[phase] += 1
        c["bytes"] += t.numel() * t.element_size()
        return t

    class _CopyToModelParallelRegion(torch.autograd.Function):
        """f (named as in Megatron-LM): identity in forward, all-reduce of the gradient in backward."""
        @staticmethod
        def forward(ctx, x, site="layer"):
            ctx.site = site
            return x

        @staticmethod
        def backward(ctx, g):
            return all_reduce(g, "backward", ctx.site), None

    class _ReduceFromModelParallelRegion(torch.autograd.Function):
        """g (named as in Megatron-LM): all-reduce in forward, identity in backward."""
        @staticmethod
        def forward(ctx, x, site="layer"):
            return all_reduce(x, "forward", site)

        @staticmethod
        def backward(ctx, g):
            return g, None

    vs = args.vocab // W
    v0 = rank * vs

    class _VocabParallelCrossEntropy(torch.autograd.Function):
        """Megatron-LM's cross-entropy over logits split by vocabulary: all-reduces of the
        per-token maximum, target logit and sum of exponentials in forward, none in backward."""
        @staticmethod
        def forward(ctx, logits, target):
            m = all_reduce(logits.max(dim=-1)[0], "forward", "cross_entropy", dist.ReduceOp.MAX)
            logits = logits - m.unsqueeze(-1)
            out = (target < v0) | (target >= v0 + vs)
            t = (target - v0).masked_fill(out, 0)
            pred = all_reduce(logits.gather(1, t.unsqueeze(1)).squeeze(1).masked_fill(out, 0.0),
                              "forward", "cross_entropy")
            e = logits.exp()
            z = all_reduce(e.sum(dim=-1), "forward", "cross_entropy")
            e.div_(z.unsqueeze(-1))
            ctx.save_for_backward(e, t, out)
            return z.log() - pred

        @staticmethod
        def backward(ctx, g):
            p, t, out = ctx.saved_tensors
            grad = p.clone()
            rows = torch.arange(grad.shape[0], device=grad.device)
            grad[rows, t] -= (~out).to(grad.dtype)
            return grad * g.unsqueeze(-1), None

    class VocabParallelEmbedding(nn.Module):
        """Rows [v0, v0 + V/N) of the token embedding; other ids look up zeros, then an all-reduce."""
        def __init__(self, emb):
            super().__init__()
            self.weight = nn.Parameter(emb.weight.detach()[v0:v0 + vs].clone())

        def forward(self, ids):
            out = (ids < v0) | (ids >= v0 + vs)
            x = F.embedding((ids - v0).masked_fill(out, 0), self.weight).masked_fill(out.unsqueeze(-1), 0.0)
            return _ReduceFromModelParallelRegion.apply(x, "embedding")

    def part(lin, rows=None, cols=None, bias=True):
        w = lin.weight.detach()
        w = w[rows] if rows is not None else w[:, cols]
        out = nn.Linear(w.shape[1], w.shape[0], bias=bias)
        with torch.no_grad():
            out.weight.copy_(w)
            if bias:
                out.bias.copy_(lin.bias.detach()[rows])
        return out

    class TPBlock(nn.Module):
        def __init__(self, blk):
            super().__init__()
            a = blk.attn
            self.hl, self.hd = a.heads // W, a.head_dim
            sl = slice(rank * self.hl * self.hd, (rank + 1) * self.hl * self.hd)
            ffn = blk.fc1.out_features // W
            fl = slice(rank * ffn, (rank + 1) * ffn)
            self.ln1, self.ln2 = blk.ln1, blk.ln2
            self.q, self.k, self.v = (part(x, rows=sl) for x in (a.q_proj, a.k_proj, a.v_proj))
            self.o = part(a.o_proj, cols=sl, bias=False)
            self.o_bias = nn.Parameter(a.o_proj.bias.detach().clone())
            self.fc1 = part(blk.fc1, rows=fl)
            self.fc2 = part(blk.fc2, cols=fl, bias=False)
            self.fc2_bias = nn.Parameter(blk.fc2.bias.detach().clone())
            self.register_buffer("mask", a.mask, persistent=False)

        def attn(self, x):
            b, s, _ = x.shape

            def split(t):
                return t.view(b, s, self.hl, self.hd).transpose(1, 2)

            q, k, v = split(self.q(x)), split(self.k(x)), split(self.v(x))
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.hd)
            scores = scores.masked_fill(self.mask[:s, :s], float("-inf"))
            ctx = torch.matmul(F.softmax(scores, dim=-1), v).transpose(1, 2).reshape(b, s, self.hl * self.hd)
            return _ReduceFromModelParallelRegion.apply(self.o(ctx)) + self.o_bias

        def forward(self, x):
            x = x + self.attn(_CopyToModelParallelRegion.apply(self.ln1(x)))
            h = self.fc2(F.gelu(self.fc1(_CopyToModelParallelRegion.apply(self.ln2(x)))))
            return x + _ReduceFromModelParallelRegion.apply(h) + self.fc2_bias

    class TPGPT(nn.Module):
        def __init__(self, m):
            super().__init__()
            self.tok = VocabParallelEmbedding(m.tok) if vocab_par else m.tok
            self.pos, self.ln_f = m.pos, m.ln_f
            self.blocks = nn.ModuleList(TPBlock(b) for b in m.blocks)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.tok(ids) + self.pos(pos)
            for blk in self.blocks:
                x = blk(x)
            x = self.ln_f(x)
            if vocab_par:  # the tied LM head, column-parallel by vocabulary
                x = _CopyToModelParallelRegion.apply(x, "lm_head")
            return F.linear(x, self.tok.weight)

    def tp_loss(out):
        if not vocab_par:
            return loss_fn(out)
        return _VocabParallelCrossEntropy.apply(out.reshape(-1, vs).float(), labels.reshape(-1)).mean()

    with torch.no_grad():
        ref = float(loss_fn(full(ids)))
    model = TPGPT(full).to(device=device, dtype=dtype)
    model.train()
    with torch.no_grad():
        got = float(tp_loss(model(ids)))
    count.clear()
    opt = C.make_optimizer(args.optimizer, model)
    steps = [0]

    def step():
        opt.zero_grad(set_to_none=True)
        tp_loss(model(ids)).backward()
        opt.step()
        steps[0] += 1

    def after(info):
        n = max(steps[0], 1)
        L = len(model.blocks)
        site = {k: {x: v / n for x, v in c.items()} for k, c in count.items()}
        lay = site.get("layer", {"forward": 0, "backward": 0})
        info["tp"] = {
            "size": W, "heads_per_rank": args.heads // W, "ffn_per_rank": 4 * args.hidden // W,
            "embedding": "vocabulary-parallel (token embedding rows, the tied LM head's columns and the cross-"
                         "entropy split by vocabulary, %d rows per rank, as Megatron-LM; position embedding and "
                         "LayerNorms replicated)" % vs if vocab_par else
                         "replicated (token and position embeddings, LayerNorms and the tied LM head on every "
                         "rank; not vocabulary-parallel; their gradients are equal and not communicated)",
            "vocab_parallel": vocab_par,
            "allreduce_per_step": {p: sum(c[p] for c in site.values()) for p in ("forward", "backward")},
            "allreduce_per_layer": {p: lay[p] / L for p in ("forward", "backward")},
            "allreduce_by_site": site,
            "allreduce_bytes_per_step": sum(c["bytes"] for c in site.values()),
            "allreduce_bytes_each": args.batch * info["seq_len"] * args.hidden * torch.finfo(dtype).bits // 8,
            "first_loss": {"tp": got, "one_process": ref},
            "steps_counted": steps[0],
        }

    info["_after"] = after
    return step, sum(p.numel() for p in model.parameters()), info


WORKLOADS = {"ddp": ddp_workload, "pipeline": pipeline_workload, "embedding": sparse_dist.embedding_workload,
             "moe": sparse_dist.moe_workload, "zero1": zero1_workload, "tp": tp_workload}


# ---------------------------------------------------------------------------------------------
# The job
# ---------------------------------------------------------------------------------------------

def _rank_main(rank, args, store, result_path):
    import torch
    import torch.distributed as dist
    pinned = pin(rank)
    if args.threads is None:
        args.threads = 1
    device, dtype = C.setup_torch(args)
    if device.type != "cpu":
        C.fail("--dist runs on CPU (gloo); use --device cpu")
    # The rendezvous is a file in the job's own temporary folder, not a TCP port: a port chosen
    # free before the ranks start can be taken by then (ctest -j2 runs another job beside this
    # one), and a rank could join another job's store.
    dist.init_process_group("gloo", init_method="file://" + store, rank=rank, world_size=args.world)
    try:
        step, n_params, info = WORKLOADS[args.dist](args, rank, device, dtype)
        calls = [0]
        workload_step = step

        def step():
            calls[0] += 1
            workload_step()

        for _ in range(args.warmup):
            step()
        dist.barrier()
        # The barrier after the profiled step (before the profiler and the ET observer stop; on
        # every rank, as they must all call it): gloo completes a collective's future before its
        # worker thread closes the collective's profiler event (gloo:all_reduce ...), so the step
        # can end, and the profiler stop, with the event still open, and it is lost (the step then
        # lacks, say, DDP's all-reduce; seen under load); an ET stopped before the barrier lacked
        # it while the trace had it. A gloo barrier first waits for every earlier work of the group
        # to finish, which closes its event; profile_step then drops the barrier's own events.
        if rank == 0:
            os.makedirs(args.out, exist_ok=True)
            rec = C.profile_step(step, args.warmup, device, args.out, {"distributedInfo": dist_info(args.world)},
                                 settle=dist.barrier)
        else:
            step()
            dist.barrier()
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
            after = info.pop("_after", None)
            if after:
                after(info)
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
        with open("%s.rank%d" % (result_path, rank), "w") as f:  # last: what the parent checks (verify_ranks)
            json.dump({"rank": rank, "steps": calls[0], "timed": len(times)}, f)
    finally:
        dist.destroy_process_group()
    # Done and written: leave now. Left to the interpreter's teardown, a process sometimes hangs
    # there for good (torch 1.13's gloo: a worker thread the exit waits for; seen with the short
    # steps of --dist embedding), and the job with it.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)


def check_args(args):
    """Refuses (CollectError) a --dist job its workload cannot split, before any rank starts (and
    before this process imports torch)."""
    W = args.world
    if args.dist == "pipeline":
        if args.model != "resmlp":
            C.fail("--dist pipeline cuts resmlp into stages of whole blocks (got --model %s)" % args.model)
        if args.layers < W:
            C.fail("--dist pipeline needs --layers >= --world (%d blocks for %d stages)" % (args.layers, W))
    if args.dist == "tp":
        if args.model != "gpt-tiny":
            C.fail("--dist tp splits gpt-tiny's attention and MLP across ranks (got --model %s)" % args.model)
        if args.heads % W or (4 * args.hidden) % W:
            C.fail("--dist tp needs --world to divide --heads and 4 x --hidden (%d heads, hidden %d, %d ranks)"
                   % (args.heads, args.hidden, W))
        if args.tp_vocab and args.vocab % W:
            C.fail("--tp-vocab needs --world to divide --vocab (%d rows, %d ranks)" % (args.vocab, W))
    sparse_dist.check_args(args)
    if args.device not in (None, "cpu"):
        C.fail("--dist runs on CPU (gloo); use --device cpu")


def _rank_entry(rank, args, store, result_path):
    """A rank's process: _rank_main, its failure written to result_path.errRANK for the parent."""
    try:
        import torch.distributed as dist
        if not dist.is_available() or not dist.is_gloo_available():
            C.fail("--dist needs torch.distributed with gloo, which this PyTorch lacks")
        _rank_main(rank, args, store, result_path)
    except BaseException as e:  # noqa: BLE001  (whatever stops a rank stops the job, named)
        import traceback
        with open("%s.err%d" % (result_path, rank), "w") as f:
            f.write("%s\n%s" % (e if isinstance(e, C.CollectError) else "%s: %s" % (type(e).__name__, e),
                                 traceback.format_exc()))
        sys.stderr.flush()
        os._exit(1)


def _wait_ranks(procs, args, result_path):
    """Waits for the ranks; the first to fail stops the others and the job (CollectError)."""
    import multiprocessing.connection
    live = list(procs)
    while live:
        multiprocessing.connection.wait([p.sentinel for p in live])
        for p in [p for p in live if p.exitcode is not None]:
            live.remove(p)
            if p.exitcode == 0:
                continue
            for q in live:
                q.terminate()
            for q in live:
                q.join()
            rank = procs.index(p)
            try:
                with open("%s.err%d" % (result_path, rank)) as f:
                    msg = f.read().split("\n", 1)[0]
            except OSError:
                msg = "exit status %d" % p.exitcode
            C.fail("a rank of the --dist %s job failed: %s" % (args.dist, msg))


def verify_ranks(world, result_path, steps):
    """Refuses (CollectError) a job whose ranks did not all report, or disagree on the steps run
    (warm-up, the profiled step and the timed ones): each rank's result_path.rankR."""
    want = None
    for r in range(world):
        try:
            with open("%s.rank%d" % (result_path, r)) as f:
                got = json.load(f)
        except (OSError, ValueError) as e:
            C.fail("rank %d of the job exited without its report (%s); the recording is incomplete, record again"
                   % (r, e))
        if got.get("timed") != steps or (want is not None and got.get("steps") != want):
            C.fail("the job's ranks disagree on its steps (rank %d ran %s, %s timed; rank 0 %s; --steps %d); "
                   "the recording is inconsistent, record again" % (r, got.get("steps"), got.get("timed"), want, steps))
        want = got.get("steps") if want is None else want


def _load(out, name):
    import gzip
    path = os.path.join(out, name)
    try:
        if name.endswith(".gz"):
            with gzip.open(path, "rt", encoding="utf-8") as f:
                return json.load(f)
        with open(path) as f:
            return json.load(f)
    except (OSError, EOFError, ValueError) as e:  # missing, truncated gzip, bad JSON
        C.fail("rank 0's %s is missing or does not parse (%s: %s); the recording is incomplete, record again"
               % (path, type(e).__name__, e))


def verify_recording(out, world, steps):
    """Refuses (CollectError, one line naming the file) a --dist recording that is incomplete or
    inconsistent: a file missing, truncated or not JSON; not exactly one profiled step; the
    Kineto trace and the ET disagreeing on the step's collectives (a gloo event closed after the
    ET stopped; checked where collect.py wrote the trace itself) or with the counts meta.json
    gives; collect.py's pairing of their ops fallen back to order; meta.json not of this job's
    ranks and steps."""
    import collections
    meta, kin, et = _load(out, "meta.json"), _load(out, "kineto.json.gz"), _load(out, "et.json.gz")
    ev = [e for e in kin.get("traceEvents", []) if isinstance(e, dict)]
    where = os.path.join(out, "kineto.json.gz")
    prof = [e for e in ev if str(e.get("name", "")).startswith("ProfilerStep#")]
    if len(prof) != 1:
        C.fail("%s has %d profiled steps (ProfilerStep#N), not 1; record again" % (where, len(prof)))
    ops = sum(1 for e in ev if e.get("cat") == "cpu_op")
    if ops != meta.get("kineto_cpu_ops") or (kin.get("distributedInfo") or {}).get("world_size") != world:
        C.fail("%s does not match meta.json (%d cpu ops, meta.json %s; distributedInfo %s, --world %d); record again"
               % (where, ops, meta.get("kineto_cpu_ops"), kin.get("distributedInfo"), world))
    nodes = et.get("nodes") or []
    if not nodes or len(nodes) != meta.get("et_nodes"):
        C.fail("%s has %d nodes, meta.json %s; record again" % (os.path.join(out, "et.json.gz"), len(nodes),
                                                             meta.get("et_nodes")))
    comm = lambda names: collections.Counter(n for n in names if n.startswith("gloo:"))
    kc, ec = comm(str(e.get("name", "")) for e in ev if e.get("ph") == "X"), comm(n.get("name", "") for n in nodes)
    # (the trace collect.py writes itself, PyTorch without Kineto: both files hold every gloo event;
    # what a Kineto export and a newer ET hold of them is not checked here)
    if str(meta.get("kineto_writer", "")).startswith("collect.py") and kc != ec:
        C.fail("rank 0's Kineto trace and ET disagree on the step's collectives (%s against %s in %s): a "
               "collective's event closed late; record again" % (dict(kc), dict(ec), out))
    if str(meta.get("link", "")).startswith("by order only"):
        C.fail("rank 0's Kineto trace and ET in %s do not name the same ops (%s); record again" % (out, meta["link"]))
    d = meta.get("dist") or {}
    if d.get("world") != world or len(d.get("rank_step_ms") or []) != world or \
            len((meta.get("step_time_ms") or {}).get("all") or []) != steps:
        C.fail("%s is not of this job (its world %s, %d ranks' times, %d steps; --world %d --steps %d); record again"
               % (os.path.join(out, "meta.json"), d.get("world"), len(d.get("rank_step_ms") or []),
                  len((meta.get("step_time_ms") or {}).get("all") or []), world, steps))


def run_dist(args):
    """Runs the --world ranks (spawned processes, each importing torch; this one does not),
    checks what they wrote (verify_ranks, verify_recording) and reports the job."""
    import multiprocessing
    check_args(args)
    args.device = "cpu"
    ctx = multiprocessing.get_context("spawn")
    with tempfile.TemporaryDirectory() as d:
        res = os.path.join(d, "result.json")
        store = os.path.join(d, "store")
        procs = [ctx.Process(target=_rank_entry, args=(r, args, store, res)) for r in range(args.world)]
        for p in procs:
            p.start()
        _wait_ranks(procs, args, res)
        verify_ranks(args.world, res, args.steps)
        verify_recording(args.out, args.world, args.steps)
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
