#!/usr/bin/env bash
# Integration: the trace's repeating block (extrapolate/blocks.h) as inspect shows it.
#  - gpt-tiny (collect.py: 4 layers, hidden 256) and the l8h16 transformer (8 layers, hidden 512):
#    as many blocks as the model has layers, each holding one layer's parameters, which is
#    12 h^2 + 13 h fp32 values (q, k, v, o: 4 (h^2 + h); MLP h x 4h: 8 h^2 + 5 h; two LayerNorms: 4 h);
#  - resmlp (8 blocks of hidden 512): 8 blocks; dlrm-tiny (no repeated group): none, said so.
# --blocks N (extrapolate/repeat.h, docs/blocks.md), on gpt-tiny traced with 2 and with 8 blocks
# (traces/cpu-gpt-l2-b4, cpu-gpt-l8-b4: hidden 256, vocab 4096):
#  - inspect --blocks 8 of the 2-block trace: the 8-block model's parameters, as its meta.json counts
#    them and as 2-block + 6 x (12 h^2 + 13 h);
#  - simulate of the 2-block trace with --blocks 8 against the 8-block trace, plan by plan (1 GPU,
#    TP 2, PP 2 and 4, FSDP, ZeRO-3, DP 2 x TP 2; bench/blocks.py), each trace calibrated to its own
#    measured step (--calibrate; the profiler's overhead per op grows with the model): step within 3 %; parameters,
#    gradients and optimizer state summed over the GPUs equal (0.01 %); the worst GPU's parameters,
#    optimizer state, activations and traffic equal too where the split does not depend on op
#    times (not pipeline cuts, which balance each recording's own op times);
#  - --blocks 8 of the 8-block trace is that trace (1 GPU and PP 4, to 1e-4 %); --blocks 2 of it has the
#    2-block model's parameters, gradients, state and activations per GPU (1 GPU, FSDP 4);
#  - the whole state: a foreach optimizer's Adam state follows each parameter's block (llama3-8b 2 ->
#    32 blocks: 2 states x 2 B x P; --fsdp over 8 of 2 -> 8 blocks: the 8-block trace's state per GPU);
#    --blocks 1 of l8h16 drops 7 blocks' weights, gradients and state; inspect and simulate agree;
#  - refused in one line, exit 2: no repeating block (a trace of one block among them), N = 0, N > 1024, N not a number.
# Usage: bash blocks.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: blocks.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-blocks.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
T="$root/traces"
for spec in "cpu-gpt-tiny-b4 4 256" "cpu-gpt-l8h16-b2 8 512"; do
  read -r name nl hid <<< "$spec"
  "$bin" inspect "$T/$name" --json > "$tmp/$name.json"
  check "$name: $nl blocks of (12 h^2 + 13 h) x 4 B, h = $hid" 'python3 -c "
