#!/usr/bin/env bash
# simulate --kineto: per-rank PyTorch-profiler JSON laid out as Holistic Trace Analysis reads it
# (checked without HTA: bench/hta_check.sh runs HTA itself). On a DDP and a hybrid plan: one file
# per rank (or per --kineto-ranks rank), `"rank": R` (HTA's pattern) in distributedInfo before the
# events, deviceProperties, ProfilerStep#1 spanning the step and ProfilerStep#2 after it, every
# kernel launched by a cudaLaunchKernel of the same correlation inside a cpu_op inside step 1,
# NCCL-named communication kernels with Collective name / sizes / Process Group args (all-gather:
# Out = N x In; the group's ranks hold the rank); and HTA's temporal breakdown computed here from
# the kernels (merged intervals) equal to the simulation's own per-GPU numbers: compute =
# compute_ms, non-compute = exposed_comm_ms (communication kernels running while the compute
# stream waits; a collective's kernel starts when its last member joins and a pipeline bubble waits
# for a receive, which has no kernel: peer waits and bubbles are idle), within 1 % of the step.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
ROOT=${MT_ROOT:-$(dirname "$0")/../..}

check() { # DIR SIM_JSON [RANKS]
    python3 - "$@" <<'PY'
import glob, json, re, sys
d, sim = sys.argv[1], json.load(open(sys.argv[2]))
want = [int(x) for x in sys.argv[3].split(",")] if len(sys.argv) > 3 else list(range(len(sim["gpus"])))
files = sorted(glob.glob(d + "/mitosis_rank*.pt.trace.json"), key=lambda f: int(re.findall(r"rank(\d+)", f)[-1]))
assert [int(re.findall(r"rank(\d+)", f)[-1]) for f in files] == want, files
step = sim["step_ms"] * 1e3
gpus = {g["rank"]: g for g in sim["gpus"]}
def merge(iv):
    iv, out = sorted(iv), []
    for a, b in iv:
        if out and a <= out[-1][1]: out[-1][1] = max(out[-1][1], b)
        else: out.append([a, b])
    return out
for f in files:
    text = open(f).read()
    r = int(re.findall(r"rank(\d+)", f)[-1])
    m = re.search(r'"rank":\s+(\d+)', text)
    assert m and int(m.group(1)) == r and m.start() < text.index("traceEvents"), f
    t = json.loads(text)
    assert t["distributedInfo"] == {"backend": "nccl", "rank": r, "world_size": len(sim["gpus"])}
    assert t["deviceProperties"][0]["name"]
    ev = [e for e in t["traceEvents"] if e["ph"] == "X"]
    steps = {e["name"]: e for e in ev if e["name"].startswith("ProfilerStep#")}
    s1, s2 = steps["ProfilerStep#1"], steps["ProfilerStep#2"]
    assert s1["ts"] == 0 and abs(s1["dur"] - step) < 2e-3 and s2["ts"] >= s1["ts"] + s1["dur"] - 1e-3
    launch = {e["args"]["correlation"]: e for e in ev if e["cat"] == "cuda_runtime"}
    ops = [e for e in ev if e["cat"] == "cpu_op"]
    kern = [e for e in ev if e["cat"] == "kernel"]
    assert kern and len(launch) == len(kern) == len(ops)
    for k in kern:
        l = launch[k["args"]["correlation"]]
        assert l["name"] == "cudaLaunchKernel" and 0 <= l["ts"] < s2["ts"], (k, l)
        assert l["args"]["External id"] == k["args"]["External id"]
        if "nccl" in k["name"]:
            a = k["args"]
            assert k["name"].startswith("ncclDevKernel_") and a["dtype"] == "Float", k
            if a["Collective name"] != "send":
                ranks = json.loads(a["Process Group Ranks"])
                assert r in ranks and len(ranks) == a["Group size"] and int(a["Process Group Name"]) > 0, a
                if a["Collective name"] == "_allgather_base":
                    assert abs(a["Out msg nelems"] - a["In msg nelems"] * a["Group size"]) <= a["Group size"], a
    comp = merge([(k["ts"], k["ts"] + k["dur"]) for k in kern if "nccl" not in k["name"]])
    every = merge([(k["ts"], k["ts"] + k["dur"]) for k in kern])
    c = sum(b - a for a, b in comp) / 1e3
    busy = sum(b - a for a, b in every) / 1e3
    g = gpus[r]
    exposed = g["exposed_comm_ms"]
    assert abs(c - g["compute_ms"]) <= 0.01 * step / 1e3, (r, c, g["compute_ms"])
    assert abs((busy - c) - exposed) <= 0.01 * step / 1e3, (r, busy - c, exposed)
print("ok")
PY
}
for plan in "--gpus 4 --strategy ddp" "--gpus 8 --dp 2 --tp 2 --pp 2"; do
    rm -rf "$TMP/k"
    "$BIN" simulate "$ROOT/traces/cpu-gpt-tiny-b8" $plan --kineto "$TMP/k" --json --per-gpu >"$TMP/s.json" ||
        fail "--kineto $plan"
    check "$TMP/k" "$TMP/s.json" >/dev/null || fail "--kineto $plan: the files are not what HTA reads"
done
rm -rf "$TMP/k"
"$BIN" simulate "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 8 --strategy ddp --kineto "$TMP/k" --kineto-ranks 1,6 --json \
    --per-gpu >"$TMP/s.json" || fail "--kineto-ranks"
check "$TMP/k" "$TMP/s.json" 1,6 >/dev/null || fail "--kineto-ranks 1,6"
check_bad "--kineto-ranks needs --kineto DIR" simulate "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 2 --kineto-ranks 0
check_bad "--kineto-ranks" simulate "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 2 --kineto "$TMP/x" --kineto-ranks 5
checks_done kineto
