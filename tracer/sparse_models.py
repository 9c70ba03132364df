"""Built-in sparse models of collect.py: the ones whose parallel versions talk by all-to-all.

moe-tiny   a GPT (gpt-tiny's attention blocks) whose feed-forward layers are mixtures of experts:
           a router (a linear map to E logits, softmax), top-k gating (k = 1: Switch; k = 2:
           GShard, the two gates renormalised), a capacity of ceil(factor x tokens x k / E)
           tokens per expert (the first choices of every token are placed before the second
           ones; a token past its expert's capacity is dropped for that choice and passes
           through the residual), E experts of two linears each (2 x hidden wide, GELU). Each
           MoE layer keeps the tokens per expert of its last forward (meta.json: expert_tokens).
dlrm-tiny  a DLRM: a bottom MLP over 13 dense features, --tables EmbeddingBags of different
           sizes (--vocab rows for table 0, halved for each next table, at least 100; sum of
           --bag ids per sample), the pairwise dot-product interaction of the bottom MLP's output
           and the pooled vectors, a top MLP to one logit (logistic loss).

Both are plain torch (no downloads). Their multi-process versions are in collect_dist.py
(--dist moe: experts split over the ranks; --dist embedding: tables split over the ranks).
"""

import math

DENSE_FEATURES = 13  # Criteo's dense features, as in the DLRM paper


def table_rows(vocab, tables):
    """Rows of each dlrm-tiny table: vocab, vocab/2, vocab/4, ... (at least 100)."""
    return [max(100, vocab >> t) for t in range(tables)]


def capacity(tokens, experts, top_k, factor):
    """Tokens one expert takes per forward: ceil(factor x tokens x k / E)."""
    return int(math.ceil(factor * tokens * top_k / experts))


