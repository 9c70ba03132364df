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
# Every flag of every command's --help is in the man page and in that command's completion words.
for cmd in inspect simulate compare topo collective hop perfmodel cluster chakra-check; do
    "$BIN" "$cmd" --help | grep -oE '^  (-[a-zA-Z]|--[a-z0-9-]+)' | sed 's/^  //' | sort -u >"$TMP/help.$cmd"
    [ -s "$TMP/help.$cmd" ] || fail "$cmd --help lists no flags"
    while read -r f; do
        grep -qF -- "\\fB$(printf '%s' "$f" | sed 's/-/\\-/g')\\fR" "$MAN" || fail "man page lacks $cmd $f"
    done <"$TMP/help.$cmd"
    words=$(bash -c ". '$COMP'; COMP_WORDS=(mitosis $cmd -); COMP_CWORD=2; _mitosis; printf '%s\n' \"\${COMPREPLY[@]}\"" | sort -u)
    while read -r f; do
        printf '%s\n' "$words" | grep -qxF -- "$f" || fail "completion of '$cmd -' lacks $f"
    done <"$TMP/help.$cmd"
done
# Values: a choice list and a file name.
got=$(bash -c ". '$COMP'; COMP_WORDS=(mitosis simulate t --algo ''); COMP_CWORD=4; _mitosis; echo \"\${COMPREPLY[*]}\"")
want=$("$BIN" simulate --help | tr '\n' ' ' | grep -oE 'ring, tree, direct, hier, *ringflow, *relay, *treeflow or nccl' | tr -d ',' | sed 's/ or / /; s/  */ /g')
[ "$got" = "$want" ] && [ -n "$want" ] || fail "completion of --algo: '$got' (the help's choices: '$want')"
got=$(cd "$TMP" && bash -c ". '$COMP'; COMP_WORDS=(mitosis simulate t --html l); COMP_CWORD=4; _mitosis; echo \"\${COMPREPLY[*]}\"")
[ "$got" = "log" ] || fail "completion of --html l: '$got' (want the file 'log')"
got=$(bash -c ". '$COMP'; COMP_WORDS=(mitosis sim); COMP_CWORD=1; _mitosis; echo \"\${COMPREPLY[*]}\"")
[ "$got" = "simulate" ] || fail "completion of the command: '$got'"
checks_done install
