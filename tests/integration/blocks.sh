#!/usr/bin/env bash
# Integration: the trace's repeating block (extrapolate/blocks.h) as inspect shows it.
#  - gpt-tiny (collect.py: 4 layers, hidden 256) and the l8h16 transformer (8 layers, hidden 512):
#    as many blocks as the model has layers, each holding one layer's parameters, which is
#    12 h^2 + 13 h fp32 values (q, k, v, o: 4 (h^2 + h); MLP h x 4h: 8 h^2 + 5 h; two LayerNorms: 4 h);
#  - resmlp (8 blocks of hidden 512): 8 blocks; dlrm-tiny (no repeated group): none, said so.
# --blocks N (extrapolate/repeat.h, docs/blocks.md), on gpt-tiny traced with 2 and with 8 blocks
# (traces/cpu-gpt-l2-b4, cpu-gpt-l8-b4: hidden 256, vocab 4096):
#  - inspect --blocks 8 of the 2-block trace: the 8-block model's parameters, as its meta.json counts
#    them and as 2-block + 6 x (12 h^2 + 13 h);
#  - simulate of the 2-block trace with --blocks 8 against the 8-block trace, plan by plan (1 GPU,
#    TP 2, PP 2 and 4, FSDP, ZeRO-3, DP 2 x TP 2; bench/blocks.py), each trace calibrated to its own
#    measured step (--calibrate; the profiler's overhead per op grows with the model): step within 3 %; parameters,
#    gradients and optimizer state summed over the GPUs equal (0.01 %); the worst GPU's parameters,
#    optimizer state, activations and traffic equal too where the split does not depend on op
#    times (not pipeline cuts, which balance each recording's own op times);
#  - --blocks 8 of the 8-block trace is that trace (1 GPU and PP 4, to 1e-4 %); --blocks 2 of it has the
#    2-block model's parameters, gradients, state and activations per GPU (1 GPU, FSDP 4);
#  - the whole state: a foreach optimizer's Adam state follows each parameter's block (llama3-8b 2 ->
#    32 blocks: 2 states x 2 B x P; --fsdp over 8 of 2 -> 8 blocks: the 8-block trace's state per GPU);
#    --blocks 1 of l8h16 drops 7 blocks' weights, gradients and state; inspect and simulate agree;
#  - refused in one line, exit 2: no repeating block (a trace of one block among them), N = 0, N > 1024, N not a number.
# One python runs the checks, simulating through libmitosis with each trace opened once (libsim.py;
# bench/blocks.py's comparison with its runs made so); inspect --blocks, the text reports and the
# refusals run the binary.
# Usage: bash blocks.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: blocks.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root" "$(dirname "$0")" <<'PY'
import contextlib, io, json, os, re, sys, tempfile
sys.path.insert(0, sys.argv[3])
from libsim import Checks, Sim
bin_, root = sys.argv[1:3]
sim, check = Sim(bin_), Checks()
guard = check.guard
T = os.path.join(root, "traces")
sys.path.insert(0, os.path.join(root, "bench"))
import blocks as bench  # noqa: E402  bench/blocks.py: its runs through the library
bench.run = lambda binary, trace, plan, extra: sim.sim_json(trace, *plan.split(), *extra)


def cli_json(*args):
    rc, out, err = sim.run(*args, "--json")
    assert rc == 0, f"{' '.join(map(str, args))}: exit {rc}: {err}"
    return json.loads(out)


def h_block(h):
    return 12 * h * h + 13 * h


for name, nl, hid in (("cpu-gpt-tiny-b4", 4, 256), ("cpu-gpt-l8h16-b2", 8, 512)):
    b = sim.inspect_json(os.path.join(T, name))["blocks"]
    check(f"{name}: {nl} blocks of (12 h^2 + 13 h) x 4 B, h = {hid}",
          b["count"] == nl and b["param_bytes"] == h_block(hid) * 4, b)
