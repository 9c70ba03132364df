#!/usr/bin/env bash
# bench_simulate: wall time and memory of `mitosis simulate` as N grows.
# ResNet-50 (TrioSim CSV, H100, batch 128 per GPU) DDP at N = 8 .. 1024 on switch:N and on
# multinode:nodes=N/8,gpus=8 (NVSwitch nodes joined by 50 GB/s NICs), plus a dp8 x pp4 x tp2
# hybrid at N = 64, VGG13 (Kineto+ET, batch 512) DDP at N = 1024 and 8192, and a tp8 x pp4 x dp256
# VGG13 at N = 8192.
# Usage: bench/bench_simulate.sh [path/to/mitosis] [shared traces dir]   (prints a markdown table)
# "sim s" is the simulation alone (JSON simulation.wall_s); "wall s" and "max RSS" are the whole
# process (/usr/bin/time: loading the trace, building the topology, simulating, writing JSON).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
shared=${2:-$here/../../shared/traces}
res=$shared/triosim-csv-resnet50-h100-bs128
vgg=$shared/triosim-vgg13-h100-bs512
for d in "$res" "$vgg"; do [ -d "$d" ] || { echo "bench_simulate: $d is absent" >&2; exit 1; }; done
[ -x /usr/bin/time ] || { echo "bench_simulate: needs /usr/bin/time (apt-get install time)" >&2; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

row() { # label trace topology args...
  local label=$1 tr=$2 topo=$3; shift 3
  /usr/bin/time -f "%e %M" -o "$tmp/time" "$bin" simulate "$tr" --topology "$topo" "$@" --json >"$tmp/out"
  python3 - "$label" "$topo" "$tmp/out" "$tmp/time" <<'EOF'
import json, sys
label, topo, out, tm = sys.argv[1:5]
d = json.load(open(out)); p = d["plan"]; s = d["simulation"]
wall, rss_kb = open(tm).read().split()[-2:]
exposed = max(g["exposed_comm_ms"] for g in d["gpus"])
print(f"| {label} | {p['gpus']} | {p['dp']}x{p['tp']}x{p['pp']} | {topo} | {d['step_ms']:.3f} | "
      f"{exposed:.3f} | {s['events']} | {s['collectives']} | {s['wall_s']:.3f} | {float(wall):.2f} | "
      f"{int(rss_kb) / 1024:.1f} |")
EOF
}

echo "| model, mode | N | dp x tp x pp | topology | step ms | max exposed ms | events | collectives | sim s | wall s | max RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in 8 16 32 64 128 256 512 1024; do
  row "ResNet-50 ddp" "$res" "switch:$n" --gpus "$n" --strategy ddp
  row "ResNet-50 ddp" "$res" "multinode:nodes=$((n / 8)),gpus=8" --gpus "$n" --strategy ddp
done
# the exact ring (every step's sends, O(N^2)) that --ring-model auto replaces above 64 ranks
row "ResNet-50 ddp, ring steps" "$res" "switch:1024" --gpus 1024 --strategy ddp --ring-model steps
row "ResNet-50 ddp, ring steps" "$res" "multinode:nodes=128,gpus=8" --gpus 1024 --strategy ddp \
    --ring-model steps
row "ResNet-50 hybrid ddp 1f1b" "$res" "switch:64" --gpus 64 --dp 8 --pp 4 --tp 2
row "ResNet-50 hybrid ddp 1f1b" "$res" "multinode:nodes=8,gpus=8" --gpus 64 --dp 8 --pp 4 --tp 2
row "VGG13 ddp" "$vgg" "switch:1024" --gpus 1024 --strategy ddp
row "VGG13 ddp" "$vgg" "multinode:nodes=128,gpus=8" --gpus 1024 --strategy ddp
# 8192 GPUs (host model on): routing 8192 sources is where a quadratic cost would show
row "VGG13 ddp" "$vgg" "switch:8192" --gpus 8192 --strategy ddp
row "VGG13 3D, 16 micro-batches" "$vgg" "multinode:nodes=1024,gpus=8" --gpus 8192 --tp 8 --pp 4 \
    --micro-batches 16 --batch 32768
