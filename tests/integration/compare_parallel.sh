#!/usr/bin/env bash
# Integration: `compare --jobs N` and `mpirun -np K mitosis compare` print the serial table byte
# for byte, but for the wall time of the last line ("N plans in S s"; JSON "wall_s"). Cases cover
# what the threads share or lock: the auto plan list (a hundred plans, every strategy), JSON,
# fat-tree with ECMP and a topology file (the igraph mirror built under the pool's lock), a sweep
# with a {nodes} template, a what-if with a failing link (routes recomputed mid-run), --routing
# latency (igraph's Dijkstra during the run: serial), and a list whose every plan is refused (the
# same error). With the ASan build this is the race and memory check of the worker threads. The
# MPI part runs when mpirun is there and mitosis was built with MPI (else says why); OpenMPI trips
# LeakSanitizer, so leak detection is off for it.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" - "$bin" "$root/traces" "$(dirname "$0")" <<'EOF'
import json, os, re, shutil, subprocess, sys, tempfile
sys.path.insert(0, sys.argv[3])
from simcheck import Checker

bin_, own = sys.argv[1:3]
c = Checker(bin_)
gpt, rn = f"{own}/cpu-gpt-tiny-b8", f"{own}/cpu-resnet18-b8"
LAST = re.compile(r"\n\d+ (plans?|runs?) in [0-9.]+ s\n$")


def strip(out, as_json):
    """The output without its wall time."""
    if as_json:
        d = json.loads(out)
        return json.dumps({k: v for k, v in d.items() if k != "wall_s"}, sort_keys=True)
    return LAST.sub("\n", out)


tmp = tempfile.mkdtemp()
topo = f"{tmp}/two-switches.csv"  # 8 GPUs, two leaf switches, two spines: equal-cost paths
with open(topo, "w") as f:
    f.write("src,dst,bandwidth,latency\n")
    for g in range(8):
        f.write(f"gpu{g},leaf{g // 4},50GB/s,1us\n")
    for l in range(2):
        for s in range(2):
            f.write(f"leaf{l},spine{s},100GB/s,2us\n")

cases = [
    ("auto plans, 16 GPUs", [gpt, "--gpus", 16], False),
    ("auto plans --json", [gpt, "--gpus", 16], True),
    ("fat-tree k=4, ECMP", [rn, "--gpus", 16, "--topology", "fattree:k=4", "--ecmp"], False),
    ("topology file", [rn, "--gpus", 8, "--topology", topo, "--ecmp"], False),
    ("gpus sweep on {nodes}", [rn, "--tp", 2, "--sweep", "gpus=4:32", "--topology",
                               "multinode:nodes={nodes},gpus=4", "--gpus-per-node", 4], False),
    ("what-if: a link fails", [rn, "--gpus", 8, "--plans", "ddp=8,tp=2:ddp=4,pp=2:ddp=4:mb=4,dp=8",
                               "--fail-link", "leaf0->spine0@1ms", "--topology", topo], False),
    ("--routing latency", [rn, "--gpus", 8, "--topology", topo, "--routing", "latency"], False),
]
for name, args, as_json in cases:
    extra = ["--json"] if as_json else []
    rc1, out1, err1 = c.run("compare", *args, *extra, "--jobs", 1)
    if not c.check(f"{name}: serial run exits 0", rc1 == 0 and out1, err1.strip()):
        continue
    n = len(json.loads(out1)["rows"]) if as_json else None
    c.check(f"{name}: the last line says how many rows and how long",
            as_json or LAST.search(out1), out1[-200:])
    for jobs in (2, 3):
        rc, out, err = c.run("compare", *args, *extra, "--jobs", jobs)
        c.check(f"{name}: --jobs {jobs} prints the serial output byte for byte (but the wall time)",
                rc == 0 and strip(out, as_json) == strip(out1, as_json),
                f"exit {rc}: {err.strip()}" if rc else "outputs differ")
        c.check(f"{name}: --jobs {jobs} quiet on stderr when piped", err == "", err)

# every plan refused: the same one-line error, exit 2, whatever the threads
want = c.run("compare", rn, "--gpus", 8, "--plans", "tp=3,tp=5,tp=7", "--jobs", 1)
got = c.run("compare", rn, "--gpus", 8, "--plans", "tp=3,tp=5,tp=7", "--jobs", 2)
c.check("no plan could run: the serial error, exit 2", want[0] == 2 and got[0] == 2 and want[2] == got[2]
        and "no plan could run; tp=3" in got[2] and got[1] == "", (want, got))
rc, out, err = c.run("compare", rn, "--gpus", 8, "--jobs", 0)
c.check("--jobs 0 is refused in one line (exit 2)", rc == 2 and "--jobs" in err and err.count("\n") == 1, err)

# Across processes: mpirun -np K, rank 0 prints the table once.
mpirun = shutil.which("mpirun")
if not mpirun:
    c.skip("MPI part: mpirun is not installed (apt-get install openmpi-bin)")
else:
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    args = ["compare", gpt, "--gpus", 16, "--jobs", 1]
    rc1, out1, _ = c.run(*args)
    for k in (2, 3):
        p = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", str(k), bin_, *map(str, args)],
                           capture_output=True, text=True, timeout=300, env=env)
        if k == 2 and "built without MPI" in p.stderr:
            c.check("built without MPI: mpirun is refused in one line per rank, exit 2",
                    p.returncode != 0 and "libopenmpi-dev" in p.stderr, p.stderr)
            c.skip("MPI part: this mitosis was built without MPI")
            break
        c.check(f"mpirun -np {k}: rank 0 prints the serial table once, byte for byte (but the wall time)",
                p.returncode == 0 and strip(p.stdout, False) == strip(out1, False), p.stderr[-2000:])
    p_ = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", bin_, "compare", rn,
                         "--gpus", "8", "--plans", "tp=3"], capture_output=True, text=True, timeout=300, env=env)
    if "built without MPI" not in p_.stderr:
        c.check("mpirun -np 2, no plan could run: one error line (rank 0), nonzero exit",
                p_.returncode != 0 and p_.stderr.count("mitosis compare: no plan could run") == 1, p_.stderr[-2000:])
shutil.rmtree(tmp)
c.finish()
EOF
