#!/usr/bin/env bash
# bench_plansearch: `mitosis compare`'s plan search, exhaustive (--exhaustive: every plan simulated)
# against pruned (the default, --top 10: plans whose bound keeps them out of the first 10 rows that
# fit in memory are not simulated, run/prune.h), on Llama-3-8B (32 blocks from the 8-block H100 trace, --blocks 32)
# at N GPUs (default 128; issue 47's case is 1024) on multinode:nodes=N/8,gpus=8, global batch N.
# Usage: bench/bench_plansearch.sh [path/to/mitosis] [N]   env JOBS (default 2), TOP (default: none given,
#   compare's default of 10),
#   REPS (default 1: the pruned and before runs REPS times each, in turn, the best CPU kept; the machine
#   is shared, so interleave and take the best), EXHAUSTIVE=0 (no exhaustive run: no rows check),
#   BEFORE (optional: another mitosis, e.g. an older build, run pruned too: a "before" row, and whether
#   the rows both runs kept and the first TOP rows are the same, and the rest of the JSON, wall_s aside)
# Prints a markdown table: mode, plans listed, simulated (ranked + skipped), pruned, wall s, CPU s
# (user + system: the measure on a loaded machine) and peak RSS (/usr/bin/time, the whole process), and whether every row the pruned run kept equals the
# exhaustive run's (same numbers, same order) with the same ranking down to the TOP-th row that fits
# in memory (rows pruned for their state alone aside).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
n=${2:-128}
jobs=${JOBS:-2} top=${TOP:-10}
pruned_flags=(); [ -n "${TOP:-}" ] && pruned_flags=(--top "$TOP")
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
args=(compare "$here/../traces/h100-llama3-8b-8blocks-b1-bf16" --blocks 32 --gpus "$n"
      --topology "multinode:nodes=$((n / 8)),gpus=8" --batch "$n" --jobs "$jobs" --json)
modes="pruned"
[ "${EXHAUSTIVE:-1}" != 0 ] && modes="exhaustive $modes"
[ -n "${BEFORE:-}" ] && modes="$modes before"
cpu() { tail -1 "$1" | awk '{print $3 + $4}'; }
for rep in $(seq "${REPS:-1}"); do
  for mode in $modes; do
    [ "$mode" = exhaustive ] && [ "$rep" -gt 1 ] && continue
    extra=(--exhaustive); [ "$mode" != exhaustive ] && extra=("${pruned_flags[@]}")
    b=$bin; [ "$mode" = before ] && b=$BEFORE
    /usr/bin/time -f "%e %M %U %S" -o "$tmp/run.time" "$b" "${args[@]}" "${extra[@]}" >"$tmp/$mode.json" 2>/dev/null
    if [ ! -f "$tmp/$mode.time" ] || awk -v a="$(cpu "$tmp/run.time")" -v b="$(cpu "$tmp/$mode.time")" 'BEGIN {exit !(a < b)}'; then
      cp "$tmp/run.time" "$tmp/$mode.time"
    fi
  done
done
echo "Llama-3-8B (32 blocks) compare on $n GPUs, --jobs $jobs, $(nproc) cores, load $(cut -d' ' -f1 /proc/loadavg)"
echo
echo "| mode | plans | simulated | pruned | wall s | CPU s | peak RSS MiB | rows = exhaustive |"
echo "|---|---|---|---|---|---|---|---|"
python3 - "$tmp" "$top" <<'PY'
import json, sys
tmp, top = sys.argv[1], int(sys.argv[2])
import os
d = {m: json.load(open(f"{tmp}/{m}.json")) for m in ("exhaustive", "pruned", "before") if os.path.exists(f"{tmp}/{m}.json")}
by = {r["label"]: r for r in d["exhaustive"]["rows"]} if "exhaustive" in d else None
for m, x in d.items():
    wall, kb, us, sy = open(f"{tmp}/{m}.time").read().split()[-4:]
    pr = len(x.get("pruned", []))
    n = len(x["rows"]) + len(x["skipped"]) + pr
    same = "-"
    if m == "before":  # a tighter bound prunes more rows; those both kept, and the first TOP, must be the same
        strip = lambda j: {k: v for k, v in j.items() if k not in ("wall_s", "rows", "pruned")}
        mine = {r["label"]: r for r in d["pruned"]["rows"]}
        ok = strip(x) == strip(d["pruned"]) and all(mine[r["label"]] == r for r in x["rows"] if r["label"] in mine)
        ok = ok and [r["label"] for r in x["rows"]][:top] == list(mine)[:top]
        same = "rows both kept, first TOP: " + ("same" if ok else "DIFFER")
    elif m == "pruned" and by is not None:
        kept = [r["label"] for r in x["rows"]]
        ok = all(by.get(r["label"]) == r for r in x["rows"])
        fit = [i for i, r in enumerate(d["exhaustive"]["rows"]) if not r["over_mem"]]
        mem = {p["label"] for p in x.get("pruned", []) if p["reason"].startswith("memory: ")}
        head = [l for l in list(by)[:fit[top - 1] + 1 if len(fit) >= top else len(by)] if l not in mem]
        ok = ok and kept == [l for l in by if l in set(kept)] and kept[:len(head)] == head
        same = "yes" if ok else "NO"
    print(f"| {m} | {n} | {len(x['rows']) + len(x['skipped'])} | {pr} | {float(wall):.1f} | {float(us) + float(sy):.1f} | {int(kb) / 1024:.0f} | {same} |")
PY
