#!/usr/bin/env bash
# Integration: Megatron tensor and sequence parallelism on traces/cpu-gpt-tiny-b8 (4 pre-LN
# blocks, hidden 256, 4 heads, vocabulary 8192, sequence 128, batch 8: 1024 tokens), from the
# per-collective rows of --csv:
#  - --tp 2: every transformer block (from its first LayerNorm to the next block's) has exactly 2
#    forward and 2 backward all-reduces of the 1 MiB residual stream; the vocabulary embedding 1
#    forward all-reduce, the position embedding none; the LM head + cross-entropy 3 forward
#    all-reduces of 4 KiB (per-token max, sum-exp, target logit) and 1 backward all-reduce, no
#    all-gather anywhere;
#  - --sp: the same collectives as reduce-scatter + all-gather pairs moving the same ring volume
#    (plus one all-reduce of the norms' and position table's gradients after backward);
#  - --cp 2 (tp 1 and 2): one K/V ring all-gather per attention and direction on the CP group (each
#    rank passes C - 1 = 1 block), hidden behind the attention compute even at 1 GB/s;
#  - --pp 4: the tied embedding/LM-head weight's gradient all-reduced once between stages 0 and 3;
#  - refusals: --sp without --tp > 1, --tp 8 (4 heads), --cp 3 (sequence 128), --cp on a model
#    without attention, --cp in compare, --sp on a CNN (nothing to split by sequence): one line, exit 2.
set -u
bin=$1
root=${MT_ROOT:-$(dirname "$0")/../..}
# c.sim runs in this process over libmitosis (libsim.bash, libsim.py: each trace read once); c.run and
# c.check_bad run the binary
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root/traces" "$(dirname "$0")" <<'EOF'
import csv, json, os, shutil, sys, tempfile
sys.path.insert(0, sys.argv[3])
from simcheck import Checker

bin_, traces = sys.argv[1:3]
c = Checker(bin_)
gpt = f"{traces}/cpu-gpt-tiny-b8"
tmp = tempfile.mkdtemp()


def rows(*args):
    """TP collectives of GPU 0's group: [(why, op, layer index or None, bytes)] and the JSON."""
    out = os.path.join(tmp, "_".join(map(str, args)))
    d = c.sim(gpt, *args, "--csv", out)
    if not d:
        return [], None
    got = []
    for r in csv.DictReader(open(os.path.join(out, "collectives.csv"))):
        if r["group"] != "tp" or r["group_id"] != "dp 0, stage 0":
            continue
        layer = int(r["layer"][1:].split(":")[0]) if r["layer"] else None
        got.append((r["why"], r["op"], layer, float(r["bytes"])))
    return got, d


def layer_names():
    rc, out, err = c.run("inspect", gpt, "--ops")
    names = {}
    for line in out.splitlines():
        p = line.split()
        if len(p) >= 2 and p[0].startswith("L") and ":" in p[0] and p[1].isdigit():
            names[int(p[0][1:].split(":")[0])] = p[0].split(":", 1)[1]
    return names


names = layer_names()
norms = sorted(l for l, n in names.items() if n == "aten::layer_norm")
# pre-LN blocks start at every other norm: ln1 (block), ln2 (MLP), ..., ln_f last
starts = norms[0:-1:2]
blocks = [(s, starts[i + 1] if i + 1 < len(starts) else norms[-1]) for i, s in enumerate(starts)]
embs = sorted(l for l, n in names.items() if n == "aten::embedding")
c.check("gpt-tiny: 4 blocks, two embeddings", len(blocks) == 4 and len(embs) == 2, (norms, embs))
tok, pos = embs
head = max(names)

tp, d = rows("--gpus", 2, "--tp", 2)
MiB = 1048576
for i, (a, b) in enumerate(blocks):
    inb = [r for r in tp if r[2] is not None and a <= r[2] < b]
    f = [r for r in inb if r[0] == "tp-forward"]
    w = [r for r in inb if r[0] == "tp-backward"]
    c.check(f"tp 2 block {i}: exactly 2 forward and 2 backward all-reduces of 1 MiB",
            len(f) == 2 and len(w) == 2 and all(r[1] == "allreduce" and r[3] == MiB for r in inb), inb)
