"""Deterministic mutation fuzzing of every input mitosis reads (run by fuzz_inputs.sh).

usage: python3 fuzz_inputs.py MITOSIS ROOT

Each case takes one of the project's own inputs (tests/fixtures/, traces/), mutates it with a
random generator seeded by (seed, family, case number) and runs the commands that read it. The
rule checked is the one in README "Exit codes": bad input gives exit 2 and exactly one line on
stderr that names the file (or the flag); never a signal, a sanitizer report, a timeout, another
exit code, or (on exit 0) a NaN, an infinity or a negative time or size in the --json output.
Some mutations make an input that must be refused, never read as something else (must_refuse):
a negative or non-numeric `dur` of a Kineto event mitosis reads, a bandwidth without a unit below
1e6 in a topology file; those cases must give exit 2. Then the newer flags used where they do not
apply (--seq, --etp, --dist-opt, --comm-slowdown, --precision fp8-mixed: FLAG_REFUSALS) must each be
refused in one line naming the flag.

Environment: MT_FUZZ_SEED (default 1), MT_FUZZ_SCALE (cases per family x SCALE, default 1),
MT_FUZZ_ONLY (comma-separated case ids, e.g. `small-7,topojson-3`), MT_FUZZ_JOBS (default 2),
MT_FUZZ_TIMEOUT (seconds per run, default 20), MT_LIBSIM=0 (every command through the binary: no
library runs, see "the binary and the library"). A failing case's inputs and commands are kept
under the temporary folder the summary names; rerun it with MT_FUZZ_ONLY=<id>.
"""
import concurrent.futures
import copy
import csv
import gzip
import hashlib
import io
import json
import os
import random
import re
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import libsim  # noqa: E402  (the library path: see 'the binary and the library')

# ---- mutations of a JSON document ----------------------------------------------------------

RAW = "@@RAW%d@@"  # placeholder strings replaced by raw tokens (1e999, NaN) after json.dumps

EXTREME_NUMBERS = [0, -1, -1.5, -1e9, 1e300, -1e300, 1e-300, 2**31, 2**32, -2**31, 2**53 + 1,
                   2**63 - 1, -2**63, 1e19, 4.2e18, 3.5]
RAW_TOKENS = ["1e999", "-1e999", "NaN", "Infinity", "18446744073709551616", "1e", "-", "0x10"]
ODD_STRINGS = ["", " ", "x", "-1", "1e999", "nan", "%s%n%s", "a\nb", "\u00e9\u4e2d", "0-",
               "gpu0->", "->", "<->", "[", "[1,", "*", "all", "x" * 5000, "10GB/s", "-5ms",
               "0ms", "1", "3:", "1-0", "999999999999"]


def other_type_values(v):
    """Values of every JSON type except v's own."""
    vals = [None, True, 7, -3, 2.5, "str", {}, [], {"a": 1}, [1, "x", None]]
    return [x for x in vals if type(x) is not type(v)]


def pick_node(rng, root, to_leaf=False):
    """A random (container, key) inside root by random descent (cheap on big documents): down to
    a leaf with to_leaf, else stopping at each level with probability 1/4. In an object, keys
    holding containers weigh 3, so the nested fields (events, nodes, rules) are reached."""
    cont, key = None, None
    node = root
    while isinstance(node, (dict, list)) and node and (cont is None or to_leaf or rng.random() < 0.75):
        if isinstance(node, dict):
            keys = list(node.keys())
            k = rng.choices(keys, [3 if isinstance(node[x], (dict, list)) and node[x] else 1 for x in keys])[0]
        else:
            k = rng.randrange(len(node))
        cont, key, node = node, k, node[k]
    return cont, key


def pick_number(rng, root):
    """A random numeric leaf (container, key), or (None, None) after 20 misses."""
    for _ in range(20):
        cont, key = pick_node(rng, root, to_leaf=True)
        if cont is not None and isinstance(cont[key], (int, float)) and not isinstance(cont[key], bool):
            return cont, key
    return None, None


def biggest_array(node, best=None):
    """The longest list in the document (traceEvents, nodes, links...)."""
    if isinstance(node, list):
        if best is None or len(node) > len(best):
            best = node
        for x in node[:64] if len(node) > 64 else node:
            best = biggest_array(x, best)
    elif isinstance(node, dict):
        for x in node.values():
            best = biggest_array(x, best)
    return best


def mutate_json_tree(rng, root, raws):
    """Applies one structural mutation to root in place; returns its description."""
    op = rng.choice(["delete", "delete", "retype", "retype", "number", "number", "string",
                     "dup", "dup_event", "empty", "swap", "leaf", "leaf", "leaf"])
    if op == "leaf":  # a numeric leaf (a time, size, id, shape, count) made extreme
        cont, key = pick_number(rng, root)
        if cont is None:
            return "leaf (no number)"
        v = cont[key]
        cont[key] = rng.choice([-v, -v - 1, v * 10**9, v * 1e18, 0, -1, 2**63 - 1, -2**63, 1e300,
                                2**31, v + 0.5])
        return f"leaf [{key!r}] {v!r} -> {cont[key]!r}"
    if op == "dup_event":
        arr = biggest_array(root)
        if not arr:
            return "dup_event (no array)"
        i = rng.randrange(len(arr))
        for _ in range(rng.choice([1, 1, 2, 10])):
            arr.insert(i, copy.deepcopy(arr[i]))
        return f"duplicate element {i} of the biggest array"
    cont, key = pick_node(rng, root)
    if cont is None:
        return "no-op (empty root)"
    val = cont[key]
    where = f"[{key!r}]"
    if op == "delete":
        del cont[key]
        return f"delete {where}"
    if op == "retype":
        cont[key] = rng.choice(other_type_values(val))
        return f"retype {where} -> {cont[key]!r}"
    if op == "number":
        if rng.random() < 0.3:
            tok = rng.choice(RAW_TOKENS)
            raws.append(tok)
            cont[key] = RAW % (len(raws) - 1)
            return f"raw number {where} -> {tok}"
        cont[key] = rng.choice(EXTREME_NUMBERS)
        return f"number {where} -> {cont[key]!r}"
    if op == "string":
        cont[key] = rng.choice(ODD_STRINGS)
        return f"string {where} -> {cont[key][:20]!r}"
    if op == "dup":
        if isinstance(cont, list):
            cont.insert(key, copy.deepcopy(val))
            return f"duplicate {where}"
        cont[key] = [val, copy.deepcopy(val)]
        return f"wrap {where} in a list of two"
    if op == "empty":
        cont[key] = {} if isinstance(val, dict) else [] if isinstance(val, list) else ""
        return f"empty {where}"
    # swap with a sibling
    keys = list(cont.keys()) if isinstance(cont, dict) else list(range(len(cont)))
    other = rng.choice(keys)
    cont[key], cont[other] = cont[other], cont[key]
    return f"swap [{key!r}] and [{other!r}]"


