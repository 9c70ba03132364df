#!/usr/bin/env bash
# The paper's heterogeneous decentralized training case study (Hop, ASPLOS'19): 8 GPUs train
# ResNet-50 (the shared H100 trace: 70.7 ms per iteration, 102 MB model) by gossip over 100 Gb/s
# NICs; each GPU's uplink is slowed by a random factor in [1, 10] (8 seeded groups). Graphs: a
# ring with a chord from each node to its most distant one, and a double ring. Queue-based
# synchronisation with bounded staleness 1; one backup worker versus none. Prints the time for
# every worker to do 20 iterations and the speed-up of the backup worker.
# Uses build/mitosis (built if missing) or $MITOSIS; the trace comes from ../shared/traces (or
# $MT_SHARED_TRACES); without it the same model runs on --compute 70.7ms --model-bytes 102MB.
set -euo pipefail
cd "$(dirname "$0")/.."
MITOSIS=${MITOSIS:-build/mitosis}
TRACES=${MT_SHARED_TRACES:-../shared/traces}
if [ ! -x "$MITOSIS" ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 >/dev/null
fi
src=(--compute 70.723ms --model-bytes 102.23MB)
[ -d "$TRACES/triosim-csv-resnet50-h100-bs128" ] && src=("$TRACES/triosim-csv-resnet50-h100-bs128")
"$MITOSIS" hop "${src[@]}" --workers 8 --graph ring-chords,double-ring --staleness 1 --backups 1 \
    --iterations 20 --groups 8 --seed 1 --slowdown 1:10 --link-bw 100Gbps
