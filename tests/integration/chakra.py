"""chakra.sh's round trips in one process: each plan simulated through libmitosis (libsim.py: each trace
opened once), its Chakra export written by mitosis_result_write ("chakra", with --chakra-json, and again
with --chakra-comm-only: the library's output options), then read back by the binary (`simulate --as-is`,
`chakra-check`), every exported .et of a plan parsed by one protoc run. Checks per plan:
  - the step back within 0.1 % (it is exact: same order, same network);
  - protoc --decode with the project's .proto parses every file, no node lost;
  - the form ASTRA-sim reads (comm_groups.json, pg_name ids, no CPU node, durations, FSDP sizes);
  - chakra-check accepts it and counts what the files hold;
  - --chakra-comm-only: the same communication nodes, depending on each other only; still runs.
Usage: chakra.py MITOSIS ROOT TMP SHARED_TRACES (started by libsim.bash's libpy: the library required).
Prints "ok: ..." per plan; exit 1 at the first failure ("FAIL: plan: what")."""
import glob
import json
import os
import re
import shutil
import subprocess
import sys
import time

import libsim

BIN, ROOT, TMP, SHARED = sys.argv[1:5]
sim = libsim.Sim(BIN)
if sim.m is None:
    sys.exit("FAIL: chakra.py needs libmitosis beside the binary (start it with libsim.bash's libpy)")
PROTOC = shutil.which("protoc")


class Bad(Exception):
    pass


def check(ok, what):
    if not ok:
        raise Bad(what)


def varint(b, at):
    n = s = 0
    while True:
        c = b[at]
        at += 1
        n |= (c & 0x7f) << s
        s += 7
        if c < 0x80:
            return n, at


def enc(n):
    o = bytearray()
    while True:
        o.append((n & 0x7f) | (0x80 if n > 0x7f else 0))
        n >>= 7
        if not n:
            return bytes(o)


def et_nodes(d):
    """{rank: the nodes of d/mitosis.RANK.et} by its length-delimited framing (the metadata first)."""
    got = {}
    for f in glob.glob(d + "/*.et"):
        b, at, k = open(f, "rb").read(), 0, 0
        while at < len(b):
            n, at = varint(b, at)
            at += n
            k += 1
        got[int(f.split(".")[-2])] = k - 1
    return got


def check_protoc(d):
    """Every .et of d parsed by one protoc run: each file an EtFile (its messages field 1, the metadata,
    or 2, a node) inside one EtFiles message; each file's node count in protoc's text equals its own."""
    files, out = sorted(glob.glob(d + "/*.et")), bytearray()
    want = []
    for f in files:
        b, at, msg, k = open(f, "rb").read(), 0, bytearray(), 0
        while at < len(b):
            n, at = varint(b, at)
            msg += bytes([0x0a if k == 0 else 0x12]) + enc(n) + b[at:at + n]
            at += n
            k += 1
        out += b"\x0a" + enc(len(msg)) + msg
        want.append(k - 1)
    p = subprocess.run([PROTOC, "-I", ROOT + "/tracer", "-I", TMP, "--decode=EtFiles", TMP + "/etfile.proto"],
                       input=bytes(out), capture_output=True)
    check(p.returncode == 0, f"protoc --decode failed: {p.stderr.decode()[:300]}")
    got = [blk.count("\n  node {") for blk in p.stdout.decode().split("\nfile {")]  # a block per file
    check(p.stdout.startswith(b"file {") and got == want, f"protoc lost nodes: {got} of {want} per file")


