# Shared by the bash CLI checks (sourced, not a test itself: ctest runs only *.sh here).
# Needs BIN set to the mitosis binary. Gives TMP (removed on exit), fail MESSAGE, and
# check_bad WANT ARGS...: `mitosis ARGS` exits 2 with exactly one stderr line containing WANT;
# skip_part WHY: a prerequisite is missing, the checks needing it do not run; checks_done NAME:
# the end of a script: exit 77 (skipped) when any part was skipped, else "NAME: ok" (exit 0).
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
fail() { echo "FAIL: $*"; exit 1; }
MISSING=""
skip_part() { echo "SKIP: $*"; MISSING="$MISSING; $*"; }
checks_done() {
    [ -z "$MISSING" ] || { echo "$1: every check that ran passed, but not all ran$MISSING"; exit 77; }
    echo "$1: ok"
}

check_bad() {
    local want="$1"; shift
    "$BIN" "$@" >"$TMP/o" 2>"$TMP/e"
    local rc=$?
    [ $rc -eq 2 ] || fail "'$*' exit $rc, want 2"
    [ "$(wc -l <"$TMP/e")" -eq 1 ] || fail "'$*' stderr not one line: $(cat "$TMP/e")"
    grep -q -- "$want" "$TMP/e" || fail "'$*' stderr lacks '$want': $(cat "$TMP/e")"
}
