#!/usr/bin/env bash
# estimate.sh — the cost estimate printed before long runs (run/estimate.h, README "Scale"):
#  - on 12 varied plans (DDP ring steps and ringflow, tree on a torus, hier on a multinode fabric,
#    direct, ZeRO-3 on a fat-tree, FSDP, TP+SP unfolded, TP x PP 1F1B, interleaved PP, EP,
#    CP, sharded embeddings, 3 steps) `simulate --dry-run`'s event estimate is within a factor
#    of 2 of the events the run counts ("simulated N events"); prints the spread;
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

# "about 25.5 M events" -> 25500000
est_events() {
  sed -n 's/^estimate   about \([0-9.]*\) \([kMG]\{0,1\}\) *events.*/\1 \2/p' "$1" |
    awk '{ m = $2 == "k" ? 1e3 : $2 == "M" ? 1e6 : $2 == "G" ? 1e9 : 1; printf "%.0f\n", $1 * m }'
}

ratios=""
check() { # trace args...
  local t=$1; shift
  "$bin" simulate "$tr/$t" "$@" --dry-run >"$tmp/dry" 2>"$tmp/dry.err" || fail "--dry-run failed: $t $* $(cat "$tmp/dry.err")"
  [ -s "$tmp/dry.err" ] && fail "--dry-run wrote on stderr: $(cat "$tmp/dry.err")"
  [ "$(wc -l <"$tmp/dry")" = 1 ] || fail "--dry-run printed more than one line: $(cat "$tmp/dry")"
  local e a
  e=$(est_events "$tmp/dry")
  [ -n "$e" ] || fail "no estimate in: $(cat "$tmp/dry")"
  "$bin" simulate "$tr/$t" "$@" >"$tmp/run" 2>/dev/null || fail "run failed: $t $*"
  a=$(sed -n 's/^simulated  \([0-9]*\) events.*/\1/p' "$tmp/run")
  [ -n "$a" ] || fail "no event count: $t $*"
  local r
  r=$(awk -v e="$e" -v a="$a" 'BEGIN { printf "%.2f", e / a }')
  awk -v r="$r" 'BEGIN { exit !(r >= 0.5 && r <= 2) }' || fail "estimate $e vs $a events (x$r): $t $*"
  ratios="$ratios $r"
  echo "  x$r  $e est. / $a counted  $t $*"
}

check cpu-resnet18-b8 --gpus 64 --strategy ddp --ring-model steps --topology ring:64
check cpu-resnet18-b8 --gpus 128 --strategy ddp --algo tree --topology torus:8x16
check cpu-resnet18-b8 --gpus 256 --strategy ddp --algo hier --topology multinode:nodes=32,gpus=8
check cpu-resnet18-b8 --gpus 32 --strategy ddp --algo direct
check cpu-resnet18-b8 --gpus 4096 --strategy ddp --topology multinode:nodes=512,gpus=8
check cpu-resnet18-b8 --gpus 256 --zero 3 --topology fattree:k=16
check cpu-gpt-tiny-b8 --gpus 16 --fsdp
check cpu-gpt-tiny-b8 --gpus 32 --tp 4 --sp --no-fold
check cpu-gpt-tiny-b8 --gpus 64 --tp 2 --pp 4 --micro-batches 8 --schedule 1f1b
check cpu-gpt-tiny-b8 --gpus 32 --tp 2 --pp 4 --vpp 2 --micro-batches 8
check cpu-moe-tiny-b8 --gpus 32 --ep 4
check cpu-gpt-l8h16-b2 --gpus 64 --tp 2 --cp 2
check cpu-dlrm-tiny-b8 --gpus 16 --embedding-shard table
check cpu-gpt-tiny-b8 --gpus 16 --tp 2 --steps 3
echo "estimate / counted events:$ratios (min $(tr ' ' '\n' <<<"$ratios" | sed '/^$/d' | sort -n | head -1), max $(tr ' ' '\n' <<<"$ratios" | sed '/^$/d' | sort -n | tail -1))"

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
refused=$(sed -n 's/.*; \([0-9]*\) refused$/\1/p' "$tmp/cmp.dry")
total=$(sed -n 's/^\([0-9]*\) plans in .*/\1/p' "$tmp/cmp.out")
[ "$((priced + ${refused:-0}))" = "$total" ] || fail "compare priced $priced + ${refused:-0} refused of $total plans"
echo "estimate.sh: ok"
