#!/usr/bin/env bash
# Integration: the what-if flags of `mitosis simulate` (--slow-gpu, --slow-link, --fail-link,
# --scenario, --seed, --steps) and `mitosis hop` on this project's CPU trace (traces/, always
# present): a uniform slowdown doubles compute only, a straggler's cost, K steps, seeds repeat,
# a failed link re-routes or stops the run naming the cut, bad input is one line with exit 2;
# then the two examples (the wafer-scale one skips itself without ../shared/traces).
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
# c.sim runs in this process over libmitosis (libsim.bash, libsim.py: each trace read once); c.run and
# c.check_bad run the binary
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root" "$(dirname "$0")" <<'EOF'
import json, os, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[3])
from simcheck import Checker, rel

bin_, root = sys.argv[1:3]
c = Checker(bin_)
rn = f"{root}/traces/cpu-resnet18-b8"
dp4 = ["--gpus", 4, "--strategy", "dp"]

base = c.sim(rn, *dp4)
slow = c.sim(rn, *dp4, "--slow-gpu", "0-3:2")
if base and slow:
    g0, g1 = base["gpus"][0], slow["gpus"][0]
    c.check("--slow-gpu 0-3:2 doubles compute", rel(g1["compute_ms"], 2 * g0["compute_ms"]) < 1e-9,
            (g0["compute_ms"], g1["compute_ms"]))
    c.check("--slow-gpu 0-3:2 leaves communication alone", rel(g1["comm_ms"], g0["comm_ms"]) < 1e-9,
            (g0["comm_ms"], g1["comm_ms"]))
    w = slow["whatif"]
    c.check("cost: step change = compute change", rel(w["change_ms"], g0["compute_ms"]) < 1e-6, w)
    c.check("cost: nobody waits more", abs(w["extra_wait_ms"]) < 1e-6, w)

st = c.sim(rn, *dp4, "--slow-gpu", "2:1.5", "--steps", 3)
if base and st:
    w = st["whatif"]
    extra = st["gpus"][2]["compute_ms"] - 3 * base["gpus"][2]["compute_ms"]
    c.check("--steps 3: three step times, all equal", len(st["step_ms_each"]) == 3 and
            max(st["step_ms_each"]) - min(st["step_ms_each"]) < 1e-6, st["step_ms_each"])
    c.check("straggler: run grows by its extra compute", rel(w["change_ms"], extra) < 1e-6, (w, extra))
    c.check("straggler: the 3 others wait that long each", rel(w["extra_wait_ms"], 3 * extra) < 1e-6, w)
    c.check("straggler: GPU-time lost = 4 x change", rel(w["gpu_time_lost_ms"], 4 * w["change_ms"]) < 1e-9, w)
    c.check_breakdown("--steps 3", dict(st, step_ms=w["run_ms"]))

with tempfile.TemporaryDirectory() as d:
    sc = os.path.join(d, "random.json")
    with open(sc, "w") as f:
        json.dump({"compute": [{"gpus": "all", "per": "step",
                                "slowdown": {"dist": "lognormal", "mu": 0, "sigma": 0.2}}]}, f)
    a = c.sim(rn, *dp4, "--scenario", sc, "--seed", 3, "--steps", 2)
    b = c.sim(rn, *dp4, "--scenario", sc, "--seed", 3, "--steps", 2)
    z = c.sim(rn, *dp4, "--scenario", sc, "--seed", 4, "--steps", 2)
    if a and b and z:
        c.check("same seed, same run", a["step_ms_each"] == b["step_ms_each"] and a["gpus"] == b["gpus"])
        c.check("another seed, another run", a["step_ms_each"] != z["step_ms_each"])
    bad = os.path.join(d, "bad.json")
    with open(bad, "w") as f:
        json.dump({"network": [{"link": "gpu1->sw0", "bandwidth_factor": 0}]}, f)
    c.check_bad("network[0].bandwidth_factor", "simulate", rn, *dp4, "--scenario", bad)
    with open(bad, "w") as f:
        f.write("{\"compute\": [")
    c.check_bad("bad.json", "simulate", rn, *dp4, "--scenario", bad)

# links: a NIC at a tenth of its bandwidth slows only the all-reduce; a failed link on a ring
# re-routes; on a switch it cuts the GPU off
nic = c.sim(rn, *dp4, "--slow-link", "gpu1<->sw0:10")
if base and nic:
    c.check("--slow-link: compute unchanged, communication slower",
            nic["gpus"][0]["compute_ms"] == base["gpus"][0]["compute_ms"] and
            nic["gpus"][0]["comm_ms"] > 5 * base["gpus"][0]["comm_ms"], (base["gpus"][0], nic["gpus"][0]))
ring = c.sim(rn, *dp4, "--topology", "ring:4")
rer = c.sim(rn, *dp4, "--topology", "ring:4", "--fail-link", "gpu1->gpu2@0ms")
if ring and rer:
    c.check("--fail-link with a detour: the run finishes, compute unchanged",
            rer["gpus"][0]["compute_ms"] == ring["gpus"][0]["compute_ms"] and rer["step_ms"] >= ring["step_ms"],
            (ring["step_ms"], rer["step_ms"]))
