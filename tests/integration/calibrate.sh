#!/usr/bin/env bash
# Integration: calibration to a measured step (`--calibrate` from meta.json, `--measured-ms`),
# cli/calibrate.h. On the project's CPU traces (operator times scaled, always run) and, when
# ../shared is present, on the VGG13 H100 Kineto trace (host times solved under the host model).
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
shared=${MT_SHARED_TRACES:-$root/../shared/traces}
exec python3 - "$bin" "$root/traces" "$shared" "$(dirname "$0")" <<'EOF'
import json, os, shutil, sys, tempfile
sys.path.insert(0, sys.argv[4])
from simcheck import Checker, rel

bin_, traces, shared = sys.argv[1:4]
c = Checker(bin_)
tiny = f"{traces}/cpu-gpt-tiny-b4"
meta = json.load(open(f"{tiny}/meta.json"))
X = meta["step_time_ms"]["median"]

# a. CPU trace (no host model): operator times x measured / traced, exactly.
raw = c.sim(tiny, "--gpus", 1)
cal = c.sim(tiny, "--gpus", 1, "--calibrate")
if raw and cal:
    k = cal["calibration"]
    c.check("cpu: one GPU takes the measured median of meta.json", rel(cal["step_ms"], X) < 1e-9,
            (cal["step_ms"], X))
    c.check("cpu: operator factor = measured / uncalibrated, host untouched",
            rel(k["op_scale"], X / raw["step_ms"]) < 1e-9 and k["host_scale"] == 1
            and rel(k["uncalibrated_ms"], raw["step_ms"]) < 1e-9, k)
    c.check("cpu: source names the meta.json", k["source"].endswith("cpu-gpt-tiny-b4/meta.json"), k["source"])
    c.check("uncalibrated runs report calibration null", raw["calibration"] is None, raw["calibration"])
    # The factor carries over to every run: another batch, and 2 GPUs (compute scales, comm not).
    for args in (["--gpus", 1, "--batch", 16], ["--gpus", 2, "--strategy", "ddp"],
                 ["--gpus", 4, "--tp", 2, "--strategy", "ddp"]):
        a = c.sim(tiny, *args)
        b = c.sim(tiny, *args, "--calibrate")
        if a and b:
            ga, gb = a["gpus"][0], b["gpus"][0]
            c.check(f"cpu {args}: compute x the factor", rel(gb["compute_ms"], ga["compute_ms"] * k["op_scale"]) < 1e-6,
                    (ga["compute_ms"], gb["compute_ms"], k["op_scale"]))
            c.check(f"cpu {args}: communication unchanged", abs(gb["comm_ms"] - ga["comm_ms"]) < 1e-6 * max(1, ga["comm_ms"]),
                    (ga["comm_ms"], gb["comm_ms"]))
            c.check_breakdown(f"cpu calibrated {args}", b)
    d = c.sim(tiny, "--gpus", 1, "--measured-ms", 100)
    if d:
        c.check("--measured-ms 100: one GPU takes 100 ms", rel(d["step_ms"], 100) < 1e-9, d["step_ms"])
        c.check("--measured-ms: source", d["calibration"]["source"] == "--measured-ms", d["calibration"])

# The HTML report states the scaling.
html = os.path.join(tempfile.mkdtemp(), "r.html")
rc, out, err = c.run("simulate", tiny, "--gpus", 2, "--calibrate", "--html", html)
page = open(html).read() if rc == 0 else ""
c.check("--html: a 'time scaling' line with the operator factor", "time scaling" in page
        and f"operator times x {X / raw['step_ms']:.4f}" in page if raw else False, err)
shutil.rmtree(os.path.dirname(html))

# inspect shows the measured step beside the traced one.
rc, out, err = c.run("inspect", tiny, "--json")
c.check("inspect --json: measured_step_ms is meta.json's median", rc == 0 and json.loads(out)["measured_step_ms"] == X,
        out[:200] + err)
rc, out, err = c.run("inspect", tiny)
c.check("inspect: a 'measured' line", rc == 0 and "measured " in out and "meta.json" in out, out)

