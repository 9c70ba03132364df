#!/usr/bin/env bash
# Issue 31 reproductions 1-3, 6-8: states and traffic per GPU under combined strategies (memcombo.py).
set -euo pipefail
command -v python3 >/dev/null || exit 77
. "$(dirname "$0")/libsim.bash"
libsim_python "$1" "$(dirname "$0")/memcombo.py" "$1"
