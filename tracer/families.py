"""Model families of collect.py written the way public code writes them (not shaped for mitosis).

Each class follows a public implementation's layout and op sequence, in plain torch 1.13 (CPU):

llama-tiny     a Llama decoder (Meta's llama/model.py, HuggingFace LlamaModel): RMSNorm
               (x * rsqrt(mean(x^2) + eps) * weight), rotary position embeddings (HF rotate_half
               with cos/sin tables), grouped-query attention (--kv-heads K/V heads shared by
               --heads query heads, repeat_kv), SwiGLU MLP (down(silu(gate(x)) * up(x))), no
               biases, a final RMSNorm and an untied LM head.
mixtral-tiny   a Mixtral decoder (HF MixtralSparseMoeBlock): llama-tiny's attention, each MLP a
               sparse MoE: router Linear(d, E) -> softmax -> topk(k) -> renormalised; experts are an
               nn.ModuleList of SwiGLU MLPs looped over; each takes its tokens by index
               (one_hot mask, torch.where, x[top_x]) and adds its weighted output back with
               index_add_.
bmm-moe-tiny   a Switch-style MoE with stacked expert weights (GShard/Mesh-TF layout, Llama-4's
               experts, grouped GEMM): router -> softmax -> max (top-1), a capacity per expert
               (one_hot + cumsum positions, overflowing tokens dropped), tokens scattered into an
               [E, C, d] buffer, experts as two torch.bmm with Parameters [E, d, f] and [E, f, d],
               outputs gathered back and scaled by the gate. GPT-style blocks otherwise (LayerNorm,
               fused QKV).
deepseek-tiny  a DeepSeekMoE decoder (DeepSeek-V2's DeepseekV2MoE, training path): the first layer's
               MLP dense, the others a MoE of --experts fine-grained routed experts (SwiGLU, hidden
               --moe-ffn) with top --top-k routing (softmax -> topk, not renormalised) and
               --shared-experts shared experts fused into one SwiGLU MLP beside them; tokens are
               repeat_interleave'd k times and each expert takes y[flat_idx == e] by boolean mask.
vit-tiny       a ViT encoder (timm VisionTransformer): Conv2d patch embedding, class token and
               learned position embedding as Parameters, pre-LN blocks with a fused qkv
               Linear(d, 3d) and an MLP, a linear head on the class token.
hash-moe-tiny  a Hash-layers MoE (Roller et al. 2021): no router, each token goes to expert
               table[token id] (a fixed random hash, top-1); --experts GELU experts looped, each call
               wrapped in record_function(--expert-label, default "mitosis.expert"), the layer in
               record_function("mitosis.moe"): what a user adds so that mitosis sees experts that no
               router reveals (with another label: `--moe-pattern LABEL`).
torchrec-tiny  TorchRec-style sparse features: an EmbeddingBagCollection of --tables nn.EmbeddingBag
               (sum pooling) fed jagged ids (a KeyedJaggedTensor's values + lengths -> offsets, a
               different number of ids per sample), a dense MLP, an over-arch MLP on the
               concatenated features (logistic loss).

Every builder returns (model, inputs, loss_fn, info); info holds what the model definition says
(layers, experts, top-k, shared experts, tables, ...) and lands in meta.json, where
tests/integration/recognise.sh compares it with what `mitosis inspect` recognised.
"""

import math

FAMILIES = {
    "llama-tiny": "Llama-style decoder: RMSNorm, rotary, grouped-query attention (--kv-heads), SwiGLU, untied head",
    "mixtral-tiny": "Mixtral-style MoE decoder: router softmax+topk (--top-k), --experts SwiGLU experts looped, "
                    "index/index_add_ dispatch",
    "bmm-moe-tiny": "Switch-style MoE with stacked expert weights [E, d, f] (one bmm per projection), top-1 by max, "
                    "capacity (--capacity-factor)",
    "deepseek-tiny": "DeepSeekMoE-style decoder: dense first layer, --shared-experts shared + --experts fine-grained "
                     "routed experts (--top-k, --moe-ffn)",
    "vit-tiny": "ViT encoder (timm layout): conv patch embedding, fused qkv, class token head (32x32 images)",
    "hash-moe-tiny": "Hash-layers MoE: no router (expert = hash of the token id), experts annotated with "
                     "record_function(--expert-label, default mitosis.expert)",
    "torchrec-tiny": "TorchRec-style EmbeddingBagCollection of --tables tables with jagged ids and offsets, dense "
                     "and over-arch MLPs",
}


