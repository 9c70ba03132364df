#!/usr/bin/python3
"""Predict published multi-GPU LLM training runs (bench/published_llm.tsv) from the shipped
one-GPU Llama-3-8B slice and print predicted / published tokens/s/GPU and memory per GPU.

  /usr/bin/python3 bench/llm_published.py [--mitosis build/mitosis] [--slice TRACE]
      [--rows ID,ID...] [--set dev|heldout|all] [--commands] [--json FILE]

Every row is predicted with the same rules (no constant is set per row). Flags that the
mitosis binary does not have yet (--seq, --precision, --fsdp-units, an op-level --recompute
policy) are passed only when `mitosis simulate --help` lists them, or when a dry run accepts the
value; the `missing` column names the modelling each row still lacks, so the table shows which
part of each gap is which cause. Debian python3 only (no third-party modules).
"""
import argparse
import json
import math
import os
import re
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)

# What the slice is: its model, its sequence length (meta.json seq_len) and its block count.
PREDICTABLE_MODELS = {"llama3-8b": 32}   # model -> blocks of the whole model

# Candidate spellings for features other branches add (issues 43, 44); the first one that the
# binary accepts is used. Detection is by `simulate --help` text or by a dry run that does not
# refuse. Values of --recompute that the help text shows as examples (ops:..., op:...) are tried
# before these.
# torchtitan's op policy (parallelize_llama.py _save_list at 9dec370): save SDPA / flash attention and
# every other aten.mm (the 1st, 3rd, ... of each block: wq, wv, w1, w2), recompute the rest.
OP_SAC_CANDIDATES = ["ops:save=attn,mm/2", "ops:every-other-mm", "ops:alternate", "ops", "op", "selective-op", "op-sac"]
# Megatron's distributed optimizer (reduce-scatter overlapping backward, all-gather overlapping the
# next forward) as its own data-parallel mode, if a branch adds one; else --zero 1.
DISTOPT_CANDIDATES = [["--dist-opt"], ["--distopt"], ["--distributed-optimizer"], ["--zero", "dist"],
                      ["--zero", "megatron"], ["--dp-mode", "distopt"]]


def read_rows(path):
    rows = []
    header = None
    with open(path) as f:
        for line in f:
            if line.startswith("#") or not line.strip():
                continue
            cells = line.rstrip("\n").split("\t")
            if header is None:
                header = cells
                continue
            if len(cells) != len(header):
                sys.exit("%s: row %s has %d cells, header %d" % (path, cells[0], len(cells), len(header)))
            rows.append(dict(zip(header, cells)))
    return rows


class Features:
    """What this mitosis binary can express, probed once."""

    def __init__(self, mitosis, trace):
        self.mitosis = mitosis
        self.trace = trace
        h = subprocess.run([mitosis, "simulate", "--help"], capture_output=True, text=True)
        self.help = h.stdout + h.stderr
        self.seq = self.has_flag("--seq")
        self.precision = self.has_flag("--precision")
        self.fsdp_units = self.has_flag("--fsdp-units")
        self.fp8 = self.precision and "fp8-mixed" in self.help
        self.op_sac = None
        shown = re.findall(r"\b(ops?:[A-Za-z0-9_,=.-]+)", self.help)
        for cand in OP_SAC_CANDIDATES + shown:
            if self.dry_ok(["--recompute", cand]):
                self.op_sac = cand
                break
        self.distopt = None
        for cand in DISTOPT_CANDIDATES:
            if not self.has_flag(cand[0]) or (len(cand) > 1 and cand[1] not in self.help):
                continue
            if self.dry_ok(cand, gpus=2):
                self.distopt = cand
                break


    def has_flag(self, flag):
        return re.search(r"(^|\s)" + re.escape(flag) + r"(\s|=|$)", self.help, re.M) is not None

    def dry_ok(self, extra, gpus=1):
        r = subprocess.run([self.mitosis, "simulate", self.trace, "--gpus", str(gpus), "--dry-run"] + extra,
                           capture_output=True, text=True)
        return r.returncode == 0

    def describe(self):
        return ("--seq %s, --precision %s, --fsdp-units %s, op-level recompute %s, "
                "distributed optimizer %s"
                % ("yes" if self.seq else "no", "yes" if self.precision else "no",
                   "yes" if self.fsdp_units else "no",
                   ("'%s'" % self.op_sac) if self.op_sac else "no",
                   ("'%s'" % " ".join(self.distopt)) if self.distopt else "no (--zero 1)"))


def slice_meta(trace):
    meta = json.load(open(os.path.join(trace, "meta.json")))
    seq = int(meta.get("seq_len") or 0)
    blocks = int(meta.get("hf_config", {}).get("num_hidden_layers") or 0)
    return seq, blocks


