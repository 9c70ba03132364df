#!/usr/bin/env bash
# Integration: `mitosis inspect` on the project's own traces (traces/) and its bad-input paths:
# each must be one line on stderr and exit code 2, never a crash.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

# `inspect --json` of each trace against its meta.json, in one process over libmitosis (libsim.bash;
# mitosis_trace_json is inspect --json; issue 47: one process, not one per trace); the bad-input paths
# below are the CLI's own.
. "$(dirname "$0")/libsim.bash"
libpy "$bin" - "$root/traces" <<'PY' || fail=1
import glob, json, os, sys
import libsim
fail = 0
for d in sorted(glob.glob(sys.argv[1] + "/*/")):
    n = os.path.basename(d.rstrip("/"))
    if not os.path.isfile(d + "meta.json"):
        continue
    # of the H100 recordings one per model (gpu_traces.sh reads them all; the CI's time)
    if n.startswith("h100-") and not n.startswith(("h100-llama3-8b-2blocks-", "h100-mixtral-8x7b-1block-",
                                                    "h100-resnet50-b128-fp32", "h100-gpt2-b8-", "h100-bert-base-b32-")) \
            and n != "h100-gpt-tiny-b8":
        continue
    try:
        d_ = libsim.inspect(d)
        m = json.load(open(d + "meta.json"))
        # a pipeline rank runs its ops on micro-batches: the batch its ops show is one of them
        b = m["batch"] // m["micro_batches"] if m.get("dist", {}).get("mode") == "pipeline" else m["batch"]
        assert d_["batch_size"] == b, (d_["batch_size"], b)
        # the optimizer of a ZeRO-1 rank updates its shard only (the rest arrives by broadcast into a flat
        # bucket), and mitosis takes the tensors the optimizer updates for the weights: today it counts
        # the shard of rank 0 (issue 17); the full count is right
        ok = [m["parameters"]] + m.get("zero", {}).get("shard_parameters", [])[:1]
        assert d_["param_count"] in ok, (d_["param_count"], ok)
        assert d_["link"]["unmatched"] == 0
        print(f"ok: inspect traces/{n} matches meta.json")
    except (AssertionError, libsim.Error, KeyError) as e:
        print(f"FAIL: inspect traces/{n} matches meta.json: {e!r}")
        fail = 1
    libsim.forget(d)
sys.exit(fail)
PY

bad() { # name, expected substring, args...
  local name=$1 want=$2; shift 2
  "$bin" "$@" > "$tmp/out" 2> "$tmp/err"; local rc=$?
  check "$name: exit 2" '[ $rc -eq 2 ]'
  check "$name: one line naming the problem" '[ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q -- "$want" "$tmp/err"'
}
bad "missing file" "/no/such/file.json" inspect /no/such/file.json
printf '{"traceEvents": [\n{"ph": "X",,}]}' > "$tmp/broken.json"
bad "invalid JSON with line" "broken.json:2:" inspect "$tmp/broken.json"
printf '\x1f\x8bnot really gzip' > "$tmp/bad.json.gz"
bad "unreadable gzip" "gzip" inspect "$tmp/bad.json.gz"
mkdir "$tmp/empty"
bad "directory without a trace" "no Kineto" inspect "$tmp/empty"
mkdir "$tmp/emptyfile" && cp "$root/tests/fixtures/small/et.json" "$tmp/emptyfile/" && : > "$tmp/emptyfile/kineto.json"
bad "empty Kineto file in a directory (was skipped: ET alone)" "kineto.json: empty file" inspect "$tmp/emptyfile"
bad "unknown option" "unknown option" inspect --frobnicate x
bad "bad step" "step" inspect "$root/tests/fixtures/small" --step 42
bad "unknown command" "unknown command" frobnicate
exit $fail