def _llama_modules(torch, nn, F):
    """Llama decoder parts (llama-tiny; the decoder of mixtral-tiny and deepseek-tiny)."""

    class RMSNorm(nn.Module):
        def __init__(self, dim, eps=1e-6):
            super().__init__()
            self.eps = eps
            self.weight = nn.Parameter(torch.ones(dim))

        def forward(self, x):
            var = x.float().pow(2).mean(-1, keepdim=True)
            return (x.float() * torch.rsqrt(var + self.eps)).type_as(x) * self.weight

    class Rotary(nn.Module):
        def __init__(self, head_dim, max_len, base=10000.0):
            super().__init__()
            inv = 1.0 / (base ** (torch.arange(0, head_dim, 2).float() / head_dim))
            t = torch.arange(max_len).float()
            emb = torch.cat([torch.outer(t, inv)] * 2, dim=-1)
            self.register_buffer("cos", emb.cos(), persistent=False)
            self.register_buffer("sin", emb.sin(), persistent=False)

        @staticmethod
        def rotate_half(x):
            x1, x2 = x[..., : x.shape[-1] // 2], x[..., x.shape[-1] // 2:]
            return torch.cat((-x2, x1), dim=-1)

        def forward(self, q, k):
            s = q.shape[-2]
            cos, sin = self.cos[:s].to(q.dtype), self.sin[:s].to(q.dtype)
            return q * cos + self.rotate_half(q) * sin, k * cos + self.rotate_half(k) * sin

    class LlamaAttention(nn.Module):
        def __init__(self, d, heads, kv_heads, max_len):
            super().__init__()
            self.h, self.kv, self.hd = heads, kv_heads, d // heads
            self.q_proj = nn.Linear(d, heads * self.hd, bias=False)
            self.k_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.v_proj = nn.Linear(d, kv_heads * self.hd, bias=False)
            self.o_proj = nn.Linear(heads * self.hd, d, bias=False)
            self.rotary = Rotary(self.hd, max_len)
            self.register_buffer("mask", torch.full((max_len, max_len), float("-inf")).triu(1), persistent=False)

        def repeat_kv(self, x):
            b, kv, s, hd = x.shape
            n = self.h // self.kv
            if n == 1:
                return x
            return x[:, :, None, :, :].expand(b, kv, n, s, hd).reshape(b, kv * n, s, hd)

        def forward(self, x):
            b, s, _ = x.shape
            q = self.q_proj(x).view(b, s, self.h, self.hd).transpose(1, 2)
            k = self.k_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            v = self.v_proj(x).view(b, s, self.kv, self.hd).transpose(1, 2)
            q, k = self.rotary(q, k)
            k, v = self.repeat_kv(k), self.repeat_kv(v)
            scores = torch.matmul(q, k.transpose(2, 3)) / math.sqrt(self.hd) + self.mask[:s, :s]
            probs = F.softmax(scores.float(), dim=-1).type_as(q)
            out = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, -1)
            return self.o_proj(out)

    class SwiGLU(nn.Module):
        def __init__(self, d, f):
            super().__init__()
            self.gate_proj = nn.Linear(d, f, bias=False)
            self.up_proj = nn.Linear(d, f, bias=False)
            self.down_proj = nn.Linear(f, d, bias=False)

        def forward(self, x):
            return self.down_proj(F.silu(self.gate_proj(x)) * self.up_proj(x))

    class DecoderLayer(nn.Module):
        def __init__(self, d, heads, kv_heads, max_len, mlp):
            super().__init__()
            self.input_layernorm = RMSNorm(d)
            self.self_attn = LlamaAttention(d, heads, kv_heads, max_len)
            self.post_attention_layernorm = RMSNorm(d)
            self.mlp = mlp

        def forward(self, x):
            x = x + self.self_attn(self.input_layernorm(x))
            return x + self.mlp(self.post_attention_layernorm(x))

    class Decoder(nn.Module):
        def __init__(self, vocab, d, heads, kv_heads, max_len, mlps):
            super().__init__()
            self.embed_tokens = nn.Embedding(vocab, d)
            self.layers = nn.ModuleList(DecoderLayer(d, heads, kv_heads, max_len, m) for m in mlps)
            self.norm = RMSNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            x = self.embed_tokens(ids)
            for layer in self.layers:
                x = layer(x)
            return self.lm_head(self.norm(x))

        def expert_tokens(self):
            return [l.mlp.last_tokens for l in self.layers if hasattr(l.mlp, "last_tokens")]

    return dict(RMSNorm=RMSNorm, Rotary=Rotary, LlamaAttention=LlamaAttention, SwiGLU=SwiGLU,
                DecoderLayer=DecoderLayer, Decoder=Decoder)