def dump_json(root, raws):
    text = json.dumps(root)
    for i, tok in enumerate(raws):
        text = text.replace('"' + RAW % i + '"', tok)
    return text.encode()


def mutate_bytes(rng, data):
    """Byte-level damage: truncation, flips, inserted garbage, emptiness."""
    op = rng.choice(["truncate", "truncate", "flip", "flip", "insert", "empty"])
    if op == "empty" or not data:
        return b"", "empty file"
    if op == "truncate":
        at = rng.randrange(len(data))
        return data[:at], f"truncate at byte {at} of {len(data)}"
    b = bytearray(data)
    if op == "flip":
        spots = [rng.randrange(len(b)) for _ in range(rng.choice([1, 2, 4]))]
        for s in spots:
            b[s] = rng.choice([0, 0xff, ord('"'), ord("{"), ord("]"), ord(","), ord("\n"),
                               b[s] ^ (1 << rng.randrange(8))])
        return bytes(b), f"flip bytes at {spots}"
    at = rng.randrange(len(b) + 1)
    junk = bytes(rng.randrange(256) for _ in range(rng.choice([1, 3, 16])))
    return bytes(b[:at]) + junk + bytes(b[at:]), f"insert {len(junk)} random bytes at {at}"


def mutate_json_file(rng, data):
    """One to three structural mutations (70 %) or byte damage (30 %) of a JSON file."""
    if rng.random() < 0.3:
        return mutate_bytes(rng, data)
    root = json.loads(data)
    raws, what = [], []
    for _ in range(rng.choice([1, 1, 1, 2, 3])):
        what.append(mutate_json_tree(rng, root, raws))
    return dump_json(root, raws), "; ".join(what)


def mutate_gz_file(rng, raw_gz):
    """A gzipped JSON file: its content mutated and re-gzipped (80 %), or the gzip damaged."""
    if rng.random() < 0.8:
        data, what = mutate_json_file(rng, gzip.decompress(raw_gz))
        return gzip.compress(data, mtime=0), what + " (re-gzipped)"
    op = rng.choice(["truncate", "flip", "garbage", "plain"])
    if op == "truncate":
        at = rng.randrange(len(raw_gz))
        return raw_gz[:at], f"gzip truncated at byte {at}"
    if op == "flip":
        b = bytearray(raw_gz)
        at = rng.randrange(10, len(b))
        b[at] ^= 0xff
        return bytes(b), f"gzip byte {at} flipped"
    if op == "garbage":
        return b"\x1f\x8b" + bytes(rng.randrange(256) for _ in range(64)), "garbage gzip"
    return raw_gz + raw_gz[:rng.randrange(1, 40)], "gzip with a truncated second member"


def mutate_csv_file(rng, data):
    """Row/cell mutations of a CSV (65 %) or byte damage (35 %)."""
    if rng.random() < 0.35:
        return mutate_bytes(rng, data)
    rows = list(csv.reader(io.StringIO(data.decode())))
    what = []
    for _ in range(rng.choice([1, 1, 2])):
        if not rows:
            break
        r = rng.randrange(len(rows))
        op = rng.choice(["cell", "cell", "cell", "delrow", "duprow", "delcell", "addcell"])
        if op == "delrow":
            del rows[r]
            what.append(f"delete row {r}")
        elif op == "duprow":
            rows.insert(r, list(rows[r]))
            what.append(f"duplicate row {r}")
        elif not rows[r]:
            what.append("no-op (empty row)")
        elif op == "delcell":
            c = rng.randrange(len(rows[r]))
            del rows[r][c]
            what.append(f"delete cell {r}:{c}")
        elif op == "addcell":
            rows[r].append(rng.choice(["x", "1", ""]))
            what.append(f"extra cell in row {r}")
        else:
            c = rng.randrange(len(rows[r]))
            rows[r][c] = str(rng.choice(ODD_STRINGS + ["-1", "-100", "0", "1e308", "nan",
                                                       "inf", "-0", "9" * 25, "[]", "[-4; 8]",
                                                       "[4, -8]", "[0]", "4.5", "1e18"]))
            what.append(f"cell {r}:{c} -> {rows[r][c][:20]!r}")
    out = io.StringIO()
    csv.writer(out, lineterminator="\n").writerows(rows)
    return out.getvalue().encode(), "; ".join(what)


def mutate_cut(rng, data):
    """The file cut at a random byte (a copy that stopped early). A cut mid-line must be refused
    (exit 2) by readers that promise it (Family.refuse_cut); one at a line break may pass."""
    at = rng.randrange(1, len(data))
    whole = data[at - 1:at] == b"\n" or data[at:at + 1] in (b"\n", b"\r")
    return data[:at], f"cut at byte {at} of {len(data)} ({'at a line break' if whole else 'mid-line'})"


# ---- the families of inputs ----------------------------------------------------------------

class Family:
    """name: case id prefix; files: {name: bytes} of the valid input; targets: files the
    mutation may touch (with their kind); commands: argument lists ({F} = the case folder).
    choices (instead of targets): a case runs one of these (description, command) pairs, the
    files unmutated, and must be refused (exit 2) with every file of the case folder unchanged
    (issue 42: output-path collisions, configuration files that are no such file).
    stop_after_load: a case whose first command is `inspect {F}` and is refused cleanly runs no
    more commands (they load the same trace the same way; run_case)."""

    def __init__(self, name, count, files, targets, commands, drop_one=False, stop_after_load=True,
                 refuse_cut=False, choices=None):
        self.name, self.count, self.files, self.targets = name, count, files, targets
        self.commands, self.drop_one, self.stop_after_load = commands, drop_one, stop_after_load
        self.refuse_cut = refuse_cut
        self.choices = choices
        self.prepare = None  # a function of the case folder, run after its files are written


