#!/usr/bin/env bash
# Cross-GPU prediction from GPU traces, checked where both sides are measured: every model recorded
# on two GPU kinds (tracer/record_gpu.sh on each; folders named KIND-MODEL..., e.g. traces/h100-* and
# a lent GPU's a100-*) is predicted from each side to the other with --target-gpu (each kernel moved
# by what bounds it: perfmodel/mathunit.h), against the other side's measured step (meta.json).
# Goal: within 10 %. Needs no GPU itself, only the two sets of recordings.
# usage: bash bench/gpu_cross.sh KIND_A GPU_A KIND_B GPU_B [MITOSIS] [TRACES]
#   e.g. bash bench/gpu_cross.sh h100 H100-SXM a100 A100-80GB
#   --gpu-clock: set CLOCK_A / CLOCK_B (MHz) when a side ran under a power or clock cap.
set -u
[ $# -ge 4 ] || { echo "usage: $0 KIND_A GPU_A KIND_B GPU_B [MITOSIS] [TRACES]" >&2; exit 2; }
ka=$1 ga=$2 kb=$3 gb=$4
bin=${5:-build/mitosis}
tr=${6:-$(cd "$(dirname "$0")/.." && pwd)/traces}
meas() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_time_ms']['median'])" "$tr/$1/meta.json"; }
step() { "$bin" simulate "$tr/$1" --gpus 1 "${@:2}" 2>/dev/null | sed -n 's/^step time *\([0-9.]*\) ms.*/\1/p'; }
pct() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%+.1f' % (100 * (a - b) / b))" "$1" "$2"; }
clk() { [ -n "${1:-}" ] && echo "--gpu-clock $1"; }
echo "| model | from | to | predicted ms | measured ms | error |"
echo "|---|---|---|---|---|---|"
n=0
for d in "$tr"/"$ka"-*/; do
  a=$(basename "$d"); m=${a#"$ka"-}; b=$kb-$m
  [ -d "$tr/$b" ] || continue
  n=$((n + 1))
  # shellcheck disable=SC2046
  p=$(step "$a" --target-gpu "$gb" $(clk "${CLOCK_B:-}")); echo "| $m | $ga | $gb | $p | $(meas "$b") | $(pct "$p" "$(meas "$b")") % |"
  # shellcheck disable=SC2046
  p=$(step "$b" --target-gpu "$ga" $(clk "${CLOCK_A:-}")); echo "| $m | $gb | $ga | $p | $(meas "$a") | $(pct "$p" "$(meas "$a")") % |"
done
[ "$n" -gt 0 ] || echo "no model recorded as both $ka-* and $kb-* under $tr: record them with tracer/record_gpu.sh on a lent $gb" >&2
