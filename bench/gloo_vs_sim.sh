#!/bin/bash
# One device -> N devices on hardware anyone has: a real 2-process DistributedDataParallel step
# (torch.distributed, gloo, CPU, 1 thread per process) against `mitosis simulate --gpus 2
# --strategy ddp` from the single-process trace of the same model, on a 2-endpoint switch whose
# link bandwidth and latency are measured first with gloo all-reduces on loopback.
#
# usage: bash bench/gloo_vs_sim.sh [MITOSIS] [TRACE_DIR...]
#   MITOSIS    the binary (default build/mitosis)
#   TRACE_DIR  traces recorded by tracer/collect.py with --threads 1 (default
#              traces/cpu-resnet18-b8; gpt-tiny hangs in its second DDP step under
#              torch 1.13 + gloo here, see the issue notes)
# Needs python3-torch. Run it on a quiet machine: both processes need a core each.
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MT="${1:-$ROOT/build/mitosis}"
shift || true
DIRS=("$@")
[ ${#DIRS[@]} -gt 0 ] || DIRS=("$ROOT/traces/cpu-resnet18-b8")
PY=/usr/bin/python3
if ! "$PY" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null; then
    echo "gloo_vs_sim.sh: needs PyTorch with gloo (apt install python3-torch)" >&2
    exit 2
fi
printf "%-10s %5s %10s %10s %10s %10s %8s %10s %8s %9s %8s\n" model batch "1proc ms" "traced ms" \
    "ddp2 ms" "sim ms" "error" "sim cal ms" "error" "bw GB/s" "lat us"
for d in "${DIRS[@]}"; do
    meas="$("$PY" "$ROOT/bench/gloo_ddp.py" --meta "$d/meta.json")"
    read -r model batch one bw lat ddp < <("$PY" -c '
import json, sys
m = json.load(open(sys.argv[1])); r = json.loads(sys.argv[2])
print(m["model"], m["batch"], m["step_time_ms"]["median"], r["allreduce"]["bw_Bps"], r["latency_s"],
      r["ddp_step_ms"]["median"])' "$d/meta.json" "$meas")
    # switch:2: a 2-rank ring all-reduce is 2 sends, each over 2 links
    linkbw="$("$PY" -c "print('%.6fGB/s' % ($bw / 1e9))")"
    linklat="$("$PY" -c "print('%.3fus' % ($lat / 4 * 1e6))")"
    args=(--gpus 2 --strategy ddp --topology switch:2 --link-bw "$linkbw" --link-lat "$linklat" --json)
    sim="$("$MT" simulate "$d" "${args[@]}")"
    simcal="$("$MT" simulate "$d" "${args[@]}" --calibrate)"
    read -r traced step stepcal < <("$PY" -c '
import json, sys
s, c = json.loads(sys.argv[1]), json.loads(sys.argv[2]); print(s["traced_step_ms"], s["step_ms"], c["step_ms"])' \
        "$sim" "$simcal")
    "$PY" -c '
import sys
model, batch, one, traced, ddp, sim, simcal, bw, lat = sys.argv[1:]
err = (float(sim) - float(ddp)) / float(ddp) * 100
errc = (float(simcal) - float(ddp)) / float(ddp) * 100
print("%-10s %5s %10.1f %10.1f %10.1f %10.1f %+7.1f%% %10.1f %+7.1f%% %9.3f %8.1f" % (
    model, batch, float(one), float(traced), float(ddp), float(sim), err, float(simcal), errc,
    float(bw) / 1e9, float(lat) * 1e6))
' "$model" "$batch" "$one" "$traced" "$ddp" "$step" "$stepcal" "$bw" "$lat"
done
echo "1proc: measured single-process step (meta.json median); traced: sum of the trace's op times;"
echo "ddp2: measured 2-process DDP step (median of 10); sim: mitosis simulate --gpus 2 --strategy ddp;"
echo "sim cal: the same with --calibrate (operator times scaled to the 1proc step, cli/calibrate.h)."
