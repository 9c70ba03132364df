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
# Usage: bash traced_plan.sh /path/to/mitosis   (env MT_ROOT = repo root)
set -u
bin=${1:?usage: traced_plan.sh MITOSIS}
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/mt-traced.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fails=0
check() { # name, command
  if eval "$2"; then echo "ok: $1"; else echo "FAIL: $1"; fails=$((fails + 1)); fi
}
T="$root/traces"

"$bin" inspect "$root/tests/fixtures/comm/nccl-rank.json" --json > "$tmp/fx.json"
check "fixture: groups and bytes are the trace's" 'python3 -c "
import json; d=json.load(open(\"$tmp/fx.json\"))
c=[(x[\"collective\"], x[\"bytes\"], x[\"group_size\"]) for x in d[\"communication\"]]
assert c==[(\"alltoall\",4000,4),(\"allgather\",400,2),(\"allreduce\",8192,4)], c
p=d[\"traced_plan\"]; assert p[\"world_size\"]==4 and p[\"rank\"]==1 and p[\"parameter_sync\"]==\"ddp\", p"'

for job in ddp-resmlp pipeline-resmlp embedding-dlrm zero1-resmlp zero1-gpt-tiny tp-gpt-tiny tp-gpt-l8h16 \
           tp-vocab-gpt-tiny; do
  d="$T/cpu-$job-w2"
  "$bin" inspect "$d" --json > "$tmp/i.json" && "$bin" simulate "$d" --json > "$tmp/s.json"
  check "$job: re-simulated at its world size it runs the traced collectives" 'python3 -c "
import json; i=json.load(open(\"$tmp/i.json\")); s=json.load(open(\"$tmp/s.json\"))
p=i[\"traced_plan\"]; sim=s[\"simulation\"]
assert p[\"world_size\"]==2 and p[\"rank\"]==0 and p[\"multi_rank\"], p
assert s[\"plan\"][\"gpus\"]==2 and s[\"plan\"][\"comm\"]==\"traced\", s[\"plan\"]
assert sim[\"traced_collectives\"]==p[\"collectives\"]==sim[\"collectives\"] and sim[\"ddp_buckets\"]==0, (sim, p)
want=sum(x[\"bytes\"]*(2 if x[\"collective\"] in (\"send\",\"recv\") else 1) for x in i[\"collectives\"])
assert abs(sim[\"collective_bytes\"]-want)<=1e-9*want, (sim[\"collective_bytes\"], want)
m=json.load(open(\"$d/meta.json\")); b=m[\"batch\"]; pl=s[\"plan\"]; sync=p[\"parameter_sync\"]; M=m.get(\"micro_batches\", 1)
want={\"tensor\": (1, 2, 1, 1, b), \"ddp\": (2, 1, 1, 1, 2 * b), \"partial\": (2, 1, 1, 1, 2 * b),
      \"pipeline\": (1, 1, 2, M, b)}.get(sync)  # tp ranks share a batch, pipeline stages its M micro-batches
assert want is None or (pl[\"dp\"], pl[\"tp\"], pl[\"pp\"], pl[\"micro_batches\"], pl[\"global_batch\"]) == want, (sync, pl, b)
assert sync != \"pipeline\" or p[\"pipeline_micro_batches\"] == M and M > 1, (p, M)"'
done

m="$T/cpu-ddp-resmlp-w2"
"$bin" inspect "$m" --json > "$tmp/i.json"
check "ddp: the all-reduces carry every parameter" 'python3 -c "
import json; p=json.load(open(\"$tmp/i.json\"))[\"traced_plan\"]
assert p[\"parameter_sync\"]==\"ddp\" and abs(p[\"allreduce_param_share\"]-1)<1e-9, p"'

for job in zero1-resmlp zero1-gpt-tiny; do
  z="$T/cpu-$job-w2"
  "$bin" inspect "$z" --json > "$tmp/i.json"
  check "$job: ZeRO-1 all-reduces every gradient and broadcasts each rank's shard, together the parameters" 'python3 -c "
import json; k=json.load(open(\"$tmp/i.json\"))[\"traced_plan\"][\"by_kind\"]; m=json.load(open(\"$z/meta.json\"))
P=m[\"parameters\"]*4; z=m[\"zero\"]
assert sorted(k)==[\"allreduce\",\"broadcast\"] and k[\"allreduce\"][\"bytes\"]==P==z[\"allreduce_bytes_per_step\"], (k, P)
assert k[\"broadcast\"][\"count\"]==2 and k[\"broadcast\"][\"bytes\"]==P==sum(z[\"broadcast_bytes_per_step\"]), (k, z)"'
done

for job in tp-gpt-tiny tp-gpt-l8h16; do
  t="$T/cpu-$job-w2"
  "$bin" inspect "$t" --json > "$tmp/i.json"
  check "$job: Megatron TP runs 2 forward and 2 backward all-reduces of [batch, seq, hidden] per layer" 'python3 -c "
import json; i=json.load(open(\"$tmp/i.json\")); m=json.load(open(\"$t/meta.json\"))
k=i[\"traced_plan\"][\"by_kind\"]; L=m[\"layers\"]; b=m[\"batch\"]*m[\"seq_len\"]*m[\"hidden\"]*4
assert list(k)==[\"allreduce\"] and k[\"allreduce\"][\"count\"]==4*L and k[\"allreduce\"][\"bytes\"]==4*L*b, (k, L, b)
assert all(c[\"bytes\"]==b for c in i[\"collectives\"]), i[\"collectives\"]
ph=[c[\"phase\"] for c in i[\"collectives\"]]; assert ph[:2*L]==[\"forward\"]*(2*L) and \"forward\" not in ph[2*L:], ph
assert m[\"tp\"][\"allreduce_per_layer\"]=={\"forward\": 2, \"backward\": 2}, m[\"tp\"]"'
done

t="$T/cpu-tp-vocab-gpt-tiny-w2"
"$bin" inspect "$t" --json > "$tmp/i.json"
check "tp-vocab-gpt-tiny: the layers 2 + 2 per layer, the vocabulary-parallel embedding, cross-entropy and LM head 5 more" 'python3 -c "
import json; i=json.load(open(\"$tmp/i.json\")); m=json.load(open(\"$t/meta.json\"))
k=i[\"traced_plan\"][\"by_kind\"]; L=m[\"layers\"]; b=m[\"batch\"]*m[\"seq_len\"]*m[\"hidden\"]*4; n=m[\"batch\"]*m[\"seq_len\"]*4
assert list(k)==[\"allreduce\"] and k[\"allreduce\"][\"count\"]==4*L+5, k
assert k[\"allreduce\"][\"bytes\"]==(4*L+2)*b+3*n==m[\"tp\"][\"allreduce_bytes_per_step\"], (k, m[\"tp\"])
assert sorted(c[\"bytes\"] for c in i[\"collectives\"])==[n]*3+[b]*(4*L+2), i[\"collectives\"]"'

e="$T/cpu-embedding-dlrm-w2"
"$bin" inspect "$e" --json > "$tmp/i.json"
"$bin" simulate "$e" --comm regenerate --json > "$tmp/r.json"
check "embedding: all-reduces of the dense part only, three all-to-alls; regenerate all-reduces the tables too" 'python3 -c "
import json; i=json.load(open(\"$tmp/i.json\")); r=json.load(open(\"$tmp/r.json\")); m=json.load(open(\"$e/meta.json\"))
p=i[\"traced_plan\"]; k=p[\"by_kind\"]; mlp=m[\"dense_parameters\"]*4
assert k[\"allreduce\"][\"count\"]==1 and k[\"allreduce\"][\"bytes\"]==mlp, (k, mlp)
assert k[\"alltoall\"][\"count\"]==3 and p[\"parameter_sync\"]==\"partial\", p
assert r[\"simulation\"][\"traced_collectives\"]==0 and r[\"simulation\"][\"collective_bytes\"]>=i[\"param_bytes\"], r[\"simulation\"]"'

pp="$T/cpu-pipeline-resmlp-w2"
"$bin" inspect "$pp" --json > "$tmp/i.json"
M=$(python3 -c "import json; print(json.load(open('$pp/meta.json'))['micro_batches'])")
"$bin" simulate "$T/cpu-resmlp-b64" --pp 2 --micro-batches "$M" --schedule gpipe --json > "$tmp/c.json"
check "pipeline: rank 0 sends and receives one [batch/M, hidden] tensor per micro-batch" 'python3 -c "
import json; i=json.load(open(\"$tmp/i.json\")); m=json.load(open(\"$pp/meta.json\"))
k=i[\"traced_plan\"][\"by_kind\"]; b=m[\"dist\"][\"sent_bytes_per_micro_batch\"]
assert b==m[\"batch\"]//$M*m[\"hidden\"]*4, b
assert k[\"send\"][\"count\"]==$M and k[\"send\"][\"bytes\"]==$M*b and k[\"recv\"][\"count\"]==$M, k"'
check "pipeline: the one-process trace cut in two sends what the real pipeline sent" 'python3 -c "
import json; c=json.load(open(\"$tmp/c.json\")); m=json.load(open(\"$pp/meta.json\"))
assert c[\"stages\"][0][\"boundary_bytes\"]==m[\"dist\"][\"sent_bytes_per_micro_batch\"], c[\"stages\"]"'

# whole tensors at the cut: ResNet-18 b8 in 2 micro-batches of 4, layer2's [4, 128, 28, 28] (the
# time-balanced cut lies inside a residual block, where the block's input crosses beside its branch:
# extrapolate/stages.h); gpt-tiny b8 exactly one, a block's hidden state [4, 128, 256]
for c in "cpu-resnet18-b8 1605632 any" "cpu-gpt-tiny-b8 524288 one"; do
  read -r name bytes n <<< "$c"
  "$bin" simulate "$T/$name" --pp 2 --json > "$tmp/p.json"
  check "$name --pp 2: the stages exchange $n tensor(s) of $bytes bytes" 'python3 -c "
import json; s=json.load(open(\"$tmp/p.json\"))[\"stages\"]; b=s[0][\"boundary_bytes\"]
assert (b==$bytes) if \"$n\"==\"one\" else (b>0 and b%$bytes==0), s"'
done

"$bin" simulate "$m" --calibrate > "$tmp/out" 2> "$tmp/err"; rc=$?
check "--calibrate refuses a job's step as one GPU's: exit 2, one line naming the trace" \
  '[ $rc -eq 2 ] && [ "$(wc -l < "$tmp/err")" -eq 1 ] && grep -q "cpu-ddp-resmlp-w2.*2-rank job" "$tmp/err"'
"$bin" simulate "$T/cpu-resnet18-b8" > "$tmp/out" 2> "$tmp/err"; rc=$?
check "a one-GPU trace still needs --gpus" '[ $rc -eq 2 ] && grep -q "gpus is required" "$tmp/err"'

[ "$fails" -eq 0 ] || { echo "$fails check(s) failed"; exit 1; }
echo "PASS"
