#!/usr/bin/env bash
# examples/notebook.ipynb runs top to bottom (jupyter nbconvert --execute; a failing cell fails
# the test): it records a model with mitosis.record, sweeps 8 -> 1024 GPUs under three plans,
# plots them, compares plans and runs a what-if whose unperturbed step must equal the plain run's.
# Needs Debian's jupyter-nbconvert, python3-ipykernel, python3-torch, python3-matplotlib,
# python3-pandas (.ci/deps --test): exit 77 without them. In a sanitizer build the ASan runtime is
# preloaded into the kernel (as tests/integration/python_api.sh does).
set -u
BIN=${1:?usage: notebook.sh /path/to/mitosis}
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
LIB=$(dirname "$BIN")/libmitosis.so.0
PY=/usr/bin/python3
command -v jupyter-nbconvert >/dev/null || { echo "SKIP: no jupyter-nbconvert (Debian: jupyter-nbconvert)"; exit 77; }
# (find_spec: whether each module is installed, without paying its import, ~2 CPU s; a broken one fails the run)
missing=$($PY -c 'import importlib.util as u, sys; print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' \
          ipykernel torch matplotlib pandas)
[ -z "$missing" ] || { echo "SKIP: $PY cannot import $missing (Debian: python3-<name>)"; exit 77; }
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
export MITOSIS_LIB=$LIB MITOSIS_BIN=$BIN PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
ASAN=$(ldd "$LIB" | awk '/libasan/ {print $3}')
[ -z "$ASAN" ] || export LD_PRELOAD=$ASAN ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-}
# The kernel's own start-up chatter (debugger notes) goes to the log; only a failure is shown.
if ! timeout 600 jupyter-nbconvert --to notebook --execute --ExecutePreprocessor.timeout=300 \
        --output-dir "$TMP" --output run.ipynb "$ROOT/examples/notebook.ipynb" >"$TMP/log" 2>&1; then
    echo "FAIL: the notebook did not run:"; tail -30 "$TMP/log"; exit 1
fi
# Its outputs: a figure, the what-if line and the refusal, no error output.
$PY - "$TMP/run.ipynb" <<'PY' || exit 1
import json, sys
nb = json.load(open(sys.argv[1]))
outs = [o for c in nb["cells"] if c["cell_type"] == "code" for o in c.get("outputs", [])]
flat = lambda v: "".join(v) if isinstance(v, list) else v
text = "".join(flat(o.get("text", "")) for o in outs if o.get("output_type") == "stream")
assert not any(o.get("output_type") == "error" for o in outs), "an error output"
assert any("image/png" in o.get("data", {}) for o in outs), "no figure"
assert "with the slow link" in text and "unknown option '--tpp'" in text, text
PY
echo "notebook: ok"
