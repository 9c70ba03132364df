#!/usr/bin/env bash
# Integration: `mitosis compare` against `mitosis simulate`. On this project's CPU traces
# (traces/, always there) and the shared VGG13 H100 trace (skipped when ../shared is absent):
# every ranked plan of `compare --gpus 8 --json` gives the same step time as `simulate` with
# that plan, so the ranking is simulate's; speed-up is throughput over the 1-GPU baseline;
# infeasible plans are listed as skipped with their reason; a link-bandwidth sweep never gets
# slower as bandwidth grows and each row equals simulate at that bandwidth; gpus= and nic-bw=
# sweeps (with {nodes} in --topology) match simulate; what-if flags run every plan perturbed and
# unperturbed, both equal to simulate; --dp-modes all lists ddp, dp, ZeRO-1/2/3, FSDP and distopt and a
# --plans list takes zero=, fsdp, fsdp_shard=, each row equal to simulate; bad input is one line and exit 2.
# The pruned search (--top 3) on the H100 Llama-3 trace (host model on, pipelines of both schedules,
# dp and ddp): its rows are the exhaustive run's, byte for byte and in order, each pruned plan's
# bound is at or below its exhaustive step, and plans differing only in schedule or dp mode have
# one bound (run/prune.h: one bound-only program per class); host-bound pipelines (32 blocks) pruned
# by the host thread and the pipeline's drain, at or below their exhaustive steps.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
shared=${MT_SHARED_TRACES:-$root/../shared/traces}
# simulate runs through libmitosis in the script's python (libsim.bash: each trace read once, where a run
# of the binary per row read it again: 197 runs, most of the script's time); compare runs the binary; the
# first row of each table is simulated by the binary too and checked equal to the library's JSON.
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root/traces" "$shared" <<'EOF'
import json, os, sys
from simcheck import Checker, rel

bin_, own, shared = sys.argv[1:4]
c = Checker(bin_)


def compare(*args):
    rc, out, err = c.run("compare", *args, "--json")
    if not c.check(f"compare {' '.join(map(str, args[1:]))} exits 0", rc == 0, f"exit {rc}: {err.strip()}"):
        return None
    return json.loads(out)


def sim_args(p):
    """simulate flags for a plan object of compare's JSON."""
    sharded = (["--zero", p["zero"]] if p.get("zero") else []) + (["--fsdp"] if p.get("fsdp") else []) + \
        (["--fsdp-shard", p["fsdp_shard"]] if p.get("fsdp_shard") else []) + (["--dist-opt"] if p.get("dist_opt") else []) + \
        (["--cp", p["cp"]] if p.get("cp", 1) > 1 else []) + (["--sp"] if p.get("sp") else [])
    return ["--gpus", p["gpus"], "--dp", p["dp"], "--tp", p["tp"], "--pp", p["pp"],
            "--strategy", p["dp_mode"], "--micro-batches", p["micro_batches"],
            "--schedule", p["schedule"], "--batch", p["global_batch"], *sharded]


MEASURED = ("wall_s", "peak_rss_bytes")  # the run's own clock and memory


def binary_agrees(name, trace, args, s):
    """The binary's `simulate --json` equals s (c.sim's: the library's when libsim.bash started this), less
    MEASURED; the trace's path as given (the library's is absolute) names the same file."""
    rc, out, err = c.run("simulate", trace, *args, "--json")
    b = json.loads(out) if rc == 0 else None
    def strip(v):
        if isinstance(v, dict):
            return {k: os.path.realpath(x) if k == "trace" else strip(x) for k, x in v.items() if k not in MEASURED}
        return [strip(x) for x in v] if isinstance(v, list) else v
    c.check(f"{name}: the binary's simulate --json of its first plan is the library's", b is not None and
            strip(b) == strip(s), f"exit {rc}: {err.strip()[:200]}")


