#!/usr/bin/env bash
# Chakra ET in and out: ASTRA-sim's 1 MB microbenchmarks run --as-is take exactly the time of
# `mitosis collective` for the same op and size (switch:N and ring:N); an export (`simulate --chakra`,
# here through libmitosis: chakra.py) then `simulate --as-is` gives the simulated step time back (DP,
# TP, PP, hybrid on shipped traces, and a shared GPU trace with the host model when ../shared is
# there); protoc --decode with the project's .proto parses every exported file; the binary's
# --chakra-json and --chakra-comm-only write the library's files; --chakra-ranks; bad input.
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
. "$(dirname "$0")/libsim.bash"
ROOT=${MT_ROOT:-$(dirname "$0")/../..}
shared=${MT_SHARED_TRACES:-$ROOT/../shared/traces}
fx="$shared/../chakra/astra-sim-microbenchmarks"
step() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(repr(d["step_ms"]))'; }

# ---- the fixtures against `mitosis collective`, the round trips, the library's output options ---------
# chakra.py, one process: each plan simulated and exported through libmitosis (mitosis_result_write
# "chakra" with --chakra-json, and with --chakra-comm-only), read back by this binary (--as-is,
# chakra-check), its .et files parsed by protoc; the exports kept in $TMP/rt for the checks below.
libpy "$BIN" "$(dirname "$0")/chakra.py" "$BIN" "$ROOT" "$TMP" "$shared" >"$TMP/py.log" 2>&1
rc=$?
cat "$TMP/py.log"
case $rc in
    0) ;;
    77) skip_part "$(grep '^SKIP: ' "$TMP/py.log" | sed 's/^SKIP: //' | paste -sd ';')" ;;
    *) fail "chakra.py: exit $rc" ;;
esac
grep -q '^ok: round trip cpu-resmlp-b64 --gpus 8 --dp 2 --tp 2 --pp 2 (' "$TMP/py.log" || fail "chakra.py skipped round trips"

# ---- outputs: JSON form, a subset of ranks ------------------------------------------------------
# the binary's --chakra-json and --chakra-comm-only write what the library wrote for the same plan
rm -rf "$TMP/ck" "$TMP/cc"
lib_rt="$TMP/rt/cpu-resmlp-b64_--gpus_8_--dp_2_--tp_2_--pp_2"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --dp 2 --tp 2 --pp 2 --chakra "$TMP/ck" --chakra-json \
    >/dev/null || fail "--chakra-json"
[ "$(ls "$TMP/ck" | grep -c '\.et$')" -eq 8 ] && [ "$(ls "$TMP/ck" | grep -c '^mitosis\.[0-9]*\.json$')" -eq 8 ] ||
    fail "--chakra-json files: $(ls "$TMP/ck")"
diff -r "$TMP/ck" "$lib_rt/ck" >/dev/null || fail "the binary's --chakra-json export differs from the library's"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --dp 2 --tp 2 --pp 2 --chakra "$TMP/cc" --chakra-json \
    --chakra-comm-only >/dev/null || fail "--chakra-comm-only"
diff -r "$TMP/cc" "$lib_rt/cc" >/dev/null || fail "the binary's --chakra-comm-only export differs from the library's"
rm -rf "$TMP/ck"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --strategy ddp --chakra "$TMP/ck" --chakra-ranks 0,5-6 \
    >/dev/null || fail "--chakra-ranks"
[ "$(ls "$TMP/ck")" = "$(printf 'comm_groups.json\nmitosis.0.et\nmitosis.5.et\nmitosis.6.et')" ] || fail "--chakra-ranks: $(ls "$TMP/ck")"

