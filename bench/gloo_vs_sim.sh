#!/bin/bash
# One device -> N devices on hardware anyone has: real 2-process jobs on this CPU (torch.distributed,
# gloo, one process per core) against `mitosis simulate`, every trace recorded in this run beside the
# measurement it is compared with (never a shipped trace against a fresh measurement).
#
# For each job (ddp: DistributedDataParallel of resmlp; pipeline: resmlp in 2 stages of whole
# blocks, GPipe; embedding: dlrm-tiny with its tables sharded, all-to-alls + DDP of the dense part;
# moe: moe-tiny with its experts split, all-to-all dispatch and combine + DDP of the rest;
# zero1 and zero1-gpt: DDP of resmlp (SGD, as ddp) / gpt-tiny (Adam) stepped by ZeroRedundancyOptimizer, each
# rank stepping its shard and broadcasting it; tp: gpt-tiny split Megatron-style over 2 ranks, 2
# all-reduces per layer in forward and 2 in backward, embeddings and LM head replicated; tp-vocab: the
# same with the embedding, LM head and cross-entropy split by vocabulary):
#   rank0   collect.py --dist JOB --world 2: the job's measured step and rank 0's trace, re-simulated at
#           its own world size and plan (the traced collectives, mitosis's default for it);
#   sibling collect.py on one process with --sibling-load (the other core runs the same model): the
#           trace carries the contention each rank of the job sees;
#   alone   the same with the other core idle;
# the one-process traces extrapolated to the job's plan (ddp: --gpus 2 --strategy ddp; pipeline:
# --pp 2 --schedule gpipe --micro-batches M; embedding: --gpus 2 --embedding-shard table, the job's
# tables split whole over the ranks; moe: --gpus 2 --ep 2, the job's experts split; zero1: --gpus 2
# --strategy ddp --zero 1; tp: --tp 2). "cal" rows scale the operators to the measured one-process step
# (--calibrate; for rank 0's trace --measured-ms with the sibling run's factor, measured/traced).
# The network: switch:2 with the link bandwidth and latency of gloo all-reduces on loopback, probed
# in the same run (bench/gloo_probe.py). Every measurement waits for a quiet machine (1-minute load
# < 0.5; MT_QUIET=0 skips the wait) and prints the time and load it started at.
#
# usage: bash bench/gloo_vs_sim.sh [MITOSIS] [OUTDIR]   (default build/mitosis, a temporary folder)
#   MT_JOBS="ddp pipeline embedding moe"  which jobs (also moe-mixtral moe-deepseek moe-bmm moe-hash zero1 zero1-gpt
#                                         tp tp-vocab; moe-*: tracer/families.py's MoE models, experts split)
#   MT_STEPS=10  timed steps per recording
set -euo pipefail
ROOT="$(cd "$(dirname "$0")/.." && pwd)"
MT="${1:-$ROOT/build/mitosis}"
OUT="${2:-$(mktemp -d "${TMPDIR:-/tmp}/gloo-vs-sim.XXXXXX")}"
PY=/usr/bin/python3
COLLECT="$ROOT/tracer/collect.py"
STEPS="${MT_STEPS:-10}"
mkdir -p "$OUT"
if ! "$PY" -c "import torch.distributed as d; assert d.is_gloo_available()" 2>/dev/null; then
    echo "gloo_vs_sim.sh: needs PyTorch with gloo (apt install python3-torch)" >&2
    exit 2
fi

quiet() { # waits (up to 30 min) for a 1-minute load under 0.5, then says when and at what load
    local i l
    for i in $(seq 1 120); do
        l=$(cut -d' ' -f1 /proc/loadavg)
        if [ "${MT_QUIET:-1}" = 0 ] || awk "BEGIN{exit !($l < 0.5)}"; then
            echo "# $(date -u +%FT%TZ) load $l: $*" >&2
            return 0
        fi
        sleep 15
    done
    echo "gloo_vs_sim.sh: the machine stayed busy (load $l) for 30 minutes: no measurement" >&2
    exit 1
}