c.check_bad("gpu1->sw0", "simulate", rn, *dp4, "--fail-link", "gpu1->sw0@1ms")
c.check_bad("--slow-gpu", "simulate", rn, *dp4, "--slow-gpu", "1")
c.check_bad("GPU 9", "simulate", rn, *dp4, "--slow-gpu", "9:2")
c.check_bad("sw7", "simulate", rn, *dp4, "--slow-link", "gpu0->sw7:2")
c.check_bad("photonic", "simulate", rn, *dp4, "--network", "photonic", "--slow-link", "gpu0:2")
c.check_bad("--steps", "simulate", rn, *dp4, "--steps", 0)
# out of range: a huge slowdown or a 1 B/s link stops at the simulator's horizon (were a wrapped
# negative compute time / "out of memory"); factors and latencies beyond a link's range
c.check_bad("1000 (1000x slower)", "simulate", rn, *dp4, "--slow-gpu", "0:1e300")
c.check_bad("53 days", "simulate", rn, *dp4, "--link-bw", "1B/s")
with tempfile.TemporaryDirectory() as d:
    sc = os.path.join(d, "far.json")
    for rule, want in (({"link": "gpu1->sw0", "bandwidth_factor": 1e300}, "network[0].bandwidth_factor"),
                       ({"gpu": 1, "extra_latency": "2s"}, "network[0].extra_latency"),
                       ({"link": "gpu1->sw0", "fail_at": 1e300}, "network[0].fail_at"),
                       ({"gpu": 2**31, "extra_latency": "5us"}, "network[0]")):  # wrapped to rank -2^31: SEGV
        with open(sc, "w") as f:
            json.dump({"network": [rule]}, f)
        c.check_bad(want, "simulate", rn, *dp4, "--scenario", sc)
    with open(sc, "w") as f:  # 2^32 + 1 was GPU 1
        json.dump({"compute": [{"gpus": [2**32 + 1], "slowdown": 2}]}, f)
    c.check_bad("compute[0].gpus[0]: expected an index", "simulate", rn, *dp4, "--scenario", sc)
    # a lognormal slowdown whose exp() underflows is clamped at 0.01 like a normal one (was 0:
    # operators of no time)
    with open(sc, "w") as f:
        json.dump({"compute": [{"slowdown": {"dist": "lognormal", "mu": -1e300, "sigma": 0}}]}, f)
    tiny = c.sim(rn, *dp4, "--scenario", sc)
    if base and tiny:
        c.check("lognormal underflow: compute x 0.01", rel(tiny["gpus"][0]["compute_ms"],
                0.01 * base["gpus"][0]["compute_ms"]) < 1e-6, (tiny["gpus"][0], base["gpus"][0]))

# hop: one backup worker never makes things slower here; bad input is one line
rc, out, err = c.run("hop", "--compute", "80ms", "--model-bytes", "100MB", "--groups", 2, "--iterations", 5)
c.check("hop runs", rc == 0 and "mean speed-up of 1 backup worker on double-ring" in out, err)
rc, out, err = c.run("hop", "--compute", "80ms", "--model-bytes", "100MB", "--groups", 2, "--iterations", 5, "--json")
j = json.loads(out) if rc == 0 else {}
c.check("hop --json: the same rows (2 groups x 2 graphs), speed-up = b0 / backups, means per graph",
        rc == 0 and len(j["rows"]) == 4 and
        all(abs(r["speedup"] - r["b0_ms"] / r["backups_ms"]) < 1e-9 * r["speedup"] for r in j["rows"]) and
        abs(j["mean_speedup"]["double-ring"] - sum(r["speedup"] for r in j["rows"] if r["graph"] == "double-ring") / 2) < 1e-9
        and len(j["rows"][0]["slowdowns"]) == 8, err)
rc, out, err = c.run("hop", "--compute", "80ms", "--model-bytes", "1MB", "--topology", "switch:4")
c.check("hop on too few GPUs: one error line and no partial table", rc == 2 and out == "" and
        len(err.strip().splitlines()) == 1 and "4 GPUs for 8 workers" in err, (rc, out, err))
c.check_bad("--backups 3", "hop", "--compute", "80ms", "--model-bytes", "1MB", "--graph", "ring", "--backups", 3)
c.check_bad("--slowdown", "hop", "--compute", "80ms", "--model-bytes", "1MB", "--slowdown", "0:3")

# heterogeneous GPUs: ranks typed A100 compute what --target-gpu A100-80GB predicts for the
# H100 trace, per operator (needs ../shared/traces; skipped with a message otherwise)
vgg = os.path.join(os.environ.get("MT_SHARED_TRACES", f"{root}/../shared/traces"), "triosim-vgg13-h100-bs512")
if os.path.isdir(vgg):
    with tempfile.TemporaryDirectory() as d:
        sc = os.path.join(d, "types.json")
        with open(sc, "w") as f:
            json.dump({"gpu_types": {"0-1": "H100-SXM", "2-3": "A100-80GB"}}, f)
        het = c.sim(vgg, "--gpus", 4, "--scenario", sc)
        a100 = c.sim(vgg, "--gpus", 1, "--target-gpu", "A100-80GB")
        one = c.sim(vgg, "--gpus", 1)
        if het and a100 and one:
            g = het["gpus"]
            c.check("gpu_types: A100 ranks compute as --target-gpu A100-80GB, H100 ranks as traced",
                    rel(g[2]["compute_ms"], a100["gpus"][0]["compute_ms"]) < 1e-6 and
                    rel(g[0]["compute_ms"], one["gpus"][0]["compute_ms"]) < 1e-6,
                    (g[0]["compute_ms"], g[2]["compute_ms"], a100["gpus"][0]["compute_ms"]))
else:
    print(f"skip: gpu_types check ({vgg} absent)")

env = dict(os.environ, MITOSIS=bin_)
for ex in ("hop.sh", "wafer_scale.sh"):
    p = subprocess.run(["bash", f"{root}/examples/{ex}"], capture_output=True, text=True, env=env)
    c.check(f"examples/{ex} runs", p.returncode == 0 and ("speed-up" in p.stdout or "photonic" in p.stdout or
            "skipped" in p.stdout), p.stderr[-300:])
c.finish()
EOF
