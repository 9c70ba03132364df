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
same() {
  local name=$1 dir=$2 want=$3; shift 3
  for r in stream dom; do
    ( MITOSIS_JSON_READER=$r "$bin" inspect "$dir" --json "$@" > "$tmp/i.$r" 2>&1; echo "rc $?" >> "$tmp/i.$r"
      MITOSIS_JSON_READER=$r "$bin" simulate "$dir" --gpus 2 --tp 2 --json "$@" > "$tmp/so.$r" 2>&1
      echo "rc $?" >> "$tmp/so.$r"; grep -v '"wall_s"\|"peak_rss_bytes"' "$tmp/so.$r" > "$tmp/s.$r" ) &
  done
  wait
  check "$name: inspect --json identical" 'cmp -s "$tmp/i.stream" "$tmp/i.dom"' || diff "$tmp/i.stream" "$tmp/i.dom" | head -4
  check "$name: simulate --json identical" 'cmp -s "$tmp/s.stream" "$tmp/s.dom" && [ -s "$tmp/s.stream" ]' ||
    diff "$tmp/s.stream" "$tmp/s.dom" | head -4
  if [ -n "$want" ]; then
    check "$name: step $want built" 'grep -q "^  \"step\": $want,\$" "$tmp/i.stream" && grep -q "rc 0" "$tmp/i.stream"'
    check "$name: simulate exits 0 with both readers" 'grep -qx "rc 0" "$tmp/s.stream" && grep -qx "rc 0" "$tmp/s.dom"'
  else
    check "$name: refused (exit 2)" 'grep -q "rc 2" "$tmp/i.stream" && grep -q "no step 9 in the trace (steps 3 to 7)" "$tmp/i.stream"'
    check "$name: simulate refused too (exit 2)" 'grep -qx "rc 2" "$tmp/s.stream" &&
      grep -q "no step 9 in the trace (steps 3 to 7)" "$tmp/s.stream"'
  fi
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
exit $fail
