#!/usr/bin/env bash
# Integration: symmetry folding (issue 22). For each strategy, a symmetric case run folded (the
# default) and with --no-fold must give the same JSON except simulation.events, wall_s and
# folding; the folded run must say it folded and how many GPUs walked (1 per data-parallel class:
# N / dp); an asymmetric case (3 stages of 4 replicas on nodes of 4 GPUs: stage boundaries cross
# nodes differently per replica) must fall back by itself ("diverged") with the same numbers;
# a what-if or --no-fold keeps it off and says why; the text output says which mode ran.
# Network folding (NET=folded|full, NETWHY: the mode and why a folded run's network ran so): the
# collectives inside a replica and pipeline sends carried for replica 0 only, equal to --no-fold
# on every strategy with traffic inside replicas, with the traffic between replicas meeting it
# (ddp buckets during the last backward, ZeRO/FSDP gathers), and --no-net-fold equal too.
# Flow groups (a collective's alike bulk flows as one) are off under --no-fold: the same comparison;
# they run beside the folded network's virtual sends too (a 2048-GPU pipeline with 1024 replicas).
# Usage: bash fold.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: fold.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-fold.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
command -v python3 >/dev/null || { echo "fold.sh: needs python3"; exit 77; }
fails=0
tr="$root/traces"

# same NAME MODE WALKERS WHY TRACE ARGS...: folded and --no-fold JSON equal; mode/walkers/why as given.
# NET=folded|full NETWHY=...: the folded run's network mode and why; NETCOPIES=0|+: none / some of the
# network's copies ran as flows. One python runs them all through libmitosis, each trace opened once
# (libsim.py); the text and bad-input checks below run the binary.
. "$(dirname "$0")/libsim.bash"
cases=()
same() { cases+=("${NET:-}|${NETWHY:-}|${NETCOPIES:-}|$(printf '%s\t' "$@")"); }

moe="$root/tests/fixtures/moe-tiny" # a small MoE transformer: 35 layers, 4 experts, 2 blocks (its pipelines of
# 3 or 4 stages would cut inside a MoE layer, refused: those cases run the 4-block gpt-tiny)
mn="--topology multinode:nodes=2,gpus=8 --gpus 16"
same "DDP (resnet18, 16 GPUs)" folded 1 "16 data-parallel replicas alike" "$tr/cpu-resnet18-b8" $mn --strategy ddp
same "ZeRO-3" folded 1 "alike" "$moe" $mn --dp 16 --zero 3
same "FSDP, hybrid shards of 4" folded 1 "alike" "$moe" $mn --dp 16 --fsdp --fsdp-shard 4
same "TP 2 x DP 8" folded 2 "alike" "$moe" $mn --dp 8 --tp 2
same "CP 2 x DP 8" folded 2 "alike" "$moe" $mn --dp 8 --cp 2
same "EP 4 x DP 4, skewed experts" folded 4 "alike" "$moe" $mn --ep 4 --dp 4 --expert-skew 1.5
same "hybrid TP 2 x PP 4 x DP 2 (1F1B), a replica per node" folded 8 "alike" "$tr/cpu-gpt-tiny-b8" $mn --tp 2 --pp 4 --dp 2 \
  --micro-batches 2
same "PP 2 x DP 4 on switch, 2 steps" folded 2 "alike" "$moe" --topology switch:8 --gpus 8 --pp 2 --dp 4 \
  --micro-batches 2 --steps 2
NET=folded NETWHY="stands for all 8" NETCOPIES=0 same "network: TP 2 x DP 8" folded 2 "alike" "$moe" $mn --dp 8 --tp 2
NET=folded NETWHY="stands for all 2" NETCOPIES=+ same "network: TP 2 x PP 4 x DP 2, DDP buckets meet the pipeline" \
  folded 8 "alike" "$tr/cpu-gpt-tiny-b8" --topology switch:16 --gpus 16 --tp 2 --pp 4 --dp 2 --micro-batches 2 --strategy ddp
