#!/usr/bin/env bash
# Integration: symmetry folding (issue 22). For each strategy, a symmetric case run folded (the
# default) and with --no-fold must give the same JSON except simulation.events, wall_s and
# folding; the folded run must say it folded and how many GPUs walked (1 per data-parallel class:
# N / dp); an asymmetric case (3 stages of 4 replicas on nodes of 4 GPUs: stage boundaries cross
# nodes differently per replica) must fall back by itself ("diverged") with the same numbers;
# a what-if or --no-fold keeps it off and says why; the text output says which mode ran.
# Usage: bash fold.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: fold.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-fold.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null || { echo "fold.sh: needs python3"; exit 77; }
fails=0
tr="$root/traces"

# same NAME MODE WALKERS WHY TRACE ARGS...: folded and --no-fold JSON equal; mode/walkers/why as given
same() {
  local name=$1 mode=$2 walkers=$3 why=$4 trace=$5; shift 5
  if ! "$bin" simulate "$trace" "$@" --json > "$tmp/a.json" 2> "$tmp/a.err" ||
     ! "$bin" simulate "$trace" "$@" --no-fold --json > "$tmp/b.json" 2> "$tmp/b.err"; then
    echo "FAIL: $name: the run failed: $(cat "$tmp/a.err" "$tmp/b.err")"; fails=$((fails + 1)); return
  fi
  if python3 - "$tmp/a.json" "$tmp/b.json" "$mode" "$walkers" "$why" <<'PY'
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
mode, walkers, why = sys.argv[3], int(sys.argv[4]), sys.argv[5]
fa, fb = a["simulation"].pop("folding"), b["simulation"].pop("folding")
for x in (a, b):
    for k in ("events", "wall_s", "peak_rss_bytes"):
        x["simulation"].pop(k)
ok = True
if fa["mode"] != mode or fa["walkers"] != walkers or why not in fa["why"]:
    print(f"  folded run: {fa}, want mode {mode}, {walkers} walkers, why containing '{why}'"); ok = False
if fb["mode"] != "full" or fb["why"] != "--no-fold":
    print(f"  --no-fold run: {fb}"); ok = False
if a != b:
    print("  results differ in: " + ", ".join(k for k in a if a[k] != b.get(k))); ok = False
sys.exit(0 if ok else 1)
PY
  then echo "ok: $name"; else echo "FAIL: $name"; fails=$((fails + 1)); fi
}

moe="$root/tests/fixtures/moe-tiny" # a small MoE transformer: 35 layers, 4 experts
mn="--topology multinode:nodes=2,gpus=8 --gpus 16"
same "DDP (resnet18, 16 GPUs)" folded 1 "16 data-parallel replicas alike" "$tr/cpu-resnet18-b8" $mn --strategy ddp
same "ZeRO-3" folded 1 "alike" "$moe" $mn --dp 16 --zero 3
same "FSDP, hybrid shards of 4" folded 1 "alike" "$moe" $mn --dp 16 --fsdp --fsdp-shard 4
same "TP 2 x DP 8" folded 2 "alike" "$moe" $mn --dp 8 --tp 2
same "CP 2 x DP 8" folded 2 "alike" "$moe" $mn --dp 8 --cp 2
same "EP 4 x DP 4, skewed experts" folded 4 "alike" "$moe" $mn --ep 4 --dp 4 --expert-skew 1.5
same "hybrid TP 2 x PP 4 x DP 2 (1F1B), a replica per node" folded 8 "alike" "$moe" $mn --tp 2 --pp 4 --dp 2 \
  --micro-batches 2
same "PP 2 x DP 4 on switch, 2 steps" folded 2 "alike" "$moe" --topology switch:8 --gpus 8 --pp 2 --dp 4 \
  --micro-batches 2 --steps 2
same "asymmetric: falls back" full 12 "the replicas diverged" "$moe" --topology multinode:nodes=3,gpus=4 --gpus 12 \
  --pp 3 --dp 4 --micro-batches 2
same "a straggler: off" full 16 "a what-if scenario" "$tr/cpu-resnet18-b8" $mn --strategy ddp --slow-gpu 3:1.5
same "embedding tables per replica: off" full 16 "embedding tables are owned per replica" "$root/tests/fixtures/dlrm-tiny" \
  $mn --dp 16 --embedding-shard table

"$bin" simulate "$tr/cpu-resnet18-b8" $mn --strategy ddp > "$tmp/t" 2>&1
if grep -q "^folded     1 of 16 GPUs walked their programs: 16 data-parallel replicas alike" "$tmp/t"; then
  echo "ok: text output says folded"; else echo "FAIL: text output: $(tail -2 "$tmp/t")"; fails=$((fails + 1)); fi
"$bin" simulate "$tr/cpu-resnet18-b8" $mn --strategy ddp --no-fold > "$tmp/t" 2>&1
if grep -q "^unfolded   every GPU walked its program: --no-fold" "$tmp/t"; then
  echo "ok: text output says unfolded"; else echo "FAIL: text output: $(tail -2 "$tmp/t")"; fails=$((fails + 1)); fi

[ "$fails" -eq 0 ] || { echo "fold.sh: $fails failure(s)"; exit 1; }
echo "fold.sh: all passed"
