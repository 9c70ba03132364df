#!/usr/bin/python3
"""The loopback network two gloo processes on this machine talk over: all-reduce bandwidth and
latency, for `mitosis simulate --topology switch:2 --link-bw --link-lat` (bench/gloo_vs_sim.sh).

Prints one JSON object: {"allreduce": {"bytes", "median_s", "bw_Bps"}, "latency_s"}. A 2-rank
ring all-reduce of S bytes sends S/2 each way twice, which on switch:2 crosses two links per send:
time = S / B + 4 x link latency, so B = S / time (for a large S) and the link latency is a quarter
of a 1-float all-reduce's time. Each process is pinned to its own core, one torch thread.
"""

import argparse
import json
import os
import socket
import statistics
import sys
import tempfile
import time


def worker(rank, world, probe_bytes, port, out_path):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(1)
    try:
        os.sched_setaffinity(0, {rank % (os.cpu_count() or 1)})
    except (AttributeError, OSError):
        pass
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    big, small = torch.ones(probe_bytes // 4), torch.ones(1)
    bt, st = [], []
    for _ in range(6):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(big)
        bt.append(time.perf_counter() - t0)
    for _ in range(50):
        dist.barrier()
        t0 = time.perf_counter()
        dist.all_reduce(small)
        st.append(time.perf_counter() - t0)
    if rank == 0:
        med = statistics.median(bt[1:])
        with open(out_path, "w") as f:
            json.dump({"allreduce": {"bytes": probe_bytes, "median_s": med, "bw_Bps": probe_bytes / med},
                       "latency_s": statistics.median(st[5:]), "torch_version": torch.__version__}, f)
    dist.destroy_process_group()
    os._exit(0)  # torch 1.13's gloo sometimes hangs the interpreter's teardown (collect_dist.py)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--probe-bytes", type=int, default=64 << 20)
    args = p.parse_args()
    try:
        import torch.multiprocessing as mp
    except ImportError:
        print("gloo_probe.py: PyTorch is not installed (apt install python3-torch)", file=sys.stderr)
        return 2
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "res.json")
        mp.spawn(worker, args=(2, args.probe_bytes, port, out), nprocs=2, join=True)
        with open(out) as f:
            print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