def modules(transformer_block):
    """The model classes, defined lazily (so --help works without torch). transformer_block:
    collect.py's Block class, whose attention and layer norms moe-tiny reuses."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class Expert(nn.Module):
        def __init__(self, hidden, ffn):
            super().__init__()
            self.fc1 = nn.Linear(hidden, ffn)
            self.fc2 = nn.Linear(ffn, hidden)

        def forward(self, x):
            return self.fc2(F.gelu(self.fc1(x)))

    class Router(nn.Module):
        """Top-k gating with a capacity: route(x [tokens, hidden]) -> per expert (token ids,
        gates), first choices placed before second ones."""

        def __init__(self, hidden, experts, top_k, factor):
            super().__init__()
            if not 1 <= top_k <= experts:
                raise ValueError("top-k %d needs 1..%d experts" % (top_k, experts))
            self.gate = nn.Linear(hidden, experts, bias=False)
            self.experts, self.top_k, self.factor = experts, top_k, factor

        def forward(self, x):
            probs = F.softmax(self.gate(x).float(), dim=-1)
            gate, idx = probs.topk(self.top_k, dim=-1)  # [tokens, k]
            if self.top_k > 1:
                gate = gate / gate.sum(dim=-1, keepdim=True)
            n = x.shape[0]
            cap = capacity(n, self.experts, self.top_k, self.factor)
            choice = idx.t().reshape(-1)  # slot-major: every first choice, then every second
            token = torch.arange(n, device=x.device).repeat(self.top_k)
            weight = gate.t().reshape(-1).to(x.dtype)
            out = []
            for e in range(self.experts):
                sel = (choice == e).nonzero().squeeze(1)[:cap]
                out.append((token[sel], weight[sel]))
            return out

    class MoE(nn.Module):
        def __init__(self, hidden, ffn, experts, top_k, factor):
            super().__init__()
            self.router = Router(hidden, experts, top_k, factor)
            self.experts = nn.ModuleList(Expert(hidden, ffn) for _ in range(experts))
            self.last_tokens = []

        def forward(self, x):
            shape = x.shape
            flat = x.reshape(-1, shape[-1])
            routes = self.router(flat)
            self.last_tokens = [int(t.numel()) for t, _ in routes]
            out = torch.zeros_like(flat)
            for e, (tok, g) in enumerate(routes):
                if tok.numel():
                    out = out.index_add(0, tok, self.experts[e](flat.index_select(0, tok)) * g.unsqueeze(1))
            return out.reshape(shape)

    class MoEBlock(transformer_block):
        """gpt-tiny's pre-LN block with its MLP replaced by a mixture of experts."""

        def __init__(self, hidden, heads, max_len, experts, top_k, factor):
            super().__init__(hidden, heads, 2 * hidden, True, max_len, pre_ln=True)
            del self.fc1, self.fc2
            self.moe = MoE(hidden, 2 * hidden, experts, top_k, factor)

        def mlp(self, x):
            return self.moe(x)

    class MoETiny(nn.Module):
        """moe-tiny: token + position embeddings, pre-LN MoE blocks, final LayerNorm, LM head
        tied to the token embedding."""

        def __init__(self, vocab, hidden, layers, heads, max_len, experts, top_k, factor):
            super().__init__()
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_len, hidden)
            self.blocks = nn.ModuleList(MoEBlock(hidden, heads, max_len, experts, top_k, factor)
                                        for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden)
            self.head = nn.Linear(hidden, vocab, bias=False)
            self.head.weight = self.tok.weight

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.tok(ids) + self.pos(pos)
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.ln_f(x))

        def expert_tokens(self):
            return [b.moe.last_tokens for b in self.blocks]

    class DLRMDense(nn.Module):
        """dlrm-tiny's dense part: bottom MLP, interaction, top MLP (data parallel under
        --dist embedding)."""

        def __init__(self, tables, dim):
            super().__init__()
            self.bottom = nn.Sequential(nn.Linear(DENSE_FEATURES, 4 * dim), nn.ReLU(),
                                        nn.Linear(4 * dim, dim), nn.ReLU())
            n = tables + 1
            self.pairs = torch.triu_indices(n, n, 1)
            self.top = nn.Sequential(nn.Linear(dim + n * (n - 1) // 2, 4 * dim), nn.ReLU(),
                                     nn.Linear(4 * dim, 1))

        def forward(self, dense_x, pooled):  # pooled: [batch, tables, dim]
            d = self.bottom(dense_x)
            z = torch.cat([d.unsqueeze(1), pooled], dim=1)  # [batch, tables + 1, dim]
            dots = torch.bmm(z, z.transpose(1, 2))[:, self.pairs[0], self.pairs[1]]
            return self.top(torch.cat([d, dots], dim=1)).squeeze(1)

    class DLRMTiny(nn.Module):
        def __init__(self, rows, dim):
            super().__init__()
            self.tables = nn.ModuleList(nn.EmbeddingBag(r, dim, mode="sum") for r in rows)
            self.dense = DLRMDense(len(rows), dim)

        def forward(self, dense_x, ids):  # ids: [batch, tables, bag]
            pooled = torch.stack([t(ids[:, i]) for i, t in enumerate(self.tables)], dim=1)
            return self.dense(dense_x, pooled)

    return {"MoETiny": MoETiny, "DLRMTiny": DLRMTiny, "DLRMDense": DLRMDense, "Expert": Expert,
            "Router": Router}


def dlrm_inputs(args, gen, device, dtype):
    """(dense features [batch, 13], ids [batch, tables, bag] within each table's rows, labels)."""
    import torch
    rows = table_rows(args.vocab, args.tables)
    dense = torch.rand(args.batch, DENSE_FEATURES, generator=gen)
    ids = torch.stack([torch.randint(0, r, (args.batch, args.bag), generator=gen) for r in rows], dim=1)
    y = torch.randint(0, 2, (args.batch,), generator=gen).to(torch.float32)
    return dense.to(device=device, dtype=dtype), ids.to(device), y.to(device)
