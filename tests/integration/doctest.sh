#!/usr/bin/env bash
# The docs' examples run and their shown numbers checked (tests/integration/doctest.py; the
# convention is in docs/layout.md, "Examples in the docs"): every `$ mitosis ...` of README.md and
# docs/*.md against this build's mitosis, a shown line within 0.5 % or one last digit of a printed
# one. Examples marked `# slow` run with MT_DOCTEST_SLOW=1 only (CI's sanitizer build skips them).
set -u
BIN=${1:?usage: doctest.sh /path/to/mitosis}
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
exec python3 "$(dirname "$0")/doctest.py" "$BIN" "$ROOT"
