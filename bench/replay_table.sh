#!/usr/bin/env bash
# replay_table: every multi-rank trace simulated at its own plan (its world size, its own
# collectives, --calibrate-comm auto) against its traced step: traced / replayed / error, and when
# the error exceeds 5 % what mitosis names as unexplained (report/replay.h).
#
# Usage: bench/replay_table.sh [path/to/mitosis] [TRACE...]
#   default traces: traces/cpu-*-w2, the multi-rank traces of ../shared/traces, and the HTA
#   TorchRec ranks when MT_HTA_DIR holds them (negative_queue_length_values_check/rank0.json.gz,
#   trace_diff_control/control.json.gz; see docs/replay.md for how to extract them).
# Prints a markdown table; a trace that is not one rank of a multi-rank job is left out.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
shift || true
traces=("$@")
if [ ${#traces[@]} -eq 0 ]; then
    traces=("$here"/../traces/cpu-*-w2)
    for d in "$here"/../../shared/traces/*/; do [ -d "$d" ] && traces+=("${d%/}"); done
    hta=${MT_HTA_DIR:-/tmp/hta}
    for f in "$hta"/negative_queue_length_values_check/rank0.json.gz "$hta"/trace_diff_control/control.json.gz; do
        [ -f "$f" ] && traces+=("$f")
    done
fi
[ -x "$bin" ] || { echo "replay_table: $bin is not an executable (build first)" >&2; exit 2; }
python3 - "$bin" "${traces[@]}" <<'PY'
import json, os, subprocess, sys
bin, traces = sys.argv[1], sys.argv[2:]
print("| trace | ranks | comm fit | traced ms | replayed ms | error | no fit: replayed ms | error | unexplained (traced - replayed) |")
print("|---|---|---|---|---|---|---|---|---|")
for tr in traces:
    p = subprocess.run([bin, "simulate", tr, "--json"], capture_output=True, text=True)
    if p.returncode != 0:
        continue  # single-rank traces need --gpus; left out
    d = json.loads(p.stdout)
    rp, cf = d.get("replay"), d.get("comm_fit")
    if not rp or d["plan"]["gpus"] < 2:
        continue
    fit = "%.3f GB/s, %.1f us" % (cf["bw_GBps"], cf["lat_us"]) if cf and cf.get("on") else "off"
    why = "; ".join("%+.0f us %s" % (u["us"], u["what"]) for u in rp["unexplained"])
    q = subprocess.run([bin, "simulate", tr, "--json", "--calibrate-comm", "off"], capture_output=True, text=True)
    off = json.loads(q.stdout)["replay"] if q.returncode == 0 else None
    name = os.path.basename(tr.rstrip("/"))
    if name.endswith(".json.gz"):
        q = subprocess.run([bin, "simulate", tr, "--json", "--calibrate-comm", "off"], capture_output=True, text=True)
    off = json.loads(q.stdout)["replay"] if q.returncode == 0 else None
    name = os.path.basename(os.path.dirname(tr)) + "/" + name
    print("| %s | %d | %s | %.3f | %.3f | %+.1f %% | %s | %s | %s |" % (name, d["plan"]["gpus"], fit, rp["traced_ms"],
          rp["replayed_ms"], rp["error_pct"], "%.3f" % off["replayed_ms"] if off else "-",
          "%+.1f %%" % off["error_pct"] if off else "-", why or ""))
PY
