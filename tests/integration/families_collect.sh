#!/usr/bin/env bash
# tracer/families.py records (issue 32): each public-code family of collect.py records a tiny step
# (2 layers, hidden 32, seq 8: a few seconds each) and `mitosis inspect --json` finds in it what
# meta.json says the model has (MoE layers, experts, top-k, shared experts; jagged tables); bad
# family flags are one line and exit 2. The shipped traces are checked by recognise.sh; this one
# checks that the recorder still builds and runs every family.
# Usage: bash families_collect.sh /path/to/mitosis   (env MT_ROOT = repo root)
# Exit 77 (skipped) when /usr/bin/python3 cannot import torch.
set -u
bin=${1:?usage: families_collect.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
# (find_spec: whether torch is installed, without paying its import, ~2 CPU s; a broken one fails the run)
"$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1 ||
    { echo "SKIP: $PY cannot import torch"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-families.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
collect() { "$PY" "$root/tracer/collect.py" --threads 1 --warmup 0 --steps 1 --batch 2 --seq-len 8 --vocab 256 \
  --layers 2 --hidden 32 --heads 4 "$@"; }

# Every family in one process (record_suite.py: collect.py's parse_args and run per recording, torch
# imported once; issue 47: 7 processes' start-up was most of this test), each to
# $tmp/suite/cpu-FAMILY-b2-fp32; the command line's own errors are checked below.
fams="llama-tiny mixtral-tiny bmm-moe-tiny deepseek-tiny hash-moe-tiny vit-tiny torchrec-tiny"
"$PY" "$root/tracer/record_suite.py" --models "$(echo $fams | tr ' ' ,)" --batches 2 --dtypes fp32 --device cpu \
  --warmup 0 --steps 1 --root "$tmp/suite" -- --threads 1 --seq-len 8 --vocab 256 --layers 2 --hidden 32 --heads 4 \
  --kv-heads 2 --experts 4 --top-k 2 --tables 3 >"$tmp/suite.log" 2>&1
for fam in $fams; do
  d=$tmp/suite/cpu-$fam-b2-fp32
  if [ ! -s "$d/meta.json" ]; then
    echo "FAIL: record --model $fam"; grep -F -- "$fam" "$tmp/suite.log"; fails=$((fails + 1)); continue
  fi
  "$bin" inspect "$d" --json >"$tmp/$fam.json" 2>/dev/null
  check "$fam: recorded and recognised as meta.json says" "$PY - '$tmp/$fam.json' '$d/meta.json' <<'EOF'
import json, sys
r = json.load(open(sys.argv[1]))['recognised']
m = json.load(open(sys.argv[2]))
moe = r['moe']['layers']
ok = len(moe) == m.get('moe_layers', 0)
ok = ok and all(x['experts'] == m['experts'] and x['top_k'] == m['top_k'] and
                x['shared_experts'] == m['shared_experts'] for x in moe)
if 'tables' in m:
    ok = ok and r['tables']['bags'] == m['tables'] == r['tables']['jagged']
if m.get('kv_heads'):
    ok = ok and r['tp_sites']['gqa'] == m['layers'] and r['tp_sites']['rmsnorm'] == 2 * m['layers'] + 1
sys.exit(0 if ok else 1)
EOF"
done

one_line_exit2() { # name, collect.py args...
  local name=$1; shift
  collect "$@" -o "$tmp/bad" >"$tmp/out" 2>"$tmp/err"
  local rc=$?
  check "$name: exit 2, one line" "[ $rc -eq 2 ] && [ \$(wc -l <'$tmp/err') -eq 1 ]"
}
one_line_exit2 "mixtral --top-k 3 --experts 2" --model mixtral-tiny --experts 2 --top-k 3
one_line_exit2 "llama --kv-heads 3 of 4 heads" --model llama-tiny --kv-heads 3
one_line_exit2 "deepseek --shared-experts 0" --model deepseek-tiny --shared-experts 0
one_line_exit2 "moe-tiny --top-k 3" --model moe-tiny --top-k 3

[ "$fails" -eq 0 ] || { echo "$fails failure(s)"; exit 1; }
echo "all family recordings passed"
