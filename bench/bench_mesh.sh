#!/usr/bin/env bash
# bench_mesh: the data-parallel modes of a 2048-GPU plan (and a GPT-class one at the end) — gpt-tiny (traces/cpu-gpt-tiny-b8) at
# tp 2 x pp 4 x dp 256 (1F1B, 4 micro-batches) with DDP, ZeRO-1/2/3, FSDP and hybrid FSDP (shard
# groups of 8), on switch:2048 and on multinode:nodes=256,gpus=8: step time, bytes each GPU sent
# (mean over GPUs, all classes), parameter and peak memory of GPU 0, and what the run cost.
# Usage: bench/bench_mesh.sh [path/to/mitosis]   (prints a markdown table)
# "sim s" is the simulation alone (JSON simulation.wall_s); "wall s" and "max RSS" are the whole
# process (/usr/bin/time).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
gpt=$here/../traces/cpu-gpt-tiny-b8
[ -x /usr/bin/time ] || { echo "bench_mesh: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

row() { # label topology args...
  local label=$1 topo=$2; shift 2
  # shellcheck disable=SC2086
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" simulate "${TRACE:-$gpt}" --gpus 2048 ${SIZES:---tp 2 --pp 4} \
    --topology "$topo" "$@" --json >"$tmp/out"
  python3 - "$label" "$topo" "$tmp/out" "$tmp/time" <<'PY'
import json, sys
label, topo, out, tm = sys.argv[1:5]
d = json.load(open(out)); s = d["simulation"]; g = d["gpus"][0]
wall, rss_kb = open(tm).read().split()[-2:]
sent = sum(sum(x["traffic_bytes"].values()) for x in d["gpus"]) / len(d["gpus"])
print(f"| {label} | {topo} | {d['step_ms']:.3f} | {sent / 1e6:.2f} | {g['mem_bytes']['params'] / 1e6:.2f} | "
      f"{g['mem_bytes']['peak'] / 1e6:.2f} | {s['events']} | {s['wall_s']:.3f} | {float(wall):.2f} | "
      f"{int(rss_kb) / 1024:.1f} |")
PY
}

echo "| mode | topology | step ms | MB sent per GPU | GPU 0 params MB | GPU 0 peak MB | events | sim s | wall s | max RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
for topo in switch:2048 multinode:nodes=256,gpus=8; do
  row "ddp" "$topo"
  row "zero 1" "$topo" --zero 1
  row "zero 2" "$topo" --zero 2
  row "zero 3" "$topo" --zero 3
  row "fsdp" "$topo" --fsdp
  row "hsdp (shard 8)" "$topo" --fsdp --fsdp-shard 8
done

# A GPT-class plan (issue 17): the 16-head transformer at tp 8 x cp 2 x pp 8 x dp 16 with FSDP,
# 1F1B over 8 micro-batches of 1 (global batch 128).
echo
echo "GPT-class: traces/cpu-gpt-l8h16-b2 at tp 8 x cp 2 x pp 8 x dp 16, 1F1B, 8 micro-batches, global batch 128"
echo
echo "| mode | topology | step ms | MB sent per GPU | GPU 0 params MB | GPU 0 peak MB | events | sim s | wall s | max RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|"
TRACE=$here/../traces/cpu-gpt-l8h16-b2 SIZES="--tp 8 --cp 2 --pp 8 --batch 128" row "fsdp" multinode:nodes=256,gpus=8 --fsdp
TRACE=$here/../traces/cpu-gpt-l8h16-b2 SIZES="--tp 8 --cp 2 --pp 8 --batch 128" row "ddp" multinode:nodes=256,gpus=8
