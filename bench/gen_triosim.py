#!/usr/bin/env python3
"""Writes a TrioSim CSV trace (trace.csv + tensor.csv) of ROWS operators into OUT, by repeating a
real one (default traces/triosim-csv-vgg13-h100-bs128) with fresh tensor ids per repeat, so that
both files keep their common order. For bench/bench_triosim.sh.  usage: gen_triosim.py ROWS OUT [SRC]"""
import csv, os, re, sys

rows, out = int(sys.argv[1]), sys.argv[2]
src = sys.argv[3] if len(sys.argv) > 3 else os.path.join(os.path.dirname(__file__), "..", "traces",
                                                         "triosim-csv-vgg13-h100-bs128")
with open(os.path.join(src, "trace.csv"), newline="") as f:
    ops = list(csv.reader(f))
with open(os.path.join(src, "tensor.csv"), newline="") as f:
    tens = list(csv.reader(f))
oh, ops = ops[0], ops[1:]
th, tens = tens[0], tens[1:]
ii, io = oh.index("Operator_input"), oh.index("Operator_output")
tid, tst = th.index("TensorID"), th.index("TensorStorgeid")
span = 1 + max(max(int(r[tid]), int(r[tst])) for r in tens)
os.makedirs(out, exist_ok=True)


def shift(cell, d):
    return re.sub(r"-?\d+", lambda m: str(int(m.group()) + d), cell)


with open(os.path.join(out, "trace.csv"), "w", newline="") as fo, \
        open(os.path.join(out, "tensor.csv"), "w", newline="") as ft:
    wo, wt = csv.writer(fo), csv.writer(ft)
    wo.writerow(oh)
    wt.writerow(th)
    n, k, index = 0, 0, 0
    while n < rows:
        d = k * span
        # tensor.csv lists each op's tensors in trace order: the source's rows, shifted
        used = set()
        for r in ops:
            if n >= rows:
                break
            r = list(r)
            r[0] = str(n + 1)
            r[ii], r[io] = shift(r[ii], d), shift(r[io], d)
            wo.writerow(r)
            used.update(int(x) for x in re.findall(r"-?\d+", r[ii] + " " + r[io]))
            n += 1
        for r in tens:
            if int(r[tid]) + d not in used:
                continue
            r = list(r)
            r[0] = str(index)
            index += 1
            r[tid], r[tst] = str(int(r[tid]) + d), str(int(r[tst]) + d)
            wt.writerow(r)
        k += 1
