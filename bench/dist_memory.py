#!/usr/bin/python3
"""bench/dist_memory.py — the measured peak memory of each process of a multi-process DDP step on
this CPU (gloo), for docs/memory.md's validation against `simulate --gpus N --dp N`.

Each of --world processes (torch.multiprocessing, gloo on 127.0.0.1) runs under the PyTorch
profiler with profile_memory=True from before its model exists: it builds the model as
tracer/collect.py does (same flags) and wraps it in DistributedDataParallel as
tracer/collect_dist.py's ddp workload does (PyTorch's defaults: 25 MB buckets, gradients copied into
the buckets), makes the optimizer, runs --warmup steps (the first
creates the optimizer state), then one marked step. Every byte the process's tensors hold was
allocated inside the profile, so the running sum of the [memory] events is the bytes live; the
process's peak is its highest value inside the marked step. Prints one line per rank:
  rank R peak_bytes B params_bytes P step_start_bytes S peak_in PHASE
Usage: bench/dist_memory.py --world 2 [--warmup 1] --model gpt-tiny --batch 8 ... (collect.py's flags)
"""
import os
import socket
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tracer"))
import collect  # noqa: E402
import collect_dist  # noqa: E402  (its DDP workload: the model as collect.py builds it, in DDP)


def rank_main(rank, world, port, argv, warmup, out):
    import torch
    import torch.distributed as dist
    from torch.profiler import profile, record_function, ProfilerActivity
    os.environ["MASTER_ADDR"] = "127.0.0.1"
    os.environ["MASTER_PORT"] = str(port)
    torch.set_num_threads(1)
    torch.manual_seed(0)
    dist.init_process_group("gloo", rank=rank, world_size=world)
    args = collect.parse_args(argv + ["-o", "/tmp/unused-dist-memory"])
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        step, n_params, _ = collect_dist.ddp_workload(args, rank, torch.device("cpu"), torch.float32)
        for _ in range(warmup):
            step()
        with record_function("mark:step"):
            step()
    evs = list(prof.profiler.kineto_results.events())
    mark = [e for e in evs if e.name() == "mark:step"][0]
    t0, t1 = mark.start_us(), mark.start_us() + mark.duration_us()
    # the phase of the peak: autograd's backward ops, the optimizer's step, else forward
    phases = [(e.start_us(), e.start_us() + e.duration_us(),
               "backward" if e.name().startswith("autograd::engine") else "optimizer")
              for e in evs if t0 <= e.start_us() <= t1 and (e.name().startswith("autograd::engine::evaluate_function")
                                                          or e.name().startswith("Optimizer.step"))]
    live, peak, base, where = 0, 0, None, "?"
    for t, nb in sorted((e.start_us(), e.nbytes()) for e in evs if e.name() == "[memory]"):
        if base is None and t >= t0:
            base = live
        live += nb
        if t0 <= t <= t1 and live > peak:
            peak = live
            where = next((n for a, b, n in phases if a <= t <= b), "forward")
    out[rank] = (peak, 4 * n_params, base, where)
    dist.destroy_process_group()


def main(argv):
    import torch.multiprocessing as mp
    world, warmup, rest, i = 2, 1, [], 0
    while i < len(argv):
        if argv[i] in ("--world", "--warmup") and i + 1 < len(argv):
            world, warmup = (int(argv[i + 1]), warmup) if argv[i] == "--world" else (world, int(argv[i + 1]))
            i += 2
            continue
        rest.append(argv[i])
        i += 1
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as m:
        out = m.dict()
        mp.spawn(rank_main, args=(world, port, rest, warmup, out), nprocs=world, join=True)
        for r in sorted(out.keys()):
            peak, params, base, where = out[r]
            print(f"rank {r} peak_bytes {peak} params_bytes {params} step_start_bytes {base} peak_in {where}")


if __name__ == "__main__":
    main(sys.argv[1:])