c.check("tp 2: the vocabulary embedding has one forward all-reduce",
        [r[:2] for r in tp if r[2] == tok] == [("tp-forward", "allreduce")], [r for r in tp if r[2] == tok])
c.check("tp 2: none for the position embedding", not [r for r in tp if r[2] == pos])
hd = [r for r in tp if r[2] == head]
c.check("tp 2: cross-entropy split with 3 all-reduces of 4 KiB, the LM head 1 backward all-reduce",
        sorted(hd) == sorted([("tp-forward", "allreduce", head, 4096.0)] * 3 + [("tp-backward", "allreduce", head, MiB)]),
        hd)
c.check("tp 2: no all-gather", not [r for r in tp if r[1] == "allgather"])
if d:
    c.check("tp 2: 12 forward, 9 backward TP collectives", (d["simulation"]["tp_collectives_fwd"],
            d["simulation"]["tp_collectives_bwd"]) == (12, 9), d["simulation"])
    c.check_breakdown("gpt-tiny tp 2", d)
    c.check("tp 2: 218.9 ms (README)", abs(d["step_ms"] - 218.9) < 0.05, d["step_ms"])
    c.check("tp 2: every op recognised (tp_replicated_ops empty)", d["simulation"]["tp_replicated_ops"] == [],
            d["simulation"]["tp_replicated_ops"])
rc, out, err = c.run("inspect", gpt, "--json")
tpk = json.loads(out)["tensor_parallel"] if rc == 0 else None
c.check("inspect: 25 linears, 1 vocabulary and 1 position embedding, 1 vocabulary loss, none unrecognised",
        tpk and (tpk["linear"], tpk["embedding"], tpk["position_embedding"], tpk["vocab_loss"], tpk["unrecognised"])
        == (25, 1, 1, 1, []), tpk)

sp, e = rows("--gpus", 2, "--tp", 2, "--sp")


def volume(rs):  # ring traffic per rank at T = 2: all-reduce 2(T-1)/T S, the others (T-1)/T S
    return sum((2 if r[1] == "allreduce" else 1) * r[3] / 2 for r in rs if r[2] is not None)


c.check("sp: no 1 MiB all-reduce left", not [r for r in sp if r[1] == "allreduce" and r[3] == MiB], sp)
c.check("sp: traffic volume equals tp's all-reduce volume", volume(sp) == volume(tp) > 0, (volume(sp), volume(tp)))
after = [r for r in sp if r[2] is None]
# the row-parallel biases (o_proj, fc2: 2 per layer, 4 layers, 256 x 4 B) are added to the reduce-scattered
# output, 1/T of the tokens, so their gradients join the norms' (Megatron's sequence_parallel attribute)
c.check("sp: one all-reduce of the norms', positions' and row-parallel biases' gradients (9 x 2 KiB + 128 KiB + 8 x 1 KiB)",
        after == [("tp-backward", "allreduce", None, 9 * 2048 + 131072.0 + 8 * 1024)], after)
if d and e:
    c.check("sp: the same collectives count twice (reduce-scatter + all-gather), the 3 loss all-reduces once",
            (e["simulation"]["tp_collectives_fwd"], e["simulation"]["tp_collectives_bwd"]) == (21, 18), e["simulation"])
    c.check("sp: plan says sp", e["plan"]["sp"] is True and d["plan"]["sp"] is False, e["plan"])
    c.check_breakdown("gpt-tiny tp 2 sp", e)
    c.check("sp: 215.5 ms (README)", abs(e["step_ms"] - 215.5) < 0.05, e["step_ms"])