def families(root, work, binary):
    fx = f"{root}/tests/fixtures"
    rd = lambda p: open(p, "rb").read()
    small = {"kineto.json": rd(f"{fx}/small/kineto.json"), "et.json": rd(f"{fx}/small/et.json")}
    pair_targets = {"kineto.json": "json", "et.json": "json"}
    # The small fixture is copied next to every non-trace case, so each command sees it whole.
    base = f"{work}/base"
    os.makedirs(f"{base}/small", exist_ok=True)
    for n, d in small.items():
        open(f"{base}/small/{n}", "wb").write(d)
    gpus = rd(f"{fx}/perfmodel/gpus.json")
    open(f"{base}/gpus.json", "wb").write(gpus)
    sm = f"{base}/small"
    res = f"{root}/traces/cpu-resnet18-b4"
    # A fitted model to mutate: made by this binary from a shipped trace (checked to exit 0).
    p = subprocess.run([binary, "perfmodel", "fit", res, "--csv", f"{fx}/perfmodel/ops.csv",
                        "-o", f"{base}/model.json"], capture_output=True, text=True, env=SIM.env)
    if p.returncode != 0:
        sys.exit(f"fuzz: cannot fit the base model: {p.stderr.strip()}")
    scenario = {
        "seed": 7, "steps": 2,
        "compute": [
            {"gpus": [3], "slowdown": 1.1},
            {"gpus": "all", "layers": [0], "micro_batches": [0], "steps": [1],
             "phases": ["forward", "backward"], "slowdown": 1.5},
            {"gpus": "0-2", "per": "step", "slowdown": {"dist": "uniform", "min": 1, "max": 1.2}},
            {"gpus": [1], "per": "task", "slowdown": {"dist": "normal", "mean": 1.1, "std": 0.1}},
            {"gpus": [2], "slowdown": {"dist": "lognormal", "mu": 0, "sigma": 0.2}}],
        "gpu_types": {"0-1": "A100-80GB", "2-3": "TestGPU"},
        "network": [
            {"link": "gpu3->gpu0", "bandwidth_factor": 0.1},
            {"gpu": 3, "extra_latency": "5us"},
            {"link": "gpu1<->gpu2", "fail_at": "0.5ms"},
            {"link": "gpu1", "bandwidth_factor": 0.5, "at": "0.2ms"},
            {"link": "gpu0->gpu1", "bandwidth_factor": 0.2, "period": "0.1ms", "duration": "20us",
             "start": "0ms"}]}
    # A Chakra ET workload to mutate (simulate --as-is): this binary's export of a 2-stage pipeline.
    ck = f"{base}/chakra"
    p = subprocess.run([binary, "simulate", res, "--gpus", "2", "--pp", "2", "--chakra", ck],
                       capture_output=True, text=True, env=SIM.env)
    if p.returncode != 0:
        sys.exit(f"fuzz: cannot export the base Chakra workload: {p.stderr.strip()}")
    chakra_et = {f"w.{r}.et": rd(f"{ck}/mitosis.{r}.et") for r in range(2)}
    sim = lambda *a: ["simulate", sm, *a, "--json"]
    cluster = {"topology": "switch:8", "placement": "packed",
               "jobs": [{"name": "a", "trace": sm, "args": ["--gpus", "2", "--strategy", "ddp"], "start_ms": 0},
                        {"name": "b", "trace": sm, "args": ["--gpus", "4", "--tp", "2"], "placement": "spread",
                         "steps": 2}]}
    return [
        Family("small", 125, small, pair_targets,
               [["inspect", "{F}", "--json"],
                ["simulate", "{F}", "--gpus", "2", "--strategy", "ddp", "--json"],
                ["simulate", "{F}", "--gpus", "4", "--tp", "2", "--json"],
                ["perfmodel", "fit", "{F}", "-o", "{F}-fitted.json"]], drop_one=True),
        Family("chakra", 30, {"kineto.json": small["kineto.json"],
                              "et.json": rd(f"{fx}/small-chakra-et.json")}, {"et.json": "json"},
               [["inspect", "{F}", "--json"],
                ["simulate", "{F}", "--gpus", "4", "--tp", "2", "--strategy", "dp", "--json"]]),
        Family("triosim", 60, {"trace.csv": rd(f"{fx}/triosim/trace.csv"),
                               "tensor.csv": rd(f"{fx}/triosim/tensor.csv")},
               {"trace.csv": "csv", "tensor.csv": "csv"},
               [["inspect", "{F}", "--json"],
                ["simulate", "{F}", "--gpus", "2", "--strategy", "ddp", "--json"],
                ["simulate", "{F}", "--gpus", "4", "--tp", "2", "--json"]], drop_one=True),
        Family("triosimcut", 40, {"trace.csv": rd(f"{fx}/triosim/trace.csv"),
                                  "tensor.csv": rd(f"{fx}/triosim/tensor.csv")},
               {"trace.csv": "cut", "tensor.csv": "cut"},
               [["inspect", "{F}", "--json"], ["simulate", "{F}", "--gpus", "2", "--json"]],
               refuse_cut=True),
        Family("resnet", 24, {"kineto.json.gz": rd(f"{res}/kineto.json.gz"),
                              "et.json.gz": rd(f"{res}/et.json.gz")},
               {"kineto.json.gz": "gz", "et.json.gz": "gz"},
               [["inspect", "{F}", "--json"],
                ["simulate", "{F}", "--gpus", "2", "--strategy", "ddp", "--json"],
                ["simulate", "{F}", "--gpus", "4", "--tp", "2", "--json"],
                ["simulate", "{F}", "--gpus", "2", "--pp", "2", "--json"]],
               drop_one=True),
        Family("chakrapb", 60, chakra_et, {n: "bytes" for n in chakra_et},
               [["simulate", "{F}", "--as-is", "--json"],
                ["simulate", "{F}", "--as-is", "--topology", "ring:2", "--json"]], drop_one=True),
        Family("model", 50, {"model.json": rd(f"{base}/model.json")}, {"model.json": "json"},
               [["perfmodel", "show", "{F}/model.json"],
                ["perfmodel", "predict", sm, "--model", "{F}/model.json", "--perf-model", "linear",
                 "--batch", "8", "--json"],
                sim("--gpus", "2", "--perf-model", "linear", "--model", "{F}/model.json")]),
        Family("gpus", 30, {"gpus.json": gpus}, {"gpus.json": "json"},
               [["perfmodel", "gpus", "--gpu-specs", "{F}/gpus.json"],
                ["perfmodel", "predict", sm, "--target-gpu", "H100-SXM", "--gpu-specs",
                 "{F}/gpus.json", "--json"],
                sim("--gpus", "2", "--target-gpu", "A100-80GB", "--gpu-specs", "{F}/gpus.json")]),
        Family("opscsv", 25, {"ops.csv": rd(f"{fx}/perfmodel/ops.csv")}, {"ops.csv": "csv"},
               [["perfmodel", "fit", sm, "--csv", "{F}/ops.csv", "-o", "{F}/out.json"]]),
        Family("topojson", 50, {"topo.json": rd(f"{fx}/topo/slowlink.json")}, {"topo.json": "json"},
               [["topo", "{F}/topo.json", "--route", "gpu0", "gpu2"],
                sim("--gpus", "2", "--strategy", "ddp", "--topology", "{F}/topo.json"),
                sim("--gpus", "3", "--strategy", "dp", "--topology", "{F}/topo.json",
                    "--host-model", "none")]),
        Family("topocsv", 35, {"topo.csv": rd(f"{fx}/topo/line.csv")}, {"topo.csv": "csv"},
               [["topo", "{F}/topo.csv"],
                sim("--gpus", "3", "--strategy", "ddp", "--topology", "{F}/topo.csv")]),
        Family("meta", 25, {**small, "meta.json": rd(f"{res}/meta.json")}, {"meta.json": "json"},
               [["simulate", "{F}", "--gpus", "2", "--calibrate", "--json"],
                ["simulate", "{F}", "--gpus", "2", "--calibrate", "--host-model", "none", "--json"],
                # no flag: a GPU trace's meta.json is read for calibration by default
                ["simulate", "{F}", "--gpus", "1", "--json"]]),
        Family("scenario", 70, {"scenario.json": json.dumps(scenario).encode()},
               {"scenario.json": "json"},
               [sim("--gpus", "4", "--strategy", "ddp", "--topology", "ring:4", "--scenario",
                    "{F}/scenario.json",
                    "--gpu-specs", f"{base}/gpus.json")]),
        Family("cluster", 25, {"jobs.json": json.dumps(cluster).encode()}, {"jobs.json": "json"},
               [["cluster", "{F}/jobs.json", "--json"]]),
        *safety_families(small),
    ]

