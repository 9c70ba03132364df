#!/usr/bin/env bash
# Integration: `mitosis inspect` on every folder of ../shared/traces (skipped when absent) and
# the acceptance numbers of the VGG13 H100 batch-512 pair.
set -u
bin=$1
shared=${MT_SHARED_TRACES:-$(dirname "$0")/../../../shared/traces}
if [ ! -d "$shared" ]; then echo "SKIP: $shared is absent"; exit 77; fi
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }

for d in "$shared"/*/; do
  name=$(basename "$d")
  case "$name" in
    et-schemas|kineto-only)   # single files, one trace each
      for f in "$d"*.gz; do
        "$bin" inspect "$f" --json > $tmp/inspect.json 2>$tmp/inspect.err
        check "inspect $name/$(basename "$f")" '[ $? -eq 0 ] && python3 -c "import json,sys; json.load(open(\"$tmp/inspect.json\"))"'
      done ;;
    *)
      "$bin" inspect "$d" --json > $tmp/inspect.json 2>$tmp/inspect.err
      check "inspect $name" '[ $? -eq 0 ]' ;;
  esac
done

vgg=$shared/triosim-vgg13-h100-bs512
if [ -d "$vgg" ]; then
  "$bin" inspect "$vgg" --json > $tmp/vgg.json
  # README of shared/traces: GPU busy 346.34 ms (union of kernel intervals)
  check "vgg13 total within 1% of 346.34 ms" 'python3 -c "
import json; d=json.load(open(\"$tmp/vgg.json\")); t=d[\"time_ms\"][\"total\"]
assert abs(t-346.34)/346.34 < 0.01, t"'
  check "vgg13 exact parameter count 133047848" 'python3 -c "
import json; d=json.load(open(\"$tmp/vgg.json\")); assert d[\"param_count\"]==133047848, d[\"param_count\"]"'
  check "vgg13 batch 512 on H100, link keys" 'python3 -c "
import json; d=json.load(open(\"$tmp/vgg.json\"))
assert d[\"batch_size\"]==512 and \"H100\" in d[\"device\"]
assert set(d[\"link\"])>={\"method\",\"matched\",\"unmatched\"} and d[\"link\"][\"unmatched\"]==0
assert set(d[\"time_ms\"])>={\"forward\",\"backward\",\"optimizer\",\"other\",\"total\"}"'
fi
res=$shared/param-resnet
if [ -d "$res" ]; then
  check "param-resnet is ResNet-18 (11689512 parameters)" '"$bin" inspect "$res" --json | python3 -c "
import json,sys; d=json.load(sys.stdin); assert d[\"param_count\"]==11689512 and d[\"batch_size\"]==128"'
fi
r2=$shared/et-schemas/param-1.1.0-resnet_2gpu_rank1_et.json.gz
if [ -f "$r2" ]; then
  check "rank trace keeps DDP all-reduces as communication (group 2)" '"$bin" inspect "$r2" --json | python3 -c "
import json,sys; d=json.load(sys.stdin); c=[x for x in d[\"communication\"] if x[\"collective\"]==\"allreduce\"]
assert len(c)>=5 and all(x[\"group_size\"]==2 and x[\"bytes\"]>0 for x in c)"'
fi
exit $fail
