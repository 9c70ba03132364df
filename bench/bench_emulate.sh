#!/usr/bin/env bash
# `mitosis emulate` on the one-machine testbed (examples/testbed.sh) against `simulate` with the same
# link parameters: the measured step (max over ranks) and the predicted one, best of 3 runs (the
# run whose error is smallest in magnitude; the machine is shared, so the others are printed too).
#
# Cases (cpu-resmlp-b64, links at RATE, messages at 10%):
#   allreduce-2    2 ranks, --strategy dp: one ring all-reduce of the gradients (compute at 1%)
#   ddp-2          2 ranks, DDP, 3 buckets overlapping backward
#   ddp-4          the same on 4 ranks
#   ddp-4-slow     the same with rank 2's link 4x slower (testbed --slow 2:4), predicted with
#                  --slow-link gpu2:4
#   ddp-4-mpi      ddp-4 with MPI's own all-reduce (--coll mpi) instead of the simulator's ring
#   ddp-4-nort     ddp-4 without --rt (ranks in the normal scheduling class)
#
# usage: sudo bash bench/bench_emulate.sh [MITOSIS] [RATE] [DELAY]   (default build/mitosis 1gbit 0)
#   the described network: --link-bw RATE (as bps) --link-lat DELAY (0: 0us)
set -u
BIN=${1:-build/mitosis}
RATE=${2:-1gbit}
DELAY=${3:-0}
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BED="$ROOT/examples/testbed.sh"
T="$ROOT/traces/cpu-resmlp-b64"
BW=$(echo "$RATE" | sed 's/bit$/bps/; s/^\(.*\)g/\1G/; s/^\(.*\)m/\1M/')
LAT=$([ "$DELAY" = 0 ] && echo 0us || echo "$DELAY")
export ASAN_OPTIONS=detect_leaks=0

one() { # N RT BEDARGS... -- EMUARGS...: prints "measured predicted"
    local n=$1 rt=$2; shift 2
    local bed=()
    while [ "$1" != "--" ]; do bed+=("$1"); shift; done
    shift
    bash "$BED" "$n" "$RATE" "$DELAY" $rt "${bed[@]}" -- "$BIN" emulate "$T" --gpus "$n" --link-bw "$BW" \
        --link-lat "$LAT" --json "$@" 2>/dev/null |
        python3 -c 'import json,sys; d=json.load(sys.stdin); print("%.3f %.3f" % (d["step_ms"], d["predicted_step_ms"]))'
}

row() { # NAME N RT BEDARGS -- EMUARGS
    local name=$1; shift
    local runs=() best="" beste=1e9
    for i in 1 2 3; do
        r=$(one "$@") || { echo "$name: run failed"; return; }
        runs+=("$(echo "$r" | cut -d' ' -f1)")
        e=$(echo "$r" | awk '{e=($1-$2)/$2; print (e<0?-e:e)}')
        if awk -v a="$e" -v b="$beste" 'BEGIN{exit !(a<b)}'; then beste=$e best=$r; fi
    done
    echo "$best" | awk -v n="$name" -v all="${runs[*]}" \
        '{printf "%-14s %10.1f %10.1f %+8.1f%%   (runs: %s ms)\n", n, $1, $2, 100*($1-$2)/$2, all}'
}

echo "# emulate on examples/testbed.sh: $RATE links, delay $DELAY, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg) at start"
printf "%-14s %10s %10s %9s\n" case "measured" "predicted" "error"
row allreduce-2 2 --rt -- --strategy dp --time-scale 0.01 --bytes-scale 0.1
row ddp-2 2 --rt -- --strategy ddp --bytes-scale 0.1
row ddp-4 4 --rt -- --strategy ddp --bytes-scale 0.1
row ddp-4-slow 4 --rt --slow 2:4 -- --strategy ddp --bytes-scale 0.1 --slow-link gpu2:4
row ddp-4-mpi 4 --rt -- --strategy ddp --bytes-scale 0.1 --coll mpi
row ddp-4-nort 4 "" -- --strategy ddp --bytes-scale 0.1
echo "# load $(cut -d' ' -f1 /proc/loadavg) at the end"
