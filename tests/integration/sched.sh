#!/usr/bin/env bash
# Integration: pipeline schedules and activation recomputation on this project's CPU traces:
# interleaved 1F1B (--vpp) shrinks ResNet-18's bubble and sends along the chunk order; --recompute
# adds the re-run forward to a one-GPU step and lowers the activations; the summary names both;
# compare lists them (--recompute-modes, --vpp-sizes, --plans vpp=/recompute=); bad input is one
# line naming the flag, exit 2. Interleaved chunks at block cuts hold equal blocks (Megatron's
# num_layers / (P V)), and GPU 0's bubble is (P-1) t_c + M (T_max - T_0): the interleaved schedule's
# (P-1)/V of a stage's f+b plus the wait for the stage the end work (embedding, head, loss) slows.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
# c.sim runs in this process over libmitosis (libsim.bash, libsim.py; issue 47: each trace read once); c.run
# is the CLI
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root/traces" "$(dirname "$0")" <<'EOF'
import json, sys
sys.path.insert(0, sys.argv[3])
from simcheck import Checker, rel

bin_, traces = sys.argv[1:3]
c = Checker(bin_)
rn, gpt = f"{traces}/cpu-resnet18-b8", f"{traces}/cpu-gpt-tiny-b8"

# interleaved 1F1B on ResNet-18: P = 4, M = 8
one = c.sim(rn, "--pp", 4, "--micro-batches", 8)
il = c.sim(rn, "--pp", 4, "--micro-batches", 8, "--vpp", 2)
if one and il:
    c.check_breakdown("resnet18 pp=4 M=8 vpp=2", il)
    c.check("resnet18 pp=4 M=8: interleaving 2 chunks per GPU shortens the step", il["step_ms"] < one["step_ms"],
            (il["step_ms"], one["step_ms"]))
    bub = lambda d: max(g["bubble_ms"] + g["idle_ms"] for g in d["gpus"])
    c.check("resnet18 pp=4 M=8: and its largest bubble", bub(il) < bub(one), (bub(il), bub(one)))
    c.check("resnet18 vpp=2: 7 chunk boundaries, each crossed forward and back per micro-batch",
            il["simulation"]["sends"] == 2 * 7 * 8, il["simulation"])
    c.check("resnet18 vpp=2: the JSON names the schedule", il["schedule"] == "interleaved 2" and
            il["plan"]["vpp"] == 2 and one["schedule"] == "1f1b" and one["plan"]["vpp"] == 1,
            (il["schedule"], one["schedule"]))
rc, out, err = c.run("simulate", rn, "--pp", 2, "--micro-batches", 4, "--vpp", 2)
c.check("resnet18 vpp=2: the text names the schedule", rc == 0 and "pipeline: interleaved 2, 4 micro-batches" in out,
        out[:600])

# the timeline names the chunks and sends the last stage's output to stage 0
import os, tempfile
tl = os.path.join(tempfile.mkdtemp(), "tl.json")
rc, out, err = c.run("simulate", gpt, "--pp", 2, "--micro-batches", 4, "--vpp", 2, "--timeline", tl)
if c.check("gpt-tiny vpp=2 --timeline exits 0", rc == 0, err):
    ev = json.load(open(tl))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    names = {e.get("name", "") for e in ev}
    c.check("timeline: chunk 1 (stage 1) sends to GPU 0, chunk 2 waits for it",
            "send activations mb 0 (chunk 1) to GPU 0" in names and
            "wait for activations mb 1 (chunk 2) from GPU 1" in names, sorted(n for n in names if "chunk" in n)[:8])

