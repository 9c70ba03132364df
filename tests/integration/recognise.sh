#!/usr/bin/env bash
# Integration: recognition of models written the way public code writes them (issue 32,
# docs/recognition.md). For each family trace in traces/ (tracer/families.py, recorded on this CPU),
# `mitosis inspect --json`'s "recognised" must match what the model definition says, read from the
# trace's meta.json (written by collect.py from the model's constructor arguments, not by mitosis):
#  - MoE families: MoE layers (deepseek: layers - 1, its first layer dense), experts, top-k (bmm-moe:
#    1, routed by max), looped vs batched experts, shared experts (deepseek: --shared-experts, from
#    the shared MLP's width over a routed expert's), routed rows = tokens x k (looped, dropless);
#  - TP sites: grouped-query attention once per layer with q/kv width = heads / kv_heads, SwiGLU
#    gate/up pairs (llama: one per layer; mixtral: one per expert and layer; deepseek: dense + routed +
#    shared), RMSNorm 2 per layer + the final one, rotary: q and k per layer; fused QKV (vit, bmm-moe:
#    one per layer) and none in the SwiGLU families;
#  - tables: torchrec-tiny's bags all jagged (offsets from lengths), one per table;
#  - experts no router reveals (hash-moe-tiny: expert = hash of the token id): found when annotated
#    with record_function("mitosis.expert"), or with the user's own label and --moe-pattern (not
#    without it: --ep refused in one line naming --moe-pattern); rows = meta.json's expert_tokens;
#  - no MoE layer in models without one (llama, vit, torchrec, gpt-tiny, resnet18: no false positive),
#    moe-tiny still found as before;
#  - --ep's parameter bytes per GPU = dense + expert bytes / ep, the expert bytes from meta.json's sizes;
#  - --tp 4 on llama-tiny (2 K/V heads) refused naming them, the largest fitting --tp 2;
#  - --ep (2 and E), --tp 2, --embedding-shard simulate with exit 0 and a step within 0.2x..5x of the
#    same trace on one GPU: --tp 2 on every family, --embedding-shard table on every family with a
#    token embedding and on torchrec's bags, --ep on every MoE family; --ep on a model without MoE
#    layers and --embedding-shard on one without tables (vit) refused in one line, exit 2.
# Usage: bash recognise.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
bin=${1:?usage: recognise.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "skip: python3 missing"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-recognise.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
tr="$root/traces"

. "$(dirname "$0")/libsim.bash"
# The inspections and simulations run in one process over libmitosis (libsim.bash; issue 47: each trace
# read once, not once per command); the refusals below are the CLI's (exit 2, one stderr line).
# $tmp/NAME.json: `inspect --json` of each trace named below (NAME.err: the message when refused).
libpy "$bin" - "$tr" "$tmp" cpu-llama-tiny-b4 cpu-mixtral-tiny-b4 cpu-deepseek-tiny-b4 cpu-bmm-moe-tiny-b4 \
  cpu-vit-tiny-b4 cpu-torchrec-tiny-b16 cpu-dlrm-tiny-b8 cpu-moe-tiny-b8 cpu-hash-moe-tiny-b4 cpu-hash-moe-label-b4 \
  cpu-gpt-tiny-b8 cpu-resnet18-b8 h100-llama3-8b-2blocks-b1-bf16 h100-mixtral-8x7b-1block-b1-bf16 <<'PY'
import json, sys
import libsim
tr, tmp = sys.argv[1:3]
for name in sys.argv[3:]:
    try:
        open(f"{tmp}/{name}.json", "w").write(libsim.inspect_text(f"{tr}/{name}"))
    except libsim.Error as e:
        open(f"{tmp}/{name}.err", "w").write(e.message + "\n")
PY

# expect TRACE PYTHON-ASSERTIONS: r = inspect's "recognised", m = meta.json (MT_INSPECT_ARGS: load
# options, the CLI's inspect then)
expect() {
  local name=$1 code=$2
  # shellcheck disable=SC2086
  if [ -n "${MT_INSPECT_ARGS:-}" ]; then
    "$bin" inspect "$tr/$name" --json ${MT_INSPECT_ARGS:-} >"$tmp/$name.json" 2>"$tmp/$name.err"
  fi
  [ -s "$tmp/$name.json" ] || { echo "FAIL: inspect $name"; cat "$tmp/$name.err"; fails=$((fails + 1)); return; }
  if python3 - "$tmp/$name.json" "$tr/$name/meta.json" <<EOF
import json, sys
r = json.load(open(sys.argv[1]))["recognised"]
m = json.load(open(sys.argv[2]))
tp, moe, tab = r["tp_sites"], r["moe"]["layers"], r["tables"]
bad = []
def eq(what, got, want):
    if got != want: bad.append("%s: recognised %r, the model has %r" % (what, got, want))
L = m.get("layers", 0)
$code
if bad:
    print("\n".join("  " + b for b in bad)); sys.exit(1)
EOF
  then echo "ok: $name recognised as its definition says"; else echo "FAIL: $name"; fails=$((fails + 1)); fi
}

moe_checks='
eq("MoE layers", len(moe), m["moe_layers"])
for i, x in enumerate(moe):
    eq("layer %d experts" % i, x["experts"], m["experts"])
    eq("layer %d top-k" % i, x["top_k"], m["top_k"])
    eq("layer %d shared experts" % i, x["shared_experts"], m["shared_experts"])
'
gqa_checks='
eq("GQA sites", tp["gqa"], L)
eq("q/kv width", tp["gqa_q_width"] // max(1, tp["gqa_kv_width"]), m["heads"] // m["kv_heads"])
eq("RMSNorm", tp["rmsnorm"], 2 * L + 1)
eq("rotary rotations", tp["rotary"], 2 * L)
eq("fused QKV", tp["fused_qkv"], 0)
'
expect cpu-llama-tiny-b4 "$gqa_checks
eq('SwiGLU pairs', tp['swiglu'], L)
eq('MoE layers', len(moe), 0)
eq('dense tables', tab['dense'], 1)"
expect cpu-mixtral-tiny-b4 "$gqa_checks$moe_checks
eq('SwiGLU pairs', tp['swiglu'], L * m['experts'])
tokens = m['batch'] * m['seq_len']
for x in moe:
    eq('experts as', x['experts_as'], 'looped')
    eq('routed rows', x['routed_rows'], tokens * m['top_k'])
    eq('tokens', x['tokens'], tokens)"
expect cpu-deepseek-tiny-b4 "$gqa_checks$moe_checks
eq('SwiGLU pairs', tp['swiglu'], 1 + m['moe_layers'] * (m['experts'] + 1))
for x in moe:
    eq('routed rows', x['routed_rows'], m['batch'] * m['seq_len'] * m['top_k'])"
expect cpu-bmm-moe-tiny-b4 "$moe_checks
eq('fused QKV', tp['fused_qkv'], L)
eq('LayerNorm', tp['layernorm'], 2 * L + 1)
import math
cap = math.ceil(m['capacity_factor'] * m['batch'] * m['seq_len'] / m['experts'])
for x in moe:
    eq('experts as', x['experts_as'], 'batched')
    eq('select', x['select'], 'aten::max')
    eq('routed rows (E x capacity)', x['routed_rows'], m['experts'] * cap)"
expect cpu-vit-tiny-b4 "eq('fused QKV', tp['fused_qkv'], L)
eq('LayerNorm', tp['layernorm'], 2 * L + 1)
eq('MoE layers', len(moe), 0)
eq('RMSNorm', tp['rmsnorm'], 0)"
expect cpu-torchrec-tiny-b16 "eq('bags', tab['bags'], m['tables'])
eq('jagged bags', tab['jagged'], m['tables'])
eq('MoE layers', len(moe), 0)"
expect cpu-dlrm-tiny-b8 "eq('bags', tab['bags'], m['tables'])
eq('jagged bags (fixed 2-D bags: arange offsets)', tab['jagged'], 0)"
expect cpu-moe-tiny-b8 "eq('MoE layers', len(moe), m['layers'])
for x in moe:
    eq('experts', x['experts'], m['experts'])
    eq('top-k', x['top_k'], m['top_k'])
    eq('routed rows', x['routed_rows'], sum(m['expert_tokens'][moe.index(x)]))"
named_checks="$moe_checks
for i, x in enumerate(moe):
    eq('layer %d named' % i, x['named'], True)
    eq('layer %d select (no router)' % i, x['select'], 'none')
    eq('layer %d rows per expert' % i, x['routed_rows'], sum(m['expert_tokens'][i]))"
expect cpu-hash-moe-tiny-b4 "$named_checks"
expect cpu-hash-moe-label-b4 "eq('MoE layers (own label, no --moe-pattern)', len(moe), 0)"
MT_INSPECT_ARGS="--moe-pattern expert*" expect cpu-hash-moe-label-b4 "$named_checks"
expect cpu-gpt-tiny-b8 "eq('MoE layers', len(moe), 0)
eq('GQA', tp['gqa'], 0)
eq('SwiGLU', tp['swiglu'], 0)"
expect cpu-resnet18-b8 "eq('MoE layers', len(moe), 0)"
# HuggingFace's own code (transformers 5.17, PyTorch 2.11, recorded on an H100 by tracer/record_gpu.sh):
# Llama-3-8B's blocks (SDPA attention, GQA 32/8 heads, SwiGLU, RMSNorm, rotary) and Mixtral-8x7B's
# MoE block (router linear -> softmax -> topk; experts as aten::_grouped_mm over the stacked
# gate_up_proj/down_proj [E, ...] weights, read through transposed views), counts from hf_config.
hf_checks='
h = m["hf_config"]
L = h["num_hidden_layers"]
eq("GQA sites", tp["gqa"], L)
eq("q/kv width", tp["gqa_q_width"] // max(1, tp["gqa_kv_width"]), h["num_attention_heads"] // h["num_key_value_heads"])
eq("RMSNorm", tp["rmsnorm"], 2 * L + 1)
eq("rotary rotations", tp["rotary"], 2 * L)
'
expect h100-llama3-8b-2blocks-b1-bf16 "$hf_checks
eq('SwiGLU pairs', tp['swiglu'], L)
eq('MoE layers', len(moe), 0)"
expect h100-mixtral-8x7b-1block-b1-bf16 "$hf_checks
eq('MoE layers', len(moe), L)
for x in moe:
    eq('experts', x['experts'], h['num_local_experts'])
    eq('top-k', x['top_k'], h['num_experts_per_tok'])
    eq('experts as', x['experts_as'], 'batched')
    eq('routed rows', x['routed_rows'], m['batch'] * m['seq_len'] * h['num_experts_per_tok'])"

# --ep, --tp, --embedding-shard simulate, with a step near the one-GPU step (one process: libpy)
libpy "$bin" - "$tr" <<'PY' || fails=$((fails + 1))
import json, sys
import libsim
tr = sys.argv[1]
fails = 0
def check(name, ok, detail=""):
    global fails
    print(("ok: " if ok else "FAIL: ") + name + ("" if ok else ": %s" % (detail,)))
    fails += not ok
one = {}
def step(t, *words):
    try:
        return libsim.sim(f"{tr}/{t}", *words)["step_ms"], None
    except libsim.Error as e:
        return None, e.message
def sim(name, t, *words):
    if t not in one:
        one[t] = step(t, "--gpus", 1)[0]
    s, err = step(t, *words)
    if err is not None:
        return check(f"{name} exits 0", False, err)
    o = one[t]
    check(f"{name}: step {s} ms vs {o} ms on one GPU", o and s > 0 and o > 0 and 0.2 * o < s < 5 * o)
sim("mixtral --ep 2", "cpu-mixtral-tiny-b4", "--gpus", 2, "--ep", 2)
sim("mixtral --ep 8", "cpu-mixtral-tiny-b4", "--gpus", 8, "--ep", 8)
sim("bmm-moe --ep 2", "cpu-bmm-moe-tiny-b4", "--gpus", 2, "--ep", 2)
sim("bmm-moe --ep 8", "cpu-bmm-moe-tiny-b4", "--gpus", 8, "--ep", 8)
sim("deepseek --ep 4", "cpu-deepseek-tiny-b4", "--gpus", 4, "--ep", 4)
sim("llama --tp 2", "cpu-llama-tiny-b4", "--gpus", 2, "--tp", 2)
sim("mixtral --tp 2", "cpu-mixtral-tiny-b4", "--gpus", 2, "--tp", 2)
sim("vit --tp 2", "cpu-vit-tiny-b4", "--gpus", 2, "--tp", 2)
sim("hash-moe (annotated) --ep 4", "cpu-hash-moe-tiny-b4", "--gpus", 4, "--ep", 4)
sim("torchrec --embedding-shard table", "cpu-torchrec-tiny-b16", "--gpus", 4, "--embedding-shard", "table")
sim("torchrec --embedding-shard row", "cpu-torchrec-tiny-b16", "--gpus", 2, "--embedding-shard", "row")
# every family under every sharding flag (issue 32's "runs on them"): the ones not above run with a step
# near one GPU's; a family without the thing a flag splits is refused (the CLI's checks below)
sim("deepseek --tp 2", "cpu-deepseek-tiny-b4", "--gpus", 2, "--tp", 2)
sim("bmm-moe --tp 2", "cpu-bmm-moe-tiny-b4", "--gpus", 2, "--tp", 2)
sim("hash-moe --tp 2", "cpu-hash-moe-tiny-b4", "--gpus", 2, "--tp", 2)
sim("torchrec --tp 2", "cpu-torchrec-tiny-b16", "--gpus", 2, "--tp", 2)
for f in ("llama-tiny", "mixtral-tiny", "deepseek-tiny", "bmm-moe-tiny", "hash-moe-tiny"):  # a token embedding
    sim(f"{f[:-5]} --embedding-shard table", f"cpu-{f}-b4", "--gpus", 2, "--embedding-shard", "table")

# EP moves the routed rows: a batched layer's all-to-all carries E x capacity rows (its buffers)
d = libsim.sim(f"{tr}/cpu-bmm-moe-tiny-b4", "--gpus", 2, "--ep", 2)["moe"]
check("bmm-moe --ep 2: shares even (a batched layer shows buffers, not tokens per expert)",
      d["shares"] != "traced" and all(abs(x - 0.5) < 1e-9 for L in d["layers"] for x in L["rank_share"]), d["shares"])

# --ep splits the experts' weights, nothing else: parameter bytes per GPU = dense + experts / ep, the expert
# bytes from the model definition (meta.json): bmm-moe 2 stacked [E, d, f] + [E, f, d] per layer, mixtral 3
# d x f linears per expert, deepseek 3 d x moe_ffn per routed expert (shared experts dense).
def ep_params(t, ep, experts, bytes_per=4):
    m = json.load(open(f"{tr}/{t}/meta.json"))
    d = libsim.sim(f"{tr}/{t}", "--gpus", ep, "--ep", ep)
    want = m["parameters"] * bytes_per - experts(m) + experts(m) / ep
    got = d["gpus"][0]["mem_bytes"]["params"]
    print("  params per GPU %.0f, closed form %.0f" % (got, want))
    check(f"{t} --ep {ep}: parameter bytes per GPU = dense + experts / {ep}", abs(got - want) < 1)
ep_params("cpu-bmm-moe-tiny-b4", 2, lambda m: m["moe_layers"] * 2 * m["experts"] * m["hidden"] * m["ffn"] * 4)
ep_params("cpu-bmm-moe-tiny-b4", 8, lambda m: m["moe_layers"] * 2 * m["experts"] * m["hidden"] * m["ffn"] * 4)
ep_params("cpu-mixtral-tiny-b4", 4, lambda m: m["moe_layers"] * 3 * m["experts"] * m["hidden"] * m["ffn"] * 4)
ep_params("cpu-deepseek-tiny-b4", 2, lambda m: m["moe_layers"] * 3 * m["experts"] * m["hidden"] * m["moe_ffn"] * 4)
h = lambda m: m["hf_config"]
ep_params("h100-mixtral-8x7b-1block-b1-bf16", 8, lambda m: h(m)["num_hidden_layers"] * 3 * h(m)["num_local_experts"] *
          h(m)["hidden_size"] * h(m)["intermediate_size"] * 2, 2)
sim("HF mixtral --ep 8", "h100-mixtral-8x7b-1block-b1-bf16", "--gpus", 8, "--ep", 8)
sim("HF llama --tp 8", "h100-llama3-8b-2blocks-b1-bf16", "--gpus", 8, "--tp", 8)
sys.exit(1 if fails else 0)
PY

# --moe-pattern changes how the trace loads (not an option of libmitosis's configurations): the CLI's
step_of() { sed -n 's/^step time *\([0-9.]*\) ms.*/\1/p' "$1" | head -1; }
"$bin" simulate "$tr/cpu-hash-moe-label-b4" --gpus 1 >"$tmp/one.txt" 2>&1
"$bin" simulate "$tr/cpu-hash-moe-label-b4" --gpus 2 --ep 2 --moe-pattern 'expert*' >"$tmp/sim.txt" 2>&1 ||
  { echo "FAIL: hash-moe (own label) --ep 2 --moe-pattern exits non-zero"; cat "$tmp/sim.txt"; fails=$((fails + 1)); }
one=$(step_of "$tmp/one.txt"); s=$(step_of "$tmp/sim.txt")
check "hash-moe (own label) --ep 2 --moe-pattern: step $s ms vs $one ms on one GPU" "awk -v s='$s' -v o='$one' 'BEGIN{exit !(s > 0 && o > 0 && s > 0.2 * o && s < 5 * o)}'"
check "llama --tp 4 (2 K/V heads): refused in one line naming the key/value heads, exit 2" \
  "'$bin' simulate '$tr/cpu-llama-tiny-b4' --gpus 4 --tp 4 >'$tmp/o' 2>'$tmp/e'; [ \$? -eq 2 ] && [ \$(wc -l <'$tmp/e') -eq 1 ] && grep -q '2 key/value heads' '$tmp/e' && grep -q 'largest --tp up to 4 that fits this model is 2' '$tmp/e'"
check "hash-moe (own label) --ep 2 without --moe-pattern: refused in one line naming --moe-pattern, exit 2" \
  "'$bin' simulate '$tr/cpu-hash-moe-label-b4' --gpus 2 --ep 2 >'$tmp/o' 2>'$tmp/e'; [ \$? -eq 2 ] && [ \$(wc -l <'$tmp/e') -eq 1 ] && grep -q -- --moe-pattern '$tmp/e'"
refused() { # name trace stderr-pattern args...
  local name=$1 t=$2 pat=$3; shift 3
  "$bin" simulate "$tr/$t" "$@" >"$tmp/o" 2>"$tmp/e"
  local rc=$?
  check "$name: refused in one line, exit 2" "[ $rc -eq 2 ] && [ \$(wc -l <'$tmp/e') -eq 1 ] && grep -q -- '$pat' '$tmp/e'"
}
refused "llama --ep 2 (no MoE)" cpu-llama-tiny-b4 "mixture-of-experts" --gpus 2 --ep 2
refused "vit --ep 2 (no MoE)" cpu-vit-tiny-b4 "mixture-of-experts" --gpus 2 --ep 2
refused "torchrec --ep 2 (no MoE)" cpu-torchrec-tiny-b16 "mixture-of-experts" --gpus 2 --ep 2
refused "vit --embedding-shard table (no table)" cpu-vit-tiny-b4 "embedding tables" --gpus 2 --embedding-shard table

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all recognition checks passed"
