#!/usr/bin/env bash
# bench_estimate: the cost estimate (run/estimate.h, `--dry-run`) against the run it predicts, on
# the plans the constants in run/estimate.c were fitted to: ResNet-50 DDP at 131,072 GPUs (switch,
# multinode; ringflow), --no-fold, tp4 x pp8, a 16,384-GPU GPT hybrid, the exact ring, tree,
# hier, direct, --routing latency (multinode tiers and a leaf-spine topology file: Dijkstra per
# GPU), and compare of every plan for 64 GPUs.
# Usage: bench/bench_estimate.sh [path/to/mitosis] [shared traces dir] [repeats]   (markdown table)
# "events est." and "est. s" / "est. MiB" are the --dry-run line's; "events" the run's count; "sim
# s" the simulation's own seconds (the summary's "simulated ... in S s"; for compare the whole
# command's "N plans in S s"), best of `repeats` (default 3) by CPU time since the machine is
# shared; "peak RSS MiB" the whole process (/usr/bin/time) of that run. x = estimate / measured.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
. "$here/benchlib.bash"
bench_setup bench_estimate "$@"
gpt=$here/../traces/cpu-gpt-l8h16-b2
python3 - "$tmp/leafspine4096.csv" <<'PY'
import sys
with open(sys.argv[1], "w") as f:  # 4096 GPUs, 128 leaves of 32, 8 spines: no structured router
    f.write("src,dst,bandwidth,latency\n")
    for g in range(4096): f.write(f"gpu{g},leaf{g // 32},50GB/s,1us\n")
    for l in range(128):
        for s in range(8): f.write(f"leaf{l},spine{s},400GB/s,2us\n")
PY

row() { # label command args...   (command: simulate TRACE ... or compare TRACE ...)
  local label=$1; shift
  "$bin" "$@" --dry-run >"$tmp/dry" 2>&1
  bench_best "$bin" "$@"
  python3 - "$label" "$tmp/dry" "$tmp/best.txt" "$tmp/best.time" <<'PY'
import re, sys
label, dry, out, tm = sys.argv[1:5]
d, t = open(dry).read(), open(out).read()
unit = {"": 1, "k": 1e3, "M": 1e6, "G": 1e9}
m = re.search(r"about ([\d.]+) ([kMG]?) ?events, ~([\d.]+) (s|min|h) on this machine, ~([\d.]+) (B|kB|MB|GB|TB)", d)
ev_e = float(m.group(1)) * unit[m.group(2)]
s_e = float(m.group(3)) * {"s": 1, "min": 60, "h": 3600}[m.group(4)]
mem_e = float(m.group(5)) * {"B": 1, "kB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[m.group(6)] / 2**20
sim = re.search(r"^simulated +(\d+) events?,.* in ([\d.]+) s", t, re.M)
if sim:
    ev, s = int(sim.group(1)), float(sim.group(2))
else:  # compare: the whole command
    ev, s = None, float(re.search(r"^\d+ (?:plans|runs) in ([\d.]+) s", t, re.M).group(1))
rss = int(open(tm).read().split()[-3]) / 1024
evs = f"{ev} | x{ev_e / ev:.2f}" if ev else "- | -"
print(f"| {label} | {ev_e:.3g} | {evs} | {s_e:.2f} | {s:.2f} | x{s_e / s:.2f} | {mem_e:.0f} | {rss:.0f} | x{mem_e / rss:.2f} |")
PY
}

echo "| case | events est. | events | x | est. s | sim s | x | est. MiB | peak RSS MiB | x |"
echo "|---|---|---|---|---|---|---|---|---|---|"
row "ResNet-50 DDP switch:131072" simulate "$res" --gpus 131072 --strategy ddp
row "ResNet-50 DDP multinode 131072" simulate "$res" --gpus 131072 --strategy ddp --topology multinode:nodes=16384,gpus=8
row "ResNet-50 DDP --no-fold switch:65536" simulate "$res" --gpus 65536 --strategy ddp --no-fold
row "ResNet-50 tp4 pp8 dp256 multinode" simulate "$res" --gpus 8192 --tp 4 --pp 8 --topology multinode:nodes=1024,gpus=8
row "GPT l8h16 tp8 pp16 dp128 multinode" simulate "$gpt" --gpus 16384 --tp 8 --pp 16 --dp 128 --micro-batches 2 \
    --topology multinode:nodes=2048,gpus=8
row "ResNet-50 DDP ring steps switch:1024" simulate "$res" --gpus 1024 --strategy ddp --ring-model steps
row "ResNet-50 DDP tree switch:4096" simulate "$res" --gpus 4096 --strategy ddp --algo tree
row "ResNet-50 DDP hier multinode 4096" simulate "$res" --gpus 4096 --strategy ddp --algo hier \
    --topology multinode:nodes=512,gpus=8
row "ResNet-50 DDP direct switch:256" simulate "$res" --gpus 256 --strategy ddp --algo direct
row "ResNet-50 DDP --routing latency multinode 2048" simulate "$res" --gpus 2048 --strategy ddp \
    --topology multinode:nodes=256,gpus=8 --routing latency
row "ResNet-50 DDP --routing latency leaf-spine file 4096" simulate "$res" --gpus 4096 --strategy ddp \
    --topology "$tmp/leafspine4096.csv" --routing latency
row "compare ResNet-50, every plan for 64 GPUs (--jobs 1)" compare "$res" --gpus 64 --jobs 1 --exhaustive
echo
echo "load average at the end: $(cut -d' ' -f1-3 /proc/loadavg)"
