#!/usr/bin/env bash
# bench/bench_triosim.sh — TrioSim CSV load time against the number of operator rows (issue 42).
#
#   bench/bench_triosim.sh [build/mitosis] [ROWS...]      (default: 5000 20000 100000 1000000)
#
# For each size, bench/gen_triosim.py repeats traces/triosim-csv-vgg13-h100-bs128 (fresh tensor ids
# per repeat, tensor.csv in trace.csv's order) into a temporary folder, then `mitosis inspect` and
# `mitosis simulate --gpus 8` read it; prints rows, tensor rows, wall and CPU seconds and peak MB.
# Linear means the CPU seconds per row stay flat down the table. Set MT_BEFORE=path/to/old/mitosis
# to time an older binary beside it. Timings on a shared machine are noisy (CPU s is steadier).
set -u
bin=build/mitosis
if [ $# -gt 0 ] && [ -x "$1" ] && [ ! -d "$1" ]; then bin=$1; shift; fi
sizes=${*:-5000 20000 100000 1000000}
here=$(cd "$(dirname "$0")" && pwd)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x /usr/bin/time ] || { echo "bench_triosim.sh: needs /usr/bin/time (apt install time)" >&2; exit 2; }

run() { # label cmd...: "wall cpu MB"
  /usr/bin/time -f "%e %U %S %M" "$@" > /dev/null 2> "$tmp/err" || { echo "FAILED: $(tail -1 "$tmp/err")"; return; }
  tail -1 "$tmp/err" | awk '{printf "%.2f | %.2f | %.0f", $1, $2 + $3, $4 / 1024}'
}

echo "| binary | rows | tensor rows | command | wall s | CPU s | CPU us/row | peak MB |"
echo "|---|---|---|---|---|---|---|---|"
for n in $sizes; do
  d=$tmp/t$n
  /usr/bin/python3 "$here/gen_triosim.py" "$n" "$d"
  trows=$(($(wc -l < "$d/tensor.csv") - 1))
  for b in "$bin" ${MT_BEFORE:-}; do
    for cmd in inspect simulate; do
      extra=(); [ $cmd = simulate ] && extra=(--gpus 8 --host-model none)
      row=$(run "$b" $cmd "$d" "${extra[@]}")
      cpu=$(echo "$row" | awk -F' [|] ' '{print $2}')
      per=$(awk -v c="$cpu" -v n="$n" 'BEGIN{ if (c != "") printf "%.1f", c * 1e6 / n }')
      echo "| $(basename "$(dirname "$b")")/$(basename "$b") | $n | $trows | $cmd | ${row%% | *} | $cpu | $per | ${row##* | } |"
    done
  done
  rm -rf "$d"
done
