"""The multi-process jobs of collect.py --dist whose ranks talk by all-to-all (torch.distributed,
gloo, CPU; collect_dist.py runs them):

  moe        moe-tiny, mixtral-tiny, deepseek-tiny, hash-moe-tiny or bmm-moe-tiny with its experts split
             over the ranks (rank r holds experts [r*E/W, (r+1)*E/W)) and every other parameter
             data parallel (DDP, the experts left out of it). Per MoE layer and direction, looped
             experts: an all-to-all of the tokens per expert (ints), an all-to-all dispatching each
             token to its experts' rank and one combining the results back (uneven splits: what the
             router chose), in forward and, for their gradients, in backward; bmm-moe-tiny (GShard's
             layout): its [E, C, d] capacity buffer all-to-all'd in equal splits (each rank the
             rows of its experts), the local experts' two bmm over [W x C] rows, and back;
  embedding  dlrm-tiny with its tables split table-wise (table t on rank t % W): an all-to-all
             of the ids, the local lookups for every rank's samples, an all-to-all of the pooled
             vectors back (and of their gradients in backward), the dense part (bottom MLP,
             interaction, top MLP) under DDP.

Each workload returns (step function, the parameters on this rank, info for meta.json).
"""

import types

import collect as C


def _all_to_all_fn():
    import torch
    import torch.distributed as dist

    class AllToAll(torch.autograd.Function):
        """all_to_all_single of rows with these splits (None: equal), and of the gradients back
        with the splits swapped."""

        @staticmethod
        def forward(ctx, inp, out_splits, in_splits):
            ctx.splits = (out_splits, in_splits)
            rows = sum(out_splits) if out_splits is not None else inp.shape[0]
            out = inp.new_empty((rows,) + tuple(inp.shape[1:]))
            dist.all_to_all_single(out, inp.contiguous(), out_splits, in_splits)
            return out

        @staticmethod
        def backward(ctx, grad):
            out_splits, in_splits = ctx.splits
            rows = sum(in_splits) if in_splits is not None else grad.shape[0]
            back = grad.new_empty((rows,) + tuple(grad.shape[1:]))
            dist.all_to_all_single(back, grad.contiguous(), in_splits, out_splits)
            return back, None, None

    return AllToAll


def _routes(moe, flat):
    """Per expert (token rows, gates) as the model's own forward routes them: moe-tiny's Router;
    mixtral-tiny's softmax -> topk -> renormalised (HF Mixtral); deepseek-tiny's softmax -> topk
    (DeepSeek's MoEGate, not renormalised)."""
    import torch
    import torch.nn.functional as F
    if hasattr(moe, "router"):
        return moe.router(flat)
    if hasattr(moe, "route"):  # hash-moe-tiny: expert = hash of the token id (the model set route), gate 1
        return [((moe.route == e).nonzero().squeeze(1), None) for e in range(len(moe.experts))]
    if hasattr(moe, "gate"):  # Mixtral
        w = F.softmax(moe.gate(flat), dim=1, dtype=torch.float)
        w, sel = torch.topk(w, moe.top_k, dim=-1)
        w = (w / w.sum(dim=-1, keepdim=True)).to(flat.dtype)
    else:  # DeepSeek
        w, sel = torch.topk(F.linear(flat, moe.weight, None).softmax(dim=-1), k=moe.top_k, dim=-1, sorted=False)
    out = []
    for e in range(len(moe.experts)):
        tok, slot = torch.where(sel == e)
        out.append((tok, w[tok, slot]))
    return out


def _moe_modules(model):
    """The MoE layers of a built-in model: moe-tiny's blocks[i].moe, the families' layers[i].mlp
    (mixtral, deepseek) or h[i].mlp (bmm-moe; hash-moe under .gpt)."""
    if hasattr(model, "blocks"):
        return [b.moe for b in model.blocks]
    model = getattr(model, "gpt", model)
    blocks = getattr(model, "layers", None) or getattr(model, "h", [])
    return [b.mlp for b in blocks if hasattr(b.mlp, "experts") or hasattr(b.mlp, "w_in")]


