"""Properties of `mitosis simulate` over random plans (issue 31).

Seeded (PROPS_SEED, default 31) and bounded (PROPS_N plans, default 200): plans drawn over every trace
family in traces/ (gpt-tiny, gpt-l8h16, resnet18, moe-tiny, dlrm-tiny, resmlp, llama-tiny) and strategy (dp, ddp,
zero 1/2/3, fsdp, hsdp, tp, sp, cp, pp with 1f1b / gpipe / interleaved, recompute, ep, embedding-shard,
micro-batches). Each plan runs once with --json --csv --html --timeline; a refused plan must be one
stderr line, exit 2. Every accepted plan goes through every check of CHECKS (a function each: add
one to add a property); some plans also run --no-fold, and per trace one `compare --plans` holds them.
A counter-example prints the plan's command line. Usage: props.py MITOSIS [PROPS_N]
Runs go through libmitosis, each trace opened once (libsim.py; props.sh starts python so): every
TEXT_EVERY-th plan runs the binary itself, once with --per-gpu and the files (its text report and its
files against the library's JSON, its exit code and refusal the library's), and its Chakra export.
"""
import concurrent.futures as cf
import json
import math
import os
import random
import re
import shutil
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modelparams as mp  # noqa: E402
from libsim import Sim  # noqa: E402

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.abspath(sys.argv[1])
N = int(sys.argv[2]) if len(sys.argv) > 2 else int(os.environ.get("PROPS_N", "200"))
SEED = int(os.environ.get("PROPS_SEED", "31"))
JOBS = int(os.environ.get("PROPS_JOBS", "2"))
# A fixed number of plans (PROPS_N; CI runs the first 80 of the seeded list), never a wall-clock
# budget: the same plans run on a busy machine and a quiet one, so a failure reproduces by its seed.

# family -> (trace, what it supports)
FAMILIES = {
    "gpt-tiny": ("cpu-gpt-tiny-b8", {"tp", "sp", "cp", "pp", "emb"}),
    "gpt-l8h16": ("cpu-gpt-l8h16-b2", {"tp", "sp", "cp", "pp"}),
    "resnet18": ("cpu-resnet18-b8", {"tp", "pp"}),
    "moe-tiny": ("cpu-moe-tiny-b8", {"ep", "pp", "tp"}),
    "dlrm-tiny": ("cpu-dlrm-tiny-b8", {"tp", "emb"}),
    "resmlp": ("cpu-resmlp-b64", {"tp", "pp"}),
    "llama-tiny": ("cpu-llama-tiny-b4", {"tp", "sp", "cp"}),  # RMSNorm, grouped-query attention
}
BATCH = {"gpt-tiny": 8, "gpt-l8h16": 2, "resnet18": 8, "moe-tiny": 8, "dlrm-tiny": 8, "resmlp": 64, "llama-tiny": 4}
WEIGHT = {"gpt-tiny": 3, "gpt-l8h16": 1, "resnet18": 2, "moe-tiny": 3, "dlrm-tiny": 3, "resmlp": 3, "llama-tiny": 2}


ETP_RNG = random.Random(41)  # its own stream: the plans drawn before --etp existed stay the same


def draw(rng):
    """A random plan: (family, {flag: value})."""
    fam = rng.choice([f for f in FAMILIES for _ in range(WEIGHT[f])])
    sup = FAMILIES[fam][1]
    p = {"dp": rng.choice([1, 2, 2, 4]), "tp": 1, "pp": 1, "cp": 1, "ep": 1}
    if "tp" in sup and rng.random() < 0.4:
        p["tp"] = 2
        p["sp"] = "sp" in sup and rng.random() < 0.4
    if "cp" in sup and rng.random() < 0.25:
        p["cp"] = 2
    if "ep" in sup and rng.random() < 0.6:
        p["ep"] = rng.choice([2, 4])
    if p["ep"] > 1 and p["tp"] > 1:  # expert tensor parallelism: Megatron requires sequence parallelism
        p["sp"] = True
        p["etp"] = ETP_RNG.choice([1, p["tp"]])  # --etp: Megatron's expert_tensor_parallel_size (default T)
    if "emb" in sup and rng.random() < (0.6 if fam == "dlrm-tiny" else 0.1):
        p["emb"] = rng.choice(["table", "row", "column"])
    batch = BATCH[fam]
    if "pp" in sup and rng.random() < 0.4:
        p["pp"] = rng.choice([q for q in (2, 2, 4) if q <= batch])
        p["schedule"] = rng.choice(["1f1b", "gpipe", "interleaved"])
        p["mb"] = rng.choice([m for m in (p["pp"], 2 * p["pp"]) if batch % m == 0])
    elif rng.random() < 0.25:
        p["mb"] = rng.choice([m for m in (2, 4) if batch % m == 0])
    mode = rng.choice(["ddp", "ddp", "dp", "zero1", "zero2", "zero3", "fsdp", "hsdp"])
    if p["ep"] > 1:  # expert parallelism keeps the dense part DDP
        mode = "ddp"
    if p["dp"] * p["cp"] > 1 or mode == "ddp":  # sharding over one rank is refused (memcombo.sh checks it)
        p["mode"] = mode
    if mode == "hsdp" and p["dp"] < 4:
        p["mode"] = "fsdp"
    if rng.random() < 0.25:
        p["recompute"] = rng.choice(["selective", "full"])
    if p.get("mode") in ("zero3", "fsdp", "hsdp") and rng.random() < 0.4:  # units: K blocks + root, layers
        p["units"] = rng.choice(["layer", 2])
    if rng.random() < 0.25:  # precision policies over these fp32 traces
        p["prec"] = rng.choice(["bf16-mixed", "bf16", "fp32,master=fp32"])
    return fam, variants(fam, p)


# Issue 43's modes drawn from their own generator, seeded by the plan, so the seeded stream of plans above is
# unchanged but for these: half the ZeRO-1 plans run Megatron's distributed optimizer instead; on the dense transformer
# traces (repeating blocks) full recomputation becomes every:2 or an op-level policy three times in four, and
# no recomputation one time in seven; a fifth of the DDP plans (D x C > 1, no EP) run the distributed optimizer.
RC_POLICIES = ["full", "every:2", "ops:save=mm", "ops:save=attn+mm/2"]
BLOCK_FAMS = ("gpt-tiny", "gpt-l8h16", "llama-tiny")


def variants(fam, p):
    alt = random.Random(repr((SEED, fam, sorted(p.items()))))
    if alt.random() < {"zero1": 0.5, "ddp": 0.2}.get(p.get("mode"), 0) and p["dp"] * p["cp"] > 1 and p["ep"] == 1:
        p["mode"] = "distopt"
    if fam in BLOCK_FAMS and p.get("recompute") in ("full", None) and alt.random() < (0.75 if p.get("recompute") else 0.15):
        p["recompute"] = alt.choice(RC_POLICIES[1:])
    if fam == "llama-tiny" and alt.random() < 0.4:  # RMSNorm block cuts (issue 41): pipelines on llama-tiny too
        p["pp"] = 2
        p["schedule"] = alt.choice(["1f1b", "gpipe", "interleaved"])
        p["mb"] = alt.choice([2, 4])
    return p


def argv(p):
    a = ["--gpus", p["dp"] * p["tp"] * p["pp"] * p["cp"] * p["ep"], "--dp", p["dp"]]
    for k in ("tp", "pp", "cp", "ep"):
        if p[k] > 1:
            a += [f"--{k}", p[k]]
    if p.get("sp"):
        a.append("--sp")
    if p.get("etp"):
        a += ["--etp", p["etp"]]
    if p.get("emb"):
        a += ["--embedding-shard", p["emb"]]
    m = p.get("mode")
    if m == "dp":
        a += ["--strategy", "dp"]
    elif m in ("zero1", "zero2", "zero3"):
        a += ["--zero", m[-1]]
    elif m == "fsdp":
        a.append("--fsdp")
    elif m == "hsdp":
        a += ["--fsdp", "--fsdp-shard", 2]
    elif m == "distopt":
        a.append("--dist-opt")
    if p.get("mb"):
        a += ["--micro-batches", p["mb"]]
    if p["pp"] > 1:
        s = p["schedule"]
        a += ["--schedule", "1f1b" if s == "interleaved" else s]
        if s == "interleaved":
            a += ["--vpp", 2]
    if p.get("recompute"):
        a += ["--recompute", p["recompute"]]
    if p.get("units"):
        a += ["--fsdp-units", p["units"]]
    if p.get("prec"):
        a += ["--precision", p["prec"]]
    return [str(x) for x in a]