_, out, _ = sim.run("inspect", os.path.join(T, "cpu-gpt-tiny-b4"))
check("gpt-tiny text: the blocks line", re.search(r"^blocks     4 blocks of .* layers, L[0-9]*-L[0-9]* the first", out, re.M))
check("resmlp: 8 blocks", sim.inspect_json(os.path.join(T, "cpu-resmlp-b64"))["blocks"]["count"] == 8)
_, out, _ = sim.run("inspect", os.path.join(T, "cpu-dlrm-tiny-b4"))
check("dlrm-tiny: no block, said so", sim.inspect_json(os.path.join(T, "cpu-dlrm-tiny-b4"))["blocks"] is None and
      re.search(r"^blocks     none", out, re.M))

# ---- --blocks N -----------------------------------------------------------------------------------
S, W = os.path.join(T, "cpu-gpt-l2-b4"), os.path.join(T, "cpu-gpt-l8-b4")


def s8():
    s, w, h = cli_json("inspect", S, "--blocks", 8), sim.inspect_json(W), 256
    whole, part = (json.load(open(os.path.join(x, "meta.json")))["parameters"] for x in (W, S))
    return s["param_count"] == whole == part + 6 * h_block(h) and s["blocks"]["count"] == 8 and \
        s["layers"] == w["layers"] == 69


guard("inspect --blocks 8: the 8-block model's parameters (meta.json; 2-block + 6 (12 h^2 + 13 h))", s8)


def bench_ok(*argv):
    """bench/blocks.py's comparison (its table printed): True when every plan is within its bounds."""
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        rc = bench.main(["blocks.py", bin_, *argv])
    print(buf.getvalue(), end="")
    return rc == 0


guard("simulate --blocks 8 of the 2-block trace: 1 GPU, TP, FSDP, ZeRO-3, DP x TP within 3 %, memory and traffic equal",
      lambda: bench_ok(W, S, "8", "--tol", "3", "--mem-tol", "0.01", "--worst-tol", "0.01", "--flags", "--calibrate",
                       "--plans", "--gpus 1;--gpus 2 --tp 2;--gpus 4 --fsdp;--gpus 4 --zero 3;--gpus 4 --dp 2 --tp 2"))
# the time-balanced cut evens out the traces' own differences (the 8-block trace's blocks take 22 to 33 ms on
# its CPU); the block cut, the default, puts the same blocks on each stage in both (below)
guard("simulate --blocks 8 of the 2-block trace: PP 2 and 4 (time-balanced cut) within 3 %, the model's state over the "
      "stages equal", lambda: bench_ok(W, S, "8", "--tol", "3", "--mem-tol", "0.01", "--worst-tol", "100", "--flags",
                                       "--calibrate", "--plans", "--gpus 2 --pp 2 --pp-cut time;--gpus 4 --pp 4 --pp-cut time"))
# Block cuts (Megatron: num_layers / P blocks per stage, the embedding's layers L0-L2 on the first, the final
# norm and head L67-L68 on the last): the slice at --blocks 8 and the real 8-block trace cut at the same layers,
# with the same parameters on each stage (issue 41: +1.5 % apart under the time-balanced cut)
for P in (2, 4):
    def cut(P=P):
        s, w = sim.sim_json(S, "--blocks", 8, "--gpus", P, "--pp", P), sim.sim_json(W, "--gpus", P, "--pp", P)
        k = 8 // P
        want = [(0 if j == 0 else 3 + 8 * k * j, 3 + 8 * k * (j + 1) - 1 if j < P - 1 else 68) for j in range(P)]
        return all([(x["layer_first"], x["layer_last"]) for x in d["stages"]] == want and
                   d["pipeline_cut"]["kind"] == "blocks" and d["pipeline_cut"]["blocks_per_chunk"] == [k] * P
                   for d in (s, w)) and [x["param_bytes"] for x in s["stages"]] == [x["param_bytes"] for x in w["stages"]]
    guard(f"--pp {P} cuts at blocks: layers 3 + 8 x 8/{P} per stage, the same in the slice and the 8-block trace", cut)
guard("--blocks 8 of the 8-block trace is that trace",
      lambda: bench_ok(W, W, "8", "--tol", "1e-4", "--mem-tol", "1e-4", "--worst-tol", "1e-4", "--plans", "--gpus 1;--gpus 4 --pp 4"))


def mem(trace, *args):
    d = sim.sim_json(trace, *args)
    return [g["mem_bytes"][k] for g in d["gpus"] for k in ("params", "grads", "optimizer", "activations")]