def check_json_form(d):
    """--chakra-json: per rank the metadata line, then one line per node of the .et, each of a type
    mitosis writes."""
    et = et_nodes(d)
    js = sorted(glob.glob(d + "/mitosis.*.json"))
    check(sorted(int(f.split(".")[-2]) for f in js) == sorted(et), f"{d}: .json {len(js)} files, .et {len(et)}")
    for f in js:
        lines = [json.loads(x) for x in open(f)]
        check(lines[0] == {"version": "0.0.4", "attr": [{"name": "comm_size_convention", "stringVal": "chakra"}]},
              f"{f}: metadata {lines[0]}")
        check(all(n.get("type") in ("COMP_NODE", "COMM_COLL_NODE", "COMM_SEND_NODE", "COMM_RECV_NODE")
                  for n in lines[1:]), f"{f}: a node of another type")
        check(len(lines) - 1 == et[int(f.split(".")[-2])], f"{f}: {len(lines) - 1} nodes, its .et {et[int(f.split('.')[-2])]}")


def check_astra_form(d):
    """What ASTRA-sim needs of an export (its JSON form and comm_groups.json), from the files alone: the
    size convention in the metadata; every pg_name a decimal id > 0 listed in comm_groups.json with this
    rank as a member, and used by exactly its members; no CPU node; per rank the written duration_micros
    of the GPU nodes sum to the exact picoseconds within 0.5 us (the rounding carries); with FSDP, N x an
    all-gather's comm_size is the reduce-scatter's."""
    groups = {int(k): v for k, v in json.load(open(d + "/comm_groups.json")).items()}
    for k, v in groups.items():
        check(k > 0 and v == sorted(set(v)) and len(v) >= 2, f"comm group {k}: {v}")
    users, ag, rs = {}, set(), set()
    for f in sorted(glob.glob(d + "/mitosis.*.json")):
        r = int(f.split(".")[-2])
        lines = [json.loads(x) for x in open(f)]
        check(lines[0] == {"version": "0.0.4", "attr": [{"name": "comm_size_convention", "stringVal": "chakra"}]},
              f"{f}: metadata {lines[0]}")
        us = ps = 0
        for n in lines[1:]:
            a = {x["name"]: x for x in n["attr"]}
            check(a["is_cpu_op"]["boolVal"] is False, f"{f}: a CPU node {n}")
            if n["type"] == "COMP_NODE":
                us += int(n.get("durationMicros", 0))
                ps += int(a["mitosis.duration_ps"]["int64Val"])
            if n["type"] == "COMM_COLL_NODE":
                pg = a["pg_name"]["stringVal"]
                check(re.fullmatch(r"[1-9][0-9]*", pg), f"{f}: pg_name {pg!r}")
                check(r in groups[int(pg)], f"{f}: rank {r} not in group {pg} {groups[int(pg)]}")
                users.setdefault(int(pg), set()).add(r)
                size, n_g = int(a["comm_size"]["int64Val"]), len(groups[int(pg)])
                if a["comm_type"]["int64Val"] == "2":
                    ag.add(size * n_g)
                if a["comm_type"]["int64Val"] == "7":
                    rs.add(size)
        check(abs(us - ps / 1e6) <= 0.5 + 1e-9, f"{f}: {us} us written, {ps / 1e6} us exact")
    for k, u in users.items():
        check(sorted(u) == groups[k], f"group {k} used by {sorted(u)}, lists {groups[k]}")
    if rs and ag:
        check(ag == rs, f"FSDP sizes: all-gather x N {sorted(ag)[:4]}, reduce-scatter {sorted(rs)[:4]}")


def check_counts(d, rep):
    """chakra-check's JSON counts what the files hold."""
    files = sorted(glob.glob(d + "/mitosis.*.json"), key=lambda f: int(f.split(".")[-2]))
    check(rep["ranks"] == len(files) and rep["all_gather_comm_size"] == "input", f"chakra-check: {rep['ranks']} ranks")
    for f, pr in zip(files, rep["per_rank"]):
        nodes = [json.loads(x) for x in open(f)][1:]
        comp = [n for n in nodes if n["type"] == "COMP_NODE"]
        check(pr["gpu_nodes"] == len(comp) and pr["gpu_us"] == sum(int(n.get("durationMicros", 0)) for n in comp),
              f"chakra-check's counts differ from {f}")
        check(sum(c["nodes"] for c in pr["collectives"].values()) == sum(n["type"] == "COMM_COLL_NODE" for n in nodes),
              f"chakra-check's collectives differ from {f}")


