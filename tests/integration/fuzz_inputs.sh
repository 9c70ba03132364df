#!/usr/bin/env bash
# Integration: deterministic mutation fuzzing of every input mitosis reads (Kineto + ET pairs,
# plain and gzipped, the chakra ET layout, Chakra ET protobuf workloads (--as-is), TrioSim CSV, perf models, GPU specs, measured-op
# CSV, topology JSON/CSV, what-if scenarios): each mutated input must give exit 0 or exit 2
# with one stderr line naming the file or flag; never a crash, a sanitizer report, a hang, or
# NaN / negative times in --json. Each input runs through the binary; the rest of its simulate
# runs through libmitosis in the one python process, which must answer as the binary does
# (libsim.bash, libsim.py). Seed, scale and single cases: see fuzz_inputs.py.
set -u
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" "$(dirname "$0")/fuzz_inputs.py" "$bin" "$root"
