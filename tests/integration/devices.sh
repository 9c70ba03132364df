#!/usr/bin/env bash
# Integration (issue 30): the device a trace was recorded on reaches every output, and a CPU trace
# never passes for a GPU. inspect says cpu / gpu (text and JSON recorded_on); a CPU trace on a
# GPU topology (dgx-h100) or with --target-gpu is predicted by the analytical roofline model and
# says so in simulate's text, JSON and HTML and in compare's header and JSON; on switch:N (no GPU
# named) its ranks are CPU processes and every output says so; --trace-gpu and --perf-model linear
# with a GPU on a CPU trace are refused in one line (exit 2); the shipped H100 traces inspect as
# H100 GPU traces; the analytical model's numbers are checked against hand bounds and the H100
# traces' measured times; the demo (examples/demo.sh) runs.
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
jq_py() { python3 -c "import json,sys; d=json.load(open('$1')); $2"; }
cpu=$root/traces/cpu-resnet18-b8
h100=$root/traces/triosim-vgg13-h100-bs512

# ---- inspect: the recording device ----
"$bin" inspect "$cpu" > "$tmp/i.txt" && "$bin" inspect "$cpu" --json > "$tmp/i.json"
check "inspect CPU trace: text says CPU and where it was read" \
  'grep -q "^device     CPU AMD EPYC .*\[meta.json\]" "$tmp/i.txt"'
check "inspect CPU trace: JSON recorded_on.kind cpu, source meta.json, device null" \
  'jq_py "$tmp/i.json" "r=d[\"recorded_on\"]; assert r[\"kind\"]==\"cpu\" and r[\"source\"]==\"meta.json\" and d[\"device\"] is None, d"'
for t in triosim-vgg13-h100-bs512 triosim-csv-vgg13-h100-bs128 triosim-csv-resnet50-h100-bs128; do
  "$bin" inspect "$root/traces/$t" --json > "$tmp/g.json"
  check "inspect $t: a GPU (H100) trace" \
    'jq_py "$tmp/g.json" "r=d[\"recorded_on\"]; assert r[\"kind\"]==\"gpu\" and \"H100\" in r[\"name\"] and \"H100\" in d[\"device\"], r"'
done
check "inspect H100 Kineto trace: named by its own deviceProperties" \
  '"$bin" inspect "$h100" | grep -q "^device     GPU NVIDIA H100 80GB HBM3 \[Kineto deviceProperties\]"'
shared=${MT_SHARED_TRACES:-$root/../shared/traces}
if [ -f "$shared/kineto-only/cpu-only-rank34.json.gz" ]; then
  "$bin" inspect "$shared/kineto-only/cpu-only-rank34.json.gz" --json > "$tmp/k.json" 2>/dev/null
  check "a Kineto trace with empty deviceProperties and no kernels is a CPU trace" \
    'jq_py "$tmp/k.json" "assert d[\"recorded_on\"][\"kind\"]==\"cpu\", d[\"recorded_on\"]"'
else
  echo "note: $shared absent: the Kineto-only CPU rank is not checked"
fi

# ---- a CPU trace on H100s: the analytical model, labelled everywhere ----
label="analytical roofline for H100-SXM (trace recorded on CPU"
"$bin" simulate "$cpu" --gpus 8 --topology dgx-h100 > "$tmp/s.txt" 2> "$tmp/s.err"; rc=$?
check "simulate CPU trace on dgx-h100: runs" '[ $rc -eq 0 ]'
check "simulate text: op times labelled analytical for H100, recorded on CPU" \
  'grep -q "^op times   $label" "$tmp/s.txt" && grep -q "^recorded   CPU " "$tmp/s.txt" && ! grep -q "^ranks      CPU processes" "$tmp/s.txt"'
"$bin" simulate "$cpu" --gpus 8 --topology dgx-h100 --json > "$tmp/s.json"
check "simulate JSON: perf_model analytical, op_times labelled, recorded_on cpu, ranks gpus, target H100" \
  'jq_py "$tmp/s.json" "assert d[\"perf_model\"]==\"analytical\" and d[\"op_times\"].startswith(\"$label\") and d[\"recorded_on\"][\"kind\"]==\"cpu\" and d[\"ranks\"]==\"gpus\" and d[\"target_gpu\"]==\"H100-SXM\", (d[\"op_times\"], d[\"target_gpu\"])"'
