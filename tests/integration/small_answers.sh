#!/usr/bin/env bash
# Small wrong answers of issue 30, each refused in one line (exit 2) or cleaned up:
# outputs that cannot be written (a link to /dev/full, so that a test run as root can never
# delete the device), a failed Chakra export, a garbled Kineto file beside a valid ET, bounds of
# --slow-gpu and collective flags, the nouns and plans errors name.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
T="$(dirname "$0")/../../traces/cpu-gpt-tiny-b8"
[ -d "$T" ] || { echo "SKIP: $T missing"; exit 77; }
[ -c /dev/full ] || { echo "SKIP: /dev/full is not the full device here"; exit 77; }

# A failed write exits 2 in one line and leaves what it was given (here a link to /dev/full) in
# place: the second run fails the same way (it once removed the path, so that the next run wrote a
# regular file and exited 0).
ln -s /dev/full "$TMP/full"
for run in 1 2; do
    check_bad "cannot write the timeline" simulate "$T" --gpus 2 --timeline "$TMP/full"
    [ -L "$TMP/full" ] || fail "--timeline: run $run removed the output link"
    check_bad "HTML report" simulate "$T" --gpus 2 --html "$TMP/full"
    [ -L "$TMP/full" ] || fail "--html: run $run removed the output link"
    check_bad "HTML report" compare "$T" --gpus 2 --html "$TMP/full"
    [ -L "$TMP/full" ] || fail "compare --html: run $run removed the output link"
    check_bad "cannot write the model" perfmodel fit "$T" -o "$TMP/full"
    [ -L "$TMP/full" ] || fail "perfmodel fit -o: run $run removed the output link"
done

# A Chakra export that fails at rank 2 leaves none of the files it wrote (ranks 0 and 1)
mkdir -p "$TMP/ck/mitosis.2.et"
check_bad "mitosis.2.et" simulate "$T" --gpus 4 --chakra "$TMP/ck" --chakra-json
left=$(cd "$TMP/ck" && ls)
[ "$left" = "mitosis.2.et" ] || fail "failed Chakra export left: $left"
# ... and one that succeeds writes every rank
"$BIN" simulate "$T" --gpus 4 --chakra "$TMP/ck2" >/dev/null || fail "chakra export exit $?"
[ "$(ls "$TMP/ck2" | grep -c '^mitosis\.[0-3]\.et$')" -eq 4 ] || fail "chakra export: $(ls "$TMP/ck2")"
# --chakra names its own directory, not the CSV one
check_bad "cannot create the Chakra directory '/dev/null'" simulate "$T" --gpus 2 --chakra /dev/null
check_bad "cannot create the CSV directory '/dev/null'" simulate "$T" --gpus 2 --csv /dev/null

