#!/usr/bin/env bash
# Integration (issue 36): `mitosis cluster FILE`, several jobs on one fabric, checked by hand.
#  1. two identical DDP jobs on disjoint halves of a non-blocking switch run together exactly as
#     alone, and alone exactly as `simulate` of the job on that switch (GPUs 0-7 either way);
#  2. a 2:1 oversubscribed leaf-spine (tests/fixtures/cluster: 4 GPUs per leaf at 100 GB/s, a
#     200 GB/s uplink, no latency): four 2-GPU data-parallel jobs, one GPU per leaf each, meet on
#     both uplinks; each ring all-reduce of B bytes a GPU sends takes B / 100 GB/s alone (its GPU
#     link) and B / 50 GB/s together (the uplink's max-min share: 200 / 4), B from simulate's
#     traffic; the shared links are the four leaf<->spine directions, each carrying 4 x B;
#  3. a job packed on its own leaf is unaffected (exactly) by a neighbour whose all-reduce crosses
#     the spine, and meets nobody;
#  4. alone results batched (jobs sharing no link side by side) equal one run per job;
#  5. placements: spread and rail-aligned by hand on multinode:nodes=4,gpus=4; random is seeded;
#     a later start shifts nothing but the job's place in time;
#  6. CSV and timeline carry the JSON's numbers; --compare-placements ranks four policies;
#  7. bad job files: one line naming the job or key, exit 2.
set -u
bin=$1
root=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
fx=$root/tests/fixtures/cluster
tr=$root/traces/cpu-resnet18-b8
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail=0
check() { if ! eval "$2"; then echo "FAIL: $1"; fail=1; else echo "ok: $1"; fi; }
job() { # name gpus strategy placement [start_ms]
    printf '{"name": "%s", "trace": "%s", "args": ["--gpus", "%s", "--strategy", "%s", "--host-model", "none"], "placement": %s, "start_ms": %s}' \
        "$1" "$tr" "$2" "$3" "$4" "${5:-0}"
}

# 1. disjoint halves of a switch
printf '{"topology": "switch:16", "jobs": [%s, %s]}' "$(job a 8 ddp '"packed"')" "$(job b 8 ddp '"packed"')" > "$tmp/halves.json"
"$bin" cluster "$tmp/halves.json" --json > "$tmp/halves.out"
"$bin" simulate "$tr" --gpus 8 --strategy ddp --host-model none --topology switch:16 --json > "$tmp/sim8.json"
check "disjoint halves: together = alone = simulate, no shared link" 'python3 - "$tmp/halves.out" "$tmp/sim8.json" <<PY
import json, sys
c, s = (json.load(open(p)) for p in sys.argv[1:])
a, b = c["jobs"]
assert a["placed_on"] == "0-7" and b["placed_on"] == "8-15", (a["placed_on"], b["placed_on"])
for j in (a, b):
    assert j["together_ms"] == j["alone_ms"] == s["step_ms"], (j, s["step_ms"])
    assert j["slowdown"] == 1.0 and j["shared_links"] == [], j
assert c["n_shared_links"] == 0
PY'

# 2. four 2-GPU jobs across a 2:1 leaf-spine
jobs=""
for k in 0 1 2 3; do jobs="$jobs${jobs:+, }$(job j$k 2 dp "[$k, $((k + 4))]")"; done
cp "$fx/leafspine2.json" "$fx/leafspine3.json" "$tmp/"
printf '{"topology": "leafspine2.json", "jobs": [%s]}' "$jobs" > "$tmp/os2.json"
"$bin" cluster "$tmp/os2.json" --json > "$tmp/os2.out"
"$bin" simulate "$tr" --gpus 2 --strategy dp --host-model none --topology "$tmp/leafspine2.json" --json > "$tmp/sim2.json"
check "2:1 leaf-spine: all-reduce B/100GB/s alone, B/50GB/s together (max-min share)" 'python3 - "$tmp/os2.out" "$tmp/sim2.json" <<PY
import json, sys
c, s = (json.load(open(p)) for p in sys.argv[1:])
B = s["gpus"][0]["traffic_bytes"]["allreduce"]
assert B > 1e6, B
for j in c["jobs"]:
    assert abs(j["alone_exposed_ms"] - B / 100e9 * 1e3) < 1e-6, (j["alone_exposed_ms"], B / 100e9 * 1e3)
    assert abs(j["exposed_ms"] - B / 50e9 * 1e3) < 1e-6, (j["exposed_ms"], B / 50e9 * 1e3)
    assert abs(j["together_ms"] - j["alone_ms"] - B / 100e9 * 1e3) < 1e-6, j
    assert j["shared_bytes"] == 4 * B, (j["shared_bytes"], B)   # its B on each of the 4 uplink directions