# --cp 2: per attention (4) one K/V ring forward (K + V = 2 x 1 MiB) and one backward (twice),
# each rank passing C - 1 = 1 block; overlapped with the attention blocks: on a 1 GB/s link the
# rings' 12.6 ms of transfers stay hidden behind compute (exposed: the last gradient bucket only)
for T in (1, 2):
    out = os.path.join(tmp, f"cp{T}")
    d = c.sim(gpt, "--gpus", 2 * T, "--tp", T, "--cp", 2, "--link-bw", "1GB/s", "--csv", out)
    if not d:
        continue
    cp = [r for r in csv.DictReader(open(os.path.join(out, "collectives.csv"))) if r["group"] == "cp"
          and r["group_id"].startswith("stage 0, tp 0,")]
    fw = [r for r in cp if r["why"] == "cp-forward"]
    bw = [r for r in cp if r["why"] == "cp-backward"]
    c.check(f"cp 2 tp {T}: one ring per attention and direction, all-gathers of K + V over 2 ranks",
            len(fw) == 4 and len(bw) == 4 and all(r["op"] == "allgather" and r["gpus"] == "2" for r in cp)
            and all(float(r["bytes"]) == 2 * MiB / T for r in fw) and all(float(r["bytes"]) == 4 * MiB / T for r in bw),
            cp)
    c.check(f"cp 2 tp {T}: cp_rings 8", d["simulation"]["cp_rings"] == 8, d["simulation"])
    ring_ms = sum(float(r["time_us"]) for r in cp) / 1e3
    g = d["gpus"][0]
    c.check(f"cp 2 tp {T}: the rings overlap the attention (exposed <= comm - rings)",
            g["exposed_comm_ms"] <= g["comm_ms"] - 0.99 * ring_ms + 1e-6, (g, ring_ms))
    c.check_breakdown(f"gpt-tiny cp 2 tp {T}", d)
d = c.sim(gpt, "--gpus", 2, "--cp", 2)
one = c.sim(gpt, "--gpus", 1)
if d and one:
    c.check("cp 2: per-token work halves (229.8 ms, one GPU 428.8 ms)", abs(d["step_ms"] - 229.8) < 0.05, d["step_ms"])
    c.check("cp 2: plan says cp 2", d["plan"]["cp"] == 2, d["plan"])

# tied embeddings under --pp 4: one 8 MiB all-reduce between stages 0 and 3 (the emb group), none elsewhere
out = os.path.join(tmp, "pp4")
d = c.sim(gpt, "--gpus", 4, "--pp", 4, "--csv", out)
if d:
    emb = [r for r in csv.DictReader(open(os.path.join(out, "collectives.csv"))) if r["group"] == "emb"]
    c.check("pp 4: the tied embedding's gradient all-reduced once between the first and last stage",
            d["simulation"]["tied_syncs"] == 2 and len(emb) == 1 and emb[0]["gpus"] == "2"
            and float(emb[0]["bytes"]) == 8 * MiB and emb[0]["op"] == "allreduce", (d["simulation"], emb))
    c.check_breakdown("gpt-tiny pp 4", d)

# sharded data parallel with --cp: the states shard over dp x cp (N = 8): ZeRO-3 / FSDP with layer units
# (every unit resharded after forward) send 3(N-1)/N of the parameter bytes on the dp+cp kinds, as dp 8
# does on dp; DDP 2(N-1)/N
pbytes = c.param_bytes(gpt)
for mode, want in ((["--zero", 3], 3), (["--fsdp", "--fsdp-units", "layer"], 3), ([], 2)):
    d = c.sim(gpt, "--gpus", 8, "--dp", 4, "--cp", 2, *mode)
    if d:
        kinds = d["mesh"]["traffic_bytes"]
        sent = sum(v for k, v in kinds.items() if k.startswith("dp"))
        c.check(f"dp 4 x cp 2 {' '.join(map(str, mode)) or 'ddp'}: {want}(N-1)/N of the parameters over dp x cp",
                abs(sent - want * 7 / 8 * pbytes) < 1e-6 * pbytes, (kinds, pbytes))

c.check_bad("--cp 3 does not divide the sequence length 128", "simulate", gpt, "--gpus", 3, "--cp", 3)
c.check_bad("--cp 2 needs attention", "simulate", f"{traces}/cpu-resnet18-b8", "--gpus", 2, "--cp", 2)
c.check_bad("--cp does not apply to compare", "compare", gpt, "--gpus", 4, "--cp", 2)
c.check_bad("--sp", "simulate", gpt, "--gpus", 2, "--sp")
c.check_bad("--sp does not apply to this model", "simulate", f"{traces}/cpu-resnet18-b8", "--gpus", 2, "--tp", 2, "--sp")
c.check_bad("4 attention heads", "simulate", gpt, "--gpus", 8, "--tp", 8)
shutil.rmtree(tmp)
c.finish()
EOF
