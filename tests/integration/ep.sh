#!/usr/bin/env bash
# Integration: expert parallelism and sharded embeddings (issue 18) on the CLI, with the fixtures
# tests/fixtures/moe-tiny (2 MoE layers, 4 experts, top-2) and tests/fixtures/dlrm-tiny (8 tables):
#  - --ep not dividing the experts: one line, exit 2;
#  - uniform routing: every GPU's traffic_bytes.alltoall is (E-1)/E of what it dispatches (4
#    all-to-alls per MoE layer and step), moe.layers[].load even;
#  - a hot expert (--expert-skew 3) is named as the straggler (text, JSON, HTML's expert load), its EP
#    rank computes the most;
#  - --embedding-shard: the tables' gradients are never all-reduced (the all-reduces carry the dense
#    MLPs only), an all-to-all each way; table-wise an owner of more tables sends more;
#  - rank 0's trace of a 2-process MoE job (tests/fixtures/moe-tiny-w2-rank0, collect.py --dist moe):
#    recognised, --ep 2 regenerates its all-to-alls (shares even: its experts' rows came from both ranks);
#  - the same job recorded when PyTorch's ET observer missed an AccumulateGrad's end, so that the ET
#    nests the optimizer step in it (tests/fixtures/moe-tiny-w2-et-parent, from a failed
#    sparse_collect run): every parameter still a weight (29,504, meta.json's count), the all-reduce
#    partial (dense part only);
#  - compare lists ep= plans for a MoE trace, emb= plans for DLRM, --sparse-plans restricts them.
# Usage: bash ep.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: ep.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-ep.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
moe="$root/tests/fixtures/moe-tiny"
dlrm="$root/tests/fixtures/dlrm-tiny"

"$bin" simulate "$moe" --gpus 3 --ep 3 > "$tmp/o" 2> "$tmp/e"; rc=$?
check "--ep 3 of 4 experts: exit 2, one line" '[ $rc -eq 2 ] && [ $(wc -l < "$tmp/e") -eq 1 ] && grep -q "does not divide the 4 experts" "$tmp/e"'

# bad input: one line naming the flag, exit 2
bad() { # name, wanted text, args...
  local name=$1 want=$2; shift 2
  "$bin" "$@" > "$tmp/o" 2> "$tmp/e"; local rc=$?
  check "bad input: $name" '[ $rc -eq 2 ] && [ $(wc -l < "$tmp/e") -eq 1 ] && grep -q -- "$want" "$tmp/e"'
}
bad "--expert-skew -1" "--expert-skew needs" simulate "$moe" --gpus 4 --expert-skew -1
bad "--expert-skew on a trace without experts" "--expert-skew needs a trace" simulate "$dlrm" --gpus 2 --expert-skew 1
bad "--embedding-shard diagonal" "--embedding-shard needs" simulate "$dlrm" --gpus 2 --embedding-shard diagonal
bad "--embedding-shard on a trace without tables" "--embedding-shard needs a trace" simulate "$root/traces/cpu-resnet18-b4" --gpus 2 --embedding-shard table
bad "--a2a ring" "--a2a needs" simulate "$moe" --gpus 4 --ep 2 --a2a ring
bad "--comm maybe" "--comm needs" simulate "$moe" --gpus 4 --comm maybe
bad "--sparse-plans bogus" "--sparse-plans" compare "$moe" --gpus 4 --sparse-plans bogus

