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
COMP, SEND, RECV = 4, 5, 6
for r in (0, 1):
    peer = 1 - r
    nodes = [node(1, "compute", COMP, dur=10),
             node(2, "recv", RECV, [1], attrs=(("comm_src", peer), ("comm_dst", r), ("comm_tag", 7 + peer), ("comm_size", 1024))),
             node(3, "send", SEND, [2], attrs=(("comm_src", r), ("comm_dst", peer), ("comm_tag", 7 + r), ("comm_size", 1024)))]
    with open(f"{d}/dl.{r}.et", "wb") as f:
        f.write(msg(fb(1, b"0.0.4")) + b"".join(msg(n) for n in nodes))
# A collective one rank never reaches: rank 0 all-reduces, then sends; rank 1 receives first
COLL = 7
ar = (("comm_type", 0), ("comm_size", 4096))
r0 = [node(1, "compute", COMP, dur=10), node(2, "allreduce", COLL, [1], attrs=ar),
      node(3, "send", SEND, [2], attrs=(("comm_src", 0), ("comm_dst", 1), ("comm_tag", 3), ("comm_size", 1024)))]
r1 = [node(1, "compute", COMP, dur=10),
      node(2, "recv", RECV, [1], attrs=(("comm_src", 0), ("comm_dst", 1), ("comm_tag", 3), ("comm_size", 1024))),
      node(3, "allreduce", COLL, [2], attrs=ar)]
for r, nodes in ((0, r0), (1, r1)):
    with open(f"{d}/coll.{r}.et", "wb") as f:
        f.write(msg(fb(1, b"0.0.4")) + b"".join(msg(n) for n in nodes))
# Control: both ranks send first, then receive: no deadlock
for r in (0, 1):
    peer = 1 - r
    nodes = [node(1, "compute", COMP, dur=10),
             node(2, "send", SEND, [1], attrs=(("comm_src", r), ("comm_dst", peer), ("comm_tag", 7 + r), ("comm_size", 1024))),
             node(3, "recv", RECV, [1], attrs=(("comm_src", peer), ("comm_dst", r), ("comm_tag", 7 + peer), ("comm_size", 1024)))]
    with open(f"{d}/ok.{r}.et", "wb") as f:
        f.write(msg(fb(1, b"0.0.4")) + b"".join(msg(n) for n in nodes))
PY
check_bad 'dl.0.et: node 2 ("recv") waits for a send from rank 1 with tag 8 that never comes' \
    simulate "$TMP/dl.0.et" "$TMP/dl.1.et" --as-is
check_bad 'coll.0.et: node 2 ("allreduce") waits for collective #0 of communicator (all ranks), which rank 1 never reaches' \
    simulate "$TMP/coll.0.et" "$TMP/coll.1.et" --as-is
out=$("$BIN" simulate "$TMP/ok.0.et" "$TMP/ok.1.et" --as-is --json) || fail "control set: exit $?"
python3 -c 'import json, sys; d = json.loads(sys.argv[1]); assert d["step_ms"] > 0.01, d["step_ms"]' "$out" ||
    fail "control set: $out"
checks_done asis_deadlock
