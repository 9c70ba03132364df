#!/usr/bin/env bash
# libmitosis from C: the shared library exports only mitosis_* under its soname; examples/sweep.c
# (loads a trace once, sweeps the GPU count) prints the step times `mitosis simulate` prints for
# the same runs; `cmake --install` installs library, header and pkg-config file, and the example
# builds against them with `pkg-config --cflags --libs mitosis` and prints the same table.
set -u
BIN=${1:?usage: lib_c.sh /path/to/mitosis}
. "$(dirname "$0")/clicheck.bash"
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$(dirname "$BIN")
LIB=$BUILD/libmitosis.so.0
EX=$BUILD/example_sweep
TRACE=$ROOT/traces/cpu-gpt-tiny-b8
[ -e "$LIB" ] && [ -x "$EX" ] || fail "no $LIB or $EX"
ASAN=$(ldd "$LIB" | awk '/libasan/ {print $3}')
PRE=${ASAN:+env LD_PRELOAD=$ASAN ASAN_OPTIONS=detect_leaks=0}

# Exports: only the API, and all of it (every function the header declares).
nm -D --defined-only "$LIB" | awk '{print $3}' | sort >"$TMP/syms"
bad=$(grep -v '^mitosis_' "$TMP/syms" | head -5)
[ -z "$bad" ] || fail "libmitosis exports non-API symbols: $bad"
grep -oE 'mitosis_[a-z_]+\(' "$ROOT/include/mitosis.h" | tr -d '(' | sort -u >"$TMP/decl"
missing=$(comm -23 "$TMP/decl" "$TMP/syms" | head -3)
[ -z "$missing" ] || fail "declared in mitosis.h but not exported: $missing"
readelf -d "$LIB" | grep -q 'SONAME.*\[libmitosis\.so\.0\]' || fail "soname is not libmitosis.so.0"
# The CLI holds one copy of the code (the static folders), not a second image through the library,
# and says the library's version.
! ldd "$BIN" | grep -q 'libmitosis\.so' || fail "the mitosis binary loads libmitosis (a second copy of the code)"
libver=$($PRE python3 -c 'import ctypes, sys
lib = ctypes.CDLL(sys.argv[1]); lib.mitosis_version.restype = ctypes.c_char_p
print(lib.mitosis_version().decode())' "$LIB") || fail "cannot call mitosis_version in $LIB"
[ "mitosis $libver" = "$("$BIN" --version)" ] || fail "library version $libver, CLI: $("$BIN" --version)"

# The example's table against the CLI, GPU count by GPU count.
"$EX" "$TRACE" 8 64 --tp 2 >"$TMP/table" 2>"$TMP/err" || fail "example_sweep: $(cat "$TMP/err")"
[ "$(grep -cE '^ +[0-9]+ ' "$TMP/table")" -eq 4 ] || fail "example_sweep rows: $(cat "$TMP/table")"
while read -r gpus plan ms rest; do
    want=$("$BIN" simulate "$TRACE" --gpus "$gpus" --tp 2 --json | awk -F': ' '/^  "step_ms"/ {print $2+0}')
    [ "$(printf '%.3f' "$want")" = "$ms" ] || fail "$gpus GPUs: example $ms ms, CLI $want ms"
done < <(grep -E '^ +[0-9]+ ' "$TMP/table")
# A pipeline job's rank at its traced plan: the C API shows the plan as run (dp 1 x tp 1 x pp 2).
"$EX" "$ROOT/traces/cpu-pipeline-resmlp-w2" 2 2 >"$TMP/pipe" 2>"$TMP/err" || fail "example_sweep pipeline: $(cat "$TMP/err")"
grep -qE '^ +2 +1x1x2 ' "$TMP/pipe" || fail "pipeline rank's plan through the C API: $(cat "$TMP/pipe")"
# A misspelt option: the CLI's message and exit code.
"$EX" "$TRACE" 8 8 --tpp 2 >/dev/null 2>"$TMP/err"
rc=$?
[ $rc -eq 2 ] && grep -q "unknown option '--tpp' (see mitosis simulate --help)" "$TMP/err" || fail "bad option: rc $rc, $(cat "$TMP/err")"

# Installed: library, header, pkg-config; a client built from them.
cmake --install "$BUILD" --prefix "$TMP/p" >"$TMP/log" 2>&1 || fail "cmake --install: $(tail -3 "$TMP/log")"
P=$TMP/p
PCDIR=$(dirname "$(find "$P" -name mitosis.pc | head -1)")
[ -f "$PCDIR/mitosis.pc" ] && [ -f "$P/include/mitosis.h" ] || fail "no mitosis.pc or include/mitosis.h under $P"
ls "$PCDIR"/../libmitosis.so.0* >/dev/null 2>&1 || fail "no libmitosis.so.0 beside $PCDIR"
if command -v pkg-config >/dev/null && command -v cc >/dev/null; then
    flags=$(PKG_CONFIG_PATH=$PCDIR pkg-config --cflags --libs mitosis) || fail "pkg-config mitosis"
    cc -std=c11 -Wall -Werror -o "$TMP/sweep" "$ROOT/examples/sweep.c" $flags 2>"$TMP/cc" || fail "cc: $(cat "$TMP/cc")"
    LD_LIBRARY_PATH=$PCDIR/.. $PRE "$TMP/sweep" "$TRACE" 8 64 --tp 2 >"$TMP/table2" 2>"$TMP/err" || fail "installed client: $(cat "$TMP/err")"
    cmp -s "$TMP/table" "$TMP/table2" || fail "the installed client's table differs: $(diff "$TMP/table" "$TMP/table2")"
else
    skip_part "no pkg-config or cc: the installed client is not built"
fi
"$P/bin/mitosis" --version | grep -q '^mitosis ' || fail "installed mitosis does not find its library"
checks_done lib_c
