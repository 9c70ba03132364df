#!/usr/bin/env bash
# Integration: activation memory from what backward reads (tracer/saved.h, extrapolate/acts.h) against
# Korthikanti et al. (2022), "Reducing Activation Recomputation in Large Transformer Models", per
# layer adapted to fp32 without dropout (4 bytes an element; the dropout masks and outputs gone):
#   per layer  16 s b h + a s^2 b elements: LayerNorm inputs 2, QKV input 1, Q K V 3, the output
#              projection's input 1, fc1 input 1, GeLU input 4, fc2 input 4 (x s b h), softmax output
#              (a s^2 b); the scores before it and the mask fill's are freed in forward
#   outside    the final LayerNorm's and the LM head's inputs (2 s b h), cross-entropy's log-softmax
#              output (s b V)
#   TP t       LayerNorm inputs and their outputs (QKV and fc1 inputs) whole: 4 s b h + (12 s b h +
#              a s^2 b) / t; the head's input whole, its output split by vocabulary
#   SP, CP     everything / t (/ c)
#   selective  drops the softmax output (a s^2 b a layer) for Q K V kept to re-run the core;
#              the core's own (Q K V copies, probabilities: 3 s b h + a s^2 b) live while it runs
# with s, b, h, a, L, V read from the trace's tensor shapes (softmax input [b, a, s, s], token
# embedding weight [V, h], one softmax per layer). Each within 10 %.
# Gradient accumulation (--micro-batches M, no --pp): forward and backward per micro-batch, one
# micro-batch's activations live (M = 8: the M = 1 run's / 8), the DDP all-reduce once per step
# (traffic equal to M = 1's: 2 (D-1)/D x the parameter bytes on a 2-GPU ring); --schedule gpipe
# keeps all M live.
# --seq 2s: the activations at 2s by the same closed form, within 1 %; linears x 2, eager attention's
# matmuls, mask fill and softmax x 4, the optimizer x 1 (to 0.1 %); refusals (no attention, s equal to
# the head dim, a sequence ring attention cannot balance).
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
# The runs go through libmitosis, each trace opened once (libsim.py); the refusals run the binary.
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root/traces" "$(dirname "$0")" <<'PY'
import gzip, json, sys
sys.path.insert(0, sys.argv[3])
from simcheck import Checker, rel

bin_, traces = sys.argv[1:3]
c = Checker(bin_)


def dims(tr):
    """s, b, h, a, L, V from the ET's tensor shapes."""
    nodes = json.load(gzip.open(f"{traces}/{tr}/et.json.gz"))["nodes"]
    sm = [n for n in nodes if n["name"] == "aten::softmax"]
    emb = [n for n in nodes if n["name"] == "aten::embedding"]
    b, a, s, s2 = sm[0]["input_shapes"][0]
    V, h = emb[0]["input_shapes"][0]
    assert s == s2 and all(n["input_shapes"][0] == [b, a, s, s] for n in sm)
    return s, b, h, a, len(sm), V


def act(d):
    st = d["stages"][0]
    return st["activation_bytes_per_micro_batch"], st["activation_bytes_transient"], d["gpus"][0]