# A garbled Kineto file beside a valid ET: refused, naming it (it was skipped: zero times)
mkdir "$TMP/garbled"
cp "$T"/* "$TMP/garbled/"
echo "garbage{{" >"$TMP/garbled/kineto.json.gz"
check_bad "kineto.json.gz: not JSON" inspect "$TMP/garbled"
check_bad "kineto.json.gz: not JSON" simulate "$TMP/garbled" --gpus 2
# meta.json and other files no reader claims are still ignored
echo "notes" >"$TMP/garbled/README.txt"
cp "$T/kineto.json.gz" "$TMP/garbled/"
"$BIN" inspect "$TMP/garbled" >/dev/null || fail "a README.txt beside the trace is not ignored"

# --slow-gpu FACTOR within [0.01, 1000]; the scenario file's numbers too
check_bad "--slow-gpu 3:1e-300: FACTOR is 0.01" simulate "$T" --gpus 4 --slow-gpu 3:1e-300
check_bad "--slow-gpu 0:1e9: FACTOR is 0.01" simulate "$T" --gpus 4 --slow-gpu 0:1e9
echo '{"compute": [{"gpus": [1], "slowdown": 1e-300}]}' >"$TMP/sc.json"
check_bad "slowdown: a slowdown is 0.01" simulate "$T" --gpus 4 --scenario "$TMP/sc.json"
echo '{"compute": [{"gpus": [1], "slowdown": {"dist": "uniform", "min": 1, "max": 1e9}}]}' >"$TMP/sc.json"
check_bad "slowdown.max: a slowdown is 0.01" simulate "$T" --gpus 4 --scenario "$TMP/sc.json"
"$BIN" simulate "$T" --gpus 4 --slow-gpu 3:0.5 >/dev/null || fail "--slow-gpu 3:0.5 (twice as fast) refused"

# collective: a sendrecv to itself, a size past the limit
check_bad "sendrecv from rank 0 to itself" collective --topology ring:4 --op sendrecv --root 0 --peer 0 --bytes 1MB
check_bad "0 to 1e18 bytes" collective --topology ring:4 --bytes 1e20
"$BIN" collective --topology ring:4 --op sendrecv --root 0 --peer 1 --bytes 1MB >/dev/null || fail "sendrecv 0->1"

# A plan that does not divide the GPUs names the sizes given, not "dp=? x tp=?"
out=$("$BIN" compare "$T" --gpus 8 --plans ddp=8,tp=3 2>&1) || fail "compare exit $?"
echo "$out" | grep -q "8 GPUs cannot hold tp=3 with dp taking the rest: 8 is not a multiple of 3" \
    || fail "skipped plan: $out"
echo "$out" | grep -q "=?" && fail "skipped plan reads ?: $out"
check_bad "8 GPUs cannot hold tp=3 x cp=2 with dp taking the rest: 8 is not a multiple of 6" \
    simulate "$T" --gpus 8 --tp 3 --cp 2
# issue 46.13: a what-if GPU past --gpus is named against --gpus, not one arbitrary plan; empty plans,
# --chunks 0 and a missing Chakra path are refused in one clear line
check_bad "every plan has --gpus 4: --slow-gpu 7:2: GPU 7" compare "$T" --gpus 4 --slow-gpu 7:2
check_bad "has an empty plan or field" compare "$T" --gpus 4 --plans ddp=4,,tp=4
check_bad "has an empty plan or field" compare "$T" --gpus 4 --plans ddp=4::zero=2
check_bad "--chunks needs an integer in 1..4096" simulate "$T" --gpus 4 --chunks 0
check_bad "/nonexistent.0.et: No such file" chakra-check /nonexistent.0.et
grep -q -- "--as-is" "$TMP/e" && fail "chakra-check speaks of --as-is: $(cat "$TMP/e")"
# issue 46.1: a Kineto file without its ET takes the batch from the meta.json beside it (it read 8,192,
# the first op's flattened input, and printed ~1,000x the samples/s); issue 46.6: inspect of an ET
# alone says it has no times and no batch instead of a table of zeros
mkdir -p "$TMP/konly" "$TMP/eonly"
cp "$T/kineto.json.gz" "$T/meta.json" "$TMP/konly/"
cp "$T/et.json.gz" "$TMP/eonly/"
"$BIN" simulate "$TMP/konly" --gpus 4 --json >"$TMP/k.json" 2>"$TMP/k.err" || fail "kineto alone: exit $?"
python3 - "$TMP/k.json" "$T/meta.json" <<'PY' || fail "kineto alone: batch"
import json, sys
s, m = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
assert s["plan"]["global_batch"] == 4 * m["batch"], s["plan"]
PY
grep -q "the batch is 8 from" "$TMP/k.err" || fail "kineto alone: no word on the batch: $(cat "$TMP/k.err")"
"$BIN" inspect "$TMP/eonly" >"$TMP/e.txt" || fail "inspect et alone: exit $?"
grep -q "^times      none: an Execution Trace alone has no operator times" "$TMP/e.txt" || fail "inspect et alone: $(head -12 "$TMP/e.txt")"
grep -q "^batch      0" "$TMP/e.txt" && fail "inspect et alone prints batch 0"
# issue 46.5 / 46.3: a DDP rank moved to 64 GPUs regenerates the plan's collectives (its pair
# all-reduces stood for 64 GPUs, so a 1 Gbps NIC cost nothing); a tensor-parallel rank (all-reduces
# in forward) is read as such and refused at another GPU count
R=$(dirname "$0")/../../traces
out=$("$BIN" simulate "$R/cpu-ddp-resmlp-w2" --gpus 64 --topology multinode:nodes=8,gpus=8 --nic-bw 1Gbps 2>&1) \
    || fail "ddp rank at 64 GPUs: exit $?"
echo "$out" | grep -q "^comm       regenerated: the plan's 64 GPUs are not the traced job's 2" || fail "ddp rank at 64: $out"
check_bad "whose ranks hold parts of the model (tensor synchronisation)" simulate "$R/cpu-tp-gpt-tiny-w2" --gpus 4
# ... and at its traced plan runs as the job ran, on the job's batch (meta.json's "batch"), so
# samples/s = that batch / step. as_traced KIND TRACE PLAN-LINE BATCH-LINE [PLAN-FLAGS...]
meta_int() { sed -n 's/^ *"'"$1"'": *\([0-9]*\),.*/\1/p' "$2/meta.json"; }
as_traced() {
    local kind=$1 d=$2 plan_line=$3 batch_line=$4 jb
    shift 4
    jb=$(meta_int batch "$d")
    out=$("$BIN" simulate "$d" "$@" 2>&1) || fail "$kind rank at its plan ($*): exit $?"
    echo "$out" | grep -q "^plan       2 GPUs = $plan_line," || fail "$kind rank's plan ($*): $out"
    echo "$out" | grep -q "^batch      $batch_line" || fail "$kind rank's batch ($*, job $jb): $out"
    echo "$out" | awk -v b="$jb" '/^step time/ { ms = $3; sps = substr($5, 2) }
        END { exit !(ms > 0 && sps > 0 && (sps - b * 1000 / ms) ^ 2 < 0.01) }' \
        || fail "$kind rank's samples/s is not batch $jb / step: $(echo "$out" | grep '^step time')"
}
# tp 2: its ranks share one batch (it said dp 2, global 16)
jb=$(meta_int batch "$R/cpu-tp-gpt-tiny-w2")
for plan in "" "--tp 2"; do
    as_traced tp "$R/cpu-tp-gpt-tiny-w2" "dp 1 x tp 2 x pp 1" "global $jb, per replica $jb," $plan
