#!/usr/bin/env bash
# Chakra ET in and out: ASTRA-sim's 1 MB microbenchmarks run --as-is take exactly the time of
# `mitosis collective` for the same op and size (switch:N and ring:N); `simulate --chakra` then
# `simulate --as-is` gives the simulated step time back (DP, TP, PP, hybrid on shipped traces, and
# a shared GPU trace with the host model when ../shared is there); protoc --decode with the
# project's .proto parses every exported file; --chakra-json and --chakra-ranks; bad input.
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
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
        # Chakra's size convention: an all-gather's comm_size is each rank's input (its output / N)
        bytes=1048576; [ "$op" = allgather ] && bytes=$((1048576 * ranks))
        for topo in switch:$ranks ring:$ranks; do
            a=$("$BIN" simulate "$d" --as-is --topology "$topo" --json | step) || fail "$name on $topo: as-is"
            c=$("$BIN" collective --op "$op" --bytes $bytes --topology "$topo" --json |
                python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["rows"][0]["time_us"]))') ||
                fail "$name: collective --op $op"
            python3 -c "import sys; a,c=$a*1e3,$c; sys.exit(abs(a-c) > 1e-9*c)" ||
                fail "$name on $topo: as-is $a ms, collective $c us"
            n=$((n + 1))
        done
    done
    [ "$n" -eq 16 ] || fail "expected 8 fixtures x 2 topologies, ran $n"
    # all-to-all as ASTRA-sim's ring runs it (--algo relay): N(N-1)/2 steps of S/N, each S/N / B plus
    # two 500 ns hops on switch:N at 100 GB/s
    for r in 4 8; do
        a=$("$BIN" simulate "$fx/all_to_all_${r}npus_1MB" --as-is --algo relay --json | step) || fail "relay a2a $r"
        python3 -c "import sys; n=$r; t=n*(n-1)/2*(1048576/n/100e9+1e-6)*1e3; sys.exit(abs($a-t) > 1e-6*t)" ||
            fail "all-to-all relay on $r ranks: $a ms, closed form differs"
    done
    # a file in mitosis's old convention (mitosis.* attributes, no comm_size_convention): all-gather
    # comm_size is its output, so the same fixture bytes take the 1 MiB-output time
    python3 - "$fx/all_gather_4npus_1MB" "$TMP/oldag" <<'PY'
import glob, os, sys
src, dst = sys.argv[1:3]
os.makedirs(dst, exist_ok=True)
def rd(b, at):
    n = s = 0
    while True:
        c = b[at]; at += 1; n |= (c & 0x7f) << s; s += 7
        if c < 0x80: return n, at
def vi(n):
    o = bytearray()
    while True:
        o.append((n & 0x7f) | (0x80 if n > 0x7f else 0)); n >>= 7
        if not n: return bytes(o)
attr = b"\x0a\x0cmitosis.algo" + b"\xea\x01\x04ring"    # name = 1, string_val = 29
for f in glob.glob(src + "/*.et"):
    b, at, out, k = open(f, "rb").read(), 0, bytearray(), 0
    while at < len(b):
        n, at = rd(b, at)
        m = b[at:at + n]; at += n
        if k: m = m + b"\x52" + vi(len(attr)) + attr          # attr = 10 on each node
        out += vi(len(m)) + m; k += 1
    open(dst + "/" + os.path.basename(f), "wb").write(out)
PY
    a=$("$BIN" simulate "$TMP/oldag" --as-is --json | step) || fail "old-convention all-gather"
    c=$("$BIN" collective --op allgather --bytes 1048576 --topology switch:4 --json |
        python3 -c 'import json,sys; print(repr(json.load(sys.stdin)["rows"][0]["time_us"]))')
    python3 -c "import sys; sys.exit(abs($a*1e3-$c) > 1e-9*$c)" || fail "old convention: as-is $a ms, collective $c us"
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

