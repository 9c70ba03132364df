#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), and run the main job: a
# prediction. The shipped ResNet-18 trace (one training step, batch 8, recorded on this kind of
# machine) on 8 GPUs under DDP on an NVSwitch box (dgx-h100), against one GPU; then the same step
# in detail (per-GPU compute, communication, memory).
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
./build/mitosis compare traces/cpu-resnet18-b8 --gpus 8 --topology dgx-h100 --plans ddp=8
echo
./build/mitosis simulate traces/cpu-resnet18-b8 --gpus 8 --strategy ddp --topology dgx-h100
