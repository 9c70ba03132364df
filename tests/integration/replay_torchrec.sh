#!/usr/bin/env bash
# Integration: the public TorchRec rank (HolisticTraceAnalysis tests/data/
# negative_queue_length_values_check/rank0.json.gz, rank 0 of 16 A100s; not shipped: extract it
# into MT_HTA_DIR, default /tmp/hta, as docs/replay.md says; exit 77 when absent) replayed at its
# own plan: 16 GPUs, the network fitted to its NCCL kernels, and the replay far below the traced
# step with the blocking host waits (the copies of sparse_data_dist, > 100 ms) named as unexplained.
# Usage: bash replay_torchrec.sh /path/to/mitosis
set -u
bin=${1:?usage: replay_torchrec.sh MITOSIS}
hta=${MT_HTA_DIR:-/tmp/hta}/negative_queue_length_values_check/rank0.json.gz
[ -f "$hta" ] || { echo "skip: TorchRec rank trace absent ($hta)"; exit 77; }
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-replay-tr.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
"$bin" simulate "$hta" --json > "$tmp/tr.json" 2>/dev/null
check "TorchRec rank 0 of 16: replay below the traced step, host waits named" 'python3 -c "
import json; s=json.load(open(\"$tmp/tr.json\")); r=s[\"replay\"]
assert s[\"plan\"][\"gpus\"]==16 and s[\"comm_fit\"][\"on\"], s[\"plan\"]
assert r[\"error_pct\"] < -5 and any(\"host waits\" in u[\"what\"] and u[\"us\"] > 1e5 for u in r[\"unexplained\"]), r"'


[ $fails -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
exit 0