# b. compare: the baseline is the measured step.
rc, out, err = c.run("compare", tiny, "--gpus", 2, "--plans", "ddp=2", "--calibrate", "--json")
if c.check("compare --calibrate exits 0", rc == 0, err.strip()):
    j = json.loads(out)
    c.check("compare --calibrate: baseline = measured", rel(j["baseline"]["step_ms"], X) < 1e-9, j["baseline"])
    s = c.sim(tiny, "--gpus", 2, "--strategy", "ddp", "--calibrate")
    if s:
        c.check("compare --calibrate: the row equals simulate --calibrate",
                rel(j["rows"][0]["step_ms"], s["step_ms"]) < 1e-9, (j["rows"][0]["step_ms"], s["step_ms"]))

# c. Errors: one line, exit 2.
tmp = tempfile.mkdtemp()
try:
    for f in ("kineto.json.gz", "et.json.gz"):
        shutil.copy(f"{tiny}/{f}", tmp)
    c.check_bad("does not exist", "simulate", tmp, "--gpus", 1, "--calibrate")
    open(f"{tmp}/meta.json", "w").write('{"batch": 8, "step_time_ms": {"median": 50}}')
    c.check_bad("measured at batch 8 but the trace's batch is 4", "simulate", tmp, "--gpus", 1, "--calibrate")
    open(f"{tmp}/meta.json", "w").write('{"batch": 4, "step_time_ms": {}}')
    c.check_bad("step_time_ms.median is missing", "simulate", tmp, "--gpus", 1, "--calibrate")
    open(f"{tmp}/meta.json", "w").write('{"batch": 4, "step_time_ms": {"median": 1e300}}')  # as --measured-ms
    c.check_bad("meta.json: step_time_ms.median is missing or not a number of ms in (0, 1e9]", "simulate", tmp,
                "--gpus", 1, "--calibrate")
    open(f"{tmp}/meta.json", "w").write('{"batch": 4, ')
    c.check_bad("meta.json", "simulate", tmp, "--gpus", 1, "--calibrate")
finally:
    shutil.rmtree(tmp)
# --host-scale composes with calibration (issue 46.4): calibrate to the measured step, then scale the
# calibrated host times; on a CPU trace (no host model) the calibrated step is unchanged.
hs = c.sim(tiny, "--gpus", 1, "--calibrate", "--host-scale", 0.5)
if hs and cal:
    c.check("--calibrate --host-scale 0.5 on a CPU trace: operator factor kept, step = calibrated",
            rel(hs["calibration"]["op_scale"], cal["calibration"]["op_scale"]) < 1e-9
            and rel(hs["step_ms"], X) < 1e-6, hs["calibration"])

# A GPU trace calibrated by default (issue 46): a damaged meta.json is refused naming it, not dropped;
# a faster host (--host-scale 0.5) never makes the step slower; the analytical model's label says
# its times were scaled to the measured step.
bert = f"{traces}/h100-bert-base-b8-bf16"
if os.path.isdir(bert):
    base = c.sim(bert, "--gpus", 1)
    half = c.sim(bert, "--gpus", 1, "--host-scale", 0.5)
    if base and half:
        c.check("GPU trace: --host-scale 0.5 after the default calibration is no slower than without it",
                half["step_ms"] <= base["step_ms"] * (1 + 1e-9) and half["calibration"] is not None,
                (half["step_ms"], base["step_ms"]))
        c.check("GPU trace: the default calibration then x 0.5 (time scaling)",
                rel(half["calibration"]["host_scale"], base["calibration"]["host_scale"]) < 1e-9, half["calibration"])
    tmpg = tempfile.mkdtemp()
    try:
        for f in ("kineto.json.gz", "et.json.gz"):
            shutil.copy(f"{bert}/{f}", tmpg)
        m = json.load(open(f"{bert}/meta.json"))
        for bad, why in ((0.001, "under 50 % of what the traced GPU work alone takes"),
                         ("fast", "step_time_ms.median is missing or not a number"),
                         (1e12, "step_time_ms.median is missing or not a number")):
            m["step_time_ms"]["median"] = bad
            json.dump(m, open(f"{tmpg}/meta.json", "w"))
            c.check_bad(why, "simulate", tmpg, "--gpus", 1)
        c.check("--no-calibrate still runs beside a damaged meta.json",
                c.sim(tmpg, "--gpus", 1, "--no-calibrate") is not None)
    finally:
        shutil.rmtree(tmpg)
