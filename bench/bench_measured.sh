#!/usr/bin/env bash
# bench_measured: `mitosis simulate --gpus 1` against MEASURED step times of the project's own
# recordings (tracer/collect.py or tracer/record_suite.py folders with a meta.json).
#
# Recordings of one model, dtype, device and shape (sequence length, layers, ...) form a group.
# Within a group, every recording predicts every batch size of the group:
#   mitosis simulate SRC --gpus 1 --batch B' --perf-model M --json   vs   meta.json of B'
# The B' = B rows are the replay of a step against the timing of 10-20 later steps (profiler
# overhead and run-to-run noise); the others test batch scaling (perf model, and on GPU traces
# the host model: a launch-bound small batch keeps its host time while its kernels grow).
# Reference: step_time_ms.median (CUDA events on GPU, wall clock on CPU).
#
# Usage: bench/bench_measured.sh [path/to/mitosis] [TRACE_DIR...]   (default: traces/*/)
# Prints markdown tables: one row per (source, target) pair and model, then the mean absolute
# error per group, model and kind of row.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
shift || true
dirs=("$@")
[ ${#dirs[@]} -gt 0 ] || dirs=("$here"/../traces/*/)
[ -x "$bin" ] || { echo "bench_measured: $bin is not an executable (build first)" >&2; exit 2; }
python3 - "$bin" "${dirs[@]}" <<'PY'
import json, os, subprocess, sys
from collections import defaultdict
bin, dirs = sys.argv[1], sys.argv[2:]
# (perf model, calibrated): --calibrate scales the source's times to its own measured step first,
# which takes the profiler's slowdown out (cli/calibrate.h); its same-batch rows are exact by
# construction and left out.
VARIANTS = [("trace", False), ("linear", False), ("trace", True), ("linear", True)]
SHAPE = ("seq_len", "layers", "hidden", "heads", "vocab", "input_size", "optimizer", "torch_threads")

def load_meta(d):
    try:
        m = json.load(open(os.path.join(d, "meta.json")))
        return m if m.get("step_time_ms", {}).get("median") else None
    except (OSError, ValueError):
        return None

groups = defaultdict(list)
for d in dirs:
    d = d.rstrip("/")
    m = load_meta(d)
    if m is None:
        print(f"bench_measured: {d}: no meta.json with a measured step, skipped", file=sys.stderr)
        continue
    key = (m["model"], m.get("dtype", "fp32"), m.get("device_name", "?"),
           json.dumps({k: m.get(k) for k in SHAPE}, sort_keys=True))
    groups[key].append((m["batch"], d, m))

def simulate(src, batch, model, cal):
    r = subprocess.run([bin, "simulate", src, "--gpus", "1", "--batch", str(batch),
                        "--perf-model", model, "--json"] + (["--calibrate"] if cal else []),
                       capture_output=True, text=True)
    if r.returncode:
        sys.exit(f"bench_measured: {src} --batch {batch} --perf-model {model}: {r.stderr.strip()}")
    return json.loads(r.stdout)

print("| model | dtype | device | source batch | target batch | perf model | calibrated | host model | "
      "predicted ms | measured ms | error |")
print("|---|---|---|---|---|---|---|---|---|---|---|")
summary = defaultdict(list)
for key in sorted(groups, key=lambda k: (k[0], k[1], k[2])):
    rec = sorted(groups[key], key=lambda r: r[0])
    model, dtype, dev = key[0], key[1], key[2]
    dev_short = dev.split(" (")[0]
    for sb, sdir, _ in rec:
        for tb, _, tm in rec:
            meas = tm["step_time_ms"]["median"]
            for pm, cal in VARIANTS:
                if cal and sb == tb:
                    continue
                s = simulate(sdir, tb, pm, cal)
                err = (s["step_ms"] - meas) / meas * 100
                kind = "same batch" if sb == tb else "other batch"
                name = pm + (" + calibrate" if cal else "")
                summary[(model, dtype, dev_short, name, kind)].append(abs(err))
                print(f"| {model} | {dtype} | {dev_short} | {sb} | {tb} | {pm} | {'yes' if cal else 'no'} | "
                      f"{s['host_model']} | {s['step_ms']:.2f} | {meas:.2f} | {err:+.1f}% |")
print()
print("| model | dtype | device | perf model, rows | rows | mean abs error | max abs error |")
print("|---|---|---|---|---|---|---|")
for (model, dtype, dev, pm, kind), errs in sorted(summary.items()):
    print(f"| {model} | {dtype} | {dev} | {pm}, {kind} | {len(errs)} | "
          f"{sum(errs) / len(errs):.1f}% | {max(errs):.1f}% |")
PY