def _bmm_forward(W, per, AllToAll, sent):
    """bmm-moe-tiny's forward with the experts split (GShard): the router and capacity as the model
    has them, the [E x C, d] buffer sent in equal splits (rank p gets the C rows of each of its
    experts from every rank), the local [per, d, f] and [per, f, d] weights run by two bmm over
    [W x C] rows each, the result sent back."""
    import torch
    import torch.nn.functional as F

    def forward(moe, x):
        b, s, d = x.shape
        flat = x.reshape(-1, d)
        n = flat.shape[0]
        cap, gate, keep, slot = moe.route(flat)  # the model's own router and capacity
        buf = flat.new_zeros(moe.E * cap, d).index_copy(0, slot, flat[keep])
        recv = AllToAll.apply(buf, None, None)  # [W, per, cap, d]: every rank's rows for my experts
        sent.append(int(buf.shape[0]))
        h = recv.view(W, per, cap, d).transpose(0, 1).reshape(per, W * cap, d)
        h = torch.bmm(F.gelu(torch.bmm(h, moe.w_in)), moe.w_out)
        h = h.view(per, W, cap, d).transpose(0, 1).reshape(W * per * cap, d)
        h = AllToAll.apply(h, None, None)  # back to the ranks the rows came from, in buf's order
        out = flat.new_zeros(n, d)
        out[keep] = h[slot] * gate[keep].unsqueeze(-1).to(x.dtype)
        return out.view(b, s, d)

    return forward


MOE_MODELS = ("moe-tiny", "mixtral-tiny", "deepseek-tiny", "hash-moe-tiny", "bmm-moe-tiny")


def _annotated(moe, x, forward):
    """hash-moe-tiny's layer inside record_function("mitosis.moe"), as the model writes it."""
    import torch
    with torch.autograd.profiler.record_function("mitosis.moe"):
        return forward(moe, x)


def check_args(args):
    """Refuses (CollectError) a --dist moe or embedding job that cannot be split (collect_dist.check_args)."""
    W = args.world
    if args.dist == "moe":
        if args.model not in MOE_MODELS:
            C.fail("--dist moe splits the experts of %s (got --model %s)" % (", ".join(MOE_MODELS), args.model))
        if args.experts % W:
            C.fail("--dist moe needs --experts divisible by --world (%d experts, %d ranks)" % (args.experts, W))
    if args.dist == "embedding":
        if args.model != "dlrm-tiny":
            C.fail("--dist embedding shards dlrm-tiny's tables (got --model %s)" % args.model)
        if args.tables % W:
            C.fail("--dist embedding needs --tables divisible by --world (%d tables, %d ranks)" % (args.tables, W))


