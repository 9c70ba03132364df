"""Issue 41's reproductions 1, 2, 3, 4, 5 and 8 (and the small ones after them): each plan's bytes against a closed form from the
framework it follows (docs/memory.md's table), not from mitosis's own output. Usage: exact41.py MITOSIS
  1  ZeRO-2 with M micro-batches reduce-scatters every micro-batch's gradients (DeepSpeed's stage 2
     reduces outside accumulation boundaries too) and keeps 1/n of them: dp traffic (M+1)(n-1)/n x P;
  2  sequence parallelism on RMSNorm blocks: reduce-scatter / all-gather pairs in place of all-reduces
     (the same bytes), the norms' weight gradients all-reduced once (Megatron);
  3  ring attention under grouped-query attention passes the KV heads' K/V (x kv_heads / heads);
  4  table-wise embedding sharding: each GPU holds its own whole tables (the 8,192-row table alone);
  5  a pipeline cut inside a MoE layer is refused in one line (exit 2), with or without --ep;
  8  ZeRO-3's largest gathered unit is one unit's own parameters (no stray norm weight, no stray batch
     norm on ResNet-18); units held from the forward are counted once; Llama-3-8B's --blocks 32 parameter bytes printed in
     full (16,060,522,496 B, not 10 digits' 16,060,522,500);
  -  --blocks copies chain and (item 4) no tensor-id aliasing: a pipeline cut between blocks, copied or
     traced, GPT or RMSNorm Llama, sends one block-boundary activation per micro-batch (B/M x S x h x bytes).
"""
import json
import os
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
BIN = os.path.abspath(sys.argv[1])
FAILS = []


def sim(trace, *args):
    r = subprocess.run([BIN, "simulate", os.path.join(ROOT, "traces", trace), *args, "--json"], capture_output=True,
                       text=True, timeout=300)
    if r.returncode != 0:
        raise AssertionError(f"{trace} {' '.join(args)}: exit {r.returncode}: {r.stderr.strip()[:300]}")
    return json.loads(r.stdout)


def meta(trace):
    with open(os.path.join(ROOT, "traces", trace, "meta.json")) as f:
        return json.load(f)


def expect(what, got, want, tol=0.5):
    if abs(got - want) > tol:
        FAILS.append(f"{what}: {got}, closed form {want}")


# 1. ZeRO-2 with micro-batches: P = the parameter bytes (fp32: 4 x meta.json's parameters)
P = 4 * meta("cpu-gpt-tiny-b8")["parameters"]
d = sim("cpu-gpt-tiny-b8", "--gpus", "4", "--dp", "4", "--zero", "2", "--micro-batches", "4")
expect("1a zero-2 M=4 dp traffic", d["mesh"]["traffic_bytes"]["dp"], (4 + 1) * 3 / 4 * P)
expect("1a zero-2 grads per GPU", d["gpus"][0]["mem_bytes"]["grads"], P / 4)
d = sim("cpu-gpt-l8h16-b2", "--gpus", "16", "--dp", "2", "--pp", "4", "--cp", "2", "--zero", "2",
        "--micro-batches", "2")
stage = {}
for g in d["gpus"]:  # unsharded gradients of each stage = its shard x n (n = dp x cp = 4)
    stage.setdefault(g["stage"], g["mem_bytes"]["grads"] * 4)
n = 4
want = sum((2 + 1) * (n - 1) / n * v for v in stage.values()) / len(stage)
expect("1b zero-2 pp4 cp2 M=2 dp+cp traffic", d["mesh"]["traffic_bytes"]["dp+cp"], want, 8 * len(stage))
expect("1b against the issue's bytes", d["mesh"]["traffic_bytes"]["dp+cp"], 75914496, 8)

# 2. SP on RMSNorm blocks (Megatron): each forward all-reduce of the residual stream X = [B, S, h] becomes a
# reduce-scatter + all-gather (the same bytes), backward likewise; the norms' weight gradients (replicated,
# their inputs split by sequence) all-reduced once. Per GPU, T-way ring: 2(T-1)/T x (per layer 4 X, the
# vocabulary embedding's and the LM head's input gradient 2 X, cross-entropy's 3 statistics of [B S] fp32)
# + with --sp 2(T-1)/T x the 2L+1 norm weights.
def tp_closed(m, B, T, itemsize, sp):
    X = B * m["seq_len"] * m["hidden"] * itemsize
    ar = 2 * (T - 1) / T
    return ar * ((4 * m["layers"] + 2) * X + 3 * B * m["seq_len"] * 4 + (sp * (2 * m["layers"] + 1) * m["hidden"] * itemsize))


m = meta("cpu-llama-tiny-b4")
for sp in (0, 1):
    d = sim("cpu-llama-tiny-b4", "--gpus", "4", "--dp", "2", "--tp", "2", "--fsdp", *(["--sp"] if sp else []))
    expect(f"2 llama-tiny tp traffic (sp {sp})", d["mesh"]["traffic_bytes"]["tp"], tp_closed(m, d["plan"]["replica_batch"], 2, 4, sp))
