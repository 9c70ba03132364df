#!/usr/bin/env bash
# Integration: the trace's repeating block (extrapolate/blocks.h) as inspect shows it.
#  - gpt-tiny (collect.py: 4 layers, hidden 256) and the l8h16 transformer (8 layers, hidden 512):
#    as many blocks as the model has layers, each holding one layer's parameters, which is
#    12 h^2 + 13 h fp32 values (q, k, v, o: 4 (h^2 + h); MLP h x 4h: 8 h^2 + 5 h; two LayerNorms: 4 h);
#  - resmlp (8 blocks of hidden 512): 8 blocks; dlrm-tiny (no repeated group): none, said so.
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
[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
