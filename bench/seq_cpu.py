#!/usr/bin/env python3
"""bench/seq_cpu.py — `simulate --seq N` against the model traced at N: for each plan, the trace
recorded at sequence N against the trace recorded at s rewritten to N (--seq N, extrapolate/seqlen.h):
step time, the worst GPU's activations and traffic, and the traced-at-N's measured step (meta.json).
Used by bench/seq_cpu.sh (the table in docs/accuracy.md).

usage: seq_cpu.py MITOSIS AT_N FROM_S N [--tol PCT] [--plans 'P1;P2;...'] [--flags 'FLAGS']
Exit 1 when a plan's step, activations or traffic differ by more than --tol %; 2 on a failed run.
"""
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from blocks import parse, pct, run, worst  # noqa: E402  (the same runs and measures as bench/blocks.py)

PLANS = ["--gpus 1", "--gpus 2 --tp 2", "--gpus 2 --tp 2 --sp", "--gpus 2 --cp 2", "--gpus 2 --pp 2",
         "--gpus 2 --fsdp"]


def main(argv):
    args, opts = parse(argv, {"--tol": "5", "--plans": ";".join(PLANS), "--flags": ""})
    binary, at_n, from_s, n = args
    tol = float(opts["--tol"])
    measured = json.load(open(at_n + "/meta.json"))["step_time_ms"]["median"]
    print("%-24s %10s %10s %8s %8s %9s %10s" % ("plan", "at N ms", "--seq ms", "step %", "acts %", "traffic %",
                                                "measured"))
    bad = 0
    for plan in [p for p in opts["--plans"].split(";") if p.strip()]:
        extra = opts["--flags"].split()
        a = run(binary, at_n, plan, extra)
        b = run(binary, from_s, plan, extra + ["--seq", n])
        e, m, tr = pct(b["step_ms"], a["step_ms"]), pct(worst(b, "activations"), worst(a, "activations")), \
            pct(worst(b, "traffic"), worst(a, "traffic"))
        print("%-24s %10.3f %10.3f %+8.2f %+8.2f %+9.2f %10s" % (
            plan, a["step_ms"], b["step_ms"], e, m, tr, "%.3f" % measured if plan.strip() == "--gpus 1" else "-"))
        if abs(e) > tol or abs(m) > tol or abs(tr) > tol:
            bad += 1
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
