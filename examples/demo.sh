#!/usr/bin/env bash
# The README's first command: install what is missing, build (Release), run the main job on a
# shipped trace.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/deps
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)"
./build/mitosis inspect traces/cpu-resnet18-b8