links = {l["link"]: l for l in c["shared_links"]}
assert sorted(links) == ["leaf0->spine", "leaf1->spine", "spine->leaf0", "spine->leaf1"], sorted(links)
for l in links.values():
    assert l["jobs"] == 4 and l["bytes"] == 4 * B, l
assert c["jobs"][0]["alone_ms"] == s["step_ms"], (c["jobs"][0]["alone_ms"], s["step_ms"])
PY'

# 3. packed on its own leaf vs a neighbour crossing the spine
printf '{"topology": "leafspine3.json", "jobs": [%s, %s]}' "$(job own 4 ddp '"packed"')" "$(job wide 8 ddp '"packed"')" > "$tmp/own.json"
"$bin" cluster "$tmp/own.json" --json > "$tmp/own.out"
check "a job packed on its own leaf: unaffected, meets nobody; its neighbour crosses the spine" 'python3 - "$tmp/own.out" <<PY
import json, sys
c = json.load(open(sys.argv[1]))
own, wide = c["jobs"]
assert own["placed_on"] == "0-3" and wide["placed_on"] == "4-11", (own["placed_on"], wide["placed_on"])
assert own["together_ms"] == own["alone_ms"] and own["shared_links"] == [], own
assert wide["together_ms"] == wide["alone_ms"], wide
assert c["n_shared_links"] == 0
PY'

# 4. batched alone runs = one run per job
for f in os2 own halves; do
    MT_CLUSTER_ALONE=1 "$bin" cluster "$tmp/$f.json" --json > "$tmp/$f.solo"
done
check "alone results batched = one run per job (three files)" 'python3 - "$tmp" <<PY
import json, sys
for f in ("os2", "own", "halves"):
    a = json.load(open(f"{sys.argv[1]}/{f}.out")); b = json.load(open(f"{sys.argv[1]}/{f}.solo"))
    assert b["alone_runs"] == len(b["jobs"]), b["alone_runs"]
    assert [j["alone_ms"] for j in a["jobs"]] == [j["alone_ms"] for j in b["jobs"]], f
    assert [j["alone_exposed_ms"] for j in a["jobs"]] == [j["alone_exposed_ms"] for j in b["jobs"]], f
assert json.load(open(f"{sys.argv[1]}/halves.out"))["alone_runs"] == 1
PY'

# 5. placements by hand; seeded random; a later start
printf '{"topology": "multinode:nodes=4,gpus=4", "jobs": [%s, %s, %s, %s]}' "$(job r 8 ddp '"rail-aligned"')" \
    "$(job s 4 ddp '"spread"')" "$(job x 2 ddp '"random:5"' 250)" "$(job y 2 ddp '"random:5"')" > "$tmp/pl.json"
"$bin" cluster "$tmp/pl.json" --json > "$tmp/pl.out"
"$bin" cluster "$tmp/pl.json" --json > "$tmp/pl2.out"
printf '{"topology": "multinode:nodes=4,gpus=4", "jobs": [%s, %s]}' "$(job x 2 ddp '"random:5"' 250)" \
    "$(job x0 2 ddp '"random:5"')" > "$tmp/late.json"