def check_comm_only(full, cc):
    """The same communication nodes, each depending only on nodes of the file."""
    for f in glob.glob(cc + "/mitosis.*.json"):
        nodes = [json.loads(x) for x in open(f)][1:]
        ids = {int(n.get("id", 0)) for n in nodes}
        check(all(n["type"] != "COMP_NODE" for n in nodes), f"--chakra-comm-only: {f} has compute")
        check(all(int(x) in ids for n in nodes for x in n.get("dataDeps", [])), f"--chakra-comm-only: {f} dangles")
        whole = [json.loads(x) for x in open(full + "/" + os.path.basename(f))][1:]
        check(len(nodes) == sum(n["type"] != "COMP_NODE" for n in whole), f"--chakra-comm-only: {f} lost nodes")


def as_is(d, *args):
    rc, out, err = sim.run("simulate", d, "--as-is", *args)
    check(rc == 0, f"--as-is of {d}: exit {rc}: {err.strip()[:300]}")
    return out


def roundtrip(trace, plan, keep):
    ck, cc = keep + "/ck", keep + "/cc"
    # --chakra runs rings where --algo is auto (run/simulate.c): the written run's step is the ring's
    r = sim.result(trace, *plan, "--algo", "ring", "--chakra-json")
    r._write("chakra", ck)
    a = r.json["step_ms"]
    b = json.loads(as_is(ck, "--json"))["step_ms"]
    check(abs(a - b) <= 1e-3 * a, f"simulate {a} ms, as-is {b} ms")
    if PROTOC:
        check_protoc(ck)
    check_json_form(ck)
    check_astra_form(ck)
    rc, out, err = sim.run("chakra-check", ck, "--json")
    check(rc == 0, f"chakra-check refused the export: {err.strip()[:300]}")
    check_counts(ck, json.loads(out))
    sim.result(trace, *plan, "--algo", "ring", "--chakra-json", "--chakra-comm-only")._write("chakra", cc)
    check_comm_only(ck, cc)
    as_is(cc)


def collective_us(op, nbytes, topo):
    rc, out, err = sim.run("collective", "--op", op, "--bytes", nbytes, "--topology", topo, "--json")
    check(rc == 0, f"collective --op {op}: exit {rc}: {err.strip()[:300]}")
    return json.loads(out)["rows"][0]["time_us"]


def old_convention(src, dst):
    """A fixture rewritten in mitosis's old convention: a mitosis.* attribute on each node, no
    comm_size_convention in the metadata."""
    os.makedirs(dst, exist_ok=True)
    attr = b"\x0a\x0cmitosis.algo" + b"\xea\x01\x04ring"  # name = 1, string_val = 29
    for f in glob.glob(src + "/*.et"):
        b, at, out, k = open(f, "rb").read(), 0, bytearray(), 0
        while at < len(b):
            n, at = varint(b, at)
            m = b[at:at + n]
            at += n
            if k:
                m = m + b"\x52" + enc(len(attr)) + attr  # attr = 10 on each node
            out += enc(len(m)) + m
            k += 1
        open(dst + "/" + os.path.basename(f), "wb").write(out)