# the MoE families at a size where a step is compute (~0.3 s), not per-op overhead: at hidden 64,
# sequence 32 (13 ms steps of 7,000 ops) the profiler inflates the step 5x and the job's step
# itself varies 2x from step to step (docs/accuracy.md)
FAM="--batch 4 --layers 2 --hidden 256 --heads 4 --kv-heads 2 --experts 8 --seq-len 128 --vocab 8192"
GPT="--model gpt-tiny --layers 4 --hidden 256 --heads 4 --vocab 8192 --seq-len 128 --batch 8 --optimizer adam"
declare -A MODEL=([ddp]="--model resmlp --hidden 512 --layers 8 --batch 64"
                  [pipeline]="--model resmlp --hidden 512 --layers 8 --batch 64"
                  [embedding]="--model dlrm-tiny --tables 8 --vocab 50000 --emb-dim 64 --bag 16 --batch 256"
                  [moe]="--model moe-tiny --batch 4 --experts 4 --top-k 2"
                  [moe-mixtral]="--model mixtral-tiny $FAM --top-k 2"
                  [moe-deepseek]="--model deepseek-tiny $FAM --top-k 2 --layers 3 --shared-experts 2"
                  [moe-bmm]="--model bmm-moe-tiny $FAM"
                  [moe-hash]="--model hash-moe-tiny $FAM"
                  [zero1]="--model resmlp --hidden 512 --layers 8 --batch 64"
                  [zero1-gpt]="$GPT" [tp]="$GPT" [tp-vocab]="$GPT")
declare -A DIST=([ddp]=ddp [pipeline]=pipeline [embedding]=embedding [moe]=moe [moe-mixtral]=moe [moe-deepseek]=moe
              [moe-bmm]=moe [moe-hash]=moe
              [zero1]=zero1 [zero1-gpt]=zero1
              [tp]=tp [tp-vocab]=tp)
declare -A DISTARGS=([ddp]="" [pipeline]="--micro-batches 4" [embedding]="" [moe]="" [moe-mixtral]="" [moe-deepseek]="" [moe-bmm]="" [moe-hash]=""
                  [zero1]="" [zero1-gpt]=""
                  [tp]="" [tp-vocab]="--tp-vocab")
ZERO="--gpus 2 --strategy ddp --zero 1"
declare -A PLAN=([ddp]="--gpus 2 --strategy ddp" [pipeline]="--pp 2 --schedule gpipe --micro-batches 4"
                 [embedding]="--gpus 2 --embedding-shard table" [moe]="--gpus 2 --ep 2" [moe-mixtral]="--gpus 2 --ep 2"
                 [moe-deepseek]="--gpus 2 --ep 2" [moe-bmm]="--gpus 2 --ep 2" [moe-hash]="--gpus 2 --ep 2"
                 [zero1]="$ZERO"
                 [zero1-gpt]="$ZERO" [tp]="--tp 2" [tp-vocab]="--tp 2")
for job in ${MT_JOBS:-ddp pipeline embedding moe}; do
    [ -n "${DIST[$job]:-}" ] || { echo "gloo_vs_sim.sh: unknown job '$job' (ddp pipeline embedding moe moe-mixtral moe-deepseek moe-bmm moe-hash zero1 zero1-gpt tp tp-vocab)" >&2; exit 2; }
done
COMMON="--threads 1 --warmup 3 --steps $STEPS"

for job in ${MT_JOBS:-ddp pipeline embedding moe}; do
    # shellcheck disable=SC2086
    { quiet "$job: rank 0 of the 2-process job"
      "$PY" "$COLLECT" ${MODEL[$job]} $COMMON --dist "${DIST[$job]}" --world 2 ${DISTARGS[$job]} -o "$OUT/$job-rank0" >&2
      quiet "$job: one process beside a sibling load"
      "$PY" "$COLLECT" ${MODEL[$job]} $COMMON --sibling-load -o "$OUT/$job-sibling" >&2
      quiet "$job: one process, the other core idle"
      "$PY" "$COLLECT" ${MODEL[$job]} $COMMON -o "$OUT/$job-alone" >&2; }
done
quiet "the loopback network"
"$PY" "$ROOT/bench/gloo_probe.py" > "$OUT/probe.json"
read -r bw lat < <("$PY" -c 'import json,sys; r=json.load(open(sys.argv[1])); print(r["allreduce"]["bw_Bps"], r["latency_s"])' "$OUT/probe.json")
NET=(--topology switch:2 --link-bw "$("$PY" -c "print('%.6fGB/s' % ($bw / 1e9))")"
     --link-lat "$("$PY" -c "print('%.3fus' % ($lat / 4 * 1e6))")" --host-model none --json)

sim() { "$MT" simulate "$@" "${NET[@]}"; }
field() { "$PY" -c 'import json,sys; d=json.load(sys.stdin); print(eval(sys.argv[1], {}, {"d": d}))' "$1"; }
meta() { "$PY" -c 'import json,sys; d=json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"d": d}))' "$1" "$2"; }

