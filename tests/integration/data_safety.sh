#!/usr/bin/env bash
# Integration (issue 42, "nothing lost"): outputs never destroy inputs, every failed write fails,
# configuration files are read bounded, the TrioSim reader is linear, --gpus has one bound.
# Each numbered case is the issue's reproduction; after every case each input is byte-identical
# (sha256) and a refusal is the CLI's: exit 2 and one stderr line "mitosis COMMAND: ...".
#  1. a failed compare never deletes its input (--html TRACE/kineto.json.gz, TRACE/meta.json)
#  2. outputs never overwrite inputs: simulate --html/--timeline, perfmodel fit -o, cluster --html /
#     --timeline onto the job file, a trace file, the topology file; a hard link, a symbolic link,
#     a trace given as files, --scenario and topo --dot onto their input; two outputs on one path
#  3. stdout on /dev/full fails (simulate --json, inspect, compare --json, topo, collective); and
#     on a full filesystem (a 64 KiB tmpfs, when mount works: root)
#  4. --chakra / --kineto never mix runs (16 then 8 GPUs: 8 files, --as-is runs 8 ranks); a folder
#     holding files of ours that no manifest lists is refused; never into the trace's own folder
#  5. --csv on a full filesystem leaves no ops.csv; a failed --html leaves the old file
# 10. /dev/zero as --topology, --scenario, topo, a cluster file's "topology", --gpu-specs, --model:
#     one line, quickly
# 11. TrioSim rows 4000 -> 16000: CPU time grows under 9x (linear: 4x; the old reader: ~17x)
# 13. --gpus beyond the bound is refused by the flag check naming --gpus, and switch:N agrees
set -u
python3() { /usr/bin/python3 "$@"; } # Debian's (a pyenv shim first on PATH: ~0.8 CPU s a call)
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d)
mnt=""
cleanup() { [ -n "$mnt" ] && umount "$mnt" 2>/dev/null; rm -rf "$tmp"; }
trap cleanup EXIT
fail=0
ok() { echo "ok: $1"; }
bad() { echo "FAIL: $1"; fail=1; }
cd "$tmp" || exit 1
cp -r "$root/traces/cpu-gpt-tiny-b4" tr
cp "$root/tests/fixtures/cluster/leafspine2.json" .
printf '{"topology": "leafspine2.json", "jobs": [{"name": "a", "trace": "tr", "args": ["--gpus", "2", "--host-model", "none"]}]}\n' > jobs.json
printf '{"seed": 1}\n' > scen.json
inputs="tr/kineto.json.gz tr/et.json.gz tr/meta.json jobs.json leafspine2.json scen.json"
sha256sum $inputs > hashes
unchanged() { sha256sum --quiet -c hashes > /dev/null 2>&1; }

# refused NAME CMD...: the CLI's refusal (docs/usage.md "Exit codes": exit 2, one stderr line
# "mitosis COMMAND: ..."; not another non-zero exit: 127, a missing binary, or a crash), every input unchanged
refused() {
    local name=$1; shift
    "$@" > out.txt 2> err.txt
    local rc=$? lines
    lines=$(wc -l < err.txt)
    if [ $rc -eq 2 ] && [ "$lines" -eq 1 ] && grep -q '^mitosis [a-z]*: ' err.txt && unchanged; then
        ok "$name: exit $rc, $(cut -c1-110 err.txt)"
    else bad "$name: exit $rc, $lines stderr lines, inputs $(unchanged && echo unchanged || echo CHANGED): $(head -c 300 err.txt)"; fi
}

