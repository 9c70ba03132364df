#!/usr/bin/env bash
# Integration: the predicted memory of a one-GPU step against the one measured on this CPU. The
# model of traces/cpu-gpt-tiny-b8 (its meta.json's collect.py flags) runs here under the PyTorch
# profiler with profile_memory=True (bench/act_memory.py); the bytes live after the forward above
# those at the step's start (the activations kept for backward) and the step's peak (parameters,
# optimizer state, and the most that backward holds at once: activations not yet freed, activation
# gradients, the gradients made so far) are each within 10 % of `simulate --gpus 1`'s (activations;
# peak_mem_bytes). Skipped (77) without /usr/bin/python3's torch.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
py=${MT_TORCH_PYTHON:-/usr/bin/python3}
# (find_spec: whether torch is installed, without paying its import, ~2 CPU s; a broken one fails the run)
if ! "$py" -c 'import importlib.util, sys; sys.exit(importlib.util.find_spec("torch") is None)' 2>/dev/null; then
    echo "skip: $py cannot import torch (Debian's python3-torch)"
    exit 77
fi
exec python3 - "$bin" "$root" "$(dirname "$0")" "$py" <<'PY'
import subprocess, sys
sys.path.insert(0, sys.argv[3])
from simcheck import Checker, collect_flags, rel

bin_, root, _, py = sys.argv[1:5]
c = Checker(bin_)
tr = f"{root}/traces/cpu-gpt-tiny-b8"
keep = collect_flags(tr)
p = subprocess.run([py, f"{root}/bench/act_memory.py", *keep], capture_output=True, text=True, timeout=600)
if not c.check("bench/act_memory.py runs", p.returncode == 0, p.stderr[-800:]):
    c.finish()
got = {ln.split()[0]: float(ln.split()[1]) for ln in p.stdout.splitlines() if ln.split() and ln.split()[0].endswith("_bytes")}
d = c.sim(tr, "--gpus", 1)
g = d["gpus"][0]
act, peak = g["mem_bytes"]["activations"], g["peak_mem_bytes"]
c.check(f"activations: predicted {act:.0f} B, measured {got['act_kept_bytes']:.0f} B (within 10 %)",
        rel(act, got["act_kept_bytes"]) <= 0.10, (act, got))
c.check(f"step peak: predicted {peak:.0f} B, measured {got['peak_bytes']:.0f} B (within 10 %)",
        rel(peak, got["peak_bytes"]) <= 0.10, (peak, got))
c.finish()
PY
