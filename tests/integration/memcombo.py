"""Issue 31's reproductions 1-3 and 6-8: parameters, gradients, optimizer state and traffic per GPU under
combinations of strategies, each against a closed form derived here from the model's definition
(modelparams.py, from meta.json) or the ring collectives' 2(n-1)/n, (n-1)/n, or a one-line refusal.
Usage: memcombo.py MITOSIS (run from anywhere; traces/ of the repository)."""
import json
import math
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import modelparams as mp  # noqa: E402
from simcheck import Checker  # noqa: E402

ROOT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")
TR = os.path.join(ROOT, "traces")
c = Checker(sys.argv[1])


def trace(name):
    return os.path.join(TR, name)


def whole(x):
    return math.ceil(x - 1e-6) if x > 0 else 0


def opt_ratio(tr):
    rc, out, err = c.run("inspect", tr, "--json")
    import json
    tb = json.loads(out)["tensor_bytes"]
    return tb["optimizer_state"] / tb["weight"]


def mem(d, rank=0):
    return d["gpus"][rank]["mem_bytes"]


def eq(name, got, want):
    c.check(name, abs(got - want) <= 0.5, f"got {got}, closed form {want}")


# 1. EP x TP as Megatron-Core's expert tensor parallelism (expert-TP size = T): it needs --sp (Megatron asserts
#    sequence_parallel with expert and tensor parallelism); the experts' weights split T ways and over ep
#    (their row-parallel biases whole), the router whole; each rank dispatches its own 1/T of the tokens. EP
#    alone holds the dense part and 1/ep of the experts.
moe = trace("cpu-moe-tiny-b8")
c.check_bad("--ep with --tp needs --sp", "simulate", moe, "--gpus", 4, "--ep", 2, "--tp", 2)
ts = mp.params(moe)
d = c.sim(moe, "--gpus", 4, "--ep", 4)
if d:
    rep, own = mp.per_gpu(ts, ep=4)
    eq("1: --ep 4 params = dense + experts / 4", mem(d)["params"], rep + own)
    eq("1: --ep 4 optimizer = ratio x params", mem(d)["optimizer"], whole(opt_ratio(moe) * (rep + own)))
meta = mp.load(moe)
R = meta["batch"] * meta["seq_len"] * 2 * meta["hidden"] * 4  # routed rows x hidden x 4 B (top-2, none dropped)
for g, ep, tp in ((4, 2, 2), (16, 4, 4)):
    d = c.sim(moe, "--gpus", g, "--ep", ep, "--tp", tp, "--sp", "--expert-skew", 0)
    if not d:
        continue
    rep, own = mp.per_gpu(ts, tp=tp, ep=ep)
    eq(f"1: --ep {ep} --tp {tp} --sp params = dense / T (router, norms, row biases whole) + experts / (T ep)",
       mem(d)["params"], rep + own)
    a2a = d["gpus"][0]["traffic_bytes"]["alltoall"]
    eq(f"1: --ep {ep} --tp {tp}: all-to-alls carry the rank's 1/T of the tokens, 4 per MoE layer x (ep-1)/ep",
       a2a, meta["layers"] * 4 * R / tp * (ep - 1) / ep)
    etp = meta["layers"] * 2 * R * (tp - 1) / tp  # one all-gather and one reduce-scatter of R each way
    g0 = d["gpus"][0]["traffic_bytes"]
    c.check(f"1: --ep {ep} --tp {tp}: the expert-TP all-gathers and reduce-scatters of the routed rows are there",
            g0["allgather"] >= etp and g0["reducescatter"] >= etp, f"{g0}, expert TP alone {etp}")

# 2. sharded tables x TP / ZeRO / FSDP.
dlrm = trace("cpu-dlrm-tiny-b8")
ts = mp.params(dlrm)
d = c.sim(dlrm, "--gpus", 4, "--embedding-shard", "row", "--tp", 2, "--dp", 2)
if d:
    rep, own = mp.per_gpu(ts, tp=2, emb_replicas=2)
    eq("2: row x tp 2 x dp 2 params = dense / T (row biases whole) + tables / (T R)", mem(d)["params"], rep + own)
d = c.sim(dlrm, "--gpus", 4, "--embedding-shard", "column", "--zero", 1)
if d:
    rep, own = mp.per_gpu(ts, emb_replicas=4)
    eq("2: column x zero 1 params = dense + tables / R", mem(d)["params"], rep + own)
    eq("2: column x zero 1 optimizer = ratio x (tables / R + dense / D)", mem(d)["optimizer"],
       whole(opt_ratio(dlrm) * (own + rep / 4)))
d = c.sim(dlrm, "--gpus", 4, "--embedding-shard", "row", "--fsdp")
if d:
    rep, own = mp.per_gpu(ts, emb_replicas=4)
    eq("2: row x fsdp grads = tables / R + dense / D", mem(d)["grads"], own + rep / 4)
    eq("2: row x fsdp reduce-scatters the dense part only: (D-1)/D x dense", d["mesh"]["traffic_bytes"]["dp-rs"],
       3 / 4 * rep)
    gathered = mem(d)["params"] - own - rep / 4
    c.check("2: row x fsdp gathers a dense unit, never a table", 0 < gathered < rep,
            f"gathered {gathered}, dense {rep}")

