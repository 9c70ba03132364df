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

# (find_spec: whether torch is installed, without paying its import; collect.py names a broken one)
if ! "$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' >/dev/null 2>&1; then
  echo "SKIP: $PY cannot import torch (Debian: apt-get install python3-torch python3-torchvision)"
  exit 77
fi

tmpdir=$(mktemp -d "${TMPDIR:-/tmp}/mt-collect.XXXXXX")
trap 'rm -rf "$tmpdir"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

# One Python (torch imported once) runs the command lines that need no second process: each through
# collect.py's or record_suite.py's own main() (what `python3 collect.py ARGS` runs: exit status and
# stderr as the shell sees them), then checks what they wrote.
#  - a wrong model name, a job its --dist cannot split: one line on stderr, status 2, not a traceback;
#  - running out of memory: one line (status 2) that says to lower --batch (the user workload oomwork
#    raises PyTorch's out-of-memory error at batch >= 4);
#  - record_suite.py: a grid in one process; an out-of-memory batch skips the larger ones; a second run
#    records nothing new; --pack parts unpack into the same folders; an unknown model is one line;
#  - the suite's mlp at batch 2 (collect.run of --model mlp --hidden 16 --batch 2 --warmup 1 --steps 2;
#    the command line's own success path is the --dist and --sibling-load runs below): its three files.
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
suite="$tmpdir/suite"
"$PY" - "$ROOT/tracer" "$tmpdir" <<'PY' || fail "collect.py and record_suite.py command lines (above)"
import contextlib, gzip, io, json, os, subprocess, sys
tracer, tmp = sys.argv[1], sys.argv[2]
sys.path[:0] = [tracer, tmp + "/mod"]
import collect, record_suite
suite = tmp + "/suite"