printf "%-10s %-8s %-10s %-4s %11s %11s %8s\n" job trace comm cal "sim ms" "job ms" error
row() { # job trace comm cal predicted measured
    "$PY" -c 'import sys; j,t,c,k,p,m=sys.argv[1:]; print("%-10s %-8s %-10s %-4s %11.1f %11.1f %+7.1f%%" % (j,t,c,k,float(p),float(m),(float(p)-float(m))/float(m)*100))' "$@"
}
for job in ${MT_JOBS:-ddp pipeline embedding moe}; do
    R="$OUT/$job-rank0" S="$OUT/$job-sibling" A="$OUT/$job-alone"
    measured=$(meta "$R/meta.json" 'd["step_time_ms"]["median"]')
    for t in sibling alone; do
        d="$OUT/$job-$t"
        # shellcheck disable=SC2086
        row "$job" "$t" plan no "$(sim "$d" ${PLAN[$job]} | field 'd["step_ms"]')" "$measured"
        # shellcheck disable=SC2086
        row "$job" "$t" plan yes "$(sim "$d" ${PLAN[$job]} --calibrate | field 'd["step_ms"]')" "$measured"
    done
    row "$job" rank0 traced no "$(sim "$R" | field 'd["step_ms"]')" "$measured"
    # rank 0's operators scaled by the factor the sibling run measured (unprofiled / traced)
    f=$("$PY" -c 'import json,sys; m=json.load(open(sys.argv[1]+"/meta.json")); print(m["step_time_ms"]["median"])' "$S")
    traced_s=$(sim "$S" --gpus 1 | field 'd["traced_step_ms"]')
    traced_r=$(sim "$R" | field 'd["traced_step_ms"]')
    ms=$("$PY" -c "import sys; print($traced_r * $f / $traced_s)")
    row "$job" rank0 traced yes "$(sim "$R" --measured-ms "$ms" | field 'd["step_ms"]')" "$measured"
    [ "$job" = embedding ] || [ "${DIST[$job]}" = moe ] && row "$job" rank0 regenerate no "$(sim "$R" --comm regenerate | field 'd["step_ms"]')" "$measured"
    # a rank of the MoE job, its all-to-alls regenerated by --ep for the same plan
    [ "${DIST[$job]}" = moe ] && row "$job" rank0 "ep 2" no "$(sim "$R" --gpus 2 --ep 2 | field 'd["step_ms"]')" "$measured"
    if [ "$job" = pipeline ]; then
        sent=$(meta "$R/meta.json" 'd["dist"]["sent_bytes_per_micro_batch"]')
        # shellcheck disable=SC2086
        got=$(sim "$S" ${PLAN[$job]} | field 'd["stages"][0]["boundary_bytes"]')
        echo "pipeline boundary: mitosis sends $got B per micro-batch from stage 0, PyTorch sent $sent B" >&2
    fi
    if [ "${DIST[$job]}" = tp ]; then
        # shellcheck disable=SC2086
        got=$(sim "$S" ${PLAN[$job]} | field '"%d forward + %d backward collectives, %.0f B" % (d["simulation"]["tp_collectives_fwd"], d["simulation"]["tp_collectives_bwd"], d["simulation"]["collective_bytes"])')
        sent=$(meta "$R/meta.json" '"%d forward + %d backward all-reduces, %.0f B" % (d["tp"]["allreduce_per_step"]["forward"], d["tp"]["allreduce_per_step"]["backward"], d["tp"]["allreduce_bytes_per_step"])')
        echo "$job per step: mitosis --tp 2 runs $got; PyTorch ran $sent" >&2
    fi
    if [ "${DIST[$job]}" = zero1 ]; then
        # shellcheck disable=SC2086
        got=$(sim "$S" ${PLAN[$job]} | field '"%d collectives, %.0f B" % (d["simulation"]["collectives"], d["simulation"]["collective_bytes"])')
        sent=$(meta "$R/meta.json" '"all-reduces of %d B and %d broadcasts of %s B" % (d["zero"]["allreduce_bytes_per_step"], d["zero"]["broadcasts_per_step"], "+".join(map(str, d["zero"]["broadcast_bytes_per_step"])))')
        echo "$job per step: mitosis ($ZERO) runs $got; PyTorch ran $sent" >&2
    fi
done
echo "job ms: the 2-process job's measured step (median of $STEPS; per step the slower rank). sim: mitosis" \
     "simulate on switch:2 at the probed loopback (all-reduce $(printf '%.3f' "$("$PY" -c "print($bw/1e9)")") GB/s," \
     "latency $(printf '%.1f' "$("$PY" -c "print($lat*1e6)")") us); traces in $OUT"