def check_against_simulate(name, trace, d, extra):
    """Every row's step time equals simulate's; the order is simulate's (fastest first)."""
    rows = d["rows"]
    c.check(f"{name}: plans ran", len(rows) > 0, d)
    bad, steps = [], []
    for i, r in enumerate(rows):
        s = c.sim(trace, *sim_args(r["plan"]), *extra)
        if not s:
            continue
        if i == 0:
            binary_agrees(name, trace, [*sim_args(r["plan"]), *extra], s)
        steps.append(s["step_ms"])
        if rel(r["step_ms"], s["step_ms"]) > 1e-9:
            bad.append((r["label"], r["step_ms"], s["step_ms"]))
        for key, sim_key in (("exposed_comm_ms", "exposed_comm_ms"), ("peer_wait_ms", "peer_wait_ms"),
                             ("host_wait_ms", "host_wait_ms"),
                             ("bubble_ms", "bubble_ms"), ("peak_mem_bytes", "peak_mem_bytes")):
            want = max(g[sim_key] for g in s["gpus"])
            if abs(r[key] - want) > 1e-9 * max(1.0, want):
                bad.append((r["label"], key, r[key], want))
    c.check(f"{name}: each of {len(rows)} plans has simulate's step time, and its largest exposed "
            f"communication, peer wait, host wait, bubble and peak memory over the GPUs", not bad, bad[:4])
    c.check(f"{name}: ranked fastest first by simulate's step times (same global batch)",
            all(a <= b * (1 + 1e-12) for a, b in zip(steps, steps[1:])), steps[:8])
    gb = {r["plan"]["global_batch"] for r in rows}
    c.check(f"{name}: one global batch for every plan", len(gb) == 1, gb)
    base = d["baseline"]
    if base["global_batch"] > 0:
        want = [(r["plan"]["global_batch"] / r["step_ms"]) / (base["global_batch"] / base["step_ms"]) for r in rows]
        c.check(f"{name}: speed-up = throughput over the 1-GPU baseline",
                all(rel(r["speedup"], w) < 1e-9 for r, w in zip(rows, want)), [(r["speedup"], w) for r, w in zip(rows, want)][:3])
    labels = [r["label"] for r in rows] + [s["label"] for s in d["skipped"]]
    c.check(f"{name}: labels are unique", len(labels) == len(set(labels)), labels)


def monotone(name, d):
    steps = [r["step_ms"] for r in d["rows"]]
    c.check(f"{name}: {len(steps)} values, step time never grows with bandwidth",
            len(steps) >= 3 and all(b <= a * (1 + 1e-12) for a, b in zip(steps, steps[1:])), steps)
    c.check(f"{name}: and it does shrink", steps and steps[-1] < steps[0], steps)


# (name, trace, GPUs, extra flags); gpt-tiny loads slowest, so it gets the smaller plan set
traces = [("resnet18", f"{own}/cpu-resnet18-b8", 8, []), ("gpt-tiny", f"{own}/cpu-gpt-tiny-b8", 4, [])]
vgg = f"{shared}/triosim-vgg13-h100-bs512"
if os.path.isdir(vgg):
    traces.append(("vgg13", vgg, 8, ["--topology", "dgx-h100"]))
else:
    c.skip(f"{vgg} absent, the shared-trace checks are skipped")

# the sharded data-parallel modes: --dp-modes all lists each for D > 1, every row equals simulate;
# a --plans list takes them as fields
gpt = f"{own}/cpu-gpt-tiny-b8"
d = compare(gpt, "--gpus", 4, "--tp", 1, "--pp", 1, "--dp-modes", "all")
if d:
    check_against_simulate("gpt-tiny --dp-modes all", gpt, d, [])
    c.check("gpt-tiny --dp-modes all: ddp, dp, zero 1-3, fsdp and distopt listed",
            sorted(r["label"] for r in d["rows"]) == sorted(["ddp=4", "dp=4", "ddp=4:zero=1", "ddp=4:zero=2",
                                                              "ddp=4:zero=3", "ddp=4:fsdp", "ddp=4:distopt"]),
            [r["label"] for r in d["rows"]])
d = compare(gpt, "--gpus", 4, "--plans", "ddp=4:fsdp:fsdp_shard=2,ddp=2:zero=3:tp=2")
if d:
    check_against_simulate("gpt-tiny --plans with fsdp_shard= and zero=", gpt, d, [])
    c.check("gpt-tiny --plans: labels keep the sharded fields",
            sorted(r["label"] for r in d["rows"]) == ["ddp=2:zero=3:tp=2", "ddp=4:fsdp:fsdp_shard=2"], d["rows"])

