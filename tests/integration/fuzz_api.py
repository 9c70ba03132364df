"""Deterministic misuse fuzzing of libmitosis and the Python package (run by fuzz_api.sh; issue 42).

usage: python3 fuzz_api.py MITOSIS ROOT            (the parent: runs the cases in child processes)
       python3 fuzz_api.py --child ROOT SEED FIRST N (a child: runs cases FIRST..FIRST+N-1)

Two families, each case drawn from a random generator seeded by (seed, family, case number):
  capi    one C entry point called through ctypes with each argument valid, NULL, or a bad value
          (a negative count, a NUL-cut string, a handle of the wrong kind is never passed): the call
          must return (never a signal or a sanitizer report); a fallible one given a NULL pointer
          must return MITOSIS_EINVAL with a message naming the argument; a getter given NULL must
          answer NaN, -1 or NULL.
  python  mitosis.load / simulate / compare / cluster with arguments of the wrong type or value
          (None, [], ["x"], "x\\0y", 2**32+3, -2**40, 1.5, {}, object(), nested lists, bytes): the call
          returns or raises mitosis.Error (with a one-line message), never another exception.
A child prints each case id before running it, so a crash names the case. Environment:
MT_FUZZ_SEED (default 1), MT_FUZZ_SCALE (cases per family x SCALE, default 1).
"""
import ctypes
import math
import os
import random
import subprocess
import sys

COUNTS = {"capi": 120, "python": 80}
BATCH = 400  # one child: the trace is loaded once (seconds in a sanitizer build)


