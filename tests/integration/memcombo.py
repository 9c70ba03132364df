"""Issue 31's reproductions 1-3 and 6-8: parameters, gradients, optimizer state and traffic per GPU under
combinations of strategies, each against a closed form derived here from the model's definition
(modelparams.py, from meta.json) or the ring collectives' 2(n-1)/n, (n-1)/n, or a one-line refusal.
Usage: memcombo.py MITOSIS (run from anywhere; traces/ of the repository). The JSON runs go through libmitosis
when memcombo.sh starts python (simcheck.py, libsim.py); the text and refusal checks run the binary."""
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
    tb = c.lib.inspect_json(tr)["tensor_bytes"]
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

# 1b. Expert tensor parallelism of another size than T (--etp S, Megatron-Core's expert_tensor_parallel_size;
#     token_dispatcher.py: all-to-all over the EP group, then the all-gather / reduce-scatter over the expert-TP
#     group): experts / (ep S) per GPU; all-to-alls unchanged (a rank's 1/T of the tokens); the expert-TP group
#     gathers S x 1/T of the routed rows, (S-1)/S of them sent, one all-gather and one reduce-scatter each way per
#     MoE layer; expert gradients all-reduced over Megatron's expert-data-parallel group, N / (S ep) = D T / S ranks.
c.check_bad("--etp 1 needs --ep", "simulate", moe, "--gpus", 2, "--tp", 2, "--sp", "--etp", 1)
c.check_bad("not divisible by etp x ep x pp", "simulate", moe, "--gpus", 4, "--ep", 2, "--tp", 2, "--sp", "--etp", 4)
c.check_bad("--etp 2 with --tp 1 is not modelled", "simulate", moe, "--gpus", 4, "--ep", 2, "--dp", 2, "--etp", 2)
ts = mp.params(moe)
for g, dp, ep, tp, S in ((8, 1, 2, 4, 2), (8, 2, 2, 2, 1)):
    d = c.sim(moe, "--gpus", g, "--dp", dp, "--ep", ep, "--tp", tp, "--sp", "--etp", S, "--expert-skew", 0)
    if not d:
        continue
    rep, own = mp.per_gpu(ts, tp=tp, ep=ep, etp=S)
    what = f"1b: --dp {dp} --ep {ep} --tp {tp} --etp {S}"
    eq(f"{what} params = dense / T + experts / (S ep) (row biases whole)", mem(d)["params"], rep + own)
    tb = d["mesh"]["traffic_bytes"]
    eq(f"{what}: all-to-alls = 4 per MoE layer x (ep-1)/ep x R / T", tb["ep"], meta["layers"] * 4 * R / tp * (ep - 1) / ep)
    eq(f"{what}: expert-TP = 4 per MoE layer x (S-1)/S x S R / T", tb.get("etp", 0), meta["layers"] * 4 * (S - 1) * R / tp)
    n = dp * tp // S
    eq(f"{what}: expert gradients all-reduced over D T / S = {n} ranks", tb["edp"], 2 * (n - 1) / n * own)
mx = trace("cpu-mixtral-tiny-b4")  # SwiGLU experts without biases: 3 h x ffn weights each
mm = mp.load(mx)
X = 4 * mm["moe_layers"] * mm["experts"] * 3 * mm["hidden"] * mm["ffn"]
Rm = mm["batch"] * mm["seq_len"] * mm["top_k"] * mm["hidden"] * 4
ds = {S: c.sim(mx, "--gpus", 8, "--dp", 2, "--ep", 2, "--tp", 2, "--sp", "--expert-skew", 0, *(("--etp", S) if S else ()))
      for S in (0, 1)}
