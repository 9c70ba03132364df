#!/usr/bin/python3
"""Record one training step of a PyTorch model as mitosis input.

Runs warm-up steps, then ONE step under both the PyTorch profiler and the
Execution Trace (ET) observer, then N timed steps.  Writes into the output
folder:

  kineto.json.gz  profiler trace in Kineto's Chrome-trace JSON (cpu_op events
                  with "External id", "Input Dims", "Input type", ...; GPU
                  kernels when recorded on a GPU with a Kineto-enabled PyTorch)
  et.json.gz      Execution Trace of the same step (operator graph with tensor
                  ids, shapes and types), schema as written by the installed
                  PyTorch
  meta.json       model, batch, dtype, device, versions, parameter count,
                  measured step time (median/min/max/all, ms), file names

With a Kineto-enabled PyTorch (2.x wheels) the profiler's own
export_chrome_trace() writes kineto.json.gz unchanged.  PyTorch builds without
Kineto (Debian's CPU build of 1.13) export a Chrome trace without operator
args; there this script writes the Kineto-format JSON itself from
prof.profiler.kineto_results, with the same keys real Kineto uses.

The profiled step is wrapped in record_function("ProfilerStep#N"), N being the
0-based index of the step in this run (warm-up steps come first).

Models: torchvision classifiers by name (random weights, no downloads), the
built-in transformers gpt-tiny (causal LM) and bert-tiny (masked-LM encoder),
mlp (a tiny 2-layer MLP, for tests), HuggingFace gpt2*/bert-* configs when the
`transformers` package is importable (random init, offline), or a user's
`module:function`.  See --help.
"""

import argparse
import gzip
import importlib
import inspect
import json
import math
import os
import platform
import random
import shutil
import statistics
import sys
import tempfile
import time

# Never touch the network: HuggingFace configs are built locally.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

PROG = "collect.py"

# collect_dist.py (the --dist and --sibling-load recordings) imports this file as `collect`: run
# as a script (or as a spawned worker's __mp_main__) it must get this module, not a second copy
# (whose CollectError the handler below would not catch).
sys.modules.setdefault("collect", sys.modules[__name__])


class CollectError(Exception):
    """A user-facing error: printed as one line, exit status 2."""


def fail(msg):
    raise CollectError(msg)


# --------------------------------------------------------------------------
# Built-in models (plain torch, no downloads)
# --------------------------------------------------------------------------

def _builtin_modules():
    """Defines the built-in model classes lazily so --help works without torch."""
    import torch
    import torch.nn as nn
    import torch.nn.functional as F

    class SelfAttention(nn.Module):
        """Multi-head attention with separate q/k/v/o nn.Linear projections
        (HuggingFace BERT layout), explicit softmax(QK^T/sqrt(d))V."""

        def __init__(self, hidden, heads, causal, max_len):
            super().__init__()
            if hidden % heads:
                raise ValueError("hidden size %d is not a multiple of %d heads" % (hidden, heads))
            self.heads = heads
            self.head_dim = hidden // heads
            self.q_proj = nn.Linear(hidden, hidden)
            self.k_proj = nn.Linear(hidden, hidden)
            self.v_proj = nn.Linear(hidden, hidden)
            self.o_proj = nn.Linear(hidden, hidden)
            self.causal = causal
            if causal:
                mask = torch.ones(max_len, max_len, dtype=torch.bool).triu(1)
                self.register_buffer("mask", mask, persistent=False)

        def forward(self, x):
            b, s, h = x.shape

            def split(t):
                return t.view(b, s, self.heads, self.head_dim).transpose(1, 2)

            q = split(self.q_proj(x))
            k = split(self.k_proj(x))
            v = split(self.v_proj(x))
            scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(self.head_dim)
            if self.causal:
                scores = scores.masked_fill(self.mask[:s, :s], float("-inf"))
            probs = F.softmax(scores, dim=-1)
            ctx = torch.matmul(probs, v).transpose(1, 2).reshape(b, s, h)
            return self.o_proj(ctx)

    class Block(nn.Module):
        def __init__(self, hidden, heads, ffn, causal, max_len, pre_ln):
            super().__init__()
            self.pre_ln = pre_ln
            self.ln1 = nn.LayerNorm(hidden)
            self.attn = SelfAttention(hidden, heads, causal, max_len)
            self.ln2 = nn.LayerNorm(hidden)
            self.fc1 = nn.Linear(hidden, ffn)
            self.fc2 = nn.Linear(ffn, hidden)

        def mlp(self, x):
            return self.fc2(F.gelu(self.fc1(x)))

        def forward(self, x):
            if self.pre_ln:  # GPT-2
                x = x + self.attn(self.ln1(x))
                return x + self.mlp(self.ln2(x))
            x = self.ln1(x + self.attn(x))  # BERT (post-LN)
            return self.ln2(x + self.mlp(x))

    class TinyTransformer(nn.Module):
        """gpt-tiny: causal LM (token+position embedding, pre-LN blocks, final
        LayerNorm, LM head tied to the embedding).  bert-tiny: encoder
        (embeddings + LayerNorm, post-LN blocks, MLM head)."""

        def __init__(self, causal, vocab, hidden, layers, heads, max_len):
            super().__init__()
            self.causal = causal
            self.tok = nn.Embedding(vocab, hidden)
            self.pos = nn.Embedding(max_len, hidden)
            self.emb_ln = None if causal else nn.LayerNorm(hidden)
            self.blocks = nn.ModuleList(
                Block(hidden, heads, 4 * hidden, causal, max_len, pre_ln=causal)
                for _ in range(layers))
            self.ln_f = nn.LayerNorm(hidden) if causal else None
            self.head = nn.Linear(hidden, vocab, bias=not causal)
            if causal:
                self.head.weight = self.tok.weight

        def forward(self, ids):
            pos = torch.arange(ids.shape[1], device=ids.device)
            x = self.tok(ids) + self.pos(pos)
            if self.emb_ln is not None:
                x = self.emb_ln(x)
            for blk in self.blocks:
                x = blk(x)
            if self.ln_f is not None:
                x = self.ln_f(x)
            return self.head(x)

    class MLP(nn.Module):
        def __init__(self, inp, hidden, classes):
            super().__init__()
            self.fc1 = nn.Linear(inp, hidden)
            self.fc2 = nn.Linear(hidden, classes)

        def forward(self, x):
            return self.fc2(F.relu(self.fc1(x)))

    class ResMLP(nn.Module):
        """resmlp: --layers residual blocks x + fc2(relu(fc1(LayerNorm(x)))) of width --hidden
        (2x inside), a linear head to 10 classes. Every block boundary carries one [batch,
        hidden] tensor, the block's output; inside a block its input crosses too."""

        def __init__(self, hidden, layers, classes=10):
            super().__init__()
            self.blocks = nn.ModuleList(nn.Sequential() for _ in range(layers))
            for blk in self.blocks:
                blk.ln = nn.LayerNorm(hidden)
                blk.fc1 = nn.Linear(hidden, 2 * hidden)
                blk.fc2 = nn.Linear(2 * hidden, hidden)
            self.head = nn.Linear(hidden, classes)

        @staticmethod
        def block(blk, x):
            return x + blk.fc2(F.relu(blk.fc1(blk.ln(x))))

        def run(self, x, first, last, head):
            for blk in self.blocks[first:last]:
                x = self.block(blk, x)
            return self.head(x) if head else x

        def forward(self, x):
            return self.run(x, 0, len(self.blocks), True)

    import sparse_models
    out = {"TinyTransformer": TinyTransformer, "MLP": MLP, "ResMLP": ResMLP}
    out.update(sparse_models.modules(Block))  # moe-tiny, dlrm-tiny
    return out


