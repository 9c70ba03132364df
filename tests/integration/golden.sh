#!/usr/bin/env bash
# simulate/compare --json numbers against those recorded before refactors (golden.py); first, that
# golden.py fails a case whose recording is missing (a self-check on a one-case copy).
set -uo pipefail
bin=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
here=$(cd "$(dirname "$0")" && pwd)
root=${MT_ROOT:-$(cd "$here/../.." && pwd)}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/tests/fixtures/golden"
ln -s "$root/traces" "$tmp/traces"
echo '[{"name": "unrecorded", "args": ["simulate", "traces/cpu-resmlp-b64", "--gpus", "2", "--json"]}]' \
    >"$tmp/tests/fixtures/golden/cases.json"
out=$(MT_ROOT=$tmp python3 "$here/golden.py" "$bin" 2>&1)
rc=$?
[ $rc -eq 1 ] && echo "$out" | grep -q "FAIL: unrecorded: no recording" ||
    { echo "FAIL: golden.py passes a case without its recording (exit $rc): $out"; exit 1; }
exec python3 "$here/golden.py" "$bin"