# sequence dimensions: --cp-sizes takes C ranks out of each plan's dp, --sp-modes all lists tp plans with
# and without sequence parallelism; every row equals simulate, and every label runs again through --plans
d = compare(gpt, "--gpus", 4, "--pp", 1, "--cp-sizes", "1,2", "--sp-modes", "all")
if d:
    check_against_simulate("gpt-tiny --cp-sizes 1,2 --sp-modes all", gpt, d, [])
    labels = [r["label"] for r in d["rows"]]
    c.check("--cp-sizes 1,2 --sp-modes all: cp=2 and sp plans, no duplicates",
            "ddp=2:cp=2" in labels and "dp=1:tp=2:cp=2" in labels and "tp=2:sp:cp=2" in labels and "tp=4:sp" in labels
            and len(set(labels)) == len(labels)
            and all(r["plan"]["dp"] * r["plan"]["tp"] * r["plan"].get("cp", 1) == 4 for r in d["rows"]), labels)
    again = compare(gpt, "--gpus", 4, "--plans", ",".join(labels))
    c.check("the labels round-trip through --plans", again and sorted(r["step_ms"] for r in again["rows"]) ==
            sorted(r["step_ms"] for r in d["rows"]), labels)
c.check_bad("--cp-sizes", "compare", gpt, "--gpus", 4, "--plans", "ddp=4", "--cp-sizes", "2")
c.check_bad("--sp-modes", "compare", gpt, "--gpus", 4, "--sp-modes", "maybe")
c.check_bad("--cp-sizes", "compare", gpt, "--gpus", 4, "--cp-sizes", "2,x")

for name, tr, n, extra in traces:
    d = compare(tr, "--gpus", n, "--exhaustive", *extra)  # every plan auto lists, none pruned
    if d:
        check_against_simulate(f"{name} auto", tr, d, extra)
        kinds = {(r["plan"]["dp"] > 1, r["plan"]["tp"] > 1, r["plan"]["pp"] > 1) for r in d["rows"]}
        c.check(f"{name} auto: pure and hybrid dp/tp/pp plans all listed", len(kinds) == (7 if n == 8 else 6), kinds)
        modes = {(r["plan"]["dp_mode"], r["plan"]["schedule"]) for r in d["rows"] if r["plan"]["dp"] > 1 and r["plan"]["pp"] > 1}
        c.check(f"{name} auto: dp and ddp, gpipe and 1f1b", len(modes) == 4, modes)
        if name == "vgg13":
            c.check("vgg13 auto: 61 plans for 8 GPUs (README)", len(d["rows"]) + len(d["skipped"]) == 61,
                    (len(d["rows"]), len(d["skipped"])))

    # infeasible plans are skipped with their reason, feasible ones still ranked
    d = compare(tr, "--gpus", 8, "--plans", "ddp=8,tp=3,pp=4:mb=7,dp=4:tp=2,pp=64", *extra)
    if d:
        sk = {s["label"]: s["reason"] for s in d["skipped"]}
        c.check(f"{name} --plans: tp=3, mb=7 and pp=64 skipped, 2 ran",
                len(d["rows"]) == 2 and {"tp=3", "pp=4:mb=7:schedule=1f1b", "pp=64:schedule=1f1b"} <= set(sk), (d["rows"], sk))
        c.check(f"{name} --plans: reasons say why", "multiple of 3" in sk.get("tp=3", "")
                and "micro-batches" in sk.get("pp=4:mb=7:schedule=1f1b", "")
                and "64" in sk.get("pp=64:schedule=1f1b", ""), sk)
        check_against_simulate(f"{name} --plans", tr, d, extra)

# sweeps: link bandwidth (data parallel and tensor parallel), NIC bandwidth on two nodes, GPUs
for name, tr, extra, plan in (("resnet18 dp", f"{own}/cpu-resnet18-b8", [], ["--gpus", 8, "--strategy", "dp"]),
                              ("gpt-tiny tp", f"{own}/cpu-gpt-tiny-b8", [], ["--gpus", 4, "--tp", 4])):
    d = compare(tr, *plan, "--sweep", "link-bw=5GB/s:500GB/s:x3", *extra)
    if d:
        c.check(f"{name} link-bw sweep: 5, 15, 45, 135, 405, 500 GB/s",
                [round(r["value"] / 1e9) for r in d["rows"]] == [5, 15, 45, 135, 405, 500], [r["value"] for r in d["rows"]])
        monotone(f"{name} link-bw sweep", d)
        for r in d["rows"][::2]:
            s = c.sim(tr, *plan, "--link-bw", f"{r['value']!r}B/s", *extra)
            c.check(f"{name} link-bw {r['label']}: simulate agrees", s and rel(s["step_ms"], r["step_ms"]) < 1e-9,
                    (r["step_ms"], s and s["step_ms"]))

