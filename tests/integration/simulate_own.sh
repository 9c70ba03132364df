#!/usr/bin/env bash
# Integration: `mitosis simulate` on this project's CPU traces (traces/, always present):
# N=1 equals the trace, tensor parallelism on the gpt-tiny transformer, pipeline parallelism
# on resnet18 with 4 micro-batches, --batch rescaling, the per-GPU time identity.
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



def outermost_ms(trace_dir):
    """The traced step from the Kineto file alone (not mitosis's reader): the summed durations of
    the outermost cpu_op events of the last ProfilerStep, on its thread (a CPU trace's op times)."""
    import gzip
    ev = [e for e in json.load(gzip.open(f"{trace_dir}/kineto.json.gz"))["traceEvents"] if e.get("ph") == "X"]
    st = [e for e in ev if e["name"].startswith("ProfilerStep#")][-1]
    ops = sorted((e for e in ev if e.get("cat") == "cpu_op" and e.get("tid") == st.get("tid")
                  and st["ts"] <= e["ts"] <= st["ts"] + st["dur"]), key=lambda e: (e["ts"], -e["dur"]))
    total, end = 0.0, -1.0
    for e in ops:
        if e["ts"] >= end:
            total, end = total + e["dur"], e["ts"] + e["dur"]
    return total / 1e3


single = {}
for name, tr in (("resnet18", rn), ("gpt-tiny", gpt)):
    rc, out, err = c.run("inspect", tr, "--json")
    total = json.loads(out)["time_ms"]["total"]
    d = c.sim(tr, "--gpus", 1)
    if d:
        single[name] = d
        own = outermost_ms(tr)
        c.check(f"{name} N=1: step == the outermost ops' durations summed from the Kineto file == traced "
                "== inspect's total (exact: 1e-12)",
                rel(d["step_ms"], own) < 1e-12 and rel(d["step_ms"], total) < 1e-12
                and rel(d["step_ms"], d["traced_step_ms"]) < 1e-12, (d["step_ms"], own, total, d["traced_step_ms"]))
    for n in (2,):
        for args in (["--strategy", "dp"], ["--strategy", "ddp"]):
            d = c.sim(tr, "--gpus", n, *args)
            if d:
                c.check_breakdown(f"{name} N={n} {args[-1]}", d)

# Tensor parallelism on a transformer: Megatron splits, collectives, less compute per GPU
base = single.get("gpt-tiny")
prev = base["gpus"][0]["compute_ms"] if base else None
for t in (2, 4):
    d = c.sim(gpt, "--gpus", t, "--tp", t)
    if not d:
        continue
    sim = d["simulation"]
    c.check(f"gpt-tiny tp={t}: forward and backward TP collectives", sim["tp_collectives_fwd"] > 0
            and sim["tp_collectives_bwd"] > 0 and sim["tp_split_ops"] > 0, sim)
    comp = [g["compute_ms"] for g in d["gpus"]]
    c.check(f"gpt-tiny tp={t}: every rank computes the same", max(comp) == min(comp), comp)
    c.check(f"gpt-tiny tp={t}: compute per GPU drops below tp={t // 2}'s",
            prev is not None and comp[0] < prev, (comp[0], prev))
    # replicated work (layer norms, softmax, optimizer of replicated tensors) stays whole
    c.check(f"gpt-tiny tp={t}: compute per GPU stays above 1/{t} of one GPU's",
            base is not None and comp[0] > base["gpus"][0]["compute_ms"] / t)
    c.check(f"gpt-tiny tp={t}: layers report TP communication",
            any(l["comm_ms"] > 0 for l in d["layers"]))
    c.check_breakdown(f"gpt-tiny tp={t}", d)
    prev = comp[0]

