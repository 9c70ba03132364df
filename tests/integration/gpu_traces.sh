#!/usr/bin/env bash
# Integration: the H100 traces recorded by tracer/record_gpu.sh (PyTorch 2.11: ET schema 1.1.1-chakra,
# Kineto "Record function id", SDPA/flash kernels, aten::_grouped_mm, CUDA graphs), each with the step
# measured without the profiler in its meta.json (CUDA events, median of 10). No GPU needed.
#  - every trace reads with all its kernels attached to ops and every ET node linked;
#  - one GPU at the traced plan replays the MEASURED step (calibrated by default: the profiler slowed
#    the host by +4 .. +312 %), the replay line and the JSON say so;
#  - --no-calibrate replays the profiled step within 5 % and says how far it is off the measured one;
#  - the CUDA-graph trace: 2 graph launches (forward, backward) hold > 90 % of the kernel time; plans
#    that split operators (--tp, --pp, --recompute) are refused in one line naming CUDA graphs (exit 2),
#    data parallelism runs;
#  - vocabularies no --tp divides are padded as Megatron pads them (closed form), heads still refuse.
# Usage: bash gpu_traces.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: gpu_traces.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-gputr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi; }
n=0
# Every trace replays its measured step; one recording per model (the CI's time) is also inspected
# and replayed with --no-calibrate.
for d in "$root"/traces/h100-*/; do
  d=${d%/}; name=$(basename "$d")
  # the re-recordings of CPU traces (h100-X beside cpu-X) are read by the host check below; of them
  # gpt-tiny-b8 is replayed here too (the CI's time)
  [ -d "$root/traces/cpu-${name#h100-}" ] && [ "$name" != h100-gpt-tiny-b8 ] && continue
  n=$((n + 1))
  rm -f "$tmp/i.json" "$tmp/u.json" "$tmp/u.txt"
  "$bin" simulate "$d" --gpus 1 --json >"$tmp/s.json" 2>"$tmp/e" || { echo "FAIL: simulate $name"; cat "$tmp/e"; fails=$((fails + 1)); continue; }
  case "$name" in
    h100-llama3-8b-2blocks-*|h100-mixtral-8x7b-1block-*|h100-resnet50-b128-fp32*|h100-gpt2-b8-*|h100-bert-base-b32-*|h100-gpt-tiny-b8)
      "$bin" inspect "$d" --json >"$tmp/i.json" 2>"$tmp/e" || { echo "FAIL: inspect $name"; cat "$tmp/e"; fails=$((fails + 1)); continue; }
      "$bin" simulate "$d" --gpus 1 --no-calibrate --json >"$tmp/u.json" 2>/dev/null
      "$bin" simulate "$d" --gpus 1 --no-calibrate >"$tmp/u.txt" 2>/dev/null ;;
  esac
  check "$name: replays its measured step (calibrated by default)$([ -f "$tmp/u.txt" ] && echo ', is read whole, and replays its profiled step with --no-calibrate')" \
    "python3 - '$tmp' '$d/meta.json' <<'PY'
import json, sys, os
t, m = sys.argv[1], json.load(open(sys.argv[2]))
s = json.load(open(os.path.join(t, 's.json')))
full = os.path.exists(os.path.join(t, 'u.txt'))
want = m['step_time_ms']['median']
bad = []
if not m['et_schema'].startswith('1.1.'): bad.append('ET schema ' + m['et_schema'])
if full:
    i, u = (json.load(open(os.path.join(t, f))) for f in ('i.json', 'u.json'))
    if i['kernels_left_out'] != 0 or i['kernels'] < m['kineto_kernels']: bad.append('kernels %d (+%d left out) of %d' % (i['kernels'], i['kernels_left_out'], m['kineto_kernels']))
    if i['measured_step_ms'] != want: bad.append('inspect measured %r' % i['measured_step_ms'])
step = s['step_ms'] if 'step_ms' in s else None
r, c = s['replay'], s['calibration']
if not (c and c['automatic'] and r and r['calibrated']): bad.append('not calibrated by default: %r %r' % (c, r))
elif abs(r['replayed_ms'] - want) > 0.005 * want or abs(r['error_pct']) > 0.5: bad.append('replayed %.3f vs measured %.3f' % (r['replayed_ms'], want))
if full:
    ru = u['replay']
    if u['calibration'] is not None or not ru or abs(ru['error_pct']) > 5: bad.append('--no-calibrate: %r' % (ru,))
    elif ru['measured_ms'] != want: bad.append('--no-calibrate measured_ms %r' % ru['measured_ms'])
    off = abs(ru['replayed_ms'] - want) / want > 0.05
    said = 'but measured' in open(os.path.join(t, 'u.txt')).read()
    if off != said: bad.append('--no-calibrate text: off by %.1f %% but the \"but measured\" line %s' % (100 * (ru['replayed_ms'] - want) / want, 'printed' if said else 'missing'))
print('  measured %.3f ms; calibrated replay %.3f ms%s' % (want, r['replayed_ms'], '; profiled replay %.3f ms' % ru['replayed_ms'] if full and ru else '') if r else '')
print('\n'.join('  ' + b for b in bad)); sys.exit(1 if bad else 0)
PY"
done
check "the H100 traces are there (at least 15)" "[ $n -ge 15 ]"

g="$root/traces/h100-resnet50-b128-fp32-cudagraphs"
"$bin" inspect "$g" --json >"$tmp/g.json" 2>/dev/null
check "CUDA graphs: 2 launches hold > 90 % of the kernel time" \
  "python3 -c \"import json,sys; c=json.load(open('$tmp/g.json'))['cuda_graphs']; print('  ', c); sys.exit(0 if c['launches'] == 2 and c['kernel_time_share'] > 0.9 and c['kernels'] > 500 else 1)\""