# An independent bound: ResNet-18 forward is 1.82 GMAC per 224x224 image, training ~3x: 8 images
# take 8 x 3 x 3.64 GFLOP = 87 GFLOP, at the H100's 494.7 TFLOP/s TF32 peak >= 0.18 ms and at the
# stated 0.25 of it >= 0.71 ms; far below the CPU's 1102 ms.
check "simulate JSON: the H100 step is between the conv bound (0.7 ms) and 20 ms, not the CPU's 1102 ms" \
  'jq_py "$tmp/s.json" "s=d[\"step_ms\"]; assert 0.7 < s < 20, s"'
"$bin" simulate "$cpu" --gpus 1 --target-gpu H100 --json > "$tmp/s1.json"
"$bin" perfmodel predict "$cpu" --target-gpu H100 --json > "$tmp/p1.json"
check "one GPU: simulate's step equals perfmodel predict's serial sum (two paths, one model)" \
  'python3 -c "import json; s=json.load(open(\"$tmp/s1.json\")); p=json.load(open(\"$tmp/p1.json\"))
t=p[\"predicted_ms\"][\"total\"]; assert abs(s[\"step_ms\"]-t) <= 1e-3*t, (s[\"step_ms\"], t)
assert p[\"perf_model\"]==\"analytical\" and p[\"recorded_on\"][\"kind\"]==\"cpu\"
assert t >= p[\"floor_ms\"] > 0, (t, p[\"floor_ms\"])"'
"$bin" simulate "$cpu" --gpus 8 --topology dgx-h100 --html "$tmp/r.html" > /dev/null
check "simulate HTML: the label and the recording device" \
  'grep -q "analytical roofline for H100-SXM (trace recorded on CPU" "$tmp/r.html" && grep -q "recorded on CPU AMD EPYC" "$tmp/r.html"'
"$bin" compare "$cpu" --gpus 8 --topology dgx-h100 --plans ddp=8,dp=8 > "$tmp/c.txt"
"$bin" compare "$cpu" --gpus 8 --topology dgx-h100 --plans ddp=8,dp=8 --json > "$tmp/c.json"
"$bin" compare "$cpu" --gpus 8 --topology dgx-h100 --plans ddp=8,dp=8 --html "$tmp/c.html" > /dev/null
check "compare HTML: the label and the recording device" \
  'grep -q "analytical roofline for H100-SXM (trace recorded on CPU" "$tmp/c.html" && grep -q "recorded on CPU AMD EPYC" "$tmp/c.html"'
check "compare text header: recorded on CPU, op times analytical" \
  'grep -q "^recorded   CPU " "$tmp/c.txt" && grep -q "^op times   $label" "$tmp/c.txt"'
check "compare JSON: recorded_on cpu, op_times labelled, perf_model analytical" \
  'jq_py "$tmp/c.json" "assert d[\"recorded_on\"][\"kind\"]==\"cpu\" and d[\"op_times\"].startswith(\"$label\") and d[\"perf_model\"]==\"analytical\" and d[\"ranks\"]==\"gpus\""'

# ---- a CPU trace with no GPU named: CPU processes ----
"$bin" simulate "$cpu" --gpus 2 --topology switch:2 > "$tmp/p.txt"
"$bin" simulate "$cpu" --gpus 2 --topology switch:2 --json > "$tmp/p.json"
check "switch:N: the ranks are CPU processes (text)" \
  'grep -q "^ranks      CPU processes" "$tmp/p.txt" && grep -q "^op times   CPU processes" "$tmp/p.txt"'
check "switch:N: JSON ranks cpu_processes, trace model, no target" \
  'jq_py "$tmp/p.json" "assert d[\"ranks\"]==\"cpu_processes\" and d[\"perf_model\"]==\"trace\" and d[\"target_gpu\"] is None"'
check "switch:N: the step keeps the CPU times (>= the traced 1101.9 ms of ops)" \
  'jq_py "$tmp/p.json" "assert d[\"step_ms\"] >= 1101.9, d[\"step_ms\"]"'

# ---- a GPU trace keeps its GPU's times; a topology of other GPUs is pointed out ----
"$bin" simulate "$h100" --gpus 8 --topology dgx-a100 --json > "$tmp/ga.json"
check "H100 trace on dgx-a100: H100 times, and the label says the topology's GPUs differ" \
  'jq_py "$tmp/ga.json" "o=d[\"op_times\"]; assert o.startswith(\"trace model on the traced GPU (NVIDIA H100 80GB HBM3), not the topology\") and \"--target-gpu A100-80GB\" in o and d[\"target_gpu\"] is None and d[\"recorded_on\"][\"kind\"]==\"gpu\", o"'

# ---- refusals: one line, exit 2 ----
bad() { # name, expected substring, args...
  local name=$1 want=$2; shift 2
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  check "$name: exit 2, one line naming it, nothing on stdout" \
    '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "$want" "$tmp/err" && [ ! -s "$tmp/out" ]'
}
bad "--trace-gpu on a CPU trace" "--trace-gpu A100-80GB: .* was recorded on a CPU" \
  simulate "$cpu" --gpus 8 --trace-gpu A100-80GB
bad "--trace-gpu on a CPU trace (perfmodel predict)" "recorded on a CPU" perfmodel predict "$cpu" --trace-gpu H100
bad "--perf-model linear for a GPU on a CPU trace" "--perf-model linear: .* recorded on a CPU" \
  simulate "$cpu" --gpus 8 --topology dgx-h100 --perf-model linear
bad "--perf-model roofline on a CPU trace without a GPU" "--perf-model roofline: .* no GPU" \
  simulate "$cpu" --gpus 2 --perf-model roofline
bad "--calibrate of analytical times to a CPU step" "--calibrate: .* CPU step" \
  compare "$cpu" --gpus 8 --topology dgx-h100 --calibrate

# ---- the analytical model on the real H100 traces (their measured times unused) ----
# VGG13 b512 (346.37 ms of kernels), VGG13 b128 (94.04 ms), ResNet-50 b128 (70.72 ms): within 15 %.
for row in "triosim-vgg13-h100-bs512 346.366" "triosim-csv-vgg13-h100-bs128 94.038" "triosim-csv-resnet50-h100-bs128 70.723"; do
  read -r tr ms <<< "$row"
  "$bin" perfmodel predict "$root/traces/$tr" --perf-model analytical --json > "$tmp/a.json"
  check "analytical on $tr: within 15 % of its measured $ms ms" \
    'jq_py "$tmp/a.json" "p=d[\"predicted_ms\"][\"total\"]; assert abs(p/$ms-1) < 0.15, p"'
done

# ---- a CPU trace on a GPU counts GPU time only: the host it would need is said ----
# gpt-tiny b8's 1107 operators at 11.7..37.5 us (the H100 re-recordings, docs/devices.md) exceed
# half its predicted GPU step: a warning with that range; at a batch whose GPU time dwarfs it, none.
"$bin" simulate "$root/traces/cpu-gpt-tiny-b8" --gpus 1 --target-gpu H100-SXM --json > "$tmp/hw.json" 2>/dev/null
check "CPU trace on H100: warns its 1107 operators need 13.0 to 41.5 ms of host" \
  'jq_py "$tmp/hw.json" "w=[x for x in d[\"warnings\"] if x.startswith(\"GPU time only\")]; assert len(w) == 1 and \"1107 operators\" in w[0] and \"13.0 to 41.5 ms\" in w[0], d[\"warnings\"]"'
"$bin" simulate "$root/traces/cpu-gpt-tiny-b8" --gpus 1 --target-gpu H100-SXM --batch 4096 --json > "$tmp/hw2.json" 2>/dev/null
check "CPU trace on H100 at batch 4096: no host warning (GPU time dominates)" \
  'jq_py "$tmp/hw2.json" "assert not any(x.startswith(\"GPU time only\") for x in d[\"warnings\"]), d[\"warnings\"]"'

# ---- the demo ----
MT_DEMO_NO_BUILD=1 MT_BIN="$bin" bash "$root/examples/demo.sh" > "$tmp/demo.txt" 2> "$tmp/demo.err"; rc=$?
check "demo: runs from a GPU trace (exit 0)" '[ $rc -eq 0 ] && grep -q "^recorded   GPU NVIDIA H100 80GB HBM3" "$tmp/demo.txt"'
check "demo: ranks several plans on 8 and on 64 GPUs" \
  '[ "$(grep -c "^   [1-7]  " "$tmp/demo.txt")" -eq 14 ] && [ "$(grep -c "^fastest " "$tmp/demo.txt")" -eq 2 ]'
# ddp=8 at global batch 4096 runs the traced 512 per GPU: its step is the traced step (346.4 ms
# of kernels) plus what the all-reduce does not hide.
check "demo: ddp=8 takes the traced step (346.4 ms) within 1 %" \
  'awk "\$2==\"ddp=8\" {s=\$3} END {exit !(s > 346.366*0.99 && s < 346.366*1.01)}" "$tmp/demo.txt"'
check "demo: slower NICs never make ddp=64 faster" \
  'grep -A5 "^nic-bw" "$tmp/demo.txt" | awk "/GB\/s/ {if (n++ && \$3 > prev) bad=1; prev=\$3} END {exit bad || n != 4}"'
exit $fail
