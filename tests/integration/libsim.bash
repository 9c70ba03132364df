# Sourced by the scripts whose python simulates through libmitosis (libsim.py): libsim_python BIN ARGS...
# runs python3 ARGS with the library beside BIN usable: in a sanitizer build its runtime preloaded
# (leak reports off: they would be the interpreter's), the caller's LD_PRELOAD and ASAN_OPTIONS kept in
# MT_LIBSIM_* for the binary's own runs (libsim.py restores them there: the CLI keeps LeakSanitizer).
# MT_LIBSIM=0: python runs the binary for everything (libsim.py's Sim without the library).
libsim_python() {
    local bin=$1 rt
    shift
    rt=$(ldd "$(dirname "$bin")/libmitosis.so.0" 2>/dev/null | awk '/lib(asan|tsan)/ {print $3; exit}')
    if [ "${MT_LIBSIM:-1}" = 0 ]; then
        python3 "$@"
    elif [ -z "$rt" ]; then
        MT_LIBSIM_ON=1 python3 "$@"
    else
        MT_LIBSIM_ON=1 MT_LIBSIM_LD_PRELOAD=${LD_PRELOAD:-} MT_LIBSIM_ASAN_OPTIONS=${ASAN_OPTIONS:-} LD_PRELOAD=$rt \
        ASAN_OPTIONS=detect_leaks=0:${ASAN_OPTIONS:-} python3 "$@"
    fi
}
