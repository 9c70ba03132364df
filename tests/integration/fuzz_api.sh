#!/usr/bin/env bash
# Integration: deterministic misuse fuzzing of libmitosis (NULL and bad arguments to every entry
# point, through ctypes) and of the Python package (wrong types and values): every call returns,
# a NULL pointer is MITOSIS_EINVAL naming the argument, Python raises only mitosis.Error; never a
# signal or a sanitizer report (issue 42). Seed and scale: see fuzz_api.py.
set -u
BIN=${1:?usage: fuzz_api.sh /path/to/mitosis}
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
LIB=$(dirname "$BIN")/libmitosis.so.0
[ -e "$LIB" ] || { echo "FAIL: no $LIB beside $BIN"; exit 1; }
export MITOSIS_LIB=$LIB
ASAN=$(ldd "$LIB" | awk '/libasan/ {print $3}')
if [ -n "$ASAN" ]; then # the library's sanitizer runtime first (leak reports off: the interpreter's)
    export LD_PRELOAD=$ASAN ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-}
fi
exec /usr/bin/python3 "$ROOT/tests/integration/fuzz_api.py" "$BIN" "$ROOT"
