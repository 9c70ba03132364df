#!/usr/bin/env python3
"""bench/blocks.py — `simulate --blocks N` against the whole model: for each plan, the model of N
blocks traced whole against the same plan simulated from a slice of it (the k-block trace repeated to
N with --blocks N): step time, per-GPU memory (parameters, gradients, optimizer state, activations)
and traffic, and the whole model's measured step (meta.json). Used by bench/blocks.sh (the table)
and tests/integration/blocks.sh (the bounds).

usage: blocks.py MITOSIS WHOLE SLICE N [--tol PCT] [--mem-tol PCT] [--worst-tol PCT] [--plans 'P1;P2;...']
                 [--flags 'FLAGS']   (FLAGS: given to every run of both, e.g. --calibrate)
Exit 1 when a plan's step differs by more than --tol %, the parameters, gradients and optimizer state
summed over the GPUs by more than --mem-tol %, or the worst GPU's parameters, optimizer state,
activations or traffic by more than --worst-tol %; 2 on a failed run.
"""
import json
import subprocess
import sys

PLANS = ["--gpus 1", "--gpus 2 --tp 2", "--gpus 2 --pp 2", "--gpus 4 --pp 4", "--gpus 4 --fsdp",
         "--gpus 4 --zero 3", "--gpus 4 --dp 2 --tp 2"]
PARTS = ("params", "grads", "optimizer", "activations")


def run(binary, trace, plan, extra):
    cmd = [binary, "simulate", trace] + plan.split() + extra + ["--json"]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        sys.stderr.write("blocks.py: %s failed (%d): %s" % (" ".join(cmd), p.returncode, p.stderr))
        sys.exit(2)
    return json.loads(p.stdout)


def worst(d, key):
    """The largest per-GPU value of gpus[].mem_bytes[key] (key 'traffic': all traffic bytes)."""
    if key == "traffic":
        return max(sum(g["traffic_bytes"].values()) for g in d["gpus"])
    return max(g["mem_bytes"][key] for g in d["gpus"])


def total(d):
    """Parameters, gradients and optimizer state summed over the GPUs."""
    return sum(g["mem_bytes"][k] for g in d["gpus"] for k in ("params", "grads", "optimizer"))


def pct(a, b):
    return 100.0 * (a - b) / b if b else (0.0 if a == b else float("inf"))


def parse(argv, opts):
    """(positional arguments, opts updated by the --name VALUE pairs of argv[1:])."""
    args = []
    it = iter(argv[1:])
    for a in it:
        if a in opts:
            opts[a] = next(it)
        else:
            args.append(a)
    return args, opts


def main(argv):
    args, opts = parse(argv, {"--tol": "3", "--mem-tol": "1", "--worst-tol": "1", "--plans": ";".join(PLANS),
                              "--flags": ""})
    binary, whole, slc, n = args
    tol, mem_tol, worst_tol = float(opts["--tol"]), float(opts["--mem-tol"]), float(opts["--worst-tol"])
    meta = json.load(open(whole + "/meta.json"))
    measured = meta["step_time_ms"]["median"]
    print("%-24s %10s %10s %8s %8s %8s %8s %8s %9s %10s" % ("plan", "whole ms", "slice ms", "step %", "state %",
                                                              "params %", "optim %", "acts %", "traffic %",
                                                              "measured"))
    bad = 0
    for plan in [p for p in opts["--plans"].split(";") if p.strip()]:
        extra = opts["--flags"].split()
        a = run(binary, whole, plan, extra)
        b = run(binary, slc, plan, extra + ["--blocks", n])
        e = pct(b["step_ms"], a["step_ms"])
        m = {k: pct(worst(b, k), worst(a, k)) for k in PARTS + ("traffic",)}
        st = pct(total(b), total(a))
        one = plan.strip() == "--gpus 1"
        print("%-24s %10.3f %10.3f %+8.2f %+8.2f %+8.2f %+8.2f %+8.2f %+9.2f %10s" % (
            plan, a["step_ms"], b["step_ms"], e, st, m["params"], m["optimizer"], m["activations"], m["traffic"],
            "%.3f" % measured if one else "-"))
        if abs(e) > tol or abs(st) > mem_tol or any(abs(v) > worst_tol for v in m.values()):
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