for tr in ("cpu-gpt-l8h16-b2", "cpu-gpt-tiny-b8"):
    s, b, h, a, L, V = dims(tr)
    sbh, as2b = s * b * h, a * s * s * b
    full = 4 * (L * (16 * sbh + as2b) + 2 * sbh + s * b * V)
    d = c.sim(f"{traces}/{tr}", "--gpus", 1)
    kept, tr_, g = act(d)
    c.check(f"{tr}: activations {kept:.0f} B within 10 % of Korthikanti's {full} B", rel(kept, full) <= 0.10, (kept, full))
    c.check(f"{tr}: one GPU, one micro-batch: the activations are that micro-batch's",
            g["peak_live_micro_batches"] == 1 and g["mem_bytes"]["activations"] == kept, g)
    sel = c.sim(f"{traces}/{tr}", "--gpus", 1, "--recompute", "selective")
    k2, t2, _ = act(sel)
    c.check(f"{tr} --recompute selective: saves the softmax outputs, 4 L a s^2 b = {4 * L * as2b} B",
            rel(kept - k2, 4 * L * as2b) <= 0.10, (kept - k2, 4 * L * as2b))
    c.check(f"{tr} --recompute selective: one core's 4 (3 s b h + a s^2 b) live while it re-runs",
            rel(t2, 4 * (3 * sbh + as2b)) <= 0.10, (t2, 4 * (3 * sbh + as2b)))
    tp = 4 * (L * (4 * sbh + (12 * sbh + as2b) / 2) + 2 * sbh + s * b * V / 2)
    k3, _, _ = act(c.sim(f"{traces}/{tr}", "--gpus", 2, "--tp", 2))
    c.check(f"{tr} --tp 2: {k3:.0f} B within 10 % of {tp:.0f}", rel(k3, tp) <= 0.10, (k3, tp))
    k4, _, _ = act(c.sim(f"{traces}/{tr}", "--gpus", 2, "--tp", 2, "--sp"))
    c.check(f"{tr} --tp 2 --sp: {k4:.0f} B within 10 % of half", rel(k4, full / 2) <= 0.10, (k4, full / 2))
    k5, _, _ = act(c.sim(f"{traces}/{tr}", "--gpus", 2, "--cp", 2))
    c.check(f"{tr} --cp 2: {k5:.0f} B within 10 % of half", rel(k5, full / 2) <= 0.10, (k5, full / 2))

# Full recomputation as a framework's checkpoint around each block module runs it, on a pre-norm Llama
# (RMSNorm, fp32): a block keeps its input alone (4 s b h); outside the blocks the final RMSNorm keeps
# its input, its rsqrt (4 s b) and its normalised copy, the head its input (4 s b h each), the loss its
# log-softmax (4 s b V) and two scalars. A pipeline cut between blocks moves no byte: the stages' sum is
# one GPU's, full and op-level. (An RMSNorm's no-op cast shares its autograd sequence number with the
# weight's multiply; when the reader linked MulBackward0 to the cast, the norms' copies were kept.)
tr = "cpu-llama-tiny-b4"
nodes = json.load(gzip.open(f"{traces}/{tr}/et.json.gz"))["nodes"]
V, h = [n for n in nodes if n["name"] == "aten::embedding"][0]["input_shapes"][0]
b, s = [n for n in nodes if n["name"] == "aten::embedding"][0]["input_shapes"][1]
L = sum(n["name"] == "aten::softmax" for n in nodes)
want = 4 * ((L + 3) * s * b * h + s * b + s * b * V) + 8
k, _, _ = act(c.sim(f"{traces}/{tr}", "--gpus", 1, "--recompute", "full"))
c.check(f"{tr} --recompute full: {k:.0f} B kept, {L} block inputs and the head's = {want} B", k == want, (k, want))
for pol in ("full", "ops:save=mm"):
    one = act(c.sim(f"{traces}/{tr}", "--gpus", 1, "--micro-batches", 2, "--recompute", pol))[0]
    two = sum(st["activation_bytes_per_micro_batch"] for st in
              c.sim(f"{traces}/{tr}", "--gpus", 2, "--pp", 2, "--micro-batches", 2, "--recompute", pol)["stages"])
    c.check(f"{tr} --pp 2 --recompute {pol}: the stages keep one GPU's {one:.0f} B", two == one, (two, one))
# A time-balanced cut inside a block (gpt-tiny's 4 blocks in --pp 4 x --vpp 2 chunks) splits the block's
# re-run region, not the policy: the matmuls saved are counted per block, so no part of a block re-runs
# more than the whole block does (the largest region's transient bytes at most one GPU's)
tr, pol = "cpu-gpt-tiny-b8", "ops:save=attn+mm/2"
one = act(c.sim(f"{traces}/{tr}", "--gpus", 1, "--micro-batches", 8, "--recompute", pol))[1]
d = c.sim(f"{traces}/{tr}", "--gpus", 4, "--pp", 4, "--vpp", 2, "--micro-batches", 8, "--recompute", pol)
worst = max(st["activation_bytes_transient"] for st in d["stages"])
c.check(f"{tr} --pp 4 --vpp 2 --recompute {pol} ({d['pipeline_cut']['kind']} cut): a stage's transient {worst:.0f} B "
        f"<= one GPU's {one:.0f} B", d["pipeline_cut"]["kind"] == "time" and worst <= one, (worst, one))

