# Sourced by the scripts whose python runs through libmitosis (libsim.py): libsim_python BIN ARGS...
# runs python3 ARGS with the library beside BIN usable: in a sanitizer build its runtime preloaded
# (leak reports off: they would be the interpreter's), the caller's LD_PRELOAD and ASAN_OPTIONS kept in
# MT_LIBSIM_* for the binary's own runs (libsim.py restores them at import: the CLI keeps LeakSanitizer),
# MITOSIS_LIB/MITOSIS_BIN naming the library and the binary, tests/integration on PYTHONPATH.
# MT_LIBSIM=0: python runs the binary for everything (libsim.py's Sim without the library).
# libpy BIN ARGS...: the same with the library required and always on (libsim.py's module functions:
# readers, steps, inspect summaries).
libsim_python() {
    local bin=$1 rt lib here
    shift
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    lib=$(dirname "$bin")/libmitosis.so.0
    rt=$(ldd "$lib" 2>/dev/null | awk '/lib(asan|tsan)/ {print $3; exit}')
    if [ "${MT_LIBSIM:-1}" = 0 ]; then
        PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" python3 "$@"
    elif [ -z "$rt" ]; then
        MT_LIBSIM_ON=1 MITOSIS_LIB=$lib MITOSIS_BIN=$bin PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" python3 "$@"
    else
        MT_LIBSIM_ON=1 MITOSIS_LIB=$lib MITOSIS_BIN=$bin PYTHONPATH="$here${PYTHONPATH:+:$PYTHONPATH}" \
        MT_LIBSIM_LD_PRELOAD=${LD_PRELOAD:-} MT_LIBSIM_ASAN_OPTIONS=${ASAN_OPTIONS:-} LD_PRELOAD=$rt \
        ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-} python3 "$@"
    fi
}
libpy() {
    [ -e "$(dirname "$1")/libmitosis.so.0" ] || { echo "FAIL: no libmitosis.so.0 beside $1"; return 1; }
    MT_LIBSIM=1 libsim_python "$@"
}
