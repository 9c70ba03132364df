#!/usr/bin/env python3
"""Cluster scale row (docs/cluster.md): 1,024 jobs of 8 - 1,024 GPUs on a 16,384-GPU fabric
(multinode:nodes=2048,gpus=8), every job a DDP job of a shipped trace; prints wall time and peak
memory of `mitosis cluster`. Usage: bench/cluster_scale.py BIN [TRACE] [--policy P]"""
import json, os, subprocess, sys, tempfile, time, resource

def main():
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    policy = "packed"
    if "--policy" in sys.argv:
        policy = sys.argv[sys.argv.index("--policy") + 1]
        args = [a for a in args if a != policy]
    binary = args[0]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    trace = args[1] if len(args) > 1 else os.path.join(root, "traces", "cpu-gpt-tiny-b8")
    sizes = []
    for size, count in ((1024, 1), (512, 2), (256, 4), (128, 8), (64, 16), (32, 32), (16, 64)):
        sizes += [size] * count
    sizes += [8] * (1024 - len(sizes))
    jobs = [{"name": f"j{i}", "trace": trace, "args": ["--gpus", str(s), "--strategy", "ddp", "--host-model", "none"]}
            for i, s in enumerate(sizes)]
    spec = {"topology": "multinode:nodes=2048,gpus=8", "placement": policy, "jobs": jobs}
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "jobs.json")
        json.dump(spec, open(path, "w"))
        t0 = time.time()
        p = subprocess.run([binary, "cluster", path, "--json"], capture_output=True, text=True)
        wall = time.time() - t0
        ru = resource.getrusage(resource.RUSAGE_CHILDREN)
        rss, cpu = ru.ru_maxrss / 1024, ru.ru_utime + ru.ru_stime
    if p.returncode != 0:
        print(p.stderr.strip())
        return 1
    d = json.loads(p.stdout)
    print(f"cluster scale: {len(sizes)} jobs, {sum(sizes)} of {d['fabric_gpus']} GPUs ({policy}): "
          f"{wall:.2f} s wall, {cpu:.2f} s CPU, {rss:.0f} MB peak RSS, {d['events']} events together; "
          f"worst slowdown {d['worst_slowdown']:.4f}x ({d['worst_job']}), {d['n_shared_links']} shared links")
    return 0

if __name__ == "__main__":
    sys.exit(main())
