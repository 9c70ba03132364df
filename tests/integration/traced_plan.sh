#!/usr/bin/env bash
# Integration: a multi-rank trace's own collectives (issue "Numbers you can trust", items 8-10).
#  - the fixture rank of a 4-rank NCCL job: inspect's group and bytes are the trace's
#    (record_param_comms inside c10d:: ops inside ops);
#  - rank 0 of the project's own 2-process gloo jobs (traces/cpu-{ddp,pipeline,embedding}-*-w2,
#    recorded by collect.py --dist): re-simulated at their own world size and plan (simulate's
#    default for them) they run exactly the traced collectives: kinds, bytes and count per step;
#    the sharded embedding all-reduces only its MLP (no invented all-reduce of its tables unless
#    --comm regenerate); --calibrate refuses a job's step as one GPU's;
#  - ZeRO-1 (cpu-zero1-*-w2): the gradients all-reduced, one broadcast per rank's shard, together the
#    parameter bytes; Megatron TP (cpu-tp-*-w2): 2 forward and 2 backward all-reduces per layer;
#  - pipeline cuts: the one-process resmlp cut into 2 stages sends what the real 2-process
#    pipeline sent per micro-batch (one block's output), ResNet-18 and gpt-tiny one tensor too.
# One python runs the checks through libmitosis, each trace opened once (libsim.py); the refusals run the binary.
# Usage: bash traced_plan.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: traced_plan.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
. "$(dirname "$0")/libsim.bash"
libsim_python "$bin" - "$bin" "$root" "$(dirname "$0")" <<'PY'
import json, os, sys
sys.path.insert(0, sys.argv[3])
from libsim import Checks, Sim
bin_, root = sys.argv[1:3]
sim, checks = Sim(bin_), Checks()
check = checks.guard  # check(name, f): f asserts the property
T = os.path.join(root, "traces")


def meta(d):
    return json.load(open(os.path.join(d, "meta.json")))


def fixture():
    d = sim.inspect_json(os.path.join(root, "tests/fixtures/comm/nccl-rank.json"))
    c = [(x["collective"], x["bytes"], x["group_size"]) for x in d["communication"]]
    assert c == [("alltoall", 4000, 4), ("allgather", 400, 2), ("allreduce", 8192, 4)], c
    p = d["traced_plan"]
    assert p["world_size"] == 4 and p["rank"] == 1 and p["parameter_sync"] == "ddp", p


check("fixture: groups and bytes are the trace's", fixture)

for job in ("ddp-resmlp", "pipeline-resmlp", "embedding-dlrm", "zero1-resmlp", "zero1-gpt-tiny", "tp-gpt-tiny",
            "tp-gpt-l8h16", "tp-vocab-gpt-tiny"):
    def resim(d=os.path.join(T, f"cpu-{job}-w2")):
        i, s = sim.inspect_json(d), sim.sim_json(d)
        p, sm = i["traced_plan"], s["simulation"]
        assert p["world_size"] == 2 and p["rank"] == 0 and p["multi_rank"], p
        assert s["plan"]["gpus"] == 2 and s["plan"]["comm"] == "traced", s["plan"]
        assert sm["traced_collectives"] == p["collectives"] == sm["collectives"] and sm["ddp_buckets"] == 0, (sm, p)
        want = sum(x["bytes"] * (2 if x["collective"] in ("send", "recv") else 1) for x in i["collectives"])
        assert abs(sm["collective_bytes"] - want) <= 1e-9 * want, (sm["collective_bytes"], want)
        m = meta(d)
        b, pl, sync, M = m["batch"], s["plan"], p["parameter_sync"], m.get("micro_batches", 1)
        want = {"tensor": (1, 2, 1, 1, b), "ddp": (2, 1, 1, 1, 2 * b), "partial": (2, 1, 1, 1, 2 * b),
                "pipeline": (1, 1, 2, M, b)}.get(sync)  # tp ranks share a batch, pipeline stages its M micro-batches
        assert want is None or (pl["dp"], pl["tp"], pl["pp"], pl["micro_batches"], pl["global_batch"]) == want, (sync, pl, b)
        assert sync != "pipeline" or p["pipeline_micro_batches"] == M and M > 1, (p, M)
    check(f"{job}: re-simulated at its world size it runs the traced collectives", resim)

m_ = os.path.join(T, "cpu-ddp-resmlp-w2")


def ddp():
    p = sim.inspect_json(m_)["traced_plan"]
    assert p["parameter_sync"] == "ddp" and abs(p["allreduce_param_share"] - 1) < 1e-9, p


check("ddp: the all-reduces carry every parameter", ddp)

for job in ("zero1-resmlp", "zero1-gpt-tiny"):
    def zero1(z=os.path.join(T, f"cpu-{job}-w2")):
        k, m = sim.inspect_json(z)["traced_plan"]["by_kind"], meta(z)
        P, zz = m["parameters"] * 4, m["zero"]
        assert sorted(k) == ["allreduce", "broadcast"] and k["allreduce"]["bytes"] == P == zz["allreduce_bytes_per_step"], (k, P)
        assert k["broadcast"]["count"] == 2 and k["broadcast"]["bytes"] == P == sum(zz["broadcast_bytes_per_step"]), (k, zz)
    check(f"{job}: ZeRO-1 all-reduces every gradient and broadcasts each rank's shard, together the parameters", zero1)