def fixtures(fx):
    """ASTRA-sim's 1 MB microbenchmarks run --as-is take exactly the time of `mitosis collective` for the
    same op and size (switch:N and ring:N); all-to-all --algo relay its closed form; a file in the old
    convention the 1 MiB-output all-gather's time."""
    n = 0
    for d in sorted(glob.glob(fx + "/*_*npus_1MB")):
        name = os.path.basename(d)  # all_reduce_8npus_1MB
        ranks = int(name[:-len("npus_1MB")].rsplit("_", 1)[1])
        op = name[:-len("npus_1MB")].rsplit("_", 1)[0].replace("_", "")  # allreduce, alltoall, ...
        # Chakra's size convention: an all-gather's comm_size is each rank's input (its output / N)
        nbytes = 1048576 * (ranks if op == "allgather" else 1)
        for topo in (f"switch:{ranks}", f"ring:{ranks}"):
            a = json.loads(as_is(d, "--topology", topo, "--json"))["step_ms"]
            c = collective_us(op, nbytes, topo)
            check(abs(a * 1e3 - c) <= 1e-9 * c, f"{name} on {topo}: as-is {a} ms, collective {c} us")
            n += 1
    check(n == 16, f"expected 8 fixtures x 2 topologies, ran {n}")
    # all-to-all as ASTRA-sim's ring runs it (--algo relay): N(N-1)/2 steps of S/N, each S/N / B plus
    # two 500 ns hops on switch:N at 100 GB/s
    for r in (4, 8):
        a = json.loads(as_is(f"{fx}/all_to_all_{r}npus_1MB", "--algo", "relay", "--json"))["step_ms"]
        t = r * (r - 1) / 2 * (1048576 / r / 100e9 + 1e-6) * 1e3
        check(abs(a - t) <= 1e-6 * t, f"all-to-all relay on {r} ranks: {a} ms, closed form {t}")
    # the old convention: all-gather comm_size is its output, so the same bytes take the 1 MiB-output time
    old_convention(fx + "/all_gather_4npus_1MB", TMP + "/oldag")
    a = json.loads(as_is(TMP + "/oldag", "--json"))["step_ms"]
    c = collective_us("allgather", 1048576, "switch:4")
    check(abs(a * 1e3 - c) <= 1e-9 * c, f"old convention: as-is {a} ms, collective {c} us")


def library_refusals(trace):
    """The library's output options refused as the binary refuses them: a bad --chakra path and
    --chakra-ranks out of range with the binary's message; an option of another output named."""
    open(TMP + "/afile", "w").close()
    for words, path in ((["--gpus", "2"], TMP + "/afile/sub"), (["--gpus", "2", "--chakra-ranks", "7"], TMP + "/x")):
        rc, _, err = sim.run("simulate", trace, *words, "--chakra", path)
        check(rc == 2 and err.startswith("mitosis simulate: "), f"binary {words} --chakra {path}: exit {rc}")
        try:
            sim.result(trace, *words)._write("chakra", path)
            check(False, f"the library wrote {path} with {words}")
        except sim.m.Error as e:
            check(e.message == err.strip()[len("mitosis simulate: "):] and e.exit_code == 2,
                  f"library: {e.message!r}, binary: {err.strip()!r}")
    try:
        sim.result(trace, "--gpus", "2", "--chakra-json")._write("timeline", TMP + "/t.json")
        check(False, "the library wrote a timeline with --chakra-json")
    except sim.m.Error as e:
        check('mitosis_result_write("timeline"): --chakra-json' in e.message and "need --chakra DIR" in e.message,
              f"--chakra-json on a timeline: {e.message!r}")
    check(not os.path.exists(TMP + "/t.json") and not os.path.exists(TMP + "/x"), "a refused write left files")
    # an output that names an input (the trace folder, its Kineto file) is refused as the binary
    # refuses it, and the input is left as it was
    before = {f: os.stat(os.path.join(trace, f)) for f in os.listdir(trace)}
    for what, path in (("chakra", trace), ("timeline", os.path.join(trace, "kineto.json.gz"))):
        rc, _, err = sim.run("simulate", trace, "--gpus", "2", "--" + what, path)
        try:
            sim.result(trace, "--gpus", "2")._write(what, path)
            check(False, f"the library wrote {what} onto the input {path}")
        except sim.m.Error as e:
            check(rc == 2 and e.message == err.strip()[len("mitosis simulate: "):] and "input" in e.message,
                  f"{what} onto an input: library {e.message!r}, binary exit {rc} {err.strip()!r}")
    after = {f: os.stat(os.path.join(trace, f)) for f in os.listdir(trace)}
    check(sorted(after) == sorted(before) and all((after[f].st_size, after[f].st_mtime_ns) ==
                                                  (before[f].st_size, before[f].st_mtime_ns) for f in before),
          "a refused write onto the input changed the trace folder")


