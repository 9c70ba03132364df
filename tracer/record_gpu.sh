#!/bin/bash
# The GPU recordings of issue 32, in one run on a lent GPU machine (PyTorch 2.x, transformers,
# torchvision): a 2-block slice of a Llama-3-8B-sized decoder and one Mixtral-8x7B-sized MoE block
# (HuggingFace's own code, random init, bf16), ResNet-50 (fp32 and bf16), the same slices at 8 and
# 2 blocks, ResNet-50 with its forward and backward captured as CUDA graphs, then GPT-2/BERT-base as
# time allows. A second run goes on where the first stopped (record_suite.py skips what is there). Each folder
# holds kineto.json.gz, et.json.gz and meta.json with the measured step (CUDA events, median of
# --steps). Everything recorded is packed into DEST as gpu.tar.* parts of 15 MiB, with the log.
#
# usage: tracer/record_gpu.sh DEST [BUDGET_S]     (run from the repository root)
set -u
dest=${1:?usage: tracer/record_gpu.sh DEST [BUDGET_S]}
budget=${2:-420}
root=/tmp/mitosis-gpu
mkdir -p "$dest" "$root"
log="$dest/log.txt"
t0=$(date +%s)
left() { echo $(( budget - ($(date +%s) - t0) )); }
export PYTHONUNBUFFERED=1
{
  nvidia-smi -L; nvidia-smi --query-gpu=name,driver_version,clocks.max.sm,memory.total --format=csv
  python3 -c 'import torch, sys; print("python", sys.version.split()[0], "torch", torch.__version__, "cuda", torch.version.cuda)'
  python3 -c 'import transformers, torchvision; print("transformers", transformers.__version__, "torchvision", torchvision.__version__)'
  tag=$(nvidia-smi --query-gpu=name --format=csv,noheader | grep -o "[HA][0-9]\+" | head -1 | tr A-Z a-z)
  suite() { timeout $(( $(left) > 30 ? $(left) - 20 : 10 )) python3 tracer/record_suite.py --device cuda \
              --warmup 3 --steps 10 --root "$root" --budget-s $(( $(left) - 40 )) "$@"; echo "suite rc=$?"; }
  suite --models llama3-8b-2blocks,mixtral-8x7b-1block --batches 1 --dtypes bf16 -- --seq-len 4096
  suite --models resnet50 --batches 128 --dtypes fp32,bf16
  # the 8-block (2-block) slices: what `mitosis simulate --blocks 8` predicts from the 2 (1) block ones
  suite --models llama3-8b-8blocks,mixtral-8x7b-2blocks --batches 1 --dtypes bf16 -- --seq-len 4096
  suite --models resnet50 --batches 64 --dtypes fp32,bf16
  timeout 90 python3 tracer/collect.py --model resnet50 --batch 128 --device cuda --cuda-graphs \
      --warmup 3 --steps 10 -o "$root/$tag-resnet50-b128-fp32-cudagraphs"; echo "graphs rc=$?"
  suite --models gpt2,bert-base --batches 8,16,32 --dtypes bf16 -- --seq-len 512
  echo "recorded in $(( $(date +%s) - t0 )) s"; du -sh "$root"/*
} >"$log" 2>&1
tar -cf - -C "$root" . | split -b 15M -d - "$dest/gpu.tar."
ls -l "$dest" >>"$log"
