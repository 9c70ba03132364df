#!/usr/bin/python3
"""Measures a real 2-process data-parallel step on this machine's CPU (torch.distributed,
gloo backend, DistributedDataParallel) and the loopback network it runs on.

Prints one JSON object on stdout:
  {"model", "batch", "world", "threads", "ddp_step_ms": {median, min, max, all},
   "allreduce": {"bytes", "median_s", "bw_Bps"}, "latency_s"}
The model, its input and its optimizer come from tracer/collect.py (same names and seeds),
so the step is the one `collect.py --model M --batch B --threads 1` traced on one process.
bench/gloo_vs_sim.sh compares it with `mitosis simulate` on that trace.
"""

import argparse
import importlib.util
import json
import os
import statistics
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))


def load_collect():
    spec = importlib.util.spec_from_file_location("collect", os.path.join(HERE, "..", "tracer", "collect.py"))
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def collect_argv(args):
    """collect.py arguments of the traced run (from its meta.json), without -o."""
    if not args.meta:
        return ["--model", args.model, "--batch", str(args.batch)]
    with open(args.meta) as f:
        cmd = json.load(f)["command"].split()
    out, skip = [], False
    for a in cmd[1:]:  # cmd[0] is collect.py
        if skip:
            skip = False
        elif a in ("-o", "--out", "--device", "--warmup", "--steps"):
            skip = True
        else:
            out.append(a)
    return out


def worker(rank, world, args, port, out_path):
    import torch
    import torch.distributed as dist
    torch.set_num_threads(args.threads)
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    collect = load_collect()
    cargs = collect.parse_args(collect_argv(args) + ["-o", "/nonexistent"])
    torch.manual_seed(0)
    model, inputs, loss_fn, opt, _ = collect.build_workload(cargs, torch.device("cpu"), torch.float32)
    # gloo cannot broadcast bool buffers (e.g. a causal mask): they are constants, skip them
    skip = [n for n, b in model.named_buffers() if not b.is_floating_point()]
    torch.nn.parallel.DistributedDataParallel._set_params_and_buffers_to_ignore_for_model(model, skip)
    ddp = torch.nn.parallel.DistributedDataParallel(model)
    opt = opt or collect.make_optimizer(cargs.optimizer, ddp)

    def step():
        opt.zero_grad(set_to_none=True)
        if isinstance(inputs, dict):
            out = ddp(**inputs)
        elif isinstance(inputs, tuple):
            out = ddp(*inputs)
        else:
            out = ddp(inputs)
        loss_fn(out).backward()
        opt.step()

    for _ in range(args.warmup):
        step()
    times = []
    for _ in range(args.steps):
        dist.barrier()
        t0 = time.perf_counter()
        step()
        times.append((time.perf_counter() - t0) * 1e3)

    # the network: a large all-reduce (2-rank ring: time = S / B) and a tiny one (latency)
    big = torch.ones(args.probe_bytes // 4)
    small = torch.ones(1)
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
        res = {
            "collect_args": collect_argv(args), "world": world, "threads": args.threads,
            "torch_version": torch.__version__,
            "ddp_step_ms": {"median": statistics.median(times), "min": min(times), "max": max(times),
                            "all": [round(x, 3) for x in times]},
            "allreduce": {"bytes": args.probe_bytes, "median_s": med, "bw_Bps": args.probe_bytes / med},
            "latency_s": statistics.median(st[5:]),
        }
        with open(out_path, "w") as f:
            json.dump(res, f)
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--meta", help="meta.json of a traced run: use its model and arguments")
    p.add_argument("--model", default="resnet18")
    p.add_argument("--batch", type=int, default=8)
    p.add_argument("--threads", type=int, default=1, help="torch threads per process (default 1)")
    p.add_argument("--warmup", type=int, default=3)
    p.add_argument("--steps", type=int, default=10)
    p.add_argument("--probe-bytes", type=int, default=64 << 20)
    p.add_argument("--port", type=int, default=29517)
    args = p.parse_args()
    try:
        import torch.multiprocessing as mp
    except ImportError:
        print("gloo_ddp.py: PyTorch is not installed (apt install python3-torch)", file=sys.stderr)
        return 2
    import tempfile
    with tempfile.TemporaryDirectory() as d:
        out = os.path.join(d, "res.json")
        mp.spawn(worker, args=(2, args, args.port, out), nprocs=2, join=True)
        with open(out) as f:
            print(f.read())
    return 0


if __name__ == "__main__":
    sys.exit(main())