# ---- outputs and configuration files (issue 42) --------------------------------------------
# Every case must be refused (exit 2, one line) and leave its folder as it was: an output named
# onto an input (the trace's own files, a hard or symbolic link to one, the scenario, topology or
# cluster file), into the trace folder, or a configuration file that is a FIFO, /dev/zero, a
# 65 MiB sparse file, a gzip bomb or a folder.

def safety_prepare(bomb):
    def prepare(d):
        c = f"{d}/cfg"  # a folder inside the trace folder: not part of the trace (readers skip it)
        os.makedirs(c)
        open(f"{c}/topo.json", "w").write(json.dumps({"links": [
            {"src": "gpu0", "dst": "sw", "bandwidth": "100GB/s"},
            {"src": "gpu1", "dst": "sw", "bandwidth": "100GB/s"}]}))
        open(f"{c}/scen.json", "w").write('{"seed": 1}')
        job = lambda topo: json.dumps({"topology": topo, "jobs": [{"name": "a", "trace": d,
                                                                    "args": ["--gpus", "2"]}]})
        open(f"{c}/jobs.json", "w").write(job("switch:4"))
        open(f"{c}/jobs-zero.json", "w").write(job("/dev/zero"))
        open(f"{c}/jobs-fifo.json", "w").write(job(f"{c}/fifo.json"))
        os.link(f"{d}/kineto.json", f"{c}/hard.json")
        os.symlink(f"{d}/et.json", f"{c}/sym.json")
        os.mkfifo(f"{c}/fifo.json")
        with open(f"{c}/big.json", "wb") as f:
            f.truncate(65 << 20)  # sparse: no disk
        open(f"{c}/bomb.json", "wb").write(bomb)
    return prepare


def safety_families(small):
    bomb = gzip.compress(b" " * (80 << 20), compresslevel=1)
    sim = lambda *a: ["simulate", "{F}", "--gpus", "2", *a]
    outs = [
        ("--html onto the trace's Kineto file", sim("--html", "{F}/kineto.json")),
        ("--timeline onto the ET", sim("--timeline", "{F}/et.json")),
        ("--html a new file inside the trace folder", sim("--html", "{F}/new.html")),
        ("--csv into the trace folder", sim("--csv", "{F}")),
        ("--chakra inside the trace folder", sim("--chakra", "{F}/ck")),
        ("--kineto into the trace folder", sim("--kineto", "{F}")),
        ("compare --html onto the trace", ["compare", "{F}", "--gpus", "4", "--html", "{F}/kineto.json"]),
        ("perfmodel fit -o onto the ET", ["perfmodel", "fit", "{F}", "-o", "{F}/et.json"]),
        ("files given, --html onto one", ["simulate", "{F}/kineto.json", "{F}/et.json", "--gpus", "2",
                                          "--html", "{F}/kineto.json"]),
        ("--html onto a hard link of the trace", sim("--html", "{F}/cfg/hard.json")),
        ("--timeline onto a symbolic link to the ET", sim("--timeline", "{F}/cfg/sym.json")),
        ("--scenario's file as --html", sim("--scenario", "{F}/cfg/scen.json", "--html", "{F}/cfg/scen.json")),
        ("--topology's file as --timeline", sim("--topology", "{F}/cfg/topo.json", "--timeline",
                                                "{F}/cfg/topo.json")),
        ("topo --dot onto its file", ["topo", "{F}/cfg/topo.json", "--dot", "{F}/cfg/topo.json"]),
        ("cluster --html onto its job file", ["cluster", "{F}/cfg/jobs.json", "--html", "{F}/cfg/jobs.json"]),
        ("cluster --timeline onto a job's trace", ["cluster", "{F}/cfg/jobs.json", "--timeline",
                                                   "{F}/kineto.json"]),
    ]
    cfgs = []
    for label, path in [("a FIFO", "{F}/cfg/fifo.json"), ("/dev/zero", "/dev/zero"),
                        ("a 65 MiB file", "{F}/cfg/big.json"), ("a gzip bomb", "{F}/cfg/bomb.json"),
                        ("a folder", "{F}/cfg")]:
        cfgs += [(f"--topology {label}", sim("--topology", path)),
                 (f"--scenario {label}", sim("--scenario", path)),
                 (f"--gpu-specs {label}", sim("--gpu-specs", path, "--target-gpu", "H100-SXM")),
                 (f"--model {label}", sim("--perf-model", "linear", "--model", path)),
                 (f"topo {label}", ["topo", path]),
                 (f"cluster {label}", ["cluster", path])]
    cfgs += [("a cluster file's topology /dev/zero", ["cluster", "{F}/cfg/jobs-zero.json"]),
             ("a cluster file's topology a FIFO", ["cluster", "{F}/cfg/jobs-fifo.json"])]
    base_ok = [sim("--html", "{F}.html", "--json")]  # a lawful output outside the folder
    fams = [Family("outpath", 30, small, {}, base_ok, choices=outs),
            Family("configs", 30, small, {}, base_ok, choices=cfgs)]
    for f in fams:
        f.prepare = safety_prepare(bomb)
    return fams