"$bin" cluster "$tmp/late.json" --json > "$tmp/late.out"
check "rail-aligned rank r at local r mod 4 on whole nodes; spread one GPU a node in turn; random seeded; a later start" 'python3 - "$tmp/pl.out" "$tmp/pl2.out" "$tmp/late.out" <<PY
import json, sys
c, d, late = (json.load(open(p)) for p in sys.argv[1:])
r, s, x, y = c["jobs"]
assert r["placed_on"] == "0-7", r["placed_on"]
assert s["placed_on"] == "8,12,9,13", s["placed_on"]           # nodes 2, 3, 2, 3
left = {10, 11, 14, 15}
xs = set(int(g) for g in x["placed_on"].split(",")); ys = set(int(g) for g in y["placed_on"].split(","))
assert xs <= left and ys <= left and not xs & ys and len(xs) == len(ys) == 2, (xs, ys)
assert [j["placed_on"] for j in c["jobs"]] == [j["placed_on"] for j in d["jobs"]]   # the same seed, the same GPUs
a, b = late["jobs"]
assert a["start_ms"] == 250 and a["alone_ms"] == b["alone_ms"], (a, b)   # times count from the job start
assert abs(late["makespan_ms"] - max(250 + a["together_ms"], b["together_ms"])) < 1e-6, late["makespan_ms"]
PY'

# 6. every format carries the JSON's numbers; placements compared
"$bin" cluster "$tmp/os2.json" --csv "$tmp/csv" --timeline "$tmp/tl.json" --html "$tmp/c.html" > "$tmp/os2.txt"
"$bin" cluster "$tmp/os2.json" --compare-placements --json > "$tmp/cmp.json"
check "CSV, text, HTML and timeline carry the JSON's numbers; --compare-placements ranks 4 policies" 'python3 - "$tmp" <<PY
import csv, json, sys
t = sys.argv[1]
c = json.load(open(f"{t}/os2.out"))
rows = list(csv.DictReader(open(f"{t}/csv/jobs.csv")))
assert [r["job"] for r in rows] == [j["name"] for j in c["jobs"]]
for r, j in zip(rows, c["jobs"]):
    for k in ("alone_ms", "together_ms", "slowdown", "exposed_ms", "peer_wait_ms", "shared_bytes"):
        assert abs(float(r[k]) - j[k]) <= 1e-9 * max(1, abs(j[k])), (k, r[k], j[k])
links = list(csv.DictReader(open(f"{t}/csv/shared_links.csv")))
assert {l["link"] for l in links} == {l["link"] for l in c["shared_links"]}
txt = open(f"{t}/os2.txt").read()
for j in c["jobs"]:
    assert "%.3f" % j["together_ms"] in txt and "%.3f" % j["alone_ms"] in txt, j["name"]
html = open(f"{t}/c.html").read()
for j in c["jobs"]:
    assert "<td>%.3f</td><td>%.3f</td>" % (j["alone_ms"], j["together_ms"]) in html, j["name"]
    assert "%.3fx" % j["slowdown"] in html and "<td>%.2f</td></tr>" % (j["shared_bytes"] / 1e6) in html, j["name"]
for l in c["shared_links"]:
    assert "<td class=l>%s</td>" % l["link"].replace(">", "&gt;") in html, l["link"]
tl = json.load(open(f"{t}/tl.json"))["traceEvents"]
procs = {e["pid"]: e["args"]["name"] for e in tl if e.get("name") == "process_name"}
assert sorted(procs.values()) == ["job j0", "job j1", "job j2", "job j3"], procs
for k, j in enumerate(c["jobs"]):
    ends = [e["ts"] + e["dur"] for e in tl if e.get("ph") == "X" and e["pid"] == k + 1]
    assert abs(max(ends) / 1e3 - j["together_ms"]) < 1e-5, (max(ends), j["together_ms"])
