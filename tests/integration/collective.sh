#!/usr/bin/env bash
# mitosis collective: the closed form of ring all-reduce, sweeps, models, bad input.
set -u
BIN="$1"
. "$(dirname "$0")/clicheck.bash"

# 2(N-1)/N S/B + 2(N-1) alpha = 1.75 * 10 ms + 14 * 0.5 us = 17507 us; busbw ~ B
out=$("$BIN" collective --op allreduce --bytes 1G --topology ring:8 --link-bw 100GB/s --link-lat 500ns) \
    || fail "allreduce exit $?"
echo "$out" | grep -Eq "^ +1000000000 +17507\.000 +57\.12 +99\.96$" || fail "allreduce row: $out"

out=$("$BIN" collective --op allgather --sweep 8M:64M --topology switch:16 --algo direct) || fail "sweep exit"
[ "$(echo "$out" | grep -c '^ ')" -eq 4 ] || fail "sweep rows: $out"

out=$("$BIN" collective --op allreduce --bytes 64M --network photonic --ranks 8) || fail "photonic exit"
echo "$out" | grep -q "network photonic" || fail "photonic header: $out"
# 20 ms circuit setup dominates a 64 MB all-reduce on 8 wafer endpoints
t=$(echo "$out" | awk '/^ /{print $2}')
awk -v t="$t" 'BEGIN{exit !(t > 20000 && t < 25000)}' || fail "photonic time $t"

out=$("$BIN" collective --op allreduce --bytes 256M --topology multinode:nodes=2,gpus=8 --algo hier) \
    || fail "hier exit"

check_bad "unknown collective 'allsum'" collective --op allsum --bytes 1G --topology ring:8
check_bad "--bytes SIZE" collective --op allreduce --topology ring:8
check_bad "--topology is required" collective --bytes 1M
check_bad "tree alltoall is not supported" collective --op alltoall --algo tree --bytes 1M --topology ring:4
check_bad "--sweep needs" collective --sweep 8G:8M --topology ring:4
check_bad "exceeds the 4 GPUs" collective --bytes 1M --topology ring:4 --ranks 8
check_bad "--network must be" collective --bytes 1M --topology ring:4 --network magic
echo "collective: ok"
