#!/usr/bin/env bash
# Integration: the H100 traces recorded by tracer/record_gpu.sh (PyTorch 2.11: ET schema 1.1.1-chakra,
# Kineto "Record function id", SDPA/flash kernels, aten::_grouped_mm, CUDA graphs), each with the step
# measured without the profiler in its meta.json (CUDA events, median of 10). No GPU needed.
#  - every trace reads with all its kernels attached to ops and every ET node linked;
#  - one GPU at the traced plan replays the MEASURED step (calibrated by default: the profiler slowed
#    the host by +4 .. +312 %), the replay line and the JSON say so;
#  - --no-calibrate replays the profiled step within 5 % and says how far it is off the measured one;
#  - the CUDA-graph trace: 2 graph launches (forward, backward) hold > 90 % of the kernel time; plans
#    that split operators (--tp, --pp, --recompute) are refused in one line naming CUDA graphs (exit 2),
#    data parallelism runs;
#  - vocabularies no --tp divides are padded as Megatron pads them (closed form), heads still refuse.
# One python runs the checks, simulating through libmitosis with each trace opened once (libsim.py); the
# checks of the binary itself (its text, its refusals' exit code and line, inspect --blocks) run it.
# Usage: bash gpu_traces.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: gpu_traces.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root" "$(dirname "$0")" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[3])
from libsim import Checks, Sim
bin_, root = sys.argv[1:3]
sim, check = Sim(bin_), Checks()
T = os.path.join(root, "traces")


def refused(rc, err, *want):
    """Exit 2 and one stderr line holding each of want."""
    return rc == 2 and len(err.splitlines()) == 1 and all(w in err for w in want)


# Every trace replays its measured step; one recording per model (the CI's time) is also inspected
# and replayed with --no-calibrate (its text run by the binary).
FULL = ("h100-llama3-8b-2blocks-", "h100-mixtral-8x7b-1block-", "h100-resnet50-b128-fp32", "h100-gpt2-b8-",
        "h100-bert-base-b32-", "h100-gpt-tiny-b8")
n = 0
for name in sorted(os.listdir(T)):
    d = os.path.join(T, name)
    if not name.startswith("h100-") or not os.path.isdir(d):
        continue
    # the re-recordings of CPU traces (h100-X beside cpu-X) are read by the host check below; of them
    # gpt-tiny-b8 is replayed here too (the CI's time)
    if os.path.isdir(os.path.join(T, "cpu-" + name[5:])) and name != "h100-gpt-tiny-b8":
        continue
    n += 1
    rc, out, err = sim.simulate(d, "--gpus", 1)
    if rc != 0:
        check(f"simulate {name}", False, err)
        continue
    s, m = json.loads(out), json.load(open(os.path.join(d, "meta.json")))
    full = name.startswith(FULL)
    want, bad = m["step_time_ms"]["median"], []
    if not m["et_schema"].startswith("1.1."):
        bad.append("ET schema " + m["et_schema"])
    if full:
        i, u = sim.inspect_json(d), sim.sim_json(d, "--gpus", 1, "--no-calibrate")
        _, text, _ = sim.run("simulate", d, "--gpus", 1, "--no-calibrate")
        if i["kernels_left_out"] != 0 or i["kernels"] < m["kineto_kernels"]:
            bad.append("kernels %d (+%d left out) of %d" % (i["kernels"], i["kernels_left_out"], m["kineto_kernels"]))
        if i["measured_step_ms"] != want:
            bad.append("inspect measured %r" % i["measured_step_ms"])
    r, c = s["replay"], s["calibration"]
    if not (c and c["automatic"] and r and r["calibrated"]):
        bad.append("not calibrated by default: %r %r" % (c, r))
    elif abs(r["replayed_ms"] - want) > 0.005 * want or abs(r["error_pct"]) > 0.5:
        bad.append("replayed %.3f vs measured %.3f" % (r["replayed_ms"], want))
    ru = None
    if full:
        ru = u["replay"]
        if u["calibration"] is not None or not ru or abs(ru["error_pct"]) > 5:
            bad.append("--no-calibrate: %r" % (ru,))
        elif ru["measured_ms"] != want:
            bad.append("--no-calibrate measured_ms %r" % ru["measured_ms"])
        off = abs(ru["replayed_ms"] - want) / want > 0.05
        said = "but measured" in text
        if off != said:
            bad.append('--no-calibrate text: off by %.1f %% but the "but measured" line %s' %
                       (100 * (ru["replayed_ms"] - want) / want, "printed" if said else "missing"))
    if r:
        print("  measured %.3f ms; calibrated replay %.3f ms%s" % (
            want, r["replayed_ms"], "; profiled replay %.3f ms" % ru["replayed_ms"] if full and ru else ""))
    check(f"{name}: replays its measured step (calibrated by default)" +
          (", is read whole, and replays its profiled step with --no-calibrate" if full else ""), not bad,
          "\n  ".join(bad))
check("the H100 traces are there (at least 15)", n >= 15, n)

g = os.path.join(T, "h100-resnet50-b128-fp32-cudagraphs")
cg = sim.inspect_json(g)["cuda_graphs"]
print("  ", cg)
check("CUDA graphs: 2 launches hold > 90 % of the kernel time",
      cg["launches"] == 2 and cg["kernel_time_share"] > 0.9 and cg["kernels"] > 500, cg)