cmp = json.load(open(f"{t}/cmp.json"))["placements"]
assert sorted(p["placement"] for p in cmp) == ["packed", "rail-aligned", "random", "spread"], cmp
assert all(cmp[i]["worst_slowdown"] <= cmp[i + 1]["worst_slowdown"] for i in range(3)), cmp
PY'

# 7. bad job files
bad() { # name json-text expected-substring
    printf '%s' "$2" > "$tmp/bad.json"
    "$bin" cluster "$tmp/bad.json" > /dev/null 2> "$tmp/err"
    local rc=$? want=$3
    check "bad file ($1): exit 2, one line naming it" '[ $rc -eq 2 ] && [ $(wc -l < "$tmp/err") -eq 1 ] && grep -q -- "$want" "$tmp/err" || { cat "$tmp/err"; false; }'
}
bad "overlap" "{\"topology\": \"switch:16\", \"jobs\": [$(job a 8 ddp '"0-7"'), $(job b 8 ddp '"4-11"')]}" "already taken"
bad "too many GPUs" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 8 ddp '"packed"'), $(job b 4 ddp '"packed"')]}" "the fabric (switch:8) has 8"
bad "unknown trace" '{"topology": "switch:8", "jobs": [{"name": "t", "trace": "/nonexistent/trace", "args": ["--gpus", "2"]}]}' "job t"
bad "unknown key" '{"topology": "switch:8", "jobz": []}' "unknown key 'jobz'"
bad "network flag in a job" "{\"topology\": \"switch:8\", \"jobs\": [{\"name\": \"n\", \"trace\": \"$tr\", \"args\": [\"--gpus\", \"2\", \"--link-bw\", \"1GB/s\"]}]}" "belongs to the cluster"
bad "what-if in a job" "{\"topology\": \"switch:8\", \"jobs\": [{\"name\": \"w\", \"trace\": \"$tr\", \"args\": [\"--gpus\", \"2\", \"--slow-gpu\", \"1:2\"]}]}" "what-if"
bad "bad policy" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"clever"')]}" "neither a policy"
bad "a GPU listed twice" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"3,3"')]}" "lists GPU 3 twice"
bad "a list outside the fabric" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"7-8"')]}" "outside the fabric"
bad "a list cut short" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"1,"')]}" "neither a policy"
bad "a list of the wrong size" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"0-2"')]}" "lists more than its 2"
bad "not JSON" 'jobs: [' "not a cluster job file"
bad "no topology" "{\"jobs\": [$(job a 2 ddp '"packed"')]}" "no topology"
# issue 46.13: clear refusals, nothing lenient
bad "a negative GPU" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 4 ddp '[0,1,2,-1]')]}" "placement\[3\] must be a GPU number >= 0"
bad "start_ms out of range" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"packed"' 1e300)]}" "start_ms must be a number of milliseconds from 0 to 1e9"
bad "args as a string" "{\"topology\": \"switch:8\", \"jobs\": [{\"name\": \"s\", \"trace\": \"$tr\", \"args\": \"--gpus 2\"}]}" "must be a list of flags"
bad "gpus_per_node over the fabric" "{\"topology\": \"switch:16\", \"gpus_per_node\": 1000, \"jobs\": [$(job a 2 ddp '"packed"')]}" "gpus_per_node 1000 is more than the topology's 16 GPUs"
bad "random with a negative seed" "{\"topology\": \"switch:8\", \"jobs\": [$(job a 2 ddp '"random:-1"')]}" "neither a policy"
"$bin" cluster /nonexistent.json > /dev/null 2> "$tmp/err"
check "a missing cluster file: exit 2, named, no 'line -1'" '[ $? -eq 2 ] && grep -q "/nonexistent.json" "$tmp/err" && ! grep -q "line -1" "$tmp/err"'
"$bin" cluster "$tmp/os2.json" --placement sideways > /dev/null 2> "$tmp/err"
check "--placement with an unknown policy: exit 2" '[ $? -eq 2 ] && grep -q "not a policy" "$tmp/err"'
exit $fail