def topology(row):
    n = int(row["gpus"])
    nodes = max(1, math.ceil(n / 8))
    args = ["--topology", "multinode:nodes=%d,gpus=%d" % (nodes, min(n, 8))]
    if row["gpu"].startswith("A100"):
        # DGX A100: 300 GB/s NVSwitch per GPU, one 200 Gb/s NIC per GPU (mitosis's dgx-a100 preset)
        args += ["--link-bw", "300GB/s", "--nic-bw", "25GB/s"]
    return args


def build(row, feat, trace, trace_seq):
    """(argv or None, missing[], not_predictable_reason or None, tokens_per_step)"""
    missing = []
    model = row["model"]
    extras = [] if row["extras"] == "-" else row["extras"].split(",")
    seq, mbs, gbs = int(row["seq"]), int(row["mbs"]), int(row["gbs"])
    n = int(row["gpus"])
    tp, pp, cp, vp, dp = (int(row[k]) for k in ("tp", "pp", "cp", "vp", "dp"))
    tokens = seq * gbs
    if model not in PREDICTABLE_MODELS:
        return None, [], "no %s-shaped slice (a 70B block is not recorded: issue 43)" % model, tokens
    fp8 = row["precision"].startswith("fp8") or "float8" in extras or "fp8" in extras
    if fp8 and not feat.fp8:
        return None, [], "fp8 compute: the slice is bf16 and mitosis has no fp8 kernel model", tokens
    if tp * pp * cp * dp != n:
        return None, [], "sizes do not multiply to the GPU count", tokens
    argv = [feat.mitosis, "simulate", trace, "--blocks", str(PREDICTABLE_MODELS[model]),
            "--gpus", str(n), "--dp", str(dp), "--tp", str(tp), "--pp", str(pp)]
    if cp > 1:
        argv += ["--cp", str(cp)]
    # Sequence length: --seq when the binary has it; else the same tokens as sequences of the
    # traced length (attention per token then stays at the traced length's cost).
    if feat.seq:
        argv += ["--seq", str(seq)]
        samples_per_seq = 1
    else:
        if seq % trace_seq:
            return None, [], "sequence %d is not a multiple of the slice's %d (needs --seq)" % (seq, trace_seq), tokens
        samples_per_seq = seq // trace_seq
        if seq != trace_seq:
            missing.append("seq %d as %dx%d tokens (attention s^2 missing)" % (seq, samples_per_seq, trace_seq))
    global_samples = gbs * samples_per_seq
    micro = gbs // (dp * mbs)          # micro-batches per step per replica (GA, or pipeline M)
    argv += ["--batch", str(global_samples)]
    if micro > 1:
        argv += ["--micro-batches", str(micro)]
    if vp > 1:
        argv += ["--vpp", str(vp)]
    if "sp" in extras:
        argv += ["--sp"]
    if "tp-overlap" in extras:
        missing.append("TP comm overlap (userbuffers)")
    if "compile" in extras:
        missing.append("torch.compile (slice is eager)")
    if "asynctp" in extras:
        missing.append("async TP")
    # Data-parallel mode
    mode = row["dp_mode"]
    if mode == "distopt":
        if feat.distopt:
            argv += feat.distopt
        else:
            argv += ["--zero", "1"]
            missing.append("Megatron distributed optimizer as ZeRO-1")
    elif mode in ("fsdp", "mfsdp"):
        argv += ["--fsdp"]
        if feat.fsdp_units:
            argv += ["--fsdp-units", "block"]
            if row["framework"].startswith("torchtitan") and feat.has_flag("--fsdp-reshard"):
                # torchtitan's apply_fsdp (9dec370): reshard_after_forward = layer_id < last
                argv += ["--fsdp-reshard", "not-last"]
        else:
            missing.append("FSDP units per block (mitosis: per layer)")
    # Recomputation
    rc = row["recompute"]
    if rc == "none":
        argv += ["--recompute", "none"]
    elif rc == "full":
        argv += ["--recompute", "full"]
    elif rc == "op-sac":
        if feat.op_sac:
            argv += ["--recompute", feat.op_sac]
        else:
            argv += ["--recompute", "selective"]
            missing.append("op-level SAC (run as selective)")
    # Precision policy: the slice is pure bf16 (bf16 Adam states, bf16 reduce)
    if fp8:  # FP8 linears (TE / torchao float8) over bf16-mixed: --precision fp8-mixed
        argv += ["--precision", "fp8-mixed"]
        missing.append("FP8 linears as --precision fp8-mixed (TE-style casts; activations kept bf16)")
    elif row["precision"].startswith("bf16"):
        if feat.precision:
            argv += ["--precision", "bf16-mixed"]
            if row["precision"] == "bf16-O2":
                missing.append("gradients reduced in bf16 (NeMo's grad_sync_dtype; bf16-mixed reduces in fp32)")
        else:
            missing.append("bf16-mixed precision (fp32 master/Adam, fp32 reduce)")
    if row["gpu"].startswith("A100"):
        argv += ["--target-gpu", "A100-80GB"]
    elif row["gpu"] == "H100-HBM2e-96GB-500W":
        # The part as torchtitan describes it (bench/gpus_published.json); its 500 W clock is
        # assumed (1755 MHz, as issue 44's H100-SXM-500W entry).
        argv += ["--gpu-specs", os.path.join(HERE, "gpus_published.json"), "--target-gpu", row["gpu"]]
        missing.append("500 W clock assumed (1755 MHz)")
    argv += topology(row)
    argv += ["--json"]
    return argv, missing, None, tokens