def moe_workload(args, rank, device, dtype):
    import torch
    import torch.distributed as dist
    W, E = args.world, args.experts
    # each rank its own tokens (the seed draws the inputs; DDP makes the dense weights equal)
    model, ids, loss_fn, _, info = C.build_workload(args, device, dtype, seed=args.seed + rank)
    model.train()
    per = E // W
    mine = range(rank * per, (rank + 1) * per)
    AllToAll = _all_to_all_fn()
    sent = []  # rows this rank dispatched per MoE layer in the profiled step's forward

    def forward(moe, x):
        shape = x.shape
        flat = x.reshape(-1, shape[-1])
        routes = _routes(moe, flat)
        moe.last_tokens = [int(t.numel()) for t, _ in routes]
        counts = torch.tensor(moe.last_tokens, dtype=torch.int64)
        got = torch.empty_like(counts)  # [W x per]: rank p's tokens for each of my experts
        dist.all_to_all_single(got, counts)
        in_splits = [int(counts[p * per:(p + 1) * per].sum()) for p in range(W)]
        got = got.view(W, per).tolist()
        out_splits = [sum(g) for g in got]
        tok = torch.cat([t for t, _ in routes])
        gate = None if routes[0][1] is None else torch.cat([g for _, g in routes])
        recv = AllToAll.apply(flat.index_select(0, tok), out_splits, in_splits)
        sent.append(int(tok.numel()))
        ys, row = [], 0
        for p in range(W):  # from each rank, its tokens grouped by my experts
            for j, e in enumerate(mine):
                n = got[p][j]
                ys.append(expert(moe, e, recv[row:row + n]))
                row += n
        back = AllToAll.apply(torch.cat(ys), in_splits, out_splits)
        out = torch.zeros_like(flat).index_add(0, tok, back if gate is None else back * gate.unsqueeze(1))
        out = out.reshape(shape)
        if hasattr(moe, "shared_experts"):  # DeepSeek: the shared experts, dense (data parallel)
            out = out + moe.shared_experts(x)
        return out

    def expert(moe, e, rows):
        if not hasattr(moe, "label"):
            return moe.experts[e](rows)
        with torch.autograd.profiler.record_function(moe.label):  # hash-moe-tiny: what the user annotated
            return moe.experts[e](rows)

    bmm = _bmm_forward(W, per, AllToAll, sent)
    for moe in _moe_modules(model):
        if hasattr(moe, "w_in"):  # stacked experts: this rank keeps its slice of the [E, ...] weights
            moe.w_in = torch.nn.Parameter(moe.w_in.detach()[mine.start:mine.stop].clone())
            moe.w_out = torch.nn.Parameter(moe.w_out.detach()[mine.start:mine.stop].clone())
            moe.forward = types.MethodType(bmm, moe)
        elif hasattr(moe, "label"):
            moe.forward = types.MethodType(lambda m, x, f=forward: _annotated(m, x, f), moe)
        else:
            moe.forward = types.MethodType(forward, moe)

    def is_expert(n):
        return ".experts." in n or n.endswith(".w_in") or n.endswith(".w_out")

    skip = [n for n, _ in model.named_parameters() if is_expert(n)]  # each on its own rank
    skip += [n for n, b in model.named_buffers() if not b.is_floating_point()]  # the causal masks
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, skip)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    params = [p for n, p in model.named_parameters()
              if ".experts." not in n or int(n.split(".experts.")[1].split(".")[0]) in mine]  # w_in/w_out: sliced
    opt = C.make_optimizer(args.optimizer, params)

    done = [0]

    def step():
        opt.zero_grad(set_to_none=True)
        sent.clear()
        loss_fn(ddp(ids)).backward()
        opt.step()
        if done[0] == args.warmup:  # the profiled step (rank 0) and its twin on the others
            info["expert_tokens"] = model.expert_tokens()
            info["dispatched_rows_per_layer"] = list(sent)
        done[0] += 1

    info.update(experts_on_rank0=list(range(per)))
    return step, sum(p.numel() for p in params), info


def embedding_workload(args, rank, device, dtype):
    import torch
    import torch.distributed as dist
    import torch.nn.functional as F
    import sparse_models
    W, T, B, D = args.world, args.tables, args.batch, args.emb_dim
    rows = sparse_models.table_rows(args.vocab, T)
    model = C._builtin_modules()["DLRMTiny"](rows, D).to(device=device, dtype=dtype)
    mine = [t for t in range(T) if t % W == rank]
    dense = torch.nn.parallel.DistributedDataParallel(model.dense)
    params = list(model.dense.parameters()) + [p for t in mine for p in model.tables[t].parameters()]
    opt = C.make_optimizer(args.optimizer, params)
    gen = torch.Generator().manual_seed(args.seed + rank)
    dense_x, ids, y = sparse_models.dlrm_inputs(args, gen, device, dtype)
    AllToAll = _all_to_all_fn()
    order = [t for p in range(W) for t in range(T) if t % W == p]  # tables as the all-to-all returns them
    place = [order.index(t) for t in range(T)]

    def step():
        opt.zero_grad(set_to_none=True)
        # ids of peer p's tables to rank p: [W, B, k, bag], block p for rank p
        send_ids = torch.stack([ids[:, [t for t in range(T) if t % W == p]] for p in range(W)])
        recv_ids = torch.empty_like(send_ids)
        dist.all_to_all_single(recv_ids, send_ids)
        # my tables for every rank's samples: [W, B, k, D]
        pooled = torch.stack([torch.stack([model.tables[t](recv_ids[p, :, j]) for j, t in enumerate(mine)], 1)
                              for p in range(W)])
        back = AllToAll.apply(pooled, None, None)  # block p: my samples' vectors of rank p's tables
        vec = back.permute(1, 0, 2, 3).reshape(B, T, D)[:, place]
        F.binary_cross_entropy_with_logits(dense(dense_x, vec).float(), y).backward()
        opt.step()

    info = {"tables": T, "table_rows": rows, "emb_dim": D, "bag": args.bag, "tables_on_rank0": mine if rank == 0 else
            [t for t in range(T) if t % W == 0], "dense_parameters": sum(p.numel() for p in model.dense.parameters())}
    return step, sum(p.numel() for p in params), info
