#!/usr/bin/env bash
# bench/blocks_record.sh — records the gpt-tiny pair of traces/cpu-gpt-l2-b4 and cpu-gpt-l8-b4 (the
# --blocks check, docs/blocks.md) so that their operator times can be compared:
#  - each recording runs on core 0 (taskset) under the exclusive quiet lock, and counts only when
#    core 1 was at most 5 % busy over it (/proc/stat), else it is retried (40 tries);
#  - glibc keeps freed memory (mmap threshold 32 MB, no trimming, 256 MB top pad), as a GPU's
#    caching allocator does: with glibc's defaults the 8-block model's backward takes fresh pages from
#    the kernel where the 2-block model's reuses its heap (EmbeddingBackward 0.6 ms vs 26 ms);
#  - a round records 2, then 8, then 2 blocks again, and is kept when the two 2-block recordings
#    simulate (1 GPU) within 3 % of each other: the machine's speed held still over the round.
#
#   usage: bench/blocks_record.sh MITOSIS OUTDIR [ROUNDS]   (needs /usr/bin/python3 with torch)
#   exit 0 with OUTDIR/cpu-gpt-l2-b4 and OUTDIR/cpu-gpt-l8-b4 from the kept round; 1 when none was kept.
set -u
BIN=${1:?usage: blocks_record.sh MITOSIS OUTDIR [ROUNDS]}
OUT=${2:?usage: blocks_record.sh MITOSIS OUTDIR [ROUNDS]}
ROUNDS=${3:-12}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
LOCK=${MT_QUIET_LOCK:-/tmp/mitosis-quiet.lock}
busy1() { awk '$1=="cpu1"{print $2+$3+$4+$7+$8, $2+$3+$4+$5+$6+$7+$8}' /proc/stat; }
record() { # LAYERS DIR
  local try b0 t0 b1 t1 busy
  for try in $(seq 1 40); do
    read -r b0 t0 < <(busy1); sleep 2; read -r b1 t1 < <(busy1)
    busy=$(( (b1 - b0) * 100 / (t1 - t0 + 1) ))
    if [ "$busy" -gt 5 ]; then echo "  core 1 ${busy}% busy, waiting" >&2; sleep 5; continue; fi
    read -r b0 t0 < <(busy1)
    MALLOC_MMAP_THRESHOLD_=33554432 MALLOC_TRIM_THRESHOLD_=4294967296 MALLOC_TOP_PAD_=268435456 \
      flock -x "$LOCK" taskset -c 0 /usr/bin/python3 "$ROOT/tracer/collect.py" --model gpt-tiny --layers "$1" \
      --hidden 256 --heads 4 --vocab 4096 --seq-len 128 --batch 4 --optimizer adam --threads 1 --warmup 3 \
      --steps 10 -o "$2" > "$2.log" 2>&1 || { cat "$2.log" >&2; return 1; }
    read -r b1 t1 < <(busy1)
    busy=$(( (b1 - b0) * 100 / (t1 - t0 + 1) ))
    echo "  $1 blocks: core 1 ${busy}% busy during the recording" >&2
    [ "$busy" -le 5 ] && return 0
  done
  return 1
}
step() { "$BIN" simulate "$1" --gpus 1 --json | python3 -c 'import json,sys; print(json.load(sys.stdin)["step_ms"])'; }
for r in $(seq 1 "$ROUNDS"); do
  d=$OUT/round$r
  mkdir -p "$d"
  record 2 "$d/a-l2" && record 8 "$d/l8" && record 2 "$d/b-l2" || continue
  a=$(step "$d/a-l2") b=$(step "$d/b-l2") w=$(step "$d/l8")
  echo "round $r: 2 blocks $a and $b ms, 8 blocks $w ms"
  if python3 -c "import sys; a, b = $a, $b; sys.exit(0 if abs(a - b) / min(a, b) < 0.03 else 1)"; then
    rm -rf "$OUT/cpu-gpt-l2-b4" "$OUT/cpu-gpt-l8-b4"
    cp -r "$d/a-l2" "$OUT/cpu-gpt-l2-b4" && cp -r "$d/l8" "$OUT/cpu-gpt-l8-b4"
    echo "kept round $r"
    exit 0
  fi
done
exit 1
