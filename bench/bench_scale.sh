#!/usr/bin/env bash
# bench_scale: whole-process wall time and peak memory of `mitosis simulate` at 10^4..10^6 GPUs
# (issues 22, 47): ResNet-50 (TrioSim CSV, H100, batch 128 per GPU) DDP on switch:N, on
# multinode:nodes=N/8,gpus=8 (rail fabric) and on a fat-tree, a 16,384-GPU tp8 x pp16 x dp128 GPT
# (traces/cpu-gpt-l8h16-b2, 2 micro-batches: its replica batch is 2) on a multinode fabric, folded
# (programs and network), --no-net-fold and --no-fold, ResNet-50 tp4 x pp8 x dp256 with and without
# the network folded, the exact ring (--ring-model steps) at 1024 GPUs, and ResNet-50 DDP at 524,288
# GPUs under NCCL's tuner and as rings (issue 44); 1,048,576 GPUs with the network's flow groups
# (issue 47, docs/scale.md: before -> after there).
# Usage: bench/bench_scale.sh [path/to/mitosis] [shared traces dir] [repeats]   (markdown table)
# Each row is the best of `repeats` runs (default 3) by CPU time (user + system): the machine is
# shared, and a single-threaded run's CPU time is what its wall time is on a quiet machine, while
# its wall time there grows with everyone else's load ("wall s" is reported too, of the same run;
# the load average is printed at the end). "cpu s", "wall s" and "peak RSS" are the whole process (/usr/bin/time:
# loading the trace, building the topology, simulating, printing the text summary; --json streams
# its rows: +0.1-0.2 s and no more memory at 131,072 GPUs, bench_json.sh); "sim s" is the
# simulation alone (the summary's "simulated ... in S s"); "mode" is folded (walkers = GPUs that
# walked their programs; ", network folded": replica 0's own traffic stood for every replica's) or
# full.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/benchlib.bash"
bench_setup bench_scale "$@"
gpt=$here/../traces/cpu-gpt-l8h16-b2
[ -d "$gpt" ] || { echo "bench_scale: $gpt is absent" >&2; exit 1; }

row() { # label trace topology args...
  local label=$1 tr=$2 topo=$3; shift 3
  bench_best "$bin" simulate "$tr" --topology "$topo" "$@"
  python3 - "$label" "$topo" "$tmp/best.txt" "$tmp/best.time" <<'PY'
import re, sys
label, topo, out, tm = sys.argv[1:5]
t = open(out).read()
tp, pp, dp = re.search(r"^mesh +tp (\d+) x pp (\d+)(?: x \w+ \d+)* x dp (\d+)", t, re.M).groups()
step = re.search(r"^step time +([\d.]+) ms", t, re.M).group(1)
ev, sim = re.search(r"^simulated +(\d+) events?,.* in ([\d.]+) s", t, re.M).groups()
f = re.search(r"^folded +(\d+) of", t, re.M)
mode = f"folded ({f.group(1)})" if f else "full"
if f and re.search(r"^ +network folded", t, re.M):
    mode += ", network folded"
wall, rss_kb, user, system = open(tm).read().split()[-4:]
n = int(dp) * int(tp) * int(pp)
print(f"| {label} | {n} | {dp}x{tp}x{pp} | {topo} | {step} | {ev} | {mode} | {sim} | "
      f"{float(user) + float(system):.2f} | {float(wall):.2f} | {int(rss_kb) / 1024:.0f} |")
PY
}

echo "| case | GPUs | dp x tp x pp | topology | step ms | events | mode (walkers) | sim s | cpu s | wall s | peak RSS MiB |"
echo "|---|---|---|---|---|---|---|---|---|---|---|"
for n in 16384 65536 131072; do
  row "ResNet-50 DDP" "$res" "switch:$n" --gpus "$n" --strategy ddp
  row "ResNet-50 DDP" "$res" "multinode:nodes=$((n / 8)),gpus=8" --gpus "$n" --strategy ddp
done
row "ResNet-50 DDP" "$res" "fattree:k=64" --gpus 65536 --strategy ddp
row "ResNet-50 DDP, --no-fold" "$res" "switch:131072" --gpus 131072 --strategy ddp --no-fold
row "GPT l8h16 tp8 pp16 dp128" "$gpt" "multinode:nodes=2048,gpus=8" --gpus 16384 --tp 8 --pp 16 --dp 128 \
    --micro-batches 2
row "GPT l8h16 tp8 pp16 dp128, --no-fold" "$gpt" "multinode:nodes=2048,gpus=8" --gpus 16384 --tp 8 --pp 16 \
    --dp 128 --micro-batches 2 --no-fold
row "GPT l8h16 tp8 pp16 dp128, --no-net-fold" "$gpt" "multinode:nodes=2048,gpus=8" --gpus 16384 --tp 8 --pp 16 \
    --dp 128 --micro-batches 2 --no-net-fold
row "ResNet-50 tp4 pp8 dp256" "$res" "multinode:nodes=1024,gpus=8" --gpus 8192 --tp 4 --pp 8
row "ResNet-50 tp4 pp8 dp256, --no-net-fold" "$res" "multinode:nodes=1024,gpus=8" --gpus 8192 --tp 4 --pp 8 --no-net-fold
# NCCL's tuner on one switch of 2048 GPUs (--gpus N's default topology): NVLS (direct, n(n-1)
# sends a phase) before the NVLink-domain bound (576, extrapolate/nccl.h): 83.8 M events, 106.6 s CPU,
# 3.1 GB; rings now (issue 47)
row "ResNet-50 DDP (NCCL's tuner)" "$res" "switch:2048" --gpus 2048 --strategy ddp
# the exact ring (every step's sends, O(N^2) sends) that --ring-model auto replaces above 64 ranks
row "ResNet-50 DDP, ring steps" "$res" "switch:1024" --gpus 1024 --strategy ddp --ring-model steps
row "ResNet-50 DDP, ring steps" "$res" "multinode:nodes=128,gpus=8" --gpus 1024 --strategy ddp --ring-model steps
# the largest job taken (util/limits.h MT_GPUS_MAX = 2^20): DDP and a 3-D hybrid (issue 47); MILLION=0 skips
if [ "${MILLION:-1}" != 0 ]; then
  # issue 44: 524,288 GPUs under NCCL's tuner (the default: trees across 65,536 nodes) and as rings
  # at link peak (2(N-1) steps of latency: the step is the all-reduce's latency)
  row "ResNet-50 DDP (NCCL's tuner)" "$res" "multinode:nodes=65536,gpus=8" --gpus 524288 --strategy ddp
  row "ResNet-50 DDP, --algo ring" "$res" "multinode:nodes=65536,gpus=8" --gpus 524288 --strategy ddp --algo ring
  row "GPT tiny DDP" "$here/../traces/cpu-gpt-tiny-b8" "multinode:nodes=131072,gpus=8" --gpus 1048576 --strategy ddp
  # issue 47's goal (5 s CPU, 2 GB): ResNet-50 DDP on the rail fabric and on --gpus N's default
  # switch, and the 3-D hybrid (its replica batch is 2: 2 micro-batches)
  row "ResNet-50 DDP" "$res" "multinode:nodes=131072,gpus=8" --gpus 1048576 --strategy ddp
  row "ResNet-50 DDP" "$res" "switch:1048576" --gpus 1048576 --strategy ddp
  row "GPT l8h16 tp8 pp8 dp16384" "$gpt" "multinode:nodes=131072,gpus=8" --gpus 1048576 --tp 8 --pp 8 \
      --dp 16384 --micro-batches 2
fi
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
