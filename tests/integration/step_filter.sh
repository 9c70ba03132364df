#!/usr/bin/env bash
# Integration (issue 23): the Kineto reader keeps only the neighbourhood of the step it builds
# (tracer/kfilter.h), and every result is still that of the whole file. A 5-step pair made by
# bench/gen_trace.py from traces/cpu-resmlp-b64 (ProfilerStep#3..#7, the ET linked to the middle
# copy, #5) gives, with the streaming reader (filtering) and the reference DOM reader (keeping
# every event), byte-identical `inspect --json` and `simulate --json` (less wall_s and peak_rss_bytes): by default
# (the ET's step, #5: neither first nor last), with --step 3 (first), 6 (next to the ET's), 7
# (last), gzipped, and the same error for a step the trace lacks; with the step numbers lying
# about time order (#4 and #7 swapped: the filter's verdict fails, the file is read again); and
# the Kineto file alone (by default its last step: the filter follows the latest window).
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
src=$root/traces/cpu-resmlp-b64
fail=0
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; return 1; else echo "ok: $1"; fi; }
gen() { python3 "$root/bench/gen_trace.py" "$src" "$tmp/$1" --copies 5 --linked 2 "${@:2}" > /dev/null ||
  { echo "FAIL: gen_trace.py $*"; exit 1; }; }
gen x5
gen x5gz --gzip

# Both readers, inspect and simulate; the step built must be $3 (empty: an error expected).
# Both readers on each case in one process over libmitosis (libsim.bash; issue 47: each trace read
# once per reader and step, not once per command). $1: lines "NAME<TAB>DIR<TAB>WANT<TAB>STEP" (WANT:
# the step built, empty when STEP is absent and must be refused; STEP -1: the default).
. "$(dirname "$0")/libsim.bash"
compare_readers() {
  libpy "$bin" - "$1" <<'PY'
import sys
import libsim
from libsim import attempt as run
from libsim import Checks

check = Checks()
def strip(rc_out):
    rc, out = rc_out
    return rc, "\n".join(l for l in out.split("\n") if '"wall_s"' not in l and '"peak_rss_bytes"' not in l)
for line in open(sys.argv[1]).read().splitlines():
    name, d, want, step = line.split("\t")
    step = int(step)
    i = {r: run(libsim.inspect_text, d, r, step) for r in ("stream", "dom")}
    s = {r: strip(run(libsim.simulate, d, "--gpus", 2, "--tp", 2, reader=r, step=step)) for r in ("stream", "dom")}
    check(f"{name}: inspect --json identical", i["stream"] == i["dom"], [x[1][:300] for x in i.values()])
    check(f"{name}: simulate --json identical", s["stream"] == s["dom"] and s["stream"][1], [x[1][:300] for x in s.values()])
    if want:
        check(f"{name}: step {want} built", i["stream"][0] == 0 and f'\n  "step": {want},\n' in i["stream"][1],
              i["stream"][1][:300])
        check(f"{name}: simulate exits 0 with both readers", s["stream"][0] == 0 and s["dom"][0] == 0)
    else:
        msg = "no step 9 in the trace (steps 3 to 7)"
        check(f"{name}: refused (exit 2)", i["stream"][0] == 2 and msg in i["stream"][1], i["stream"])
        check(f"{name}: simulate refused too (exit 2)", s["stream"][0] == 2 and msg in s["stream"][1], s["stream"])
    libsim.forget(d)
sys.exit(1 if check.fails else 0)
PY
}
list=$tmp/list
: > "$list"
same() { # NAME DIR WANT [--step N]
  printf '%s\t%s\t%s\t%s\n' "$1" "$2" "$3" "${5:--1}" >> "$list"
}
same "default (the ET's step)" "$tmp/x5" 5
same "--step 3" "$tmp/x5" 3 --step 3
same "--step 6" "$tmp/x5" 6 --step 6
same "--step 7" "$tmp/x5" 7 --step 7
same "gzipped, default" "$tmp/x5gz" 5
same "--step 9 (absent)" "$tmp/x5" "" --step 9

# Numbers out of time order: the copy at #4 is renamed #7 and the one at #7 #4.
sed -e 's/"ProfilerStep#4"/"ProfilerStep#X"/; s/"ProfilerStep#7"/"ProfilerStep#4"/; s/"ProfilerStep#X"/"ProfilerStep#7"/' \
  "$tmp/x5/kineto.json" > "$tmp/k.json" && mkdir "$tmp/lie" && mv "$tmp/k.json" "$tmp/lie/kineto.json" &&
  cp "$tmp/x5/et.json" "$tmp/lie/et.json"
same "numbers out of order, --step 7" "$tmp/lie" 7 --step 7
same "numbers out of order, default" "$tmp/lie" 5

# The Kineto trace alone: by default its last step (the filter follows the latest window).
mkdir "$tmp/k5" "$tmp/klie" && cp "$tmp/x5/kineto.json" "$tmp/k5/" && cp "$tmp/lie/kineto.json" "$tmp/klie/"
same "Kineto alone, default (the last)" "$tmp/k5" 7
same "Kineto alone, --step 4" "$tmp/k5" 4 --step 4
same "Kineto alone, numbers out of order, default" "$tmp/klie" 4
compare_readers "$list" || fail=1
exit $fail
