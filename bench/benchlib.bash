# bench/benchlib.bash — the set-up the whole-process `mitosis` benches share; source it, then call
#   bench_setup NAME [MITOSIS] [SHARED] [REPEATS]
# which sets bin (default build/mitosis), shared (default ../shared/traces), reps (default 3),
# res (ResNet-50 TrioSim CSV), tmp (removed at exit) and fails with one line naming NAME when the
# trace or /usr/bin/time is missing.
bench_setup() {
  local name=$1 here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  bin=${2:-$here/../build/mitosis}
  shared=${3:-$here/../../shared/traces}
  reps=${4:-3}
  res=$shared/triosim-csv-resnet50-h100-bs128
  [ -d "$res" ] || { echo "$name: $res is absent" >&2; exit 1; }
  command -v /usr/bin/time >/dev/null || { echo "$name: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
}

# bench_best CMD...: runs CMD `reps` times under /usr/bin/time (stderr dropped) and keeps the run
# with the least CPU time (user + system: what a single-threaded run takes on a quiet machine)
# in $tmp/best.txt (its stdout) and $tmp/best.time ("wall_s peak_kib user_s sys_s").
bench_best() {
  local best="" c
  for ((i = 0; i < reps; i++)); do
    /usr/bin/time -f "%e %M %U %S" -o "$tmp/time" "$@" >"$tmp/out" 2>/dev/null
    c=$(tail -1 "$tmp/time" | awk '{ printf "%.2f", $3 + $4 }')
    if [ -z "$best" ] || awk -v a="$c" -v b="$best" 'BEGIN { exit !(a < b) }'; then
      best=$c
      cp "$tmp/out" "$tmp/best.txt"
      tail -1 "$tmp/time" >"$tmp/best.time"
    fi
  done
}
