#!/usr/bin/env bash
# bench_chakra: Chakra ET export (`simulate --chakra DIR`) and import (`simulate DIR --as-is`) as N
# grows: a dp x tp2 x pp4 hybrid of the shipped cpu-gpt-tiny-b8 trace on switch:N, N = 64 .. 1024.
# Usage: bench/bench_chakra.sh [path/to/mitosis] [runs]   (prints a markdown table; best of `runs`,
# default 3, of each wall time; RSS of that best run). "simulate" is the same run without --chakra,
# so "export" minus it is the cost of recording the spans and writing the files.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
runs=${2:-3}
tr=$here/../traces/cpu-gpt-tiny-b8
[ -x /usr/bin/time ] || { echo "bench_chakra: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

best() { # prints "wall_s rss_MiB" of the fastest of $runs runs of the command
  local b=""
  for _ in $(seq "$runs"); do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$tmp/out"
    read -r w m <"$tmp/time"
    if [ -z "$b" ] || awk -v w="$w" -v b="${b%% *}" 'BEGIN{exit !(w < b)}'; then b="$w $((m / 1024))"; cp "$tmp/out" "$tmp/best"; fi
  done
  echo "$b"
}
step() { python3 -c 'import json,sys; print("%.6f" % json.load(open(sys.argv[1]))["step_ms"])' "$tmp/best"; }

echo "| N | plan | simulate s | export s | export MiB RSS | files MiB | nodes | import s | import MiB RSS | step ms (simulate) | step ms (import) |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in 64 256 1024; do
  plan=(--gpus "$n" --dp $((n / 8)) --tp 2 --pp 4)
  read -r ws _ < <(best "$bin" simulate "$tr" "${plan[@]}" --json)
  s1=$(step)
  rm -rf "$tmp/ck"
  read -r we me < <(best "$bin" simulate "$tr" "${plan[@]}" --chakra "$tmp/ck" --json)
  mib=$(du -sm "$tmp/ck" | cut -f1)
  read -r wi mi < <(best "$bin" simulate "$tmp/ck" --as-is --json)
  s2=$(step)
  nodes=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1]))["nodes"])' "$tmp/best")
  echo "| $n | ${n}/8 x 2 x 4 | $ws | $we | $me | $mib | $nodes | $wi | $mi | $s1 | $s2 |"
done