import json; b=json.load(open(\"$tmp/$name.json\"))[\"blocks\"]; h=$hid
assert b[\"count\"]==$nl and b[\"param_bytes\"]==(12*h*h+13*h)*4, b"'
done
"$bin" inspect "$T/cpu-gpt-tiny-b4" > "$tmp/g.txt"
check "gpt-tiny text: the blocks line" 'grep -q "^blocks     4 blocks of .* layers, L[0-9]*-L[0-9]* the first" "$tmp/g.txt"'
"$bin" inspect "$T/cpu-resmlp-b64" --json > "$tmp/r.json"
check "resmlp: 8 blocks" 'python3 -c "
import json; b=json.load(open(\"$tmp/r.json\"))[\"blocks\"]; assert b[\"count\"]==8, b"'
"$bin" inspect "$T/cpu-dlrm-tiny-b4" --json > "$tmp/d.json"
"$bin" inspect "$T/cpu-dlrm-tiny-b4" > "$tmp/d.txt"
check "dlrm-tiny: no block, said so" 'python3 -c "
import json; assert json.load(open(\"$tmp/d.json\"))[\"blocks\"] is None" && grep -q "^blocks     none" "$tmp/d.txt"'

# ---- --blocks N -----------------------------------------------------------------------------------
S="$T/cpu-gpt-l2-b4" W="$T/cpu-gpt-l8-b4" B="$root/bench/blocks.py"
"$bin" inspect "$S" --blocks 8 --json > "$tmp/s8.json"
"$bin" inspect "$W" --json > "$tmp/w.json"
check "inspect --blocks 8: the 8-block model's parameters (meta.json; 2-block + 6 (12 h^2 + 13 h))" 'python3 -c "
import json; s=json.load(open(\"$tmp/s8.json\")); h=256
whole=json.load(open(\"$W/meta.json\"))[\"parameters\"]; part=json.load(open(\"$S/meta.json\"))[\"parameters\"]
assert s[\"param_count\"]==whole==part+6*(12*h*h+13*h), (s[\"param_count\"], whole, part)
w=json.load(open(\"$tmp/w.json\"))
assert s[\"blocks\"][\"count\"]==8 and s[\"layers\"]==w[\"layers\"]==69, s[\"blocks\"]"'
check "simulate --blocks 8 of the 2-block trace: 1 GPU, TP, FSDP, ZeRO-3, DP x TP within 3 %, memory and traffic equal" \
  'python3 "$B" "$bin" "$W" "$S" 8 --tol 3 --mem-tol 0.01 --worst-tol 0.01 --flags --calibrate \
     --plans "--gpus 1;--gpus 2 --tp 2;--gpus 4 --fsdp;--gpus 4 --zero 3;--gpus 4 --dp 2 --tp 2" > "$tmp/b1.txt"'
cat "$tmp/b1.txt"
# the time-balanced cut evens out the traces' own differences (the 8-block trace's blocks take 22 to 33 ms on
# its CPU); the block cut, the default, puts the same blocks on each stage in both (below)
check "simulate --blocks 8 of the 2-block trace: PP 2 and 4 (time-balanced cut) within 3 %, the model's state over the stages equal" \
  'python3 "$B" "$bin" "$W" "$S" 8 --tol 3 --mem-tol 0.01 --worst-tol 100 --flags --calibrate --plans "--gpus 2 --pp 2 --pp-cut time;--gpus 4 --pp 4 --pp-cut time" > "$tmp/b2.txt"'
cat "$tmp/b2.txt"
# Block cuts (Megatron: num_layers / P blocks per stage, the embedding's layers L0-L2 on the first, the final
# norm and head L67-L68 on the last): the slice at --blocks 8 and the real 8-block trace cut at the same layers,
# with the same parameters on each stage (issue 41: +1.5 % apart under the time-balanced cut)
for pp in 2 4; do
  "$bin" simulate "$S" --blocks 8 --gpus $pp --pp $pp --json > "$tmp/cs$pp.json"
  "$bin" simulate "$W" --gpus $pp --pp $pp --json > "$tmp/cw$pp.json"
  check "--pp $pp cuts at blocks: layers 3 + 8 x 8/$pp per stage, the same in the slice and the 8-block trace" 'python3 -c "
import json; P=$pp; s=json.load(open(\"$tmp/cs$pp.json\")); w=json.load(open(\"$tmp/cw$pp.json\"))
k=8//P; want=[(0 if j==0 else 3+8*k*j, 3+8*k*(j+1)-1 if j<P-1 else 68) for j in range(P)]
for d in (s, w):
    assert [(x[\"layer_first\"], x[\"layer_last\"]) for x in d[\"stages\"]]==want, (d[\"stages\"], want)
    assert d[\"pipeline_cut\"][\"kind\"]==\"blocks\" and d[\"pipeline_cut\"][\"blocks_per_chunk\"]==[k]*P, d[\"pipeline_cut\"]
assert [x[\"param_bytes\"] for x in s[\"stages\"]]==[x[\"param_bytes\"] for x in w[\"stages\"]]"'
done
check "--blocks 8 of the 8-block trace is that trace" \
  'python3 "$B" "$bin" "$W" "$W" 8 --tol 1e-4 --mem-tol 1e-4 --worst-tol 1e-4 --plans "--gpus 1;--gpus 4 --pp 4" > /dev/null'
check "--blocks 2 of the 8-block trace: the 2-block model's memory per GPU" 'python3 -c "
import json, subprocess
def mem(args):
    d = json.loads(subprocess.run([\"$bin\", \"simulate\"] + args + [\"--json\"], capture_output=True, text=True).stdout)
    return [g[\"mem_bytes\"][k] for g in d[\"gpus\"] for k in (\"params\", \"grads\", \"optimizer\", \"activations\")]
for plan in ([\"--gpus\", \"1\"], [\"--gpus\", \"4\", \"--fsdp\"]):
    a, b = mem([\"$W\", \"--blocks\", \"2\"] + plan), mem([\"$S\"] + plan)
    assert a == b, (plan, a, b)"'
# the whole state follows --blocks (issue 43 item 5): a foreach / fused optimizer's state (one op over
# every parameter) goes with each parameter's block, and a cut takes the cut blocks' weights,
# gradients and state with it; inspect and simulate count the same bytes.
L="$T/h100-llama3-8b-2blocks-b1-bf16" L8="$T/h100-llama3-8b-8blocks-b1-bf16"
if [ -d "$L" ] && [ -d "$L8" ]; then
  check "llama3-8b 2 -> 32 blocks: bf16 Adam state 2 x 2 B x P, in inspect and simulate alike" 'python3 -c "
import json, subprocess
run = lambda *a: json.loads(subprocess.run([\"$bin\"] + list(a), capture_output=True, text=True).stdout)
i = run(\"inspect\", \"$L\", \"--blocks\", \"32\", \"--json\")
g = run(\"simulate\", \"$L\", \"--gpus\", \"1\", \"--blocks\", \"32\", \"--json\")[\"gpus\"][0][\"mem_bytes\"]
b, P = i[\"tensor_bytes\"], i[\"param_count\"]
assert abs(b[\"weight\"] / (2 * P) - 1) < 1e-6 and abs(b[\"optimizer_state\"] / (2 * 2 * P) - 1) < 1e-6, (b, P)
assert (g[\"params\"], g[\"grads\"], g[\"optimizer\"]) == (b[\"weight\"], b[\"gradient\"], b[\"optimizer_state\"]), (g, b)"'
  check "llama3-8b: --gpus 8 --fsdp --blocks 8 of the 2-block trace holds the 8-block trace's state per GPU" 'python3 -c "
import json, subprocess
mem = lambda *a: json.loads(subprocess.run([\"$bin\", \"simulate\"] + list(a) + [\"--gpus\", \"8\", \"--fsdp\", \"--json\"],
                                        capture_output=True, text=True).stdout)[\"gpus\"][0][\"mem_bytes\"]
a, b = mem(\"$L\", \"--blocks\", \"8\"), mem(\"$L8\")
for k in (\"params\", \"grads\", \"optimizer\"): assert abs(a[k] / b[k] - 1) < 1e-6, (k, a, b)"'
fi
check "l8h16 --blocks 1: the 1-block model (traced - 7 (12 h^2 + 13 h) x 4 B), its gradients and Adam state 2 x" 'python3 -c "
import json, subprocess
run = lambda *a: json.loads(subprocess.run([\"$bin\", \"inspect\", \"$T/cpu-gpt-l8h16-b2\", \"--json\"] + list(a), capture_output=True, text=True).stdout)
w, c, h = run()[\"param_bytes\"], run(\"--blocks\", \"1\")[\"tensor_bytes\"], 512
assert c[\"weight\"] == c[\"gradient\"] == w - 7 * (12 * h * h + 13 * h) * 4 == 29915136, (w, c)
assert abs(c[\"optimizer_state\"] / (2 * c[\"weight\"]) - 1) < 1e-4, c"'
check "TrioSim CSV (resnet50) --blocks 2 of 5: params minus 3 blocks', state 2 x, inspect = simulate" 'python3 -c "
import json, subprocess
run = lambda *a: json.loads(subprocess.run([\"$bin\"] + list(a) + [\"--json\"], capture_output=True, text=True).stdout)
R = \"$T/triosim-csv-resnet50-h100-bs128\"
full, cut = run(\"inspect\", R), run(\"inspect\", R, \"--blocks\", \"2\")
g = run(\"simulate\", R, \"--gpus\", \"1\", \"--blocks\", \"2\")[\"gpus\"][0][\"mem_bytes\"]
b = cut[\"tensor_bytes\"]
assert cut[\"param_bytes\"] == full[\"param_bytes\"] - 3 * full[\"blocks\"][\"param_bytes\"], (cut[\"param_bytes\"], full)
assert b[\"optimizer_state\"] == 2 * b[\"weight\"] == 2 * g[\"params\"] == g[\"optimizer\"], (b, g)"'
refused() { # name, expected text, args...
  local name=$1 want=$2; shift 2
  "$bin" "$@" > "$tmp/r.out" 2> "$tmp/r.err"; local rc=$?
  check "$name: exit 2, one line naming --blocks" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/r.err")" -eq 1 ] && grep -q -- "--blocks.*$want" "$tmp/r.err"'
}
refused "no repeating block (simulate)" "no repeating block" simulate "$T/cpu-dlrm-tiny-b4" --gpus 1 --blocks 4
refused "no repeating block (inspect)" "no repeating block" inspect "$T/cpu-dlrm-tiny-b4" --blocks 4
refused "one traced block: no chain to copy" "no repeating block.*one transformer block" simulate \
  "$T/h100-mixtral-8x7b-1block-b1-bf16" --gpus 1 --blocks 4
refused "--blocks 0" "1..1024" simulate "$S" --gpus 1 --blocks 0
refused "--blocks 1025" "1..1024" simulate "$S" --gpus 1 --blocks 1025
refused "--blocks x" "1..1024" inspect "$S" --blocks x

# ---- pipeline cuts at blocks (issue 41 item 6) -------------------------------------------------------
G="$T/cpu-gpt-l8h16-b2" # 8 blocks, h = 512, sequence 256, batch 2
"$bin" simulate "$G" --gpus 2 --pp 2 --json > "$tmp/g2.json"
# At the block boundary the block's output crosses: s x b/M x h x 4 = 256 x 1 x 512 x 4 = 524,288 B per
# micro-batch. The trace's ET gives block 3's freed fc2 output id to the layer norm output block 4's Q/K/V
# read, so that tensor seems to cross too (1,048,576 B); the cut inside a block that the time-balanced
# partitioner chose sent 5,242,880 B.
check "gpt-l8h16 --pp 2: cut 4+4 after layer 34, the block output crossing (at most the ET's aliased twin too)" 'python3 -c "
import json; d=json.load(open(\"$tmp/g2.json\")); s=d[\"stages\"]; one=256*1*512*4
assert one <= s[0][\"boundary_bytes\"] <= 2*one, s[0]
assert d[\"pipeline_cut\"][\"text\"]==\"blocks 4+4\" and (s[0][\"layer_last\"], s[1][\"layer_first\"])==(34, 35), d[\"pipeline_cut\"]"'
"$bin" simulate "$G" --gpus 2 --pp 2 --vpp 2 --micro-batches 2 --json > "$tmp/gv.json"
check "gpt-l8h16 --pp 2 --vpp 2: four chunks of 2 blocks, chunk c on stage c mod 2" 'python3 -c "
import json; d=json.load(open(\"$tmp/gv.json\")); s=d[\"stages\"]
assert d[\"pipeline_cut\"][\"blocks_per_chunk\"]==[2,2,2,2], d[\"pipeline_cut\"]
assert [(x[\"layer_first\"], x[\"layer_last\"]) for x in s]==[(0, 3+8*6-1), (3+8*2, 68)], s"'
"$bin" simulate "$G" --gpus 3 --pp 3 --micro-batches 2 --pp-layers 2,3,3 > "$tmp/gl.txt"
check "--pp-layers 2,3,3: the cut named in the text" 'grep -q "cut: blocks 2+3+3 (--pp-layers)" "$tmp/gl.txt"'
"$bin" simulate "$G" --gpus 3 --pp 3 --micro-batches 2 > "$tmp/g3.txt"
check "8 blocks over --pp 3: time-balanced, with a warning that Megatron refuses" \
  'grep -q "cut: time-balanced" "$tmp/g3.txt" && grep -q "^warning .*8 blocks do not divide.*Megatron" "$tmp/g3.txt"'
"$bin" simulate "$T/cpu-resnet18-b4" --gpus 2 --pp 2 --html "$tmp/r.html" > "$tmp/r2.txt"
check "ResNet-18 (2 alike residual blocks of 41 layers): time-balanced by default, in text and HTML" \
  'grep -q "cut: time-balanced" "$tmp/r2.txt" && grep -q "cut: time-balanced" "$tmp/r.html"'
pp_refused() { # name, expected text, args...
  local name=$1 want=$2; shift 2
  "$bin" simulate "$G" --micro-batches 2 "$@" > "$tmp/r.out" 2> "$tmp/r.err"; local rc=$?
  check "$name: exit 2, one line" '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/r.err")" -eq 1 ] && grep -q -- "$want" "$tmp/r.err"'
}
pp_refused "--pp-cut blocks over 3 stages of 8 blocks" "8 blocks do not divide into --pp 3.*Megatron refuses" --gpus 3 --pp 3 --pp-cut blocks
pp_refused "--pp-layers adding up to 7" "--pp-layers adds up to 7 blocks; the trace has 8" --gpus 3 --pp 3 --pp-layers 2,2,3
pp_refused "--pp-layers of 2 entries for 3 stages" "--pp-layers has 2 entries" --gpus 3 --pp 3 --pp-layers 4,4
G="$T/cpu-resnet18-b4" pp_refused "--pp-cut blocks on a trace whose block is not the model's" "2 blocks do not divide into --pp 4" --gpus 4 --pp 4 --pp-cut blocks

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
