#!/usr/bin/env bash
# bench/blocks.sh — `simulate --blocks 8` of the 2-block gpt-tiny trace against the 8-block trace,
# plan by plan, both calibrated to their own measured steps (--calibrate): step time (whole, from the
# slice, error), the model's parameters, gradients and optimizer state over the GPUs, the worst GPU's
# parameters, optimizer state, activations and traffic, and the 8-block model's measured step
# (meta.json, the 1-GPU row); then the 1-GPU row uncalibrated. docs/blocks.md holds its tables.
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
echo "each trace calibrated to its own measured step (--calibrate: the profiler's share out):"
python3 "$ROOT/bench/blocks.py" "$BIN" "$WHOLE" "$SLICE" "$N" --tol "${TOL:-3}" --mem-tol "${MEM_TOL:-100}" \
  --worst-tol "${MEM_TOL:-100}" --flags --calibrate
rc=$?
echo
echo "the profiled times as traced (not judged: the profiler's overhead per op grows with the model):"
python3 "$ROOT/bench/blocks.py" "$BIN" "$WHOLE" "$SLICE" "$N" --tol 1e9 --mem-tol 1e9 --worst-tol 1e9 --plans "--gpus 1"
exit $rc
