# Shared by the bash CLI checks (sourced, not a test itself: ctest runs only *.sh here).
# Needs BIN set to the mitosis binary. Gives TMP (removed on exit), fail MESSAGE, and
# check_bad WANT ARGS...: `mitosis ARGS` exits 2 with exactly one stderr line containing WANT.
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }

check_bad() {
    local want="$1"; shift
    "$BIN" "$@" >"$TMP/o" 2>"$TMP/e"
    local rc=$?
    [ $rc -eq 2 ] || fail "'$*' exit $rc, want 2"
    [ "$(wc -l <"$TMP/e")" -eq 1 ] || fail "'$*' stderr not one line: $(cat "$TMP/e")"
    grep -q -- "$want" "$TMP/e" || fail "'$*' stderr lacks '$want': $(cat "$TMP/e")"
}
