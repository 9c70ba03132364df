#!/usr/bin/env bash
# mitosis collective: the closed form of ring all-reduce, nccl-tests columns and --json, binary
# sweeps, models, bad input and flags that do not apply.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"

# 2(N-1)/N S/B + 2(N-1) alpha = 1.75 * 10 ms + 14 * 0.5 us = 17507 us; busbw ~ B
out=$("$BIN" collective --op allreduce --bytes 1G --topology ring:8 --link-bw 100GB/s --link-lat 500ns) \
    || fail "allreduce exit $?"
echo "$out" | grep -Eq "^ +1000000000 +250000000 +float +17507\.000 +57\.12 +99\.96$" || fail "allreduce row: $out"
echo "$out" | grep -Eq "^# +size\(B\) +count +type +time\(us\) +algbw\(GB/s\) +busbw\(GB/s\)$" || fail "header: $out"

out=$("$BIN" collective --op allgather --sweep 8M:64M --topology switch:16 --algo direct) || fail "sweep exit"
[ "$(echo "$out" | grep -c '^ ')" -eq 4 ] || fail "sweep rows: $out"
echo "$out" | grep -Eq "^ +8388608 +2097152 +float " || fail "sweep: 8M is 8 MiB: $out"

# nccl-tests -b 1K -e 1G: 21 binary sizes, the last exactly 1 GiB; --dtype sets the count
out=$("$BIN" collective --sweep 1K:1G --topology ring:4 --dtype half) || fail "1K:1G exit"
[ "$(echo "$out" | grep -c '^ ')" -eq 21 ] || fail "1K:1G rows: $out"
echo "$out" | grep -Eq "^ +1024 +512 +half " || fail "1K:1G first row: $out"
echo "$out" | grep -Eq "^ +1073741824 +536870912 +half " || fail "1K:1G last row: $out"

# --json: the same rows as the table
j=$("$BIN" collective --bytes 1G --topology ring:8 --link-bw 100GB/s --link-lat 500ns --json) || fail "json exit"
python3 - "$j" <<'PY' || fail "json: $j"
import json, sys
d = json.loads(sys.argv[1])
r = d["rows"][0]
assert d["op"] == "allreduce" and d["ranks"] == 8 and d["topology"] == "ring:8" and d["network"] == "flow"
assert r["size_bytes"] == 1000000000 and r["count"] == 250000000 and r["type"] == "float"
assert abs(r["time_us"] - 17507) < 1e-6 and abs(r["busbw_GBps"] - 99.96) < 0.01
PY

out=$("$BIN" collective --op allreduce --bytes 64M --network photonic --ranks 8) || fail "photonic exit"
echo "$out" | grep -q "network photonic" || fail "photonic header: $out"
# 20 ms circuit setup dominates a 64 MB all-reduce on 8 wafer endpoints
t=$(echo "$out" | awk '/^ /{print $4}')
awk -v t="$t" 'BEGIN{exit !(t > 20000 && t < 25000)}' || fail "photonic time $t"

# several senders waiting on each receiver's buffer (used to hang): 8 endpoints, ports 8 at
# 60.5 GB/s each; phase one sends 12.5 MB to each of 7 peers, a receiver's 64 MiB holds 5 of
# them, so 2 go one chunk later (206.612 us + 100 ns each); the all-gather phase the same:
# 20 ms of circuit set-up + 4 x 206.712 us = 20826.846 us
out=$(timeout 60 "$BIN" collective --bytes 100MB --network photonic --endpoints 8 --algo direct) \
    || fail "photonic direct exit $?"
echo "$out" | grep -Eq "^ +100000000 +25000000 +float +20826\.846 " || fail "photonic direct: $out"

out=$("$BIN" collective --op allreduce --bytes 256M --topology multinode:nodes=2,gpus=8 --algo hier) \
    || fail "hier exit"