def _moe_modules(torch, nn, F, SwiGLU):
    """The MoE layers: Mixtral (looped experts), Switch (stacked weights, bmm), DeepSeekMoE."""

    class MixtralExpert(nn.Module):  # HF MixtralBlockSparseTop2MLP: w1 gate, w3 up, w2 down
        def __init__(self, d, f):
            super().__init__()
            self.w1 = nn.Linear(d, f, bias=False)
            self.w2 = nn.Linear(f, d, bias=False)
            self.w3 = nn.Linear(d, f, bias=False)

        def forward(self, x):
            return self.w2(F.silu(self.w1(x)) * self.w3(x))

    class MixtralMoE(nn.Module):
        def __init__(self, d, f, experts, top_k):
            super().__init__()
            self.num_experts, self.top_k = experts, top_k
            self.gate = nn.Linear(d, experts, bias=False)
            self.experts = nn.ModuleList(MixtralExpert(d, f) for _ in range(experts))
            self.last_tokens = []

        def forward(self, hidden_states):
            b, s, d = hidden_states.shape
            hidden_states = hidden_states.view(-1, d)
            router_logits = self.gate(hidden_states)
            routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
            routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
            routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
            routing_weights = routing_weights.to(hidden_states.dtype)
            final = torch.zeros((b * s, d), dtype=hidden_states.dtype, device=hidden_states.device)
            expert_mask = F.one_hot(selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
            self.last_tokens = []
            for e in range(self.num_experts):
                idx, top_x = torch.where(expert_mask[e])
                self.last_tokens.append(int(top_x.numel()))
                current = hidden_states[None, top_x].reshape(-1, d)
                out = self.experts[e](current) * routing_weights[top_x, idx, None]
                final.index_add_(0, top_x, out.to(hidden_states.dtype))
            return final.view(b, s, d)

    class BatchedMoE(nn.Module):
        """Top-1 (Switch) routing by max, a capacity per expert, experts as stacked weights run by bmm."""

        def __init__(self, d, f, experts, factor):
            super().__init__()
            self.E, self.factor = experts, factor
            self.router = nn.Linear(d, experts, bias=False)
            self.w_in = nn.Parameter(torch.randn(experts, d, f) * d ** -0.5)
            self.w_out = nn.Parameter(torch.randn(experts, f, d) * f ** -0.5)
            self.last_tokens = []

        def route(self, flat):
            """(capacity, gate, kept tokens, their slots in the [E x capacity] buffer)."""
            cap = int(math.ceil(self.factor * flat.shape[0] / self.E))
            probs = F.softmax(self.router(flat), dim=-1)
            gate, expert = probs.max(dim=-1)
            onehot = F.one_hot(expert, self.E)
            pos = (torch.cumsum(onehot, dim=0) * onehot).sum(dim=-1) - 1  # place of the token in its expert
            keep = pos < cap
            self.last_tokens = [int(v) for v in onehot[keep].sum(dim=0)]
            return cap, gate, keep, (expert * cap + pos)[keep]

        def forward(self, x):
            b, s, d = x.shape
            flat = x.reshape(-1, d)
            n = flat.shape[0]
            cap, gate, keep, slot = self.route(flat)
            buf = flat.new_zeros(self.E * cap, d).index_copy(0, slot, flat[keep])
            h = torch.bmm(buf.view(self.E, cap, d), self.w_in)
            h = torch.bmm(F.gelu(h), self.w_out).view(self.E * cap, d)
            out = flat.new_zeros(n, d)
            out[keep] = h[slot] * gate[keep].unsqueeze(-1).to(x.dtype)
            return out.view(b, s, d)

    class DeepseekMoE(nn.Module):
        def __init__(self, d, f, experts, top_k, shared):
            super().__init__()
            self.E, self.top_k = experts, top_k
            self.weight = nn.Parameter(torch.randn(experts, d) * d ** -0.5)  # DeepSeek's MoEGate
            self.experts = nn.ModuleList(SwiGLU(d, f) for _ in range(experts))
            self.shared_experts = SwiGLU(d, f * shared)
            self.last_tokens = []

        def forward(self, hidden_states):
            identity = hidden_states
            b, s, d = hidden_states.shape
            hidden_states = hidden_states.view(-1, d)
            logits = F.linear(hidden_states, self.weight, None)
            scores = logits.softmax(dim=-1)
            topk_weight, topk_idx = torch.topk(scores, k=self.top_k, dim=-1, sorted=False)
            flat_topk_idx = topk_idx.view(-1)
            hidden_states = hidden_states.repeat_interleave(self.top_k, dim=0)
            y = torch.empty_like(hidden_states)
            self.last_tokens = []
            for i, expert in enumerate(self.experts):
                sel = flat_topk_idx == i
                self.last_tokens.append(int(sel.sum()))
                y[sel] = expert(hidden_states[sel])
            y = (y.view(*topk_weight.shape, -1) * topk_weight.unsqueeze(-1)).sum(dim=1)
            y = y.view(b, s, d)
            return y + self.shared_experts(identity)

    return dict(MixtralExpert=MixtralExpert, MixtralMoE=MixtralMoE, BatchedMoE=BatchedMoE,
                DeepseekMoE=DeepseekMoE)


def _gpt_modules(torch, nn, F):
    """nanoGPT blocks with a given MLP (bmm-moe-tiny, hash-moe-tiny)."""

    class GPTBlock(nn.Module):  # nanoGPT's Block: fused c_attn, LayerNorm, the MLP given
        def __init__(self, d, heads, max_len, mlp):
            super().__init__()
            self.h = heads
            self.ln_1 = nn.LayerNorm(d)
            self.c_attn = nn.Linear(d, 3 * d)
            self.c_proj = nn.Linear(d, d)
            self.ln_2 = nn.LayerNorm(d)
            self.mlp = mlp
            self.register_buffer("bias", torch.tril(torch.ones(max_len, max_len)).bool(), persistent=False)

        def attn(self, x):
            b, s, d = x.shape
            q, k, v = self.c_attn(x).split(d, dim=2)
            q, k, v = (t.view(b, s, self.h, d // self.h).transpose(1, 2) for t in (q, k, v))
            att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
            att = F.softmax(att.masked_fill(~self.bias[:s, :s], float("-inf")), dim=-1)
            return self.c_proj((att @ v).transpose(1, 2).contiguous().view(b, s, d))

        def forward(self, x):
            x = x + self.attn(self.ln_1(x))
            return x + self.mlp(self.ln_2(x))

    class GPTMoE(nn.Module):
        def __init__(self, vocab, d, heads, max_len, mlps):
            super().__init__()
            self.wte = nn.Embedding(vocab, d)
            self.wpe = nn.Embedding(max_len, d)
            self.h = nn.ModuleList(GPTBlock(d, heads, max_len, m) for m in mlps)
            self.ln_f = nn.LayerNorm(d)
            self.lm_head = nn.Linear(d, vocab, bias=False)

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.wte(ids) + self.wpe(pos)
            for blk in self.h:
                x = blk(x)
            return self.lm_head(self.ln_f(x))

        def expert_tokens(self):
            return [b.mlp.last_tokens for b in self.h]

    return dict(GPTBlock=GPTBlock, GPTMoE=GPTMoE)


def _vit_modules(torch, nn, F):
    """timm's ViT encoder (vit-tiny)."""

    class ViTAttention(nn.Module):  # timm Attention
        def __init__(self, d, heads):
            super().__init__()
            self.num_heads, self.scale = heads, (d // heads) ** -0.5
            self.qkv = nn.Linear(d, 3 * d)
            self.proj = nn.Linear(d, d)

        def forward(self, x):
            b, n, c = x.shape
            qkv = self.qkv(x).reshape(b, n, 3, self.num_heads, c // self.num_heads).permute(2, 0, 3, 1, 4)
            q, k, v = qkv.unbind(0)
            attn = (q @ k.transpose(-2, -1)) * self.scale
            attn = attn.softmax(dim=-1)
            return self.proj((attn @ v).transpose(1, 2).reshape(b, n, c))

    class ViTBlock(nn.Module):
        def __init__(self, d, heads):
            super().__init__()
            self.norm1 = nn.LayerNorm(d, eps=1e-6)
            self.attn = ViTAttention(d, heads)
            self.norm2 = nn.LayerNorm(d, eps=1e-6)
            self.fc1 = nn.Linear(d, 4 * d)
            self.fc2 = nn.Linear(4 * d, d)

        def forward(self, x):
            x = x + self.attn(self.norm1(x))
            return x + self.fc2(F.gelu(self.fc1(self.norm2(x))))

    class ViT(nn.Module):
        def __init__(self, img, patch, d, depth, heads, classes):
            super().__init__()
            self.patch_embed = nn.Conv2d(3, d, patch, stride=patch)
            n = (img // patch) ** 2
            self.cls_token = nn.Parameter(torch.zeros(1, 1, d))
            self.pos_embed = nn.Parameter(torch.randn(1, n + 1, d) * 0.02)
            self.blocks = nn.ModuleList(ViTBlock(d, heads) for _ in range(depth))
            self.norm = nn.LayerNorm(d, eps=1e-6)
            self.head = nn.Linear(d, classes)

        def forward(self, x):
            x = self.patch_embed(x).flatten(2).transpose(1, 2)
            x = torch.cat((self.cls_token.expand(x.shape[0], -1, -1), x), dim=1) + self.pos_embed
            for blk in self.blocks:
                x = blk(x)
            return self.head(self.norm(x)[:, 0])

    return dict(ViTAttention=ViTAttention, ViTBlock=ViTBlock, ViT=ViT)


def _hash_moe_modules(torch, nn, F, GPTMoE):
    """Hash-layers MoE (hash-moe-tiny)."""

    class HashMoE(nn.Module):
        def __init__(self, d, f, experts, label):
            super().__init__()
            self.E, self.label = experts, label
            self.experts = nn.ModuleList(nn.Sequential(nn.Linear(d, f), nn.GELU(), nn.Linear(f, d))
                                         for _ in range(experts))
            self.route = None  # [tokens] expert of each token, set by the model from the ids
            self.last_tokens = []

        def forward(self, x):
            b, s, d = x.shape
            flat = x.reshape(-1, d)
            out = torch.zeros_like(flat)
            self.last_tokens = []
            with torch.autograd.profiler.record_function("mitosis.moe"):
                for e, expert in enumerate(self.experts):
                    with torch.autograd.profiler.record_function(self.label):
                        sel = (self.route == e).nonzero().squeeze(1)
                        self.last_tokens.append(int(sel.numel()))
                        out = out.index_add(0, sel, expert(flat.index_select(0, sel)))
            return out.view(b, s, d)

    class HashMoEModel(nn.Module):
        def __init__(self, vocab, d, heads, max_len, mlps, experts):
            super().__init__()
            self.gpt = GPTMoE(vocab, d, heads, max_len, mlps)
            self.register_buffer("hash", torch.randperm(vocab, generator=torch.Generator().manual_seed(1)) % experts,
                                 persistent=False)

        def forward(self, ids):
            route = self.hash[ids.reshape(-1)]
            for blk in self.gpt.h:
                blk.mlp.route = route
            return self.gpt(ids)

        def expert_tokens(self):
            return self.gpt.expert_tokens()

    return dict(HashMoE=HashMoE, HashMoEModel=HashMoEModel)


def _torchrec_modules(torch, nn, F):
    """TorchRec-style sparse features (torchrec-tiny)."""

    class EmbeddingBagCollection(nn.Module):
        """TorchRec's EmbeddingBagCollection without fbgemm: one nn.EmbeddingBag per table, looked up
        with a KeyedJaggedTensor's values and per-key offsets; the pooled vectors concatenated."""

        def __init__(self, rows, dims):
            super().__init__()
            self.embedding_bags = nn.ModuleList(nn.EmbeddingBag(r, d, mode="sum") for r, d in zip(rows, dims))

        def forward(self, values, lengths):  # lengths [tables, batch], values flat (key-major)
            pooled, start = [], 0
            for t, bag in enumerate(self.embedding_bags):
                n = int(lengths[t].sum())
                offsets = torch.cat([lengths.new_zeros(1), torch.cumsum(lengths[t], 0)[:-1]])
                pooled.append(bag(values[start:start + n], offsets))
                start += n
            return torch.cat(pooled, dim=1)

    class TorchRecModel(nn.Module):
        def __init__(self, dense_in, rows, dims):
            super().__init__()
            self.sparse_arch = EmbeddingBagCollection(rows, dims)
            self.dense_arch = nn.Sequential(nn.Linear(dense_in, 64), nn.ReLU(), nn.Linear(64, 32), nn.ReLU())
            self.over_arch = nn.Sequential(nn.Linear(32 + sum(dims), 64), nn.ReLU(), nn.Linear(64, 1))

        def forward(self, dense, values, lengths):
            return self.over_arch(torch.cat([self.dense_arch(dense), self.sparse_arch(values, lengths)], 1)).squeeze(1)

    return dict(EmbeddingBagCollection=EmbeddingBagCollection, TorchRecModel=TorchRecModel)


def _modules():
    """Every family's classes by name (torch imported here: the package imports without it)."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F
    m = _llama_modules(torch, nn, F)
    m.update(_moe_modules(torch, nn, F, m["SwiGLU"]))
    m.update(_gpt_modules(torch, nn, F))
    m.update(_vit_modules(torch, nn, F))
    m.update(_hash_moe_modules(torch, nn, F, m["GPTMoE"]))
    m.update(_torchrec_modules(torch, nn, F))
    return m



def build(name, args, gen, device, dtype):
    """(model, inputs, loss_fn, info) of family `name` at args' sizes."""
    import torch
    import torch.nn.functional as F
    M = _modules()
    s = args.seq_len or 128
    d, L, H = args.hidden, args.layers, args.heads
    info = {"family": name}

    def lm(model, extra):
        ids = torch.randint(0, args.vocab, (args.batch, s), generator=gen)
        labels = ids.roll(-1, dims=1).to(device)
        vocab = args.vocab
        info.update(seq_len=s, layers=L, hidden=d, heads=H, vocab=vocab, **extra)
        return (model.to(device=device, dtype=dtype), ids.to(device),
                lambda out: F.cross_entropy(out.reshape(-1, vocab).float(), labels.reshape(-1)), info)

    if name in ("llama-tiny", "mixtral-tiny", "deepseek-tiny"):
        kv = args.kv_heads or H
        if H % kv:
            raise ValueError("--kv-heads %d must divide --heads %d" % (kv, H))
        f = args.ffn or (8 * d // 3 + 63) // 64 * 64  # Llama's 2/3 x 4d, rounded to 64
        extra = dict(kv_heads=kv, ffn=f, rmsnorm=True, rotary=True, swiglu=True, tied_head=False)
        if name == "llama-tiny":
            mlps = [M["SwiGLU"](d, f) for _ in range(L)]
        elif name == "mixtral-tiny":
            mlps = [M["MixtralMoE"](d, f, args.experts, args.top_k) for _ in range(L)]
            extra.update(moe_layers=L, experts=args.experts, top_k=args.top_k, shared_experts=0,
                         router="softmax+topk", dispatch="index/index_add_")
        else:
            fe = args.moe_ffn or max(16, f // 4)
            mlps = [M["SwiGLU"](d, f)] + [M["DeepseekMoE"](d, fe, args.experts, args.top_k, args.shared_experts)
                                          for _ in range(L - 1)]
            extra.update(moe_layers=L - 1, dense_layers=1, experts=args.experts, top_k=args.top_k,
                         shared_experts=args.shared_experts, moe_ffn=fe, router="softmax+topk",
                         dispatch="boolean mask")
        return lm(M["Decoder"](args.vocab, d, H, kv, max(s, 2), mlps), extra)

    if name == "bmm-moe-tiny":
        f = args.ffn or 2 * d
        mlps = [M["BatchedMoE"](d, f, args.experts, args.capacity_factor) for _ in range(L)]
        return lm(M["GPTMoE"](args.vocab, d, H, max(s, 2), mlps),
                  dict(ffn=f, moe_layers=L, experts=args.experts, top_k=1, shared_experts=0,
                       capacity_factor=args.capacity_factor, fused_qkv=True, router="softmax+max",
                       dispatch="capacity buffer, bmm over stacked [E, d, f] weights"))

    if name == "hash-moe-tiny":
        f = args.ffn or 2 * d
        mlps = [M["HashMoE"](d, f, args.experts, args.expert_label) for _ in range(L)]
        return lm(M["HashMoEModel"](args.vocab, d, H, max(s, 2), mlps, args.experts),
                  dict(ffn=f, moe_layers=L, experts=args.experts, top_k=1, shared_experts=0, router="none (hash)",
                       expert_label=args.expert_label, dispatch="index_select/index_add"))

    if name == "vit-tiny":
        img, patch, classes = 32, 8, 10
        model = M["ViT"](img, patch, d, L, H, classes)
        x = torch.randn(args.batch, 3, img, img, generator=gen).to(device=device, dtype=dtype)
        y = torch.randint(0, classes, (args.batch,), generator=gen).to(device)
        info.update(layers=L, hidden=d, heads=H, image=img, patch=patch, tokens=(img // patch) ** 2 + 1,
                    fused_qkv=True, classes=classes)
        return model.to(device=device, dtype=dtype), x, lambda out: F.cross_entropy(out.float(), y), info

    if name == "torchrec-tiny":
        T = args.tables
        rows = [max(100, args.vocab >> t) for t in range(T)]
        dims = [args.emb_dim if t % 2 == 0 else args.emb_dim // 2 for t in range(T)]
        dense_in = 13
        model = M["TorchRecModel"](dense_in, rows, dims)
        B = args.batch
        lengths = torch.randint(0, 2 * args.bag + 1, (T, B), generator=gen)  # jagged: 0 .. 2 x bag ids
        values = torch.cat([torch.randint(0, rows[t], (int(lengths[t].sum()),), generator=gen) for t in range(T)])
        dense = torch.rand(B, dense_in, generator=gen).to(device=device, dtype=dtype)
        y = torch.randint(0, 2, (B,), generator=gen).float().to(device)
        info.update(tables=T, table_rows=rows, emb_dims=dims, mean_bag=args.bag, ids=int(values.numel()),
                    pooling="sum", jagged=True)
        return (model.to(device=device, dtype=dtype), (dense, values.to(device), lengths.to(device)),
                lambda out: F.binary_cross_entropy_with_logits(out.float(), y), info)

    raise ValueError("unknown family %s" % name)
