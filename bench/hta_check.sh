#!/usr/bin/env bash
# bench/hta_check.sh — `simulate --kineto` opened by Holistic Trace Analysis itself: its temporal
# breakdown (idle / compute / non-compute per rank) and communication/computation overlap on a DDP
# and a hybrid plan, against mitosis's own per-GPU numbers of the same run (simulate --json:
# compute_ms; exposed communication = exposed_comm_ms, the time the compute stream waits while a
# communication kernel runs; idle = finish - compute - exposed: peer waits (a collective's kernel
# starts when its last member joins), pipeline bubbles and host waits, which have no kernel), and
# its critical-path analysis where it runs. Not in CI (HTA is not a build dependency).
#
#   usage: bench/hta_check.sh MITOSIS [HTA_DIR]   (default $HTA_DIR, else /work/hta: a checkout of
#          facebookresearch/HolisticTraceAnalysis; Debian's python3-pandas, -plotly, -networkx, -yaml)
#   exit 77 when HTA or pandas is missing; 1 when a breakdown differs by more than 1 % of the step.
set -u
BIN=${1:?usage: hta_check.sh MITOSIS [HTA_DIR]}
HTA=${2:-${HTA_DIR:-/work/hta}}
PY=${PYTHON:-/usr/bin/python3}
[ -d "$HTA/hta" ] || { echo "skip: no HTA checkout at $HTA"; exit 77; }
PYTHONPATH=$HTA "$PY" -c 'import pandas, hta.trace_analysis' 2>/dev/null || { echo "skip: HTA does not import"; exit 77; }
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$(mktemp -d "${TMPDIR:-/tmp}/hta-check.XXXXXX")
trap 'rm -rf "$T"' EXIT
fails=0
run() { # LABEL TRACE PLAN...
    local label="$1" trace="$2"; shift 2
    rm -rf "$T/k"
    "$BIN" simulate "$trace" "$@" --kineto "$T/k" --json --per-gpu >"$T/sim.json" 2>/dev/null || { echo "$label: simulate"; return 1; }
    PYTHONPATH=$HTA "$PY" - "$label" "$T/k" "$T/sim.json" <<'PY'
import json, logging, sys, warnings
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
from hta.trace_analysis import TraceAnalysis
label, d, sim = sys.argv[1], sys.argv[2], json.load(open(sys.argv[3]))
gpus = {g["gpu"] if "gpu" in g else g["rank"]: g for g in sim["gpus"]}
ta = TraceAnalysis(trace_dir=d)
tb = ta.get_temporal_breakdown(visualize=False).set_index("rank")
ov = ta.get_comm_comp_overlap(visualize=False).set_index("rank")
step_us = sim["step_ms"] * 1e3
worst = 0
print(f"{label}: step {sim['step_ms']:.3f} ms, {len(tb)} ranks read by HTA")
print(f"  {'rank':>4} {'HTA compute':>12} {'mitosis':>10} {'HTA non-comp':>12} {'mitosis':>10} {'HTA idle':>10} "
      f"{'mitosis':>10} {'overlap %':>9}   (ms; HTA idle + the wait before the rank's first kernel)")
for r, row in tb.iterrows():
    g = gpus[r]
    comp = g["compute_ms"]; exp = g["exposed_comm_ms"]
    idle = g["finish_ms"] - comp - exp
    ev = json.load(open(f"{d}/mitosis_rank{r}.pt.trace.json"))["traceEvents"]
    lead = min(e["ts"] for e in ev if e.get("cat") == "kernel") / 1e3  # HTA's window opens at the first kernel
    h = [row["compute_time(us)"] / 1e3, row["non_compute_time(us)"] / 1e3, row["idle_time(us)"] / 1e3 + lead]
    m = [comp, exp, idle]
    worst = max(worst, max(abs(a - b) for a, b in zip(h, m)) / (step_us / 1e3))
    print(f"  {r:4d} {h[0]:12.3f} {m[0]:10.3f} {h[1]:12.3f} {m[1]:10.3f} {h[2]:10.3f} {m[2]:10.3f} "
          f"{ov.loc[r].iloc[-1]:9.2f}")
print(f"  worst difference {100 * worst:.3f} % of the step")
try:
    cp, ok = ta.critical_path_analysis(rank=0, annotation="ProfilerStep", instance_id=0)
    print(f"  critical path (rank 0): {'ok' if ok else 'not found'}, {len(cp.critical_path_nodes)} nodes")
except Exception as e:  # reported, not asserted: HTA's critical path needs CPU call stacks we only sketch
    print(f"  critical path (rank 0): HTA raised {type(e).__name__}: {str(e)[:120]}")
sys.exit(worst > 0.01)
PY
}
g=$ROOT/traces/cpu-gpt-tiny-b8
run "gpt-tiny DDP 8" "$g" --gpus 8 --strategy ddp || fails=$((fails + 1))
run "gpt-tiny dp2 x tp2 x pp2" "$g" --gpus 8 --dp 2 --tp 2 --pp 2 || fails=$((fails + 1))
exit $((fails > 0))