guard("--blocks 2 of the 8-block trace: the 2-block model's memory per GPU",
      lambda: all(mem(W, "--blocks", 2, *plan) == mem(S, *plan) for plan in (["--gpus", 1], ["--gpus", 4, "--fsdp"])))
# the whole state follows --blocks (issue 43 item 5): a foreach / fused optimizer's state (one op over
# every parameter) goes with each parameter's block, and a cut takes the cut blocks' weights,
# gradients and state with it; inspect and simulate count the same bytes.
L, L8 = os.path.join(T, "h100-llama3-8b-2blocks-b1-bf16"), os.path.join(T, "h100-llama3-8b-8blocks-b1-bf16")
if os.path.isdir(L) and os.path.isdir(L8):
    def llama32():
        i = cli_json("inspect", L, "--blocks", 32)
        g = sim.sim_json(L, "--gpus", 1, "--blocks", 32)["gpus"][0]["mem_bytes"]
        b, P = i["tensor_bytes"], i["param_count"]
        return abs(b["weight"] / (2 * P) - 1) < 1e-6 and abs(b["optimizer_state"] / (2 * 2 * P) - 1) < 1e-6 and \
            (g["params"], g["grads"], g["optimizer"]) == (b["weight"], b["gradient"], b["optimizer_state"])
    guard("llama3-8b 2 -> 32 blocks: bf16 Adam state 2 x 2 B x P, in inspect and simulate alike", llama32)

    def llama_fsdp():
        a = sim.sim_json(L, "--blocks", 8, "--gpus", 8, "--fsdp")["gpus"][0]["mem_bytes"]
        b = sim.sim_json(L8, "--gpus", 8, "--fsdp")["gpus"][0]["mem_bytes"]
        return all(abs(a[k] / b[k] - 1) < 1e-6 for k in ("params", "grads", "optimizer"))
    guard("llama3-8b: --gpus 8 --fsdp --blocks 8 of the 2-block trace holds the 8-block trace's state per GPU", llama_fsdp)


def l8h16_one():
    G = os.path.join(T, "cpu-gpt-l8h16-b2")
    w, c, h = sim.inspect_json(G)["param_bytes"], cli_json("inspect", G, "--blocks", 1)["tensor_bytes"], 512
    return c["weight"] == c["gradient"] == w - 7 * h_block(h) * 4 == 29915136 and \
        abs(c["optimizer_state"] / (2 * c["weight"]) - 1) < 1e-4


guard("l8h16 --blocks 1: the 1-block model (traced - 7 (12 h^2 + 13 h) x 4 B), its gradients and Adam state 2 x", l8h16_one)


def triosim():
    R = os.path.join(T, "triosim-csv-resnet50-h100-bs128")
    full, cut = sim.inspect_json(R), cli_json("inspect", R, "--blocks", 2)
    g = sim.sim_json(R, "--gpus", 1, "--blocks", 2)["gpus"][0]["mem_bytes"]
    b = cut["tensor_bytes"]
    return cut["param_bytes"] == full["param_bytes"] - 3 * full["blocks"]["param_bytes"] and \
        b["optimizer_state"] == 2 * b["weight"] == 2 * g["params"] == g["optimizer"]


guard("TrioSim CSV (resnet50) --blocks 2 of 5: params minus 3 blocks', state 2 x, inspect = simulate", triosim)


def refused(name, want, *args):
    rc, _, err = sim.run(*args)
    check(f"{name}: exit 2, one line naming --blocks", rc == 2 and len(err.splitlines()) == 1 and
          re.search("--blocks.*" + want, err), f"exit {rc}: {err}")


refused("no repeating block (simulate)", "no repeating block", "simulate", os.path.join(T, "cpu-dlrm-tiny-b4"), "--gpus", 1,
        "--blocks", 4)
refused("no repeating block (inspect)", "no repeating block", "inspect", os.path.join(T, "cpu-dlrm-tiny-b4"), "--blocks", 4)
refused("one traced block: no chain to copy", "no repeating block.*one transformer block", "simulate",
        os.path.join(T, "h100-mixtral-8x7b-1block-b1-bf16"), "--gpus", 1, "--blocks", 4)
refused("--blocks 0", "1..1024", "simulate", S, "--gpus", 1, "--blocks", 0)
refused("--blocks 1025", "1..1024", "simulate", S, "--gpus", 1, "--blocks", 1025)
refused("--blocks x", "1..1024", "inspect", S, "--blocks", "x")

