#!/usr/bin/env bash
# bench/seq_cpu.sh — `simulate --seq N` on this CPU: gpt-tiny (96 <-> 192 tokens) and llama-tiny (48 <-> 96)
# recorded at both lengths, each predicted from the other, plan by plan (bench/seq_cpu.py): step time
# from the traced CPU times, then on an H100 by the analytical operator model (--target-gpu), the worst
# GPU's activations and traffic. docs/accuracy.md holds its table.
#
#   usage: bench/seq_cpu.sh MITOSIS     exit 1 when a row differs by more than TOL % (default 5)
set -u
BIN=${1:?usage: seq_cpu.sh MITOSIS}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
T=$ROOT/traces
rc=0
for pair in "gpt-tiny-s192 gpt-tiny-s96 192" "gpt-tiny-s96 gpt-tiny-s192 96" \
            "llama-tiny-s96 llama-tiny-s48 96" "llama-tiny-s48 llama-tiny-s96 48"; do
  set -- $pair
  echo "== cpu-$2 --seq $3 against cpu-$1 (traced CPU times)"
  python3 "$ROOT/bench/seq_cpu.py" "$BIN" "$T/cpu-$1" "$T/cpu-$2" "$3" --tol "${TOL:-5}" || rc=1
  echo "-- the same on an H100 (--target-gpu H100-SXM: the analytical operator model)"
  python3 "$ROOT/bench/seq_cpu.py" "$BIN" "$T/cpu-$1" "$T/cpu-$2" "$3" --tol "${TOL:-5}" \
    --flags "--target-gpu H100-SXM" --plans "--gpus 1;--gpus 2 --tp 2 --sp;--gpus 2 --cp 2" || rc=1
  echo
done
exit $rc