# ---- the streaming JSON reader (util/jstream.c, tracer/kstream.c; issue 23) -----------------
# Damage aimed at a reader that sees the file in 1 MiB chunks: the Kineto file is padded past
# one chunk with instant events (which the reader skips), then cut anywhere, nested deeper than
# 2048 levels, given numbers beyond int64 or double, or invalid UTF-8 inside a string. Cuts and
# invalid UTF-8 must be refused (exit 2, one line); nothing may crash or hang.

STREAM_PAD = 1_300_000  # bytes of padding: the file crosses the first 1 MiB chunk
HUGE_NUMBERS = ["9" * 400, "-" + "9" * 30, "9223372036854775808", "-9223372036854775809",
                "9223372036854775807", "1e400", "-1e400", "1e-400", "123456789012345678",
                "0.000000000000000000000000000001", "1" + "0" * 310 + ".5"]
BAD_UTF8 = [b"\xff", b"\xc3\x28", b"\xed\xa0\x80", b"\xf4\x90\x80\x80", b"\xc0\xaf", b"\xe2\x82"]


def stream_padded(data):
    """The Kineto text with instant events before its first event, past STREAM_PAD bytes."""
    at = data.index(b'"traceEvents": [') + len(b'"traceEvents": [')
    pad = b'{"ph": "i", "cat": "pad", "name": "pad", "pid": 1, "tid": 1, "ts": 1000000, "s": "t"},\n'
    return data[:at] + b"\n" + pad * (STREAM_PAD // len(pad) + 1) + data[at:]


def mutate_stream(rng, data):
    """One damage of a JSON file as a stream sees it (see the block comment)."""
    op = rng.choice(["cut", "cut", "deep", "huge", "huge", "utf8", "utf8", "gzcut"])
    if op in ("cut", "gzcut"):
        body = data.rstrip()
        at = rng.randrange(1, len(body))
        if op == "gzcut":
            gz = gzip.compress(data, mtime=0)
            at = rng.randrange(10, len(gz))
            return gz[:at], f"gzip cut at byte {at} of {len(gz)} (must refuse)"
        return body[:at], f"cut at byte {at} of {len(body)} (must refuse)"
    objs = [m.start() for m in re.finditer(rb'\{"', data)]
    if op == "deep":
        at = rng.choice(objs) + 1
        n = rng.choice([100, 2047, 2049, 100_000])
        return data[:at] + b'"deep": ' + b"[" * n + b"]" * n + b", " + data[at:], f"nesting {n} deep at byte {at}"
    if op == "huge":
        nums = [m for m in re.finditer(rb'(?<=[:\[, ])-?[0-9][0-9.eE+-]*', data)]
        m = rng.choice(nums)
        num = rng.choice(HUGE_NUMBERS).encode()
        return data[:m.start()] + num + data[m.end():], f"number at byte {m.start()} -> {num[:20]!r}"
    strs = [m.start() + 1 for m in re.finditer(rb'": "', data)]
    at = rng.choice(strs) + 2
    bad = rng.choice(BAD_UTF8)
    return data[:at] + bad + data[at:], f"invalid UTF-8 {bad!r} in a string at byte {at} (must refuse)"


def stream_families(root):
    fx = f"{root}/tests/fixtures"
    rd = lambda p: open(p, "rb").read()
    files = {"kineto.json": stream_padded(rd(f"{fx}/small/kineto.json")), "et.json": rd(f"{fx}/small/et.json")}
    return [Family("stream", 60, files, {"kineto.json": mutate_stream, "et.json": mutate_stream},
                   [["inspect", "{F}", "--json"], ["simulate", "{F}", "--gpus", "2", "--json"]])]


# Kineto categories mitosis reads (tracer/kineto.c): a damaged dur on one of these is refused.
KINETO_READ = {"cpu_op", "user_annotation", "operator", "cuda_runtime", "cuda_driver", "hip_runtime", "kernel",
               "gpu_memcpy", "gpu_memset", "python_function"}


def is_num(v):
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def damaged_kineto(doc):
    """Why a Kineto document must be refused (a read event's dur negative or not a number)."""
    events = doc.get("traceEvents") if isinstance(doc, dict) else doc
    for i, e in enumerate(events if isinstance(events, list) else []):
        if not isinstance(e, dict) or e.get("ph") != "X" or e.get("cat") not in KINETO_READ or "dur" not in e:
            continue
        if not isinstance(e.get("name"), str) or not is_num(e.get("ts")):
            return None  # refused anyway, for its name or ts
        d = e["dur"]
        if not is_num(d) or d < 0:
            return f"traceEvents[{i}].dur is {d!r}"
    return None


def bare_bw_too_small(text):
    try:
        return float(text) < 1e6
    except ValueError:
        return False


def damaged_topology(name, data):
    """Why a topology file must be refused (a bandwidth without a unit below 1e6 B/s)."""
    if name.endswith(".csv"):
        for row in csv.reader(io.StringIO(data.decode(errors="replace"))):
            if len(row) >= 3 and row[0] != "src" and bare_bw_too_small(row[2].strip()):
                return f"bare bandwidth {row[2]!r}"
        return None
    doc = json.loads(data)
    if not isinstance(doc, dict):
        return None
    lists = [doc.get(k) for k in ("links", "overrides")]
    items = [doc.get("defaults")] + [x for v in lists if isinstance(v, list) for x in v]
    for x in items:
        bw = x.get("bandwidth") if isinstance(x, dict) else None
        if (is_num(bw) and 0 < bw < 1e6) or (isinstance(bw, str) and bare_bw_too_small(bw.strip())):
            return f"bare bandwidth {bw!r}"
    return None


def must_refuse(files):
    """Why these inputs must give exit 2 whatever else they hold, or None."""
    for name, data in files.items():
        try:
            if name.startswith("kineto.json"):
                why = damaged_kineto(json.loads(gzip.decompress(data) if name.endswith(".gz") else data))
            elif name.startswith("topo."):
                why = damaged_topology(name, data)
            else:
                why = None
        except (ValueError, OSError, EOFError, UnicodeDecodeError, RecursionError):
            why = None  # not readable as such: refused for that instead
        if why:
            return f"{name}: {why}"
    return None


def make_case(fam, idx, seed):
    """(files, description) of case idx of a family: deterministic in (seed, family, idx)."""
    rng = random.Random(f"{seed}/{fam.name}/{idx}")
    files = dict(fam.files)
    if idx == "base":
        return files, "unmutated"
    if fam.choices:
        return files, f"choice {rng.randrange(len(fam.choices))}"
    targets = sorted(fam.targets)
    if fam.drop_one and rng.random() < 0.06:
        gone = rng.choice(sorted(files))
        del files[gone]
        return files, f"{gone} missing"
    name = rng.choice(targets)
    kind = fam.targets[name]
    mutate = kind if callable(kind) else {"json": mutate_json_file, "gz": mutate_gz_file, "csv": mutate_csv_file,
                                          "cut": mutate_cut, "bytes": mutate_bytes}[kind]
    files[name], what = mutate(rng, files[name])
    return files, f"{name}: {what}"


# ---- flags refused where they do not apply (issue 41) -------------------------------------------
# Each use must exit 2 with one stderr line naming the flag ({S}: the small fixture, {T}: traces/).
FLAG_REFUSALS = [
    ("--seq", ["{S}", "--gpus", "2", "--seq", "64"]),  # no attention to read a sequence length from
    ("--seq", ["{S}", "--gpus", "2", "--seq", "1"]),
    ("--seq 127 with --cp 2", ["{T}/h100-vit-tiny-b4", "--gpus", "2", "--cp", "2", "--seq", "127"]),
    ("--etp 2 needs --ep", ["{S}", "--gpus", "4", "--tp", "4", "--etp", "2"]),
    ("--dist-opt", ["{S}", "--gpus", "1", "--dist-opt"]),  # one data-parallel rank
    ("--dist-opt cannot be combined with --zero", ["{S}", "--gpus", "2", "--dist-opt", "--zero", "1"]),
    ("--comm-slowdown", ["{S}", "--gpus", "2", "--comm-slowdown", "11"]),
    ("--precision fp8-mixed", ["{S}", "--gpus", "2", "--precision", "fp8-mixed"]),  # CPU ranks: no FP8 GEMMs
]


def flag_refusals(binary, root, timeout):
    """Problems of the FLAG_REFUSALS runs (empty: each refused in one line naming its flag)."""
    probs = []
    for flag, cmd in FLAG_REFUSALS:
        args = ["simulate", *[a.replace("{S}", f"{root}/tests/fixtures/small").replace("{T}", f"{root}/traces")
                              for a in cmd]]
        p = subprocess.run(["timeout", str(timeout), binary, *args], capture_output=True, text=True, env=SIM.env)
        lines = p.stderr.rstrip("\n").split("\n") if p.stderr else []
        if p.returncode != 2 or len(lines) != 1 or flag not in lines[0]:
            probs.append(f"mitosis {' '.join(args)}: exit {p.returncode}, stderr {p.stderr.strip()[:200]!r} "
                         f"(want exit 2, one line naming {flag})")
    return probs


# ---- running and judging -------------------------------------------------------------------

TIME_KEYS = re.compile(r"(_ms|_us|_s|_ns|bytes|_Bps|_GBps|samples_per_s|_count|batch_size|^ops|^kernels|"
                       r"^layers|^tensors|^gpus)$")


def bad_numbers(doc, path="", skip=("whatif",)):
    """Paths of numbers in a --json output that are negative where a time/size is expected."""
    out = []
    if isinstance(doc, dict):
        for k, v in doc.items():
            if k in skip:
                continue
            p = f"{path}.{k}" if path else k
            if isinstance(v, (int, float)) and not isinstance(v, bool):
                if (TIME_KEYS.search(k) or path.endswith(("time_ms", "tensor_bytes", "traced_ms",
                                                          "predicted_ms"))) and v < 0:
                    out.append(f"{p}={v}")
            else:
                out += bad_numbers(v, p, skip)
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            out += bad_numbers(v, f"{path}[{i}]", skip)
    return out


def check_json_output(out):
    """Problems of a --json stdout: not JSON, NaN/Infinity, negative times or sizes, a GPU
    breakdown that does not add up to the step (sim/simulate.h)."""
    def no_const(c):
        raise ValueError(f"non-finite number {c}")
    try:
        doc = json.loads(out, parse_constant=no_const)
    except ValueError as e:
        return [f"--json output is not finite JSON: {e}"]
    probs = []
    neg = bad_numbers(doc)
    if neg:
        probs.append("negative time/size in --json: " + ", ".join(neg[:4]))
    if isinstance(doc, dict) and isinstance(doc.get("gpus"), list) and "step_ms" in doc:
        run = doc.get("whatif", {}).get("run_ms", doc["step_ms"] * doc.get("steps", 1))
        for g in doc["gpus"]:
            s = sum(g.get(k, 0) for k in ("compute_ms", "stretch_ms", "host_wait_ms", "exposed_comm_ms", "peer_wait_ms",
                                          "bubble_ms", "idle_ms"))
            if abs(s - run) > 1e-6 * max(abs(run), 1e-3):
                probs.append(f"GPU {g['rank']}: compute+host wait+exposed+peer+bubble+idle = {s} "
                             f"!= run {run}")
                break
    return probs


def judge(rc, out, err, args, case_dir, refuse=None):
    """Problems with one run (empty: it kept the rule); refuse: why it must exit 2."""
    probs = []
    if rc == 124:
        return ["timeout (hang?)"]
    if rc == 0 and refuse:
        probs.append(f"exit 0 on an input that must be refused ({refuse})")
    if rc < 0 or rc > 128:
        probs.append(f"killed by a signal (exit {rc})")
    for marker in ("AddressSanitizer", "LeakSanitizer", "runtime error:", "Segmentation fault",
                   "Assertion", "igraph"):
        if marker in err:
            probs.append(f"stderr has '{marker}'")
    if rc not in (0, 2) and not probs:
        probs.append(f"exit {rc}, want 0 or 2")
    if rc == 2:
        lines = err.rstrip("\n").split("\n") if err else []
        if len(lines) != 1:
            probs.append(f"{len(lines)} stderr lines, want 1")
        elif not lines[0].startswith("mitosis"):
            probs.append("stderr line does not start with 'mitosis'")
        elif case_dir not in err and "--" not in err and not any(a.startswith("/dev/") and a in err for a in args):
            probs.append("the error names neither the input file nor a flag")
    if rc == 0 and "--json" in args:
        probs += check_json_output(out)
    return probs


def folder_digest(d):
    """{relative path: what it holds} of every file under d (links followed), for 'nothing changed': its
    bytes, or for a file over 1 MiB (the 65 MiB sparse one, the gzip bomb: read at every case, they were
    most of this script's own time) its size, inode and modification time in ns (a write changes them)."""
    out = {}
    for dirpath, _, names in os.walk(d):
        for n in names:
            p = os.path.join(dirpath, n)
            try:
                st = os.stat(p)
                if not os.path.isfile(p):
                    out[os.path.relpath(p, d)] = b"(not a file)"
                elif st.st_size > 1 << 20:
                    out[os.path.relpath(p, d)] = (st.st_size, st.st_ino, st.st_mtime_ns)
                else:
                    out[os.path.relpath(p, d)] = open(p, "rb").read()
            except OSError as e:
                out[os.path.relpath(p, d)] = str(e).encode()
    return out


LOAD_FLAGS = ("--step", "--moe-pattern")  # flags that change how a trace loads (trace_load_opts)

# ---- the binary and the library ------------------------------------------------------------
# A run of the binary under ASan costs about 0.2 CPU s before it reads anything (50 shared
# libraries, LeakSanitizer at exit), most of this script's time. So each case runs through the
# binary its first command, every command the library cannot answer (inspect, perfmodel, topo,
# cluster, an output file, a load option, --as-is) and, where the mutated file is the trace (the
# first command is inspect), one of its `simulate ... --json` commands in rotation (case number mod
# their count: over the cases each configuration runs on damaged traces under the binary, with
# LeakSanitizer); a base case runs every command through the binary. Its other `simulate --json`
# commands run through libmitosis in this process (libsim.Sim: the same configuration words, the
# CLI's JSON and messages byte for byte; ASan's memory checks, no leak check): where the config file
# is the mutated input (model, gpus, topojson, topocsv), its reader ran under the binary in the
# case's first command. Where a command ran through both, the two must agree (exit code, stderr,
# the JSON but for MEASURED), and a trace the binary refused to load must be refused by the library
# with the same message. A crash inside the library stops this process: the case it was running is
# in WORK/lib-running. (ASan, full scale: a library simulation ~0.04 CPU s, a binary run ~0.3 s.)

SIM = libsim.Sim(sys.argv[1] if __name__ == "__main__" and len(sys.argv) > 1 else "mitosis")
LIB_WORDS = re.compile(r"^mitosis (inspect|simulate): ")


def lib_capable(args):
    """The words of `simulate TRACE WORDS --json` for the library, or None (the binary only)."""
    if SIM.m is None or len(args) < 3 or args[0] != "simulate" or args[-1] != "--json" or \
            not args[2].startswith("-") or any(a in libsim.CLI_ONLY + ("--as-is",) for a in args):
        return None  # args[2] not a flag: a second file; --as-is: the CLI's Chakra workload runner
    return args[2:-1]


BIN_RUNS, BIN_LOCK = [0], threading.Lock()


def run_binary(binary, args, timeout):
    with BIN_LOCK:
        BIN_RUNS[0] += 1
    try:
        p = subprocess.run(["timeout", str(timeout), binary, *args], capture_output=True,
                           timeout=timeout + 10, env=SIM.env)
        return p.returncode, p.stdout.decode(errors="replace"), p.stderr.decode(errors="replace")
    except subprocess.TimeoutExpired:
        return 124, "", ""


def run_library(work, cid, args, words):
    """(exit code, stdout, stderr) of `mitosis ARGS` through libmitosis."""
    with open(f"{work}/lib-running", "w") as f:
        f.write(f"{cid}: mitosis {' '.join(args)}\n")
    return SIM.simulate(args[1], *words)


def load_agrees(work, cid, d, args, err):
    """Problems when the library does not refuse a trace the binary refused to load (inspect)."""
    rc, _, lerr = run_library(work, cid, ["simulate", d, "--gpus", "1", "--json"], ["--gpus", "1"])
    if rc != 2 or LIB_WORDS.sub("", lerr) != LIB_WORDS.sub("", err):
        return [f"the library loads it otherwise: exit {rc}, {lerr.strip()[:200]!r}"]
    return []


MEASURED = ("wall_s", "peak_rss_bytes")  # the run's own clock and memory (sim/simulate.h): not compared


def json_differs(out, lout):
    """Problems when the library's --json text is not the binary's (but for MEASURED values)."""
    def strip(v):
        if isinstance(v, dict):
            return {k: strip(x) for k, x in v.items() if k not in MEASURED}
        return [strip(x) for x in v] if isinstance(v, list) else v
    try:
        a, b = json.loads(out), json.loads(lout)
    except ValueError as e:
        return [f"libmitosis's stdout is not the binary's ({e})"]
    if strip(a) != strip(b):
        keys = sorted(k for k in set(a) | set(b) if strip(a.get(k)) != strip(b.get(k))) if isinstance(a, dict) and \
            isinstance(b, dict) else []
        return [f"libmitosis's --json differs from the binary's (in {', '.join(keys[:6]) or 'its shape'})"]
    return []


def run_command(binary, case, ci, args, timeout):
    """(exit code, stdout, stderr, problems of the two paths disagreeing) of one command."""
    work, cid, idx, rotate = case
    words = lib_capable(args)
    if words is None or ci == 0 or idx == "base" or ci == rotate:
        rc, out, err = run_binary(binary, args, timeout)
        if words is None or rc == 124 or rc < 0 or rc > 128:  # no library run after a hang or a crash
            return rc, out, err, []
        lrc, lout, lerr = run_library(work, cid, args, words)
        if (lrc, lerr) != (rc, err):
            return rc, out, err, [f"libmitosis answers otherwise: exit {lrc}, stderr {lerr.strip()[:200]!r}"]
        return rc, out, err, [] if lout == out else json_differs(out, lout)
    rc, out, err = run_library(work, cid, args, words)
    return rc, out, err, []


def run_case(binary, fam, idx, seed, work, timeout):
    cid = f"{fam.name}-{idx}"
    files, what = make_case(fam, idx, seed)
    refuse = must_refuse(files) if idx != "base" else None
    d = f"{work}/{cid}"
    os.makedirs(d)
    for n, data in files.items():
        open(f"{d}/{n}", "wb").write(data)
    if fam.prepare:
        fam.prepare(d)
    results = []
    commands = fam.commands
    if fam.choices and idx != "base":  # one refused command; the folder must stay as it was
        label, cmd = fam.choices[int(what.split()[1])]
        what, commands = f"{label} (must refuse)", [cmd]
        before = folder_digest(d)
    sims = [i for i, c in enumerate(commands) if lib_capable(c)]
    rotate = sims[(0 if idx == "base" else idx) % len(sims)] if sims and commands[0][0] == "inspect" else -1
    case = (work, cid, idx, rotate)
    for ci, cmd in enumerate(commands):
        args = [a.replace("{F}", d) for a in cmd]
        t0 = time.time()
        rc, out, err, probs = run_command(binary, case, ci, args, timeout)
        probs += judge(rc, out, err, args, d, refuse)
        if fam.choices and idx != "base" and folder_digest(d) != before:
            probs.append("an input in the case folder changed, or an output was left there")
        if "(must refuse)" in what and rc != 2:
            probs.append(f"a damaged input was accepted (exit {rc}), want exit 2")
        if fam.refuse_cut and "mid-line" in what and rc != 2:
            probs.append(f"a file cut mid-line was accepted (exit {rc}), want exit 2")
        if idx == "base" and rc != 0:
            probs.append("the unmutated input fails (fix the fuzz set-up)")
        stop = fam.stop_after_load and rc == 2 and not probs and args[0] == "inspect" and \
            not any(a in LOAD_FLAGS for c in commands for a in c)
        if stop and SIM.m is not None:
            probs += load_agrees(work, cid, d, args, err)
        results.append((args, rc, err, probs, time.time() - t0))
        if stop:
            # inspect refuses only when mt_trace_load does (cli/cmd_inspect.c); the commands after it
            # load the same folder with the same default options (run/input.c, run/perfmodel.c), so
            # they would stop at the same error: not run (the CI's time: 1 of 3 to 9 of 10 mutated
            # cases of these families are refused)
            break
    SIM.forget(d)
    failed = any(r[3] for r in results)
    if failed:
        with open(f"{d}/commands.txt", "w") as f:
            f.write(f"# case {cid}, seed {seed}: {what}\n")
            for args, rc, err, probs, _ in results:
                f.write(f"mitosis {' '.join(args)}\n# exit {rc}: {'; '.join(probs) or 'ok'}\n"
                        f"# stderr: {err[:2000]!r}\n")
    else:
        shutil.rmtree(d)
    return cid, what, results, failed


def case_key(fam, idx, seed):
    """What a case runs: its files and (a choices case) its command; equal keys, equal runs."""
    files, what = make_case(fam, idx, seed)
    key = hashlib.sha256()
    for n in sorted(files):
        key.update(f"{n}\0{len(files[n])}\0".encode() + files[n])
    if fam.choices and idx != "base":
        key.update(what.encode())
    return key.hexdigest()


def main():
    binary, root = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    seed = int(os.environ.get("MT_FUZZ_SEED", "1"))
    scale = float(os.environ.get("MT_FUZZ_SCALE", "1"))
    only = set(filter(None, os.environ.get("MT_FUZZ_ONLY", "").split(",")))
    jobs = int(os.environ.get("MT_FUZZ_JOBS", "2"))
    timeout = int(os.environ.get("MT_FUZZ_TIMEOUT", "20"))
    work = tempfile.mkdtemp(prefix="mitosis-fuzz.")
    t0 = time.time()
    fams = families(root, work, binary) + stream_families(root)
    if only:  # exactly these ids, whatever the scale they came from
        by_name = {f.name: f for f in fams}
        cases = []
        for cid in sorted(only):
            name, _, idx = cid.rpartition("-")
            if name not in by_name or not (idx == "base" or idx.isdigit()):
                sys.exit(f"fuzz: no case '{cid}' (ids look like small-7, topojson-base)")
            cases.append((by_name[name], idx if idx == "base" else int(idx)))
    else:
        cases = [(f, i) for f in fams for i in ["base", *range(max(1, round(f.count * scale)))]]
    outcomes, runs, failures, seen, dups = {}, 0, [], {}, 0
    todo = []
    for f, i in cases:  # a case whose files (and command) equal an earlier one's would run the same
        key = (f.name, case_key(f, i, seed))
        if key in seen:
            dups += 1
        else:
            seen[key] = i
            todo.append((f, i))
    with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as ex:
        futs = [ex.submit(run_case, binary, f, i, seed, work, timeout) for f, i in todo]
        for fut in futs:  # in case order, so the log is the same run to run
            cid, what, results, failed = fut.result()
            for args, rc, err, probs, _ in results:
                runs += 1
                key = "fail" if probs else f"exit {rc}"
                outcomes[key] = outcomes.get(key, 0) + 1
                if probs:
                    print(f"FAIL: case {cid} (seed {seed}; {what}): mitosis {' '.join(args)}: "
                          f"{'; '.join(probs)}; stderr: {err.strip()[-300:]!r}")
            if failed:
                failures.append(cid)
    flag_probs = [] if only else flag_refusals(binary, root, timeout)
    for pr in flag_probs:
        print(f"FAIL: a flag that does not apply: {pr}")
    wall = time.time() - t0
    summary = ", ".join(f"{k}: {v}" for k, v in sorted(outcomes.items()))
    if not only:
        summary += f"; {len(FLAG_REFUSALS) - len(flag_probs)} of {len(FLAG_REFUSALS)} inapplicable flags refused"
    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    print(f"fuzz: CPU s: this process (mutations, judging, libmitosis) {me.ru_utime + me.ru_stime:.1f}, "
          f"the binary's runs {kids.ru_utime + kids.ru_stime:.1f}")
    print(f"fuzz: seed {seed}, {len(cases)} cases ({dups} the same as an earlier one: not run again), "
          f"{runs} runs ({summary}); {BIN_RUNS[0]} runs of the binary, {SIM.lib_runs} simulations "
          f"through libmitosis, {wall:.1f} s")
    if failures:
        print(f"fuzz: {len(failures)} failing cases kept in {work} "
              f"(rerun one: MT_FUZZ_SEED={seed} MT_FUZZ_ONLY={failures[0]})")
        sys.exit(1)
    if flag_probs:
        sys.exit(1)
    shutil.rmtree(work)


if __name__ == "__main__":
    main()
