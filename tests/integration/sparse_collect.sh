#!/usr/bin/env bash
# Integration: collect.py's sparse models (tracer/sparse_models.py, sparse_dist.py), tiny sizes.
#  - moe-tiny in one process: the routing meta.json records is what the trace shows (each
#    expert's first linear runs on exactly its tokens), no expert over its capacity;
#  - moe-tiny as a 2-process gloo job (experts split): per MoE layer 3 all-to-alls in forward
#    (tokens per expert, dispatch, combine) and 2 in backward, the all-reduces carry every
#    parameter but the experts';
#  - --dist moe on the families (tracer/families.py): split as the job splits them, bmm-moe-tiny's
#    stacked experts, hash-moe-tiny's hashed tokens and mixtral-tiny's top-2 give the unsplit
#    model's loss and dense gradients on each rank's inputs (moe_split.py);
#  - dlrm-tiny: tables of different sizes; as a 2-process job the all-reduces carry the dense
#    part only;
#  - collect --dist refuses a recording with a file truncated, a collective lost, a rank's report
#    missing or the ranks' steps disagreeing (planted in copies of the dlrm-tiny one);
#  - bad input: one line, exit 2.
# Usage: bash sparse_collect.sh /path/to/mitosis   (skips, 77, without PyTorch)
set -u
bin=${1:?usage: sparse_collect.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
PY=/usr/bin/python3
# (find_spec: whether torch is installed, without paying its import; a torch without gloo: the first --dist
# collect below says so, and the script skips)
"$PY" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null ||
  { echo "skip: no torch"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-sparse.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
C="$root/tracer/collect.py"
MOE="--model moe-tiny --layers 2 --hidden 32 --heads 2 --vocab 100 --seq-len 16 --experts 4 --threads 1 --warmup 1 --steps 2"
D="--model dlrm-tiny --tables 4 --vocab 1000 --emb-dim 8 --bag 4 --threads 1 --warmup 1 --steps 2"

# The one-process recordings and the refused command lines in one Python (torch imported once), each through
# collect.py's main() (what `python3 collect.py ARGS` runs): moe-tiny and dlrm-tiny recorded (checked below);
# bad input is one line on stderr, exit 2.
"$PY" - "$root/tracer" "$tmp" "$MOE" "$D" <<'PY' > "$tmp/one.out" 2>&1
import contextlib, io, sys
sys.path.insert(0, sys.argv[1])
import collect
tmp, moe, dlrm = sys.argv[2], sys.argv[3].split(), sys.argv[4].split()
for argv in (moe + ["--batch", "2", "--capacity-factor", "1.0", "-o", tmp + "/moe"], dlrm + ["--batch", "8", "-o", tmp + "/dlrm"]):
    with contextlib.redirect_stdout(io.StringIO()):
        if collect.main(argv) != 0:
            print("FAIL: collect.py %s" % " ".join(argv))
for args in ("--experts 1 --top-k 2", "--capacity-factor 0", "--experts 3 --dist moe --world 2", "--top-k 3"):
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(io.StringIO()):
        try:
            rc = collect.main(moe + ["--batch", "2"] + args.split() + ["-o", tmp + "/bad"])
        except SystemExit as e:  # argparse
            rc = e.code
    print("%s: bad input moe-tiny %s: exit 2, one line" % ("ok" if rc == 2 and err.getvalue().count("\n") == 1
                                                             else "FAIL", args))
PY
cat "$tmp/one.out"
fails=$((fails + $(grep -c '^FAIL' "$tmp/one.out")))
t1() {
"$PY" - "$tmp/moe" <<'PY'
import gzip, json, sys
d = sys.argv[1]
m = json.load(open(d + "/meta.json"))
et = json.load(gzip.open(d + "/et.json.gz", "rt"))
h, cap, E = m["hidden"], m["expert_capacity"], m["experts"]
assert cap == -(-2 * 16 * 2 // 4), cap                     # ceil(1.0 x 32 tokens x k 2 / 4)
tokens = m["expert_tokens"]
assert len(tokens) == 2 and all(len(t) == E for t in tokens), tokens
assert all(0 <= n <= cap for t in tokens for n in t) and all(sum(t) <= 32 * 2 for t in tokens), tokens
# an expert's fc1 is the forward linear with a [2h, h] weight; the router's has [E, h]
rows = [n["input_shapes"][0][0] for n in et["nodes"] if n["name"] == "aten::linear"
        and len(n["input_shapes"]) > 1 and n["input_shapes"][1] == [2 * h, h]]
want = [n for t in tokens for n in t if n > 0]
assert rows == want, (rows, want)
PY
}
check "moe-tiny: the trace shows the recorded routing, within capacity" t1

"$PY" "$C" $MOE --batch 2 --dist moe --world 2 -o "$tmp/moe2" > /dev/null 2> "$tmp/err" || {
  grep -q "needs torch.distributed with gloo" "$tmp/err" && { echo "skip: no torch with gloo"; exit 77; }
  cat "$tmp/err"; }
"$bin" inspect "$tmp/moe2" --json > "$tmp/i.json" 2> /dev/null
t2() {
"$PY" - "$tmp/moe2" "$tmp/i.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/meta.json"))
i = json.load(open(sys.argv[2]))
p = i["traced_plan"]; k = p["by_kind"]
assert p["world_size"] == 2 and m["dist"]["mode"] == "moe", p
assert k["alltoall"]["count"] == 5 * m["layers"], k
h, E = m["hidden"], m["experts"]
expert = (h * 2 * h + 2 * h + 2 * h * h + h)                 # fc1 + fc2 with biases
dense = m["parameters"] - expert * E // 2 * m["layers"]       # this rank holds E/2 experts per layer
assert abs(k["allreduce"]["bytes"] - 4 * dense) < 1, (k["allreduce"], dense)
assert p["parameter_sync"] == "partial", p
PY
}
f0=$fails
check "moe-tiny --dist moe: 5 all-to-alls per MoE layer, experts not all-reduced" t2
# the three families in one 2-process job (moe_split.py: torch and gloo started once; issue 47)
timeout 600 "$PY" "$root/tests/integration/moe_split.py" "$root/tracer" bmm-moe-tiny,hash-moe-tiny,mixtral-tiny \
  "$tmp/split" > "$tmp/split.out" 2>&1
for m in bmm-moe-tiny hash-moe-tiny mixtral-tiny; do
  check "$m --dist moe: the split model's loss and dense gradients = the unsplit model's, both ranks" \
    "grep -q '^$m OK [^ ]* [^ ]* OK ' '$tmp/split.out' || { cat '$tmp/split.out'; false; }"
done
# a rare failure under load (parameter bytes far below the all-reduced ones, once in CI, not
# reproduced in 22 loaded runs): keep the recording for whoever looks next
[ "$fails" -gt "$f0" ] && keep=$(mktemp -d "${TMPDIR:-/tmp}/mt-sparse-failed.XXXXXX") && cp -r "$tmp/moe2" "$keep/" && echo "kept the recording in $keep/moe2"

"$PY" "$C" $D --batch 8 --dist embedding --world 2 -o "$tmp/dlrm2" > /dev/null 2> "$tmp/err" || cat "$tmp/err"
"$bin" inspect "$tmp/dlrm2" --json > "$tmp/i.json" 2> "$tmp/i.err" || {
  # once in CI (session 19, ASan, loaded) this printed nothing: say why and keep the recording
  keep=$(mktemp -d "${TMPDIR:-/tmp}/mt-sparse-failed.XXXXXX") && cp -r "$tmp/dlrm2" "$keep/"
  echo "mitosis inspect of the dlrm-tiny 2-process recording failed (kept in $keep/dlrm2): $(head -c 2000 "$tmp/i.err")"
}
t3() {
"$PY" - "$tmp/dlrm" "$tmp/dlrm2" "$tmp/i.json" <<'PY'
import json, sys
m = json.load(open(sys.argv[1] + "/meta.json")); m2 = json.load(open(sys.argv[2] + "/meta.json"))
assert m["table_rows"] == [1000, 500, 250, 125], m["table_rows"]
assert m["parameters"] == m["dense_parameters"] + 8 * sum(m["table_rows"]), m
k = json.load(open(sys.argv[3]))["traced_plan"]["by_kind"]
assert k["alltoall"]["count"] == 3 and abs(k["allreduce"]["bytes"] - 4 * m2["dense_parameters"]) < 1, k
assert m2["parameters"] == m2["dense_parameters"] + 8 * (1000 + 250), m2
PY
}
check "dlrm-tiny: tables of different sizes; sharded, the all-reduces carry the dense part only" t3
# collect refuses an incomplete or inconsistent recording (collect_dist.verify_recording and verify_ranks, run
# before it exits 0): the good one passes; planted faults in copies of it each get their one line
t4() {
"$PY" - "$root/tracer" "$tmp/dlrm2" "$tmp/plant" <<'PY'
import gzip, json, os, shutil, sys
sys.path.insert(0, sys.argv[1])
import collect as C, collect_dist as D
good, bad = sys.argv[2], sys.argv[3]
D.verify_recording(good, 2, 2)
def refused(what, fn, want):
    try:
        fn()
    except C.CollectError as e:
        assert want in str(e) and "\n" not in str(e), (what, str(e))
        return
    raise AssertionError("accepted: " + what)
def plant(name, edit):
    shutil.rmtree(bad, ignore_errors=True); shutil.copytree(good, bad)
    edit(os.path.join(bad, name))
def cut(path):
    data = open(path, "rb").read(); open(path, "wb").write(data[:len(data) // 2])
def drop_allreduce(path):
    k = json.load(gzip.open(path, "rt"))
    k["traceEvents"] = [e for e in k["traceEvents"] if e.get("name") != "gloo:all_reduce"]
    json.dump(k, gzip.open(path, "wt"))
for name in ("et.json.gz", "kineto.json.gz", "meta.json"):
    plant(name, cut)
    refused("truncated " + name, lambda: D.verify_recording(bad, 2, 2), name + " is missing or does not parse")
plant("kineto.json.gz", drop_allreduce)
refused("a collective lost", lambda: D.verify_recording(bad, 2, 2), "disagree on the step's collectives")
refused("3 steps", lambda: D.verify_recording(good, 2, 3), "is not of this job")
res = os.path.join(bad, "result.json")
for r, steps in ((0, 4), (1, 4)):
    json.dump({"rank": r, "steps": steps, "timed": 2}, open("%s.rank%d" % (res, r), "w"))
D.verify_ranks(2, res, 2)
json.dump({"rank": 1, "steps": 3, "timed": 2}, open(res + ".rank1", "w"))
refused("ranks' steps differ", lambda: D.verify_ranks(2, res, 2), "ranks disagree on its steps")
os.remove(res + ".rank1")
refused("a rank's report missing", lambda: D.verify_ranks(2, res, 2), "rank 1 of the job exited without its report")
PY
}
check "collect --dist refuses a truncated file, a lost collective, a missing or disagreeing rank (planted)" t4

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS"
