# Shared by scripts that make many inspects and simulations of the same traces in one Python process
# over libmitosis (sourced, not a test itself): libpy BIN ARGS... runs /usr/bin/python3 ARGS with the
# library beside BIN (MITOSIS_LIB), python/ on PYTHONPATH and, in a sanitizer build, the library's
# ASan runtime preloaded (as python_api.sh; leak reports off in that process: they would be the
# interpreter's). tests/integration/libcheck.py gives such a process the CLI's environment back for
# the `mitosis` processes it starts (no preload, the caller's ASAN_OPTIONS: their leaks reported).
# Why (issue 47): a `mitosis` process under ASan costs 0.25-0.3 CPU s before it reads anything and
# re-reads its trace; the library reads each trace once (mitosis_trace_json = inspect --json,
# mitosis_result_json = simulate --json byte for byte).
libpy() {
    local bin=$1 lib asan here
    shift
    lib=$(dirname "$bin")/libmitosis.so.0
    [ -e "$lib" ] || { echo "FAIL: no $lib beside $bin"; return 1; }
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    asan=$(ldd "$lib" | awk '/libasan/ {print $3}')
    env MT_CLI_ASAN_OPTIONS="${ASAN_OPTIONS-}" MT_CLI_LD_PRELOAD="${LD_PRELOAD-}" MITOSIS_LIB="$lib" MITOSIS_BIN="$bin" \
        PYTHONPATH="$here/../../python:$here${PYTHONPATH:+:$PYTHONPATH}" \
        ${asan:+LD_PRELOAD="$asan" ASAN_OPTIONS="detect_leaks=0:${ASAN_OPTIONS:-}"} /usr/bin/python3 "$@"
}
