#!/usr/bin/env bash
# The Python package (python/mitosis over libmitosis, beside the binary in the build folder) under
# pytest: tests/python/test_api.py compares its answers and refusals with the CLI's, runs two
# threads at once, records a model. In a sanitizer build the library needs the ASan runtime
# loaded first: it is preloaded into python (leak reports off: they would be the interpreter's);
# in a ThreadSanitizer build (-DMITOSIS_TSAN=ON) the TSan runtime, a data race failing the run.
set -u
BIN=${1:?usage: python_api.sh /path/to/mitosis [pytest args]}
shift
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
LIB=$(dirname "$BIN")/libmitosis.so.0
PY=/usr/bin/python3
[ -e "$LIB" ] || { echo "FAIL: no $LIB beside $BIN"; exit 1; }
# (find_spec: whether each module is installed, without paying its import, ~1.7 s; a broken one fails the run)
missing=$($PY -c 'import importlib.util as u, sys; print(" ".join(m for m in sys.argv[1:] if u.find_spec(m) is None))' \
          pytest pandas)
[ -z "$missing" ] || { echo "SKIP: $PY cannot import $missing (Debian: python3-<name>)"; exit 77; }
export MITOSIS_LIB=$LIB MITOSIS_BIN=$BIN MT_ROOT=$ROOT PYTHONPATH=$ROOT/python${PYTHONPATH:+:$PYTHONPATH}
ASAN=$(ldd "$LIB" | awk '/libasan/ {print $3}')
if [ -n "$ASAN" ]; then
    export LD_PRELOAD=$ASAN MT_ASAN=1 ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-}
fi
TSAN=$(ldd "$LIB" | awk '/libtsan/ {print $3}')
if [ -n "$TSAN" ]; then
    export LD_PRELOAD=$TSAN MT_ASAN=1 TSAN_OPTIONS=halt_on_error=1:${TSAN_OPTIONS:-}
fi
cd "$ROOT" && exec $PY -m pytest -q -p no:cacheprovider "$ROOT/tests/python" "$@"
