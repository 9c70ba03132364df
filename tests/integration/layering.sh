#!/usr/bin/env bash
# The include graph (docs/layout.md "Layout"): the data path runs one way, so a folder includes
# only its own headers and those of folders before it in ORDER below; and cli/ is a client of
# run/ and util/ only (it parses argv and calls run/), but for the three edges named in CLI_EXTRA
# (a command whose engine is a peer of run/, the version from libmitosis). A new edge that points
# down the list, or from cli/ into report/, tracer/, netmodels/ ..., fails here with the file and
# the line. Reads the sources only (the binary argument is not used); one awk pass.
set -u
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
cd "$ROOT" || exit 1
ORDER="util tracer perfmodel extrapolate network netmodels sim report run emulate serve include lib cli"
CLI_ALLOWED="cli run util"
CLI_EXTRA="cli/cmd_serve.c:serve/serve.h cli/cmd_emulate.c:emulate/emulate.h cli/main.c:include/mitosis.h"
files=()
for dir in $ORDER; do
    for f in "$dir"/*.[ch]; do [ -e "$f" ] && files+=("$f"); done
done
awk -v order="$ORDER" -v cli_ok="$CLI_ALLOWED" -v cli_extra="$CLI_EXTRA" '
BEGIN {
    n = split(order, o, " "); for (i = 1; i <= n; i++) rank[o[i]] = i
    split(cli_ok, a, " "); for (i in a) ok[a[i]] = 1
    split(cli_extra, b, " "); for (i in b) extra[b[i]] = 1
}
/^[ \t]*#[ \t]*include[ \t]*"/ {
    inc = $0; sub(/^[^"]*"/, "", inc); sub(/".*/, "", inc)
    to = inc; sub(/\/.*/, "", to)
    if (!(to in rank)) next                       # not a project folder (generated: chakra.pb-c.h)
    from = FILENAME; sub(/\/.*/, "", from)
    if (rank[to] > rank[from]) {
        printf "FAIL: %s:%d includes %s: %s/ comes after %s/ in the data path (docs/layout.md)\n", FILENAME, FNR, inc, to, from
        bad = 1
    } else if (from == "cli" && !(to in ok) && !((FILENAME ":" inc) in extra)) {
        printf "FAIL: %s:%d includes %s: cli/ is a client of run/ and util/ only (put the work behind a run/ call)\n", FILENAME, FNR, inc
        bad = 1
    }
}
END {
    if (bad) exit 1
    printf "layering: ok (%d folders, %d files; cli/ -> run/ and util/)\n", n, ARGC - 1
}' "${files[@]}"
