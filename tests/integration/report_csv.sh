#!/usr/bin/env bash
# Integration: `mitosis simulate --timeline FILE --csv DIR` on this project's CPU traces
# (traces/, always present): resnet18 on dp 2 x pp 2 (pipeline sends, DP buckets) and gpt-tiny on
# dp 2 x tp 2 (TP collectives). Checks that the timeline is trace-event JSON whose per-GPU compute
# slices add up to gpus.csv's compute_ms + stretch_ms, that gpus.csv keeps compute + stretch + exposed +
# bubble + idle = step (+ host wait), that ops.csv's compute rows add up to compute_ms + stretch_ms, that collectives.csv's busbw is algbw
# times the nccl-tests factor, that flow arrows pair up, that --timeline-gpus/--timeline-window
# filter, and that bad outputs and selections are one-line errors with exit 2.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
shared=${MT_SHARED_TRACES:-$root/../shared/traces}
python3 - "$bin" "$root/traces" "$(dirname "$0")" "$tmp" "$shared" <<'EOF'
import csv, json, os, sys
sys.path.insert(0, sys.argv[3])
from simcheck import Checker, rel

bin_, traces, _, tmp, shared = sys.argv[1:6]
c = Checker(bin_)
rn, gpt = f"{traces}/cpu-resnet18-b8", f"{traces}/cpu-gpt-tiny-b8"


def rows(path):
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def busbw_factor(op, n):
    if op == "allreduce":
        return 2 * (n - 1) / n
    if op in ("allgather", "reducescatter", "alltoall"):
        return (n - 1) / n
    return 1.0


