#!/usr/bin/env bash
# Integration: deterministic mutation fuzzing of every input mitosis reads (Kineto + ET pairs,
# plain and gzipped, the chakra ET layout, Chakra ET protobuf workloads (--as-is), TrioSim CSV, perf models, GPU specs, measured-op
# CSV, topology JSON/CSV, what-if scenarios): each mutated input must give exit 0 or exit 2
# with one stderr line naming the file or flag; never a crash, a sanitizer report, a hang, or
# NaN / negative times in --json. Seed, scale and single cases: see fuzz_inputs.py.
set -u
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
exec /usr/bin/python3 "$(dirname "$0")/fuzz_inputs.py" "$bin" "$root"
