#!/bin/bash
# bench/llm_published.sh [MITOSIS] [SLICE] [-- more llm_published.py flags]
# Published multi-GPU LLM runs (bench/published_llm.tsv) predicted from the shipped one-GPU
# Llama-3-8B slice: tokens/s/GPU and memory per GPU, predicted / published, the 8 -> 128 GPU trend,
# and what modelling each row still lacks. A benchmark, not a test: about a minute on the 2-core VM.
set -euo pipefail
here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
bin=${1:-$here/../build/mitosis}
slice=${2:-$here/../traces/h100-llama3-8b-8blocks-b1-bf16}
shift $(( $# < 2 ? $# : 2 ))
[ "${1:-}" = "--" ] && shift
[ -x "$bin" ] || { echo "llm_published: $bin is not built" >&2; exit 1; }
start=$(date +%s.%N)
/usr/bin/python3 "$here/llm_published.py" --mitosis "$bin" --slice "$slice" --commands "$@"
end=$(date +%s.%N)
awk -v a="$start" -v b="$end" 'BEGIN { printf "\nwall %.1f s (bench/llm_published.sh)\n", b - a }'