# What ASTRA-sim needs of an export (its JSON form and comm_groups.json), derived from the files
# alone: the size convention in the metadata; every pg_name a decimal id > 0 listed in
# comm_groups.json with this rank as a member, and used by exactly its members; no CPU node; per
# rank the written duration_micros of the GPU nodes sum to the exact picoseconds within 0.5 us
# (the rounding carries); with FSDP, N x an all-gather's comm_size is the reduce-scatter's.
check_astra_form() { # DIR
    python3 - "$1" <<'PY'
import glob, json, re, sys
d = sys.argv[1]
groups = {int(k): v for k, v in json.load(open(d + "/comm_groups.json")).items()}
for k, v in groups.items():
    assert k > 0 and v == sorted(set(v)) and len(v) >= 2, (k, v)
users, ag, rs = {}, set(), set()
for f in sorted(glob.glob(d + "/mitosis.*.json")):
    r = int(f.split(".")[-2])
    lines = [json.loads(l) for l in open(f)]
    assert lines[0] == {"version": "0.0.4", "attr": [{"name": "comm_size_convention", "stringVal": "chakra"}]}, lines[0]
    us = ps = 0
    for n in lines[1:]:
        a = {x["name"]: x for x in n["attr"]}
        assert a["is_cpu_op"]["boolVal"] is False, n
        if n["type"] == "COMP_NODE":
            us += int(n.get("durationMicros", 0)); ps += int(a["mitosis.duration_ps"]["int64Val"])
        if n["type"] == "COMM_COLL_NODE":
            pg = a["pg_name"]["stringVal"]
            assert re.fullmatch(r"[1-9][0-9]*", pg), pg
            assert r in groups[int(pg)], (r, pg, groups[int(pg)])
            users.setdefault(int(pg), set()).add(r)
            size, n_g = int(a["comm_size"]["int64Val"]), len(groups[int(pg)])
            if a["comm_type"]["int64Val"] == "2": ag.add(size * n_g)
            if a["comm_type"]["int64Val"] == "7": rs.add(size)
    assert abs(us - ps / 1e6) <= 0.5 + 1e-9, (f, us, ps / 1e6)
for k, u in users.items():
    assert sorted(u) == groups[k], (k, sorted(u), groups[k])
if rs and ag: assert ag == rs, (sorted(ag)[:4], sorted(rs)[:4])
PY
}
roundtrip() { # TRACE PLAN...: the step back within 0.1% (it is exact: same order, same network)
    local t="$1"; shift
    rm -rf "$TMP/ck" "$TMP/cc"
    a=$("$BIN" simulate "$t" "$@" --chakra "$TMP/ck" --chakra-json --json 2>/dev/null | step) || fail "$t $*: export"
    b=$("$BIN" simulate "$TMP/ck" --as-is --json | step) || fail "$t $*: --as-is"
    python3 -c "import sys; sys.exit(abs($a-$b) > 1e-3*$a)" || fail "$t $*: simulate $a ms, as-is $b ms"
    if [ $have_protoc -eq 1 ]; then check_protoc "$TMP/ck" >/dev/null || fail "$t $*: protoc"; fi
    check_astra_form "$TMP/ck" || fail "$t $*: not in the form ASTRA-sim reads"
    "$BIN" chakra-check "$TMP/ck" --json >"$TMP/cj" || fail "$t $*: chakra-check refused the export"
    python3 - "$TMP/ck" "$TMP/cj" <<'PY' || fail "$t $*: chakra-check's counts differ from the files"
import glob, json, sys
d, rep = sys.argv[1], json.load(open(sys.argv[2]))
files = sorted(glob.glob(d + "/mitosis.*.json"), key=lambda f: int(f.split(".")[-2]))
assert rep["ranks"] == len(files) and rep["all_gather_comm_size"] == "input", rep["ranks"]
for f, pr in zip(files, rep["per_rank"]):
    nodes = [json.loads(l) for l in open(f)][1:]
    comp = [n for n in nodes if n["type"] == "COMP_NODE"]
    assert pr["gpu_nodes"] == len(comp) and pr["gpu_us"] == sum(int(n.get("durationMicros", 0)) for n in comp), f
    assert sum(c["nodes"] for c in pr["collectives"].values()) == sum(n["type"] == "COMM_COLL_NODE" for n in nodes)
PY
    # communication only: the same communication nodes, depending on each other only; still runs
    "$BIN" simulate "$t" "$@" --chakra "$TMP/cc" --chakra-json --chakra-comm-only >/dev/null 2>&1 || fail "$t $*: comm-only"
    python3 - "$TMP/ck" "$TMP/cc" <<'PY' || fail "$t $*: --chakra-comm-only"
import glob, json, sys
full, cc = sys.argv[1:3]
for f in glob.glob(cc + "/mitosis.*.json"):
    nodes = [json.loads(l) for l in open(f)][1:]
    ids = {int(n.get("id", 0)) for n in nodes}
    assert all(n["type"] != "COMP_NODE" for n in nodes), f
    assert all(int(x) in ids for n in nodes for x in n.get("dataDeps", [])), f
    whole = [json.loads(l) for l in open(full + "/" + f.split("/")[-1])][1:]
    assert len(nodes) == sum(n["type"] != "COMP_NODE" for n in whole), f
PY
    "$BIN" simulate "$TMP/cc" --as-is >/dev/null || fail "$t $*: comm-only --as-is"
}
for t in cpu-gpt-tiny-b8 cpu-resmlp-b64; do
    roundtrip "$ROOT/traces/$t" --gpus 8 --strategy ddp
    roundtrip "$ROOT/traces/$t" --gpus 2 --tp 2
    roundtrip "$ROOT/traces/$t" --gpus 4 --pp 4 --schedule 1f1b
    roundtrip "$ROOT/traces/$t" --gpus 8 --dp 2 --tp 2 --pp 2
