#!/usr/bin/env bash
# Integration: compare --top K prunes plans that cannot reach the first --top K rows
# (run/prune.h) and keeps the exhaustive run's numbers: on a GPT plan search (tp x pp x dp, both
# schedules, the host model on) the pruned run's rows are byte for byte rows of `--exhaustive`, in
# the same order, its first K rows are the exhaustive ranking's first K, every plan is either
# ranked, skipped (as exhaustive skips it) or listed as pruned with its bound, on 1 thread as on 2
# and on 2 mpirun ranks (when mpirun is there);
# text says "pruned"; a list no longer than K prunes nothing; without --top a search of every plan
# keeps 10 rows exact (rows over --gpu-mem do not count among them) and a --plans list runs every plan.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
py=/usr/bin/python3
[ -x "$py" ] || py=python3
exec "$py" - "$bin" "$root/traces" <<'EOF'
import json, os, shutil, subprocess, sys

bin_, own = sys.argv[1:3]
args = ["compare", f"{own}/cpu-gpt-l8-b4", "--gpus", "32", "--batch", "64"]


def run(*extra, cmd=args):
    p = subprocess.run([bin_, *cmd, "--json", *extra], capture_output=True, text=True)
    if p.returncode != 0:
        sys.exit(f"compare {' '.join(extra)} failed: {p.stderr}")
    d = json.loads(p.stdout)
    d.pop("wall_s")
    return d


full = run("--exhaustive")
assert "pruned" not in full, "exhaustive pruned rows"
for top, jobs_list in ((3, ("1", "2")), (10, ("2",))):
    for jobs in jobs_list:
        d = run("--top", str(top), "--jobs", jobs)
        rows, pruned = d["rows"], d.get("pruned", [])
        assert pruned, f"--top {top}: nothing pruned of {len(full['rows'])} rows (the case must exercise pruning)"
        assert d["exact_rows"] == top
        by = {r["label"]: r for r in full["rows"]}
        for r in rows:
            assert by.get(r["label"]) == r, f"--top {top}: row {r['label']} differs from --exhaustive"
        kept = [r["label"] for r in rows]
        assert kept == [r["label"] for r in full["rows"] if r["label"] in set(kept)], "order differs"
        assert kept[:top] == [r["label"] for r in full["rows"][:top]], f"--top {top}: first rows differ"
        assert d["skipped"] == full["skipped"], "skipped rows differ"
        labels = sorted(kept + [p["label"] for p in pruned])
        assert labels == sorted(by), "a plan is neither ranked nor pruned"
        for p in pruned:
            assert p["reason"].startswith(("bound: a step takes at least", "memory: ")), p["reason"]
            lb = float(p["reason"].split("at least ")[1].split(" ms")[0]) if p["reason"].startswith("bound") else 0
            assert lb <= by[p["label"]]["step_ms"] * (1 + 1e-9), f"bound {lb} above the step of {p['label']}"
        if jobs == "1":
            one = d
        elif top == 3:
            assert d == one, f"--top {top}: --jobs 2 differs from --jobs 1"
mpirun = shutil.which("mpirun")  # ranks: each prunes what it has seen, rank 0 applies the rule to all
if mpirun:
    env = dict(os.environ, ASAN_OPTIONS="detect_leaks=0", OMPI_MCA_rmaps_base_oversubscribe="1",
               OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1")
    p = subprocess.run([mpirun, "--allow-run-as-root", "--oversubscribe", "-np", "2", bin_, *args, "--json", "--top", "3",
                        "--jobs", "1"], capture_output=True, text=True, timeout=300, env=env)
    if "built without MPI" not in p.stderr:
        assert p.returncode == 0, p.stderr[-2000:]
        d = json.loads(p.stdout)
        d.pop("wall_s")
        assert d == one, "mpirun -np 2 --top 3 differs from one process"
text = subprocess.run([bin_, *args, "--top", "3"], capture_output=True, text=True).stdout
assert "\npruned (not simulated: they cannot reach the first 3 rows" in text, text
small = subprocess.run([bin_, *args, "--json", "--top", "3", "--plans", "ddp=32,dp=32,ddp=16:tp=2"], capture_output=True, text=True)
assert "pruned" not in json.loads(small.stdout), "a list of 3 plans pruned"
# the default of a search of every plan: --top 10; a --plans list runs every plan it names
default = run()
assert default.get("exact_rows") == 10 and default == run("--top", "10"), "the default is not --top 10"
listed = run("--plans", ",".join(r["label"] for r in full["rows"][:12]))
assert "pruned" not in listed and len(listed["rows"]) == 12, "a --plans list of 12 pruned without --top"
# under a memory limit only rows that fit count among the K: the exhaustive ranking down to its
# 10th row that fits is the kept ranking (rows over the limit by their state alone may be pruned
# from it, with that reason), so the "fits" answer is exact too
vgg = ["compare", f"{own}/triosim-vgg13-h100-bs512", "--gpus", "8", "--topology", "dgx-h100", "--gpu-mem", "22GB"]
full_m, top_m = (run(*m, cmd=vgg) for m in (("--exhaustive",), ()))
fit = [i for i, r in enumerate(full_m["rows"]) if not r["over_mem"]]
assert len(fit) > 10 and fit[9] > 9, "the memory case must put rows over the limit among the first 10"
why = {p["label"]: p["reason"] for p in top_m.get("pruned", [])}
assert why, "the memory case prunes nothing"
head = [r for r in full_m["rows"][:fit[9] + 1] if not why.get(r["label"], "").startswith("memory: ")]
assert top_m["rows"][:len(head)] == head, "the ranking down to the 10th row that fits differs from --exhaustive"
fits = [[x for x in subprocess.run([bin_, *vgg, *m], capture_output=True, text=True).stdout.splitlines()
         if x.startswith("fits")] for m in ((), ("--exhaustive",))]
assert fits[0] and fits[0] == fits[1], f"the fits line differs from --exhaustive: {fits}"
# a plan over the limit by its state alone is pruned only when a plan that ran beat its bound, so the
# "fastest" line is exact too: llama-tiny at 4 MB a GPU (its DDP plans, the fastest, over by their
# state; pipelines fit) and at 1 MB (no plan fits: the fastest runs, exit 0, "no plan fits"), each
# answer the --exhaustive run's
lt = ["compare", f"{own}/cpu-llama-tiny-b4", "--gpus", "8", "--jobs", "1"]
for mem in ("4MB", "1MB"):
    outs = [subprocess.run([bin_, *lt, "--gpu-mem", mem, *m], capture_output=True, text=True) for m in ((), ("--exhaustive",))]
    ans = [[x for x in o.stdout.splitlines() if x.startswith(("fastest", "fits"))] for o in outs]
    assert outs[0].returncode == outs[1].returncode == 0 and len(ans[0]) == 2 and ans[0] == ans[1], \
        f"--gpu-mem {mem}: the default search's answer differs from --exhaustive: {outs[0].stderr[-300:]} {ans}"
    # a limit of a few MB is said in MB (it read "0.00 GB")
    assert f"{mem[:-2]}.00 MB" in ans[0][1] and "0.00 GB" not in outs[0].stdout, f"--gpu-mem {mem}: {ans[0][1]}"
print(f"ok: {len(full['rows'])} ranked plans; pruned runs keep the exhaustive rows")
EOF
