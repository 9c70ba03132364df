#!/usr/bin/env bash
# examples/testbed.sh — a one-machine network testbed for `mitosis emulate`: N network namespaces,
# each joined to one bridge by a veth pair shaped with tc (rate, delay, loss on both directions:
# the namespace's end shapes what the rank sends, the bridge's end what it receives; netem for
# delay and loss, tbf for the rate alone),
# then COMMAND under mpirun with one rank per namespace and OpenMPI's TCP transport restricted to
# the testbed's subnet (no shared memory). Everything is torn down on exit, failure or Ctrl-C.
#
#   examples/testbed.sh N RATE DELAY [LOSS] [--slow RANK:FACTOR] [--rt] -- COMMAND...
#   e.g. examples/testbed.sh 4 1gbit 100us -- build/mitosis emulate traces/cpu-resmlp-b64 \
#            --gpus 4 --strategy ddp --link-bw 1Gbps --link-lat 100us --bytes-scale 0.1
#
# RATE and DELAY are tc's (1gbit, 100mbit; 100us, 1ms), LOSS a percentage (0.1%). --slow R:F gives
# rank R's link RATE/F both ways. --rt runs the ranks in the real-time class (chrt -f 1): on a
# busy machine a sleeping rank then gets its CPU back at once when its deadline or data comes
# (it sleeps between polls, so it does not starve the machine; do not combine with --poll 0). One-way latency between two ranks is 2 x DELAY (two shaped
# hops), as on switch:N with --link-lat DELAY. The veths run with MTU 9000 so that TCP/IP headers
# cost < 1% of RATE. Needs root (ip netns, tc); exits 77 with a message when namespaces cannot be
# created. Extra mpirun arguments: MT_MPIRUN_ARGS.
set -u
usage() { echo "usage: $0 N RATE DELAY [LOSS] [--slow RANK:FACTOR] [--rt] -- COMMAND..." >&2; exit 2; }
[ $# -ge 4 ] || usage
N=$1 RATE=$2 DELAY=$3; shift 3
LOSS="" SLOW_RANK=-1 SLOW_F=1 RT=()
while [ $# -gt 0 ] && [ "$1" != "--" ]; do
    case "$1" in
    --slow) [ $# -ge 2 ] || usage; SLOW_RANK=${2%%:*} SLOW_F=${2#*:}; shift 2 ;;
    --rt) RT=(chrt -f 1); shift ;;
    *%) LOSS=$1; shift ;;
    *) echo "$0: unexpected argument '$1' (LOSS is a percentage, e.g. 0.1%)" >&2; exit 2 ;;
    esac
done
[ "${1:-}" = "--" ] || usage
shift
[ $# -ge 1 ] || usage
case "$N" in ''|*[!0-9]*) echo "$0: N must be a number of ranks (got '$N')" >&2; exit 2 ;; esac
[ "$N" -ge 1 ] && [ "$N" -le 200 ] || { echo "$0: N must be 1 to 200" >&2; exit 2; }
command -v tc >/dev/null && command -v ip >/dev/null || { echo "$0: skipped: needs ip and tc (iproute2)" >&2; exit 77; }
command -v mpirun >/dev/null || { echo "$0: skipped: needs mpirun (openmpi-bin)" >&2; exit 77; }

# Names unique to this run (interface names have at most 15 characters).
ID=$(( $$ % 100000 ))
NET="10.$(( 64 + ID % 64 )).$(( ID / 64 % 250 ))"
BR="mtbr$ID"
export MT_TESTBED_NET="$NET" # rank r has address $NET.(r+1), the bridge $NET.254
TMP=$(mktemp -d)
cleanup() {
    trap - EXIT INT TERM
    for ((i = 0; i < N; i++)); do ip netns del "mtns${ID}_$i" 2>/dev/null; done
    ip link del "$BR" 2>/dev/null
    rm -rf "$TMP"
}
trap cleanup EXIT
trap 'cleanup; exit 130' INT
trap 'cleanup; exit 143' TERM