for f in "--tp 2" "--pp 2" "--recompute full"; do
  check "CUDA graphs: $f refused in one line naming them, exit 2" \
    "'$bin' simulate '$g' --gpus 2 $f >'$tmp/o' 2>'$tmp/e'; [ \$? -eq 2 ] && [ \$(wc -l <'$tmp/e') -eq 1 ] && grep -q 'CUDA graph' '$tmp/e' && grep -q -- '${f%% *}' '$tmp/e'"
done
check "CUDA graphs: --dp 2 runs" "'$bin' simulate '$g' --gpus 2 --dp 2 >/dev/null 2>&1"
check "no CUDA graphs in the eager ResNet-50" \
  "'$bin' inspect '$root/traces/h100-resnet50-b128-fp32' --json | python3 -c \"import json,sys; sys.exit(0 if json.load(sys.stdin)['cuda_graphs']['launches'] == 0 else 1)\""
check "--calibrate with --no-calibrate: refused, exit 2" \
  "'$bin' simulate '$g' --gpus 1 --calibrate --no-calibrate >/dev/null 2>'$tmp/e'; [ \$? -eq 2 ] && grep -q no-calibrate '$tmp/e'"

# The host per operator that a CPU trace on a GPU does not count (run/device.h MT_EAGER_HOST_US_LO/HI):
# the H100 re-recordings of the project's CPU traces (h100-X beside cpu-X), step over the CPU trace's ops.
check "eager host per CPU-trace operator on the H100: 11.7 .. 37.5 us, as run/device.h says" "python3 - '$root' '$bin' <<'PY'
import json, os, subprocess, sys
root, bin = sys.argv[1:]
us = {}
for n in sorted(os.listdir(os.path.join(root, 'traces'))):
    cpu = os.path.join(root, 'traces', 'cpu-' + n[5:])
    if not n.startswith('h100-') or not os.path.isdir(cpu): continue
    ops = json.loads(subprocess.run([bin, 'inspect', cpu, '--json'], capture_output=True, text=True).stdout)['ops']
    us[n[5:]] = 1e3 * json.load(open(os.path.join(root, 'traces', n, 'meta.json')))['step_time_ms']['median'] / ops
print('  ' + ', '.join('%s %.1f' % kv for kv in sorted(us.items(), key=lambda kv: kv[1])))
sys.exit(0 if len(us) >= 8 and round(min(us.values()), 1) == 11.7 and round(max(us.values()), 1) == 37.5 else 1)
PY"

# --blocks on a GPU slice: Llama-3-8B's 2 blocks -> 8 (calibrated by default on the 2-block step), the
# foreach Adam step over every parameter lengthened with the weights; against the 8-block recording.
l2="$root/traces/h100-llama3-8b-2blocks-b1-bf16" l8="$root/traces/h100-llama3-8b-8blocks-b1-bf16"
"$bin" inspect "$l2" --blocks 8 --json >"$tmp/b8.json" 2>/dev/null; "$bin" inspect "$l8" --json >"$tmp/l8.json" 2>/dev/null
"$bin" simulate "$l2" --gpus 1 --blocks 8 --json >"$tmp/s8.json" 2>/dev/null
check "llama3-8b --blocks 8 from 2: optimizer and total device time within 3 % of the 8-block trace, step within 5 % of its measured one" \
  "python3 - '$tmp' '$l8/meta.json' <<'PY'
import json, os, sys
t = sys.argv[1]
b, l, s = (json.load(open(os.path.join(t, f))) for f in ('b8.json', 'l8.json', 's8.json'))
m = json.load(open(sys.argv[2]))['step_time_ms']['median']
e = lambda a, w: abs(a / w - 1)
print('  optimizer %.2f vs %.2f ms, device %.2f vs %.2f ms, step %.2f vs measured %.2f ms' % (b['time_ms']['optimizer'], l['time_ms']['optimizer'], b['time_ms']['total'], l['time_ms']['total'], s['step_ms'], m))
sys.exit(0 if e(b['time_ms']['optimizer'], l['time_ms']['optimizer']) < 0.03 and e(b['time_ms']['total'], l['time_ms']['total']) < 0.03 and e(s['step_ms'], m) < 0.05 else 1)
PY"

# Vocabularies no --tp divides (GPT-2's 50257, BERT's 30522 words) are padded as Megatron pads them,
# to a multiple of 128 x tp, with a warning; the attention heads (12) still bound --tp.
pad() { python3 -c "import sys; V, T = map(int, sys.argv[1:]); m = 128 * T; print(-(-V // m) * m)" "$1" "$2"; }
for vt in "gpt2-b8 50257 2" "gpt2-b8 50257 4" "bert-base-b8 30522 4"; do
  set -- $vt
  check "$1 --tp $3: the $2-word vocabulary padded to $(pad "$2" "$3"), a warning, exit 0"     "'$bin' simulate '$root/traces/h100-$1-bf16' --gpus $3 --tp $3 >'$tmp/o' 2>&1 && grep -q 'vocabulary of $2 words does not divide over --tp $3: padded to $(pad "$2" "$3")' '$tmp/o'"
done
check "gpt2 --tp 8: refused naming its 12 attention heads, exit 2"   "'$bin' simulate '$root/traces/h100-gpt2-b8-bf16' --gpus 8 --tp 8 >/dev/null 2>'$tmp/e'; [ \$? -eq 2 ] && grep -q '12 attention heads' '$tmp/e'"

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all H100 trace checks passed"