# ---- pipeline cuts at blocks (issue 41 item 6) -------------------------------------------------------
G = os.path.join(T, "cpu-gpt-l8h16-b2")  # 8 blocks, h = 512, sequence 256, batch 2
# At the block boundary the block's output crosses: s x b/M x h x 4 = 256 x 1 x 512 x 4 = 524,288 B per
# micro-batch. The trace's ET gives block 3's freed fc2 output id to the layer norm output block 4's Q/K/V
# read, so that tensor seems to cross too (1,048,576 B); the cut inside a block that the time-balanced
# partitioner chose sent 5,242,880 B.


def g2():
    d, one = sim.sim_json(G, "--gpus", 2, "--pp", 2), 256 * 1 * 512 * 4
    s = d["stages"]
    return one <= s[0]["boundary_bytes"] <= 2 * one and d["pipeline_cut"]["text"] == "blocks 4+4" and \
        (s[0]["layer_last"], s[1]["layer_first"]) == (34, 35)


guard("gpt-l8h16 --pp 2: cut 4+4 after layer 34, the block output crossing (at most the ET's aliased twin too)", g2)


def gv():
    d = sim.sim_json(G, "--gpus", 2, "--pp", 2, "--vpp", 2, "--micro-batches", 2)
    return d["pipeline_cut"]["blocks_per_chunk"] == [2, 2, 2, 2] and \
        [(x["layer_first"], x["layer_last"]) for x in d["stages"]] == [(0, 3 + 8 * 6 - 1), (3 + 8 * 2, 68)]


guard("gpt-l8h16 --pp 2 --vpp 2: four chunks of 2 blocks, chunk c on stage c mod 2", gv)
_, out, _ = sim.run("simulate", G, "--gpus", 3, "--pp", 3, "--micro-batches", 2, "--pp-layers", "2,3,3")
check("--pp-layers 2,3,3: the cut named in the text", "cut: blocks 2+3+3 (--pp-layers)" in out)
_, out, _ = sim.run("simulate", G, "--gpus", 3, "--pp", 3, "--micro-batches", 2)
check("8 blocks over --pp 3: time-balanced, with a warning that Megatron refuses",
      "cut: time-balanced" in out and re.search(r"^warning .*8 blocks do not divide.*Megatron", out, re.M))
with tempfile.TemporaryDirectory() as tmp:
    _, out, _ = sim.run("simulate", os.path.join(T, "cpu-resnet18-b4"), "--gpus", 2, "--pp", 2, "--html", f"{tmp}/r.html")
    html = open(f"{tmp}/r.html").read() if os.path.exists(f"{tmp}/r.html") else ""
check("ResNet-18 (2 alike residual blocks of 41 layers): time-balanced by default, in text and HTML",
      "cut: time-balanced" in out and "cut: time-balanced" in html)


def pp_refused(name, want, *args, trace=G):
    rc, _, err = sim.run("simulate", trace, "--micro-batches", 2, *args)
    check(f"{name}: exit 2, one line", rc == 2 and len(err.splitlines()) == 1 and re.search(want, err), f"exit {rc}: {err}")


pp_refused("--pp-cut blocks over 3 stages of 8 blocks", "8 blocks do not divide into --pp 3.*Megatron refuses", "--gpus", 3,
           "--pp", 3, "--pp-cut", "blocks")
pp_refused("--pp-layers adding up to 7", "--pp-layers adds up to 7 blocks; the trace has 8", "--gpus", 3, "--pp", 3,
           "--pp-layers", "2,2,3")
pp_refused("--pp-layers of 2 entries for 3 stages", "--pp-layers has 2 entries", "--gpus", 3, "--pp", 3, "--pp-layers", "4,4")
pp_refused("--pp-cut blocks on a trace whose block is not the model's", "2 blocks do not divide into --pp 4", "--gpus", 4,
           "--pp", 4, "--pp-cut", "blocks", trace=os.path.join(T, "cpu-resnet18-b4"))
print(sim.summary())
print(f"{check.fails} check(s) failed" if check.fails else "all passed")
sys.exit(1 if check.fails else 0)
PY