if ds[0] and ds[1]:
    eq("1b: mixtral --etp 1 holds the experts / ep, the default (--etp T = 2) / (2 ep)",
       mem(ds[1])["params"] - mem(ds[0])["params"], X / 2 - X / 4)
    for S, d in ((2, ds[0]), (1, ds[1])):
        tb, n = d["mesh"]["traffic_bytes"], 2 * 2 // S
        eq(f"1b: mixtral --etp {S}: all-to-alls 4 x layers x R / T / 2", tb["ep"], mm["moe_layers"] * 4 * Rm / 2 / 2)
        eq(f"1b: mixtral --etp {S}: edp all-reduce over D T / S = {n} of X / (ep S)", tb["edp"],
           2 * (n - 1) / n * X / (2 * S))
    eq("1b: mixtral: the default's TP traffic has the expert-TP gathers, --etp 1's not: 4 x layers x R / 2",
       ds[0]["mesh"]["traffic_bytes"]["tp"] - ds[1]["mesh"]["traffic_bytes"]["tp"], mm["moe_layers"] * 4 * Rm / 2)

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
# table-wise places whole tables (largest first onto the least loaded GPU): with pure bf16 every GPU holds
# the dense part and its own tables at 2 bytes a parameter (the fp32 trace's / 2), its gradients alike
d = c.sim(dlrm, "--gpus", 2, "--embedding-shard", "table", "--precision", "bf16")
if d:
    tabs = sorted((t["bytes"] for t in ts if t["kind"] == "table"), reverse=True)
    dense = sum(t["bytes"] for t in ts if t["kind"] != "table")
    load = [0, 0]
    for b in tabs:
        load[load.index(min(load))] += b
    for g in d["gpus"]:
        r = g["dp"]
        eq(f"2: table x bf16: GPU {r} params = (dense + its tables) / 2", g["mem_bytes"]["params"], (dense + load[r]) / 2)
        eq(f"2: table x bf16: GPU {r} grads = params", g["mem_bytes"]["grads"], (dense + load[r]) / 2)

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
w = c.lib.inspect_json(rn)["tensor_bytes"]["weight"]
for flag in (["--zero", 3], ["--fsdp"]):
    d = c.sim(rn, "--gpus", 4, "--dp", 4, *flag)
    if d:
        tb = d["mesh"]["traffic_bytes"]
        eq(f"resnet18 {flag[0]}: all-gathers carry 2 x 3/4 x the parameters", tb["dp"], 1.5 * w)
        eq(f"resnet18 {flag[0]}: reduce-scatters carry 3/4 x the parameters", tb["dp-rs"], 0.75 * w)
# 43. Megatron-Core's distributed optimizer (--dist-opt; megatron/core/distributed/param_and_grad_buffer.py,
#     optimizer/distrib_optimizer.py): the gradient buffer whole, master weights and Adam states sharded over
#     the D data-parallel ranks; gradients reduce-scattered, parameters all-gathered: per GPU of a stage holding
#     rep replicated bytes, params = grads = rep, optimizer = r x ceil(rep / D), reduce-scatter = all-gather =
#     (D-1)/D x rep (an all-reduce's bytes, where ZeRO-1 adds an all-gather to the all-reduce) and memory as
#     ZeRO-1's. Stages sum to the model (+ its tied copy); TP splits as Megatron (modelparams.py).
def distopt_gpu(name, g, D, r):
    m, tb = g["mem_bytes"], g["traffic_bytes"]
    eq(f"43: {name} gpu {g['rank']} params = grads (the whole buffer)", m["params"], m["grads"])
    eq(f"43: {name} gpu {g['rank']} optimizer = r x ceil(rep / D)", m["optimizer"], whole(r * math.ceil(m["grads"] / D)))
    for k in ("reducescatter", "allgather"):
        eq(f"43: {name} gpu {g['rank']} {k} = (D-1)/D x rep", tb.get(k, 0), (D - 1) / D * m["grads"])


def llama_rep(tr, tp):
    """Llama's parameters per GPU under TP (Megatron): q, k, v, gate, up column-, o, down row-parallel, the
    vocabulary-parallel embedding and head / T, the RMSNorm weights whole; fp32."""
    m = mp.load(tr)
    h, L, V, f, kv = m["hidden"], m["layers"], m["vocab"], m["ffn"], m["hidden"] // m["heads"] * m["kv_heads"]
    split = 2 * V * h + L * (2 * h * h + 2 * h * kv + 3 * h * f)
    norms = (2 * L + 1) * h
    assert split + norms == m["parameters"], (split + norms, m["parameters"])
    return 4 * (split / tp + norms)