check_bad "unknown collective 'allsum'" collective --op allsum --bytes 1G --topology ring:8
check_bad "--bytes SIZE" collective --op allreduce --topology ring:8
check_bad "--topology is required" collective --bytes 1M
check_bad "tree alltoall is not supported" collective --op alltoall --algo tree --bytes 1M --topology ring:4
check_bad "--sweep needs" collective --sweep 8G:8M --topology ring:4
check_bad "exceeds the 4 GPUs" collective --bytes 1M --topology ring:4 --ranks 8
check_bad "--network needs flow or photonic" collective --bytes 1M --topology ring:4 --network magic
check_bad "not both" collective --bytes 1M --sweep 1K:1M --topology ring:4
check_bad "--dtype needs float, " collective --bytes 1M --topology ring:4 --dtype float7
# flags that do not apply to the chosen model or topology: one line naming the flag
check_bad "--link-bw does not apply to --network photonic" collective --bytes 1M --network photonic --link-bw 1GB/s
check_bad "--ports applies to --network photonic only" collective --bytes 1M --topology ring:4 --ports 4
check_bad "--nic-bw does not apply to ring" collective --bytes 1M --topology ring:4 --nic-bw 10GB/s
check_bad "--endpoints applies without --topology" collective --bytes 1M --network photonic --topology ring:4 --endpoints 8
check_bad "dgx-h100 takes no argument '16'" collective --bytes 1M --topology dgx-h100:16
# --algo nccl: NVLS on a DGX H100 at 8 GiB, busbw 0.60 x 1.75 x 450 = 472.5 GB/s less its 25 us
# latency; forced rings 0.80 x 450 = 360 (nccl-tests: 460-480 and 360-370)
out=$("$BIN" collective --bytes 8GiB --topology dgx-h100 --algo nccl) || fail "nccl exit $?"
echo "$out" | grep -Eq " 472\.1[0-9] +nvls/Simple$" || fail "nccl nvls row: $out"
out=$("$BIN" collective --bytes 8GiB --topology dgx-h100 --algo nccl --nccl-algo ring --json) || fail "nccl ring exit"
echo "$out" | python3 -c "import json,sys; r=json.load(sys.stdin)['rows'][0]; assert r['nccl']=='ring/Simple' and 355<r['busbw_GBps']<360, r" \
    || fail "nccl ring json: $out"
check_bad "--nccl-algo applies to --algo nccl only" collective --bytes 1M --topology dgx-h100 --nccl-algo ring
check_bad "NCCL does not run allreduce as nvls" collective --bytes 1M --topology dgx-a100 --algo nccl --nccl-algo nvls
# NVLS lives in one NVLink domain, 576 GPUs at most: forced above it, refused; the tuner picks no nvls there
check_bad "at most 576 GPUs" collective --bytes 1M --topology switch:577 --algo nccl --nccl-algo nvls
"$BIN" collective --bytes 1M --topology switch:576 --algo nccl --nccl-algo nvls | grep -q "nvls/" || fail "nvls on switch:576"
out=$("$BIN" collective --bytes 1G --topology switch:577 --algo nccl) || fail "nccl switch:577 exit $?"
echo "$out" | grep -q "nvls/" && fail "the tuner chose nvls on 577 ranks: $out"
check_bad "point-to-point" collective --bytes 1M --topology dgx-h100 --algo nccl --op alltoall
# simulate --algo nccl: NCCL's choice per collective; a topology file has no tiers for its tuner
here=$(cd "$(dirname "$0")/../.." && pwd)
check_bad "--algo nccl needs a topology preset" simulate "$here/traces/cpu-resnet18-b4" --gpus 2 \
    --topology "$here/tests/fixtures/topo/line.csv" --algo nccl
out=$("$BIN" simulate "$here/traces/cpu-resnet18-b4" --gpus 16 --topology multinode:nodes=2,gpus=8 --algo nccl) \
    || fail "simulate --algo nccl exit $?"
echo "$out" | grep -q "^step time" || fail "simulate --algo nccl: $out"
# the default (--algo auto): NCCL's tuner for GPUs on a preset, rings for CPU processes (gloo) and
# on a topology file; --nccl-algo only where the tuner runs, nvls only inside one node
r18=("$here/traces/cpu-resnet18-b4" --gpus 16 --topology multinode:nodes=2,gpus=8)
out=$("$BIN" simulate "${r18[@]}" --target-gpu H100-SXM --nccl-algo tree) || fail "auto --nccl-algo tree exit $?"
echo "$out" | grep -q "^plan .*nccl collectives" || fail "auto on H100s is not nccl: $out"
out=$("$BIN" simulate "${r18[@]}") || fail "auto on CPU processes exit $?"
echo "$out" | grep -q "^plan .*ring collectives" || fail "auto on CPU processes is not ring: $out"
check_bad "--nccl-algo applies to NCCL's tuner" simulate "${r18[@]}" --nccl-algo ring
check_bad "NCCL does not run allreduce as nvls" simulate "${r18[@]}" --target-gpu H100-SXM --nccl-algo nvls
echo "collective: ok"