"$bin" simulate "$moe" --gpus 8 --ep 4 --expert-skew 0 --json > "$tmp/u.json"
check "uniform routing: all-to-all bytes per GPU = (E-1)/E of the dispatched bytes" 'python3 -c "
import json; d=json.load(open(\"$tmp/u.json\")); m=d[\"moe\"]
disp=sum(l[\"dispatch_bytes\"] for l in m[\"layers\"])*4
assert m[\"ep\"]==4 and all(l[\"load\"]==[0.25]*4 for l in m[\"layers\"]), m
for g in d[\"gpus\"]: assert abs(g[\"traffic_bytes\"][\"alltoall\"]-0.75*disp)<1e-6, (g[\"traffic_bytes\"], disp)
assert set(d[\"mesh\"][\"traffic_bytes\"])>={\"dp\",\"ep\",\"edp\"}, d[\"mesh\"]"'

"$bin" simulate "$moe" --gpus 4 --ep 4 --expert-skew 3 --json > "$tmp/s.json"
"$bin" simulate "$moe" --gpus 4 --ep 4 --expert-skew 3 --html "$tmp/s.html" > "$tmp/s.txt"
check "a hot expert: named as the straggler, its rank computes the most" 'python3 -c "
import json; d=json.load(open(\"$tmp/s.json\")); s=d[\"moe\"][\"straggler\"]
c=[g[\"compute_ms\"] for g in d[\"gpus\"]]
assert s[\"share\"]>0.6 and c.index(max(c))==s[\"ep_rank\"], (s, c)" && grep -q "straggler: expert" "$tmp/s.txt" &&
  grep -q "id=\"expert-load\"" "$tmp/s.html" && grep -q "the straggler: expert" "$tmp/s.html"'

"$bin" simulate "$dlrm" --gpus 4 --json > "$tmp/d0.json"
for m in table row column; do "$bin" simulate "$dlrm" --gpus 4 --embedding-shard $m --json > "$tmp/d-$m.json"; done
check "sharded embeddings: no all-reduce of the tables, all-to-alls instead" 'python3 -c "
import json; r=json.load(open(\"$tmp/d0.json\"))
for m in (\"table\",\"row\",\"column\"):
    d=json.load(open(\"$tmp/d-%s.json\" % m))
    for g, g0 in zip(d[\"gpus\"], r[\"gpus\"]):
        assert g[\"traffic_bytes\"][\"allreduce\"] < 0.1*g0[\"traffic_bytes\"][\"allreduce\"], (m, g, g0)
        assert g[\"traffic_bytes\"][\"alltoall\"] > 0 and g0[\"traffic_bytes\"][\"alltoall\"] == 0
    s=d[\"simulation\"]; assert s[\"collectives\"] == s[\"ddp_buckets\"] + 2, (m, s)
t=[g[\"traffic_bytes\"][\"alltoall\"] for g in json.load(open(\"$tmp/d-table.json\"))[\"gpus\"]]
assert len(set(t)) > 1, t"'

"$bin" simulate "$root/tests/fixtures/moe-tiny-w2-rank0" --gpus 2 --ep 2 --json > "$tmp/r.json"
check "rank 0 of a 2-process MoE job: recognised, its all-to-alls regenerated for --ep 2" 'python3 -c "
import json; d=json.load(open(\"$tmp/r.json\")); m=d[\"moe\"]
disp=sum(l[\"dispatch_bytes\"] for l in m[\"layers\"])*4
assert m[\"shares\"]==\"even\" and len(m[\"layers\"])==2 and d[\"plan\"][\"comm\"]==\"regenerate\", m
assert d[\"simulation\"][\"traced_collectives\"]==0, d[\"simulation\"]
for g in d[\"gpus\"]: assert abs(g[\"traffic_bytes\"][\"alltoall\"]-0.5*disp)<1e-6, (g, disp)"'

"$bin" inspect "$root/tests/fixtures/moe-tiny-w2-et-parent" --json > "$tmp/p.json"
check "an ET that nests the optimizer in an AccumulateGrad: weights from Kineto's nesting" 'python3 -c "
import json; d=json.load(open(\"$tmp/p.json\")); m=json.load(open(\"$root/tests/fixtures/moe-tiny-w2-et-parent/meta.json\"))
assert d[\"param_count\"] == m[\"parameters\"] == 29504, (d[\"param_count\"], m[\"parameters\"])
p = d[\"traced_plan\"]; assert p[\"parameter_sync\"] == \"partial\", p"'

for sp in auto none ep; do "$bin" compare "$moe" --gpus 4 --dp-modes ddp --sparse-plans $sp --json > "$tmp/c-$sp.json"; done
"$bin" compare "$dlrm" --gpus 4 --dp-modes ddp --sparse-plans table --json > "$tmp/c-table.json"
check "compare lists ep= and emb= plans; --sparse-plans restricts them" 'python3 -c "
import json
def labels(n): return [r[\"label\"] for r in json.load(open(\"$tmp/c-%s.json\" % n))[\"rows\"]]
a, n, e, t = labels(\"auto\"), labels(\"none\"), labels(\"ep\"), labels(\"table\")
assert \"ddp=2:ep=2\" in a and \"ep=4\" in a and sorted(a) == sorted(e), a
assert not any(\"ep=\" in x for x in n) and len(n) < len(a), n
assert \"ddp=4:emb=table\" in t and not any(\"emb=row\" in x for x in t), t"'

[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
