#!/usr/bin/python3
"""Record a grid of models x batch sizes x dtypes with collect.py, in one process.

The project's ground truth on GPUs (issue 9) is ResNet-50, VGG-16, a BERT-base and a
GPT-2-small model at batch 32/64/128/256, fp32 and bf16; that is the default grid. Each
recording goes to ROOT/<device>-<model>-b<batch>-<dtype>/ (kineto.json.gz, et.json.gz,
meta.json), the folder layout of traces/.

Made for machines lent for minutes at a time:
  - torch (and transformers) are imported once for the whole grid;
  - a folder that already has its meta.json is skipped, so running the same command again
    goes on where the last run stopped;
  - --budget-s stops starting recordings once the next one would likely not finish in time;
  - a recording that runs out of memory is noted in ROOT/suite.json, and the larger batch
    sizes of that model and dtype are not tried;
  - --pack DIR writes the folders recorded by THIS run as one tar split into parts of at most
    15 MiB (DIR/traces.tar.part00, ...) plus DIR/suite.json, for transports that limit the
    size and number of files. Unpack with: cat DIR/traces.tar.part* | tar -x -C traces/

usage: record_suite.py [--models LIST] [--batches LIST] [--dtypes LIST] [--root DIR]
                       [--device cpu|cuda] [--warmup N] [--steps N] [--budget-s S]
                       [--pack DIR] [--dry-run] [-- extra collect.py flags]
"""

import argparse
import gc
import json
import os
import re
import sys
import tarfile
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import collect  # noqa: E402

PROG = "record_suite.py"
DEFAULT_MODELS = ["resnet50", "vgg16", "bert-base", "gpt2"]
# CNNs train with SGD, transformers with Adam, as their papers and reference scripts do.
ADAM_MODELS = ("gpt", "bert", "llama", "mixtral")
PART_BYTES = 15 << 20
MAX_PARTS = 7  # + suite.json = 8 files, the most some transports return


def device_tag(name):
    """'NVIDIA H100 80GB HBM3' -> 'h100', 'NVIDIA GeForce RTX 2080 Ti' -> 'rtx2080',
    'AMD Instinct MI250X' -> 'mi250x'; 'gpu' when no word has a digit."""
    words = re.sub(r"[^A-Za-z0-9]+", " ", name).lower().split()
    words = [w for w in words if w not in ("nvidia", "geforce", "tesla", "amd", "instinct", "radeon")]
    for i, w in enumerate(words):
        if re.search(r"\d", w):
            return words[i - 1] + w if w.isdigit() and i > 0 else w
    return "gpu"


def check_models(models):
    """Fails once, before anything is recorded, on a model name collect.py cannot build."""
    for m in models:
        if ":" in m or m in collect.BUILTIN or m in collect.torchvision_models():
            continue
        if m in collect.HF_CONFIGS:
            if not collect.transformers_available():
                collect.fail("model '%s' needs the `transformers` package, which is not importable "
                             "here (leave it out of --models)" % m)
            continue
        collect.fail("unknown model '%s' in --models (collect.py --help lists the names)" % m)


def folder_name(tag, model, batch, dtype):
    safe = re.sub(r"[^A-Za-z0-9.-]+", "-", model).strip("-")
    return "%s-%s-b%d-%s" % (tag, safe, batch, dtype)


def parse_list(s, conv=str):
    out = [conv(x) for x in s.split(",") if x.strip()]
    if not out:
        raise argparse.ArgumentTypeError("empty list")
    return out


def parse_args(argv):
    p = argparse.ArgumentParser(prog=PROG, description=__doc__.split("\n\n")[0])
    p.add_argument("--models", type=parse_list, default=DEFAULT_MODELS,
                   help="comma-separated collect.py model names (default %s)" % ",".join(DEFAULT_MODELS))
    p.add_argument("--batches", type=lambda s: parse_list(s, int), default=[32, 64, 128, 256],
                   help="comma-separated batch sizes, ascending (default 32,64,128,256)")
    p.add_argument("--dtypes", type=parse_list, default=["fp32", "bf16"],
                   help="comma-separated dtypes among fp32, bf16 (default fp32,bf16)")
    p.add_argument("--root", default="traces", help="where the folders go (default traces)")
    p.add_argument("--device", choices=["cpu", "cuda"], default=None,
                   help="default: cuda if available, else cpu")
    p.add_argument("--warmup", type=int, default=5, help="warm-up steps (default 5)")
    p.add_argument("--steps", type=int, default=20, help="timed steps (default 20)")
    p.add_argument("--budget-s", type=float, default=0,
                   help="start no recording that would likely end after this many seconds (0: no limit)")
    p.add_argument("--pack", metavar="DIR", help="tar this run's folders into DIR in parts of 15 MiB")
    p.add_argument("--dry-run", action="store_true", help="print the plan, record nothing")
    p.add_argument("extra", nargs="*", help="after --: more collect.py flags for every recording")
    a = p.parse_args(argv)
    for d in a.dtypes:
        if d not in ("fp32", "bf16"):
            p.error("unknown dtype '%s' (fp32 or bf16)" % d)
    if any(b < 1 for b in a.batches):
        p.error("batch sizes must be >= 1")
    a.batches = sorted(set(a.batches))
    return a


