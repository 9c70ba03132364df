#!/usr/bin/env bash
# Integration (issue 23): bench/gen_trace.py makes a valid multi-step pair. Three copies of a
# shipped Kineto + ET pair load to the same trace as the source (inspect --json equal but for the
# step number, its count and the file names; the step chosen is the one the ET links to): ids renumbered per copy keep launches and kernels
# paired, and the ET links to the last copy; and the gzipped variant loads the same.
set -u
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
src=$root/traces/cpu-resmlp-b64
python3 "$root/bench/gen_trace.py" "$src" "$tmp/x3" --copies 3 > /dev/null || { echo "FAIL: gen_trace.py"; exit 1; }
python3 "$root/bench/gen_trace.py" "$src" "$tmp/x3gz" --copies 3 --gzip > /dev/null || { echo "FAIL: gen_trace.py --gzip"; exit 1; }
"$bin" inspect "$src" --json > "$tmp/src.json"
"$bin" inspect "$tmp/x3" --json > "$tmp/x3.json"
"$bin" inspect "$tmp/x3gz" --json > "$tmp/x3gz.json"
check "3 copies: the same trace, 3x the steps" 'python3 - "$tmp/src.json" "$tmp/x3.json" <<PY
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:])
assert b["steps_in_trace"] == 3 * a["steps_in_trace"], (a["steps_in_trace"], b["steps_in_trace"])
# steps move 2 x steps later: numbered by position, or ProfilerStep#N renumbered per copy
assert b["step"] in (a["step"], a["step"] + 2 * a["steps_in_trace"]), (a["step"], b["step"])
# no meta.json beside the copy: a CPU trace still (its Kineto deviceProperties is empty), found there
assert a["recorded_on"]["kind"] == b["recorded_on"]["kind"] == "cpu", (a["recorded_on"], b["recorded_on"])
for k in ("step", "steps_in_trace", "files", "measured_step_ms", "recorded_on"):
    a.pop(k, None); b.pop(k, None)
assert a == b, [k for k in a if a[k] != b.get(k)]
PY'
check "gzipped copies load the same" 'python3 -c "
import json, sys; a, b = (json.load(open(p)) for p in sys.argv[1:]); a.pop(\"files\"); b.pop(\"files\"); assert a == b" "$tmp/x3.json" "$tmp/x3gz.json"'
exit $fail