def cli(main, argv):
    """(exit status, stdout, stderr) of main(argv) as the command line's sys.exit(main()) gives them."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        try:
            rc = main(argv)
        except SystemExit as e:  # argparse
            rc = e.code
    return rc, out.getvalue(), err.getvalue()

def refused(main, argv, want):
    rc, _, err = cli(main, argv)
    assert rc == 2 and err.count("\n") == 1 and want in err, (argv, rc, err)

C = collect.main
refused(C, ["--model", "no-such-model", "--device", "cpu", "-o", tmp + "/bad"], "unknown model 'no-such-model'")
refused(C, ["--model", "mlp", "--dist", "pipeline", "-o", tmp + "/ppbad"], "cuts resmlp into stages")
refused(C, ["--model", "gpt-tiny", "--vocab", "63", "--dist", "tp", "--tp-vocab", "-o", tmp + "/tpbad"],
        "--tp-vocab needs --world to divide --vocab")
refused(C, ["--model", "mlp", "--dist", "tp", "-o", tmp + "/tpbad"], "splits gpt-tiny's attention")
refused(C, ["--model", "gpt-tiny", "--heads", "3", "--hidden", "24", "--dist", "tp", "-o", tmp + "/tpbad"],
        "--world to divide --heads")
rc, _, err = cli(C, ["--model", "oomwork:build", "--batch", "4", "--device", "cpu", "--warmup", "1", "--steps", "1",
                     "-o", tmp + "/oom"])
assert rc == 2 and err.count("\n") == 1 and "out of host memory for oomwork:build at batch 4" in err \
    and "smaller --batch" in err, ("out of memory", rc, err)
print("ok: wrong models and unsplittable jobs are one line, exit 2; out of memory too")

R = record_suite.main
grid = ["--models", "mlp,oomwork:build", "--batches", "2,4,8", "--dtypes", "fp32", "--device", "cpu", "--warmup", "1",
        "--steps", "2", "--root", suite]
rc, out, err = cli(R, grid + ["--pack", tmp + "/pack", "--", "--hidden", "16"])
assert rc == 0, ("record_suite.py", rc, out, err)
for f in ("cpu-mlp-b2-fp32", "cpu-mlp-b4-fp32", "cpu-mlp-b8-fp32", "cpu-oomwork-build-b2-fp32"):
    assert os.path.getsize(suite + "/%s/meta.json" % f) > 0, ("record_suite.py: no meta.json", f, out, err)
assert not os.path.exists(suite + "/cpu-oomwork-build-b8-fp32"), "recorded past an out-of-memory batch"
r = json.load(open(suite + "/suite.json"))["runs"]
assert r["cpu-oomwork-build-b4-fp32"]["result"] == "oom", r
assert "cpu-oomwork-build-b8-fp32" not in r, r
assert sum(v["result"] == "ok" for v in r.values()) == 4, r
rc, out, err = cli(R, grid + ["--", "--hidden", "16"])
assert rc == 0 and "0 recorded in this run" in out, ("second run recorded again", rc, out, err)
os.makedirs(tmp + "/unpacked")
parts = sorted(p for p in os.listdir(tmp + "/pack") if p.startswith("traces.tar.part"))
data = b"".join(open(tmp + "/pack/" + p, "rb").read() for p in parts)
subprocess.run(["tar", "-x", "-C", tmp + "/unpacked"], input=data, check=True)
name = "/cpu-mlp-b4-fp32/kineto.json.gz"
assert open(suite + name, "rb").read() == open(tmp + "/unpacked" + name, "rb").read(), "packed kineto differs"
assert os.path.getsize(tmp + "/pack/suite.json") > 0, "no suite.json in the pack"
refused(R, ["--models", "no-such-model", "--device", "cpu", "--root", suite], "unknown model")
print("ok: record_suite.py grid, out-of-memory skip, resume, pack")

d = suite + "/cpu-mlp-b2-fp32"
for f in ("kineto.json.gz", "et.json.gz", "meta.json"):
    assert os.path.getsize(d + "/" + f) > 0, "missing or empty " + f
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
print("ok: %d cpu ops, %d ET nodes (schema %s), step %.3f ms" % (len(ops), len(nodes), et.get("schema"), st["median"]))
PY
rec="$suite/cpu-mlp-b2-fp32"

"$MITOSIS" inspect "$rec" >"$tmpdir/inspect.out" 2>&1 \
  || { cat "$tmpdir/inspect.out" >&2; fail "mitosis inspect $rec"; }
echo "ok: mitosis inspect read the recorded trace"
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
echo "ok: --dist pipeline records rank 0 with its sends and distributedInfo"

# --dist tp: gpt-tiny (2 layers, hidden 32, 4 heads, seq 8, batch 2) split Megatron-style over 2 ranks.
# Per layer 2 all-reduces in forward (attention output, fc2) and 2 in backward (the gradients of the
# two column-parallel regions' inputs), each of a [2, 8, 32] fp32 tensor (2048 bytes); the split model
# computes the unsplit one's loss; nothing else is communicated (embeddings and LM head replicated).
"$PY" "$ROOT/tracer/collect.py" --model gpt-tiny --layers 2 --hidden 32 --heads 4 --vocab 64 --seq-len 8 \
  --batch 2 --optimizer adam --dist tp --world 2 --warmup 2 --steps 2 -o "$tmpdir/tp" >/dev/null 2>"$tmpdir/tp.err" \
  || { cat "$tmpdir/tp.err" >&2; fail "collect.py --dist tp"; }
"$PY" - "$tmpdir/tp" <<'PY' || fail "--dist tp trace"
import gzip, json, sys
d = sys.argv[1]
k = json.load(gzip.open(d + "/kineto.json.gz", "rt"))
di = k.get("distributedInfo", {})
assert di.get("world_size") == 2 and di.get("rank") == 0 and di.get("backend") == "gloo", di
ev = [e for e in k["traceEvents"] if e.get("ph") == "X"]
step = [e for e in ev if e["name"].startswith("ProfilerStep#")][0]
ar = [e for e in ev if e["name"] == "gloo:all_reduce"]
assert len(ar) == 8 and all(e["args"]["Input Dims"] == [[2, 8, 32]] for e in ar), [e["args"] for e in ar]
fwd = [e for e in ev if e["name"] == "_ReduceFromModelParallelRegion"]
bwd = [e for e in ev if e["name"] == "_CopyToModelParallelRegionBackward"]
assert len(fwd) == 4 and len(bwd) == 4, (len(fwd), len(bwd))
assert all(step["ts"] <= e["ts"] <= step["ts"] + step["dur"] for e in fwd + bwd), "outside the step"
m = json.load(open(d + "/meta.json"))
assert m["dist"]["mode"] == "tp" and m["dist"]["world"] == 2 and len(m["dist"]["rank_step_ms"]) == 2, m["dist"]
t = m["tp"]
assert t["size"] == 2 and t["heads_per_rank"] == 2 and t["ffn_per_rank"] == 64, t
assert t["allreduce_per_layer"] == {"forward": 2, "backward": 2}, t
assert t["allreduce_per_step"] == {"forward": 4, "backward": 4}, t
assert t["allreduce_bytes_each"] == 2048 and t["allreduce_bytes_per_step"] == 8 * 2048, t
l = t["first_loss"]
assert abs(l["tp"] - l["one_process"]) <= 1e-5 * abs(l["one_process"]), l
assert m["step_time_ms"]["median"] > 0, m["step_time_ms"]
PY
if "$MITOSIS" inspect --help >/dev/null 2>&1; then
  "$MITOSIS" inspect "$tmpdir/tp" --json >"$tmpdir/tp.json" || fail "mitosis inspect of the --dist tp trace"
  "$PY" - "$tmpdir/tp.json" <<'PY' || fail "traced plan of the --dist tp trace"
import json, sys
i = json.load(open(sys.argv[1]))
p = i["traced_plan"]
assert p["world_size"] == 2 and p["rank"] == 0 and p["multi_rank"], p
assert list(p["by_kind"]) == ["allreduce"] and p["by_kind"]["allreduce"]["count"] == 8, p["by_kind"]
assert p["by_kind"]["allreduce"]["bytes"] == 8 * 2048, p["by_kind"]
# the 4 forward all-reduces first, then the 4 of backward (gloo's worker-thread events of those read
# "backward" or "other" from one recording to the next: mitosis's phase of a bare backend event)
ph = [c["phase"] for c in i["collectives"]]
assert ph[:4] == ["forward"] * 4 and "forward" not in ph[4:], ph
PY
fi
# --tp-vocab: the token embedding, tied LM head and cross-entropy split by vocabulary too (64 rows, 32
# per rank): one all-reduce after the embedding and three of [16] per-token values in the
# cross-entropy (forward), one of the LM head's input gradient (backward); the same first loss.
"$PY" "$ROOT/tracer/collect.py" --model gpt-tiny --layers 2 --hidden 32 --heads 4 --vocab 64 --seq-len 8 \
  --batch 2 --optimizer adam --dist tp --tp-vocab --world 2 --warmup 2 --steps 2 -o "$tmpdir/tpv" >/dev/null \
  2>"$tmpdir/tpv.err" || { cat "$tmpdir/tpv.err" >&2; fail "collect.py --dist tp --tp-vocab"; }
"$PY" - "$tmpdir/tpv" <<'PY' || fail "--dist tp --tp-vocab trace"
import gzip, json, sys
d = sys.argv[1]
m = json.load(open(d + "/meta.json"))
t = m["tp"]
assert t["vocab_parallel"] and t["allreduce_per_layer"] == {"forward": 2, "backward": 2}, t
s = t["allreduce_by_site"]
assert s["embedding"] == {"forward": 1, "backward": 0, "bytes": 2048}, s
assert s["cross_entropy"] == {"forward": 3, "backward": 0, "bytes": 3 * 16 * 4}, s
assert s["lm_head"] == {"forward": 0, "backward": 1, "bytes": 2048}, s
assert t["allreduce_per_step"] == {"forward": 8, "backward": 5}, t
l = t["first_loss"]
assert abs(l["tp"] - l["one_process"]) <= 1e-5 * abs(l["one_process"]), l
k = json.load(gzip.open(d + "/kineto.json.gz", "rt"))
assert sum(e.get("name") == "gloo:all_reduce" for e in k["traceEvents"]) == 13, "all-reduces in the trace"
PY
echo "ok: --dist tp records 2 forward and 2 backward all-reduces per layer"

# --dist zero1: DDP of resmlp (2 blocks of width 32, batch 4) with ZeroRedundancyOptimizer (Adam):
# the gradients all-reduced (every parameter), each rank's shard broadcast from it (2 broadcasts, the
# parameter bytes together), rank 0 holding Adam's two moments of its own shard only.
"$PY" "$ROOT/tracer/collect.py" --model resmlp --hidden 32 --layers 2 --batch 4 --optimizer adam \
  --dist zero1 --world 2 --warmup 2 --steps 2 -o "$tmpdir/z1" >/dev/null 2>"$tmpdir/z1.err" \
  || { cat "$tmpdir/z1.err" >&2; fail "collect.py --dist zero1"; }
"$PY" - "$tmpdir/z1" <<'PY' || fail "--dist zero1 trace"
import gzip, json, sys
d = sys.argv[1]
k = json.load(gzip.open(d + "/kineto.json.gz", "rt"))
di = k.get("distributedInfo", {})
assert di.get("world_size") == 2 and di.get("rank") == 0, di
m = json.load(open(d + "/meta.json"))
assert m["dist"]["mode"] == "zero1" and m["dist"]["world"] == 2, m["dist"]
z = m["zero"]
P = m["parameters"] * 4
assert z["stage"] == 1 and z["optimizer"] == "Adam" and z["broadcasts_per_step"] == 2, z
assert sum(z["shard_bytes"]) == P and z["broadcast_bytes_per_step"] == z["shard_bytes"], (z, P)
assert 0 < z["shard_bytes"][0] < P and z["allreduce_bytes_per_step"] == P, (z, P)
assert z["rank0_optimizer_state_bytes"] == 2 * z["shard_bytes"][0], z
bc = [e for e in k["traceEvents"] if e.get("name") == "gloo:broadcast"]
assert sorted(e["args"]["Input Dims"][0][0] * 4 for e in bc) == sorted(z["shard_bytes"]), bc
PY
if "$MITOSIS" inspect --help >/dev/null 2>&1; then
  "$MITOSIS" inspect "$tmpdir/z1" --json >"$tmpdir/z1.json" || fail "mitosis inspect of the --dist zero1 trace"
  "$PY" - "$tmpdir/z1.json" "$tmpdir/z1/meta.json" <<'PY' || fail "traced plan of the --dist zero1 trace"
import json, sys
p = json.load(open(sys.argv[1]))["traced_plan"]
z = json.load(open(sys.argv[2]))["zero"]
k = p["by_kind"]
assert p["world_size"] == 2 and p["rank"] == 0 and p["multi_rank"], p
assert sorted(k) == ["allreduce", "broadcast"], k
assert k["allreduce"]["bytes"] == z["allreduce_bytes_per_step"], (k, z)
assert k["broadcast"]["count"] == 2 and k["broadcast"]["bytes"] == sum(z["shard_bytes"]), (k, z)
PY
fi
echo "ok: --dist zero1 records the gradient all-reduces and one broadcast per rank's shard"

# --sibling-load: the recording beside the same model stepping on the other core.
"$PY" "$ROOT/tracer/collect.py" --model mlp --hidden 32 --batch 2 --warmup 1 --steps 2 --sibling-load \
  -o "$tmpdir/sib" >/dev/null 2>&1 || fail "collect.py --sibling-load"
"$PY" -c 'import json,sys; m=json.load(open(sys.argv[1])); assert m["sibling_load"]["core"] == 1, m' \
  "$tmpdir/sib/meta.json" || fail "--sibling-load meta.json"
echo "ok: --sibling-load"
echo "PASS"