def load_status(path):
    try:
        with open(path) as f:
            return json.load(f)
    except (OSError, ValueError):
        return {"runs": {}}


def save_status(path, status):
    tmp = path + ".tmp"
    with open(tmp, "w") as f:
        json.dump(status, f, indent=1, sort_keys=True)
        f.write("\n")
    os.replace(tmp, path)


def pack(root, names, dest, status):
    """One uncompressed tar (the traces are gzipped already) cut into numbered parts."""
    os.makedirs(dest, exist_ok=True)
    whole = os.path.join(dest, "traces.tar")
    with tarfile.open(whole, "w") as tar:
        for n in names:
            tar.add(os.path.join(root, n), arcname=n)
    size = os.path.getsize(whole)
    parts = max(1, -(-size // PART_BYTES))
    if parts > MAX_PARTS:
        os.remove(whole)
        collect.fail("this run's traces take %.1f MiB, more than %d parts of 15 MiB; "
                     "record fewer at a time (--models/--batches/--budget-s)" % (size / 2**20, MAX_PARTS))
    with open(whole, "rb") as f:
        for i in range(parts):
            with open(os.path.join(dest, "traces.tar.part%02d" % i), "wb") as o:
                o.write(f.read(PART_BYTES))
    os.remove(whole)
    save_status(os.path.join(dest, "suite.json"), status)
    return size, parts


def main(argv=None):
    """The command line (argv: sys.argv[1:]); 0, or 2 after one line on stderr."""
    a = parse_args(sys.argv[1:] if argv is None else argv)
    try:
        return _run(a)
    except collect.CollectError as e:
        print("%s: error: %s" % (PROG, e), file=sys.stderr)
        return 2


def _run(a):
    t0 = time.perf_counter()
    import torch  # once, for every recording
    check_models(a.models)
    device = a.device or ("cuda" if torch.cuda.is_available() else "cpu")
    name = collect.device_name(torch.device(device))
    tag = device_tag(name) if device == "cuda" else "cpu"
    os.makedirs(a.root, exist_ok=True)
    status_path = os.path.join(a.root, "suite.json")
    status = load_status(status_path)
    status.setdefault("runs", {})
    status["device_name"] = name

    grid = [(m, d, b) for m in a.models for d in a.dtypes for b in a.batches]
    recorded, longest = [], 0.0
    for model, dtype, batch in grid:
        folder = folder_name(tag, model, batch, dtype)
        path = os.path.join(a.root, folder)
        prev = status["runs"].get(folder, {})
        smaller_oom = any(status["runs"].get(folder_name(tag, model, b, dtype), {}).get("result") == "oom"
                          for b in a.batches if b < batch)
        if os.path.exists(os.path.join(path, "meta.json")):
            print("%s: %s: already recorded" % (PROG, folder))
            continue
        if smaller_oom or prev.get("result") == "oom":
            print("%s: %s: skipped (out of memory at this or a smaller batch)" % (PROG, folder))
            continue
        elapsed = time.perf_counter() - t0
        if a.budget_s and elapsed + 1.5 * longest > a.budget_s:
            print("%s: %s: not started, %.0f s of the %.0f s budget used (run again to go on)"
                  % (PROG, folder, elapsed, a.budget_s))
            status["runs"].setdefault(folder, {"result": "pending"})
            continue
        flags = ["--model", model, "--batch", str(batch), "--dtype", dtype, "--device", device,
                 "--warmup", str(a.warmup), "--steps", str(a.steps), "-o", path,
                 "--optimizer", "adam" if model.startswith(ADAM_MODELS) else "sgd"] + a.extra
        if a.dry_run:
            print("%s: would run collect.py %s" % (PROG, " ".join(flags)))
            continue
        t = time.perf_counter()
        try:
            collect.run(collect.parse_args(flags))
            rec = {"result": "ok"}
            recorded.append(folder)
        except collect.CollectError as e:
            msg = str(e)
            rec = {"result": "oom" if msg.startswith("out of ") else "error", "error": msg}
            print("%s: %s: %s" % (PROG, folder, msg), file=sys.stderr)
        except Exception as e:  # a library's own failure: noted, and the grid goes on
            import traceback
            traceback.print_exc()
            rec = {"result": "error", "error": "%s: %s" % (type(e).__name__, e)}
            print("%s: %s: %s" % (PROG, folder, rec["error"]), file=sys.stderr)
        dt = time.perf_counter() - t
        longest = max(longest, dt)
        rec["seconds"] = round(dt, 1)
        status["runs"][folder] = rec
        save_status(status_path, status)
        gc.collect()
        if device == "cuda":
            torch.cuda.empty_cache()

    save_status(status_path, status)
    counts = {}
    for r in status["runs"].values():
        counts[r["result"]] = counts.get(r["result"], 0) + 1
    print("%s: %d recorded in this run (%.0f s); in %s: %s" % (
        PROG, len(recorded), time.perf_counter() - t0, a.root,
        ", ".join("%d %s" % (v, k) for k, v in sorted(counts.items())) or "nothing"))
    if a.pack and not a.dry_run:
        size, parts = pack(a.root, recorded, a.pack, status)
        print("%s: packed %d folders, %.1f MiB, into %d part(s) in %s" % (
            PROG, len(recorded), size / 2**20, parts, a.pack))
    return 0


if __name__ == "__main__":
    sys.exit(main())