def run(argv):
    t0 = time.time()
    r = subprocess.run(argv, capture_output=True, text=True)
    wall = time.time() - t0
    if r.returncode != 0:
        msg = (r.stderr.strip().splitlines() or ["exit %d" % r.returncode])[-1]
        return None, wall, msg
    try:
        return json.loads(r.stdout), wall, None
    except ValueError as e:
        return None, wall, "bad JSON: %s" % e


def summarise(js, tokens, n):
    step_s = js["step_ms"] / 1000.0
    gpus = js.get("gpus") or []
    peak = max((g.get("peak_mem_bytes") or 0) for g in gpus) if gpus else 0
    g0 = gpus[0] if gpus else {}
    return {
        "step_s": step_s,
        "tok_s_gpu": tokens / step_s / n,
        "mem_gib": peak / 2 ** 30,
        "host_wait_pct": 100.0 * (g0.get("host_wait_ms") or 0) / js["step_ms"],
        "exposed_pct": 100.0 * (g0.get("exposed_comm_ms") or 0) / js["step_ms"],
        "bubble_pct": 100.0 * (g0.get("bubble_ms") or 0) / js["step_ms"],
    }


def config(row):
    parts = ["%s GPUs" % row["gpus"]]
    for k in ("tp", "pp", "cp", "vp", "dp"):
        if row[k] != "1" or k == "dp":
            parts.append("%s%s" % (k, row[k]))
    parts.append(row["dp_mode"])
    parts.append("seq %s mbs %s gbs %s" % (row["seq"], row["mbs"], row["gbs"]))
    parts.append("rc %s" % row["recompute"])
    if row["extras"] != "-":
        parts.append(row["extras"])
    return " ".join(parts)


def shell(argv):
    out = []
    for a in argv:
        if os.path.isabs(a) and os.path.normpath(a).startswith(ROOT + "/"):
            a = os.path.relpath(os.path.normpath(a), ROOT)
        out.append(a)
    return " ".join(out)