# ---- one rank's file as the "one GPU" trace of simulate (the reader registry) ------------------
rm -rf "$TMP/one"
a=$("$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 1 --chakra "$TMP/one" --json | step) || fail "1-GPU export"
b=$("$BIN" simulate "$TMP/one/mitosis.0.et" --gpus 1 --json 2>/dev/null | step) || fail "1-GPU import"
python3 -c "import sys; sys.exit(abs($a-$b) > 1e-6*$a)" || fail "one rank as a trace: $a ms exported, $b ms read back"
"$BIN" inspect "$TMP/one/mitosis.0.et" --json 2>/dev/null | python3 -c '
import json, sys
d = json.load(sys.stdin)
assert d["format"] == "chakra", d["format"]' || fail "inspect of a Chakra ET"
"$BIN" simulate "$TMP/one/mitosis.0.et" --gpus 4 --strategy ddp >/dev/null 2>"$TMP/e" || fail "4 GPUs from a Chakra ET"
grep -q "no tensor shapes, weights or batch size" "$TMP/e" || fail "the Chakra warning: $(cat "$TMP/e")"
if [ -d "$fx" ]; then
    check_bad "no GPU compute node" simulate "$fx/all_reduce_4npus_1MB/all_reduce.0.et" --gpus 2
fi

# ---- bad input: one line, exit 2 --------------------------------------------------------------
mkdir -p "$TMP/bad"
python3 - "$TMP/bad" <<'PY'
import sys
d = sys.argv[1]
meta = b"\x0a\x050.0.4"
def msg(b): return bytes([len(b)]) + b
def node(i, deps=()):  # id, name "n", COMP_NODE, data_deps
    b = (b"\x08" + bytes([i]) if i else b"") + b"\x12\x01n\x18\x04"
    return b + b"".join(b"\x28" + bytes([x]) for x in deps)
open(d + "/cyc.0.et", "wb").write(msg(meta) + msg(node(1, [2])) + msg(node(2, [1])))
open(d + "/cut.0.et", "wb").write(msg(meta) + msg(node(1))[:-2])
open(d + "/miss.0.et", "wb").write(msg(meta) + msg(node(1, [9])))
open(d + "/varint.0.et", "wb").write(msg(meta) + b"\xff")
open(d + "/wrong.0.et", "wb").write(msg(meta) + msg(b"\x0a\x01x"))
open(d + "/gap.0.et", "wb").write(msg(meta))
open(d + "/gap.2.et", "wb").write(msg(meta))
PY
check_bad "cycle" simulate "$TMP/bad/cyc.0.et" --as-is
check_bad "cut short" simulate "$TMP/bad/cut.0.et" --as-is
check_bad "depends on node 9" simulate "$TMP/bad/miss.0.et" --as-is
check_bad "truncated varint" simulate "$TMP/bad/varint.0.et" --as-is
check_bad "not a Chakra Node" simulate "$TMP/bad/wrong.0.et" --as-is
check_bad "missing rank" simulate "$TMP/bad/gap.0.et" "$TMP/bad/gap.2.et" --as-is
check_bad "NAME.RANK.et" simulate "$ROOT/traces/cpu-gpt-tiny-b8/meta.json" --as-is
check_bad "need --chakra DIR" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 2 --chakra-json
check_bad "--chakra-comm-only need" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 2 --chakra-comm-only
check_bad "uneven per-rank shares" simulate "$ROOT/tests/fixtures/moe-tiny" --gpus 4 --ep 2 --expert-skew 3 --chakra "$TMP/x"

# ---- chakra-check refuses what ASTRA-sim would drop silently ------------------------------------
rm -rf "$TMP/ck"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 4 --strategy ddp --chakra "$TMP/ck" >/dev/null || fail "export"
"$BIN" chakra-check "$TMP/ck" | grep -q "4 ranks, comm_groups.json" || fail "chakra-check's text"
python3 - "$TMP/bad" <<'PY'
import sys
d = sys.argv[1]
meta = b"\x0a\x050.0.4"
def msg(b): return bytes([len(b)]) + b
def attr(name, tail): a = b"\x0a" + bytes([len(name)]) + name + tail; return b"\x52" + bytes([len(a)]) + a
def coll(pg, ctype=0):  # COMM_COLL_NODE, comm_type, comm_size 1 MiB, pg_name
    return (b"\x08\x01\x12\x01c\x18\x07" + attr(b"comm_type", b"\x48" + bytes([ctype])) +
            attr(b"comm_size", b"\x48\x80\x80\x40") + (attr(b"pg_name", b"\xea\x01" + bytes([len(pg)]) + pg) if pg else b""))
for name, pg, t in (("named", b"dp.0", 0), ("nogroups", b"1", 0), ("reduce", b"", 1)):
    for r in (0, 1):
        open(f"{d}/{name}.{r}.et", "wb").write(msg(meta) + msg(coll(pg, t)))
PY
for w in named nogroups reduce; do mkdir -p "$TMP/bad/$w"; mv "$TMP/bad/$w".[01].et "$TMP/bad/$w/"; done
check_bad "pg_name \"dp.0\" is not a decimal communicator id" chakra-check "$TMP/bad/named"
check_bad "comm_groups.json (ASTRA-sim's --comm-group-configuration), which is missing" chakra-check "$TMP/bad/nogroups"
check_bad "REDUCE (1) has no implementation in ASTRA-sim" chakra-check "$TMP/bad/reduce"
echo '{"1": [0, 2]}' >"$TMP/bad/nogroups/comm_groups.json"
check_bad "which is not a rank of the 2 files" chakra-check "$TMP/bad/nogroups"
echo '{"1": [0]}' >"$TMP/bad/nogroups/comm_groups.json"
check_bad "does not list it among its members" chakra-check "$TMP/bad/nogroups"
echo '{"1": [0, 1]}' >"$TMP/bad/nogroups/comm_groups.json"
"$BIN" chakra-check "$TMP/bad/nogroups" >/dev/null || fail "chakra-check of a consistent pair"
check_bad "--chakra-ranks" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 2 --chakra "$TMP/x" --chakra-ranks 7
# NCCL's tuner's choices have no Chakra form: --algo nccl refused; the default (auto) writes rings
check_bad "drop --algo nccl" simulate "$ROOT/traces/h100-resmlp-b64" --gpus 2 --algo nccl --chakra "$TMP/x"
checks_done chakra