# Interleaved 1F1B at block cuts (issue 41 item 6): Megatron's num_layers / (P V) blocks per model chunk, the
# embedding on chunk 0, head and loss on chunk P V - 1. The bubble: Narayanan et al. 2021 (Megatron-LM, interleaved
# schedule) idle (P-1) x t_c per GPU, t_c a model chunk's forward + backward per micro-batch, for equal stages; the
# end chunks' extra work makes the last stage the slowest, T_max = max over stages of its chunks' f+b per
# micro-batch, and in the steady state every other stage waits T_max - T_s per micro-batch: GPU 0's bubble =
# (P-1) t_c + M (T_max - T_0). On the H100 trace (its blocks alike to 1 %), chunk and stage times taken from the
# timeline's forward and backward ops.
h8 = f"{traces}/h100-gpt-l8h16-b2"
P, V, M, NB = 4, 2, 8, 16
tl = os.path.join(tempfile.mkdtemp(), "il.json")
d = c.sim(h8, "--gpus", P, "--pp", P, "--vpp", V, "--micro-batches", M, "--blocks", NB, "--batch", M,
          "--host-model", "none", "--timeline", tl)
if d:
    K = P * V
    c.check(f"h100 l8h16 --pp {P} --vpp {V} --blocks {NB}: {K} model chunks of {NB // K} blocks each",
            d["pipeline_cut"]["kind"] == "blocks" and d["pipeline_cut"]["blocks_per_chunk"] == [NB // K] * K,
            d["pipeline_cut"])
    per = d["stages"][2]["layer_first"] - d["stages"][1]["layer_first"]  # layers per chunk: chunks 1, 2 start them
    first = d["stages"][1]["layer_first"] - per  # the first block's first layer
    ev = json.load(open(tl))
    ev = ev["traceEvents"] if isinstance(ev, dict) else ev
    stage = {e["pid"]: int(e["args"]["name"].split("stage ")[1].split(",")[0]) for e in ev
             if e.get("name") == "process_name" and "stage " in e["args"]["name"]}
    fb = [0.0] * K  # per chunk: forward + backward ms per micro-batch
    for e in ev:
        a = e.get("args") or {}
        if e.get("ph") == "X" and e.get("tid") == 1 and e.get("pid") in stage and a.get("phase") in ("forward", "backward") \
                and a.get("micro_batch", -1) >= 0:
            fb[min(max((a["layer_index"] - first) // per, 0), K - 1)] += e["dur"] / 1000 / M
    T = [sum(fb[s::P]) for s in range(P)]
    t_c = sum(fb[1:K - 1]) / (K - 2)  # the chunks without end work
    want = (P - 1) * t_c + M * (max(T) - T[0])
    g0 = [g for g in d["gpus"] if g["stage"] == 0][0]
    got = g0["bubble_ms"] + g0["idle_ms"]
    c.check(f"h100 l8h16 --pp {P} --vpp {V} M={M}: GPU 0's bubble = (P-1) t_c + M (T_max - T_0) within 5 %",
            abs(got - want) <= 0.05 * want, f"bubble {got:.3f} ms, closed form {want:.3f} (t_c {t_c:.4f}, stages {T})")
    c.check("h100 l8h16: the middle chunks alike (equal blocks) within 2 %", max(fb[1:K - 1]) <= 1.02 * min(fb[1:K - 1]),
            fb)

# recomputation on one GPU: the step grows by exactly the re-run forward, the activations drop
runs = {m: c.sim(gpt, "--gpus", 1, "--recompute", m) for m in ("none", "selective", "full")}
if all(runs.values()):
    for m in ("selective", "full"):
        d, n = runs[m], runs["none"]
        c.check(f"gpt-tiny --recompute {m}: the step grows by the recomputed forward",
                d["stages"][0]["recompute_ms"] > 0 and
                abs(d["step_ms"] - n["step_ms"] - d["stages"][0]["recompute_ms"]) < 1e-6,
                (d["step_ms"], n["step_ms"], d["stages"][0]["recompute_ms"]))
        c.check(f"gpt-tiny --recompute {m}: the JSON names it", d["recompute"] == m and d["plan"]["recompute"] == m)
    act = {m: runs[m]["gpus"][0]["mem_bytes"]["activations"] for m in runs}
    c.check("gpt-tiny: activations full < selective < none", act["full"] < act["selective"] < act["none"], act)
    # Megatron's full recompute re-runs the transformer blocks only, not the embedding, head and loss
    rc, out, err = c.run("inspect", gpt)
    lay = {}  # layer -> forward ms, from inspect's layer table (3 decimals)
    for l in out.splitlines():
        f = l.split()
        if len(f) >= 5 and f[0].startswith("L") and ":" in f[0] and f[0][1:f[0].index(":")].isdigit():
            lay[int(f[0][1:f[0].index(":")])] = float(f[2])
    rc, out, err = c.run("inspect", gpt, "--json")
    blk = json.loads(out)["blocks"] if rc == 0 else None
    if c.check("gpt-tiny: 4 blocks of 8 layers from L3", blk and blk["count"] == 4 and blk["first_layer"] == 3 and
               blk["layers"] == 8, blk):
        F, P = blk["first_layer"], blk["layers"]
        bfwd = lambda j: sum(lay[F + j * P + i] for i in range(P))
        c.check("gpt-tiny --recompute full: re-runs the 4 blocks' forward (94.6 ms), not the embedding, head, loss",
                abs(runs["full"]["stages"][0]["recompute_ms"] - 4 * blk["fwd_ms"]) < 1e-3, (runs["full"]["stages"][0], blk))
        ev = c.sim(gpt, "--gpus", 1, "--recompute", "every:2")
        if ev:
            c.check("gpt-tiny --recompute every:2: re-runs blocks 1 and 3 (torchtitan: every K-th block)",
                    abs(ev["stages"][0]["recompute_ms"] - bfwd(1) - bfwd(3)) < 0.02, (ev["stages"][0], bfwd(1), bfwd(3)))
            k = lambda d: d["stages"][0]["activation_bytes_per_micro_batch"]
            c.check("gpt-tiny every:2: kept = (none + full) / 2 (half the blocks keep only their input)",
                    k(ev) == (k(runs["none"]) + k(runs["full"])) / 2, (k(ev), k(runs["none"]), k(runs["full"])))
            c.check("gpt-tiny every:2: the JSON names it", ev["recompute"] == "every:2" and ev["plan"]["recompute"] == "every:2")
        rc, out, err = c.run("inspect", gpt, "--ops")
        mm = sum(float(f[3]) for f in (l.split() for l in out.splitlines()) if len(f) >= 7 and f[1] == "forward" and
                 f[2].isdigit() and F <= int(f[2]) < F + 4 * P and f[-1] == "aten::linear")
        sv = c.sim(gpt, "--gpus", 1, "--recompute", "ops:save=mm")
        nothing = c.sim(gpt, "--gpus", 1, "--recompute", "ops:save=")
        if sv and nothing:
            c.check("gpt-tiny --recompute ops:save=mm: re-runs the blocks but their linears (full - linears' forward)",
                    abs(sv["stages"][0]["recompute_ms"] - (runs["full"]["stages"][0]["recompute_ms"] - mm)) < 0.05,
                    (sv["stages"][0]["recompute_ms"], runs["full"]["stages"][0]["recompute_ms"], mm))
            c.check("gpt-tiny ops:save=mm keeps more than full, less than none",
                    k(runs["full"]) < k(sv) < k(runs["none"]), (k(sv), k(runs["full"])))
            c.check("gpt-tiny ops:save= (nothing saved) is full", nothing["stages"][0] == runs["full"]["stages"][0])
rc, out, err = c.run("simulate", gpt, "--gpus", 1, "--recompute", "selective")
c.check("gpt-tiny --recompute selective: the text names it", rc == 0 and "recompute: selective" in out, out[:800])
c.check("gpt-tiny (eager attention) --recompute selective: no fused-attention warning", "are fused" not in out, out[:800])
llama = f"{traces}/h100-llama3-8b-2blocks-b1-bf16"
if os.path.isdir(llama):
    rc, out, err = c.run("simulate", llama, "--gpus", 1, "--recompute", "selective")
    c.check("llama3-8b (SDPA) --recompute selective: says the fused attention leaves little to drop",
            rc == 0 and "--recompute selective: the trace's 2 attention cores are fused" in out, out[-600:])
    # torchtitan's op-level policy (save SDPA / flash attention and every other aten.mm: wq, wv, w1, w2 of
    # each block) keeps, beyond full's block inputs, per block and token: wq's output 2h, wv's 2 kv, the
    # attention output 2h and its fp32 log-sum-exp 4 x heads, w1's 2f, w2's 2h (bf16), and flash
    # attention's philox seed and offset (16 B a block); the inputs of the saved ops are made again.
    m = json.load(open(f"{llama}/meta.json"))
    hc, L = m["hf_config"], 2
    h, f, heads = hc["hidden_size"], hc["intermediate_size"], hc["num_attention_heads"]
    kv = hc["num_key_value_heads"] * hc.get("head_dim", h // heads)
    tok = m["seq_len"] * m["batch"]
    op, fl = (c.sim(llama, "--gpus", 1, "--recompute", r) for r in ("ops:save=attn,mm/2", "full"))
    if op and fl:
        k = lambda d: d["stages"][0]["activation_bytes_per_micro_batch"]
        want = L * (tok * (2 * h + 2 * kv + 2 * h + 4 * heads + 2 * f + 2 * h) + 16)
        c.check("llama3-8b ops:save=attn,mm/2 keeps full's + L s b (6h + 2kv + 2f + 4 heads) bytes (torchtitan's op SAC)",
                k(op) - k(fl) == want, (k(op), k(fl), want))
    # every saved tensor and backward temporary of this model grows per token (flash attention saves no s^2):
    # twice the sequence peaks where twice the batch does (the loss's [tokens, vocab] fp32 gradient included)
    s2, b2 = (c.sim(llama, "--gpus", 1, *a) for a in (("--seq", 2 * m["seq_len"]), ("--batch", 2 * m["batch"])))
    if s2 and b2:
        pk = lambda d: d["gpus"][0]["peak_mem_bytes"]
        c.check("llama3-8b --seq 2s peaks as --batch 2b", abs(pk(s2) - pk(b2)) <= 1e-6 * pk(b2), (pk(s2), pk(b2)))
tp = {m: c.sim(gpt, "--tp", 2, "--recompute", m) for m in ("none", "full")}
if all(tp.values()):
    c.check("gpt-tiny tp=2 --recompute full: the re-run blocks repeat their 2 forward all-reduces each (Megatron), "
            "not the embedding's and the loss's",
            tp["full"]["simulation"]["collectives"] - tp["none"]["simulation"]["collectives"] == 2 * 4,
            (tp["full"]["simulation"], tp["none"]["simulation"]))

# compare lists the new options when asked, and as before otherwise
rc, out, err = c.run("compare", gpt, "--gpus", 2, "--recompute-modes", "all", "--vpp-sizes", "1,2", "--exhaustive",
                     "--json")  # every plan the options list, none pruned
if c.check("compare --recompute-modes all --vpp-sizes 1,2 exits 0", rc == 0, err):
    labels = [r["label"] for r in json.loads(out)["rows"]]
    c.check("compare lists recompute modes and interleaved pipelines",
            any("recompute=full" in l for l in labels) and any("recompute=selective" in l for l in labels)
            and any("vpp=2" in l and "schedule=1f1b" in l for l in labels)
            and not any("vpp=2" in l and "gpipe" in l for l in labels), labels)
rc, out, err = c.run("compare", gpt, "--gpus", 2, "--vpp", 2, "--json")
if c.check("compare --vpp 2 exits 0 (the 1-GPU baseline is not interleaved)", rc == 0, err):
    labels = [r["label"] for r in json.loads(out)["rows"]]
    c.check("compare --vpp 2 interleaves the pipelined 1f1b plans only",
            all(("vpp=2" in l) == ("schedule=1f1b" in l) for l in labels), labels)
rc, out, err = c.run("compare", gpt, "--gpus", 2, "--json")
if c.check("compare (default) exits 0", rc == 0, err):
    labels = [r["label"] for r in json.loads(out)["rows"]]
    c.check("compare by default lists no recompute or interleaving", not any("vpp" in l or "recompute" in l
                                                                             for l in labels), labels)
rc, out, err = c.run("compare", gpt, "--gpus", 2, "--plans", "pp=2:mb=4:vpp=2:recompute=selective,pp=2:mb=4", "--json")
if c.check("compare --plans vpp=2:recompute=selective exits 0", rc == 0, err):
    d = json.loads(out)
    rows = {r["label"]: r for r in d["rows"]}
    c.check("compare --plans: both rows ran", len(rows) == 2 and not d.get("skipped") and
            rows["pp=2:mb=4:schedule=1f1b:vpp=2:recompute=selective"]["plan"]["vpp"] == 2, (list(rows), d.get("skipped")))

rc, out, err = c.run("compare", gpt, "--gpus", 2, "--plans", "dp=2:recompute=every:2,dp=2:recompute=ops:save=attn+mm/2:mb=2",
                     "--json")
if c.check("compare --plans recompute=every:2 / recompute=ops:save=attn+mm/2 exits 0", rc == 0, err):
    got = sorted(r["plan"]["recompute"] for r in json.loads(out)["rows"]) if "rows" in json.loads(out) else out[:300]
    c.check("compare --plans: the rows name every:2 and ops:save=attn+mm/2", got == ["every:2", "ops:save=attn+mm/2"], got)

# bad input: one line naming the flag, exit 2
c.check_bad("--vpp 2 interleaves pipeline stages: it needs --pp 2 or more", "simulate", gpt, "--gpus", 2, "--vpp", 2)
c.check_bad("--vpp 2 is interleaved 1F1B: it does not go with --schedule gpipe", "simulate", gpt, "--pp", 2,
            "--vpp", 2, "--schedule", "gpipe")
c.check_bad("--vpp 2: --micro-batches 2 is not a multiple of --pp 4", "simulate", gpt, "--pp", 4,
            "--micro-batches", 2, "--vpp", 2)
c.check_bad("--vpp 64: 4 stages x 64 chunks = 256 model chunks need at least as many layers", "simulate", gpt,
            "--pp", 4, "--vpp", 64)
c.check_bad("--vpp needs an integer", "simulate", gpt, "--pp", 2, "--vpp", 0)
c.check_bad("unknown recompute mode 'some' (--recompute takes none, selective, full, every:K or ops:save=LIST)",
            "simulate", gpt, "--gpus", 1, "--recompute", "some")
c.check_bad("--recompute every:0: every:K needs a block count K >= 1", "simulate", gpt, "--gpus", 1, "--recompute", "every:0")
c.check_bad("--recompute ops:save=mm/0: 'mm/0' is not a save rule", "simulate", gpt, "--gpus", 1, "--recompute",
            "ops:save=mm/0")
c.check_bad("cpu-resnet18-b8/kineto.json.gz has no repeating transformer block (mitosis inspect", "simulate",
            rn, "--gpus", 1, "--recompute", "ops:save=mm")
c.check_bad("has no repeating transformer block (mitosis inspect lists its layers and blocks), so there is no K-th", "simulate",
            f"{traces}/cpu-dlrm-tiny-b4", "--gpus", 1, "--recompute", "every:2")
c.check_bad("--recompute-modes: unknown mode 'most'", "compare", gpt, "--gpus", 2, "--recompute-modes", "none,most")
c.check_bad("--vpp-sizes needs up to 8 integers", "compare", gpt, "--gpus", 2, "--vpp-sizes", "1,0")
c.check_bad("--plans: plan 'pp=2:recompute=half': unknown recompute mode 'half'", "compare", gpt, "--gpus", 2, "--plans", "pp=2:recompute=half")
c.finish()
EOF