def run_case(tag, tr, *plan):
    tl, out = f"{tmp}/{tag}.json", f"{tmp}/{tag}-csv/sub"  # sub: --csv creates parents too
    rc, js, err = c.run("simulate", tr, *plan, "--timeline", tl, "--csv", out, "--json")
    if not c.check(f"{tag}: simulate --timeline --csv --json exits 0", rc == 0, err.strip()):
        return
    d = json.loads(js)
    with open(tl) as f:
        doc = json.load(f)
    ev = doc["traceEvents"]
    c.check(f"{tag}: timeline loads, every event has ph, ts and pid",
            ev and all("ph" in e and "ts" in e and "pid" in e for e in ev), ev[:2])
    tracks = {}  # slices per thread, in ns as viewers read them: none may partly overlap the next
    for e in ev:
        if e["ph"] == "X":
            a = round(e["ts"] * 1000)
            tracks.setdefault((e["pid"], e["tid"]), []).append((a, a + round(e["dur"] * 1000)))
    bad = [(k, x, y) for k, xs in tracks.items() for x, y in zip(sorted(xs), sorted(xs)[1:])
           if y[0] < x[1] < y[1]]
    c.check(f"{tag}: slices on one thread nest or follow each other", not bad, bad[:2])
    gpus = rows(f"{out}/gpus.csv")
    names = {e["pid"]: e["args"]["name"] for e in ev if e["ph"] == "M" and e["name"] == "process_name"}
    c.check(f"{tag}: one process per GPU named 'GPU r (dp d, stage s, tp t)' and a network process",
            all(names.get(int(g["rank"]) + 1) == f"GPU {g['rank']} (dp {g['dp']}, stage {g['stage']}, tp {g['tp']})"
                for g in gpus) and "network" in names.values(), names)
    busy = {}
    for e in ev:
        if e["ph"] == "X" and e.get("tid") == 1:
            busy[e["pid"] - 1] = busy.get(e["pid"] - 1, 0.0) + e["dur"]
    bad = [(g["rank"], busy.get(int(g["rank"]), 0) / 1e3, g["compute_ms"]) for g in gpus
           if rel(busy.get(int(g["rank"]), 0) / 1e3, float(g["compute_ms"]) + float(g["stretch_ms"])) > 1e-6]
    c.check(f"{tag}: per-GPU compute slices (stretch included) add up to gpus.csv compute_ms + stretch_ms (1e-6)",
            not bad, bad[:3])
    bad = []
    for g in gpus:
        s = sum(float(g[k]) for k in ("compute_ms", "stretch_ms", "host_wait_ms", "exposed_comm_ms", "peer_wait_ms",
                                      "bubble_ms", "idle_ms"))
        if rel(s, float(g["step_ms"])) > 1e-9:
            bad.append((g["rank"], s, g["step_ms"]))
    c.check(f"{tag}: gpus.csv compute + stretch + host wait + exposed + peer wait + bubble + idle == step", gpus and not bad, bad[:3])
    ops = rows(f"{out}/ops.csv")
    comp = {}
    for o in ops:
        if o["stream"] == "compute":
            comp[o["gpu"]] = comp.get(o["gpu"], 0.0) + float(o["dur_us"])
    bad = [(g["rank"], comp.get(g["rank"], 0) / 1e3, g["compute_ms"]) for g in gpus
           if rel(comp.get(g["rank"], 0) / 1e3, float(g["compute_ms"]) + float(g["stretch_ms"])) > 1e-9]
    c.check(f"{tag}: ops.csv compute rows (run stretched beside collectives) add up to compute_ms + stretch_ms", not bad,
            bad[:3])
    c.check(f"{tag}: ops.csv end - start == dur",
            all(abs(float(o["end_us"]) - float(o["start_us"]) - float(o["dur_us"])) < 1e-6 for o in ops))
    colls = rows(f"{out}/collectives.csv")
    bad = [r for r in colls if abs(float(r["busbw_GBps"]) -
                                   float(r["algbw_GBps"]) * busbw_factor(r["op"], int(r["gpus"]))) >
           1e-6 * float(r["busbw_GBps"])]
    c.check(f"{tag}: collectives.csv rows, busbw = algbw x nccl-tests factor", colls and not bad, bad[:2])
    bad = [r for r in colls if rel(float(r["algbw_GBps"]), float(r["bytes"]) / float(r["time_us"]) / 1e3) > 1e-6]
    c.check(f"{tag}: collectives.csv algbw = bytes / time", not bad, bad[:2])
    links = rows(f"{out}/links.csv")
    c.check(f"{tag}: links.csv has every link, some busy",
            links and any(float(l["bytes"]) > 0 for l in links) and
            all(0 <= float(l["utilisation"]) <= 1 for l in links), links[:2])
    counters = {e["name"] for e in ev if e["ph"] == "C"}
    busy_links = {f"{l['src']}->{l['dst']}" for l in links if float(l["bytes"]) > 0}
    c.check(f"{tag}: one link-load counter per link that carried traffic", counters == busy_links,
            (sorted(counters)[:4], sorted(busy_links)[:4]))
    layers = rows(f"{out}/layers.csv")
    c.check(f"{tag}: layers.csv has compute per layer", layers and sum(float(l["compute_ms"]) for l in layers) > 0)
    # Every CSV carries the JSON's numbers (a column of any table altered, e.g. doubled, fails here)
    bad = [(l["layer"], k, l[k], j[k]) for l, j in zip(layers, d["layers"]) for k in ("compute_ms", "comm_ms")
           if l["layer"] != j["layer"] or abs(float(l[k]) - j[k]) > 1e-9 + 1e-9 * j[k]]
    c.check(f"{tag}: layers.csv == the JSON's layers (name, compute_ms, comm_ms)",
            len(layers) == len(d["layers"]) and not bad, bad[:3])
    cols = ("compute_ms", "stretch_ms", "comm_ms", "exposed_comm_ms", "host_wait_ms", "bubble_ms", "idle_ms",
            "peak_mem_bytes")
    bad = [(g["rank"], k, g[k], j[k]) for g, j in zip(gpus, d["gpus"]) for k in cols
           if int(g["rank"]) != j["rank"] or rel(float(g[k]), j[k]) > 1e-9]
    c.check(f"{tag}: gpus.csv == the JSON's gpus {cols}", len(gpus) == len(d["gpus"]) and not bad, bad[:3])
    c.check(f"{tag}: gpus.csv step_ms == the JSON's step", all(rel(float(g["step_ms"]), d["step_ms"]) < 1e-9
                                                             for g in gpus), d["step_ms"])
    # One switch (a star): GPU r's uplink carries what r sends, its downlink what r receives, which
    # for these symmetric plans is the same: the JSON's traffic_bytes of r (the payload), summed over
    # kinds; under NCCL's tuner (algo nccl) the wire carries more (its protocol and efficiency factor,
    # extrapolate/nccl.h), the same on every link.
    if d["topology"].startswith("switch:"):
        sent = {f"gpu{g['rank']}": sum(g["traffic_bytes"].values()) for g in d["gpus"]}
        wire = d["plan"].get("algo") == "nccl"
        ratio = [float(l["bytes"]) / sent[l["src"] if l["src"] in sent else l["dst"]] for l in links]
        bad = [(l["src"], l["dst"], l["bytes"]) for l, x in zip(links, ratio)
               if ((x < 1 - 1e-9 or abs(x - ratio[0]) > 1e-9) if wire else abs(x - 1) > 1e-9)]
        c.check(f"{tag}: links.csv bytes == the JSON's traffic_bytes of the GPU at either end"
                + (" x one wire factor >= 1 (NCCL's tuner)" if wire else ""), links and not bad, (bad[:3], sent))
        bw = {float(l["bandwidth_GBps"]) for l in links}
        bad = [l for l in links if rel(float(l["utilisation"]),
                                       float(l["bytes"]) / (float(l["bandwidth_GBps"]) * 1e9 * d["step_ms"] / 1e3)) > 1e-6]
        c.check(f"{tag}: links.csv utilisation == bytes / (bandwidth x the JSON's step)", len(bw) == 1 and not bad,
                bad[:2])
    else:
        c.check(f"{tag}: the plan runs on one switch (so links.csv is checked against traffic)", False, d["topology"])
    return ev