def compare_label(p):
    f = [("dp=%d" if p.get("mode") == "dp" else "ddp=%d") % p["dp"]]
    m = p.get("mode")
    if m in ("zero1", "zero2", "zero3"):
        f.append("zero=" + m[-1])
    if m in ("fsdp", "hsdp"):
        f.append("fsdp")
    if m == "hsdp":
        f.append("fsdp_shard=2")
    if m == "distopt":
        f.append("distopt")
    for k in ("tp", "cp", "ep", "pp"):
        if p[k] > 1:
            f.append(f"{k}={p[k]}")
    if p.get("sp"):
        f.append("sp")
    if p.get("etp"):
        f.append(f"etp={p['etp']}")
    if p.get("emb"):
        f.append("emb=" + p["emb"])
    if p.get("mb"):
        f.append(f"mb={p['mb']}")
    if p["pp"] > 1:
        f.append("schedule=" + ("1f1b" if p["schedule"] == "interleaved" else p["schedule"]))
        if p["schedule"] == "interleaved":
            f.append("vpp=2")
    if p.get("recompute"):
        f.append("recompute=" + p["recompute"])
    return ":".join(f)


SIM = Sim(BIN)


def run(args, timeout=600):
    """The binary's own run: (exit code, stdout, stderr)."""
    return SIM.run(*args, timeout=timeout)


# ---- the closed forms ---------------------------------------------------------------------------

INFO = {}


def trace_info(fam):
    """The trace's tensor facts: the model's closed-form tensors (modelparams), the trace's parameter
    and optimizer-state bytes (inspect --json)."""
    if fam not in INFO:
        tr = os.path.join(ROOT, "traces", FAMILIES[fam][0])
        ins = SIM.inspect_json(tr)
        tb = ins["tensor_bytes"]
        INFO[fam] = {"tensors": mp.params(tr), "weight": tb["weight"], "opt": tb["optimizer_state"],
                     "meta": mp.load(tr), "blocks": ins["blocks"], "moe": ((ins.get("recognised") or {}).get("moe") or {}).get("layers", [])}
    return INFO[fam]


def whole(x):
    return math.ceil(x - 1e-6) if x > 0 else 0


def shard_size(p):
    """Ranks sharding the replicated states (statemem.h), 1 none."""
    m = p.get("mode")
    if m not in ("zero1", "zero2", "zero3", "fsdp", "hsdp", "distopt") or p["dp"] * p["cp"] * p["ep"] <= 1:
        return 1
    return (2 if m == "hsdp" else p["dp"]) * p["cp"]


# asked bytes per traced byte over these fp32 traces (extrapolate/precision.h): (param, shard, grad, optim,
# master); the sharded parameters are the master's dtype where there is one
PREC = {None: (1, 1, 1, 1, 0), "bf16-mixed": (0.5, 1, 1, 1, 1), "bf16": (0.5, 0.5, 0.5, 0.5, 0),
        "fp32,master=fp32": (1, 1, 1, 1, 1)}


def states(p, rep, own, opt_ratio):
    """(params lower bound, params exact or None, grads, optimizer) of one GPU holding rep replicated and
    own owned bytes: ZeRO-1 shards the optimizer state, ZeRO-2 the gradients too, ZeRO-3 / FSDP the
    parameters too (plus one gathered unit: params is then only bounded)."""
    k, m = shard_size(p), p.get("mode")
    xp, xs, xg, xo, xm = PREC[p.get("prec")]
    rep, own = whole(rep), whole(own)
    mine = math.ceil(rep / k - 1e-9) if k > 1 else rep
    sharded = k > 1 and m in ("zero3", "fsdp", "hsdp")
    params = whole(own * xp) + (whole(mine * xs) if sharded else whole(rep * xp))
    exact = None if sharded else params
    grads = whole((own + (mine if k > 1 and m in ("zero2", "zero3", "fsdp", "hsdp") else rep)) * xg)
    return params, exact, grads, whole(opt_ratio * xo * (own + mine)) + whole(xm * (own + (0 if sharded else mine)))


# ---- the checks: f(ctx) -> list of failures (strings) ------------------------------------------

def chk_time_parts(x):
    d, bad = x["d"], []
    step = d["step_ms"]
    for g in d["gpus"]:
        s = g["compute_ms"] + g["host_wait_ms"] + g["exposed_comm_ms"] + g["bubble_ms"] + g["idle_ms"] + \
            g.get("peer_wait_ms", 0) + g.get("stretch_ms", 0)
        if abs(s - step) > 1e-6 * step + 1e-9:
            bad.append(f"gpu {g['rank']}: parts sum to {s} ms, step {step} ms")
    return bad[:3]


def chk_exposed_le_comm(x):
    """Exposed communication is communication: exposed <= comm on every GPU. Until simulate's JSON has
    peer_wait_ms (waiting for a peer that has not arrived, split out of exposed by sim/'s attribution)
    a violation is reported as KNOWN and does not fail the run (PROPS_STRICT=1 makes it fail)."""
    return [f"gpu {g['rank']}: exposed {g['exposed_comm_ms']} > comm {g['comm_ms']}"
            for g in x["d"]["gpus"] if g["exposed_comm_ms"] > g["comm_ms"] * (1 + 1e-9) + 1e-9][:3]


def chk_whole_bytes(x):
    return [f"gpu {g['rank']} {k} {v}" for g in x["d"]["gpus"] for k, v in g["mem_bytes"].items()
            if k in ("params", "grads", "optimizer") and v != int(v)][:3]


def chk_states(x):
    """Parameters, gradients, optimizer state per GPU = the closed form of the model's tensors (one
    pipeline stage: each GPU; several: their sum, unsharded)."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    ts, ratio = info["tensors"], info["opt"] / info["weight"]
    if ts is None:  # resnet18, resmlp: no tensor-parallel classes; whole model when unsplit
        if p["tp"] > 1:
            return []
        ts = [{"bytes": info["weight"], "tp": "whole", "kind": "dense", "tied": False}]
    rep, own = mp.per_gpu(ts, p["tp"], p["ep"], p["dp"] * p["ep"] if p.get("emb") and p["dp"] * p["ep"] > 1 else 0,
                          p.get("etp"))
    bad = []
    if p["pp"] == 1:
        lo, params, grads, opt = states(p, rep, own, ratio)
        g, tol = d["gpus"][0]["mem_bytes"], 0
        if p.get("emb") == "table":  # each GPU its own tables (chk_table_wise): the mean over the GPUs
            g = {k: sum(q["mem_bytes"][k] for q in d["gpus"]) / len(d["gpus"]) for k in ("params", "grads", "optimizer")}
            tol = 1
        if params is not None and abs(g["params"] - params) > tol:
            bad.append(f"params {g['params']}, closed form {params}")
        if params is None and not lo - tol < g["params"] <= lo + rep * PREC[p.get("prec")][0] + 1 + tol:
            bad.append(f"params {g['params']}, closed form {lo} + one gathered unit")
        if abs(g["grads"] - grads) > max(tol, 1):
            bad.append(f"grads {g['grads']}, closed form {grads}")
        if abs(g["optimizer"] - opt) > 2:
            bad.append(f"optimizer {g['optimizer']}, closed form {opt}")
        return bad
    if shard_size(p) > 1:
        return []
    tied = mp.tied_bytes(ts, p["tp"]) if any(t["tied"] for t in ts) else 0
    got = sum(stage_grads(d)) / PREC[p.get("prec")][2]  # held in the reduce dtype
    want = rep + own + tied
    if abs(got - want) > 2 * p["pp"]:
        bad.append(f"gradients over the {p['pp']} stages {got}, closed form {want} (tied copy {tied})")
    return bad


def chk_zero3_largest_unit(x):
    """ZeRO-3 over layer units (DeepSpeed's submodules, no prefetch), one stage, no TP: a GPU holds its
    shard plus one unit gathered at a time, the largest module's parameters (the token embedding; a unit
    whose gradients come from another's backward ops, an RMSNorm's or a batch norm's weight, is gathered
    on its own, never beside it: issue 41 item 8a)."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    if p.get("mode") != "zero3" or units_of(p) != "layer" or p["pp"] > 1 or p["tp"] > 1 or p["ep"] > 1 or \
            p.get("emb") or info["tensors"] is None or shard_size(p) < 2:
        return []
    rep, own = mp.per_gpu(info["tensors"], 1)
    lo = states(p, rep, own, info["opt"] / info["weight"])[0]
    want = lo + max(t["bytes"] for t in info["tensors"]) * PREC[p.get("prec")][0]
    got = d["gpus"][0]["mem_bytes"]["params"]
    return [] if abs(got - want) <= 1 else [f"params {got}, closed form {lo} + the largest module = {want}"]


