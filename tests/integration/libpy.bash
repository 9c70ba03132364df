# Sourced by scripts whose one Python process inspects and simulates through libmitosis with
# libcheck.py (readers, steps and inspect summaries; libsim.py is the simulate-side helper): libpy BIN
# ARGS... is libsim.bash's libsim_python with the library always on, MITOSIS_LIB/MITOSIS_BIN set and
# python/ on PYTHONPATH. libcheck.py gives the process the caller's environment back (MT_LIBSIM_*) for
# the `mitosis` processes it starts, so their leaks are reported as the CLI's tests report them.
. "$(dirname "${BASH_SOURCE[0]}")/libsim.bash"
libpy() {
    local bin=$1 here
    here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
    [ -e "$(dirname "$bin")/libmitosis.so.0" ] || { echo "FAIL: no libmitosis.so.0 beside $bin"; return 1; }
    MT_LIBSIM=1 MITOSIS_LIB=$(dirname "$bin")/libmitosis.so.0 MITOSIS_BIN=$bin \
        PYTHONPATH="$here/../../python:$here${PYTHONPATH:+:$PYTHONPATH}" libsim_python "$@"
}
