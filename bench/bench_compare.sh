#!/usr/bin/env bash
# bench_compare: `mitosis compare` of every plan (--plans auto) one after another (--jobs 1), on
# worker threads (--jobs J, default 2) and over MPI ranks (mpirun -np R --jobs 1, default R = 2;
# left out when mpirun is absent or mitosis was built without MPI). ResNet-50 (TrioSim CSV, H100,
# batch 128 per GPU) at N GPUs (default 1024) on switch:N.
# Usage: bench/bench_compare.sh [path/to/mitosis] [shared traces dir] [N]
#   env REPS (default 3): runs per mode, the best wall time is kept (the machine is shared);
#   env JOBS, RANKS: the thread and rank counts.
# Prints a markdown table: plans, wall s (best of REPS, the whole process: loading, the 1-GPU
# baseline, every plan), "rows s" (compare's own "N plans in S s"), peak RSS (the largest process:
# /usr/bin/time's maximum resident set) and whether the table equals the serial one byte for
# byte but the wall time.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/benchlib.bash"
bench_setup bench_compare "${1:-}" "${2:-}" "${REPS:-3}"
n=${3:-1024}
jobs=${JOBS:-2} ranks=${RANKS:-2}
args=(compare "$res" --gpus "$n" --exhaustive)  # every plan simulated (the default prunes: bench_plansearch.sh)

# mode label, then the command line; keeps the best wall time of REPS runs
row() {
  local label=$1 best="" rss=0; shift
  for _ in $(seq "$reps"); do
    /usr/bin/time -f "%e %M" -o "$tmp/time" "$@" >"$tmp/out.$label" 2>"$tmp/err" </dev/null
    read -r wall kb <<<"$(tail -1 "$tmp/time")"
    if [ -z "$best" ] || python3 -c "import sys; sys.exit(not $wall < $best)"; then best=$wall; cp "$tmp/out.$label" "$tmp/best.$label"; fi
    [ "$kb" -gt "$rss" ] && rss=$kb
  done
  local last plans rows_s same="serial"
  last=$(tail -1 "$tmp/best.$label")   # "621 plans in 84.2 s"
  plans=${last%% *}
  rows_s=$(echo "$last" | sed -E 's/.* in ([0-9.]+) s$/\1/')
  if [ "$label" != serial ]; then
    if diff <(sed '$d' "$tmp/best.serial") <(sed '$d' "$tmp/best.$label") >/dev/null; then same=yes; else same=NO; fi
  fi
  printf '| %s | %s | %s | %s | %.1f | %s |\n' "$label" "$plans" "$best" "$rows_s" "$(echo "$rss / 1024" | bc -l)" "$same"
}

echo "ResNet-50 (TrioSim CSV, H100) on $n GPUs, compare --plans auto; $(nproc) cores; best of $reps"
echo
echo "| mode | plans | wall s | rows s | peak RSS MiB | table = serial |"
echo "|---|---|---|---|---|---|"
row serial "$bin" "${args[@]}" --jobs 1
row "jobs $jobs" "$bin" "${args[@]}" --jobs "$jobs"
if command -v mpirun >/dev/null; then
  if mpirun --allow-run-as-root -np 1 "$bin" compare "$res" --gpus 2 --plans ddp=2 2>&1 | grep -q "built without MPI"; then
    echo "(mpirun: this mitosis was built without MPI)"
  else
    row "mpirun -np $ranks" mpirun --allow-run-as-root --oversubscribe -np "$ranks" "$bin" "${args[@]}" --jobs 1
  fi
else
  echo "(mpirun is not installed: apt-get install openmpi-bin)"
fi
