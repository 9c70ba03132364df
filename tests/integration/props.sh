#!/usr/bin/env bash
# Properties over ~200 seeded random plans (props.py): time parts, closed-form states and traffic per
# group kind, fold == no-fold, compare == simulate, every output format carries the JSON's numbers.
set -euo pipefail
command -v python3 >/dev/null || exit 77
exec python3 "$(dirname "$0")/props.py" "$1"
