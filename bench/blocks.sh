#!/usr/bin/env bash
# bench/blocks.sh — `simulate --blocks 8` of the 2-block gpt-tiny trace against the 8-block trace,
# plan by plan: step time (whole, from the slice, error), per-GPU parameters, optimizer state,
# activations and traffic (error of the worst GPU), and the 8-block model's measured step (meta.json,
# the 1-GPU row). docs/blocks.md holds its table.
#
#   usage: bench/blocks.sh MITOSIS [WHOLE SLICE N]   (default traces/cpu-gpt-l8-b4 traces/cpu-gpt-l2-b4 8)
#   exit 1 when a plan's step differs by more than 3 % (TOL) or memory or traffic by more than
#   MEM_TOL % (default 100: shown, not judged; tests/integration/blocks.sh judges them).
set -u
BIN=${1:?usage: blocks.sh MITOSIS [WHOLE SLICE N]}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
WHOLE=${2:-$ROOT/traces/cpu-gpt-l8-b4}
SLICE=${3:-$ROOT/traces/cpu-gpt-l2-b4}
N=${4:-8}
python3 "$ROOT/bench/blocks.py" "$BIN" "$WHOLE" "$SLICE" "$N" --tol "${TOL:-3}" --mem-tol "${MEM_TOL:-100}" --worst-tol "${MEM_TOL:-100}"
rc=$?
# the 1-GPU prediction calibrated to the slice's own measured step (meta.json), against the whole
# model's measured step
pred=$("$BIN" simulate "$SLICE" --blocks "$N" --gpus 1 --calibrate --json |
       python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])')
python3 - "$pred" "$WHOLE/meta.json" <<'PY'
import json, sys
pred, meas = float(sys.argv[1]), json.load(open(sys.argv[2]))["step_time_ms"]["median"]
print("1 GPU, --calibrate to the slice's measured step: predicted %.3f ms, measured %.3f ms (%+.2f %%)"
      % (pred, meas, 100 * (pred - meas) / meas))
PY
exit $rc