# Pipeline parallelism on resnet18, 4 micro-batches
for p in (2, 4):
    for sched in ("1f1b", "gpipe"):
        d = c.sim(rn, "--gpus", p, "--pp", p, "--micro-batches", 4, "--schedule", sched)
        if not d:
            continue
        tag = f"resnet18 pp={p} {sched} M=4"
        c.check_breakdown(tag, d)
        c.check(f"{tag}: micro-batch 2 (batch 8 / 4)", d["plan"]["micro_batch"] == 2, d["plan"])
        c.check(f"{tag}: activations and their gradients cross each boundary once per micro-batch",
                d["simulation"]["sends"] == 2 * (p - 1) * 4, d["simulation"])
        st = d["stages"]
        c.check(f"{tag}: stages cover the layers in order",
                st[0]["layer_first"] == 0 and all(st[i + 1]["layer_first"] == st[i]["layer_last"] + 1
                                                  for i in range(p - 1)), st)
        peaks = [g["peak_live_micro_batches"] for g in d["gpus"]]
        if sched == "1f1b":
            c.check(f"{tag}: at most {p} micro-batches live per GPU", max(peaks) <= p, peaks)
        else:
            c.check(f"{tag}: stage 0 holds all 4 micro-batches", peaks[0] == 4, peaks)
        if single.get("resnet18"):
            c.check(f"{tag}: faster than one GPU, slower than a perfect 1/{p} split",
                    single["resnet18"]["step_ms"] / p < d["step_ms"] < single["resnet18"]["step_ms"],
                    (d["step_ms"], single["resnet18"]["step_ms"]))

