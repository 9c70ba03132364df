#!/usr/bin/env bash
# mitosis emulate without a shaped network: the refusals (no MPI in the build, not under mpirun,
# a bad --coll, a rank count that is not the plan's), then plain `mpirun -np 4` on loopback as a
# smoke test (DDP of cpu-resmlp-b64: every rank waits exactly the simulated compute, one row per
# DDP bucket, every ring pair i -> i+1 carries 3 x 6 transfers; --coll mpi; --timeline), a 2-stage
# pipeline (its sends and receives, each arriving), and a
# rank killed mid-run: every survivor says so in one line and the job ends, no hang.
# OpenMPI's own allocations trip LeakSanitizer in the ASan build: leaks are not checked here.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
T="$MT_ROOT/traces/cpu-resmlp-b64"
export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"

if "$BIN" emulate "$T" --gpus 2 2>&1 | grep -q "this build has no MPI"; then
    check_bad "this build has no MPI" emulate "$T" --gpus 2
    echo "skipped: this build has no MPI (its one-line refusal was checked)"
    exit 77
fi
command -v mpirun >/dev/null || { echo "skipped: mpirun not found (openmpi-bin)"; exit 77; }
check_bad "not started by an MPI launcher" emulate "$T" --gpus 2
check_bad "--coll" emulate "$T" --gpus 2 --coll nccl
check_bad "no trace given" emulate --gpus 2
check_bad "--check-threshold needs --check" emulate "$T" --gpus 2 --check-threshold 0.3

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1 OMPI_MCA_rmaps_base_oversubscribe=1
MPI=(mpirun --bind-to none)

"${MPI[@]}" -np 2 "$BIN" emulate "$T" --gpus 4 --strategy ddp >"$TMP/o" 2>"$TMP/e" && fail "-np 2 for 4 GPUs succeeded"
grep -q "the plan has 4 GPUs but 2 MPI ranks were started: launch with mpirun -np 4" "$TMP/e" || fail "-np: $(cat "$TMP/e")"

# The smoke test: 4 ranks, DDP (3 buckets), compute at 0.2x (15.09 ms), messages at 1%.
timeout 120 "${MPI[@]}" -np 4 "$BIN" emulate "$T" --gpus 4 --strategy ddp --time-scale 0.2 --bytes-scale 0.01 \
    --check --json --timeline "$TMP/tl.json" >"$TMP/j" 2>"$TMP/e" || fail "smoke exit $?: $(cat "$TMP/e")"
python3 - "$TMP/j" "$TMP/tl.json" <<'PY' || fail "smoke: $(cat "$TMP/j")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 4 and d["collectives_as"] == "schedule" and d["topology"] == "switch:4", d
assert len(d["per_rank"]) == 4
for r in d["per_rank"]:
    # the cursor waits exactly the simulated compute (deadlines, no drift; ps rounded to ns per task)
    assert abs(r["compute_ms"] - r["predicted"]["compute_ms"]) < 1e-3, r
    assert abs(r["compute_ms"] - 0.2 * 75.454) < 0.01, r
    assert r["step_ms"] >= r["compute_ms"] and r["step_ms"] < 10000, r
c = d["collectives"]
assert len(c) == 3 and all(x["op"] == "allreduce" and x["algo"] == "ring" and x["ranks"] == 4 for x in c), c
assert all(x["predicted_us"] > 0 and x["time_us"] > 0 for x in c), c
assert abs(sum(x["bytes"] for x in c) - 0.01 * 33652688) < 0.01 * 33652688 * 0.2, c  # ~1% of the gradients
p = {(x["src"], x["dst"]): x for x in d["pairs"]}
assert sorted(p) == [(0, 1), (1, 2), (2, 3), (3, 0)], p
assert all(x["transfers"] == 18 for x in p.values()), p  # 3 all-reduces x 2(N-1) ring steps
assert "check" in d and d["check"]["threshold"] == 0.25
tl = json.load(open(sys.argv[2]))
ev = tl["traceEvents"] if isinstance(tl, dict) else tl
assert {e["pid"] for e in ev if e.get("ph") == "X"} >= {1, 2, 3, 4}, "timeline lacks a rank"
PY