if os.path.isdir(vgg):
    topo = "multinode:nodes={nodes},gpus=8"
    d = compare(vgg, "--gpus", 16, "--tp", 8, "--strategy", "dp", "--topology", topo, "--sweep", "nic-bw=10GB/s:80GB/s")
    if d:
        monotone("vgg13 dp2 x tp8 nic-bw sweep on 2 nodes", d)
        r = d["rows"][0]
        s = c.sim(vgg, "--gpus", 16, "--tp", 8, "--strategy", "dp", "--topology", "multinode:nodes=2,gpus=8",
                  "--nic-bw", f"{r['value']!r}B/s")
        c.check("vgg13 nic-bw 10 GB/s: simulate agrees", s and rel(s["step_ms"], r["step_ms"]) < 1e-9, (r, s and s["step_ms"]))
    d = compare(vgg, "--tp", 2, "--topology", topo, "--sweep", "gpus=8:64")
    if d:
        c.check("vgg13 gpus sweep: 8, 16, 32, 64 on 1..8 nodes",
                [r["plan"]["gpus"] for r in d["rows"]] == [8, 16, 32, 64]
                and [r["topology"] for r in d["rows"]][-1] == "multinode:nodes=8,gpus=8", d["rows"])
        for r in d["rows"]:
            s = c.sim(vgg, "--gpus", r["plan"]["gpus"], "--tp", 2, "--topology", r["topology"])
            c.check(f"vgg13 gpus={r['label']}: simulate agrees", s and rel(s["step_ms"], r["step_ms"]) < 1e-9,
                    (r["step_ms"], s and s["step_ms"]))
        sp = [r["speedup"] for r in d["rows"]]
        c.check("vgg13 gpus sweep: throughput grows with GPUs", all(b > a for a, b in zip(sp, sp[1:])), sp)

# the text table: ranked rows, the skipped section, the fastest line
rn = f"{own}/cpu-resnet18-b8"
rc, out, err = c.run("compare", rn, "--gpus", 4, "--plans", "ddp=4,tp=3")
c.check("text: header, ranked row, skipped section, fastest line",
        rc == 0 and "speed-up" in out and "   1  ddp=4" in out and "skipped (infeasible):" in out
        and "\n  tp=3 " in out and "fastest    ddp=4" in out, out)
c.check("text: no progress line when stderr is not a terminal", err == "", err)

c.check_bad("--plans: unknown field 'foo='", "compare", rn, "--gpus", 8, "--plans", "foo=2")
c.check_bad("--plans tp= needs an integer", "compare", rn, "--gpus", 8, "--plans", "tp=x")
c.check_bad("--sweep 'foo=1:2'", "compare", rn, "--gpus", 8, "--sweep", "foo=1:2")
c.check_bad("FROM <= TO", "compare", rn, "--gpus", 8, "--sweep", "link-bw=9GB/s:1GB/s")
c.check_bad("--gpus is required", "compare", rn)
c.check_bad("do not go together", "compare", rn, "--gpus", 8, "--plans", "ddp=8", "--sweep", "link-bw=1GB/s,2GB/s")
c.check_bad("no plan could run", "compare", rn, "--gpus", 8, "--plans", "tp=3")
c.check_bad("fewer", "compare", rn, "--gpus", 8, "--topology", "ring:4")
# What-if flags: every plan runs perturbed (ranked by it) and unperturbed, each equal to simulate
# with the same flags; with --steps the times are per-step means.
wi = ["--slow-gpu", "1:2", "--steps", 2]
d = compare(rn, "--gpus", 4, "--plans", "ddp=4,tp=2:ddp=2,pp=2:ddp=2:mb=4", *wi)
if d:
    bad = []
    for r in d["rows"]:
        s = c.sim(rn, *sim_args(r["plan"]), *wi)
        u = c.sim(rn, *sim_args(r["plan"]), "--steps", 2)
        if s and u and (rel(r["step_ms"], s["step_ms"]) > 1e-9 or rel(r["unperturbed_step_ms"], u["step_ms"]) > 1e-9):
            bad.append((r["label"], r["step_ms"], s["step_ms"], r["unperturbed_step_ms"], u["step_ms"]))
    c.check("what-if compare: perturbed and unperturbed step times equal simulate's", not bad and d["rows"], bad)
    c.check("what-if compare: a GPU twice as slow costs every plan time",
            all(r["step_ms"] > r["unperturbed_step_ms"] for r in d["rows"]), d["rows"])
    c.check("what-if compare: ranked by the perturbed step",
            all(a["step_ms"] <= b["step_ms"] for a, b in zip(d["rows"], d["rows"][1:])), d["rows"])
