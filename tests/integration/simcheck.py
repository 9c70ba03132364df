"""Helpers for the `mitosis simulate` integration scripts (simulate_shared.sh, simulate_own.sh).

Each script runs `python3 - BIN ...` with its checks inline and imports this module from the
script's folder. A check that fails prints "FAIL: name: detail" and the run goes on; finish()
exits 1 when any failed, else 77 (skipped, for ctest) when a prerequisite was missing (skip()),
else 0: a run that could not check everything never reads as a pass.
"""
import json
import math
import os
import subprocess
import sys


# Flags that change how a trace loads or ask for an output file: sim() runs the CLI for them.
CLI_ONLY = ("--step", "--moe-pattern", "--html", "--timeline", "--csv", "--chakra", "--kineto")


class Checker:
    def __init__(self, binary, lib=False):
        """lib: sim() through libmitosis in this process when it was started by libpy.bash (each trace
        read once; mitosis_result_json is simulate --json byte for byte), else the CLI."""
        self.bin = binary
        self.failed = 0
        self.runs = 0
        self.skipped = []
        self.lib = None
        if lib and os.environ.get("MITOSIS_LIB"):
            import libcheck
            self.lib = libcheck

    def check(self, name, ok, detail=""):
        if ok:
            print(f"ok: {name}")
        else:
            print(f"FAIL: {name}: {detail}")
            self.failed += 1
        return ok

    def run(self, *args):
        """(exit code, stdout, stderr) of `mitosis ARGS`; a run that hangs fails after 300 s."""
        self.runs += 1
        p = subprocess.run([self.bin, *map(str, args)], capture_output=True, text=True, timeout=300)
        return p.returncode, p.stdout, p.stderr

    def sim(self, trace, *args):
        """`mitosis simulate TRACE ARGS --json` parsed; None (and a failed check) on error."""
        if self.lib and not any(str(a) in CLI_ONLY for a in args):
            self.runs += 1
            try:
                return json.loads(self.lib.simulate(trace, *args))
            except self.lib.Error as e:
                self.check(f"simulate {' '.join(map(str, args))} exits 0", False, f"exit {e.exit_code}: {e.message}")
                return None
        rc, out, err = self.run("simulate", trace, *args, "--json")
        if not self.check(f"simulate {' '.join(map(str, args))} exits 0", rc == 0,
                          f"exit {rc}: {err.strip()}"):
            return None
        return json.loads(out)

    def param_bytes(self, trace):
        if self.lib:
            return self.lib.inspect(trace)["param_bytes"]
        rc, out, err = self.run("inspect", trace, "--json")
        assert rc == 0, err
        return json.loads(out)["param_bytes"]

    def allreduce_ms(self, nbytes, topology, *extra):
        """Time of one all-reduce of nbytes per rank from `mitosis collective` (ms)."""
        rc, out, err = self.run("collective", "--op", "allreduce", "--bytes", int(nbytes),
                                "--topology", topology, "--json", *extra)
        assert rc == 0, err
        rows = json.loads(out)["rows"]
        assert len(rows) == 1, out
        return rows[0]["time_us"] / 1e3

    def check_breakdown(self, name, d):
        """Positive finite step, and per GPU compute + host wait + exposed + peer wait + bubble + idle
        == step (sim/simulate.h), to 1e-6 relative, every part >= 0, exposed <= comm."""
        step = d["step_ms"]
        if not self.check(f"{name}: positive finite step", math.isfinite(step) and step > 0, step):
            return
        bad = []
        for g in d["gpus"]:
            s = (g["compute_ms"] + g.get("stretch_ms", 0) + g["host_wait_ms"] + g["exposed_comm_ms"] +
                 g["peer_wait_ms"] + g["bubble_ms"] + g["idle_ms"])
            if abs(s - step) > 1e-6 * step or min(g["compute_ms"], g["host_wait_ms"], g["exposed_comm_ms"],
                                                   g["peer_wait_ms"], g["bubble_ms"], g["idle_ms"]) < 0 or \
                    g["exposed_comm_ms"] > g["comm_ms"] + 1e-9:
                bad.append((g["rank"], s))
        self.check(f"{name}: compute+host wait+exposed+peer wait+bubble+idle == step, exposed <= comm", not bad,
                   f"step {step}, (rank, sum) {bad[:4]}")

    def check_bad(self, want, *args):
        """Exit 2 and exactly one stderr line containing `want`."""
        rc, _, err = self.run(*args)
        lines = err.splitlines()
        self.check(f"bad input {' '.join(map(str, args[1:]))} -> exit 2, one line naming '{want}'",
                   rc == 2 and len(lines) == 1 and want in err, f"exit {rc}, stderr {err!r}")

    def skip(self, why):
        """A prerequisite is missing: the checks that need it do not run, and finish() exits 77."""
        print(f"SKIP: {why}")
        self.skipped.append(why)

    def finish(self):
        print(f"{self.runs} mitosis runs, {self.failed} failed checks, {len(self.skipped)} prerequisites missing")
        sys.exit(1 if self.failed else 77 if self.skipped else 0)


def rel(a, b):
    """|a - b| relative to |b| (0 when both are 0)."""
    return abs(a - b) / abs(b) if b else abs(a)


def collect_flags(trace_dir):
    """The collect.py model flags a trace was recorded with (its meta.json's command), without the
    output and timing ones: for re-running its model (bench/act_memory.py, bench/dist_memory.py)."""
    import json
    import shlex
    with open(f"{trace_dir}/meta.json") as f:
        argv = shlex.split(json.load(f)["command"])[1:]
    drop, keep = ("-o", "--warmup", "--steps", "--threads"), []
    for i, a in enumerate(argv):
        if a in drop or (i and argv[i - 1] in drop) or a == "--sibling-load":
            continue
        keep.append(a)
    return keep
