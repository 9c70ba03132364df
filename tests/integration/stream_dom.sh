#!/usr/bin/env bash
# Integration (issue 23): the streaming JSON reader gives the same trace as the reference reader
# that parses the whole document with jansson (MITOSIS_JSON_READER=dom, util/jstream.h): byte-
# identical `inspect --json` and `simulate --json` (less its wall_s) on one shipped trace per writer,
# distribution mode and feature (traces/; the others read by the stream reader) and every shared
# Kineto/ET one (../shared/traces/: each a writer of its own; skipped with a message when absent); and
# the same one-line error (exit 2) on a few damaged inputs, naming line, column and JSON path.
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
shared=${MT_SHARED_TRACES:-$root/../shared/traces}
fail=0
skipped=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/libsim.bash"
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; return 1; else echo "ok: $1"; fi; }

# Both readers on each trace, in one process over libmitosis (libsim.bash: each trace read once per
# reader, not once per command; issue 47): inspect, and (sim=1) a simulation with tensor parallelism,
# which reads shapes. TrioSim CSV traces read no JSON: not compared. $1: lines "PATH<TAB>NAME<TAB>SIM".
# sim=-1: the stream reader reads it; 0: inspect --json identical; 1: and simulate --json identical
# (less wall_s, peak_rss_bytes), exit 0; 2: a lone file that may be refused (an ET alone has no times,
# a CPU rank without operator times): exit 0, or exit 2 with one line, the same from both.
compare_readers() {
  libpy "$bin" - "$1" <<'PY'
import sys
import libsim
from libsim import attempt as run
from libsim import Checks

check = Checks()
def sim_text(t, r):
    rc, out = run(libsim.simulate, t, "--gpus", 2, "--tp", 2, reader=r)
    return rc, "\n".join(l for l in out.split("\n") if '"wall_s"' not in l and '"peak_rss_bytes"' not in l)
for line in open(sys.argv[1]).read().splitlines():
    t, name, sim = line.split("\t")
    sim = int(sim)
    if sim == -1:
        rc, out = run(libsim.inspect_text, t, "stream")
        check(f"{name}: the stream reader reads it", rc == 0, out)
        libsim.forget(t)
        continue
    i = {r: run(libsim.inspect_text, t, r) for r in ("stream", "dom")}
    check(f"{name}: inspect --json identical", i["stream"] == i["dom"] and i["stream"][0] == 0,
          [x[1][:300] for x in i.values()])
    if sim:
        s = {r: sim_text(t, r) for r in ("stream", "dom")}
        rc, out = s["stream"]
        ok = rc == 0 or (sim == 2 and rc == 2 and "\n" not in out.strip())
        check(f"{name}: simulate --json identical, exit as expected", s["stream"] == s["dom"] and ok,
              [x[1][:300] for x in s.values()])
    libsim.forget(t)
sys.exit(1 if check.fails else 0)
PY
}

# The two readers are compared on one recording per writer, distribution mode and feature (the
# DOM reader costs 2-4x the stream reader under ASan: the CI's time); every other shipped trace is
# read by the stream reader only (sim=-1), and the H100 variants not named below by gpu_traces.sh.
#  - PyTorch 1.13 CPU, one rank: a transformer, its sibling-load layout, a CNN, an MoE with top-k
#    routing, embedding tables (DLRM, TorchRec);
#  - PyTorch 1.13 CPU, one rank of each distributed mode: DDP, embedding-sharded, MoE, pipeline, TP, ZeRO-1;
#  - PyTorch 2.11 H100: a transformer (SDPA/flash), a grouped-mm MoE, the CUDA-graphed one;
#  - TrioSim's Kineto + ET writer.
list=$tmp/list
: > "$list"
same() { printf '%s\t%s\t%s\n' "$1" "$2" "$3" >> "$list"; }
for d in "$root"/traces/*/; do
  n=$(basename "$d")
  case "$n" in
    h100-resnet50-b128-fp32-cudagraphs|cpu-pipeline-*) sim=2 ;;  # graphs and a pipeline rank may refuse --tp 2
    h100-llama3-8b-2blocks-*|h100-mixtral-8x7b-1block-*) sim=1 ;;
    h100-*) continue ;;  # the other H100 variants: the same writer as the ones above (gpu_traces.sh reads them)
    cpu-gpt-tiny-b8|cpu-resnet18-b8|cpu-mixtral-tiny-b4|cpu-dlrm-tiny-b8|cpu-torchrec-tiny-b16) sim=1 ;;
    cpu-ddp-resmlp-w2|cpu-embedding-dlrm-w2|cpu-moe-tiny-w2|cpu-tp-gpt-tiny-w2|cpu-zero1-resmlp-w2) sim=1 ;;
    cpu-gpt-tiny-b8-sibling) sim=0 ;;
    triosim-vgg13-*) sim=1 ;;
    *) sim=-1 ;;  # the same writer and operators as one compared above: the stream reader reads it
  esac
  same "$d" "traces/$n" "$sim"
done
if [ -d "$shared" ]; then
  for d in "$shared"/*/; do
    case "$(basename "$d")" in
      triosim-*) ;;
      et-schemas|kineto-only) for f in "$d"*.gz; do same "$f" "shared/$(basename "$d")/$(basename "$f")" 2; done ;;
      *) same "$d" "shared/$(basename "$d")" 1 ;;
    esac
  done
else
  echo "SKIP: $shared is absent: shared traces not compared"
  skipped=1
fi
compare_readers "$list" || fail=1

# Damaged inputs: exit 2, one line, the place (line:column and the JSON path) named.
k=$root/tests/fixtures/small/kineto.json
head -c 700 "$k" > "$tmp/cut.json"
check "cut stream: exit 2, line:column and JSON path" '"$bin" inspect "$tmp/cut.json" 2> "$tmp/e"; [ $? -eq 2 ] &&
  [ $(wc -l < "$tmp/e") -eq 1 ] && grep -q "cut.json:7:40: invalid JSON (parse error: premature EOF) at byte 700, in traceEvents\[3\].cat" "$tmp/e"'
sed 's/"dur": 50,/"dur": 99999999999999999999,/' "$k" > "$tmp/huge.json"
check "integer beyond int64: refused where it is" '"$bin" inspect "$tmp/huge.json" 2> "$tmp/e"; [ $? -eq 2 ] &&
  grep -q "too big integer at byte [0-9]*, in traceEvents\[1\].dur" "$tmp/e"'
printf '{"traceEvents": [{"ph": "X", "cat": "cpu_op", "name": "a\377", "ts": 1}]}' > "$tmp/utf8.json"
check "invalid UTF-8: refused" '"$bin" inspect "$tmp/utf8.json" 2> "$tmp/e"; [ $? -eq 2 ] &&
  grep -q "invalid bytes in UTF8 string.*in traceEvents\[0\].name" "$tmp/e"'
python3 -c "print('{\"traceEvents\": [{\"args\": ' + '['*3000 + ']'*3000 + '}]}')" > "$tmp/deep.json"
check "nesting beyond 2048: refused" '"$bin" inspect "$tmp/deep.json" 2> "$tmp/e"; [ $? -eq 2 ] &&
  grep -q "nesting deeper than 2048 levels" "$tmp/e"'
[ $fail -eq 0 ] && [ $skipped -eq 1 ] && exit 77 # every check that ran passed, but not all ran
exit $fail
