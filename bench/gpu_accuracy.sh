#!/usr/bin/env bash
# The H100 traces (traces/h100-*, tracer/record_gpu.sh) against their measured steps: how much the
# profiler slowed each step, the replay at the traced plan, and predictions of one recording from
# another (a batch from a smaller one, 8 blocks from 2 with --blocks when the build has it).
# usage: bash bench/gpu_accuracy.sh [MITOSIS]    (no GPU needed)
set -u
bin=${1:-build/mitosis}
tr=$(cd "$(dirname "$0")/.." && pwd)/traces
meas() { python3 -c "import json,sys; print(json.load(open(sys.argv[1]))['step_time_ms']['median'])" "$tr/$1/meta.json"; }
step() { "$bin" simulate "$tr/$1" --gpus 1 "${@:2}" 2>/dev/null | sed -n 's/^step time *\([0-9.]*\) ms.*/\1/p'; }
pct() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print('%+.1f' % (100 * (a - b) / b))" "$1" "$2"; }
echo "| trace | measured ms | profiled step replayed, ms (profiler's share) | replayed by default, ms |"
echo "|---|---|---|---|"
for d in "$tr"/h100-*/; do
  n=$(basename "$d"); m=$(meas "$n"); u=$(step "$n" --no-calibrate); c=$(step "$n")
  echo "| $n | $m | $u ($(pct "$u" "$m") %) | $c |"
done
echo
echo "| predicted | from | predicted ms | measured ms | error |"
echo "|---|---|---|---|---|"
pred() { # target-trace from-trace flags...
  local p m; p=$(step "$2" "${@:3}"); m=$(meas "$1")
  [ -n "$p" ] && echo "| $1 | $2 ${*:3} | $p | $m | $(pct "$p" "$m") % |"
}
for m in gpt2 bert-base; do
  pred h100-$m-b16-bf16 h100-$m-b8-bf16 --batch 16
  pred h100-$m-b32-bf16 h100-$m-b8-bf16 --batch 32
  pred h100-$m-b32-bf16 h100-$m-b16-bf16 --batch 32
done
for dt in fp32 bf16; do pred h100-resnet50-b128-$dt h100-resnet50-b64-$dt --batch 128; done
if "$bin" simulate --help 2>&1 | grep -q -- '--blocks'; then
  pred h100-llama3-8b-8blocks-b1-bf16 h100-llama3-8b-2blocks-b1-bf16 --blocks 8
fi
echo
echo "| CPU trace predicted on H100-SXM (analytical, GPU time only) | predicted ms | measured on the H100 ms | error | its GPU time in the H100 trace ms | step per CPU-trace op |"
echo "|---|---|---|---|---|---|"
for d in "$tr"/cpu-*/; do
  n=$(basename "$d"); h=h100-${n#cpu-}
  [ -d "$tr/$h" ] || continue
  p=$("$bin" simulate "$tr/$n" --gpus 1 --target-gpu H100-SXM 2>/dev/null | sed -n 's/^step time *\([0-9.]*\) ms.*/\1/p')
  m=$(meas "$h")
  ops=$("$bin" inspect "$tr/$n" --json | python3 -c "import json,sys; print(json.load(sys.stdin)['ops'])")
  busy=$("$bin" inspect "$tr/$h" --json | python3 -c "import json,sys; print('%.3f' % json.load(sys.stdin)['time_ms']['device_busy'])")
  echo "| $n | $p | $m | $(pct "$p" "$m") % | $busy | $(python3 -c "print('%.1f us' % (1e3 * $m / $ops))") |"
done