# 1.
refused "1 compare --html the trace's own file" "$bin" compare tr --gpus 4 --host-model none --html tr/kineto.json.gz
refused "1 compare --html meta.json" "$bin" compare tr --gpus 4 --host-model none --html tr/meta.json
# 2.
refused "2 simulate --html onto the trace" "$bin" simulate tr --gpus 2 --html tr/kineto.json.gz
refused "2 simulate --timeline onto the ET" "$bin" simulate tr --gpus 2 --timeline tr/et.json.gz
refused "2 simulate --html a new file inside the trace folder" "$bin" simulate tr --gpus 2 --html tr/report.html
refused "2 perfmodel fit -o onto the trace" "$bin" perfmodel fit tr -o tr/kineto.json.gz
refused "2 cluster --html onto its job file" "$bin" cluster jobs.json --html jobs.json
refused "2 cluster --timeline onto a job's trace" "$bin" cluster jobs.json --timeline tr/kineto.json.gz
refused "2 cluster --html onto its topology file" "$bin" cluster jobs.json --html leafspine2.json
ln tr/kineto.json.gz hard.json.gz
ln -s "$tmp/tr/et.json.gz" sym.json.gz
refused "2 --html onto a hard link of the trace" "$bin" simulate tr --gpus 2 --html hard.json.gz
refused "2 --timeline onto a symbolic link to the trace" "$bin" simulate tr --gpus 2 --timeline sym.json.gz
refused "2 trace given as files, --html onto one" "$bin" simulate tr/kineto.json.gz tr/et.json.gz --gpus 2 --html tr/et.json.gz
refused "2 --scenario's file as --html" "$bin" simulate tr --gpus 2 --scenario scen.json --html scen.json
refused "2 topo --dot onto its topology file" "$bin" topo leafspine2.json --dot leafspine2.json
refused "2 --html and --timeline on one path" "$bin" simulate tr --gpus 2 --html same.out --timeline same.out
[ ! -e same.out ] && ok "2 nothing written for the refused pair" || bad "2 same.out was written"
"$bin" simulate tr --gpus 2 --host-model none --html ok.html --timeline ok.json > /dev/null 2>&1 && [ -s ok.html ] &&
    head -c 15 ok.html | grep -q '<!DOCTYPE html>' && [ -z "$(ls -A | grep mitosis-)" ] && unchanged &&
    ok "2 a lawful --html / --timeline is written, no temporary left" || bad "2 lawful outputs"

# 3.
if [ -w /dev/full ]; then
    refused "3 simulate --json > /dev/full" sh -c "'$bin' simulate tr --gpus 2 --json > /dev/full"
    refused "3 inspect > /dev/full" sh -c "'$bin' inspect tr > /dev/full"
    refused "3 compare --json > /dev/full" sh -c "'$bin' compare tr --gpus 4 --host-model none --json > /dev/full"
    refused "3 topo > /dev/full" sh -c "'$bin' topo switch:8 > /dev/full"
    refused "3 collective > /dev/full" sh -c "'$bin' collective --topology switch:8 --op allreduce --bytes 1MB > /dev/full"
    refused "3 --html /dev/full" "$bin" simulate tr --gpus 2 --html /dev/full
else
    echo "skip: 3 (no /dev/full)"
fi
mkdir full
if [ "$(id -u)" = 0 ] && mount -t tmpfs -o size=1m tmpfs full 2> /dev/null; then
    mnt=$tmp/full
    "$bin" simulate tr --gpus 2 --host-model none --timeline full/t.json --timeline-gpus 0 > /dev/null 2>&1
    old=$(sha256sum < full/t.json)
    head -c 2000000 /dev/zero > full/filler 2> /dev/null # now full
    refused "3 simulate --json > a full filesystem" sh -c "'$bin' simulate tr --gpus 64 --json > full/o.json"
    rm -f full/o.json
    # 5.
    refused "5 --csv on a full filesystem" "$bin" simulate tr --gpus 64 --csv full/c
    [ ! -e full/c ] && ok "5 no ops.csv, no folder, no temporary left" || bad "5 left: $(ls -AR full)"
    refused "5 a failed --timeline on a full filesystem" "$bin" simulate tr --gpus 64 --timeline full/t.json
    [ "$(sha256sum < full/t.json)" = "$old" ] && [ "$(ls -A full | wc -l)" -eq 2 ] &&
        ok "5 the old timeline stays, no temporary" || bad "5 old timeline changed or temporary left: $(ls -A full)"
else
    echo "skip: 3/5 full-filesystem cases (mounting a tmpfs needs root)"
fi

# 4.
n_et() { ls "$1" | grep -c '^mitosis\.[0-9]*\.et$'; }
"$bin" simulate tr --gpus 16 --host-model none --chakra ck > /dev/null 2>&1
"$bin" simulate tr --gpus 8 --host-model none --chakra ck > /dev/null 2>&1
if [ "$(n_et ck)" -eq 8 ] && "$bin" simulate ck --as-is 2>&1 | grep -q ' 8 ranks'; then ok "4 --chakra 16 then 8: 8 files, --as-is runs 8 ranks"
else bad "4 --chakra mixed runs: $(n_et ck) files"; fi
"$bin" simulate tr --gpus 8 --host-model none --kineto kt > /dev/null 2>&1
"$bin" simulate tr --gpus 4 --host-model none --kineto kt > /dev/null 2>&1
[ "$(ls kt | grep -c '^mitosis_rank[0-9]*\.pt\.trace\.json$')" -eq 4 ] && ok "4 --kineto 8 then 4: 4 files" ||
    bad "4 --kineto keeps earlier ranks: $(ls kt)"