if os.path.dirname(os.path.abspath(__file__)) not in sys.path:  # imported from elsewhere
    sys.path.append(os.path.dirname(os.path.abspath(__file__)))
import families  # noqa: E402  (public-code model families: llama-tiny, mixtral-tiny, ...)

BUILTIN = {
    "gpt-tiny": "built-in causal transformer LM (plain torch)",
    "bert-tiny": "built-in encoder transformer, masked-LM loss (plain torch)",
    "mlp": "built-in 2-layer MLP on random vectors (for tests)",
    "resmlp": "built-in residual MLP blocks on random vectors (splits into pipeline stages)",
    "moe-tiny": "built-in GPT with mixture-of-experts feed-forward layers (--experts, --top-k, --capacity-factor)",
    "dlrm-tiny": "built-in DLRM: bottom MLP, embedding tables of different sizes, dot interaction, top MLP "
                 "(--dist embedding shards its tables)",
}
BUILTIN.update(families.FAMILIES)

# HuggingFace configs (random init) usable when `transformers` imports.
HF_CONFIGS = {
    "gpt2": ("GPT2Config", "GPT2LMHeadModel", {}),
    "gpt2-medium": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=1024, n_layer=24, n_head=16)),
    "gpt2-large": ("GPT2Config", "GPT2LMHeadModel", dict(n_embd=1280, n_layer=36, n_head=20)),
    "bert-base": ("BertConfig", "BertForMaskedLM", {}),
    "bert-large": ("BertConfig", "BertForMaskedLM",
                   dict(hidden_size=1024, num_hidden_layers=24, num_attention_heads=16,
                        intermediate_size=4096)),
    # Slices of models larger than one GPU, as HuggingFace writes them (SDPA attention, RMSNorm,
    # rotary, SwiGLU, grouped-query attention, untied head): a 2-block Llama-3-8B and one
    # Mixtral-8x7B block (8 experts, top-2), full width, random init.
    "llama3-8b-2blocks": ("LlamaConfig", "LlamaForCausalLM",
                          dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                               num_key_value_heads=8, num_hidden_layers=2, vocab_size=128256,
                               max_position_embeddings=8192,
                               tie_word_embeddings=False)),
    "mixtral-8x7b-1block": ("MixtralConfig", "MixtralForCausalLM",
                            dict(hidden_size=4096, intermediate_size=14336, num_attention_heads=32,
                                 num_key_value_heads=8, num_hidden_layers=1, vocab_size=32000,
                                 num_local_experts=8, num_experts_per_tok=2,
                                 max_position_embeddings=32768, tie_word_embeddings=False)),
}
# The same slices at 8 and 2 blocks: the 2 -> 8 block check of `mitosis simulate --blocks` on a GPU.
HF_CONFIGS["llama3-8b-8blocks"] = HF_CONFIGS["llama3-8b-2blocks"][:2] + (
    dict(HF_CONFIGS["llama3-8b-2blocks"][2], num_hidden_layers=8),)
HF_CONFIGS["mixtral-8x7b-2blocks"] = HF_CONFIGS["mixtral-8x7b-1block"][:2] + (
    dict(HF_CONFIGS["mixtral-8x7b-1block"][2], num_hidden_layers=2),)

# torchvision models whose input is not 224x224.
TV_INPUT_SIZE = {"inception_v3": 299}


def torchvision_models():
    """Names of the torchvision classification models (empty if absent)."""
    try:
        import torchvision.models as tvm
    except Exception:
        return []
    if hasattr(tvm, "list_models"):  # torchvision >= 0.14
        try:
            import torchvision.models as m
            return sorted(tvm.list_models(module=m))
        except TypeError:
            pass
    return sorted(n for n, f in vars(tvm).items()
                  if callable(f) and n[:1].islower() and not n.startswith("_")
                  and n not in ("get_model", "get_weight", "get_model_weights", "list_models",
                                "get_model_builder"))


def transformers_available():
    try:
        import transformers  # noqa: F401
        return True
    except Exception:
        return False


def _seq_len(args):
    return args.seq_len if args.seq_len else 128