for job in ("tp-gpt-tiny", "tp-gpt-l8h16"):
    def tp(t=os.path.join(T, f"cpu-{job}-w2")):
        i, m = sim.inspect_json(t), meta(t)
        k, L, b = i["traced_plan"]["by_kind"], m["layers"], m["batch"] * m["seq_len"] * m["hidden"] * 4
        assert list(k) == ["allreduce"] and k["allreduce"]["count"] == 4 * L and k["allreduce"]["bytes"] == 4 * L * b, (k, L, b)
        assert all(c["bytes"] == b for c in i["collectives"]), i["collectives"]
        ph = [c["phase"] for c in i["collectives"]]
        assert ph[:2 * L] == ["forward"] * (2 * L) and "forward" not in ph[2 * L:], ph
        assert m["tp"]["allreduce_per_layer"] == {"forward": 2, "backward": 2}, m["tp"]
    check(f"{job}: Megatron TP runs 2 forward and 2 backward all-reduces of [batch, seq, hidden] per layer", tp)


def tp_vocab(t=os.path.join(T, "cpu-tp-vocab-gpt-tiny-w2")):
    i, m = sim.inspect_json(t), meta(t)
    k, L = i["traced_plan"]["by_kind"], m["layers"]
    b, n = m["batch"] * m["seq_len"] * m["hidden"] * 4, m["batch"] * m["seq_len"] * 4
    assert list(k) == ["allreduce"] and k["allreduce"]["count"] == 4 * L + 5, k
    assert k["allreduce"]["bytes"] == (4 * L + 2) * b + 3 * n == m["tp"]["allreduce_bytes_per_step"], (k, m["tp"])
    assert sorted(c["bytes"] for c in i["collectives"]) == [n] * 3 + [b] * (4 * L + 2), i["collectives"]


check("tp-vocab-gpt-tiny: the layers 2 + 2 per layer, the vocabulary-parallel embedding, cross-entropy and LM head 5 more",
      tp_vocab)


def embedding(e=os.path.join(T, "cpu-embedding-dlrm-w2")):
    i, r, m = sim.inspect_json(e), sim.sim_json(e, "--comm", "regenerate"), meta(e)
    p = i["traced_plan"]
    k, mlp = p["by_kind"], m["dense_parameters"] * 4
    assert k["allreduce"]["count"] == 1 and k["allreduce"]["bytes"] == mlp, (k, mlp)
    assert k["alltoall"]["count"] == 3 and p["parameter_sync"] == "partial", p
    assert r["simulation"]["traced_collectives"] == 0 and r["simulation"]["collective_bytes"] >= i["param_bytes"], r["simulation"]


check("embedding: all-reduces of the dense part only, three all-to-alls; regenerate all-reduces the tables too", embedding)

pp = os.path.join(T, "cpu-pipeline-resmlp-w2")
M = meta(pp)["micro_batches"]


def pipe_rank0():
    i, m = sim.inspect_json(pp), meta(pp)
    k, b = i["traced_plan"]["by_kind"], m["dist"]["sent_bytes_per_micro_batch"]
    assert b == m["batch"] // M * m["hidden"] * 4, b
    assert k["send"]["count"] == M and k["send"]["bytes"] == M * b and k["recv"]["count"] == M, k


def pipe_cut():
    c = sim.sim_json(os.path.join(T, "cpu-resmlp-b64"), "--pp", 2, "--micro-batches", M, "--schedule", "gpipe")
    assert c["stages"][0]["boundary_bytes"] == meta(pp)["dist"]["sent_bytes_per_micro_batch"], c["stages"]


check("pipeline: rank 0 sends and receives one [batch/M, hidden] tensor per micro-batch", pipe_rank0)
check("pipeline: the one-process trace cut in two sends what the real pipeline sent", pipe_cut)

# whole tensors at the cut: ResNet-18 b8 in 2 micro-batches of 4, layer2's [4, 128, 28, 28] (the
# time-balanced cut lies inside a residual block, where the block's input crosses beside its branch:
# extrapolate/stages.h); gpt-tiny b8 exactly one, a block's hidden state [4, 128, 256]
for name, nbytes, n in (("cpu-resnet18-b8", 1605632, "any"), ("cpu-gpt-tiny-b8", 524288, "one")):
    def cut(name=name, nbytes=nbytes, n=n):
        s = sim.sim_json(os.path.join(T, name), "--pp", 2)["stages"]
        b = s[0]["boundary_bytes"]
        assert (b == nbytes) if n == "one" else (b > 0 and b % nbytes == 0), s
    check(f"{name} --pp 2: the stages exchange {n} tensor(s) of {nbytes} bytes", cut)


def calibrate():
    rc, _, err = sim.run("simulate", m_, "--calibrate")
    assert rc == 2 and len(err.splitlines()) == 1 and "cpu-ddp-resmlp-w2" in err and "2-rank job" in err.split("cpu-ddp-resmlp-w2", 1)[1], (rc, err)


def needs_gpus():
    rc, _, err = sim.run("simulate", os.path.join(T, "cpu-resnet18-b8"))
    assert rc == 2 and "gpus is required" in err, (rc, err)


check("--calibrate refuses a job's step as one GPU's: exit 2, one line naming the trace", calibrate)
check("a one-GPU trace still needs --gpus", needs_gpus)
print(sim.summary())
print(f"{checks.fails} check(s) failed" if checks.fails else "PASS")
sys.exit(1 if checks.fails else 0)
PY
