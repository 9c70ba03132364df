"""mitosis.record: the recorder (tracer/collect.py) as a library call on the caller's own model.

collect.py's `--model module:function` path already records any model a function returns
(model, inputs, loss_fn, optimizer); record() hands it the caller's objects through a module made
for the call, so the profiling, Execution Trace, timing and meta.json are collect.py's own code
(mitosis/_collect.py is a link to tracer/collect.py, not a copy).
"""

import contextlib
import io
import json
import os
import sys
import tempfile
import types

from ._lib import Error

_MODULE = "_mitosis_record_workload"


def record(model, batch_fn, optimizer="sgd", steps=5, warmup=2, out=None, loss_fn=None, device="cpu",
           seed=0, name=None, quiet=True):
    """Records one training step of `model` into folder `out` (a new temporary folder when None)
    and returns the loaded mitosis.Trace.

    batch_fn() gives one batch: the model's input (a tensor, a tuple of positional arguments or a
    dict of keyword arguments), or a pair (input, target). loss_fn(output, target) (or
    loss_fn(output) without a target) gives the loss; default: cross-entropy against a target,
    else the output's mean. optimizer: "sgd" or "adam" (collect.py's), or a torch optimizer over
    the model's parameters. steps: timed steps after the profiled one (the measured step time in
    meta.json); warmup: untimed steps before it. device: "cpu" or "cuda"."""
    try:
        import torch
        import torch.nn.functional as F
    except Exception as e:
        raise Error("mitosis.record needs PyTorch (Debian: apt-get install python3-torch): %s" % e)
    from . import _collect as collect
    from . import load

    batch = batch_fn()
    x, y = batch if isinstance(batch, tuple) and len(batch) == 2 and torch.is_tensor(batch[1]) else (batch, None)
    dev = torch.device(device)
    model.to(dev)
    move = lambda v: v.to(dev) if torch.is_tensor(v) else v
    x = {k: move(v) for k, v in x.items()} if isinstance(x, dict) else (
        tuple(move(v) for v in x) if isinstance(x, (tuple, list)) else move(x))
    y = move(y)

    def loss(output):
        if loss_fn is not None:
            return loss_fn(output, y) if y is not None else loss_fn(output)
        return F.cross_entropy(output, y) if y is not None else output.float().mean()

    opt = None if isinstance(optimizer, str) else optimizer
    workload = types.ModuleType(_MODULE)
    workload.make = lambda: (model, x, loss, opt)
    out = out or tempfile.mkdtemp(prefix="mitosis-record-")
    first = next(iter(x.values())) if isinstance(x, dict) else (x[0] if isinstance(x, (tuple, list)) else x)
    batch_size = int(first.shape[0]) if torch.is_tensor(first) and first.dim() > 0 else 1
    argv = ["--model", _MODULE + ":make", "--out", out, "--steps", str(steps), "--warmup", str(warmup),
            "--device", device, "--seed", str(seed), "--batch", str(batch_size),
            "--optimizer", optimizer if isinstance(optimizer, str) else "sgd"]
    sys.modules[_MODULE] = workload
    try:
        args = collect.parse_args(argv)
        with contextlib.redirect_stdout(io.StringIO()) if quiet else contextlib.nullcontext():
            collect.run(args)
    except collect.CollectError as e:
        raise Error(str(e)) from None
    except SystemExit:
        raise Error("mitosis.record: bad arguments %s" % " ".join(argv)) from None
    finally:
        sys.modules.pop(_MODULE, None)
    meta_path = os.path.join(out, "meta.json")
    with open(meta_path) as f:
        meta = json.load(f)
    meta["model"] = name or type(model).__name__
    meta["command"] = "mitosis.record(%s)" % meta["model"]
    with open(meta_path, "w") as f:
        json.dump(meta, f, indent=2)
        f.write("\n")
    return load(out)