def subset_sums(xs):
    out = {0}
    for v in xs:
        out |= {a + v for a in out}
    return out


def chk_table_wise(x):
    """Table-wise embedding sharding places whole tables: each GPU holds its own tables (the GPU with the
    largest runs out of memory first), not the mean: per GPU its parameters beyond the dense part are a
    sum of whole tables (/ T), the GPUs together hold every table once per TP rank, and the worst GPU at
    least the largest table."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    if p.get("emb") != "table" or p["pp"] > 1 or p["dp"] * p["ep"] < 2 or info["tensors"] is None:
        return []
    ts, T, xp = info["tensors"], p["tp"], PREC[p.get("prec")][0]  # a table is held in the parameters' dtype
    tables = [t["bytes"] / T * xp for t in ts if t["kind"] == "table"]
    dense = [t for t in ts if t["kind"] != "table"]
    lo, exact, _, _ = states(p, *mp.per_gpu(dense, T), 0)
    if exact is None:
        return []  # (ZeRO-3 / FSDP: the gathered unit makes the dense part a bound)
    sums, bad, held = subset_sums(tables), [], 0
    for g in d["gpus"]:
        own = g["mem_bytes"]["params"] - exact
        held += own
        if not any(abs(own - v) <= 1 for v in sums):
            bad.append(f"gpu {g['rank']} holds {own} B of tables: no sum of whole tables {sorted(tables)}")
    if abs(held - T * sum(tables)) > len(d["gpus"]):
        bad.append(f"the GPUs hold {held} B of tables, every table once per TP rank {T * sum(tables)}")
    worst = max(g["mem_bytes"]["params"] for g in d["gpus"]) - exact
    if worst < max(tables) - 1:
        bad.append(f"the worst GPU holds {worst} B of tables, under the largest table's {max(tables)}")
    return bad[:3]


def stage_grads(d):
    """Per stage: one GPU's gradient bytes."""
    out = {}
    for g in d["gpus"]:
        out.setdefault(g["stage"], g["mem_bytes"]["grads"])
    return [out[s] for s in sorted(out)]


def chk_dp_traffic(x):
    """Traffic per data-parallel group kind = the ring closed form of the mode on each stage's replicated
    gradients (pp 1: the model's closed form; pp > 1: the stage's gradient bytes, unsharded modes)."""
    p, d = x["p"], x["d"]
    if p.get("emb") or p["ep"] > 1 or x["d"]["plan"].get("comm") == "traced":
        return []
    n = p["dp"] * p["cp"]
    if n <= 1:
        return []
    info = trace_info(x["fam"])
    ts = info["tensors"]
    if p["pp"] == 1:
        if ts is None and p["tp"] > 1:
            return []
        reps = [mp.per_gpu(ts, p["tp"])[0] if ts is not None else info["weight"]]
    elif shard_size(p) == 1 or p.get("mode") == "distopt":  # (distopt keeps its gradients whole)
        reps = [g / PREC[p.get("prec")][2] for g in stage_grads(d)]  # held in the reduce dtype
    else:
        return []
    M = p.get("mb") or d["plan"]["micro_batches"]
    m, kind = p.get("mode", "ddp"), "dp+cp" if p["cp"] > 1 else "dp"
    xp, _, xg, _, _ = PREC[p.get("prec")]
    # ZeRO-3 / FSDP units of blocks (--fsdp's default, --fsdp-units K) keep the root (what is outside the
    # blocks) gathered from its forward to its backward: it is gathered once per micro-batch
    root = root_bytes(x["fam"]) if m in ("zero3", "fsdp", "hsdp") and units_of(p) != "layer" else 0
    if root and (p["tp"] > 1 or p["pp"] > 1):
        return []  # the root's split under TP and its stage under PP: not this closed form's
    want = {}
    for rep in reps:
        def add(k, v):
            want[k] = want.get(k, 0) + v / len(reps)
        if m in ("ddp", "dp"):
            add(kind, 2 * (n - 1) / n * rep * xg)
        elif m == "zero1":
            add(kind, (n - 1) / n * rep * (2 * xg + xp))
        elif m == "distopt":  # Megatron's distributed optimizer: a reduce-scatter and an all-gather
            add(kind, (n - 1) / n * rep * (xg + xp))
        elif m == "zero2":  # DeepSpeed's stage 2: a reduce-scatter per micro-batch, one all-gather
            add(kind, (n - 1) / n * rep * (M * xg + xp))
        elif m in ("zero3", "fsdp"):
            add(kind, M * (n - 1) / n * (2 * rep - root) * xp)
            add(kind + "-rs", M * (n - 1) / n * rep * xg)
        elif m == "hsdp":
            g, r = 2 * p["cp"], p["dp"] // 2
            sk = "dp_shard+cp" if p["cp"] > 1 else "dp_shard"
            add(sk, M * (g - 1) / g * (2 * rep - root) * xp)
            add(sk + "-rs", M * (g - 1) / g * rep * xg)
            add("dp_rep", M * 2 * (r - 1) / r * rep / g * xg)
    got = d["mesh"]["traffic_bytes"]
    return [f"{k}: {got.get(k, 0)} B sent per GPU, closed form {v}" for k, v in want.items()
            if abs(got.get(k, 0) - v) > 1e-6 * v + 8 * len(reps) * M]


def units_of(p):
    """ZeRO-3 / FSDP units: 'layer' or K blocks per unit (--fsdp's default 1, --zero 3's layers)."""
    u = p.get("units") or (1 if p.get("mode") in ("fsdp", "hsdp") else "layer")
    return u


BLOCKS = {}


def blocks_of(fam):
    """inspect's repeating block, when its copies hold at least half of the parameters (pass_dp.c's rule)."""
    if fam not in BLOCKS:
        b = SIM.inspect_json(os.path.join(ROOT, "traces", FAMILIES[fam][0])).get("blocks")
        BLOCKS[fam] = b if b and 2 * b["count"] * b["param_bytes"] >= trace_info(fam)["weight"] else None
    return BLOCKS[fam]


def root_bytes(fam):
    b = blocks_of(fam)
    return trace_info(fam)["weight"] - b["count"] * b["param_bytes"] if b else 0


