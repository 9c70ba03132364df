#!/usr/bin/env bash
# simulate --as-is on Chakra ET sets whose ranks deadlock (written here byte by byte, the way
# chakra.sh writes its bad files): a receive whose send comes after the peer's own receive, and an
# all-reduce that one rank never reaches because it waits for a send behind the collective. Each is
# refused in one line (exit 2) naming the node, what it waits for and the rank, never a hang or a
# step. A control set (the sends first) runs.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"
python3 - "$TMP" <<'PY' || fail "writing the ET files"
import sys
d = sys.argv[1]
def varint(n):
    out = b""
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out += bytes([b | 0x80])
        else:
            return out + bytes([b])
def fv(f, v): return varint(f << 3) + varint(v)
def fb(f, b): return varint(f << 3 | 2) + varint(len(b)) + b
def attr(name, v): return fb(1, name.encode()) + fv(9, v)
def node(i, name, typ, deps=(), dur=0, attrs=()):
    return (fv(1, i) + fb(2, name.encode()) + fv(3, typ) + b"".join(fv(5, x) for x in deps) +
            (fv(7, dur) if dur else b"") + b"".join(fb(10, attr(k, v)) for k, v in attrs))
def msg(b): return varint(len(b)) + b
COMP, SEND, RECV, COLL = 4, 5, 6, 7
def p2p(typ, src, dst, tag): return {"type": typ, "attrs": (("comm_src", src), ("comm_dst", dst), ("comm_tag", tag),
                                                          ("comm_size", 1024))}
ALLREDUCE = {"type": COLL, "attrs": (("comm_type", 0), ("comm_size", 4096))}
def write(name, ranks):  # ranks: per rank, the nodes after a 10 us compute, each after the one before
    for r, after in enumerate(ranks):
        nodes = [node(1, "compute", COMP, dur=10)] + [
            node(i + 2, {SEND: "send", RECV: "recv", COLL: "allreduce"}[x["type"]], x["type"], [i + 1], attrs=x["attrs"])
            for i, x in enumerate(after)]
        with open(f"{d}/{name}.{r}.et", "wb") as f:
            f.write(msg(fb(1, b"0.0.4")) + b"".join(msg(n) for n in nodes))
# Each rank receives first, then sends: neither send ever comes
write("dl", [[p2p(RECV, 1, 0, 8), p2p(SEND, 0, 1, 7)], [p2p(RECV, 0, 1, 7), p2p(SEND, 1, 0, 8)]])
# A collective one rank never reaches: rank 0 all-reduces, then sends; rank 1 receives first
write("coll", [[ALLREDUCE, p2p(SEND, 0, 1, 3)], [p2p(RECV, 0, 1, 3), ALLREDUCE]])
# Control: both ranks send first, then receive: no deadlock
write("ok", [[p2p(SEND, 0, 1, 7), p2p(RECV, 1, 0, 8)], [p2p(SEND, 1, 0, 8), p2p(RECV, 0, 1, 7)]])
PY
check_bad 'dl.0.et: node 2 ("recv") waits for a send from rank 1 with tag 8 that never comes' \
    simulate "$TMP/dl.0.et" "$TMP/dl.1.et" --as-is
check_bad 'coll.0.et: node 2 ("allreduce") waits for collective #0 of communicator (all ranks), which rank 1 never reaches' \
    simulate "$TMP/coll.0.et" "$TMP/coll.1.et" --as-is
out=$("$BIN" simulate "$TMP/ok.0.et" "$TMP/ok.1.et" --as-is --json) || fail "control set: exit $?"
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["step_ms"] > 0.01, d["step_ms"]' "$out" ||
    fail "control set: $out"
checks_done asis_deadlock
