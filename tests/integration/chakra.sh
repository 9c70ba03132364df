#!/usr/bin/env bash
# Chakra ET in and out: ASTRA-sim's 1 MB microbenchmarks run --as-is take exactly the time of
# `mitosis collective` for the same op and size (switch:N and ring:N); `simulate --chakra` then
# `simulate --as-is` gives the simulated step time back (DP, TP, PP, hybrid on shipped traces, and
# a shared GPU trace with the host model when ../shared is there); protoc --decode with the
# project's .proto parses every exported file; --chakra-json and --chakra-ranks; bad input.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
ROOT=${MT_ROOT:-$(dirname "$0")/../..}
shared=${MT_SHARED_TRACES:-$ROOT/../shared/traces}
step() { python3 -c 'import json,sys; d=json.load(sys.stdin); print(repr(d["step_ms"]))'; }

# ---- the fixtures against `mitosis collective` ---------------------------------------------
fx="$shared/../chakra/astra-sim-microbenchmarks"
if [ -d "$fx" ]; then
    n=0
    for d in "$fx"/*_*npus_1MB; do
        name=$(basename "$d")                       # all_reduce_8npus_1MB
        ranks=${name%npus_1MB}; ranks=${ranks##*_}
        op=$(echo "${name%_*npus_1MB}" | tr -d _)    # allreduce, alltoall, ...
        for topo in switch:$ranks ring:$ranks; do
            a=$("$BIN" simulate "$d" --as-is --topology "$topo" --json | step) || fail "$name on $topo: as-is"
            c=$("$BIN" collective --op "$op" --bytes 1048576 --topology "$topo" --json |
                python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["rows"][0]["time_us"]))') ||
                fail "$name: collective --op $op"
            python3 -c "import sys; a,c=$a*1e3,$c; sys.exit(abs(a-c) > 1e-9*c)" ||
                fail "$name on $topo: as-is $a ms, collective $c us"
            n=$((n + 1))
        done
    done
    [ "$n" -eq 16 ] || fail "expected 8 fixtures x 2 topologies, ran $n"
else
    skip_part "$fx absent, fixture checks skipped"
fi

# ---- round trips ------------------------------------------------------------------------------
# Every exported file parsed by protoc alone: each length-delimited message becomes field 1
# (metadata) or 2 (a node) of a wrapper message that imports the project's .proto.
cat >"$TMP/etfile.proto" <<'EOF'
syntax = "proto3";
import "chakra.proto";
message EtFile { ChakraProtoMsg.GlobalMetadata meta = 1; repeated ChakraProtoMsg.Node node = 2; }
EOF
check_protoc() { # DIR: every .et parses; prints the node count of all files
    python3 - "$1" "$ROOT/tracer" "$TMP" <<'PY' || return 1
import glob, subprocess, sys
d, protodir, tmp = sys.argv[1:4]
total = 0
for f in sorted(glob.glob(d + "/*.et")):
    b, at, out, k = open(f, "rb").read(), 0, bytearray(), 0
    while at < len(b):
        n = s = 0
        while True:
            c = b[at]; at += 1; n |= (c & 0x7f) << s; s += 7
            if c < 0x80: break
        ln, v = bytearray(), n
        while True:
            ln.append((v & 0x7f) | (0x80 if v > 0x7f else 0)); v >>= 7
            if not v: break
        out += bytes([0x0a if k == 0 else 0x12]) + ln + b[at:at + n]
        at += n; k += 1
    p = subprocess.run(["protoc", "-I", protodir, "-I", tmp, "--decode=EtFile", tmp + "/etfile.proto"],
                       input=bytes(out), capture_output=True)
    if p.returncode != 0 or p.stdout.count(b"\nnode {") + p.stdout.startswith(b"node {") != k - 1:
        sys.exit(f"{f}: protoc --decode failed or lost nodes: {p.stderr.decode()[:300]}")
    total += k - 1
print(total)
PY
}
have_protoc=1
command -v protoc >/dev/null || { have_protoc=0; skip_part "protoc absent, wire checks skipped"; }

roundtrip() { # TRACE PLAN...: the step back within 0.1% (it is exact: same order, same network)
    local t="$1"; shift
    rm -rf "$TMP/ck"
    a=$("$BIN" simulate "$t" "$@" --chakra "$TMP/ck" --json 2>/dev/null | step) || fail "$t $*: export"
    b=$("$BIN" simulate "$TMP/ck" --as-is --json | step) || fail "$t $*: --as-is"
    python3 -c "import sys; sys.exit(abs($a-$b) > 1e-3*$a)" || fail "$t $*: simulate $a ms, as-is $b ms"
    if [ $have_protoc -eq 1 ]; then check_protoc "$TMP/ck" >/dev/null || fail "$t $*: protoc"; fi
}
for t in cpu-gpt-tiny-b8 cpu-resmlp-b64; do
    roundtrip "$ROOT/traces/$t" --gpus 8 --strategy ddp
    roundtrip "$ROOT/traces/$t" --gpus 2 --tp 2
    roundtrip "$ROOT/traces/$t" --gpus 4 --pp 4 --schedule 1f1b
    roundtrip "$ROOT/traces/$t" --gpus 8 --dp 2 --tp 2 --pp 2
done
roundtrip "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 16 --dp 4 --pp 4 --topology ring:16
if [ -d "$shared/param-resnet" ]; then # a GPU trace: the host model's launch gaps become delay nodes
    roundtrip "$shared/param-resnet" --gpus 8 --dp 2 --tp 2 --pp 2
fi

# ---- outputs: JSON form, a subset of ranks ------------------------------------------------------
rm -rf "$TMP/ck"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --dp 2 --tp 2 --pp 2 --chakra "$TMP/ck" --chakra-json \
    >/dev/null || fail "--chakra-json"
[ "$(ls "$TMP/ck" | grep -c '\.et$')" -eq 8 ] && [ "$(ls "$TMP/ck" | grep -c '\.json$')" -eq 8 ] ||
    fail "--chakra-json files: $(ls "$TMP/ck")"
if [ $have_protoc -eq 1 ]; then
    n_et=$(check_protoc "$TMP/ck") || fail "protoc on the hybrid plan"
    n_js=$(cat "$TMP"/ck/*.json | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    d = json.loads(line)
    if "type" in d:
        n += 1
        assert d["type"] in ("COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE"), d
    else:
        assert d == {"version": "0.0.4"}, d
print(n)') || fail "the JSON form does not parse"
    [ "$n_et" -eq "$n_js" ] || fail "JSON has $n_js nodes, .et $n_et"
fi
rm -rf "$TMP/ck"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --strategy ddp --chakra "$TMP/ck" --chakra-ranks 0,5-6 \
    >/dev/null || fail "--chakra-ranks"
[ "$(ls "$TMP/ck")" = "$(printf 'mitosis.0.et\nmitosis.5.et\nmitosis.6.et')" ] || fail "--chakra-ranks: $(ls "$TMP/ck")"

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
check_bad "--chakra-ranks" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 2 --chakra "$TMP/x" --chakra-ranks 7
checks_done chakra