def chk_units(x):
    """ZeRO-3 / FSDP with block units, one stage: blocks / K units (rounded up) plus the root, each gathered
    once in the first micro-batch's forward."""
    p, d = x["p"], x["d"]
    u, b = units_of(p), blocks_of(x["fam"])
    if p.get("mode") not in ("zero3", "fsdp", "hsdp") or u == "layer" or not b or p["pp"] > 1 or \
            p["dp"] * p["cp"] * p["ep"] <= 1:
        return []
    want = -(-b["count"] // u) + 1
    got = d["simulation"]["shard_units"]
    return [] if got == want else [f"{got} units gathered, closed form {b['count']} blocks / {u} + root = {want}"]


def chk_precision(x):
    """Every output says the policy assumed: the JSON's precision.assumed names the one asked."""
    want = {None: "", "bf16-mixed": "bf16-mixed (", "bf16": "bf16 (", "fp32,master=fp32": "custom ("}
    got = x["d"].get("precision", {}).get("assumed", "")
    return [] if got.startswith(want[x["p"].get("prec")]) else [f"precision {got!r} for --precision {x['p'].get('prec')}"]


def chk_tied_traffic(x):
    """A tied embedding's copies are all-reduced between the first and last stage: 'emb' = copy x 2 / P."""
    p, d, ts = x["p"], x["d"], trace_info(x["fam"])["tensors"]
    if p["pp"] < 2 or ts is None or not any(t["tied"] for t in ts):
        return []
    want = mp.tied_bytes(ts, p["tp"]) * 2 / p["pp"]
    got = d["mesh"]["traffic_bytes"].get("emb", 0)
    return [] if abs(got - want) <= 1e-6 * want else [f"emb {got} B per GPU, closed form {want}"]


def chk_cp_traffic(x):
    """Ring attention: per layer and micro-batch K and V of the whole sequence gathered forward, twice
    backward (with their gradients), once more when recomputed in full: (C-1)/C each; under grouped-query
    attention K and V of the KV heads only (x kv_heads / heads)."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    if p["cp"] < 2 or p.get("recompute") == "selective":
        return []
    meta = info["meta"]
    rings = 3 + rerun_attention(p.get("recompute"), meta["layers"]) / meta["layers"]
    B = d["plan"]["replica_batch"]
    kv = 2 * B * meta["seq_len"] * meta["hidden"] * 4 / p["tp"] * meta.get("kv_heads", meta["heads"]) / meta["heads"]
    want = meta["layers"] * rings * (p["cp"] - 1) / p["cp"] * kv / p["pp"]
    got = d["mesh"]["traffic_bytes"].get("cp", 0)
    return [] if abs(got - want) <= 1e-6 * want else [f"cp {got} B per GPU, closed form {want}"]


def chk_tp_traffic(x):
    """Megatron TP on RMSNorm blocks (llama-tiny: no biases, untied head): per micro-batch, with X the
    residual stream [B, S, h] of the GPU's tokens, 2(T-1)/T x (per layer 4 X: an all-reduce after the
    attention and the MLP forward, one of each pair's input gradient backward; the vocabulary embedding's
    and the LM head's input gradient 2 X; cross-entropy's 3 statistics of [B S] fp32); --sp turns each
    all-reduce into a reduce-scatter + all-gather pair (the same bytes) and all-reduces the replicated
    norm weights' gradients (2L + 1 of h) once per step."""
    p, d = x["p"], x["d"]
    if x["fam"] != "llama-tiny" or p["tp"] < 2 or p["pp"] > 1 or p["cp"] > 1 or p.get("recompute"):
        return []
    meta, T = trace_info(x["fam"])["meta"], p["tp"]
    B, L, h, S = d["plan"]["replica_batch"], meta["layers"], meta["hidden"], meta["seq_len"]
    ar = 2 * (T - 1) / T
    want = ar * ((4 * L + 2) * B * S * h * 4 + 3 * B * S * 4 + (p.get("sp") and (2 * L + 1) * h * 4 or 0))
    got = d["mesh"]["traffic_bytes"].get("tp", 0)
    return [] if abs(got - want) <= 1e-6 * want else [f"tp {got} B per GPU, closed form {want}"]


def pp_residual_bytes(x):
    """The residual stream's bytes the P V - 1 cuts carry per GPU and step, forward and back (the mean
    over GPUs), None where there is no closed form here."""
    p, d, meta = x["p"], x["d"], trace_info(x["fam"])["meta"]
    if p["pp"] < 2 or x["fam"] not in ("gpt-tiny", "gpt-l8h16", "moe-tiny", "llama-tiny"):
        return None
    if x["fam"] == "moe-tiny" and p["tp"] > 1 and not p.get("sp") and p["ep"] < 2:
        return None  # TP over MoE layers without EP leaves their output split by the experts' row linears
    V = 2 if p["schedule"] == "interleaved" else 1
    if V > 1 and d["pipeline_cut"]["kind"] == "time":
        return None  # (time-balanced interleaved chunks may end inside a block: stages.h)
    per_gpu = d["plan"]["replica_batch"] * meta["seq_len"] * meta["hidden"] * 4 / p["cp"] / (p["tp"] if p.get("sp") else 1)
    return 2 * (p["pp"] * V - 1) * per_gpu / p["pp"]


def chk_pp_traffic(x):
    """Each of the P V - 1 cuts carries at least the residual stream [B, S, h] of the replica's batch
    forward and its gradient back, each GPU its tokens (1/C, and 1/T under --sp)."""
    want = pp_residual_bytes(x)
    if want is None:
        return []
    got = x["d"]["mesh"]["traffic_bytes"].get("pp", 0)
    # a time-balanced cut may cut inside a block, where more than the residual stream crosses
    return [] if got >= want * (1 - 1e-6) else [f"pp {got} B per GPU, under the block cut's {want}"]


def chk_pp_block_bytes(x):
    """At a block cut only the block's output crosses: exactly the residual stream (an op's output whose
    Execution Trace id a freed tensor had is a new tensor: gpt-l8h16's block 4 Q/K/V read its LayerNorm's
    output, not block 3's fc2 output)."""
    want = pp_residual_bytes(x)
    if want is None or x["d"]["pipeline_cut"]["kind"] != "blocks":
        return []
    got = x["d"]["mesh"]["traffic_bytes"].get("pp", 0)
    return [] if abs(got - want) <= 1e-6 * want else [f"pp {got} B per GPU, the block cut's {want}"]