def auto_rings(trace):
    """Where --algo auto would run NCCL's tuner (a GPU trace on a topology preset), --chakra runs rings and
    says so, once, as a warning; --algo ring asked, or CPU processes (auto's rings), say nothing."""
    word = "so the collectives run as rings here, not NCCL's tuner"
    for words, warned in ((["--topology", "multinode:nodes=2,gpus=4"], True), (["--algo", "ring"], False)):
        rc, out, err = sim.run("simulate", trace, "--gpus", "8", *words, "--chakra", TMP + "/ar", "--json")
        ws = json.loads(out)["warnings"] if rc == 0 else []
        check(rc == 0 and sum(word in w for w in ws) == int(warned),
              f"--chakra {words}: exit {rc}, warnings {ws}")
        check(json.loads(out)["plan"]["algo"] == "ring" if rc == 0 else False, f"--chakra {words}: not rings")
    rc, out, _ = sim.run("simulate", ROOT + "/traces/cpu-resmlp-b64", "--gpus", "8", "--chakra", TMP + "/ar2", "--json")
    check(rc == 0 and not any(word in w for w in json.loads(out)["warnings"]), "CPU processes: a rings warning")


def main():
    open(TMP + "/etfile.proto", "w").write(
        'syntax = "proto3";\nimport "chakra.proto";\n'
        "message EtFile { ChakraProtoMsg.GlobalMetadata meta = 1; repeated ChakraProtoMsg.Node node = 2; }\n"
        "message EtFiles { repeated EtFile file = 1; }\n")
    tr = ROOT + "/traces/"
    cases = []
    for t in ("cpu-gpt-tiny-b8", "cpu-resmlp-b64"):
        cases += [(tr + t, "--gpus 8 --strategy ddp"), (tr + t, "--gpus 2 --tp 2"),
                  (tr + t, "--gpus 4 --pp 4 --schedule 1f1b"), (tr + t, "--gpus 8 --dp 2 --tp 2 --pp 2")]
    cases += [(tr + "cpu-gpt-tiny-b8", "--gpus 16 --dp 4 --pp 4 --topology ring:16"),
              (tr + "cpu-gpt-tiny-b8", "--gpus 4 --fsdp"),
              (ROOT + "/tests/fixtures/moe-tiny", "--gpus 4 --ep 2 --expert-skew 0")]
    if os.path.isdir(SHARED + "/param-resnet"):  # a GPU trace: the host model's launch gaps become delay nodes
        cases.append((SHARED + "/param-resnet", "--gpus 8 --dp 2 --tp 2 --pp 2"))
    fx = SHARED + "/../chakra/astra-sim-microbenchmarks"
    parts = [("the library's refusals", lambda: library_refusals(tr + "cpu-resmlp-b64")),
             ("--chakra's rings where auto runs NCCL's tuner", lambda: auto_rings(tr + "h100-resnet18-b8"))]
    if os.path.isdir(fx):
        parts.append(("the fixtures against `mitosis collective`", lambda: fixtures(fx)))
    for trace, plan in cases:  # each export kept in TMP/rt/NAME for chakra.sh's checks of the binary
        keep = f"{TMP}/rt/{os.path.basename(trace)}_{'_'.join(plan.split())}"
        parts.append((f"round trip {os.path.basename(trace)} {plan}", lambda t=trace, p=plan, k=keep: roundtrip(t, p.split(), k)))
    for name, f in parts:
        t0 = time.time()
        try:
            f()
        except (Bad, sim.m.Error) as e:
            print(f"FAIL: {name}: {e}")
            return 1
        print(f"ok: {name} ({time.time() - t0:.2f} s)")
    skipped = [why for why, missing in (("protoc absent, wire checks skipped", not PROTOC),
                                         (f"{fx} absent, fixture checks skipped", not os.path.isdir(fx))) if missing]
    for why in skipped:
        print("SKIP: " + why)
    return 77 if skipped else 0


sys.exit(main())