# --batch rescales batch-dependent work only
dflt = c.sim(rn, "--gpus", 2, "--dp", 2)
comp = {}
for b in (8, 16, 32):
    d = c.sim(rn, "--gpus", 2, "--dp", 2, "--batch", b)
    if d:
        comp[b] = d["gpus"][0]["compute_ms"]
        c.check(f"resnet18 dp=2 --batch {b}: per-replica batch {b // 2}",
                d["plan"]["replica_batch"] == b // 2 and d["plan"]["global_batch"] == b, d["plan"])
if dflt and 16 in comp:
    c.check("resnet18 dp=2: --batch 16 (8 per replica, as traced) computes as the default",
            comp[16] == dflt["gpus"][0]["compute_ms"], (comp[16], dflt["gpus"][0]["compute_ms"]))
if len(comp) == 3:
    c.check("resnet18 dp=2: compute grows with the batch, parameter work does not shrink",
            comp[8] < comp[16] < comp[32] and comp[8] > comp[16] / 2, comp)

# The b8 traces rescaled to another traced batch land near that trace's own time
for name, src, batch, other in (("gpt-tiny", gpt, 32, "cpu-gpt-tiny-b16"),
                                ("resnet18", rn, 8, "cpu-resnet18-b4")):
    d = c.sim(src, "--gpus", 2, "--dp", 2, "--batch", batch)
    o = c.sim(f"{traces}/{other}", "--gpus", 1)
    if d and o:
        c.check(f"{name} b8 rescaled to {batch // 2} per replica: within 3% of {other}'s own time",
                rel(d["gpus"][0]["compute_ms"], o["step_ms"]) < 0.03,
                (d["gpus"][0]["compute_ms"], o["step_ms"]))

c.check_bad("does not divide over 2", "simulate", rn, "--gpus", 2, "--batch", 17)
c.check_bad("equal micro-batches", "simulate", rn, "--gpus", 2, "--pp", 2, "--micro-batches", 3)
# Kineto alone: the performance model warns (no shapes), but a refused plan is still one line
c.check_bad("pipeline of 2 stages", "simulate", f"{rn}/kineto.json.gz", "--gpus", 2, "--pp", 2)
# an Execution Trace alone has no times: refused, not simulated as a zero-compute step
c.check_bad("et.json.gz: an Execution Trace alone has no operator times", "simulate", f"{rn}/et.json.gz", "--gpus", 2)
# network flags that do not apply to the chosen model or topology: one line naming the flag
c.check_bad("--link-bw does not apply to --network photonic", "simulate", rn, "--gpus", 2, "--network", "photonic",
            "--link-bw", "1GB/s")
c.check_bad("--ports applies to --network photonic only", "simulate", rn, "--gpus", 2, "--ports", 4)
c.check_bad("--nic-bw needs a --topology with a NIC tier", "simulate", rn, "--gpus", 2, "--nic-bw", "10GB/s")
c.check_bad("bad topology 'dgx-h100:16': dgx-h100 takes no argument '16'", "simulate", rn, "--gpus", 2,
            "--topology", "dgx-h100:16")
c.check_bad("--ports applies to --network photonic only", "compare", rn, "--gpus", 2, "--ports", 4)
# sharded data parallelism: combinations that cannot mean anything, one line naming the flag
c.check_bad("--zero and --fsdp cannot be combined", "simulate", rn, "--gpus", 4, "--zero", 3, "--fsdp")
c.check_bad("--zero shards over DDP-style data parallelism, not --strategy dp", "simulate", rn, "--gpus", 4,
            "--strategy", "dp", "--zero", 1)
c.check_bad("--fsdp-shard 3 does not divide the 4 data-parallel replicas", "simulate", rn, "--gpus", 4, "--fsdp",
            "--fsdp-shard", 3)
c.check_bad("--fsdp-shard applies to --fsdp only", "simulate", rn, "--gpus", 4, "--fsdp-shard", 2)
c.check_bad("--zero shards over the data-parallel group, which has 1 rank", "simulate", rn, "--gpus", 2, "--tp", 2,
            "--zero", 2)
c.check_bad("--zero", "simulate", rn, "--gpus", 4, "--zero", 4)
c.check_bad("--dp-modes: unknown mode 'zero4'", "compare", rn, "--gpus", 4, "--dp-modes", "ddp,zero4")

# sharded data parallelism on gpt-tiny (4 replicas): per GPU, ZeRO-3 (units: layers) sends 3(N-1)/N of
# the parameter bytes (all-gather twice, reduce-scatter once), DDP 2(N-1)/N; FSDP (units: blocks + the
# root, which is not resharded after forward: gathered once) (3W - R)(N-1)/N, R = W - blocks x block's
# parameters (inspect's); memory keys add up
runs = {m: c.sim(gpt, "--gpus", 4, *m.split()) for m in ("--dp 4", "--zero 3", "--fsdp", "--zero 1")}
rc, out, _ = c.run("inspect", gpt, "--json")
blk = json.loads(out)["blocks"] if rc == 0 else None
if all(runs.values()) and blk:
    w = runs["--dp 4"]["stages"][0]["param_bytes"]
    root = w - blk["count"] * blk["param_bytes"]
    sent = {m: sum(d["gpus"][0]["traffic_bytes"].values()) for m, d in runs.items()}
    c.check("gpt-tiny ddp 4: all-reduce sends 2(N-1)/N of the parameters",
            rel(runs["--dp 4"]["gpus"][0]["traffic_bytes"]["allreduce"], 1.5 * w) < 1e-9, (sent, w))
    for m in ("--zero 3", "--zero 1"):
        c.check(f"gpt-tiny {m}: sends 1.5x DDP's bytes (3(N-1)/N of the parameters)",
                rel(sent[m], 1.5 * sent["--dp 4"]) < 1e-9, (m, sent[m], sent["--dp 4"]))
    c.check("gpt-tiny --fsdp: sends (3W - root)(N-1)/N, the root gathered once",
            0 < root < w and rel(sent["--fsdp"], 0.75 * (3 * w - root)) < 1e-9, (sent["--fsdp"], w, root))
    c.check("gpt-tiny --fsdp: 5 units, the 4 blocks and the root",
            runs["--fsdp"]["simulation"]["shard_units"] == blk["count"] + 1, runs["--fsdp"]["simulation"])
    for m, d in runs.items():
        g = d["gpus"][0]
        mb = g["mem_bytes"]
        # one micro-batch per step: the peak follows backward (activations freed as gradients and
        # backward temporaries appear, docs/memory.md), so it is at least the states held
        # throughout plus the larger of the activations and the gradients
        c.check(f"gpt-tiny {m}: the peak holds the states and the larger of activations and gradients",
                mb["peak"] >= mb["params"] + mb["optimizer"] + max(mb["activations"], mb["grads"]) - 1, mb)
    c.check("gpt-tiny --zero 3: parameters sharded (plus one layer), less than DDP's",
            runs["--zero 3"]["gpus"][0]["mem_bytes"]["params"] < runs["--dp 4"]["gpus"][0]["mem_bytes"]["params"],
            (runs["--zero 3"]["gpus"][0]["mem_bytes"], runs["--dp 4"]["gpus"][0]["mem_bytes"]))
    c.check("gpt-tiny --fsdp: the mesh and its traffic in the JSON",
            [x["name"] for x in runs["--fsdp"]["mesh"]["dims"]] == ["tp", "pp", "dp"]
            and runs["--fsdp"]["mesh"]["traffic_bytes"].get("dp-rs", 0) > 0, runs["--fsdp"]["mesh"])
c.finish()
EOF
