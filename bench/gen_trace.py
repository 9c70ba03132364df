#!/usr/bin/env python3
"""bench/gen_trace.py — makes a large, realistic Kineto + Execution Trace pair from a small one.

The Kineto trace's events are written `copies` times, one after the other in time: copy c is
shifted c x the source's span (rounded up to whole ms, plus 1 ms) later, and every copy but the
linked one (--linked, default the last) has its ids renumbered ("External id", "Record function
id", "correlation", flow "id" + (copy + 1) x 10^9), so ids stay unique and flows, launches and
kernels still pair up within each copy; the linked copy keeps the source's ids, so the Execution
Trace (copied: it records one step) still links to it, and `mitosis inspect` of the result
reports the same step as the source (numbered linked x steps later when steps are numbered by
position). ProfilerStep#N becomes ProfilerStep#(N + c x S) in copy c, S = the span of the
source's step numbers (largest - smallest + 1), so steps stay distinct, consecutive and in order; the ET's ProfilerStep#N node is renamed as in
the linked copy. Metadata ("M") and instant ("i") events are written once.

  bench/gen_trace.py SRC_DIR OUT_DIR --mb 1000 [--gzip]
  bench/gen_trace.py SRC_DIR OUT_DIR --copies 40 [--linked 17]

SRC_DIR holds kineto.json[.gz] and et.json[.gz] (e.g. ../shared/traces/param-resnet). Write into
/tmp or /work/bigtraces, never into the repository. Prints the copies made and the sizes.
"""
import argparse
import gzip
import json
import os
import shutil
import sys

ID_STEP = 10 ** 9
ID_ARGS = ("External id", "Record function id", "correlation")
STEP_PREFIX = "ProfilerStep#"


def step_number(name):
    """N of a "ProfilerStep#N" name, else None."""
    if isinstance(name, str) and name.startswith(STEP_PREFIX) and name[len(STEP_PREFIX):].isdigit():
        return int(name[len(STEP_PREFIX):])
    return None


def open_any(path, mode="rt"):
    with open(path, "rb") as f:
        magic = f.read(2)
    return gzip.open(path, mode) if magic == b"\x1f\x8b" else open(path, mode)


def find(src, stem):
    for name in (f"{stem}.json", f"{stem}.json.gz"):
        if os.path.exists(os.path.join(src, name)):
            return os.path.join(src, name)
    sys.exit(f"gen_trace.py: {src}: no {stem}.json or {stem}.json.gz")


def span_us(events):
    ts = [e["ts"] for e in events if isinstance(e.get("ts"), (int, float))]
    ends = [e["ts"] + e.get("dur", 0) for e in events
            if isinstance(e.get("ts"), (int, float)) and isinstance(e.get("dur", 0), (int, float))]
    return min(ts), max(ends) - min(ts)


def shifted(e, dt, dids, dstep):
    """Event e moved dt us later with its ids moved by dids, its ProfilerStep by dstep (a shallow copy)."""
    x = dict(e)
    if isinstance(x.get("ts"), (int, float)):
        x["ts"] = x["ts"] + dt
    if step_number(x.get("name")) is not None:
        x["name"] = f"{STEP_PREFIX}{step_number(x['name']) + dstep}"
    if dids and isinstance(x.get("id"), int):
        x["id"] = x["id"] + dids
    args = x.get("args")
    if dids and isinstance(args, dict) and any(k in args for k in ID_ARGS):
        args = dict(args)
        for k in ID_ARGS:
            if isinstance(args.get(k), int) and args[k] >= 0:
                args[k] += dids
        x["args"] = args
    return x


def step_stride(events):
    """S: ProfilerStep numbers of copy c move by c x S, so they stay consecutive (0 when none)."""
    ns = [step_number(e.get("name")) for e in events]
    ns = [n for n in ns if n is not None]
    return max(ns) - min(ns) + 1 if ns else 0


def write(out, doc, events, copies, linked):
    once = [e for e in events if e.get("ph") in ("M", "i")]
    timed = [e for e in events if e.get("ph") not in ("M", "i")]
    t0, span = span_us(timed)
    step = (int(span) // 1000 + 2) * 1000  # whole ms: shifted times keep their decimals
    head = {k: v for k, v in doc.items() if k != "traceEvents"}
    out.write("{\n")
    for k, v in head.items():
        out.write(f"  {json.dumps(k)}: {json.dumps(v)},\n")
    out.write('  "traceEvents": [\n')
    first = True
    for e in once:
        out.write(("" if first else ",\n") + "  " + json.dumps(e))
        first = False
    stride = step_stride(timed)
    for c in range(copies):
        dids = 0 if c == linked else (c + 1) * ID_STEP
        dt = c * step
        for e in timed:
            out.write(("" if first else ",\n") + "  " + json.dumps(shifted(e, dt, dids, c * stride)))
            first = False
    out.write("\n  ]\n}\n")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src")
    ap.add_argument("out")
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--copies", type=int)
    g.add_argument("--mb", type=float, help="about this many MB (1e6 bytes) of Kineto JSON")
    ap.add_argument("--gzip", action="store_true", help="write kineto.json.gz (and et.json.gz)")
    ap.add_argument("--linked", type=int, help="the copy the ET links to (0-based; default the last)")
    a = ap.parse_args()
    kpath, epath = find(a.src, "kineto"), find(a.src, "et")
    with open_any(kpath) as f:
        doc = json.load(f)
    events = doc["traceEvents"] if isinstance(doc, dict) else doc
    if not isinstance(doc, dict):
        doc = {"traceEvents": events}
    copies = a.copies
    if copies is None:  # bytes of one copy as written here (one event a line, json.dumps spacing)
        size = sum(len(json.dumps(e)) + 4 for e in events if e.get("ph") not in ("M", "i"))
        copies = max(1, round(a.mb * 1e6 / size))
    if copies < 1:
        ap.error("--copies must be at least 1")
    linked = copies - 1 if a.linked is None else a.linked
    if not 0 <= linked < copies:
        ap.error(f"--linked must be in 0..{copies - 1}")
    os.makedirs(a.out, exist_ok=True)
    kout = os.path.join(a.out, "kineto.json.gz" if a.gzip else "kineto.json")
    with (gzip.open(kout, "wt", compresslevel=6) if a.gzip else open(kout, "w")) as out:
        write(out, doc, events, copies, linked)
    eout = os.path.join(a.out, "et.json.gz" if a.gzip else "et.json")
    dstep = linked * step_stride([e for e in events if e.get("ph") not in ("M", "i")])
    with open_any(epath, "rb") as fi, (gzip.open(eout, "wb") if a.gzip else open(eout, "wb")) as fo:
        if dstep == 0:
            shutil.copyfileobj(fi, fo)
        else:  # the ET's ProfilerStep#N node renamed as in the linked copy
            et = json.load(fi)
            for n in et.get("nodes", []):
                if step_number(n.get("name")) is not None:
                    n["name"] = f"{STEP_PREFIX}{step_number(n['name']) + dstep}"
            fo.write(json.dumps(et).encode())
    print(f"{kout}: {copies} copies, {os.path.getsize(kout) / 1e6:.1f} MB; {eout}: {os.path.getsize(eout) / 1e6:.1f} MB")


if __name__ == "__main__":
    main()
