#!/usr/bin/env bash
# tracer/collect.py records a tiny training step: kineto.json.gz (valid JSON,
# cpu_op events with "External id"), et.json.gz (ET with nodes) and meta.json
# (positive step time).  When `mitosis inspect` exists it must read the result.
# Usage: bash tracer_collect.sh /path/to/mitosis   (env MT_ROOT = repo root)
# Exit 77 (skipped) when /usr/bin/python3 cannot import torch.
set -u

MITOSIS=${1:?usage: tracer_collect.sh /path/to/mitosis}
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3

if ! "$PY" -c 'import torch' >/dev/null 2>&1; then
  echo "SKIP: $PY cannot import torch (Debian: apt-get install python3-torch python3-torchvision)"
  exit 77
fi

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/mt-collect.XXXXXX")
trap 'rm -rf "$tmpdir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# A wrong model name is a one-line error and status 2, not a traceback.
err=$("$PY" "$ROOT/tracer/collect.py" --model no-such-model --device cpu -o "$tmpdir/bad" 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "unknown model: expected exit 2, got $rc: $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "unknown model: expected one line, got: $err"
case "$err" in *"unknown model 'no-such-model'"*) ;; *) fail "unknown model message: $err" ;; esac

"$PY" "$ROOT/tracer/collect.py" --model mlp --hidden 32 --batch 2 --warmup 1 --steps 2 \
  --device cpu -o "$tmpdir" || fail "collect.py --model mlp failed"

for f in kineto.json.gz et.json.gz meta.json; do
  [ -s "$tmpdir/$f" ] || fail "missing or empty $f"
done

"$PY" - "$tmpdir" <<'EOF' || fail "trace contents"
import gzip, json, sys
d = sys.argv[1]
k = json.load(gzip.open(d + "/kineto.json.gz", "rt"))
assert k.get("schemaVersion") == 1, "kineto: schemaVersion"
ev = k["traceEvents"]
ops = [e for e in ev if e.get("cat") == "cpu_op"]
assert ops, "kineto: no cpu_op events"
assert all("External id" in e.get("args", {}) for e in ops), "kineto: cpu_op without External id"
assert all(e["ph"] == "X" and e["dur"] >= 0 for e in ops), "kineto: bad op event"
assert any(e.get("name", "").startswith("ProfilerStep#") for e in ev), "kineto: no ProfilerStep#N"
assert any(e.get("name") == "aten::addmm" and e["args"].get("Input Dims") for e in ops), \
    "kineto: aten::addmm without Input Dims"
et = json.load(gzip.open(d + "/et.json.gz", "rt"))
nodes = et.get("nodes") or []
assert nodes, "et: no nodes"
assert any(n.get("name") == "aten::addmm" for n in nodes), "et: no aten::addmm node"
m = json.load(open(d + "/meta.json"))
st = m["step_time_ms"]
assert st["median"] > 0 and st["min"] > 0 and len(st["all"]) == 2, "meta: step time %r" % st
assert m["model"] == "mlp" and m["batch"] == 2 and m["parameters"] > 0, "meta: fields"
print("ok: %d cpu ops, %d ET nodes (schema %s), step %.3f ms"
      % (len(ops), len(nodes), et.get("schema"), st["median"]))
EOF

if "$MITOSIS" inspect --help >/dev/null 2>&1; then
  "$MITOSIS" inspect "$tmpdir" >"$tmpdir/inspect.out" 2>&1 \
    || { cat "$tmpdir/inspect.out" >&2; fail "mitosis inspect $tmpdir"; }
  echo "ok: mitosis inspect read the recorded trace"
else
  echo "note: '$MITOSIS inspect' not available yet; skipped that check"
fi
# Running out of memory is a one-line error (exit 2) that says to lower --batch. The user
# workload below raises PyTorch's out-of-memory error at batch >= 4.
mkdir -p "$tmpdir/mod"
cat >"$tmpdir/mod/oomwork.py" <<'PY'
import torch

class Net(torch.nn.Module):
    def __init__(self, batch):
        super().__init__()
        self.fc = torch.nn.Linear(8, 2)
        self.batch = batch

    def forward(self, x):
        if self.batch >= 4:
            raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 GiB")
        return self.fc(x)

def build(batch):
    m = Net(batch)
    x = torch.randn(batch, 8)
    return m, x, lambda out: out.sum(), None
PY
err=$(PYTHONPATH="$tmpdir/mod" "$PY" "$ROOT/tracer/collect.py" --model oomwork:build --batch 4 --device cpu \
      --warmup 1 --steps 1 -o "$tmpdir/oom" 2>&1)
rc=$?
[ "$rc" -eq 2 ] || fail "out of memory: expected exit 2, got $rc: $err"
[ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "out of memory: expected one line, got: $err"
case "$err" in *"out of host memory for oomwork:build at batch 4"*"smaller --batch"*) ;;
  *) fail "out of memory message: $err" ;; esac
echo "ok: out of memory is one line, exit 2"

# record_suite.py: a grid in one process; an out-of-memory batch skips the larger ones; a second
# run records nothing new; --pack parts unpack into the same folders.
suite="$tmpdir/suite"
out=$(PYTHONPATH="$tmpdir/mod" "$PY" "$ROOT/tracer/record_suite.py" --models mlp,oomwork:build \
      --batches 2,4,8 --dtypes fp32 --device cpu --warmup 1 --steps 2 --root "$suite" \
      --pack "$tmpdir/pack" -- --hidden 16 2>&1) || fail "record_suite.py: $out"