expect("2 against the issue's bytes", d["mesh"]["traffic_bytes"]["tp"], 659456)
m = meta("h100-llama3-8b-2blocks-b1-bf16")
m = dict(m, layers=2, hidden=m["hf_config"]["hidden_size"])
d = sim("h100-llama3-8b-2blocks-b1-bf16", "--gpus", "8", "--dp", "2", "--tp", "4", "--sp", "--zero", "2")
expect("2 llama3-8b 2 blocks tp traffic (sp)", d["mesh"]["traffic_bytes"]["tp"], tp_closed(m, 1, 4, 2, 1))

# 3. CP under GQA: per layer and micro-batch K and V of the KV heads: 3 rings (4 with full recompute)
m = meta("cpu-llama-tiny-b4")
d = sim("cpu-llama-tiny-b4", "--gpus", "4", "--dp", "2", "--cp", "2", "--fsdp", "--recompute", "full")
B = d["plan"]["replica_batch"]
kv = 2 * B * m["seq_len"] * m["hidden"] * 4 * m["kv_heads"] / m["heads"]
expect("3 cp traffic under GQA", d["mesh"]["traffic_bytes"]["cp"], m["layers"] * 4 * (2 - 1) / 2 * kv)

# 4. table-wise: greedy whole tables (largest first onto the least loaded GPU): the 8,192-row table alone
m = meta("cpu-dlrm-tiny-b8")
tables = sorted((r * m["emb_dim"] * 4 for r in m["table_rows"]), reverse=True)
d = sim("cpu-dlrm-tiny-b8", "--gpus", "4", "--dp", "4", "--embedding-shard", "table")
dense = 4 * m["parameters"] - sum(tables)
load = [0] * 4
for t in tables:
    load[load.index(min(load))] += t
got = sorted((g["mem_bytes"]["params"] for g in d["gpus"]), reverse=True)
for k, (a, b) in enumerate(zip(got, sorted(load, reverse=True))):
    expect(f"4 table-wise GPU {k}'s parameters (largest first)", a, dense + b)
expect("4 the worst GPU", got[0], 2281732)

# 5. a pipeline cut inside a MoE layer: refused in one line, with or without --ep
for args in (["--gpus", "2", "--pp", "2"], ["--gpus", "2", "--pp", "2", "--expert-skew", "0"]):
    r = subprocess.run([BIN, "simulate", os.path.join(ROOT, "traces", "cpu-mixtral-tiny-b4"), *args], capture_output=True,
                       text=True, timeout=300)
    lines = r.stderr.strip().splitlines()
    if r.returncode == 0:
        d = json.loads(subprocess.run([BIN, "simulate", os.path.join(ROOT, "traces", "cpu-mixtral-tiny-b4"), *args, "--json"],
                                      capture_output=True, text=True, timeout=300).stdout)
        if not all(st.get("layer_first") is not None for st in d.get("stages", [])):
            FAILS.append(f"5 {args}: accepted without its stages' layers")
    elif r.returncode != 2 or len(lines) != 1 or "MoE layer" not in lines[0]:
        FAILS.append(f"5 {args}: exit {r.returncode}, stderr {r.stderr.strip()[:200]!r} (want a one-line refusal)")

def exact8_units():
    """8a. A unit no backward op runs in (an RMSNorm's weight, ResNet-18's downsampling batch norms: their
    gradients come from a neighbour's ops) is gathered on its own (DeepSpeed and FSDP gather each module
    for its own backward): ZeRO-3 holds P/n + the largest layer, ResNet-18's 512 x 512 x 3 x 3 conv; FSDP
    never resharding (--fsdp-reshard none) holds P/n + P, each unit once."""
    P = 4 * meta("cpu-resnet18-b4")["parameters"]
    d = sim("cpu-resnet18-b4", "--gpus", "4", "--dp", "4", "--zero", "3")
    expect("8 resnet18 zero-3 params per GPU", d["gpus"][0]["mem_bytes"]["params"], P / 4 + 512 * 512 * 9 * 4)
    expect("8 resnet18 zero-3 dp traffic", d["mesh"]["traffic_bytes"]["dp"], 2 * 3 / 4 * P)
    expect("8 resnet18 zero-3 dp-rs traffic", d["mesh"]["traffic_bytes"]["dp-rs"], 3 / 4 * P)
    P = 4 * meta("cpu-llama-tiny-b4")["parameters"]
    d = sim("cpu-llama-tiny-b4", "--gpus", "4", "--dp", "4", "--fsdp", "--fsdp-units", "layer", "--fsdp-reshard", "none")
    expect("8 llama-tiny fsdp layer units reshard none params per GPU", d["gpus"][0]["mem_bytes"]["params"], P / 4 + P)