ev = run_case("resnet18-dp2-pp2", rn, "--gpus", 4, "--dp", 2, "--pp", 2, "--micro-batches", 4)
if ev:
    s = [e["id"] for e in ev if e["ph"] == "s"]
    f = [e["id"] for e in ev if e["ph"] == "f"]
    c.check("resnet18 pp=2: one flow arrow per pipeline send (2 x 4 micro-batches x 2 replicas), paired",
            len(s) == 16 and sorted(s) == sorted(f) and len(set(s)) == 16, (len(s), len(f)))
ev = run_case("gpt-tiny-dp2-tp2", gpt, "--gpus", 4, "--dp", 2, "--tp", 2)
if ev:
    c.check("gpt-tiny tp=2: TP and DP collective tracks",
            any(e["ph"] == "X" and e.get("tid") == 4 for e in ev) and any(e["ph"] == "X" and e.get("tid") == 5 for e in ev))

# Host model (GPU traces with launches, from ../shared/traces when present): host-wait slices
# (launch waits and, on the launch-bound linear trace, the host's tail after the device is done)
for name, rel_path in (("vgg13", "triosim-vgg13-h100-bs512"), ("linear", "param-linear-rtx2080ti")):
    tr = f"{shared}/{rel_path}"
    if not os.path.isdir(tr):
        c.skip(f"{tr} absent, no host-model timeline check")
        continue
    ev = run_case(f"{name}-dp2-host", tr, "--gpus", 2)
    if ev:
        gpus = rows(f"{tmp}/{name}-dp2-host-csv/sub/gpus.csv")
        host = {int(g["rank"]): float(g["host_wait_ms"]) for g in gpus}
        drawn = {r: sum(e["dur"] for e in ev if e["ph"] == "X" and e["pid"] == r + 1 and e["tid"] == 2) / 1e3
                 for r in host}
        c.check(f"{name} host model: host-wait slices add up to gpus.csv host_wait_ms",
                any(host.values()) and all(rel(drawn[r], host[r]) < 1e-6 for r in host), (drawn, host))

# Filters: GPUs 1 and 3 only, 100 ms to 200 ms
tl = f"{tmp}/filtered.json"
rc, _, err = c.run("simulate", rn, "--gpus", 4, "--dp", 2, "--pp", 2, "--micro-batches", 4, "--timeline", tl,
                   "--timeline-gpus", "1,3", "--timeline-window", "100ms:200ms")
if c.check("filtered timeline exits 0", rc == 0, err):
    ev = json.load(open(tl))["traceEvents"]
    pids = {e["pid"] for e in ev if e["ph"] in "XsfM" and e["pid"] <= 4}
    c.check("--timeline-gpus 1,3: only GPUs 1 and 3", pids == {2, 4}, pids)
    xs = [e for e in ev if e["ph"] in "XsfC"]
    c.check("--timeline-window 100ms:200ms: every event inside it",
            xs and all(1e5 <= e["ts"] and e["ts"] + e.get("dur", 0) <= 2e5 + 1e-3 for e in xs),
            [e for e in xs if not (1e5 <= e["ts"] <= 2e5)][:2])

# Bad inputs: exit 2, one line naming the problem
open(f"{tmp}/afile", "w").close()
c.check_bad("afile", "simulate", rn, "--gpus", 2, "--csv", f"{tmp}/afile/sub")
c.check_bad("--timeline-gpus", "simulate", rn, "--gpus", 2, "--timeline", f"{tmp}/x.json", "--timeline-gpus", "0-9")
c.check_bad("--timeline-gpus", "simulate", rn, "--gpus", 2, "--timeline", f"{tmp}/x.json", "--timeline-gpus", "a")
c.check_bad("--timeline-window", "simulate", rn, "--gpus", 2, "--timeline", f"{tmp}/x.json",
            "--timeline-window", "20ms:10ms")
c.check_bad("need --timeline", "simulate", rn, "--gpus", 2, "--timeline-gpus", "0")
c.check_bad("nodir", "simulate", rn, "--gpus", 2, "--timeline", f"{tmp}/nodir/x.json")
c.check("a bad --timeline-gpus leaves no timeline file behind", not os.path.exists(f"{tmp}/x.json"))
c.finish()
EOF
