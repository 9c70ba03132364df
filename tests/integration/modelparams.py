"""Closed-form parameter tensors of the recorded models (traces/*/meta.json), independent of mitosis.

Each model of tracer/collect.py and tracer/sparse_models.py is rebuilt here as a list of parameter
tensors from its hyper-parameters (meta.json), each with what a mesh dimension does to it:
  bytes   fp32 bytes of the tensor;
  tp      "split" when Megatron tensor parallelism divides it by T (column-parallel weights and
          biases, row-parallel weights, vocabulary embeddings), "whole" otherwise (row-parallel
          biases, norms, position embeddings, routers);
  kind    "dense", "expert" (divided by ep) or "table" (an embedding_bag table, divided by the R
          replicas under --embedding-shard);
  tied    True for a token embedding the LM head reads again (a copy on the last pipeline stage).
The sum of bytes is checked against meta.json's "parameters" (params(), below), so a model whose
definition changed fails loudly instead of giving a wrong closed form.
"""
import json
import os


def _p(n, tp="whole", kind="dense", tied=False, name=""):
    return {"bytes": 4 * n, "tp": tp, "kind": kind, "tied": tied, "name": name}


def _transformer_layer(h, ffn, moe=None):
    """Pre-LN block (collect.py Block): ln1, q/k/v (column), o (row), ln2, fc1 (column), fc2 (row);
    moe = (experts, ffn): a router (no bias) and E experts of fc1/fc2 instead of fc1/fc2."""
    out = [_p(2 * h, name="ln1")]
    for q in ("q", "k", "v"):
        out.append(_p(h * h + h, "split", name=q))
    out += [_p(h * h, "split", name="o.w"), _p(h, name="o.b"), _p(2 * h, name="ln2")]
    if moe is None:
        out += [_p(h * ffn + ffn, "split", name="fc1"), _p(ffn * h, "split", name="fc2.w"), _p(h, name="fc2.b")]
        return out
    E, effn = moe
    out.append(_p(h * E, name="router"))
    for _ in range(E):
        out += [_p(h * effn + effn, "split", "expert", name="e.fc1"), _p(effn * h, "split", "expert", name="e.fc2.w"),
                _p(h, "whole", "expert", name="e.fc2.b")]
    return out


def tensors(meta):
    m = meta["model"]
    if m in ("gpt-tiny", "moe-tiny"):
        V, h, L, S = meta["vocab"], meta["hidden"], meta["layers"], meta["seq_len"]
        out = [_p(V * h, "split", tied=True, name="tok"), _p(S * h, name="pos")]
        for _ in range(L):
            if m == "gpt-tiny":
                out += _transformer_layer(h, 4 * h)
            else:
                out += _transformer_layer(h, None, (meta["experts"], 2 * h))
        out.append(_p(2 * h, name="ln_f"))
        return out
    if m == "dlrm-tiny":
        d, rows = meta["emb_dim"], meta["table_rows"]
        out = [_p(r * d, "split", "table", name="table") for r in rows]
        n = len(rows) + 1
        dense = [(meta["dense_features"], 4 * d), (4 * d, d), (d + n * (n - 1) // 2, 4 * d), (4 * d, 1)]
        for k, (i, o) in enumerate(dense):  # bottom and top MLPs: column then row
            if k % 2 == 0:
                out.append(_p(i * o + o, "split", name="col"))
            else:
                out += [_p(i * o, "split", name="row.w"), _p(o, name="row.b")]
        return out
    return None  # resnet18, resmlp: only their total (no tensor-parallel classes here)


def load(trace_dir):
    with open(os.path.join(trace_dir, "meta.json")) as f:
        return json.load(f)


def params(trace_dir):
    """The model's tensors (tensors()), None for a family without classes; raises when their sum
    differs from meta.json's parameter count."""
    meta = load(trace_dir)
    ts = tensors(meta)
    if ts is not None and sum(t["bytes"] for t in ts) != 4 * meta["parameters"]:
        raise AssertionError(f"{trace_dir}: the closed-form tensors sum to {sum(t['bytes'] for t in ts) // 4} "
                             f"parameters, meta.json says {meta['parameters']}")
    return ts


def per_gpu(ts, tp=1, ep=1, emb_replicas=0, etp=None):
    """(replicated, owned) bytes one GPU holds of the whole model (one pipeline stage): each tensor
    / T when split by TP (an expert's by the expert-TP size etp under ep > 1, T when None: Megatron-Core's
    expert_tensor_parallel_size), experts / ep, tables / R when sharded (emb_replicas R > 0); owned are the
    experts (ep > 1) and sharded tables, replicated the rest (what ZeRO / FSDP may shard)."""
    rep = own = 0.0
    for t in ts:
        split = etp if t["kind"] == "expert" and ep > 1 and etp is not None else tp
        b = t["bytes"] / (split if t["tp"] == "split" else 1)
        if t["kind"] == "expert" and ep > 1:
            own += b / ep
        elif t["kind"] == "table" and emb_replicas > 0:
            own += b / emb_replicas
        else:
            rep += b
    return rep, own


def tied_bytes(ts, tp=1):
    return sum(t["bytes"] / (tp if t["tp"] == "split" else 1) for t in ts if t["tied"])
