#!/usr/bin/env bash
# bench_json: `simulate --json` against the text summary at 10^4..10^5 GPUs (issue 22): the JSON's
# per-GPU rows are streamed (report/jsonw.h), so its time should be the text's plus the bytes
# written and its peak memory the text's. ResNet-50 (TrioSim CSV) DDP on switch:N.
# Usage: bench/bench_json.sh [path/to/mitosis] [shared traces dir] [repeats] [older mitosis]
# (markdown table; with an older binary, e.g. main's before the streaming, its --json rows too)
# Each cell is the best of `repeats` runs (default 3) by CPU time (user + system; the machine is
# shared), whole process (/usr/bin/time), output to a file in /tmp; "wall s" and "peak RSS" of that run.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/benchlib.bash"
bench_setup bench_json "${@:1:3}"
older=${4:-}

best() { # BIN N output-flags...: "cpu wall rss_mib bytes" of the best run
  local b=$1 n=$2; shift 2
  bench_best "$b" simulate "$res" --gpus "$n" --strategy ddp "$@"
  awk -v sz="$(stat -c %s "$tmp/best.txt")" '{ printf "%.2f %.2f %.0f %s", $3 + $4, $1, $2 / 1024, sz }' "$tmp/best.time"
}

echo "| GPUs | output | cpu s | wall s | peak RSS MiB | MB written |"
echo "|---|---|---|---|---|---|"
for n in 16384 65536 131072; do
  row() { echo "| $n | $1 | $2 | $3 | $4 | $(awk -v z="$5" 'BEGIN { printf "%.1f", z / 1e6 }') |"; }
  read -r c w r z <<<"$(best "$bin" "$n")"
  row text "$c" "$w" "$r" "$z"
  read -r c w r z <<<"$(best "$bin" "$n" --json)"
  row "--json" "$c" "$w" "$r" "$z"
  if [ -n "$older" ]; then
    read -r c w r z <<<"$(best "$older" "$n" --json)"
    row "--json, $older" "$c" "$w" "$r" "$z"
  fi
done
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