done
roundtrip "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 16 --dp 4 --pp 4 --topology ring:16
roundtrip "$ROOT/traces/cpu-gpt-tiny-b8" --gpus 4 --fsdp
roundtrip "$ROOT/tests/fixtures/moe-tiny" --gpus 4 --ep 2 --expert-skew 0
if [ -d "$shared/param-resnet" ]; then # a GPU trace: the host model's launch gaps become delay nodes
    roundtrip "$shared/param-resnet" --gpus 8 --dp 2 --tp 2 --pp 2
fi

# ---- outputs: JSON form, a subset of ranks ------------------------------------------------------
rm -rf "$TMP/ck"
"$BIN" simulate "$ROOT/traces/cpu-resmlp-b64" --gpus 8 --dp 2 --tp 2 --pp 2 --chakra "$TMP/ck" --chakra-json \
    >/dev/null || fail "--chakra-json"
[ "$(ls "$TMP/ck" | grep -c '\.et$')" -eq 8 ] && [ "$(ls "$TMP/ck" | grep -c '^mitosis\.[0-9]*\.json$')" -eq 8 ] ||
    fail "--chakra-json files: $(ls "$TMP/ck")"
if [ $have_protoc -eq 1 ]; then
    n_et=$(check_protoc "$TMP/ck") || fail "protoc on the hybrid plan"
    n_js=$(cat "$TMP"/ck/mitosis.*.json | python3 -c '
import json, sys
n = 0
for line in sys.stdin:
    d = json.loads(line)
    if "type" in d:
        n += 1
        assert d["type"] in ("COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE"), d
    else:
        assert d == {"version": "0.0.4", "attr": [{"name": "comm_size_convention", "stringVal": "chakra"}]}, d
print(n)') || fail "the JSON form does not parse"
    [ "$n_et" -eq "$n_js" ] || fail "JSON has $n_js nodes, .et $n_et"
fi
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
