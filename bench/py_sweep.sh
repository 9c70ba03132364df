#!/usr/bin/env bash
# A 40-point sweep (8, 16, ..., 320 GPUs, tp 2, nodes of 8 H100s) three ways, from Python:
#   cli      40 `mitosis simulate ... --json` subprocesses, JSON parsed (what a script that shells
#            out does; each process loads the trace again);
#   python   mitosis.sweep(): libmitosis in this process, the trace loaded once, 40 runs;
#   compare  one `mitosis compare --sweep gpus=8:320:40` subprocess (rows on worker threads).
# Wall seconds and CPU seconds (user + sys, this process and its children) of each; the three
# must give the same step times. Usage: bench/py_sweep.sh [BUILD] [TRACE...]
set -eu
ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=${1:-$ROOT/build-rel}
shift || true
export MITOSIS_LIB=$BUILD/libmitosis.so.0 MITOSIS_BIN=$BUILD/mitosis PYTHONPATH=$ROOT/python
TRACES=("$@")
[ ${#TRACES[@]} -gt 0 ] || TRACES=("$ROOT/traces/cpu-gpt-tiny-b8" "$ROOT/traces/cpu-gpt-l8h16-b2")
printf '%-18s %6s %14s %14s %14s %7s\n' trace points "cli wall/cpu" "python w/c" "compare w/c" cli/py
for T in "${TRACES[@]}"; do
    /usr/bin/python3 - "$T" <<'PY'
import json, os, resource, subprocess, sys, time
import mitosis

T, BIN = sys.argv[1], os.environ["MITOSIS_BIN"]
GPUS = list(range(8, 328, 8))
common = ["--tp", "2", "--gpus-per-node", "8", "--target-gpu", "H100-SXM"]

def cpu():
    s, c = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return s.ru_utime + s.ru_stime + c.ru_utime + c.ru_stime

def timed(fn):
    w, c = time.perf_counter(), cpu()
    out = fn()
    return out, time.perf_counter() - w, cpu() - c

def cli():
    return [json.loads(subprocess.run([BIN, "simulate", T, "--gpus", str(n), "--topology",
                                       "multinode:nodes=%d,gpus=8" % (n // 8), *common, "--json"],
                                      check=True, capture_output=True).stdout)["step_ms"] for n in GPUS]

def lib():
    return list(mitosis.sweep(T, "gpus", GPUS, tp=2, topology="multinode:nodes={nodes},gpus=8",
                              target_gpu="H100-SXM")["step_ms"])

def compare():
    out = subprocess.run([BIN, "compare", T, "--sweep", "gpus=8:320:40", "--topology",
                          "multinode:nodes={nodes},gpus=8", *common, "--json"], check=True, capture_output=True)
    return [r["step_ms"] for r in json.loads(out.stdout)["rows"]]

mitosis.version()  # the library loaded before the clocks start (as an imported package is)
a, aw, ac = timed(cli)
b, bw, bc = timed(lib)
c, cw, cc = timed(compare)
assert len(a) == len(b) == len(c) == 40
for x, y, z in zip(a, b, c):
    assert abs(x - y) <= 1e-8 * x and abs(x - z) <= 1e-8 * x, (x, y, z)
print("%-18s %6d %6.2f /%6.2f %6.2f /%6.2f %6.2f /%6.2f %6.1fx" % (os.path.basename(T)[:18], 40, aw, ac, bw, bc,
                                                                  cw, cc, aw / bw))
PY
done