# MPI's own collectives
timeout 120 "${MPI[@]}" -np 2 "$BIN" emulate "$T" --gpus 2 --strategy ddp --time-scale 0.1 --bytes-scale 0.01 \
    --coll mpi >"$TMP/o" 2>"$TMP/e" || fail "--coll mpi exit $?: $(cat "$TMP/e")"
[ "$(grep -c ' allreduce  mpi ' "$TMP/o")" -eq 3 ] || fail "--coll mpi rows: $(cat "$TMP/o")"

# A pipeline (emulate/walker.c's do_send and post_recvs): 2 stages, 4 micro-batches. Each stage
# waits exactly its simulated compute; stage 0 sends the activations of micro-batches 0..3 to GPU
# 1, stage 1 the gradients back, every send arrives (a flow arrow pairs each send with its
# receive), and both stages see a bubble.
timeout 120 "${MPI[@]}" -np 2 "$BIN" emulate "$T" --gpus 2 --pp 2 --micro-batches 4 --time-scale 0.1 \
    --bytes-scale 0.01 --json --timeline "$TMP/pp.json" >"$TMP/j" 2>"$TMP/e" || fail "pipeline exit $?: $(cat "$TMP/e")"
python3 - "$TMP/j" "$TMP/pp.json" <<'PY' || fail "pipeline: $(cat "$TMP/j")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["ranks"] == 2 and len(d["per_rank"]) == 2 and d["collectives"] == [], d
for r in d["per_rank"]:
    assert abs(r["compute_ms"] - r["predicted"]["compute_ms"]) < 1e-3, r
    assert r["bubble_ms"] > 0 and r["predicted"]["bubble_ms"] > 0 and r["step_ms"] >= r["compute_ms"], r
tl = json.load(open(sys.argv[2]))
ev = tl["traceEvents"] if isinstance(tl, dict) else tl
sends = sorted((e["pid"] - 1, e["name"]) for e in ev if e.get("ph") == "X" and e["name"].startswith("send "))
want = sorted([(0, f"send activations mb {m} to GPU 1") for m in range(4)] +
              [(1, f"send gradients mb {m} to GPU 0") for m in range(4)])
assert sends == want, sends
recvs = sorted((e["pid"] - 1, e["name"]) for e in ev if e.get("ph") == "X" and e["name"].startswith("recv "))
assert recvs == sorted([(1, f"recv activations mb {m} from GPU 0") for m in range(4)] +
                       [(0, f"recv gradients mb {m} from GPU 1") for m in range(4)]), recvs
s = sorted(e["id"] for e in ev if e.get("ph") == "s")
f = sorted(e["id"] for e in ev if e.get("ph") == "f")
assert len(s) == 8 and s == f, (s, f)
PY

# A rank dies: with --enable-recovery mpirun lets the others run into their timeout (2 s), and each
# prints one line; without it mpirun kills them at once. Either way the job ends.
for recovery in --enable-recovery ""; do
    "${MPI[@]}" -np 3 $recovery "$BIN" emulate "$T" --gpus 3 --strategy ddp --bytes-scale 0.01 --steps 200 \
        --timeout 2s >"$TMP/o" 2>"$TMP/e" &
    mp=$!
    kids=""
    for _ in $(seq 50); do
        sleep 0.2
        kids=$(pgrep -P "$mp" | tr '\n' ' ')
        [ "$(echo $kids | wc -w)" -eq 3 ] && break
    done
    [ "$(echo $kids | wc -w)" -eq 3 ] || { kill "$mp"; fail "ranks did not start: $kids"; }
    sleep 3 # into the step (MPI_Init and the communicator splits are blocking calls: a death there is mpirun's)
    kill -9 "$(echo $kids | awk '{print $2}')"
    start=$(date +%s)
    for _ in $(seq 150); do kill -0 "$mp" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$mp" 2>/dev/null; then kill -9 "$mp"; fail "the job hung after a rank died ($recovery)"; fi
    wait "$mp"
    echo "rank killed ($recovery): job ended after $(( $(date +%s) - start )) s"
    if [ -n "$recovery" ]; then
        for r in 0 2; do
            grep -q "^mitosis emulate: rank $r: waited 2 s for .* in vain: a rank died or the network is down" \
                "$TMP/e" || fail "rank $r did not report the death: $(cat "$TMP/e")"
        done
    fi
done
echo "emulate: refusals, 4-rank loopback smoke test, --coll mpi, timeline, pipeline sends, rank death all passed"