# rate_of R F: tc's rate R divided by F (in bit/s).
rate_of() {
    python3 -c 'import re,sys
r,f=sys.argv[1].lower(),float(sys.argv[2])
m=re.fullmatch(r"([0-9.]+)([kmg]?)(bit|bps)?",r)
if not m: sys.exit("bad RATE "+sys.argv[1])
v=float(m.group(1))*{"":1,"k":1e3,"m":1e6,"g":1e9}[m.group(2)]*(8 if m.group(3)=="bps" else 1)
print("%dbit"%(v/f))' "$1" "$2"
}

# shape DEV RATE [NS]: netem (delay, loss and rate) when there is a delay or loss to emulate, else
# tbf (rate only; some kernels have no netem). Queues hold a window of jumbo frames.
NEED_NETEM=1
case "$DELAY" in 0|0us|0ms|0s|0ns) [ -z "$LOSS" ] && NEED_NETEM=0 ;; esac
shape() {
    local run=()
    [ $# -ge 3 ] && run=(ip netns exec "$3")
    if [ $NEED_NETEM = 1 ]; then
        if ! "${run[@]}" tc qdisc add dev "$1" root netem delay "$DELAY" ${LOSS:+loss "$LOSS"} rate "$2" limit 100000 \
            2>"$TMP/err"; then
            echo "$0: skipped: tc netem is not available here ($(head -1 "$TMP/err")): delay and loss need it (use DELAY 0)" >&2
            exit 77
        fi
    else
        "${run[@]}" tc qdisc add dev "$1" root tbf rate "$2" burst 20kb latency 5ms || exit 1
    fi
}

if ! ip link add "$BR" type bridge 2>"$TMP/err"; then
    echo "$0: skipped: cannot create network devices here ($(head -1 "$TMP/err")); run as root" >&2
    exit 77
fi
ip link set "$BR" mtu 9000 up
ip addr add "$NET.254/24" dev "$BR"
for ((i = 0; i < N; i++)); do
    ns="mtns${ID}_$i" host="mth${ID}_$i" peer="mtp${ID}_$i"
    if ! ip netns add "$ns" 2>"$TMP/err"; then
        echo "$0: skipped: cannot create network namespaces ($(head -1 "$TMP/err")); run as root" >&2
        exit 77
    fi
    ip link add "$host" mtu 9000 type veth peer name "$peer" mtu 9000 || exit 1
    ip link set "$peer" netns "$ns"
    ip link set "$host" master "$BR" up
    ip -n "$ns" link set lo up
    ip -n "$ns" addr add "$NET.$((i + 1))/24" dev "$peer"
    ip -n "$ns" link set "$peer" up
    ip netns exec "$ns" sysctl -q -w net.ipv4.tcp_slow_start_after_idle=0 >/dev/null
    r=$RATE
    [ "$i" = "$SLOW_RANK" ] && r=$(rate_of "$RATE" "$SLOW_F")
    shape "$host" "$r"
    shape "$peer" "$r" "$ns"
done

# Each rank starts inside its own namespace.
cat >"$TMP/inns" <<WRAP
#!/bin/sh
exec ip netns exec "mtns${ID}_\${OMPI_COMM_WORLD_RANK:?not started by OpenMPI's mpirun}" ${RT[*]} "\$@"
WRAP
chmod +x "$TMP/inns"
ROOT=()
[ "$(id -u)" = 0 ] && ROOT=(--allow-run-as-root)
# shellcheck disable=SC2086
# The PMIx server in mpirun must be reachable from the namespaces: listen on the bridge too.
PMIX_MCA_ptl_tcp_remote_connections=1 PMIX_MCA_ptl_tcp_if_include="$NET.0/24" \
mpirun "${ROOT[@]}" -np "$N" --oversubscribe --bind-to none --mca btl tcp,self --mca btl_tcp_if_include "$NET.0/24" \
    --mca oob_tcp_if_include "$NET.0/24" ${MT_MPIRUN_ARGS:-} "$TMP/inns" "$@"
