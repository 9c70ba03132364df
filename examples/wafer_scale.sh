#!/usr/bin/env bash
# The paper's wafer-scale case study: 12 x 7 = 84 A100-class GPUs on one wafer, data-parallel
# training of VGG13 and ResNet-50 (the shared H100 traces, moved to A100-80GB by the performance
# model's cross-GPU roofline), with
#   - an electrical 2-D mesh (12 x 7, 121 GB/s per link and direction: 484 GB/s per GPU over its
#     4 mesh ports) carrying a ring all-reduce of the gradients, and
#   - the photonic circuit model (8 optical ports per GPU, 484 GB/s in total, 20 ms circuit set-up).
# Prints the compute / communication split of each. Uses build/mitosis (built if missing) or
# $MITOSIS; the traces come from ../shared/traces (or $MT_SHARED_TRACES).
set -euo pipefail
cd "$(dirname "$0")/.."
MITOSIS=${MITOSIS:-build/mitosis}
TRACES=${MT_SHARED_TRACES:-../shared/traces}
if [ ! -d "$TRACES/triosim-vgg13-h100-bs512" ] || [ ! -d "$TRACES/triosim-csv-resnet50-h100-bs128" ]; then
    echo "wafer_scale: skipped: the VGG13 / ResNet-50 traces are not in $TRACES (set MT_SHARED_TRACES)"
    exit 0
fi
if [ ! -x "$MITOSIS" ]; then
    cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null && cmake --build build -j2 >/dev/null
fi
printf '%-10s %-30s %10s %10s %10s %9s %8s %12s\n' model network "step ms" "compute ms" "comm ms" "host ms" "comm %" "samples/s"
for model in VGG13:triosim-vgg13-h100-bs512 ResNet-50:triosim-csv-resnet50-h100-bs128; do
    # the TrioSim CSV does not name its GPU: it is an H100 80GB (traces/README.md)
    src=; [ "$model" != "${model#ResNet}" ] && src="--trace-gpu H100-SXM"
    name=${model%%:*} dir=$TRACES/${model#*:}
    for net in "mesh:12x7 ring all-reduce|--topology mesh:12x7 --link-bw 121GB/s --algo ring" \
               "photonic 8 ports, 20 ms setup|--network photonic --ports 8 --port-bw 60.5GB/s --setup-lat 20ms"; do
        label=${net%%|*} flags=${net#*|}
        # shellcheck disable=SC2086
        "$MITOSIS" simulate "$dir" --gpus 84 --strategy dp --target-gpu A100-80GB $src $flags --json |
            jq -r --arg m "$name" --arg n "$label" \
               '[$m, $n, .step_ms, .gpus[0].compute_ms, .gpus[0].exposed_comm_ms, (.gpus[0].host_wait_ms // 0),
                 100 * .gpus[0].exposed_comm_ms / .step_ms, .samples_per_s] |
                "\(.[0])\t\(.[1])\t\(.[2])\t\(.[3])\t\(.[4])\t\(.[5])\t\(.[6])\t\(.[7])"' |
            awk -F'\t' '{printf "%-10s %-30s %10.2f %10.2f %10.2f %9.2f %7.1f%% %12.0f\n", $1, $2, $3, $4, $5, $6, $7, $8}'
    done
done
echo "(dp: one all-reduce of all gradients after backward, so compute + comm + host = step on every GPU;"
echo " host: the GPU waiting for its CPU thread to launch work, from the trace's host times where it has them)"