TRENDS = [
    ("nemo-8b-bf16-n8", "nemo-8b-bf16-n128"),
    ("titan-8b-fsdp-n8", "titan-8b-fsdp-n128"),
    ("titan-8b-fsdp-compile-n8", "titan-8b-fsdp-compile-n128"),
    ("nemo-8b-bf16-n8", "nemo-8b-bf16-n16"),
    ("nemo-8b-bf16-n8", "nemo-8b-bf16-n64"),
]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--mitosis", default=os.path.join(ROOT, "build", "mitosis"))
    ap.add_argument("--slice", default=os.path.join(ROOT, "traces", "h100-llama3-8b-8blocks-b1-bf16"))
    ap.add_argument("--data", default=os.path.join(HERE, "published_llm.tsv"))
    ap.add_argument("--rows", default="", help="comma-separated row ids (default: all)")
    ap.add_argument("--set", default="all", choices=["all", "dev", "heldout"])
    ap.add_argument("--commands", action="store_true", help="print each row's command under the table")
    ap.add_argument("--json", default="", help="write every row's result as JSON here")
    a = ap.parse_args()

    if not os.access(a.mitosis, os.X_OK):
        sys.exit("llm_published: %s is not built (cmake --build build)" % a.mitosis)
    trace_seq, trace_blocks = slice_meta(a.slice)
    feat = Features(a.mitosis, a.slice)
    rows = read_rows(a.data)
    if a.rows:
        want = set(a.rows.split(","))
        rows = [r for r in rows if r["id"] in want]
    if a.set != "all":
        rows = [r for r in rows if r["set"] == a.set]

    t_all = time.time()
    results = []
    for row in rows:
        argv, missing, reason, tokens = build(row, feat, a.slice, trace_seq)
        res = {"id": row["id"], "set": row["set"], "config": config(row), "row": row,
               "published_tok_s_gpu": float(row["tok_s_gpu"]),
               "published_mem_gib": None if row["mem_gib"] == "-" else float(row["mem_gib"]),
               "missing": missing, "not_predictable": reason, "command": shell(argv) if argv else None}
        if argv:
            js, wall, err = run(argv)
            res["wall_s"] = wall
            if err:
                res["error"] = err
            else:
                res.update(summarise(js, tokens, int(row["gpus"])))
                res["ratio"] = res["tok_s_gpu"] / res["published_tok_s_gpu"]
                # The same plan with GPU work only: what the host model's launch waits cost.
                js2, wall2, err2 = run(argv + ["--host-model", "none"])
                res["wall_s"] += wall2
                if not err2:
                    res["gpu_only_tok_s_gpu"] = summarise(js2, tokens, int(row["gpus"]))["tok_s_gpu"]
                    res["gpu_only_ratio"] = res["gpu_only_tok_s_gpu"] / res["published_tok_s_gpu"]
        results.append(res)
        sys.stderr.write("  %-28s %s\n" % (row["id"], "%.1f s" % res["wall_s"] if "wall_s" in res else "-"))
    total = time.time() - t_all

    print("slice %s (seq %d, %d blocks traced), binary %s" % (shell([os.path.abspath(a.slice)]), trace_seq,
                                                              trace_blocks, shell([os.path.abspath(a.mitosis)])))
    print("features: " + feat.describe())
    print()
    print("| row | set | config | published tok/s/GPU | predicted | pred/pub | GPU-only pred/pub | mem GiB pub / pred | host wait % | exposed comm % | missing modelling |")
    print("|---|---|---|---:|---:|---:|---:|---|---:|---:|---|")
    for r in results:
        pub = "%.0f" % r["published_tok_s_gpu"]
        memp = "%.1f" % r["published_mem_gib"] if r["published_mem_gib"] is not None else "–"
        if r["not_predictable"]:
            print("| %s | %s | %s | %s | – | – | – | %s / – | – | – | not predictable: %s |"
                  % (r["id"], r["set"], r["config"], pub, memp, r["not_predictable"]))
        elif "error" in r:
            print("| %s | %s | %s | %s | error | – | – | %s / – | – | – | %s |"
                  % (r["id"], r["set"], r["config"], pub, memp, r["error"]))
        else:
            g = "%.2f" % r["gpu_only_ratio"] if "gpu_only_ratio" in r else "–"
            print("| %s | %s | %s | %s | %.0f | %.2f | %s | %s / %.1f | %.1f | %.1f | %s |"
                  % (r["id"], r["set"], r["config"], pub, r["tok_s_gpu"], r["ratio"], g, memp, r["mem_gib"],
                     r["host_wait_pct"], r["exposed_pct"], "; ".join(r["missing"]) or "none"))
    by = {r["id"]: r for r in results}
    lines = []
    for lo, hi in TRENDS:
        if lo in by and hi in by and "tok_s_gpu" in by[lo] and "tok_s_gpu" in by[hi]:
            p = 100.0 * (by[hi]["published_tok_s_gpu"] / by[lo]["published_tok_s_gpu"] - 1)
            q = 100.0 * (by[hi]["tok_s_gpu"] / by[lo]["tok_s_gpu"] - 1)
            g = ""
            if "gpu_only_tok_s_gpu" in by[lo] and "gpu_only_tok_s_gpu" in by[hi]:
                g = "%+.1f %%" % (100.0 * (by[hi]["gpu_only_tok_s_gpu"] / by[lo]["gpu_only_tok_s_gpu"] - 1))
            lines.append("| %s -> %s | %+.1f %% | %+.1f %% | %+.1f | %s |" % (lo, hi, p, q, q - p, g))
    if lines:
        print()
        print("| trend (tokens/s/GPU) | published | predicted | points off | GPU-only predicted |")
        print("|---|---:|---:|---:|---:|")
        print("\n".join(lines))
    ok = [r for r in results if "ratio" in r]
    if ok:
        worst = max(ok, key=lambda r: abs(math.log(r["ratio"])))
        within = sum(1 for r in ok if abs(r["ratio"] - 1) <= 0.10)
        print()
        mem = [r for r in ok if r["published_mem_gib"]]
        mem_within = sum(1 for r in mem if abs(r["mem_gib"] / r["published_mem_gib"] - 1) <= 0.10)
        print("%d rows predicted, %d within 10 %% on tokens/s/GPU; worst %s at %.2f; memory: %d of %d "
              "within 10 %%; %d not predictable; %.1f s"
              % (len(ok), within, worst["id"], worst["ratio"], mem_within, len(mem),
                 sum(1 for r in results if r["not_predictable"]), total))
    if a.commands:
        print()
        for r in results:
            if r["command"]:
                print("%s: %s" % (r["id"], r["command"]))
    if a.json:
        with open(a.json, "w") as f:
            json.dump({"features": feat.describe(), "total_s": total, "rows": results}, f, indent=1)


if __name__ == "__main__":
    main()