d = compare(rn, "--gpus", 2, "--plans", "ddp=2")
if d:
    c.check("without what-if flags unperturbed_step_ms is null", d["rows"][0]["unperturbed_step_ms"] is None, d["rows"][0])
rc, out, err = c.run("compare", rn, "--gpus", 4, "--plans", "ddp=4,tp=4", "--slow-link", "gpu1<->sw0:4")
c.check("what-if compare text: a change column and the what-if line", rc == 0 and "change" in out
        and "what-if    every plan runs perturbed" in out, out + err)
import tempfile, shutil
hdir = tempfile.mkdtemp()
rc, out, err = c.run("compare", rn, "--gpus", 4, "--plans", "ddp=4,tp=4", "--slow-gpu", "1:2", "--html", f"{hdir}/c.html")
c.check("what-if compare --html says every plan ran perturbed",
        rc == 0 and "every plan ran perturbed" in open(f"{hdir}/c.html").read(), err)
shutil.rmtree(hdir)
c.check_bad("--slow-gpu", "compare", rn, "--gpus", 4, "--slow-gpu", "x")
if os.path.isdir(vgg):  # the memory limit follows --target-gpu (A100 40GB), and --gpu-mem wins
    d = compare(vgg, "--gpus", 8, "--plans", "ddp=8,tp=8", "--batch", 4096, "--target-gpu", "A100-40GB",
                "--host-model", "none")
    if d:
        c.check("--target-gpu A100-40GB: memory limit 40 GB", d["mem_limit_bytes"] == 40e9, d["mem_limit_bytes"])
        c.check("--target-gpu: tp=8 (51 GB) over the limit", any(r["over_mem"] for r in d["rows"]), d["rows"])
    d = compare(vgg, "--gpus", 8, "--plans", "ddp=8", "--target-gpu", "A100-40GB", "--gpu-mem", "100GB",
                "--host-model", "none")
    if d:
        c.check("--gpu-mem overrides the target's memory", d["mem_limit_bytes"] == 100e9, d["mem_limit_bytes"])
llama = f"{own}/h100-llama3-8b-8blocks-b1-bf16"
full, top = (compare(llama, "--gpus", 8, "--batch", 16, *m) for m in (("--exhaustive",), ("--top", 3)))
if full and top:
    by, pruned = {r["label"]: r for r in full["rows"]}, top.get("pruned", [])
    kept = [r["label"] for r in top["rows"]]
    c.check("--top 3 prunes plans and keeps rows of --exhaustive, in its order", pruned and top["exact_rows"] == 3
            and all(by.get(r["label"]) == r for r in top["rows"]) and kept == [l for l in by if l in set(kept)]
            and kept[:3] == list(by)[:3] and top["skipped"] == full["skipped"], (kept, list(by)))
    lb = {p["label"]: p["reason"].split("at least ")[1].split(" (")[0] for p in pruned if p["reason"].startswith("bound")}
    c.check("--top 3: every pruned plan has a bound at or below its exhaustive step", len(lb) == len(pruned) and
            all(float(v.split(" ms")[0]) <= by[k]["step_ms"] * (1 + 1e-9) for k, v in lb.items()), pruned)
    cls = {}
    for k, v in lb.items():
        cls.setdefault(k.replace("schedule=gpipe", "schedule=1f1b").replace("ddp=", "dp="), set()).add(v)
    c.check("--top 3: plans differing only in schedule or dp mode share a bound",
            len(cls) < len(lb) and all(len(v) == 1 for v in cls.values()), cls)
# host-bound pipelines (32 blocks, micro-batches of 2): the host issues a stage's last backward task after
# its work before it, then that micro-batch's gradients cross the stages before back (run/prune.h)
plans = ("--blocks", 32, "--gpus", 8, "--batch", 8, "--plans", "ddp=2:tp=2:pp=2:mb=4,tp=2:pp=4:mb=8,tp=4:pp=2:mb=8")
full, top = (compare(llama, *plans, *m) for m in (("--exhaustive",), ("--top", 1)))
if full and top:
    by = {r["label"]: r["step_ms"] for r in full["rows"]}
    lb = {p["label"]: float(p["reason"].split("at least ")[1].split(" ms")[0]) for p in top.get("pruned", [])}
    c.check("--top 1 on host-bound pipelines: pruned by the host thread and the pipeline's drain, at or below the "
            "exhaustive step", len(lb) == 2 and all(v <= by[k] * (1 + 1e-9) for k, v in lb.items()) and
            all("host thread and pipeline drain" in p["reason"] for p in top["pruned"]), (top.get("pruned"), by))
c.finish()
EOF