done
check_bad "would split that part again" simulate "$R/cpu-tp-gpt-tiny-w2" --pp 2
# a pipeline stage's rank (sends and receives only): pp 2 on the job's batch of meta.json's
# micro-batches (it said dp 2, global 32: two replicas of one micro-batch)
jb=$(meta_int batch "$R/cpu-pipeline-resmlp-w2")
jm=$(meta_int micro_batches "$R/cpu-pipeline-resmlp-w2")
for plan in "" "--pp 2" "--pp 2 --micro-batches $jm"; do
    as_traced pipeline "$R/cpu-pipeline-resmlp-w2" "dp 1 x tp 1 x pp 2" "global $jb, per replica $jb, micro-batch $((jb / jm)) " \
        $plan
    echo "$out" | grep -q "on one batch of $jm micro-batches" || fail "pipeline rank's micro-batches ($plan): $out"
done
check_bad "would split that stage again" simulate "$R/cpu-pipeline-resmlp-w2" --tp 2
check_bad "a pipeline that ran $jm micro-batches" simulate "$R/cpu-pipeline-resmlp-w2" --micro-batches $((jm * 2))
"$BIN" inspect "$R/cpu-pipeline-resmlp-w2" | grep -q "one stage of a 2-stage pipeline, $jm micro-batches (pipeline)" \
    || fail "inspect does not read the pipeline rank as a stage of $jm micro-batches"
"$BIN" inspect "$R/cpu-tp-gpt-tiny-w2" | grep -q "in the forward pass: a tensor-parallel group's activations" \
    || fail "inspect does not read the TP rank as tensor-parallel"
echo "small answers: ok"