def build_workload(args, device, dtype, seed=None):
    """Returns (model, inputs, loss_fn, optimizer_or_None, info).

    inputs is a tensor, tuple (positional args) or dict (keyword args) passed to
    the model; loss_fn(output) returns the scalar loss."""
    import torch
    import torch.nn.functional as F

    name = args.model
    info = {}
    gen = torch.Generator().manual_seed(args.seed if seed is None else seed)

    if ":" in name:
        return build_user_workload(name, args, device, dtype)

    if name in ("gpt-tiny", "bert-tiny"):
        TinyTransformer = _builtin_modules()["TinyTransformer"]
        s = _seq_len(args)
        causal = name == "gpt-tiny"
        model = TinyTransformer(causal, args.vocab, args.hidden, args.layers, args.heads,
                                max(s, 2))
        ids = torch.randint(0, args.vocab, (args.batch, s), generator=gen)
        if causal:
            labels = ids.roll(-1, dims=1)
        else:
            labels = torch.randint(0, args.vocab, (args.batch, s), generator=gen)
        ids, labels = ids.to(device), labels.to(device)
        vocab = args.vocab

        def loss_fn(out):
            return F.cross_entropy(out.reshape(-1, vocab).float(), labels.reshape(-1))

        info.update(seq_len=s, layers=args.layers, hidden=args.hidden, heads=args.heads,
                    vocab=args.vocab)
        return model.to(device=device, dtype=dtype), ids, loss_fn, None, info

    if name == "mlp":
        MLP = _builtin_modules()["MLP"]
        model = MLP(args.hidden, 4 * args.hidden, 10)
        x = torch.randn(args.batch, args.hidden, generator=gen).to(device=device, dtype=dtype)
        y = torch.randint(0, 10, (args.batch,), generator=gen).to(device)
        info.update(hidden=args.hidden)
        return (model.to(device=device, dtype=dtype), x,
                lambda out: F.cross_entropy(out.float(), y), None, info)

    if name == "resmlp":
        model = _builtin_modules()["ResMLP"](args.hidden, args.layers)
        x = torch.randn(args.batch, args.hidden, generator=gen).to(device=device, dtype=dtype)
        y = torch.randint(0, 10, (args.batch,), generator=gen).to(device)
        info.update(hidden=args.hidden, layers=args.layers)
        return (model.to(device=device, dtype=dtype), x,
                lambda out: F.cross_entropy(out.float(), y), None, info)

    if name == "dlrm-tiny":
        import sparse_models
        rows = sparse_models.table_rows(args.vocab, args.tables)
        model = _builtin_modules()["DLRMTiny"](rows, args.emb_dim)
        dense, ids, y = sparse_models.dlrm_inputs(args, gen, device, dtype)
        info.update(tables=args.tables, table_rows=rows, emb_dim=args.emb_dim, bag=args.bag,
                    dense_features=sparse_models.DENSE_FEATURES,
                    dense_parameters=sum(p.numel() for p in model.dense.parameters()))
        return (model.to(device=device, dtype=dtype), (dense, ids),
                lambda out: F.binary_cross_entropy_with_logits(out.float(), y), None, info)

    if name in families.FAMILIES:
        try:
            model, inputs, loss_fn, fam = families.build(name, args, gen, device, dtype)
        except ValueError as e:
            fail(str(e))
        info.update(fam)
        return model, inputs, loss_fn, None, info

    if name == "moe-tiny":
        import sparse_models
        s = _seq_len(args)
        model = _builtin_modules()["MoETiny"](args.vocab, args.hidden, args.layers, args.heads, max(s, 2),
                                              args.experts, args.top_k, args.capacity_factor)
        ids = torch.randint(0, args.vocab, (args.batch, s), generator=gen)
        labels = ids.roll(-1, dims=1).to(device)
        vocab = args.vocab
        info.update(seq_len=s, hidden=args.hidden, layers=args.layers, heads=args.heads, vocab=args.vocab,
                    experts=args.experts, top_k=args.top_k, capacity_factor=args.capacity_factor,
                    expert_capacity=sparse_models.capacity(args.batch * s, args.experts, args.top_k,
                                                           args.capacity_factor))
        return (model.to(device=device, dtype=dtype), ids.to(device),
                lambda out: F.cross_entropy(out.reshape(-1, vocab).float(), labels.reshape(-1)), None, info)


    if name in HF_CONFIGS:
        if not transformers_available():
            fail("model '%s' needs the `transformers` package, which is not importable here "
                 "(use gpt-tiny or bert-tiny instead)" % name)
        import transformers
        cfg_name, model_name, kw = HF_CONFIGS[name]
        s = _seq_len(args)
        cfg = getattr(transformers, cfg_name)(**kw)
        max_pos = getattr(cfg, "n_positions", None) or getattr(cfg, "max_position_embeddings")
        if s > max_pos:
            fail("--seq-len %d exceeds %s's %d positions" % (s, name, max_pos))
        model = getattr(transformers, model_name)(cfg)
        vocab = cfg.vocab_size
        ids = torch.randint(0, vocab, (args.batch, s), generator=gen).to(device)
        labels = ids.clone()
        info.update(seq_len=s, transformers_version=transformers.__version__,
                    hf_config={k: v for k, v in cfg.to_dict().items()
                               if isinstance(v, (int, float, str, bool)) and not k.startswith("_")})
        return (model.to(device=device, dtype=dtype), {"input_ids": ids, "labels": labels},
                lambda out: out.loss, None, info)

    tv = torchvision_models()
    if name in tv:
        import torchvision.models as tvm
        builder = getattr(tvm, name)
        try:
            model = builder(weights=None)
        except TypeError:  # torchvision < 0.13
            model = builder(pretrained=False)
        size = TV_INPUT_SIZE.get(name, 224)
        x = torch.randn(args.batch, 3, size, size, generator=gen).to(device=device, dtype=dtype)
        classes = 1000
        y = torch.randint(0, classes, (args.batch,), generator=gen).to(device)

        def loss_fn(out):
            if isinstance(out, tuple):  # inception/googlenet aux outputs
                out = out[0]
            if hasattr(out, "logits"):
                out = out.logits
            return F.cross_entropy(out.float(), y)

        info.update(input_size=[3, size, size])
        return model.to(device=device, dtype=dtype), x, loss_fn, None, info

    known = sorted(BUILTIN) + sorted(HF_CONFIGS) + ["<torchvision model>", "module:function"]
    fail("unknown model '%s' (known: %s; torchvision: %s)" % (
        name, ", ".join(known), ", ".join(tv[:12]) + (", ..." if len(tv) > 12 else "")))


def build_user_workload(spec, args, device, dtype):
    """`module:function` -> function(**kw) returning (model, inputs, loss_fn, optimizer).

    The function receives those of batch, seq_len, device, dtype that its
    signature names (or all of them if it takes **kwargs)."""
    mod_name, _, fn_name = spec.partition(":")
    if not mod_name or not fn_name:
        fail("bad module:function '%s' (expected e.g. mypkg.models:make)" % spec)
    sys.path.insert(0, os.getcwd())
    try:
        mod = importlib.import_module(mod_name)
    except Exception as e:
        fail("cannot import module '%s' for '%s': %s: %s" % (mod_name, spec, type(e).__name__, e))
    fn = getattr(mod, fn_name, None)
    if not callable(fn):
        fail("module '%s' has no callable '%s'" % (mod_name, fn_name))
    offered = dict(batch=args.batch, seq_len=args.seq_len, device=device, dtype=dtype)
    try:
        params = inspect.signature(fn).parameters
        if any(p.kind == p.VAR_KEYWORD for p in params.values()):
            kw = offered
        else:
            kw = {k: v for k, v in offered.items() if k in params}
    except (TypeError, ValueError):
        kw = {}
    try:
        res = fn(**kw)
    except Exception as e:
        fail("%s(...) raised %s: %s" % (spec, type(e).__name__, e))
    if not isinstance(res, (tuple, list)) or len(res) != 4:
        fail("%s must return (model, inputs, loss_fn, optimizer), got %s" % (spec, type(res).__name__))
    model, inputs, loss_fn, opt = res
    if not callable(model) or not callable(loss_fn):
        fail("%s returned a non-callable model or loss_fn" % spec)
    info = {"seq_len": args.seq_len} if args.seq_len else {}
    return model, inputs, loss_fn, opt, info