for f in cpu-mlp-b2-fp32 cpu-mlp-b4-fp32 cpu-mlp-b8-fp32 cpu-oomwork-build-b2-fp32; do
  [ -s "$suite/$f/meta.json" ] || fail "record_suite.py: no $f/meta.json: $out"
done
[ ! -e "$suite/cpu-oomwork-build-b8-fp32" ] || fail "record_suite.py recorded past an out-of-memory batch"
"$PY" - "$suite/suite.json" <<'PY' || fail "suite.json"
import json, sys
r = json.load(open(sys.argv[1]))["runs"]
assert r["cpu-oomwork-build-b4-fp32"]["result"] == "oom", r
assert "cpu-oomwork-build-b8-fp32" not in r, r
assert sum(v["result"] == "ok" for v in r.values()) == 4, r
PY
again=$(PYTHONPATH="$tmpdir/mod" "$PY" "$ROOT/tracer/record_suite.py" --models mlp,oomwork:build \
        --batches 2,4,8 --dtypes fp32 --device cpu --root "$suite" -- --hidden 16 2>&1) \
  || fail "record_suite.py again: $again"
case "$again" in *"0 recorded in this run"*) ;; *) fail "second run recorded again: $again" ;; esac
mkdir -p "$tmpdir/unpacked"
cat "$tmpdir/pack"/traces.tar.part* | tar -x -C "$tmpdir/unpacked" || fail "unpacking the parts"
cmp "$suite/cpu-mlp-b4-fp32/kineto.json.gz" "$tmpdir/unpacked/cpu-mlp-b4-fp32/kineto.json.gz" \
  || fail "packed kineto differs"
[ -s "$tmpdir/pack/suite.json" ] || fail "no suite.json in the pack"
bad=$("$PY" "$ROOT/tracer/record_suite.py" --models no-such-model --device cpu --root "$suite" 2>&1)
[ $? -eq 2 ] && [ "$(printf '%s\n' "$bad" | wc -l)" -eq 1 ] || fail "unknown suite model: $bad"
echo "ok: record_suite.py grid, out-of-memory skip, resume, pack"

if "$MITOSIS" inspect --help >/dev/null 2>&1; then
  "$MITOSIS" simulate "$suite/cpu-mlp-b4-fp32" --gpus 2 --calibrate --json >"$tmpdir/cal.json" 2>&1 \
    || { cat "$tmpdir/cal.json" >&2; fail "mitosis simulate --calibrate on a suite folder"; }
  echo "ok: mitosis simulate --calibrate read the suite's meta.json"
fi
# --dist: rank 0 of a 2-process gloo job. A pipeline of 2 stages (resmlp, 2 blocks of width 32,
# batch 4 in 2 micro-batches) sends each micro-batch's [2, 32] activation: 256 bytes, which the
# trace shows as rank 0's sends; the Kineto JSON carries distributedInfo as Kineto writes it.
"$PY" "$ROOT/tracer/collect.py" --model resmlp --hidden 32 --layers 2 --batch 4 --dist pipeline --world 2 \
  --micro-batches 2 --warmup 1 --steps 2 -o "$tmpdir/pp" >/dev/null 2>"$tmpdir/pp.err" \
  || { cat "$tmpdir/pp.err" >&2; fail "collect.py --dist pipeline"; }
"$PY" - "$tmpdir/pp" <<'PY' || fail "--dist pipeline trace"
import gzip, json, sys
d = sys.argv[1]
k = json.load(gzip.open(d + "/kineto.json.gz", "rt"))
di = k.get("distributedInfo", {})
assert di.get("world_size") == 2 and di.get("rank") == 0 and di["pg_config"][0]["pg_size"] == 2, di
m = json.load(open(d + "/meta.json"))
assert m["dist"]["mode"] == "pipeline" and m["dist"]["world"] == 2, m["dist"]
assert m["dist"]["sent_bytes_per_micro_batch"] == 2 * 32 * 4, m["dist"]
assert m["step_time_ms"]["median"] > 0 and len(m["dist"]["rank_step_ms"]) == 2, m
PY
if "$MITOSIS" inspect --help >/dev/null 2>&1; then
  "$MITOSIS" inspect "$tmpdir/pp" --json >"$tmpdir/pp.json" || fail "mitosis inspect of the --dist trace"
  "$PY" - "$tmpdir/pp.json" <<'PY' || fail "traced plan of the --dist pipeline trace"
import json, sys
p = json.load(open(sys.argv[1]))["traced_plan"]
assert p["world_size"] == 2 and p["rank"] == 0 and p["multi_rank"], p
k = p["by_kind"]
assert k["send"]["count"] == 2 and k["send"]["bytes"] == 2 * 256, k
assert k["recv"]["count"] == 2 and "allreduce" not in k, k
PY
fi
err=$("$PY" "$ROOT/tracer/collect.py" --model mlp --dist pipeline -o "$tmpdir/ppbad" 2>&1)
rc=$?
[ "$rc" -eq 2 ] && [ "$(printf '%s\n' "$err" | wc -l)" -eq 1 ] || fail "--dist pipeline of mlp: $rc: $err"
echo "ok: --dist pipeline records rank 0 with its sends and distributedInfo"

# --sibling-load: the recording beside the same model stepping on the other core.
"$PY" "$ROOT/tracer/collect.py" --model mlp --hidden 32 --batch 2 --warmup 1 --steps 2 --sibling-load \
  -o "$tmpdir/sib" >/dev/null 2>&1 || fail "collect.py --sibling-load"
"$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["sibling_load"]["core"] == 1, m' \
  "$tmpdir/sib/meta.json" || fail "--sibling-load meta.json"
echo "ok: --sibling-load"
echo "PASS"