def chk_pp_cut(x):
    """Megatron-Core's cut of a transformer: the same number of blocks on every stage and virtual chunk
    (n / (P V)), the layers before the first block on the first chunk, those after the last on the last;
    when the blocks do not divide P x V the time-balanced cut, with the reason. A model whose repeating
    block is not most of it (ResNet-18) is cut time-balanced."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    if p["pp"] < 2:
        return []
    cut, bl, L = d["pipeline_cut"], info["blocks"], len(d["layers"])
    V = 2 if p["schedule"] == "interleaved" else 1
    P, K = p["pp"], p["pp"] * V
    if bl is None or 2 * bl["count"] * bl["layers"] < L:
        return [] if cut["kind"] == "time" and cut["why_time"] is None else [f"cut {cut}, want time-balanced"]
    if bl["count"] % K:
        return [] if cut["kind"] == "time" and cut["why_time"] else [f"cut {cut}: {bl['count']} blocks over {K} chunks"]
    k, f, n = bl["count"] // K, bl["first_layer"], bl["layers"]
    lo = [0 if c == 0 else f + c * k * n for c in range(K)]
    hi = [L - 1 if c == K - 1 else f + (c + 1) * k * n - 1 for c in range(K)]
    want = [(lo[s], hi[s + (V - 1) * P]) for s in range(P)]
    got = [(st["layer_first"], st["layer_last"]) for st in d["stages"]]
    bad = [] if cut["kind"] == "blocks" and cut["blocks_per_chunk"] == [k] * K else [f"cut {cut}, want {k} x {K}"]
    return bad + ([] if got == want else [f"stage layers {got}, block cut {want}"])


def chk_moe_cut(x):
    """No pipeline cut inside a MoE layer (issue 41 item 5: such a plan is refused in one line): on moe-tiny,
    whose blocks end with their MoE layer (the router's layer, then each of the E experts' linears: inspect's
    recognised.moe), no stage (nor, at a block cut, --vpp chunk) ends between a block's router and its last
    expert linear."""
    p, d, info = x["p"], x["d"], trace_info(x["fam"])
    bl = info["blocks"]
    if x["fam"] != "moe-tiny" or p["pp"] < 2 or not bl or not info["moe"]:
        return []
    m = info["moe"][0]
    inside = set()
    for j in range(bl["count"]):
        end = bl["first_layer"] + (j + 1) * bl["layers"] - 1
        inside |= set(range(end - m["experts_in_trace"] * m["per_expert"], end))  # router .. the last expert but one
    ends = [st["layer_last"] for st in d["stages"][:-1]]
    if p["schedule"] == "interleaved":
        if d["pipeline_cut"]["kind"] != "blocks":
            return []  # (a time-balanced chunk's ends are not in the JSON)
        acc = 0
        ends = []
        for k in d["pipeline_cut"]["blocks_per_chunk"][:-1]:
            acc += k
            ends.append(bl["first_layer"] + acc * bl["layers"] - 1)
    bad = sorted(set(ends) & inside)
    return [f"a cut after layer {e}, inside a MoE layer ({d['pipeline_cut']['text']})" for e in bad[:2]]


def chk_ep_traffic(x):
    """MoE all-to-alls: per MoE layer and micro-batch 2 forward and 2 backward, each (E-1)/E of the
    routed rows x hidden x 4 (meta.json's tokens per expert, capacity-capped; / T under expert tensor
    parallelism, each TP rank dispatching its own tokens): every GPU sends those of whole MoE layers (its
    stage's), and the 'ep' kind the mean."""
    p, d, meta = x["p"], x["d"], trace_info(x["fam"])["meta"]
    if p["ep"] < 2 or x["fam"] != "moe-tiny":
        return []
    E, scale = p["ep"], d["plan"]["replica_batch"] / meta["batch"] / p["tp"]  # under --tp a rank's 1/T of the tokens
    cap = meta.get("expert_capacity", float("inf"))
    units = [4 * (E - 1) / E * sum(min(t, cap) for t in lay) * meta["hidden"] * 4 * scale for lay in meta["expert_tokens"]]
    unit, bad, per_stage = units[0], [], {}
    for g in d["gpus"]:  # a rank sends by its experts' load: the mean over a stage's GPUs is whole layers
        per_stage.setdefault(g["stage"], []).append(g["traffic_bytes"]["alltoall"])
    for st, v in sorted(per_stage.items()):
        n = sum(v) / len(v) / unit
        if abs(n - round(n)) > 1e-6 * max(1, n):
            bad.append(f"stage {st}'s GPUs send the all-to-alls of {n:.4f} MoE layers")
    want = sum(units) / p["pp"]
    got = d["mesh"]["traffic_bytes"].get("ep", 0)
    if abs(got - want) > 1e-6 * want:
        bad.append(f"ep {got} B per GPU, closed form {want}")
    return bad[:3]


def chk_csv(x):
    """gpus.csv and layers.csv carry the JSON's numbers."""
    import csv
    d, bad = x["d"], []
    with open(os.path.join(x["dir"], "csv", "gpus.csv")) as f:
        rows = {int(r["rank"]): r for r in csv.DictReader(f)}
    for g in d["gpus"]:
        r = rows.get(g["rank"])
        if r is None:
            bad.append(f"gpus.csv has no rank {g['rank']}")
            continue
        for k in ("compute_ms", "stretch_ms", "comm_ms", "exposed_comm_ms", "host_wait_ms", "bubble_ms", "idle_ms",
                  "peak_mem_bytes"):
            if abs(float(r[k]) - g[k]) > 1e-6 * abs(g[k]) + 1e-6:
                bad.append(f"gpus.csv rank {g['rank']} {k} {r[k]}, JSON {g[k]}")
        if abs(float(r["step_ms"]) - d["step_ms"]) > 1e-6 * d["step_ms"]:
            bad.append(f"gpus.csv step {r['step_ms']}, JSON {d['step_ms']}")
    with open(os.path.join(x["dir"], "csv", "layers.csv")) as f:
        lrows = list(csv.DictReader(f))
    for j, lay in zip(lrows, d.get("layers", [])):
        for k in ("compute_ms", "comm_ms"):
            if abs(float(j[k]) - lay[k]) > 1e-6 * abs(lay[k]) + 1e-6:
                bad.append(f"layers.csv {j['layer']} {k} {j[k]}, JSON {lay[k]}")
    return bad[:3]


def chk_timeline(x):
    """The timeline's step and, per GPU, its compute slices sum to the JSON's compute."""
    d = x["d"]
    with open(os.path.join(x["dir"], "t.json")) as f:
        t = json.load(f)
    bad = []
    if abs(t["otherData"]["step_ms"] - d["step_ms"]) > 1e-6 * d["step_ms"]:
        bad.append(f"timeline step {t['otherData']['step_ms']}, JSON {d['step_ms']}")
    names = {(e["pid"], e["tid"]): e["args"]["name"] for e in t["traceEvents"]
             if e.get("ph") == "M" and e.get("name") == "thread_name"}
    comp = {}
    for e in t["traceEvents"]:
        if e.get("ph") == "X" and names.get((e["pid"], e["tid"])) == "compute":
            comp[e["pid"]] = comp.get(e["pid"], 0) + e["dur"] / 1e3
    for g in d["gpus"]:
        got = comp.get(g["rank"] + 1, 0)
        want = g["compute_ms"] + g.get("stretch_ms", 0)  # the slices run stretched beside collectives
        if abs(got - want) > 1e-4 * want + 1e-3:
            bad.append(f"timeline gpu {g['rank']} compute {got} ms, JSON {want} (compute + stretch)")
    return bad[:3]


def chk_html(x):
    """The HTML report states the step time and the peak memory."""
    d = x["d"]
    with open(os.path.join(x["dir"], "r.html")) as f:
        h = f.read()
    bad = []
    if "%.3f ms" % d["step_ms"] not in h:
        bad.append(f"the HTML report has no '{d['step_ms']:.3f} ms'")
    peak = max(g["peak_mem_bytes"] for g in d["gpus"])
    if "%.2f GB per GPU" % (peak / 1e9) not in h:
        bad.append(f"the HTML report has no peak '{peak / 1e9:.2f} GB per GPU'")
    p = x["p"]
    line = re.search(r"GPUs? = ([^,<]*)", h)
    for k in ("cp", "ep"):  # the plan line names every dimension the GPUs multiply
        if p[k] > 1 and (not line or f"{k} {p[k]}" not in line.group(1)):
            bad.append(f"the HTML plan line '{line.group(1) if line else None}' leaves out {k} {p[k]}")
    return bad


# ---- activations: the one-GPU run's one micro-batch, split and scaled, x the schedule's in flight ----

BASE = {}


def korthikanti(meta):
    """Korthikanti et al. (2022) in fp32 without dropout (docs/memory.md): per layer 16 s b h + a s^2 b
    elements, outside the layers 2 s b h + s b V; bytes at meta.json's batch."""
    s, b, h, a, L, V = meta["seq_len"], meta["batch"], meta["hidden"], meta["heads"], meta["layers"], meta["vocab"]
    return 4 * (L * (16 * s * b * h + a * s * s * b) + 2 * s * b * h + s * b * V)


def base_acts(fam, recompute):
    """(kept bytes of one micro-batch, transient bytes) of the whole traced batch on one GPU; for the
    GPT traces without recomputation first checked against Korthikanti's formula (within 10 %)."""
    key = (fam, recompute or "")
    if key not in BASE:
        tr = os.path.join(ROOT, "traces", FAMILIES[fam][0])
        rc, out, err = SIM.simulate(tr, "--gpus", "1", *(["--recompute", recompute] if recompute else []))
        if rc != 0:
            raise AssertionError(f"the one-GPU run exits {rc}: {err.strip()[:200]}")
        d = json.loads(out)
        g, st = d["gpus"][0], (d.get("stages") or [{}])[0]
        kept = st.get("activation_bytes_per_micro_batch", g["mem_bytes"]["activations"])
        BASE[key] = (kept, st.get("activation_bytes_transient", 0), d["plan"].get("replica_batch", BATCH[fam]))
        BASE_RC[key] = st.get("recompute_ms", 0)
    return BASE[key]


BASE_RC = {}  # (family, recompute): the one-GPU run's re-run forward time (base_acts fills it)


def rerun_attention(policy, L):
    """Blocks whose attention forward re-runs in backward: full and every block for an op-level policy that
    does not save attention (PyTorch's selective checkpointing re-runs what the policy does not save),
    every:K blocks K-1, 2K-1, ... (torchtitan's ac_freq), none when the policy saves attention."""
    if policy in ("full", "ops:save=mm"):
        return L
    if policy and policy.startswith("every:"):
        return L // int(policy.split(":")[1])
    return 0


def chk_recompute_policy(x):
    """Recomputation policies (docs/memory.md, on the one-GPU runs chk_activations makes, L repeating blocks
    alike): full re-runs the blocks' forward only (Megatron's full recompute): its re-run time = L x a block's
    forward (inspect's blocks); every:K keeps none - floor(L/K) (none - full) / L and re-runs less than full;
    an op-level policy keeps between full and none and re-runs less than full, more than nothing; every
    stage of the plan holding blocks re-runs some forward."""
    p, d, fam = x["p"], x["d"], x["fam"]
    pol = p.get("recompute")
    if pol not in RC_POLICIES or fam not in BLOCK_FAMS:
        return []
    blocks, bad = trace_info(fam)["blocks"], []
    L = blocks["count"]
    none, full, mine = (base_acts(fam, r)[0] for r in (None, "full", pol))
    rc_full, rc = BASE_RC[(fam, "full")], BASE_RC[(fam, pol)]
    # (within 0.1 %: llama-tiny's blocks hold 0.06 ms of forward ops in layers without a backward op, which the
    # re-run leaves out; on RMSNorm blocks within 3 %: inspect's blocks begin at the norm's weight (a layer
    # begins at each weight read), a re-run block after the residual add before the norm's first ops, as a
    # checkpoint wraps the block module, so the sums differ by the first block's norm ops against the final
    # norm's: llama-tiny's took 13.3 ms in the trace (the first call) and 0.5 ms, 2.3 % of the re-run)
    if abs(rc_full - L * blocks["fwd_ms"]) > (3e-2 if "llama" in fam else 1e-3) * rc_full:
        bad.append(f"full re-runs {rc_full} ms on one GPU, the {L} blocks' forward {L * blocks['fwd_ms']} ms")
    if pol.startswith("every:"):
        K, meta = int(pol.split(":")[1]), trace_info(fam)["meta"]
        want = none - (L // K) * (none - full) / L
        # within one block input (s b h fp32): the first block's input is the embedding's output, kept
        # under full where none keeps what its norm made of it (llama-tiny), the others' the block before's
        tol = 4 * meta["seq_len"] * meta["batch"] * meta["hidden"]
        if abs(mine - want) > tol + 8:
            bad.append(f"{pol} keeps {mine} B, none - floor(L/K) (none - full) / L = {want:.0f} B (+- {tol} B)")
        if not 0 < rc < rc_full:
            bad.append(f"{pol} re-runs {rc} ms, full {rc_full} ms")
    elif pol.startswith("ops:"):
        if not full - 8 <= mine <= none + 8:
            bad.append(f"{pol} keeps {mine} B, outside full's {full} .. none's {none}")
        if not 0 < rc < rc_full:
            bad.append(f"{pol} re-runs {rc} ms, outside 0 .. full's {rc_full} ms")
    K = int(pol.split(":")[1]) if pol.startswith("every:") else 1
    cut = d.get("pipeline_cut") or {}
    per = cut.get("blocks_per_chunk") if cut.get("kind") == "blocks" else None
    P = len(d.get("stages", []))
    for s, st in enumerate(d.get("stages", [])):
        if per:  # blocks cut: chunk c (on stage c mod P) holds the next per[c] blocks; every:K re-runs blocks K-1, 2K-1, ...
            first = [sum(per[:c]) for c in range(len(per))]
            holds = any((j + 1) % K == 0 for c in range(s, len(per), P) for j in range(first[c], first[c] + per[c]))
        else:  # (a time cut: every chunk holds a K-th block when each holds K blocks' worth)
            holds = L >= p["pp"] * (2 if p.get("schedule") == "interleaved" else 1) * K
        if st.get("recompute_ms", 0) <= 0 and holds:
            bad.append(f"stage {st['layer_first']}..{st['layer_last']} re-runs nothing under {pol}")
    return bad[:3]


def chk_distopt(x):
    """Megatron's distributed optimizer (--dist-opt): each GPU reduce-scatters its stage's whole gradient buffer
    and all-gathers its parameters once a step over the n = D x C ranks: (n-1)/n x grads and (n-1)/n x
    params, as held (reduce and param dtypes); the optimizer state (and master) is ZeRO-1's (chk_states)."""
    p, d = x["p"], x["d"]
    if p.get("mode") != "distopt" or p.get("sp") or p["cp"] > 1 or p["ep"] > 1 or p.get("emb") or \
            (x["fam"] == "moe-tiny" and p["tp"] > 1):  # (TP's own all-gathers: SP, CP rings, MoE tokens)
        return []
    n, bad = p["dp"], []
    for g in d["gpus"]:
        m, tb = g["mem_bytes"], g["traffic_bytes"]
        for k, held in (("reducescatter", m["grads"]), ("allgather", m["params"])):
            want = (n - 1) / n * held
            if k == "allgather" and p["tp"] > 1:
                continue  # TP all-gathers too where its splits do not pair (a ResNet's convolutions): below, by group kind
            if abs(tb.get(k, 0) - want) > 1e-6 * want + 8:
                bad.append(f"gpu {g['rank']} {k} {tb.get(k, 0)} B, (n-1)/n x {held} B = {want:.0f} B")
    # the data-parallel group's traffic (the mean over GPUs): both collectives and nothing else
    want = sum((n - 1) / n * (g["mem_bytes"]["grads"] + g["mem_bytes"]["params"]) for g in d["gpus"]) / len(d["gpus"])
    got = d["mesh"]["traffic_bytes"].get("dp", 0)
    if abs(got - want) > 1e-6 * want + 8:
        bad.append(f"dp traffic {got} B per GPU, (n-1)/n x (grads + params) = {want:.0f} B")
    return bad[:3]


def in_flight(p, M, s):
    """Micro-batches (chunk-micro-batches under --vpp) stage s holds at its peak: 1F1B min(P - s, M),
    GPipe M, interleaved (V = 2) min(2 (P - s - 1) + (V - 1) P + 1, M V); without --pp gradient
    accumulation runs forward and backward per micro-batch: 1."""
    P = p["pp"]
    if P == 1:
        return 1
    if p["schedule"] == "gpipe":
        return M
    if p["schedule"] == "interleaved":
        return min(2 * (P - s - 1) + P + 1, 2 * M)
    return min(P - s, M)


def chk_activations(x):
    """Activations per GPU: the one-GPU run's one-micro-batch bytes (checked against Korthikanti's
    formula on the GPT traces) x the micro-batch's share of the traced batch, / T under --sp and / C
    under --cp (between / T and whole under TP without SP: LayerNorm inputs stay whole), summed over
    the stages (each chunk-micro-batch 1/V of its stage's chunks under --vpp); each GPU holding its
    stage's micro-batch bytes x the schedule's micro-batches in flight, plus the recomputation's
    transient bytes (at most the one-GPU run's, scaled)."""
    p, d, fam = x["p"], x["d"], x["fam"]
    bad = []
    if fam in ("gpt-tiny", "gpt-l8h16") and not p.get("recompute"):
        kept1 = base_acts(fam, None)[0]
        want = korthikanti(trace_info(fam)["meta"])
        if abs(kept1 - want) > 0.10 * want:
            bad.append(f"one GPU keeps {kept1:.0f} B of activations, Korthikanti's formula {want:.0f} B (10 %)")
    kept1, trans1, batch1 = base_acts(fam, p.get("recompute"))
    stages = d.get("stages")
    if not stages or any("activation_bytes_per_micro_batch" not in st for st in stages):
        return bad + ["the JSON has no stages[].activation_bytes_per_micro_batch"]
    M = d["plan"]["micro_batches"]
    scale = d["plan"]["replica_batch"] / M / batch1 / p["cp"]
    V = 2 if p["pp"] > 1 and p["schedule"] == "interleaved" else 1
    got = V * sum(st["activation_bytes_per_micro_batch"] for st in stages)
    hi = kept1 * scale
    lo = hi / p["tp"] if p["tp"] > 1 and not p.get("sp") else hi
    if p.get("sp"):
        hi = lo = hi / p["tp"]
    if p.get("recompute") and d.get("pipeline_cut", {}).get("kind") == "time":
        # a cut inside a re-run block makes each side a region of its own, keeping its input: at most
        # what crosses every cut (a stage's boundary_bytes is its chunks' mean, as its activations)
        hi += V * sum(st["boundary_bytes"] for st in stages)
    if not lo * (1 - 1e-3) - 8 <= got <= hi * (1 + 1e-3) + 8:
        bad.append(f"one micro-batch's activations over the stages {got:.0f} B, closed form "
                   + (f"{lo:.0f} B" if lo == hi else f"{lo:.0f} .. {hi:.0f} B"))
    for g in d["gpus"]:
        st = stages[g["stage"]]
        tr = st.get("activation_bytes_transient", 0)
        want = st["activation_bytes_per_micro_batch"] * in_flight(p, M, g["stage"]) + tr
        if abs(g["mem_bytes"]["activations"] - want) > 1e-9 * want + 1:
            bad.append(f"gpu {g['rank']} (stage {g['stage']}) activations {g['mem_bytes']['activations']:.0f} B, "
                       f"{st['activation_bytes_per_micro_batch']:.0f} B x {in_flight(p, M, g['stage'])} in flight "
                       f"+ {tr:.0f} B transient = {want:.0f} B")
        if tr > trans1 * scale * (1 + 1e-3) + 8:
            bad.append(f"stage {g['stage']} transient {tr:.0f} B > the one-GPU run's scaled {trans1 * scale:.0f} B")
    return bad[:3]


CHECKS = [chk_time_parts, chk_exposed_le_comm, chk_whole_bytes, chk_states, chk_zero3_largest_unit, chk_table_wise, chk_dp_traffic, chk_units,
          chk_precision, chk_tied_traffic, chk_cp_traffic, chk_tp_traffic, chk_pp_traffic, chk_pp_block_bytes, chk_pp_cut,
          chk_moe_cut, chk_ep_traffic, chk_activations, chk_csv, chk_timeline, chk_html, chk_recompute_policy, chk_distopt]


def c_known(d, fam, p):
    """Checks whose violations are known and reported, not failed (PROPS_STRICT=1 fails them):
    exposed > comm until simulate's JSON has peer_wait_ms (sim/'s attribution)."""
    if os.environ.get("PROPS_STRICT") == "1":
        return set()
    known = set()
    if not any("peer_wait_ms" in g for g in d["gpus"]):
        known.add("chk_exposed_le_comm")
    return known


# ---- outputs that need a run of their own: text (every TEXT_EVERY-th plan), Chakra round trip --------

RAN = {}  # runs of the extra outputs, for the summary
TEXT_EVERY = int(os.environ.get("PROPS_TEXT_EVERY", "5"))
CHAKRA_EVERY = int(os.environ.get("PROPS_CHAKRA_EVERY", "10"))
TEXT_COLS = ("compute_ms", "stretch_ms", "host_wait_ms", "comm_ms", "exposed_comm_ms", "peer_wait_ms", "bubble_ms", "idle_ms")


def text_fails(out, d):
    """The text report (--per-gpu: the binary's run's stdout) states the JSON's step and, per GPU, its
    time parts (3 decimals) and peak memory (GB, 2 decimals)."""
    RAN["text"] = RAN.get("text", 0) + 1
    bad = []
    m = re.search(r"^step time\s+([0-9.]+) ms", out, re.M)
    if not m or abs(float(m.group(1)) - d["step_ms"]) > 0.0015:
        bad.append(f"text step {m.group(1) if m else None} ms, JSON {d['step_ms']:.6f}")
    rows = {}
    for line in out.splitlines():
        f = line.split()
        if len(f) == 13 and f[0].isdigit() and all(re.fullmatch(r"-?[0-9.]+", v) for v in f[1:]):
            rows[int(f[0])] = f
    for g in d["gpus"]:
        f = rows.get(g["rank"])
        if f is None:
            bad.append(f"the text report has no row for gpu {g['rank']}")
            continue
        for col, key in zip(f[4:12], TEXT_COLS):
            if abs(float(col) - g.get(key, 0)) > 0.0015:
                bad.append(f"text gpu {g['rank']} {key} {col}, JSON {g.get(key, 0):.6f}")
        if abs(float(f[12]) - g["peak_mem_bytes"] / 1e9) > 0.0051:
            bad.append(f"text gpu {g['rank']} mem {f[12]} GB, JSON {g['peak_mem_bytes']} B")
    return bad[:3]


def sp_pp_fails(fam, p, d):
    """Under --sp each GPU sends 1/T of what the TP-less pipeline sends at the same cut (its tokens of
    the residual stream, its heads or columns inside a TP region): the same plan without --tp --sp,
    when it cuts the same layers, sends T x the bytes."""
    q = dict(p, tp=1, sp=False)
    tr = os.path.join(ROOT, "traces", FAMILIES[fam][0])
    rc, out, err = SIM.simulate(tr, *argv(q))
    if rc != 0:
        return []  # (the TP-less plan may be refused for reasons of its own)
    d1 = json.loads(out)
    cuts = [(st["layer_first"], st["layer_last"]) for st in d.get("stages", [])]
    if cuts != [(st["layer_first"], st["layer_last"]) for st in d1.get("stages", [])]:
        return []
    got, want = d["mesh"]["traffic_bytes"].get("pp", 0), d1["mesh"]["traffic_bytes"].get("pp", 0) / p["tp"]
    return [] if abs(got - want) <= 1e-6 * want + 1 else \
        [f"pp {got} B per GPU under --sp, the TP-less pipeline's at the same cut / T = {want}"]


def chakra_fails(args, d, dirk):
    """The plan exported as Chakra ET (--chakra) and simulated as given (--as-is) takes the step it was
    exported from; a plan Chakra cannot express is refused in one line (exit 2), not a failure."""
    ck = os.path.join(dirk, "ck")
    rc, out, err = run(args + ["--chakra", ck, "--json"])
    if rc == 2 and len(err.strip().splitlines()) == 1:
        RAN["chakra refused"] = RAN.get("chakra refused", 0) + 1
        return []
    RAN["chakra"] = RAN.get("chakra", 0) + 1
    if rc != 0:
        return [f"--chakra exits {rc}: {err.strip()[:200]}"]
    rc, out, err = run(["simulate", ck, "--as-is", "--json"])
    if rc != 0:
        return [f"--as-is exits {rc}: {err.strip()[:200]}"]
    step = json.loads(out)["step_ms"]
    return [] if abs(step - d["step_ms"]) <= 1e-6 * d["step_ms"] else \
        [f"--as-is of the export {step} ms, simulate {d['step_ms']} ms"]


# ---- the run ------------------------------------------------------------------------------------

def same_exit_fails(rc, err, lrc, lerr):
    """The binary's run and the library's agree: the exit code, and a refusal's message."""
    if rc != lrc or (rc != 0 and err.strip() != lerr.strip()):
        return [f"the binary exits {rc} ({err.strip()[:200]!r}), the library {lrc} ({lerr.strip()[:200]!r})"]
    return []


def one(k, fam, p, work):
    tr = os.path.join(ROOT, "traces", FAMILIES[fam][0])
    dirk = os.path.join(work, str(k))
    os.makedirs(dirk)
    args = ["simulate", tr, *argv(p)]
    outs = {"csv": os.path.join(dirk, "csv"), "html": os.path.join(dirk, "r.html"), "timeline": os.path.join(dirk, "t.json")}
    res = {"k": k, "fam": fam, "p": p, "cmd": "mitosis " + " ".join(args), "fails": [], "known": []}
    if k % TEXT_EVERY == 0:  # the binary's own run (its text report and files), the library's JSON
        rc, text, err = run(args + ["--per-gpu"] + [w for kv in outs.items() for w in ("--" + kv[0], kv[1])])
        lrc, out, lerr = SIM.simulate(tr, *argv(p))
        for f in same_exit_fails(rc, err, lrc, lerr):
            res["fails"].append(("library", f))
    else:
        rc, out, err = SIM.simulate_writing(tr, argv(p), outs)
    res["rc"] = rc
    if rc != 0:
        lines = err.strip().splitlines()
        if rc != 2 or len(lines) != 1:
            res["fails"].append(("refusal", f"exit {rc}, stderr {err.strip()[:300]!r} (want one line, exit 2)"))
        res["refused"] = lines[0] if lines else ""
        return res
    d = json.loads(out)
    res["step"] = d["step_ms"]
    res["gb"] = d["plan"]["global_batch"]
    res["peak"] = max(g["peak_mem_bytes"] for g in d["gpus"])
    x = {"fam": fam, "p": p, "d": d, "dir": dirk}
    known = c_known(d, fam, p)
    for c in CHECKS:
        try:
            for f in c(x):
                res["fails" if c.__name__ not in known else "known"].append((c.__name__, f))
        except Exception as e:  # a check that cannot read an output fails
            res["fails"].append((c.__name__, f"{type(e).__name__}: {e}"))
    if p.get("sp") and p["pp"] > 1:
        for f in sp_pp_fails(fam, p, d):
            res["fails"].append(("sp_pp", f))
    if k % TEXT_EVERY == 0:
        for f in text_fails(text, d):
            res["fails"].append(("text", f))
    if k % CHAKRA_EVERY == 0:
        for f in chakra_fails(args, d, dirk):
            res["fails"].append(("chakra", f))
    if k % 4 == 0 and p["dp"] > 1:  # fold == no-fold
        rc2, out2, err2 = SIM.simulate(tr, *argv(p), "--no-fold")
        if rc2 != 0:
            res["fails"].append(("fold", f"--no-fold exit {rc2}: {err2.strip()[:200]}"))
        else:
            d2 = json.loads(out2)
            if abs(d2["step_ms"] - d["step_ms"]) > 1e-9 * d["step_ms"]:
                res["fails"].append(("fold", f"step {d['step_ms']} ms folded, {d2['step_ms']} ms --no-fold"))
            for kk, v in d["mesh"]["traffic_bytes"].items():
                v2 = d2["mesh"]["traffic_bytes"].get(kk, 0)
                if abs(v2 - v) > 1e-9 * v + 1e-6:
                    res["fails"].append(("fold", f"{kk} traffic {v} folded, {v2} --no-fold"))
    shutil.rmtree(dirk, ignore_errors=True)
    return res


def compare_rows(fam, group):
    """compare --plans of the accepted plans of one trace and GPU count: each row's step and peak memory
    are simulate's."""
    tr = os.path.join(ROOT, "traces", FAMILIES[fam][0])
    gpus = group[0]["p"]["dp"] * group[0]["p"]["tp"] * group[0]["p"]["pp"] * group[0]["p"]["cp"] * group[0]["p"]["ep"]
    labels = [compare_label(r["p"]) for r in group]
    rc, out, err = SIM.compare(tr, "--gpus", str(gpus), "--batch", str(group[0]["gb"]), "--plans", ",".join(labels))
    if rc != 0:
        return [(r, "compare", f"compare exit {rc}: {err.strip()[:200]}") for r in group[:1]]
    rows = json.loads(out)["rows"]
    fails = []
    for r in group:
        match = [w for w in rows if abs(w["step_ms"] - r["step"]) <= 1e-9 * r["step"]
                 and abs(w["peak_mem_bytes"] - r["peak"]) <= 1e-6 * r["peak"] + 1]
        if not match:
            fails.append((r, "compare", f"no compare row with simulate's step {r['step']} ms and peak {r['peak']} B "
                          f"(rows: {[(w['label'], w['step_ms']) for w in rows][:4]})"))
    return fails


def main():
    rng = random.Random(SEED)
    plans = [draw(rng) for _ in range(N)]
    work = tempfile.mkdtemp(prefix="props.")
    results = []
    try:
        with cf.ThreadPoolExecutor(max_workers=JOBS) as ex:
            futs = [ex.submit(one, k, fam, p, work) for k, (fam, p) in enumerate(plans)]
            results = [f.result() for f in futs]
        groups = {}
        for r in results:
            if r["rc"] == 0 and not r["p"].get("units") and not r["p"].get("prec"):  # flags --plans lacks
                p = r["p"]
                groups.setdefault((r["fam"], p["dp"] * p["tp"] * p["pp"] * p["cp"] * p["ep"], r["gb"]), []).append(r)
        cmp_fails = []
        for fam in FAMILIES:  # per family its largest group of one GPU count, one compare each
            gs = [g for (f, _, _), g in groups.items() if f == fam]
            if gs:
                cmp_fails += compare_rows(fam, max(gs, key=len))
        for r, name, msg in cmp_fails:
            r["fails"].append((name, msg))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    by_check, failed, known = {}, 0, {}
    for r in results:
        for name, msg in r["known"]:
            if name not in known:
                print(f"KNOWN {name} ({sum(n == name for q in results for n, _ in q['known'])} plans), e.g. "
                      f"{r['cmd']}: {msg}")
            known[name] = known.get(name, 0) + 1
        if r["fails"]:
            failed += 1
            print(f"COUNTER-EXAMPLE {r['cmd']}")
            for name, msg in r["fails"]:
                print(f"  {name}: {msg}")
                by_check[name] = by_check.get(name, 0) + 1
    if os.environ.get("PROPS_DUMP"):  # every plan's result, for counting failures by cause
        with open(os.environ["PROPS_DUMP"], "w") as f:
            json.dump([{k: r[k] for k in ("k", "fam", "p", "cmd", "rc", "fails", "known")} for r in results], f)
    accepted = sum(r["rc"] == 0 for r in results)
    refused = {}
    for r in results:
        if r["rc"] == 2:
            refused[r["refused"][:90]] = refused.get(r["refused"][:90], 0) + 1
    print(f"{len(results)} of {N} plans (seed {SEED}): {accepted} simulated, {len(results) - accepted} refused; "
          f"{failed} counter-examples")
    print("  extra runs: " + ", ".join(f"{k} {v}" for k, v in sorted(RAN.items())))
    for k, v in sorted(refused.items(), key=lambda kv: -kv[1])[:8]:
        print(f"  refused x{v}: {k}")
    print("  " + SIM.summary())
    for name in [c.__name__ for c in CHECKS] + ["sp_pp", "text", "chakra", "fold", "compare", "refusal", "library"]:
        print(f"  {name}: {by_check.get(name, 0)} failures" + (f" ({known[name]} known)" if name in known else ""))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