def optimizer_spec(name):
    """(optimizer class, its keyword arguments) for --optimizer sgd|adam."""
    import torch
    if name == "sgd":
        return torch.optim.SGD, dict(lr=1e-3, momentum=0.9)
    return torch.optim.Adam, dict(lr=1e-4)


def make_optimizer(name, model):
    """--optimizer's optimizer over a model's trainable parameters, or over a list of them."""
    params = model.parameters() if hasattr(model, "parameters") else model
    cls, kw = optimizer_spec(name)
    return cls([p for p in params if p.requires_grad], **kw)


# --------------------------------------------------------------------------
# Kineto-format JSON from a PyTorch build without Kineto (1.13 CPU)
# --------------------------------------------------------------------------

def _concrete(v):
    """Kineto 2.x "Concrete Inputs" cell: scalar value as text, else ""."""
    if v is None:
        return ""
    if isinstance(v, bool):
        return "True" if v else "False"
    if isinstance(v, (int, float)):
        return repr(v)
    if isinstance(v, str):
        return v
    return ""


def _rel_us(ns, base_ns):
    """µs since base_ns with ns precision (absolute epoch µs do not fit a double's
    53 bits at ns precision; newer Kineto writes baseTimeNanoseconds likewise)."""
    return round((ns - base_ns) / 1000.0, 3)


def link_record_functions(events, et_rf_by_id):
    """{correlation id: ET rf_id} for every profiler event, or None when the two do not name the
    same ops.  Usually the ids are equal.  A process-group backend's events (gloo:*, recorded on
    its worker threads) draw their correlation ids out of turn, which shifts every later id by
    one against the ET's; then the two lists are paired in id order apart from those events
    (whose names must agree one to one), and the backend's events by name in start order."""
    if not et_rf_by_id:
        return None
    if all(et_rf_by_id.get(e.correlation_id()) == e.name() for e in events):
        return {e.correlation_id(): e.correlation_id() for e in events}
    worker = lambda name: name.startswith(("gloo:", "nccl:", "mpi:"))
    ev = sorted(events, key=lambda e: e.correlation_id())
    rf = sorted(et_rf_by_id)
    a = [e for e in ev if not worker(e.name())]
    b = [r for r in rf if not worker(et_rf_by_id[r])]
    if len(a) != len(b) or any(e.name() != et_rf_by_id[r] for e, r in zip(a, b)):
        return None
    out = {e.correlation_id(): r for e, r in zip(a, b)}
    wa = sorted((e for e in ev if worker(e.name())), key=lambda e: (e.start_us(), e.correlation_id()))
    wb = [r for r in rf if worker(et_rf_by_id[r])]
    for name in {e.name() for e in wa} | {et_rf_by_id[r] for r in wb}:
        xa = [e for e in wa if e.name() == name]
        xb = [r for r in wb if et_rf_by_id[r] == name]
        if len(xa) != len(xb):
            return None
        out.update((e.correlation_id(), r) for e, r in zip(xa, xb))
    return out


