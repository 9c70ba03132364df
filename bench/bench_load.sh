#!/usr/bin/env bash
# bench/bench_load.sh — load time and peak memory of large Kineto + ET traces (issue 23).
#
#   bench/bench_load.sh [build/mitosis] TRACE_DIR...
#
# For each directory (a pair from bench/gen_trace.py, or any trace), runs `mitosis inspect DIR`
# three times with the streaming reader and prints the best wall time, its CPU (user + sys) time
# and the peak resident memory (/usr/bin/time), as a markdown table. With MT_BENCH_DOM=1 it also
# runs the reference DOM reader (MITOSIS_JSON_READER=dom) on inputs under 300 MB (it needs about
# 9x the file in memory). Make the inputs first, outside the repository, e.g.:
#
#   bench/gen_trace.py ../shared/traces/param-resnet /work/bigtraces/resnet-1gb --mb 1050
#   bench/gen_trace.py ../shared/traces/param-resnet /work/bigtraces/resnet-1gb-gz --mb 1050 --gzip
#
# Timings on a shared machine are noisy: the best of 3 is kept, and CPU time is shown beside it.
set -u
bin=build/mitosis
if [ $# -gt 0 ] && [ -x "$1" ] && [ ! -d "$1" ]; then bin=$1; shift; fi
[ $# -gt 0 ] || { echo "usage: bench/bench_load.sh [MITOSIS] TRACE_DIR..." >&2; exit 2; }
[ -x /usr/bin/time ] || { echo "bench_load.sh: needs /usr/bin/time (apt install time)" >&2; exit 2; }
tmp=$(mktemp)
trap 'rm -f "$tmp"' EXIT

# best of 3: "wall_s cpu_s peak_MB" of the fastest run
measure() {
  local best=""
  for _ in 1 2 3; do
    env "$@" > /dev/null 2> "$tmp" || { echo "FAILED: $(tail -1 "$tmp")"; return; }
    local row
    row=$(tail -1 "$tmp" | awk '{printf "%.2f %.2f %.0f", $1, $2 + $3, $4 / 1024}')
    if [ -z "$best" ] || awk -v a="${row%% *}" -v b="${best%% *}" 'BEGIN{exit !(a < b)}'; then best=$row; fi
  done
  echo "$best"
}

echo "| trace | Kineto file | ET file | reader | load s (best of 3) | CPU s | peak MB |"
echo "|---|---|---|---|---|---|---|"
for d in "$@"; do
  k=$(ls "$d"/kineto.json* 2>/dev/null | head -1)
  e=$(ls "$d"/et.json* 2>/dev/null | head -1)
  ksz=$(stat -c %s "$k")
  inflated=$(if [ "${k%.gz}" != "$k" ]; then gzip -dc "$k" | wc -c; else echo "$ksz"; fi)
  kdesc=$(awk -v s="$ksz" -v i="$inflated" 'BEGIN{ if (s == i) printf "%.0f MB", s/1e6;
          else printf "%.0f MB gz (%.0f MB)", s/1e6, i/1e6 }')
  edesc=$(awk -v s="$(stat -c %s "$e")" 'BEGIN{printf "%.1f MB", s/1e6}')
  for r in stream dom; do
    [ $r = dom ] && { [ "${MT_BENCH_DOM:-0}" = 1 ] && [ "$inflated" -lt 300000000 ] || continue; }
    read -r wall cpu mb <<< "$(measure MITOSIS_JSON_READER=$r /usr/bin/time -f "%e %U %S %M" "$bin" inspect "$d")"
    echo "| $(basename "$d") | $kdesc | $edesc | $r | $wall | $cpu | $mb |"
  done
done
