#!/usr/bin/env bash
# Properties over ~200 seeded random plans (props.py): time parts, closed-form states and traffic per
# group kind, fold == no-fold, compare == simulate, every output format carries the JSON's numbers.
# python simulates through libmitosis (libsim.bash, libsim.py); every 5th plan runs the binary too.
set -euo pipefail
command -v python3 >/dev/null || exit 77
. "$(dirname "$0")/libsim.bash"
libsim_python "$1" "$(dirname "$0")/props.py" "$1"