def c_cases(rng, root, L, mitosis, gpt):
    """One C API call: (description, call) where call() returns the problems found."""
    from mitosis._lib import _Err
    P = ctypes.c_void_p
    trace_h = gpt._h
    cfg = P()
    L.mitosis_config_new(b"simulate", ctypes.byref(cfg), None)

    def ptr_or_null(v):
        return v if rng.random() < 0.5 else None

    def fallible(name, args, nullable):
        """args: the arguments (None = NULL); nullable: the indices that may be NULL without error."""
        e = _Err()
        rc = getattr(L, name)(*args, ctypes.byref(e))
        msg = e.message.decode(errors="replace")
        nulls = [i for i, a in enumerate(args) if a is None and i not in nullable]
        probs = []
        if not 0 <= rc <= 7:
            probs.append("code %d out of range" % rc)
        if nulls and (rc != 3 or "argument '" not in msg and "the command is" not in msg and "trace path" not in msg):
            probs.append("NULL argument %s: code %d, message %r" % (nulls, rc, msg))
        if "\n" in msg:
            probs.append("a message of several lines: %r" % msg)
        return probs

    def getter(name, args, want):
        v = getattr(L, name)(*args)
        ok = (want == "nan" and isinstance(v, float) and math.isnan(v)) or (want == -1 and v == -1) or \
             (want is None and v is None)
        return [] if ok else ["%s(NULL) answered %r, want %r" % (name, v, want)]

    out = P()
    arr = (ctypes.c_char_p * 1)(os.path.join(root, "tests", "fixtures", "small").encode())
    words = [b"--gpus", b"2", b"--tp", None, b"--sp", b"--gpus\0x"]
    choice = rng.randrange(12)
    if choice == 0:
        a = [ptr_or_null(arr), rng.choice([1, 0, -1, 9]), rng.choice([-1, 0, 2**31 - 1]), None]
        if a[0] is not None and a[1] == 1 and rng.random() < 0.5:
            a[3] = ctypes.byref(out)
        return "mitosis_trace_open(%r)" % a[1:3], lambda: fallible("mitosis_trace_open", a, [])
    if choice == 1:
        a = [rng.choice([b"simulate", b"compare", b"", b"rm", None]), rng.choice([ctypes.byref(P()), None])]
        return "mitosis_config_new(%r)" % a[0], lambda: fallible("mitosis_config_new", a, [0])
    if choice == 2:
        a = [ptr_or_null(cfg), rng.choice([b"gpus", b"--tp", b"", None, b"sp"]), rng.choice([b"2", None, b"x", b""])]
        return "mitosis_config_set(%r, %r)" % (a[1], a[2]), lambda: fallible("mitosis_config_set", a, [1, 2])
    if choice == 3:
        a = [ptr_or_null(cfg), rng.choice([b"gpus", None, b"nope"])]
        return "mitosis_config_unset(%r)" % a[1], lambda: fallible("mitosis_config_unset", a, [])
    if choice == 4:
        n = rng.choice([-5, -1, 0, 1, 2, 3])
        picked = [rng.choice(words) for _ in range(max(n, 0))]
        argv = None if rng.random() < 0.3 else (ctypes.c_char_p * max(n, 1))(*picked)
        a = [ptr_or_null(cfg), n, argv]
        nullable = [2] if n == 0 else []
        desc = "mitosis_config_set_args(%d, %r)" % (n, picked if argv is not None else None)

        def call():
            probs = fallible("mitosis_config_set_args", a, nullable)
            if a[0] is not None and n < 0 and not probs:
                e = _Err()
                if L.mitosis_config_set_args(cfg, n, argv, ctypes.byref(e)) != 3:
                    probs.append("argc %d accepted" % n)
            return probs
        return desc, call
    if choice == 5:
        a = [ptr_or_null(trace_h), ptr_or_null(cfg), rng.choice([ctypes.byref(P()), None])]
        return "mitosis_simulate(%s)" % ["NULL" if x is None else "ok" for x in a], \
            lambda: fallible("mitosis_simulate", a, [])
    if choice == 6:
        a = [ptr_or_null(trace_h), None, rng.choice([ctypes.byref(P()), None])]
        return "mitosis_compare(NULL config)", lambda: fallible("mitosis_compare", a, [])
    if choice == 7:
        a = [None, rng.choice([b"html", b"csv", None]), rng.choice([b"/nonexistent/x", None])]
        return "mitosis_result_write(NULL)", lambda: fallible("mitosis_result_write", a, [1, 2])
    if choice == 8:
        a = [rng.choice([None, b"/nonexistent.json"]), rng.choice([None, b"packed", b"sideways"]),
             rng.choice([ctypes.byref(P()), None])]
        return "mitosis_cluster(%r, %r)" % (a[0], a[1]), lambda: fallible("mitosis_cluster", a, [1])
    getters = [("mitosis_result_step_ms", [None], "nan"), ("mitosis_result_base_step_ms", [None], "nan"),
               ("mitosis_result_peak_mem_bytes", [None], "nan"), ("mitosis_result_gpus", [None], -1),
               ("mitosis_result_json", [None], None), ("mitosis_result_warning", [None, 0], None),
               ("mitosis_result_warnings", [None], -1), ("mitosis_comparison_rows", [None], -1),
               ("mitosis_comparison_json", [None], None), ("mitosis_comparison_label", [None, 0], None),
               ("mitosis_comparison_step_ms", [None, 1], "nan"), ("mitosis_comparison_best", [None], -1),
               ("mitosis_config_command", [None], None), ("mitosis_config_words", [None], -1),
               ("mitosis_config_word", [None, 0], None), ("mitosis_trace_ops", [None], -1),
               ("mitosis_trace_batch", [None], -1), ("mitosis_trace_json", [None, 1], None)]
    name, args, want = rng.choice(getters)
    return "%s(NULL)" % name, lambda: getter(name, args, want)


BAD = [None, [], [None], ["x"], "x\0y", b"x\0y", 2**32 + 3, -2**40, 1.5, {}, {"a": 1}, [[2]], (), True,
       object(), float("nan"), "", " ", "1e999", -1]