for f in ("--tp 2", "--pp 2", "--recompute full"):
    rc, _, err = sim.run("simulate", g, "--gpus", 2, *f.split())
    check(f"CUDA graphs: {f} refused in one line naming them, exit 2", refused(rc, err, "CUDA graph", f.split()[0]),
          f"exit {rc}: {err}")
check("CUDA graphs: --dp 2 runs", sim.simulate(g, "--gpus", 2, "--dp", 2)[0] == 0)
check("no CUDA graphs in the eager ResNet-50",
      sim.inspect_json(os.path.join(T, "h100-resnet50-b128-fp32"))["cuda_graphs"]["launches"] == 0)
rc, _, err = sim.run("simulate", g, "--gpus", 1, "--calibrate", "--no-calibrate")
check("--calibrate with --no-calibrate: refused, exit 2", rc == 2 and "no-calibrate" in err, f"exit {rc}: {err}")

# The host per operator that a CPU trace on a GPU does not count (run/device.h MT_EAGER_HOST_US_LO/HI):
# the H100 re-recordings of the project's CPU traces (h100-X beside cpu-X), step over the CPU trace's ops.
us = {}
for name in sorted(os.listdir(T)):
    cpu = os.path.join(T, "cpu-" + name[5:])
    if not name.startswith("h100-") or not os.path.isdir(cpu):
        continue
    ops = sim.inspect_json(cpu)["ops"]
    us[name[5:]] = 1e3 * json.load(open(os.path.join(T, name, "meta.json")))["step_time_ms"]["median"] / ops
print("  " + ", ".join("%s %.1f" % kv for kv in sorted(us.items(), key=lambda kv: kv[1])))
check("eager host per CPU-trace operator on the H100: 11.7 .. 37.5 us, as run/device.h says",
      len(us) >= 8 and round(min(us.values()), 1) == 11.7 and round(max(us.values()), 1) == 37.5)

# --blocks on a GPU slice: Llama-3-8B's 2 blocks -> 8 (calibrated by default on the 2-block step), the
# foreach Adam step over every parameter lengthened with the weights; against the 8-block recording.
l2, l8 = os.path.join(T, "h100-llama3-8b-2blocks-b1-bf16"), os.path.join(T, "h100-llama3-8b-8blocks-b1-bf16")
rc, out, err = sim.run("inspect", l2, "--blocks", 8, "--json")
b, l, s = json.loads(out) if rc == 0 else None, sim.inspect_json(l8), sim.sim_json(l2, "--gpus", 1, "--blocks", 8)
m = json.load(open(os.path.join(l8, "meta.json")))["step_time_ms"]["median"]
e = lambda a, w: abs(a / w - 1)  # noqa: E731
if b:
    print("  optimizer %.2f vs %.2f ms, device %.2f vs %.2f ms, step %.2f vs measured %.2f ms" % (
        b["time_ms"]["optimizer"], l["time_ms"]["optimizer"], b["time_ms"]["total"], l["time_ms"]["total"], s["step_ms"], m))
check("llama3-8b --blocks 8 from 2: optimizer and total device time within 3 % of the 8-block trace, step within 5 % "
      "of its measured one", b is not None and e(b["time_ms"]["optimizer"], l["time_ms"]["optimizer"]) < 0.03 and
      e(b["time_ms"]["total"], l["time_ms"]["total"]) < 0.03 and e(s["step_ms"], m) < 0.05, err)

# Vocabularies no --tp divides (GPT-2's 50257, BERT's 30522 words) are padded as Megatron pads them,
# to a multiple of 128 x tp, with a warning; the attention heads (12) still bound --tp.
# (the warning in the JSON of each, and in the binary's text report of the first)
for model, V, tp in (("gpt2-b8", 50257, 2), ("gpt2-b8", 50257, 4), ("bert-base-b8", 30522, 4)):
    pad = -(-V // (128 * tp)) * 128 * tp
    said = f"vocabulary of {V} words does not divide over --tp {tp}: padded to {pad}"
    rc, out, err = sim.simulate(os.path.join(T, f"h100-{model}-bf16"), "--gpus", tp, "--tp", tp)
    ok = rc == 0 and said in (json.loads(out).get("warning") or "")
    if tp == 2:
        rc, out, err = sim.run("simulate", os.path.join(T, f"h100-{model}-bf16"), "--gpus", tp, "--tp", tp)
        ok = ok and rc == 0 and said in out + err
    check(f"{model} --tp {tp}: the {V}-word vocabulary padded to {pad}, a warning, exit 0", ok, f"exit {rc}: {err}")
rc, _, err = sim.simulate(os.path.join(T, "h100-gpt2-b8-bf16"), "--gpus", 8, "--tp", 8)
check("gpt2 --tp 8: refused naming its 12 attention heads, exit 2", rc == 2 and "12 attention heads" in err, err)
print(sim.summary())
print("all H100 trace checks passed" if not check.fails else f"{check.fails} failure(s)")
sys.exit(1 if check.fails else 0)
PY
