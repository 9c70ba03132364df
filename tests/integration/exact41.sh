#!/usr/bin/env bash
# Issue 41's reproductions 1, 2, 3, 4, 5, 8 against their closed forms (exact41.py).
set -euo pipefail
command -v python3 >/dev/null || exit 77
exec python3 "$(dirname "$0")/exact41.py" "$1"