def exact8_blocks():
    """8b. --blocks 32 of Llama-3-8B's 2-block slice: every parameter byte printed, as the published
    model's count from its config (L blocks of q, k, v, o at GQA widths, the SwiGLU MLP and two RMSNorms;
    untied embedding and LM head; the final norm): 8,030,261,248 parameters, 16,060,522,496 B in bf16
    (10 digits printed 16,060,522,500); DDP over n GPUs sends 2(n-1)/n of it."""
    c = meta("h100-llama3-8b-2blocks-b1-bf16")["hf_config"]
    h, kv = c["hidden_size"], c["num_key_value_heads"] * c["head_dim"]
    block = 2 * h * h + 2 * h * kv + 3 * h * c["intermediate_size"] + 2 * h
    P = 2 * (32 * block + 2 * c["vocab_size"] * h + h)
    expect("8 llama3-8b: parameters from the config", P / 2, 8030261248)
    for n in (8,):
        d = sim("h100-llama3-8b-2blocks-b1-bf16", "--blocks", "32", "--gpus", str(n), "--dp", str(n))
        expect(f"8 llama3-8b --blocks 32 dp {n} params per GPU", d["gpus"][0]["mem_bytes"]["params"], P, 0)
        expect(f"8 llama3-8b --blocks 32 dp {n} grads per GPU", d["gpus"][0]["mem_bytes"]["grads"], P, 0)
        expect(f"8 llama3-8b --blocks 32 dp {n} dp traffic", d["mesh"]["traffic_bytes"]["dp"], 2 * (n - 1) / n * P, 0)


def exact_blocks_chain():
    """--blocks copies chain: copy c's input is block (k + c - 1)'s output, the head reads the last
    copy's, so a pipeline cut between blocks (copies or not) sends exactly one block-boundary activation
    forward and its gradient backward per micro-batch: per GPU (P-1)/P x M x 2 x (B/M) S h x 4 B (the
    copies read the traced blocks' outputs and the head the last traced block's: --blocks 8 of gpt-tiny
    at pp 2 sent 5 activations, 5,242,880 B)."""
    for trace, args in (("cpu-gpt-tiny-b8", ("--blocks", "8", "--gpus", "2", "--pp", "2")),
                        ("cpu-gpt-tiny-b8", ("--blocks", "6", "--gpus", "2", "--pp", "2")),
                        ("cpu-gpt-tiny-b8", ("--blocks", "16", "--gpus", "4", "--pp", "4")),
                        # 4. the Execution Trace's reused tensor ids: block 4's Q/K/V read its LayerNorm's
                        # output, not block 3's fc2 output whose id that output took (2 tensors crossed)
                        ("cpu-gpt-l8h16-b2", ("--gpus", "2", "--pp", "2")),
                        # RMSNorm blocks: the norm's weight-free pow, mean, rsqrt end the previous layer in the
                        # trace; the cut still sends only the residual stream (not it and the normalised copy:
                        # 131,072 B), and the model-level RoPE cos/sin (made from positions alone) is made on
                        # each stage, as Megatron does, not sent (+2,097,152 B on Llama-3-8B)
                        ("cpu-llama-tiny-b4", ("--gpus", "2", "--pp", "2")),
                        ("h100-llama3-8b-2blocks-b1-bf16", ("--gpus", "2", "--pp", "2", "--micro-batches", "1"))):
        m, d = meta(trace), sim(trace, *args)
        P, M = len(d["stages"]), d["plan"]["micro_batches"]
        h = m.get("hidden") or m["hf_config"]["hidden_size"]
        act = d["plan"]["replica_batch"] // M * m["seq_len"] * h * {"fp32": 4, "bf16": 2}[m["dtype"]]
        if d["pipeline_cut"]["kind"] != "blocks":
            FAILS.append(f"{trace} {' '.join(args)}: cut {d['pipeline_cut']['text']}, want block boundaries")
        expect(f"--blocks chain {trace} {' '.join(args)} pp traffic", d["mesh"]["traffic_bytes"]["pp"],
               (P - 1) / P * M * 2 * act)
    # full recomputation keeps each block's input (Megatron's checkpointed layer input, s b h): 4 more
    # blocks keep 4 more inputs (the copies read the traced blocks' inputs: +0 B)
    m, kept = meta("cpu-gpt-tiny-b8"), []
    for n in (4, 8):
        d = sim("cpu-gpt-tiny-b8", "--blocks", str(n), "--gpus", "1", "--recompute", "full")
        kept.append(d["stages"][0]["activation_bytes_per_micro_batch"])
    expect("--blocks 8 - 4 --recompute full kept inputs", kept[1] - kept[0],
           4 * m["batch"] * m["seq_len"] * m["hidden"] * 4)


# 8. ZeRO-3: params = P/n + the largest unit; llama-tiny's is the 1024 x 128 embedding (no norm beside it)
m = meta("cpu-llama-tiny-b4")
P = 4 * m["parameters"]
d = sim("cpu-llama-tiny-b4", "--gpus", "2", "--dp", "2", "--zero", "3")
expect("8 zero-3 params per GPU (llama-tiny)", d["gpus"][0]["mem_bytes"]["params"], P / 2 + m["vocab"] * m["hidden"] * 4)
expect("8 zero-3 dp traffic", d["mesh"]["traffic_bytes"]["dp"], 2 * (2 - 1) / 2 * P)
exact8_units()
exact8_blocks()
exact_blocks_chain()

for f in FAILS:
    print("FAIL " + f)
print(f"exact41: {len(FAILS)} failures")
sys.exit(1 if FAILS else 0)
