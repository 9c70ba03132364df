#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), and answer one question a
# user brings, from a real GPU trace (one VGG13 training step, batch 512, on one H100; shipped in
# traces/, from sarchlab/triosim):
#   "I will train VGG13 at a global batch of 4096 on H100s. On one DGX-H100 (8 GPUs) or on 8 of
#    them (64 GPUs), which parallel plan is fastest, how much memory does each GPU need, and what
#    does the network between the nodes cost?"
# 1. what the trace was recorded on; 2. seven plans on 8 GPUs (one NVSwitch box), ranked;
# 3. the same plans on 64 GPUs (8 such nodes, one 400 Gb/s NIC per GPU on rail switches), ranked;
# 4. what slower NICs would cost the fastest 64-GPU plan; 5. that plan in detail (per-GPU time,
# traffic, memory).
# GPU time only (--host-model none): this trace's host times were recorded under the profiler and
# the Execution Trace observer, several times slower than an unprofiled host (docs/demo.md). Op
# times at 64 images per GPU from the linear model fitted on the trace (--perf-model linear: a
# smaller batch runs less efficiently); its warnings are printed once, at the end.
# MT_DEMO_NO_BUILD=1 uses an existing build/mitosis (MT_BIN names another binary).
set -euo pipefail
cd "$(dirname "$0")/.."
if [ -z "${MT_DEMO_NO_BUILD:-}" ]; then
  bash .ci/deps
  cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
  cmake --build build -j"$(nproc)" >/dev/null
fi
m=${MT_BIN:-./build/mitosis}
T=traces/triosim-vgg13-h100-bs512
COMMON=(--batch 4096 --host-model none --perf-model linear)
PLANS8=ddp=8,dp=8,ddp=8:zero=2,ddp=8:fsdp,ddp=4:tp=2,ddp=4:pp=2:mb=8,ddp=2:pp=4:mb=16
PLANS64=ddp=64,dp=64,ddp=64:zero=2,ddp=64:fsdp,ddp=32:tp=2,ddp=32:pp=2:mb=2,ddp=16:pp=4:mb=4
NODES='multinode:nodes=8,gpus=8'
warn=$(mktemp)
trap 'rc=$?; [ $rc -eq 0 ] || cat "$warn" >&2; rm -f "$warn"' EXIT  # a failure shows its error

echo "== 1. the trace"
"$m" inspect "$T" | sed -n '1,6p'
echo
echo "== 2. which plan on 8 H100s (one DGX-H100: NVSwitch, 450 GB/s per GPU)?"
"$m" compare "$T" --gpus 8 --topology dgx-h100 "${COMMON[@]}" --plans "$PLANS8" 2>> "$warn"
echo
echo "== 3. which plan on 64 H100s (8 nodes like it, a 400 Gb/s NIC per GPU)?"
"$m" compare "$T" --gpus 64 --topology "$NODES" "${COMMON[@]}" --plans "$PLANS64" 2>> "$warn"
echo
echo "== 4. what the network costs: ddp=64 with slower NICs (50 GB/s = 400 Gb/s, the preset's)"
"$m" compare "$T" --gpus 64 --topology "$NODES" "${COMMON[@]}" --strategy ddp \
  --sweep nic-bw=50Gbps,100Gbps,200Gbps,400Gbps 2>> "$warn"
echo
echo "== 5. the fastest 64-GPU plan in detail"
"$m" simulate "$T" --gpus 64 --strategy ddp --topology "$NODES" "${COMMON[@]}" 2>> "$warn"
if [ -s "$warn" ]; then echo; echo "warnings (each once):"; sed 's/^mitosis [a-z]*: //' "$warn" | sort -u; fi