def kineto_json_from_results(prof, trace_name, et_rf_by_id=None):
    """Builds the Kineto trace dict from prof.profiler.kineto_results.

    Per event the KinetoEvent gives name, correlation id (Kineto's "External
    id"), sequence number, forward thread id, scope, shapes, dtypes and whole-µs
    times; the experimental event tree (same correlation ids) adds ns times,
    strides and scalar argument values.  et_rf_by_id maps ET rf_id -> op name;
    when every event's External id names the same op there, the event also gets
    "Record function id" (as PyTorch >= 2.2 writes)."""
    import threading

    res = prof.profiler.kineto_results
    events = list(res.events())
    step = next((e for e in events if e.name().startswith("ProfilerStep#")), None)
    if step is not None:  # what profile_step's settle ran after the step (a barrier) is not the step's
        end_us = step.start_us() + step.duration_us()
        events = [e for e in events if e.start_us() <= end_us]
    tree = {}
    try:
        stack = list(res.experimental_event_tree())
        while stack:
            n = stack.pop()
            stack.extend(n.children)
            tree[n.correlation_id] = n
    except Exception:
        tree = {}

    pid = os.getpid()
    # KinetoEvent thread ids are small profiler-assigned numbers; the main
    # (profiling) thread is the one that started the step.  Map it to the OS
    # thread id, as real Kineto writes tids.
    main_small = None
    for e in events:
        if e.name().startswith("ProfilerStep#"):
            main_small = e.start_thread_id()
            break
    native = threading.get_native_id()

    def tid_of(small):
        return native if small == main_small else small

    # Base time: the earliest start, rounded down to a whole second.
    starts = [n.start_time_ns for n in tree.values()] or [e.start_us() * 1000 for e in events]
    base_ns = (min(starts) // 1_000_000_000) * 1_000_000_000 if starts else 0

    rf_of = link_record_functions(events, et_rf_by_id or {})
    link_ok = False if rf_of is None else "same" if all(k == v for k, v in rf_of.items()) else "paired"

    ops = []
    for e in events:
        node = tree.get(e.correlation_id())
        if node is not None and getattr(node, "name", None) == e.name():
            ts = _rel_us(node.start_time_ns, base_ns)
            dur = round(node.duration_time_ns / 1000.0, 3)
            inp = getattr(node.extra_fields, "inputs", None)
        else:
            ts = _rel_us(e.start_us() * 1000, base_ns)
            dur, inp = float(e.duration_us()), None
        args = {"External id": e.correlation_id()}
        if link_ok:
            args["Record function id"] = rf_of[e.correlation_id()]
        dims = list(e.shapes())
        types = list(e.dtypes())
        # Like Kineto, list-valued args are written only when non-empty.
        if inp is not None and dims:
            try:
                args["Concrete Inputs"] = [_concrete(v) for v in inp.ivalues]
            except Exception:
                pass
        if types:
            args["Input type"] = types
        if dims:
            args["Input Dims"] = dims
        if inp is not None and dims:
            try:
                args["Input Strides"] = [list(s) for s in inp.strides]
            except Exception:
                pass
        if e.sequence_nr() >= 0:
            args["Fwd thread id"] = e.fwd_thread_id()
            args["Sequence number"] = e.sequence_nr()
        cat = "user_annotation" if int(e.scope()) == 7 else "cpu_op"  # RecordScope.USER_SCOPE
        ops.append({"ph": "X", "cat": cat, "name": e.name(), "pid": pid,
                    "tid": tid_of(e.start_thread_id()), "ts": ts, "dur": dur, "args": args,
                    "_corr": e.correlation_id()})

    ops.sort(key=lambda o: (o["ts"], o["_corr"]))
    for i, o in enumerate(ops):
        del o["_corr"]
        o["args"]["Ev Idx"] = i

    t0 = min((o["ts"] for o in ops), default=0.0)
    t1 = max((o["ts"] + o["dur"] for o in ops), default=0.0)
    pname = os.path.basename(sys.executable) or "python"
    meta = [
        {"name": "process_name", "ph": "M", "ts": t0, "pid": pid, "tid": 0,
         "args": {"name": pname}},
        {"name": "process_labels", "ph": "M", "ts": t0, "pid": pid, "tid": 0,
         "args": {"labels": "CPU"}},
        {"name": "process_sort_index", "ph": "M", "ts": t0, "pid": pid, "tid": 0,
         "args": {"sort_index": pid}},
    ]
    for tid in sorted({o["tid"] for o in ops}):
        meta.append({"name": "thread_name", "ph": "M", "ts": t0, "pid": pid, "tid": tid,
                     "args": {"name": "thread %d (%s)" % (tid, pname)}})
        meta.append({"name": "thread_sort_index", "ph": "M", "ts": t0, "pid": pid, "tid": tid,
                     "args": {"sort_index": tid}})
    span = {"ph": "X", "cat": "Trace", "ts": t0, "dur": round(t1 - t0, 3), "pid": "Spans",
            "tid": "PyTorch Profiler", "name": "PyTorch Profiler (0)", "args": {"Op count": 0}}
    return {
        "schemaVersion": 1,
        "deviceProperties": [],
        "record_shapes": 1,
        "with_stack": 0,
        "profile_memory": 0,
        "traceEvents": ops + meta + [span],
        "traceName": trace_name,
        "displayTimeUnit": "ms",
        "baseTimeNanoseconds": base_ns,
        # Not a Kineto key: says this file was written by collect.py, not by libkineto.
        "traceWriter": "mitosis tracer/collect.py from kineto_results (PyTorch %s, no Kineto)"
                       % _torch_version(),
    }, link_ok


def _torch_version():
    import torch
    return torch.__version__


# --------------------------------------------------------------------------
# Recording
# --------------------------------------------------------------------------

def et_observer_class():
    import torch.profiler as tp
    for n in ("ExecutionTraceObserver", "ExecutionGraphObserver"):
        if hasattr(tp, n):
            return n, getattr(tp, n)
    return None, None


def device_name(device):
    import torch
    if device.type == "cuda":
        return torch.cuda.get_device_name(device)
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    model = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    return "%s (%d cores, %d torch threads)" % (model, os.cpu_count() or 0, torch.get_num_threads())


def gzip_file(src, dst):
    with open(src, "rb") as fi, gzip.open(dst, "wb", compresslevel=9) as fo:
        shutil.copyfileobj(fi, fo)


def write_json_gz(obj, dst):
    with gzip.open(dst, "wt", encoding="utf-8", compresslevel=9) as f:
        json.dump(obj, f, separators=(",", ":"))


def _out_of_memory(e):
    """True when e is PyTorch running out of GPU or host memory."""
    import torch
    oom = getattr(torch.cuda, "OutOfMemoryError", None)
    if oom is not None and isinstance(e, oom):
        return True
    msg = str(e)
    return isinstance(e, RuntimeError) and ("out of memory" in msg or "can't allocate memory" in msg)


OUTPUTS = ("meta.json", "kineto.json.gz", "et.json.gz")


def clear_outputs(out):
    """Removes an earlier recording's files from out, so that a run that fails part-way never leaves
    a folder mixing two recordings (meta.json, written last, says one is complete)."""
    for name in OUTPUTS:
        try:
            os.remove(os.path.join(out, name))
        except FileNotFoundError:
            pass
        except OSError as e:
            fail("cannot replace %s (%s); choose another -o" % (os.path.join(out, name), e.strerror))


def run(args):
    """Records one step into args.out; raises CollectError (one line) on any expected failure,
    out of memory included. A --dist job's ranks import torch; this process does not (it checks the
    arguments and waits: collect_dist.run_dist)."""
    clear_outputs(args.out)
    if args.dist:
        import importlib.util
        if importlib.util.find_spec("torch") is None:
            fail("cannot import torch; install PyTorch (Debian: apt-get install python3-torch python3-torchvision)")
        import collect_dist
        collect_dist.run_dist(args)
        return
    try:
        import torch
    except Exception as e:
        fail("cannot import torch (%s); install PyTorch (Debian: apt-get install "
             "python3-torch python3-torchvision)" % e)
    try:
        _record(args)
    except CollectError:
        raise
    except Exception as e:
        if not _out_of_memory(e):
            raise
        if torch.cuda.is_available():
            torch.cuda.empty_cache()
        fail("out of %s memory for %s at batch %d %s (use a smaller --batch%s)" % (
            "GPU" if args.device == "cuda" else "host", args.model, args.batch, args.dtype,
            " or --dtype bf16" if args.dtype == "fp32" else ""))


def setup_torch(args):
    """Seeds, device, threads and dtype of a recording; returns (torch.device, dtype)."""
    import torch
    random.seed(args.seed)
    torch.manual_seed(args.seed)
    try:
        import numpy
        numpy.random.seed(args.seed)
    except Exception:
        pass
    if args.device is None:
        args.device = "cuda" if torch.cuda.is_available() else "cpu"
    if args.device == "cuda" and not torch.cuda.is_available():
        fail("--device cuda requested but torch.cuda.is_available() is False")
    device = torch.device(args.device)
    if device.type == "cuda":
        torch.backends.cudnn.benchmark = False
        torch.cuda.manual_seed_all(args.seed)
    if args.threads:
        torch.set_num_threads(args.threads)
    return device, {"fp32": torch.float32, "bf16": torch.bfloat16}[args.dtype]


def device_sync(device):
    import torch
    if device.type == "cuda":
        torch.cuda.synchronize(device)


SETTLE = "mitosis.settle"


def trim_settle(et):
    """Drops from the ET (in place) what profile_step's settle ran after the step: the nodes that
    began at or after its SETTLE annotation (record-function ids are drawn in start order on every
    thread); an event of the step that the settle closed stays.  Returns how many were dropped."""
    mark = [n.get("rf_id", 0) for n in et.get("nodes", []) if n.get("name") == SETTLE]
    if len(mark) != 1:
        fail("the ET of the step has %d %s annotations, not 1; record again" % (len(mark), SETTLE))
    keep = [n for n in et["nodes"] if not n.get("rf_id", 0) >= mark[0]]
    dropped = len(et["nodes"]) - len(keep)
    et["nodes"] = keep
    return dropped


def after_step_dropped(events):
    """A Kineto trace's events without those that start after its ProfilerStep#N ends."""
    step = [e for e in events if str(e.get("name", "")).startswith("ProfilerStep#") and e.get("ph") == "X"]
    if len(step) != 1:
        return events
    end = step[0]["ts"] + step[0]["dur"]
    return [e for e in events if e.get("ph") != "X" or e.get("ts", 0) <= end]


def profile_step(step, step_idx, device, out, extra_top=None, settle=None):
    """Runs step() once as ProfilerStep#step_idx under the profiler and the ET observer and
    writes out/kineto.json.gz and out/et.json.gz.  extra_top: top-level keys the Kineto JSON
    gets when it lacks them (distributedInfo of a multi-process run).  settle: called after the
    step, outside its window, before the profiler and the ET observer stop (a multi-process run's
    barrier: see collect_dist.py), inside record_function(SETTLE); what it ran is then dropped from
    both files (trim_settle, after_step_dropped).  Returns what meta.json says about the recording."""
    import torch
    from torch.profiler import profile, record_function, ProfilerActivity
    et_name, ETObserver = et_observer_class()
    if ETObserver is None:
        fail("this PyTorch (%s) has neither ExecutionTraceObserver nor ExecutionGraphObserver"
             % torch.__version__)
    kineto = torch.autograd.kineto_available()
    activities = [ProfilerActivity.CPU]
    if device.type == "cuda":
        if not kineto:
            fail("this PyTorch build has no Kineto, so it cannot record GPU kernels")
        activities.append(ProfilerActivity.CUDA)
    prof_kw = dict(activities=activities, record_shapes=True, with_stack=False)
    if "with_modules" in inspect.signature(profile.__init__).parameters:
        prof_kw["with_modules"] = True

    tmp = tempfile.mkdtemp(prefix="mitosis-collect-")
    try:
        et_raw = os.path.join(tmp, "et.json")
        observer = ETObserver()
        observer.register_callback(et_raw)
        # made before the profiler starts: PyTorch 1.13's record_function() allocates a tensor
        # (aten::zeros), which would otherwise land between the step and the annotation
        mark = record_function(SETTLE) if settle is not None else None
        t_prof = time.perf_counter()
        with profile(**prof_kw) as prof:
            observer.start()
            with record_function("ProfilerStep#%d" % step_idx):
                step()
                device_sync(device)
            if settle is not None:  # inside the ET too: an event it closes is the step's (collect_dist.py)
                with mark:
                    settle()
            observer.stop()
        profiled_ms = (time.perf_counter() - t_prof) * 1e3
        observer.unregister_callback()

        with open(et_raw) as f:
            et = json.load(f)
        trimmed = trim_settle(et) if settle is not None else 0
        et_nodes = et.get("nodes", [])
        if trimmed:
            write_json_gz(et, os.path.join(out, "et.json.gz"))
        else:
            gzip_file(et_raw, os.path.join(out, "et.json.gz"))

        kin_path = os.path.join(out, "kineto.json.gz")
        if kineto:
            raw = os.path.join(tmp, "kineto.json")
            prof.export_chrome_trace(raw)
            with open(raw) as f:
                kj = json.load(f)
            changes = {k: v for k, v in (extra_top or {}).items() if k not in kj}
            if settle is not None:  # the settle's events are not the step's (as kineto_json_from_results)
                changes["traceEvents"] = after_step_dropped(kj.get("traceEvents", []))
            if changes:
                kj.update(changes)
                write_json_gz(kj, kin_path)
            else:
                gzip_file(raw, kin_path)
            writer = "torch.profiler export_chrome_trace (Kineto)"
            link = "Record function id" if any(
                "Record function id" in e.get("args", {}) for e in kj.get("traceEvents", [])
            ) else "unknown (match External id / order)"
        else:
            rf_names = {n.get("rf_id"): n.get("name") for n in et_nodes
                        if n.get("rf_id", 0) > 0}
            kj, link_ok = kineto_json_from_results(prof, "kineto.json.gz", rf_names)
            kj.update(extra_top or {})
            write_json_gz(kj, kin_path)
            writer = "collect.py from prof.profiler.kineto_results (no Kineto in this build)"
            link = ("ET rf_id == Kineto External id == Record function id (checked for every op)"
                    if link_ok == "same" else
                    "Record function id = ET rf_id, paired by name (the backend's events took their ids out of turn)"
                    if link_ok else "by order only (External id did not match ET rf_id)")
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    rec = {
        "profiled_step": "ProfilerStep#%d" % step_idx,
        "profiled_step_wall_ms": round(profiled_ms, 3),
        "files": {"kineto": "kineto.json.gz", "et": "et.json.gz"},
        "kineto_writer": writer,
        "kineto_cpu_ops": sum(1 for e in kj.get("traceEvents", []) if e.get("cat") == "cpu_op"),
        "kineto_kernels": sum(1 for e in kj.get("traceEvents", []) if e.get("cat") == "kernel"),
        "et_observer": "torch.profiler." + et_name,
        "et_schema": et.get("schema"),
        "et_nodes": len(et_nodes),
        "link": link,
    }
    if settle is not None:
        rec["et_settle_nodes_dropped"] = trimmed
    return rec


def time_steps(step, n, device, before=None):
    """n timed steps: (device times, host wall times) in ms; before() runs untimed before each."""
    import torch
    times, walls = [], []
    for _ in range(n):
        if before:
            before()
        t = time.perf_counter()
        if device.type == "cuda":
            a = torch.cuda.Event(enable_timing=True)
            b = torch.cuda.Event(enable_timing=True)
            a.record()
            step()
            b.record()
            b.synchronize()
            times.append(a.elapsed_time(b))
        else:
            step()
        walls.append((time.perf_counter() - t) * 1e3)
    return (times if device.type == "cuda" else walls), walls


def stats(xs):
    return {"median": round(statistics.median(xs), 3) if xs else None,
            "min": round(min(xs), 3) if xs else None,
            "max": round(max(xs), 3) if xs else None}


def base_meta(args, device, n_params, opt_name):
    import torch
    return {
        "model": args.model,
        "batch": args.batch,
        "dtype": args.dtype,
        "device": device.type,
        "device_name": device_name(device),
        "torch_version": torch.__version__,
        "python_version": platform.python_version(),
        "torch_threads": torch.get_num_threads(),
        "parameters": n_params,
        "optimizer": opt_name,
        "seed": args.seed,
        "warmup_steps": args.warmup,
    }


def write_meta(args, meta, info):
    """meta.json: meta, then the versions, the model's info and the command line."""
    try:
        import torchvision
        meta["torchvision_version"] = torchvision.__version__
    except Exception:
        pass
    meta.update(info)
    meta["command"] = " ".join([PROG] + sys.argv[1:])
    path = os.path.join(args.out, "meta.json")
    with open(path + ".part", "w") as f:  # whole or absent: its presence says the recording is complete
        json.dump(meta, f, indent=2)
        f.write("\n")
    os.replace(path + ".part", path)


def _record(args):
    import torch
    device, dtype = setup_torch(args)
    sibling = None
    if args.sibling_load:
        import collect_dist
        sibling = collect_dist.start_sibling(args)
    try:
        _record_steps(args, device, dtype, sibling)
    finally:
        if sibling is not None:
            sibling.stop()


def graphed(model, inputs, device):
    """The model's forward and backward as CUDA graphs (torch.cuda.make_graphed_callables): each
    step then launches two graphs instead of one kernel per op, as a user's graphed job does."""
    import torch
    if device.type != "cuda":
        fail("--cuda-graphs needs --device cuda (CUDA graphs exist only on a GPU)")
    if not isinstance(inputs, torch.Tensor):
        fail("--cuda-graphs needs a model that takes one tensor (this one takes %s)"
             % type(inputs).__name__)
    g = torch.cuda.make_graphed_callables(model, (inputs,))
    if not hasattr(g, "parameters"):  # a function: the optimizer and the count see the model's own
        g.parameters = model.parameters
    return g


def _record_steps(args, device, dtype, sibling):
    import torch
    model, inputs, loss_fn, opt, info = build_workload(args, device, dtype)
    model.train()
    if args.cuda_graphs:
        model = graphed(model, inputs, device)
        info["cuda_graphs"] = "forward and backward captured by torch.cuda.make_graphed_callables"
    opt_name = args.optimizer
    if opt is None:
        opt = make_optimizer(args.optimizer, model)
    else:
        opt_name = type(opt).__name__
    n_params = sum(p.numel() for p in model.parameters())

    def call_model():
        if isinstance(inputs, dict):
            return model(**inputs)
        if isinstance(inputs, (tuple, list)):
            return model(*inputs)
        return model(inputs)

    def step():
        opt.zero_grad(set_to_none=True)
        loss = loss_fn(call_model())
        loss.backward()
        opt.step()
        return loss

    os.makedirs(args.out, exist_ok=True)
    for _ in range(args.warmup):
        step()
    device_sync(device)
    rec = profile_step(step, args.warmup, device, args.out)
    if hasattr(model, "expert_tokens"):  # moe-tiny: the routing of the profiled step
        info["expert_tokens"] = model.expert_tokens()
    times, walls = time_steps(step, args.steps, device)

    meta = base_meta(args, device, n_params, opt_name)
    meta.update(rec)
    meta["step_time_ms"] = dict(stats(times), all=[round(t, 3) for t in times],
                                timer="cuda events" if device.type == "cuda" else "time.perf_counter")
    # Host wall clock of the same steps, each from its start to the device's end.
    meta["step_wall_ms"] = stats(walls)
    if sibling is not None:
        meta["sibling_load"] = sibling.describe()
    write_meta(args, meta, info)
    med = meta["step_time_ms"]["median"]
    print("%s: %s batch %d %s on %s: %d cpu ops, %d kernels, %d ET nodes; step %s ms (median of %d)%s -> %s"
          % (PROG, args.model, args.batch, args.dtype, device.type, rec["kineto_cpu_ops"],
             rec["kineto_kernels"], rec["et_nodes"], "n/a" if med is None else "%.3f" % med, len(times),
             ", beside a sibling load" if sibling is not None else "", args.out))


class _Parser(argparse.ArgumentParser):
    """A bad command line is one line on stderr and exit status 2, as every other error here."""

    def error(self, message):
        sys.stderr.write("%s: error: %s (see --help)\n" % (self.prog, message))
        sys.exit(2)


def parse_args(argv):
    p = _Parser(
        prog=PROG,
        description="Record one training step (PyTorch profiler + Execution Trace of the same "
                    "step) and time N more steps, for mitosis.",
        epilog="Models: torchvision names (resnet18, resnet50, vgg16, ...; random weights), "
               "built-ins gpt-tiny, bert-tiny, mlp, resmlp, moe-tiny, dlrm-tiny, "
               + ", ".join(families.FAMILIES) + " (tracer/families.py); with `transformers` installed also "
               + ", ".join(sorted(HF_CONFIGS)) + " (random init, offline); or "
               "MODULE:FUNCTION returning (model, inputs, loss_fn, optimizer) where inputs is a "
               "tensor, tuple or dict passed to model, loss_fn(output) returns the loss, and "
               "optimizer may be None (then --optimizer builds one). FUNCTION gets those of "
               "batch, seq_len, device, dtype that it names. Writes DIR/kineto.json.gz, "
               "DIR/et.json.gz and DIR/meta.json. Example: "
               "python3 tracer/collect.py --model resnet18 --batch 8 -o out/")
    p.add_argument("--model", required=True, help="model name or module:function")
    p.add_argument("--batch", type=int, default=8, help="batch size (default 8)")
    p.add_argument("--dtype", choices=["fp32", "bf16"], default="fp32",
                   help="parameter/activation dtype (default fp32)")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: cuda if available, else cpu")
    p.add_argument("--warmup", type=int, default=3, help="untimed steps before the profiled one (default 3)")
    p.add_argument("--steps", type=int, default=10, help="timed steps after it (default 10)")
    p.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd",
                   help="optimizer (default sgd, momentum 0.9)")
    p.add_argument("--seq-len", type=int, default=None,
                   help="sequence length for transformers (default 128)")
    p.add_argument("--layers", type=int, default=4, help="built-in transformer layers (default 4)")
    p.add_argument("--hidden", type=int, default=256,
                   help="built-in transformer hidden size / mlp input width (default 256)")
    p.add_argument("--heads", type=int, default=4, help="built-in transformer heads (default 4)")
    p.add_argument("--vocab", type=int, default=8192, help="built-in transformer vocabulary; dlrm-tiny: rows of its largest table (default 8192)")
    p.add_argument("--threads", type=int, default=None,
                   help="torch intra-op CPU threads (default: leave PyTorch's default)")
    p.add_argument("--experts", type=int, default=4, help="moe-tiny experts per MoE layer (default 4)")
    p.add_argument("--top-k", type=int, default=2,
                   help="moe-tiny, mixtral-tiny, deepseek-tiny: experts per token (moe-tiny: 1 (Switch) or 2 "
                        "(GShard); default 2)")
    p.add_argument("--kv-heads", type=int, default=None,
                   help="llama-tiny, mixtral-tiny, deepseek-tiny: key/value heads (grouped-query attention; "
                        "default --heads)")
    p.add_argument("--ffn", type=int, default=None,
                   help="llama/mixtral/deepseek-tiny: SwiGLU width (default 8/3 x hidden rounded to 64); "
                        "bmm-moe-tiny: expert width (default 2 x hidden)")
    p.add_argument("--moe-ffn", type=int, default=None,
                   help="deepseek-tiny: width of one fine-grained expert (default ffn / 4)")
    p.add_argument("--expert-label", default="mitosis.expert",
                   help="hash-moe-tiny: the record_function name around each expert call (default mitosis.expert, "
                        "which mitosis honours; another name needs mitosis's --moe-pattern)")
    p.add_argument("--shared-experts", type=int, default=1,
                   help="deepseek-tiny: shared experts beside the routed ones (default 1)")
    p.add_argument("--capacity-factor", type=float, default=1.25,
                   help="moe-tiny tokens an expert takes, x tokens x k / experts (default 1.25)")
    p.add_argument("--tables", type=int, default=8, help="dlrm-tiny embedding tables (default 8)")
    p.add_argument("--emb-dim", type=int, default=64, help="dlrm-tiny embedding width (default 64)")
    p.add_argument("--bag", type=int, default=16, help="dlrm-tiny ids per table and sample (default 16)")
    p.add_argument("--seed", type=int, default=0, help="random seed (default 0)")
    p.add_argument("--cuda-graphs", action="store_true",
                   help="capture the model's forward and backward as CUDA graphs "
                        "(torch.cuda.make_graphed_callables; --device cuda, one-tensor models)")
    p.add_argument("--dist", choices=["ddp", "pipeline", "embedding", "moe", "zero1", "tp"], default=None,
                   help="record rank 0 of a --world-process job on this machine (torch.distributed, gloo, "
                        "CPU, one process per core) and measure that job's step: ddp (DistributedDataParallel "
                        "of --model), pipeline (resmlp cut into --world stages, GPipe over --micro-batches, "
                        "send/recv of each stage's output), embedding (dlrm-tiny with its tables sharded "
                        "across ranks: all-to-all of ids and pooled vectors, DDP of the MLP), moe (moe-tiny with its "
                        "experts split across ranks: all-to-all dispatch and combine of the routed tokens, DDP of "
                        "the rest), zero1 (DDP of "
                        "--model with ZeroRedundancyOptimizer: each rank steps its shard of the optimizer "
                        "state, then broadcasts its shard of the parameters), tp (gpt-tiny split Megatron-style: "
                        "attention by heads and the MLP by columns/rows, 2 all-reduces per layer in forward and "
                        "2 in backward; embeddings and LM head replicated)")
    p.add_argument("--world", type=int, default=2, help="processes of a --dist job (default 2)")
    p.add_argument("--tp-vocab", action="store_true",
                   help="--dist tp: split the token embedding, the tied LM head and the cross-entropy by "
                        "vocabulary too (Megatron-LM: an all-reduce after the embedding, three small ones in the "
                        "cross-entropy, one of the LM head's input gradient) instead of replicating them")
    p.add_argument("--micro-batches", type=int, default=2,
                   help="--dist pipeline micro-batches per step (default 2; must divide --batch)")
    p.add_argument("--sibling-load", action="store_true",
                   help="while recording one process, run the same model's step without communication in a "
                        "sibling process on another core, so that op times carry the contention each rank of a "
                        "real multi-process run sees (the recording is pinned to core 0, the sibling to 1)")
    p.add_argument("-o", "--out", required=True, metavar="DIR", help="output folder (created)")
    a = p.parse_args(argv)
    for flag in ("batch", "layers", "hidden", "heads", "vocab", "tables", "emb_dim", "bag", "world",
                 "micro_batches", "top_k", "shared_experts"):
        if getattr(a, flag) < 1:
            p.error("--%s must be >= 1" % flag.replace("_", "-"))
    for flag in ("kv_heads", "ffn", "moe_ffn"):
        if getattr(a, flag) is not None and getattr(a, flag) < 1:
            p.error("--%s must be >= 1" % flag.replace("_", "-"))
    if a.model == "moe-tiny" and a.top_k > 2:
        p.error("--top-k for moe-tiny is 1 (Switch) or 2 (GShard)")
    if (a.model in families.FAMILIES or a.model == "moe-tiny") and (a.experts < 1 or a.top_k > a.experts):
        p.error("--top-k %d needs at least as many --experts (got %d)" % (a.top_k, a.experts))
    if a.model == "moe-tiny" and not a.capacity_factor > 0:
        p.error("--capacity-factor needs a number above 0 (got %g)" % a.capacity_factor)
    if a.warmup < 0 or a.steps < 0:
        p.error("--warmup and --steps must be >= 0")
    if a.threads is not None and a.threads < 1:
        p.error("--threads must be >= 1")
    if a.seq_len is not None and a.seq_len < 1:
        p.error("--seq-len must be >= 1")
    if a.dist and a.world < 2:
        p.error("--dist needs --world >= 2")
    if a.dist and a.sibling_load:
        p.error("--sibling-load is for one process: in a --dist run each rank is the others' load")
    if a.tp_vocab and a.dist != "tp":
        p.error("--tp-vocab is for --dist tp")
    if a.dist == "pipeline" and a.batch % a.micro_batches:
        p.error("--micro-batches %d must divide --batch %d" % (a.micro_batches, a.batch))
    return a


def main(argv=None):
    args = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        run(args)
    except CollectError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