# 3. tied embeddings under PP x DP: the last stage's copy is reduced over its replicas too.
gpt = trace("cpu-gpt-tiny-b8")
ts = mp.params(gpt)
total, tied = sum(t["bytes"] for t in ts), mp.tied_bytes(ts)
d = c.sim(gpt, "--gpus", 8, "--pp", 2, "--dp", 4)
if d:
    first = [g for g in d["gpus"] if g["stage"] == 0][0]
    last = [g for g in d["gpus"] if g["stage"] == 1][0]
    eq("3: the stages hold the model and the last the tied copy", first["mem_bytes"]["grads"] + last["mem_bytes"]["grads"],
       total + tied)
    eq("3: the last stage all-reduces 2(D-1)/D x its gradients (the copy's included) + the copy between stages",
       last["traffic_bytes"]["allreduce"], 2 * 3 / 4 * last["mem_bytes"]["grads"] + tied)
d = c.sim(gpt, "--gpus", 8, "--pp", 2, "--dp", 4, "--zero", 1)
if d:
    last = [g for g in d["gpus"] if g["stage"] == 1][0]
    eq("3: zero 1 shards the last stage's optimizer state, the copy's included", last["mem_bytes"]["optimizer"],
       whole(opt_ratio(gpt) * math.ceil(last["mem_bytes"]["grads"] / 4)))
c.check_bad("tied", "simulate", gpt, "--gpus", 4, "--embedding-shard", "row")

# 6. SP x PP: each TP rank sends its sequence share at the stage cut.
l8 = trace("cpu-gpt-l8h16-b2")
meta = mp.load(l8)
B, S, h, L = meta["batch"], meta["seq_len"], meta["hidden"], meta["layers"]
#    Under SP every activation a GPU holds is split by T (by sequence, or by heads/columns inside a
#    TP region), so at the same cut each GPU sends 1/T of what one GPU of a TP-less pipeline sends.
d = c.sim(l8, "--gpus", 4, "--tp", 2, "--pp", 2, "--sp")
d1 = c.sim(l8, "--gpus", 2, "--pp", 2)
if d and d1:
    cuts = lambda r: [(s["layer_first"], s["layer_last"]) for s in r["stages"]]
    c.check("6: sp x pp and the TP-less pipeline cut alike", cuts(d) == cuts(d1), (cuts(d), cuts(d1)))
    eq("6: sp x pp sends 1/T of the TP-less pipeline's activations per GPU and step",
       d["mesh"]["traffic_bytes"]["pp"], d1["mesh"]["traffic_bytes"]["pp"] / 2)
    # the block cut sends the block's output [B, S, h] forward and its gradient back, once each: per GPU
    # (P-1)/P x 2 x B S h x 4 (the ET's reused tensor ids once sent block 3's fc2 output too: 2x)
    eq("6: one B S h x 4 tensor crosses the block cut", d1["mesh"]["traffic_bytes"]["pp"], (2 - 1) / 2 * 2 * B * S * h * 4)

# 7. CP x recompute: the recomputed ring attention gathers K/V again: per layer forward 1, recomputed 1,
#    backward 2 (K/V and their gradients) all-gathers of K and V of the whole sequence, (C-1)/C each.
kv = 2 * B * S * h * 4
for mode, rings in (("none", 3), ("full", 4)):
    d = c.sim(l8, "--gpus", 2, "--cp", 2, "--recompute", mode)
    if d:
        eq(f"7: cp 2 recompute {mode}: L x {rings} x (C-1)/C x K/V", d["mesh"]["traffic_bytes"]["cp"], L * rings * kv / 2)

# 8. a pipeline cut inside a MoE layer is refused; row-parallel biases stay whole; the plan line names
#    ep; bytes are whole.
c.check_bad("inside a MoE layer", "simulate", moe, "--gpus", 8, "--ep", 2, "--pp", 4, "--vpp", 2)
ts = mp.params(gpt)
d = c.sim(gpt, "--gpus", 2, "--tp", 2)
if d:
    rep, own = mp.per_gpu(ts, tp=2)
    eq("8: tp 2 params: split / T, row-parallel biases and norms whole", mem(d)["params"], rep)
rc, out, err = c.run("simulate", moe, "--gpus", 4, "--ep", 2)
c.check("8: the plan line names ep", rc == 0 and "x ep 2" in out.splitlines()[0], out.splitlines()[:1])
d = c.sim(gpt, "--gpus", 8, "--pp", 2, "--dp", 4)
if d:
    frac = [(g["rank"], k, v) for g in d["gpus"] for k, v in g["mem_bytes"].items() if v != int(v)]
    c.check("8: memory in whole bytes", not frac, frac[:3])

# ZeRO-3 / FSDP units: every parameter in exactly one unit, gathered before forward and backward and
# reduce-scattered, also where a unit runs no backward op of its own (ResNet-18's downsampling blocks:
# their second batch norm's gradients come from another layer's backward ops). On a ring of 4:
# all-gathers 2 x 3/4 x params, reduce-scatters 3/4 x params, params from inspect.
rn = trace("cpu-resnet18-b8")
rc, out, err = c.run("inspect", rn, "--json")
w = json.loads(out)["tensor_bytes"]["weight"] if rc == 0 else 0
for flag in (["--zero", 3], ["--fsdp"]):
    d = c.sim(rn, "--gpus", 4, "--dp", 4, *flag)
    if d:
        tb = d["mesh"]["traffic_bytes"]
        eq(f"resnet18 {flag[0]}: all-gathers carry 2 x 3/4 x the parameters", tb["dp"], 1.5 * w)
        eq(f"resnet18 {flag[0]}: reduce-scatters carry 3/4 x the parameters", tb["dp-rs"], 0.75 * w)
c.finish()