llama = f"{traces}/h100-llama3-8b-2blocks-b1-bf16"
if os.path.isdir(llama):
    rc, out, err = c.run("simulate", llama, "--gpus", 1, "--perf-model", "analytical")
    c.check("analytical + default calibration: the op-times line says the scaling, not 'not used'",
            rc == 0 and "scaled by" in out and "times are not used" not in out, out[-600:] + err)
c.check_bad("--measured-ms needs", "simulate", tiny, "--gpus", 1, "--measured-ms", "fast")
c.check_bad("--measured-ms needs", "simulate", tiny, "--gpus", 1, "--measured-ms", 0)

# d. GPU trace under the host model: host times solved by bisection.
vgg = f"{shared}/triosim-vgg13-h100-bs512"
if os.path.isdir(vgg):
    rc, out, err = c.run("inspect", vgg, "--json")
    c.check("inspect --json without a meta.json: measured_step_ms null", rc == 0 and json.loads(out)["measured_step_ms"] is None,
            out[:200] + err)
    raw = c.sim(vgg, "--gpus", 1)
    if raw:
        gpu_only = c.sim(vgg, "--gpus", 1, "--host-model", "none")["step_ms"]
        wall = raw["step_ms"]
        # Between the GPU-only and the traced step: host times shrink, operator times kept.
        target = gpu_only + 0.5 * (wall - gpu_only)
        d = c.sim(vgg, "--gpus", 1, "--measured-ms", target)
        if d:
            k = d["calibration"]
            c.check("gpu: one GPU takes the measured time (1e-6)", rel(d["step_ms"], target) < 1e-6, (d["step_ms"], target))
            c.check("gpu: host times scaled down, operator times kept", 0 < k["host_scale"] < 1 and k["op_scale"] == 1, k)
            c.check_breakdown("gpu calibrated", d)
        # Slower than traced: host times grow until the host binds.
        d = c.sim(vgg, "--gpus", 1, "--measured-ms", wall * 1.2)
        if d:
            k = d["calibration"]
            c.check("gpu slower: measured reached, host times x > 1", rel(d["step_ms"], wall * 1.2) < 1e-6
                    and k["host_scale"] > 1 and k["op_scale"] == 1, (d["step_ms"], k))
            c.check("gpu slower: the step is launch-bound now", d["host"]["launch_bound"], d["host"])
        # Faster than the GPU work alone: host removed, operators scaled.
        d = c.sim(vgg, "--gpus", 1, "--measured-ms", gpu_only * 0.8)
        if d:
            k = d["calibration"]
            c.check("gpu faster than its kernels: host removed, operators x < 1",
                    rel(d["step_ms"], gpu_only * 0.8) < 1e-6 and k["host_scale"] < 1e-3 and k["op_scale"] < 1, (d["step_ms"], k))
        # --target-gpu: the measurement is the traced GPU's, so the factors are solved there.
        a = c.sim(vgg, "--gpus", 1, "--measured-ms", target)
        b = c.sim(vgg, "--gpus", 1, "--measured-ms", target, "--target-gpu", "A100-80GB")
        if a and b:
            c.check("gpu: calibration with --target-gpu solves on the traced GPU (same factors)",
                    b["calibration"]["host_scale"] == a["calibration"]["host_scale"]
                    and b["calibration"]["op_scale"] == a["calibration"]["op_scale"]
                    and rel(b["calibration"]["calibrated_ms"], target) < 1e-6 and b["step_ms"] > a["step_ms"],
                    (a["calibration"], b["calibration"], b["step_ms"]))
        # Multi-GPU runs keep the factor: DDP on 8 GPUs calibrated to the traced wall itself
        # changes nothing.
        a = c.sim(vgg, "--gpus", 8, "--strategy", "ddp")
        b = c.sim(vgg, "--gpus", 8, "--strategy", "ddp", "--measured-ms", wall)
        if a and b:
            c.check("gpu: calibrating to the simulated wall is the identity (1e-5)",
                    rel(a["step_ms"], b["step_ms"]) < 1e-5, (a["step_ms"], b["step_ms"], b["calibration"]))
else:
    c.skip(f"{vgg} absent (GPU-trace checks)")
c.finish()
EOF
