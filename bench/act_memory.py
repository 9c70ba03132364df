#!/usr/bin/python3
"""bench/act_memory.py — the measured activation memory of one training step on this CPU, from the
PyTorch profiler's memory events (profile_memory=True), for docs/memory-activations.md.

Builds the model as tracer/collect.py does (same flags), runs warm-up steps, then profiles one
step with the forward, backward and optimizer marked. Prints, in bytes:
  base        live at the step's start (parameters, optimizer state; grads freed by zero_grad)
  after_fwd   live after the loss, before backward: base + the activations kept for backward
  act_kept    after_fwd - base
  peak        the step's highest live bytes, and the phase it falls in
Usage: bench/act_memory.py --model gpt-tiny --layers 8 --hidden 512 --heads 16 --vocab 8192
       --seq-len 256 --batch 2 --optimizer adam   (collect.py's flags)"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tracer"))
import collect  # noqa: E402


def main(argv):
    import torch
    from torch.profiler import profile, record_function, ProfilerActivity
    args = collect.parse_args(argv + ["-o", "/tmp/unused-act-memory"])
    torch.set_num_threads(1)
    model, inputs, loss_fn, opt, info = collect.build_workload(args, torch.device("cpu"), torch.float32)
    model.train()
    if opt is None:
        opt = collect.make_optimizer(args.optimizer, model)
    marks = {}

    def step(prof=None):
        opt.zero_grad(set_to_none=True)
        with record_function("mark:forward"):
            loss = loss_fn(model(inputs))
        with record_function("mark:backward"):
            loss.backward()
        with record_function("mark:optimizer"):
            opt.step()

    for _ in range(3):
        step()
    with profile(activities=[ProfilerActivity.CPU], profile_memory=True, record_shapes=False) as prof:
        with record_function("mark:step"):
            step()
    evs = list(prof.profiler.kineto_results.events())
    mem = sorted((e.start_us(), e.nbytes()) for e in evs if e.name() == "[memory]")
    for e in evs:
        if e.name().startswith("mark:"):
            marks[e.name()[5:]] = (e.start_us(), e.start_us() + e.duration_us())
    t0 = marks["step"][0]
    # bytes alive at the step's start that the profiler saw allocated: none; measure relative
    live, base_rel, after_fwd, peak, peak_t = 0, None, None, 0, t0
    fwd_end = marks["forward"][1]
    for t, nb in mem:
        live += nb
        if t <= fwd_end:
            after_fwd = live
        if live > peak:
            peak, peak_t = live, t
    base = sum(p.numel() * p.element_size() for p in model.parameters())
    base += sum(v.numel() * v.element_size() for st in opt.state.values() for v in st.values()
                if torch.is_tensor(v))
    phase = next((k for k in ("forward", "backward", "optimizer") if marks[k][0] <= peak_t <= marks[k][1]), "other")
    print("base_bytes %d" % base)
    print("act_kept_bytes %d" % after_fwd)
    print("peak_above_base_bytes %d (in %s)" % (peak, phase))
    print("peak_bytes %d" % (base + peak))


if __name__ == "__main__":
    main(sys.argv[1:])
