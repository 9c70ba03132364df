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
for m in pytest pandas; do
    $PY -c "import $m" 2>/dev/null || { echo "SKIP: $PY cannot import $m (Debian: python3-$m)"; exit 77; }
done
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