NET=folded NETWHY="stands for all 4" NETCOPIES=+ same "network: TP 2 x PP 2 x DP 4, ZeRO-3" folded 4 "alike" \
  "$moe" --topology switch:16 --gpus 16 --tp 2 --pp 2 --dp 4 --zero 3 --micro-batches 2
NET=folded NETWHY="stands for all 4" same "network: interleaved 1F1B on a fat-tree" folded 4 "alike" \
  "$tr/cpu-gpt-tiny-b8" --topology fattree:k=4 --gpus 16 --tp 2 --pp 2 --dp 4 --micro-batches 4 --vpp 2
NET=folded NETWHY="stands for all 4" same "network: rail-less multinode, gpipe, dp" folded 4 "alike" \
  "$tr/cpu-gpt-tiny-b8" --topology multinode:nodes=4,gpus=4,fabric=switch --gpus 16 --tp 2 --pp 2 --dp 4 \
  --micro-batches 8 --schedule gpipe --strategy dp
# flow groups under network folding: DDP's 1,024-rank bucket rings run as groups while replica 0's pipeline
# sends stand for all; sends that meet a group's members make them flows, in every replica (copies as flows)
NET=folded NETWHY="stands for all 1024" NETCOPIES=+ same "network: flow groups meet the pipeline, 2048 GPUs" folded 2 \
  "alike" "$tr/cpu-gpt-tiny-b8" --topology multinode:nodes=2048,gpus=1 --gpus 2048 --pp 2 --dp 1024 --micro-batches 2
NET=full NETWHY="--no-net-fold" same "network: --no-net-fold" folded 4 "alike" "$tr/cpu-gpt-tiny-b8" \
  --topology fattree:k=4 --gpus 16 --tp 2 --pp 2 --dp 4 --micro-batches 4 --no-net-fold
NET=full NETWHY="no traffic stays inside a replica" same "network: DDP alone" folded 1 "alike" \
  "$tr/cpu-resnet18-b8" $mn --strategy ddp
# flow groups (netmodels/flow.h): DDP's trees over 256 nodes run their 2,048 rail flows as one group
# (the folded run), one flow each under --no-fold: equal
same "flow groups: DDP trees, 2048 GPUs" folded 1 "alike" "$tr/cpu-resnet18-b8" --topology multinode:nodes=256,gpus=8 \
  --gpus 2048 --strategy ddp
same "asymmetric: falls back" full 12 "the replicas diverged" "$tr/cpu-gpt-tiny-b8" --topology multinode:nodes=3,gpus=4 --gpus 12 \
  --pp 3 --dp 4 --micro-batches 2
same "a straggler: off" full 16 "a what-if scenario" "$tr/cpu-resnet18-b8" $mn --strategy ddp --slow-gpu 3:1.5
same "embedding tables per replica: off" full 16 "embedding tables are owned per replica" "$root/tests/fixtures/dlrm-tiny" \
  $mn --dp 16 --embedding-shard table

printf '%s\n' "${cases[@]}" > "$tmp/cases"
libsim_python "$bin" - "$bin" "$tmp/cases" "$(dirname "$0")" <<'PY' || fails=$((fails + $?))
import json, sys
sys.path.insert(0, sys.argv[3])
from libsim import Sim
sim, failed = Sim(sys.argv[1]), 0
for line in open(sys.argv[2]).read().splitlines():
    net, netwhy, copies, rest = line.split("|", 3)
    name, mode, walkers, why, trace, *args = rest.rstrip("\t").split("\t")
    walkers = int(walkers)
    args = " ".join(args).split()
    (rc, out, err), (rcb, outb, errb) = sim.simulate(trace, *args), sim.simulate(trace, *args, "--no-fold")
    if rc or rcb:
        print(f"FAIL: {name}: the run failed: {err}{errb}"); failed += 1; continue
    a, b = json.loads(out), json.loads(outb)
    fa, fb = a["simulation"].pop("folding"), b["simulation"].pop("folding")
    for x in (a, b):
        for k in ("events", "wall_s", "peak_rss_bytes"):
            x["simulation"].pop(k)
    ok = True
    if fa["mode"] != mode or fa["walkers"] != walkers or why not in fa["why"]:
        print(f"  folded run: {fa}, want mode {mode}, {walkers} walkers, why containing '{why}'"); ok = False
    if net and (fa.get("network") != net or netwhy not in fa.get("network_why", "")):
        print(f"  folded run's network: {fa}, want {net}, why containing '{netwhy}'"); ok = False
    if copies and (fa.get("network_copies", -1) > 0) != (copies == "+"):
        print(f"  copies that ran as flows: {fa.get('network_copies')}, want {copies}"); ok = False
    if fb["mode"] != "full" or fb["why"] != "--no-fold":
        print(f"  --no-fold run: {fb}"); ok = False
    if a != b:
        print("  results differ in: " + ", ".join(k for k in a if a[k] != b.get(k))); ok = False
    print(f"{'ok' if ok else 'FAIL'}: {name}")
    failed += not ok
