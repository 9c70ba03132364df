#!/usr/bin/env bash
# mitosis topo: presets, files, routes, --dot, and bad input -> exit 2 with one stderr line.
set -u
BIN="$1"
ROOT="${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}"
. "$(dirname "$0")/clicheck.bash"

out=$("$BIN" topo ring:8 --link-bw 100GB/s) || fail "ring:8 exit $?"
echo "$out" | grep -q "nodes: 8 (8 GPUs" || fail "ring:8 node count: $out"
echo "$out" | grep -q "links: 16 directed" || fail "ring:8 links: $out"
echo "$out" | grep -q "bisection bandwidth: 200.00 GB/s" || fail "ring:8 bisection: $out"
echo "$out" | grep -q "route gpu0 -> gpu7: gpu0 -> gpu7 (1 hop," || fail "ring:8 route: $out"

out=$("$BIN" topo --topology dgx-h100 --route gpu0 nic3) || fail "dgx-h100 exit"
echo "$out" | grep -q "gpu0 -> sw0 -> gpu3 -> nic3" || fail "dgx-h100 route: $out"

out=$("$BIN" topo "$ROOT/tests/fixtures/topo/slowlink.json" --route gpu0 gpu2) || fail "json exit"
echo "$out" | grep -q "bottleneck 1.00 GB/s" || fail "json override: $out"

# --json carries the same facts as the text
"$BIN" topo multinode:nodes=2,gpus=4 --route gpu0 gpu5 --json >"$TMP/t.json" || fail "topo --json exit"
python3 - "$TMP/t.json" <<'PY' || fail "topo --json content: $(cat "$TMP/t.json")"
import json, sys
d = json.load(open(sys.argv[1]))
assert d["nodes"] == {"total": 22, "gpu": 8, "nic": 8, "host": 0, "switch": 6}, d["nodes"]
assert d["links"] == 48 and d["link_bw_GBps"] == {"min": 50.0, "max": 450.0}
assert d["route"]["nodes"][0] == "gpu0" and d["route"]["nodes"][-1] == "gpu5"
assert d["route"]["hops"] == len(d["route"]["nodes"]) - 1 and d["route"]["bottleneck_GBps"] == 50.0
PY
"$BIN" topo fattree:k=4 --dot "$TMP/ft.dot" >/dev/null || fail "dot exit"
grep -q "^digraph" "$TMP/ft.dot" || fail "dot content"
[ "$(grep -c -- '->' "$TMP/ft.dot")" -eq 96 ] || fail "dot edges"

check_bad "bad topology 'ring:x'" topo ring:x
check_bad "bad topology 'torus:3'" topo torus:3
check_bad "badnode.json: links\[0\].dst" topo "$ROOT/tests/fixtures/topo/badnode.json"
check_bad "badrow.csv:2:" topo "$ROOT/tests/fixtures/topo/badrow.csv"
check_bad "no-such.json" topo "$TMP/no-such.json"
check_bad "fast" topo ring:4 --link-bw fast
check_bad "unknown node 'gpu99'" topo ring:4 --route gpu0 gpu99
check_bad "no route from gpu1 to gpu0" topo "$ROOT/tests/fixtures/topo/oneway.csv" --route gpu1 gpu0
# out of range: a latency beyond 1 s (1e300 ns overflowed int64 ps), an override past 1e18 B/s
printf '{"nodes": ["gpu0", "gpu1"], "links": [{"src": "gpu0", "dst": "gpu1", "latency": 1e300}]}' >"$TMP/far.json"
check_bad "far.json: links\[0\].latency: the latency is out of range" topo "$TMP/far.json"
printf '{"nodes": ["gpu0", "gpu1"], "links": [{"src": "gpu0", "dst": "gpu1"}],
 "overrides": [{"src": "gpu0", "dst": "gpu1", "bandwidth": 1e300}]}' >"$TMP/fast.json"
check_bad "fast.json: overrides\[0\].bandwidth" topo "$TMP/fast.json"
check_bad "--link-lat needs a time" topo ring:4 --link-lat 2s
check_bad "--link-lat needs a time" topo ring:4 --link-lat 1e300s
check_bad "--link-bw needs a bandwidth" topo ring:4 --link-bw 1e19B/s
check_bad "--link-bw 100 has no unit: write 100GB/s or 800Gbps (100B/s for bytes per second)" topo ring:4 --link-bw 100
# arguments a preset does not take, and tier flags the topology does not have
check_bad "bad topology 'dgx-h100:16': dgx-h100 takes no argument '16' (use dgx-h100)" topo dgx-h100:16
check_bad "bad topology 'ring:8,k=4': ring takes no key 'k' (use ring:N\[,uni\])" topo ring:8,k=4
check_bad "fattree: k must be even\|k must be even" topo fattree:k=5
check_bad "--nic-bw does not apply to switch, which has no NIC tier" topo switch:8 --nic-bw 10GB/s
check_bad "--nic-lat does not apply to a topology file" topo "$ROOT/tests/fixtures/topo/line.csv" --nic-lat 1us
check_bad "--route needs two nodes" topo ring:4 --route gpu0
check_bad "unexpected argument 'ring:8'" topo ring:4 ring:8
out=$("$BIN" topo dgx-h100 --nic-bw 10GB/s) || fail "dgx-h100 --nic-bw exit"
echo "$out" | grep -q "10.00 GB/s .. 450.00 GB/s" || fail "dgx-h100 --nic-bw: $out"
"$BIN" topo --help | tr -s ' \n' ' ' | grep -q "dgx-h100 8 GPUs on an NVSwitch [^;]*; link tier 450GB/s, 500ns; NIC tier 50GB/s, 2us" \
    || fail "help from the presets table"
echo "topo: ok"