# --seq 2s (extrapolate/seqlen.h): Korthikanti's activations at 2s; every linear's time x 2 (its FLOPs,
# 2 x tokens x in x out, follow the tokens), eager attention's matmuls, mask fill and softmax x 4 (the
# s x s scores per head), the optimizer's x 1 (parameter-sized); refusals in one line
import csv, os, tempfile
s, b, h, a, L, V = dims("cpu-gpt-tiny-b8")
gpt = f"{traces}/cpu-gpt-tiny-b8"
def korthikanti(s):
    return 4 * (L * (16 * s * b * h + a * s * s * b) + 2 * s * b * h + s * b * V)
k2, _, _ = act(c.sim(gpt, "--gpus", 1, "--seq", 2 * s))
c.check(f"--seq {2 * s}: activations {k2:.0f} B within 1 % of Korthikanti's {korthikanti(2 * s)} B at 2s",
        rel(k2, korthikanti(2 * s)) <= 0.01, (k2, korthikanti(2 * s)))
def op_times(*extra):
    with tempfile.TemporaryDirectory() as d:
        rc, _, err = c.lib.simulate_writing(gpt, ["--gpus", 1, *extra], {"csv": d})
        assert rc == 0, err
        return [(r["name"], r["phase"], float(r["dur_us"])) for r in csv.DictReader(open(os.path.join(d, "ops.csv")))]
want = {"aten::linear": 2, "aten::matmul": 4, "aten::masked_fill": 4, "aten::softmax": 4}
bad = [(n, p, x, y) for (n, p, x), (_, _, y) in zip(op_times(), op_times("--seq", 2 * s)) if x > 0 and
       ((p == "forward" and n in want and abs(y / x - want[n]) > 1e-3) or (p == "optimizer" and abs(y / x - 1) > 1e-3))]
c.check("--seq 2s: linears x 2, attention's matmuls, mask fill and softmax x 4, the optimizer x 1", not bad, bad[:4])
c.check_bad("has no attention", "simulate", f"{traces}/cpu-resnet18-b4", "--seq", 64)
c.check_bad("equals its head dim", "simulate", f"{traces}/cpu-llama-tiny-b4", "--seq", 64)
c.check_bad("multiple of 4", "simulate", gpt, "--gpus", 2, "--cp", 2, "--seq", 130)

# gradient accumulation on gpt-tiny (batch 8)
gpt = f"{traces}/cpu-gpt-tiny-b8"
one = c.sim(gpt, "--gpus", 1)
acc = c.sim(gpt, "--gpus", 1, "--micro-batches", 8)
g1, g8 = one["gpus"][0], acc["gpus"][0]
c.check("--micro-batches 8: one micro-batch live", g8["peak_live_micro_batches"] == 1, g8)
c.check("--micro-batches 8: activations = one micro-batch's (the batch's / 8)",
        rel(g8["mem_bytes"]["activations"], g1["mem_bytes"]["activations"] / 8) < 1e-9,
        (g8["mem_bytes"]["activations"], g1["mem_bytes"]["activations"]))
gp = c.sim(gpt, "--gpus", 1, "--micro-batches", 8, "--schedule", "gpipe")
c.check("--micro-batches 8 --schedule gpipe: all 8 live", gp["gpus"][0]["peak_live_micro_batches"] == 8, gp["gpus"][0])
pb = c.param_bytes(gpt)
d1, d4 = c.sim(gpt, "--gpus", 2, "--micro-batches", 1), c.sim(gpt, "--gpus", 2, "--micro-batches", 4)
t1, t4 = d1["gpus"][0]["traffic_bytes"]["allreduce"], d4["gpus"][0]["traffic_bytes"]["allreduce"]
c.check(f"DDP x 2, --micro-batches 4: one all-reduce of the gradients per step, 2 (D-1)/D x {pb} B",
        t4 == t1 and rel(t4, pb) < 1e-9, (t1, t4, pb))
c.check("DDP x 2, --micro-batches 4: the step is M x (forward + backward) + exposed sync (within 5 % of M = 1's)",
        rel(d4["step_ms"], d1["step_ms"]) < 0.05 and d4["gpus"][0]["peak_live_micro_batches"] == 1,
        (d1["step_ms"], d4["step_ms"]))
c.finish()
PY