print(sim.summary())
sys.exit(min(failed, 100))
PY

"$bin" simulate "$tr/cpu-resnet18-b8" $mn --strategy ddp > "$tmp/t" 2>&1
if grep -q "^folded     1 of 16 GPUs walked their programs: 16 data-parallel replicas alike" "$tmp/t" &&
   grep -q "^           network unfolded: no traffic stays inside a replica" "$tmp/t"; then
  echo "ok: text output says folded"; else echo "FAIL: text output: $(tail -2 "$tmp/t")"; fails=$((fails + 1)); fi
"$bin" simulate "$tr/cpu-resnet18-b8" $mn --strategy ddp --no-fold > "$tmp/t" 2>&1
if grep -q "^unfolded   every GPU walked its program: --no-fold" "$tmp/t"; then
  echo "ok: text output says unfolded"; else echo "FAIL: text output: $(tail -2 "$tmp/t")"; fails=$((fails + 1)); fi

# the waits line stays short when many replicas wait alike (64 blocks of 2 GPUs per line here; ~100 KB
# on one line at 131,072 GPUs before), while the JSON lists every GPU
"$bin" simulate "$tr/cpu-gpt-tiny-b8" --topology multinode:nodes=64,gpus=8 --gpus 512 --tp 2 --pp 4 --dp 64 \
  --micro-batches 2 > "$tmp/t" 2>&1
if awk '/^waits /{on=1} on&&/^$/{exit} on{n++; if (length($0) > 300) long++} END{exit !(n >= 2 && !long)}' "$tmp/t" &&
   grep -q "^waits      GPUs 0-1, 8-9, \.\.\., 504-505 (64 blocks of 2, one every 8 GPUs) wait" "$tmp/t" &&
   "$bin" simulate "$tr/cpu-gpt-tiny-b8" --topology multinode:nodes=64,gpus=8 --gpus 512 --tp 2 --pp 4 --dp 64 \
     --micro-batches 2 --json | python3 -c "import json,sys; g=json.load(sys.stdin)['gpus']
w=[x['rank'] for x in g if x['waited_for'] in range(2, 512, 8) or x['waited_for'] in range(3, 512, 8)]
assert len(w) == 128 and w[:3] == [0, 1, 8], w"; then
  echo "ok: waits lines under 300 characters at 64 replicas; the JSON names whom each of 512 GPUs waited for"
else echo "FAIL: waits lines: $(grep -A3 '^waits' "$tmp/t" | cut -c1-400)"; fails=$((fails + 1)); fi

# bad input: the switches take no value (one line naming the flag, exit 2)
for f in --no-fold --no-net-fold; do
  "$bin" simulate "$tr/cpu-resnet18-b8" --gpus 2 "$f=1" > "$tmp/o" 2> "$tmp/e"; rc=$?
  if [ "$rc" -eq 2 ] && [ "$(wc -l < "$tmp/e")" -eq 1 ] && grep -q -- "$f takes no value" "$tmp/e"; then
    echo "ok: $f=1 refused"; else echo "FAIL: $f=1: rc $rc, $(cat "$tmp/e")"; fails=$((fails + 1)); fi
done

[ "$fails" -eq 0 ] || { echo "fold.sh: $fails failure(s)"; exit 1; }
echo "fold.sh: all passed"
