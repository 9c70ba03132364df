#!/usr/bin/env bash
# simulate/compare --json numbers against those recorded before refactors (golden.py).
set -euo pipefail
exec python3 "$(dirname "$0")/golden.py" "$1"