def py_cases(rng, root, mitosis, gpt):
    gpt_path = os.path.join(root, "tests", "fixtures", "small")
    bad = lambda: rng.choice(BAD)
    choice = rng.randrange(5)
    if choice == 0:
        a = bad()
        return "load(%r)" % (a,), lambda: mitosis.load(a)
    if choice == 1:
        s = rng.choice([v for v in BAD if v != -1])  # -1 (the ET's step) would load the trace: slow, not misuse
        return "load(small, step=%r)" % (s,), lambda: mitosis.load(gpt_path, step=s)
    if choice == 2:
        key = rng.choice(["gpus", "tp", "slow_gpu", "topology", "link_bw", "steps", "sp", "nope"])
        v = bad()
        opts = {"gpus": 2, key: v} if key != "gpus" else {"gpus": v}
        return "simulate(gpt, **%r)" % (opts,), lambda: mitosis.simulate(gpt, **opts)
    if choice == 3:
        v = bad()
        return "compare(gpt, gpus=%r)" % (v,), lambda: mitosis.compare(gpt, gpus=v, plans="ddp=2")
    a, b = bad(), rng.choice([None, bad()])
    return "cluster(%r, placement=%r)" % (a, b), lambda: mitosis.cluster(a, placement=b)


def child(root, seed, first, n):
    sys.path.insert(0, os.path.join(root, "python"))
    import mitosis
    L = mitosis._lib.lib()
    gpt = mitosis.load(os.path.join(root, "tests", "fixtures", "small"))
    bad = 0
    for k in range(first, first + n):
        fam, idx = case_of(k)
        rng = random.Random("%d/%s/%d" % (seed, fam, idx))
        if fam == "capi":
            desc, call = c_cases(rng, root, L, mitosis, gpt)
        else:
            desc, call = py_cases(rng, root, mitosis, gpt)
        print("case %s-%d: %s" % (fam, idx, desc), flush=True)
        probs = []
        try:
            r = call()
            probs = r if fam == "capi" else []
        except mitosis.Error as e:
            if "\n" in str(e) or not str(e):
                probs = ["mitosis.Error of several lines or none: %r" % str(e)]
        except Exception as e:  # noqa: BLE001 (the point: nothing but mitosis.Error)
            probs = ["%s (not a mitosis.Error): %s" % (type(e).__name__, e)]
        for p in probs:
            print("FAIL: case %s-%d (%s): %s" % (fam, idx, desc, p), flush=True)
        bad += bool(probs)
    sys.exit(1 if bad else 0)


def plan(scale):
    return [(f, i) for f, c in COUNTS.items() for i in range(max(1, round(c * scale)))]


def case_of(k):
    return plan(float(os.environ.get("MT_FUZZ_SCALE", "1")))[k]


def main():
    binary, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    seed = int(os.environ.get("MT_FUZZ_SEED", "1"))
    cases = plan(float(os.environ.get("MT_FUZZ_SCALE", "1")))
    env = dict(os.environ, MITOSIS_BIN=binary)
    env.setdefault("MITOSIS_LIB", os.path.join(os.path.dirname(binary), "libmitosis.so.0"))
    failed = 0
    for first in range(0, len(cases), BATCH):
        n = min(BATCH, len(cases) - first)
        p = subprocess.run([sys.executable, __file__, "--child", root, str(seed), str(first), str(n)],
                           capture_output=True, text=True, env=env, timeout=300)
        for line in p.stdout.splitlines():
            if line.startswith("FAIL"):
                print(line)
        if p.returncode not in (0, 1) or "Sanitizer" in p.stderr or "runtime error" in p.stderr:
            last = [x for x in p.stdout.splitlines() if x.startswith("case ")][-1:]
            print("FAIL: exit %d at %s; stderr: %s" % (p.returncode, last, p.stderr.strip()[-800:]))
            failed += 1
        failed += p.returncode == 1
    print("fuzz_api: seed %d, %d cases (%s)%s" % (seed, len(cases), ", ".join("%s %d" % (f, sum(1 for x in cases
          if x[0] == f)) for f in COUNTS), ": failures above" if failed else ", all returned or raised mitosis.Error"))
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    if sys.argv[1] == "--child":
        child(sys.argv[2], int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    else:
        main()
