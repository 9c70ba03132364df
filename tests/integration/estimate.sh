#!/usr/bin/env bash
# estimate.sh — the cost estimate printed before long runs (run/estimate.h, README "Scale"):
#  - on 12 varied plans (DDP ring steps and ringflow, tree on a torus, hier on a multinode fabric,
#    direct, ZeRO-3 on a fat-tree, FSDP, TP+SP unfolded, TP x PP 1F1B, interleaved PP, EP,
#    CP, sharded embeddings, 3 steps) `simulate --dry-run`'s event estimate is within a factor
#    of 2 of the events the run counts ("simulated N events"; the run through libmitosis, its JSON's
#    simulation.events); prints the spread;
#  - --dry-run prints one line on stdout, nothing on stderr, exits 0 and writes no output file;
#  - a run estimated over 5 s prints "estimate   about ...; --dry-run to stop here" on stderr
#    before it starts (the run is stopped once the line is there);
#  - a plan needing more memory than the machine has fails at once, exit 2, one line naming
#    --gpus and the memory;
#  - compare --dry-run prices every plan: its refused count is the real run's skipped rows, and
#    nothing runs.
set -u
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tr=$root/traces
tmp=$(mktemp -d)
pid=""
trap '[ -n "$pid" ] && kill "$pid" 2>/dev/null; rm -rf "$tmp"' EXIT
fail() { echo "estimate.sh: $*" >&2; exit 1; }

# Each plan: --dry-run by the binary (its one line), the run through libmitosis (libsim.py: each trace opened
# once; its JSON's simulation.events is the count the text's "simulated N events" prints).
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$tr" "$(dirname "$0")" <<'PY' || exit 1
import re, sys
sys.path.insert(0, sys.argv[3])
from libsim import Sim
sim, tr = Sim(sys.argv[1]), sys.argv[2]
PLANS = """cpu-resnet18-b8 --gpus 64 --strategy ddp --ring-model steps --topology ring:64
cpu-resnet18-b8 --gpus 128 --strategy ddp --algo tree --topology torus:8x16
cpu-resnet18-b8 --gpus 256 --strategy ddp --algo hier --topology multinode:nodes=32,gpus=8
cpu-resnet18-b8 --gpus 32 --strategy ddp --algo direct
cpu-resnet18-b8 --gpus 4096 --strategy ddp --topology multinode:nodes=512,gpus=8
cpu-resnet18-b8 --gpus 2048 --strategy ddp --topology switch:2048
cpu-resnet18-b8 --gpus 2048 --strategy ddp --algo treeflow --topology multinode:nodes=256,gpus=8
cpu-resnet18-b8 --gpus 256 --zero 3 --topology fattree:k=16
cpu-gpt-tiny-b8 --gpus 16 --fsdp
cpu-gpt-tiny-b8 --gpus 32 --tp 4 --sp --no-fold
cpu-gpt-tiny-b8 --gpus 64 --tp 2 --pp 4 --micro-batches 8 --schedule 1f1b
cpu-gpt-tiny-b8 --gpus 32 --tp 2 --pp 4 --vpp 2 --micro-batches 8
cpu-moe-tiny-b8 --gpus 32 --ep 4
cpu-gpt-l8h16-b2 --gpus 64 --tp 2 --cp 2
cpu-dlrm-tiny-b8 --gpus 16 --embedding-shard table
cpu-gpt-tiny-b8 --gpus 16 --tp 2 --steps 3"""


def fail(msg):
    print("estimate.sh: " + msg, file=sys.stderr)
    sys.exit(1)


ratios = []
for line in PLANS.splitlines():
    t, *args = line.split()
    rc, dry, err = sim.run("simulate", f"{tr}/{t}", *args, "--dry-run")
    if rc != 0:
        fail(f"--dry-run failed: {line} {err}")
    if err:
        fail(f"--dry-run wrote on stderr: {err}")
    if len(dry.splitlines()) != 1:
        fail(f"--dry-run printed more than one line: {dry}")
    m = re.match(r"estimate   about ([0-9.]*) ([kMG]?) *events", dry)  # "about 25.5 M events" -> 25500000
    if not m:
        fail(f"no estimate in: {dry}")
    e = round(float(m.group(1)) * {"k": 1e3, "M": 1e6, "G": 1e9}.get(m.group(2), 1))
    rc, out, err = sim.simulate(f"{tr}/{t}", *args)
    if rc != 0:
        fail(f"run failed: {line}")
    a = __import__("json").loads(out)["simulation"]["events"]
    r = float("%.2f" % (e / a))
    if not 0.5 <= r <= 2:
        fail(f"estimate {e} vs {a} events (x{r:.2f}): {line}")
    ratios.append(r)
    print(f"  x{r:.2f}  {e} est. / {a} counted  {line}")