for tname, plans in (("cpu-gpt-tiny-b8", ((1, 1, 4), (2, 2, 2))), ("cpu-llama-tiny-b4", ((1, 1, 4), (2, 2, 2)))):
    tr = trace(tname)
    ts, r = mp.params(tr), opt_ratio(tr)
    tied = mp.tied_bytes(ts) if ts else 0
    for tp, pp, D in plans:
        plan = ["--gpus", tp * pp * D, "--tp", tp, "--pp", pp, "--dp", D]
        name = f"{tname} tp {tp} pp {pp} dp {D}"
        d = c.sim(tr, *plan, "--dist-opt")
        if not d:
            continue
        for g in d["gpus"]:
            distopt_gpu(name, g, D, r)
        model = mp.per_gpu(ts, tp=tp)[0] if ts else llama_rep(tr, tp)
        per = {g["stage"]: g["mem_bytes"]["grads"] for g in d["gpus"] if g["tp"] == 0}
        eq(f"43: {name} the stages' gradients = the model / T (+ the tied copy / T)", sum(per.values()),
           model + (mp.tied_bytes(ts, tp) if pp > 1 and tied else 0))
        if tp * pp > 1:
            continue
        z = c.sim(tr, *plan, "--zero", 1)
        if not z:
            continue
        c.check(f"43: {name} memory per GPU = ZeRO-1's", [g["mem_bytes"] for g in d["gpus"]] ==
                [g["mem_bytes"] for g in z["gpus"]], (mem(d), mem(z)))
        zdp, ddp_ = z["mesh"]["traffic_bytes"]["dp"], d["mesh"]["traffic_bytes"]["dp"]
        eq(f"43: {name} traffic on dp = 2/3 of ZeRO-1's (all-reduce + all-gather)", ddp_, zdp * 2 / 3)
gpt = trace("cpu-gpt-tiny-b8")
ts = mp.params(gpt)
total = sum(t["bytes"] for t in ts)
d = c.sim(gpt, "--gpus", 4, "--dist-opt", "--precision", "bf16-mixed")
if d:
    m, tb = mem(d), d["gpus"][0]["traffic_bytes"]
    eq("43: bf16-mixed: bf16 parameters whole", m["params"], total / 2)
    eq("43: bf16-mixed: fp32 main grads whole", m["grads"], total)
    eq("43: bf16-mixed: fp32 master + Adam over D", m["optimizer"],
       whole(opt_ratio(gpt) * math.ceil(total / 4)) + math.ceil(total / 4))
    eq("43: bf16-mixed: reduce-scatter in fp32", tb["reducescatter"], 3 / 4 * total)
    eq("43: bf16-mixed: all-gather in bf16", tb["allgather"], 3 / 4 * total / 2)
#     buckets: Megatron's default max(40M, 1M x D) parameters holds gpt-tiny's 5.3M in one; --bucket cuts more,
#     and each parameter all-gather after the first overlaps the forward: less exposed than ZeRO-1's blocking one
llama = trace("cpu-llama-tiny-b4")
slow = ["--gpus", 4, "--link-bw", "0.01GB/s"]
d1 = c.sim(llama, *slow, "--dist-opt")
dk, zk = c.sim(llama, *slow, "--dist-opt", "--bucket", "256KiB"), c.sim(llama, *slow, "--zero", 1, "--bucket", "256KiB")
if d1 and dk and zk:
    s1 = d1["simulation"]
    c.check("43: one default bucket: one reduce-scatter, one all-gather", s1["ddp_buckets"] == 1 and
            s1.get("distopt_gathers") == 1, s1)
    g1 = d1["gpus"][0]
    eq("43: one bucket: nothing overlaps (exposed = comm)", g1["exposed_comm_ms"], g1["comm_ms"])
    sk = dk["simulation"]
    c.check("43: --bucket 256KiB: several all-gather buckets", sk.get("distopt_gathers", 0) > 1, sk)
    eq("43: --bucket keeps the bytes", dk["mesh"]["traffic_bytes"]["dp"], d1["mesh"]["traffic_bytes"]["dp"])
    c.check("43: buckets overlap the forward and backward: exposed < ZeRO-1's with the same buckets",
            dk["gpus"][0]["exposed_comm_ms"] < zk["gpus"][0]["exposed_comm_ms"],
            (dk["gpus"][0]["exposed_comm_ms"], zk["gpus"][0]["exposed_comm_ms"]))
for bad, want in ((["--dist-opt", "--zero", 1], "--dist-opt cannot be combined"),
                  (["--dist-opt", "--first-bucket", "2MiB"], "--first-bucket"),
                  (["--dist-opt", "--strategy", "dp"], "--dist-opt shards"),
                  (["--dist-opt", "--dp", 1, "--tp", 4], "--dist-opt shards")):
    c.check_bad(want, "simulate", llama, "--gpus", 4, *bad)
c.check_bad("--dist-opt with --ep", "simulate", trace("cpu-moe-tiny-b8"), "--gpus", 4, "--ep", 2, "--dist-opt")
c.finish()
