#!/usr/bin/env bash
# bench_hostmodel: one-GPU step time predicted with and without the host model against the
# traced step, on every shared trace whose steps are marked (ProfilerStep or Optimizer.step), for
# every step of the multi-step traces.
# Usage: bench/bench_hostmodel.sh [path/to/mitosis] [shared traces dir]   (prints markdown)
# Two references:
#  - one step: from the step's start to the later of its host end and its last kernel's end
#    (mitosis simulate --json: host.traced_wall_ms) against one step simulated alone ("GPU only"
#    is --host-model none). Where the step's head waits for the previous step's kernels (the
#    host runs a step ahead), one step alone starts on an idle GPU and cannot show that wait.
#  - the loop's pace (traces of several steps): the traced step period (the step window, from one
#    step's start to the next one's: inspect's time_ms.host_wall), summed over the steps, against
#    the third of three steps simulated back to back (--steps 3), summed likewise.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
bin=${1:-$here/../build/mitosis}
shared=${2:-$here/../../shared/traces}
[ -d "$shared" ] || { echo "bench_hostmodel: $shared is absent" >&2; exit 1; }
python3 - "$bin" "$shared" <<'PY'
import json, subprocess, sys
bin, shared = sys.argv[1:3]
def run(cmd, path, *args):
    r = subprocess.run([bin, cmd, path, "--json", *map(str, args)], capture_output=True, text=True)
    if r.returncode: sys.exit(f"bench_hostmodel: {cmd} {path} {args}: {r.stderr.strip()}")
    return json.loads(r.stdout)
cases = [("VGG13 H100 b512", "triosim-vgg13-h100-bs512", [None]),
         ("linear RTX 2080 Ti", "param-linear-rtx2080ti", range(40)),
         ("ResNet RTX 2080 Ti b128", "param-resnet", range(30)),
         ("toy MI250 (ROCm)", "kineto-only/minitoy-mi250-rocm.json.gz", [None])]
print("| trace | steps | wall ms (median) | one step vs its wall: mean / max | loop pace vs the traced period "
      "| GPU-only error: mean / max | launch-bound steps |")
print("|---|---|---|---|---|---|---|")
allh, allg = [], []
for label, rel, steps in cases:
    eh, eg, walls, bound, paced, period = [], [], [], 0, 0.0, 0.0
    for s in steps:
        extra = [] if s is None else ["--step", s]
        path = f"{shared}/{rel}"
        d = run("simulate", path, "--gpus", 1, "--steps", 3, *extra)
        g = run("simulate", path, "--gpus", 1, "--host-model", "none", *extra)
        wall = d["host"]["traced_wall_ms"]
        walls.append(wall)
        eh.append(abs(d["step_ms_each"][0] - wall) / wall * 100)
        eg.append(abs(g["step_ms"] - wall) / wall * 100)
        bound += d["host"]["launch_bound"]
        paced += d["step_ms_each"][-1]
        period += run("inspect", path, *extra)["time_ms"]["host_wall"]
    walls.sort()
    allh += eh; allg += eg
    pace = f"{(paced - period) / period * 100:+.2f}% ({paced / len(walls):.1f} / {period / len(walls):.1f} ms)" \
        if len(walls) > 1 else "(one step)"
    print(f"| {label} | {len(walls)} | {walls[len(walls)//2]:.3f} | {sum(eh)/len(eh):.2f}% / {max(eh):.2f}% | {pace} | "
          f"{sum(eg)/len(eg):.1f}% / {max(eg):.1f}% | {bound} of {len(walls)} |")
print(f"| all | {len(allh)} | | {sum(allh)/len(allh):.2f}% / {max(allh):.2f}% | | {sum(allg)/len(allg):.1f}% / {max(allg):.1f}% | |")
PY