print(f"estimate / counted events: {' '.join('%.2f' % r for r in ratios)} (min {min(ratios):.2f}, max {max(ratios):.2f})")
print(sim.summary())
PY

# --dry-run writes no file
"$bin" simulate "$tr/cpu-gpt-tiny-b8" --gpus 8 --html "$tmp/r.html" --csv "$tmp/csv" --dry-run >/dev/null 2>&1 ||
  fail "--dry-run with output files failed"
[ -e "$tmp/r.html" ] || [ -e "$tmp/csv" ] && fail "--dry-run wrote an output file"

# a long run says so first (stopped as soon as the line is there)
"$bin" simulate "$tr/cpu-resnet18-b8" --gpus 4096 --strategy ddp --algo hier --topology multinode:nodes=512,gpus=8 \
  >/dev/null 2>"$tmp/long.err" &
pid=$!
for _ in $(seq 1 120); do
  grep -q '^estimate' "$tmp/long.err" && break
  kill -0 "$pid" 2>/dev/null || break
  sleep 0.5
done
kill "$pid" 2>/dev/null
wait "$pid" 2>/dev/null
pid=""
grep -Eq '^estimate   about [0-9.]+ M events, ~[0-9.]+ (s|min) on this machine, .*at 4096 GPUs.*; --dry-run to stop here$' \
  "$tmp/long.err" || fail "no estimate line before a long run: $(head -3 "$tmp/long.err")"

# more memory than the machine has: exit 2 at once, one line naming --gpus and the memory
"$bin" simulate "$tr/cpu-gpt-tiny-b8" --gpus 1000000 --pp 64 --micro-batches 4096 >"$tmp/mem.out" 2>"$tmp/mem.err"
code=$?
[ "$code" = 2 ] || fail "an absurd plan exited $code, not 2"
[ "$(wc -l <"$tmp/mem.err")" = 1 ] || fail "not one error line: $(cat "$tmp/mem.err")"
grep -Eq -- '--gpus 1000000 would need about [0-9.]+ [TGP]B of memory, more than this machine' "$tmp/mem.err" ||
  fail "the memory error does not say what it needs: $(cat "$tmp/mem.err")"

# compare --dry-run: every plan priced, none run; refused = the real run's skipped rows
"$bin" compare "$tr/cpu-gpt-tiny-b8" --gpus 8 --dry-run >"$tmp/cmp.dry" 2>"$tmp/cmp.err" || fail "compare --dry-run failed"
[ -s "$tmp/cmp.err" ] && fail "compare --dry-run wrote on stderr: $(cat "$tmp/cmp.err")"
grep -Eq '^estimate   [0-9]+ plans: about ' "$tmp/cmp.dry" || fail "compare --dry-run: $(cat "$tmp/cmp.dry")"
"$bin" compare "$tr/cpu-gpt-tiny-b8" --gpus 8 --jobs 1 >"$tmp/cmp.out" 2>/dev/null || fail "compare failed"
priced=$(sed -n 's/^estimate   \([0-9]*\) plans.*/\1/p' "$tmp/cmp.dry")
refused=$(sed -n 's/.*; \([0-9]*\) refused\(;.*\)\{0,1\}$/\1/p' "$tmp/cmp.dry")
total=$(sed -n 's/^\([0-9]*\) plans in .*/\1/p' "$tmp/cmp.out")
[ "$((priced + ${refused:-0}))" = "$total" ] || fail "compare priced $priced + ${refused:-0} refused of $total plans"
# a search that prunes (--plans auto, more plans than 10) says its estimate is every plan's; --exhaustive not
grep -q '; that is every plan simulated: the search prunes plans that cannot reach its first 10 rows' "$tmp/cmp.dry" ||
  fail "compare --dry-run of a search that prunes does not say so: $(cat "$tmp/cmp.dry")"
"$bin" compare "$tr/cpu-gpt-tiny-b8" --gpus 8 --dry-run --exhaustive | grep -q 'search prunes' &&
  fail "compare --dry-run --exhaustive says it prunes"
echo "estimate.sh: ok"
