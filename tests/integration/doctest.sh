#!/usr/bin/env bash
# The docs' examples run and their shown numbers checked (tests/integration/doctest.py; the
# convention is in docs/layout.md, "Examples in the docs"): every `$ mitosis ...` of README.md and
# docs/*.md against this build's mitosis, a shown line within 0.5 % or one last digit of a printed
# one. Examples marked `# slow` run with MT_DOCTEST_SLOW=1 only; a sanitizer build (CI's) runs each
# file's first example (MT_DOCTEST_FIRST=1), a Release build all of them.
set -u
BIN=${1:?usage: doctest.sh /path/to/mitosis}
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
# A sanitizer build prints the Release build's numbers, slower: each file's first example only.
if ldd "$BIN" "$(dirname "$BIN")/libmitosis.so.0" 2>/dev/null | grep -q libasan; then export MT_DOCTEST_FIRST=${MT_DOCTEST_FIRST:-1}; fi
exec python3 "$(dirname "$0")/doctest.py" "$BIN" "$ROOT"
