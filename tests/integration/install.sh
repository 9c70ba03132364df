#!/usr/bin/env bash
# `cmake --install` puts mitosis, its man page and its bash completion under a prefix; the man
# page and the completion list exactly the flags `--help` lists, for every command (they are all
# generated from the same flag tables), and the completion completes values (choices, files).
set -u
BIN=${1:?usage: install.sh /path/to/mitosis}
. "$(dirname "$0")/clicheck.bash"
BUILD=$(dirname "$BIN")
cmake --install "$BUILD" --prefix "$TMP/p" >"$TMP/log" 2>&1 || fail "cmake --install: $(tail -3 "$TMP/log")"
P=$TMP/p
[ -x "$P/bin/mitosis" ] || fail "no $P/bin/mitosis"
"$P/bin/mitosis" --version | grep -q '^mitosis ' || fail "installed mitosis --version"
MAN=$P/share/man/man1/mitosis.1
COMP=$P/share/bash-completion/completions/mitosis
[ -s "$MAN" ] || fail "no man page at $MAN"
[ -s "$COMP" ] || fail "no bash completion at $COMP"
if command -v man >/dev/null 2>&1; then
    MANWIDTH=200 man -l "$MAN" >"$TMP/man.txt" 2>"$TMP/man.err" || fail "man -l: $(cat "$TMP/man.err")"
    grep -q "MITOSIS simulate" "$TMP/man.txt" || fail "rendered man page lacks the simulate section"
else
    skip_part "man is not installed (man-db), the page is not rendered"
fi
# Every flag of every command's --help is in the man page (as \fB--flag\fR, each - as \-) and in that
# command's completion words: the flags' list less what was found is empty (one grep per list).
export LC_ALL=C # one collation for sort and comm
for cmd in inspect simulate compare topo collective hop perfmodel cluster chakra-check; do
    "$BIN" "$cmd" --help | grep -oE '^  (-[a-zA-Z]|--[a-z0-9-]+)' | sed 's/^  //' | sort -u >"$TMP/help.$cmd"
    [ -s "$TMP/help.$cmd" ] || fail "$cmd --help lists no flags"
    sed 's/-/\\-/g; s/.*/\\fB&\\fR/' "$TMP/help.$cmd" | sort -u >"$TMP/man.want"
    grep -oF -f "$TMP/man.want" "$MAN" | sort -u >"$TMP/man.got"
    missing=$(comm -23 "$TMP/man.want" "$TMP/man.got")
    [ -z "$missing" ] || fail "man page lacks $cmd $(echo "$missing" | head -3 | tr '\n' ' ')"
    bash -c ". '$COMP'; COMP_WORDS=(mitosis $cmd -); COMP_CWORD=2; _mitosis; printf '%s\n' \"\${COMPREPLY[@]}\"" |
        sort -u >"$TMP/words"
    missing=$(comm -23 "$TMP/help.$cmd" "$TMP/words")
    [ -z "$missing" ] || fail "completion of '$cmd -' lacks $(echo "$missing" | head -3 | tr '\n' ' ')"
done
# Values: a choice list and a file name.
got=$(bash -c ". '$COMP'; COMP_WORDS=(mitosis simulate t --algo ''); COMP_CWORD=4; _mitosis; echo \"\${COMPREPLY[*]}\"")
want=$("$BIN" simulate --help | tr '\n' ' ' | grep -oE 'ring, tree, direct, hier, *ringflow, *relay, *treeflow, *nccl or auto' | tr -d ',' | sed 's/ or / /; s/  */ /g')
[ "$got" = "$want" ] && [ -n "$want" ] || fail "completion of --algo: '$got' (the help's choices: '$want')"
got=$(cd "$TMP" && bash -c ". '$COMP'; COMP_WORDS=(mitosis simulate t --html l); COMP_CWORD=4; _mitosis; echo \"\${COMPREPLY[*]}\"")
[ "$got" = "log" ] || fail "completion of --html l: '$got' (want the file 'log')"
got=$(bash -c ". '$COMP'; COMP_WORDS=(mitosis sim); COMP_CWORD=1; _mitosis; echo \"\${COMPREPLY[*]}\"")
[ "$got" = "simulate" ] || fail "completion of the command: '$got'"
# `pip install ./python` (Debian's pip in a venv, offline) carries libmitosis in the package: the
# installed package loads it with no MITOSIS_LIB, from outside the checkout (it once failed:
# "cannot load libmitosis: tried libmitosis.so.0"). Built from a copy (pip builds in the tree). The venv
# has no pip of its own (ensurepip: 8 s): Debian's pip, seen through --system-site-packages and run by
# the venv's python, installs into the venv.
LIB=$(cd "$BUILD" && pwd)/libmitosis.so.0
if /usr/bin/python3 -m venv --without-pip --system-site-packages "$TMP/venv" >"$TMP/venv.log" 2>&1 &&
   "$TMP/venv/bin/python" -m pip --version >/dev/null 2>&1; then
    cp -rL "$(dirname "$0")/../../python" "$TMP/py" && rm -rf "$TMP/py/build" "$TMP/py"/*.egg-info
    MITOSIS_LIB=$LIB "$TMP/venv/bin/python" -m pip install -q --no-index --no-build-isolation "$TMP/py" >"$TMP/pip.log" 2>&1 \
        || fail "pip install ./python: $(grep -iE 'error|mitosis:' "$TMP/pip.log" | head -3)"
    ASAN=$(ldd "$LIB" | awk '/libasan/ {print $3}')
    got=$(cd "$TMP" && env -u MITOSIS_LIB -u PYTHONPATH ${ASAN:+LD_PRELOAD=$ASAN ASAN_OPTIONS=detect_leaks=0} \
          "$TMP/venv/bin/python" -c "import mitosis, mitosis._lib as l; print(l.lib_path()); print(mitosis.version())" 2>&1) \
        || fail "the installed package does not load without MITOSIS_LIB: $got"
    case "$got" in "$TMP/venv/"*"/site-packages/mitosis/libmitosis.so.0"*) ;; *) fail "installed package's library: $got" ;; esac
    echo "$got" | tail -1 | grep -qF "$("$BIN" --version | awk '{print $2}')" || fail "carried library's version: $got"
else
    skip_part "no venv or no pip here (Debian: python3-venv, python3-pip): pip install ./python is not checked"
fi
checks_done install