mkdir foreign && touch foreign/mitosis_rank7.pt.trace.json
refused "4 --kineto into a folder with unrecorded files of ours" "$bin" simulate tr --gpus 2 --kineto foreign
refused "4 --kineto into the trace's own folder" "$bin" simulate tr --gpus 2 --kineto tr
refused "4 --chakra into the trace's own folder" "$bin" simulate tr --gpus 2 --chakra tr
refused "4 --csv into the folder of a trace given as files" "$bin" simulate tr/kineto.json.gz tr/et.json.gz --gpus 2 --csv tr
"$bin" simulate tr --gpus 2 --host-model none > /dev/null 2>&1 && ok "4 the trace still loads" || bad "4 the trace no longer loads"

# 10.
# quickly: at most 10 CPU s (the children's, from bash's `times`, run in this shell; wall time is the
# machine's load: 13 s under a load of 17 on the 2-core VM) and 20 s of wall time (timeout)
cpu_s() { awk 'END { split($1, u, "m"); split($2, s, "m"); print u[1] * 60 + u[2] + s[1] * 60 + s[2] }' "$1"; }
zero_refused() {
    local name=$1; shift
    times > "$tmp/times0"
    refused "$name" timeout 20 "$@"
    times > "$tmp/times1"
    awk -v a="$(cpu_s "$tmp/times0")" -v b="$(cpu_s "$tmp/times1")" 'BEGIN { exit !(b - a <= 10) }' ||
        bad "$name took $(cpu_s "$tmp/times0") -> $(cpu_s "$tmp/times1") CPU s"
}
zero_refused "10 --topology /dev/zero" "$bin" simulate tr --gpus 2 --topology /dev/zero
zero_refused "10 --scenario /dev/zero" "$bin" simulate tr --gpus 2 --scenario /dev/zero
zero_refused "10 topo /dev/zero" "$bin" topo /dev/zero
zero_refused "10 --gpu-specs /dev/zero" "$bin" simulate tr --gpus 2 --gpu-specs /dev/zero
zero_refused "10 --model /dev/zero" "$bin" simulate tr --gpus 2 --perf-model linear --model /dev/zero
printf '{"topology": "/dev/zero", "jobs": [{"name": "a", "trace": "tr", "args": ["--gpus", "2"]}]}\n' > zero.json
zero_refused "10 a cluster file's topology /dev/zero" "$bin" cluster zero.json
zero_refused "10 cluster /dev/zero" "$bin" cluster /dev/zero

# 11.
python3 - "$bin" "$root" "$tmp" <<'PY' || fail=1
import os, resource, subprocess, sys
bin_, root, tmp = sys.argv[1:4]
def cpu(rows):
    d = f"{tmp}/tri{rows}"
    subprocess.run([sys.executable, f"{root}/bench/gen_triosim.py", str(rows), d], check=True)
    r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
    p = subprocess.run([bin_, "inspect", d], capture_output=True)
    r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
    assert p.returncode == 0, p.stderr
    return (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)
a, b = cpu(4000), cpu(16000)
ratio = b / max(a, 1e-3)
ok = ratio < 9 or b < 0.5
print(f"{'ok' if ok else 'FAIL'}: 11 TrioSim 4000 rows {a:.2f} s CPU, 16000 rows {b:.2f} s: {ratio:.1f}x (linear 4x)")
sys.exit(0 if ok else 1)
PY

# 13.
refused "13 --gpus 1048577" "$bin" simulate tr --gpus 1048577
grep -q -- '--gpus' err.txt && ! grep -q 'switch:' err.txt && ok "13 the refusal names --gpus" || bad "13 message: $(cat err.txt)"
max=$(sed -n 's/.*in 1\.\.\([0-9]*\).*/\1/p' err.txt)
if [ -n "$max" ]; then
    "$bin" topo "switch:$max" > /dev/null 2>&1 && ! "$bin" topo "switch:$((max + 1))" > /dev/null 2>&1 &&
        ok "13 switch:N takes the same bound ($max)" || bad "13 switch:N disagrees with --gpus's bound $max"
    # the node presets reach it as nodes x gpus: one node more is refused in one line naming the bound
    refused "13 multinode:nodes=$((max / 8 + 1)),gpus=8" "$bin" topo "multinode:nodes=$((max / 8 + 1)),gpus=8"
    grep -q "at most $max" err.txt && ok "13 multinode names the bound $max" || bad "13 multinode message: $(cat err.txt)"
fi
unchanged && ok "every input byte-identical at the end" || bad "an input changed"
exit $fail
