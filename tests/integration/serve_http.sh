#!/usr/bin/env bash
# Integration: the web UI's JSON API (`mitosis serve`) with curl. A run through the API returns
# exactly the CLI's --json for the same options (simulate with a what-if, compare on a --traces
# folder); an upload is parsed by the readers and runs; path traversal, file-valued options,
# malformed JSON, unknown options, out-of-range values (the CLI's own message), oversize uploads
# (with and without Content-Length) and unknown routes are refused with a 4xx and a message; 50
# concurrent requests, some of them uploads cut off mid-way, leave the server answering with no
# partial upload left behind; it stops cleanly on SIGTERM (in the ASan build: no leak report).
# POST /api/check answers as POST /api/runs would, without running (the web floor on bandwidths,
# a comparison of too many plans). No answer, run status, error or run file holds the server's
# own paths (the trace folders, the private folder): traces are named by their catalogue ids.
# No web page can drive it (issue 42, serve/guard.h): cross-site POSTs, uploads and DELETEs, bodies
# not sent as application/json, uploads without the page's token, and foreign Host headers (DNS
# rebinding) are refused and start nothing; the server's own names and Origin are served.
set -u
BIN=$1
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v curl >/dev/null && command -v jq >/dev/null ||
    { echo "serve_http: skipped: curl and jq are needed (apt-get install curl jq)"; exit 77; }
TMP=$(mktemp -d)
trap 'kill "$SERVE_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
. "$ROOT/tests/integration/serve_lib.bash"
. "$ROOT/tests/integration/clicheck.bash"
trap 'kill "$SERVE_PID" 2>/dev/null; rm -rf "$TMP"' EXIT
ok() { echo "ok: $*"; }

# the command line refuses bad flags in one line
check_bad "--port needs an integer in 0..65535" serve --port 70000
check_bad "--listen needs an IPv4 or IPv6 address" serve --listen nowhere --port 0
check_bad "--traces $TMP/none: cannot open the folder" serve --traces "$TMP/none" --port 0
ok "bad flags refused"

mkdir -p "$TMP/more" "$TMP/tmpdir"
ln -s "$ROOT/traces/cpu-gpt-tiny-b4" "$TMP/more/mine"
TMPDIR=$TMP/tmpdir serve_start --traces "$TMP/more" --max-upload 1MB
STORE=$(echo "$TMP"/tmpdir/mitosis-serve-*)
[ -d "$STORE" ] || fail "no private folder under TMPDIR"
[ "$(stat -c %a "$STORE")" = 700 ] || fail "the private folder is not mode 700"

# req METHOD PATH [curl args...]: the body into $TMP/body, the status into $CODE
req() {
    local m=$1 p=$2; shift 2
    CODE=$(curl -s --path-as-is -o "$TMP/body" -w '%{http_code}' -X "$m" "$@" "$URL$p")
    cat "$TMP/body" >>"$TMP/all-bodies"
}
want() { # want CODE TEXT WHAT
    [ "$CODE" = "$1" ] || fail "$3: HTTP $CODE, want $1: $(head -c 300 "$TMP/body")"
    grep -q -- "$2" "$TMP/body" || fail "$3: the answer lacks '$2': $(head -c 300 "$TMP/body")"
    ok "$3 ($1)"
}
run() { # run JSON: submits, waits until done or failed; ID and the status in $TMP/status
    req POST /api/runs -H 'Content-Type: application/json' -d "$1"
    [ "$CODE" = 202 ] || fail "POST /api/runs $1: HTTP $CODE: $(cat "$TMP/body")"
    ID=$(jq .id "$TMP/body")
    for _ in $(seq 1200); do
        kill -0 "$SERVE_PID" 2>/dev/null || fail "mitosis serve died during run $ID: $(head -c 3000 "$TMP/serve.err")"
        curl -s "$URL/api/runs/$ID" >"$TMP/status"
        case $(jq -r .status "$TMP/status") in done | failed) cat "$TMP/status" >>"$TMP/all-bodies"; return ;; esac
        sleep 0.1
    done
    fail "run $ID not finished in 120 s"
}
bad_run() { # bad_run BODY TEXT WHAT: POST /api/runs is refused with 400 and TEXT
    req POST /api/runs "${J[@]}" -d "$1"
    want 400 "$2" "$3"
}
check_req() { # check_req BODY CODE TEXT WHAT: POST /api/check answers CODE with TEXT
    req POST /api/check "${J[@]}" -d "$1"
    want "$2" "$3" "$4"
}
same() { # same WHAT CLI-ARGS...: the last run's result equals the CLI's --json, but for the trace
    # folders, which the API names by catalogue id (shipped/NAME, dir1/NAME), never by path, and the
    # server's verdict keys (report/verdict.h: speed-up over one GPU, efficiency, what holds the step back,
    # memory per GPU, a what-if's change; report/waits.h: whom the GPUs waited for)
    local what=$1; shift
    jq -S 'del(.simulation.wall_s, .simulation.peak_rss_bytes?, .wall_s?, .speedup?, .efficiency?, .one_gpu?,
               .holdback?, .speedup_note?, .peak_mem_bytes?, .waits?, .whatif.change_pct?) |
           if .rows then .rows |= map(del(.efficiency, .holdback, .change_pct?)) else . end' \
      <(jq .result "$TMP/status") >"$TMP/api.json"
    "$BIN" "$@" --json | sed "s|$ROOT/traces/|shipped/|g; s|$TMP/more/|dir1/|g" |
      jq -S 'del(.simulation.wall_s, .simulation.peak_rss_bytes?, .wall_s?)' >"$TMP/cli.json" ||
      fail "$what: the CLI failed"
    cmp -s "$TMP/api.json" "$TMP/cli.json" || fail "$what: API and CLI differ: $(diff "$TMP/api.json" "$TMP/cli.json" | head -5)"
    ok "$what: the API's result equals the CLI's --json"
}

req GET /
want 200 "<title>mitosis" "the page"
# the server's token (serve/guard.h): an upload carries it; a JSON body says it is JSON
TOKEN=$(sed -n 's/.*<meta name="mitosis-token" content="\([0-9a-f]\{32\}\)">.*/\1/p' "$TMP/body")
[ -n "$TOKEN" ] || fail "the page carries no token"
K=(-H "X-Mitosis-Token: $TOKEN")
J=(-H 'Content-Type: application/json')
grep -Eq '(src|href)="https?:' "$TMP/body" && fail "the page refers to another site"
req GET /api/traces
want 200 '"id": "shipped/cpu-resnet18-b8"' "the shipped traces listed"
grep -q '"id": "dir1/mine"' "$TMP/body" || fail "the --traces folder's trace is not listed"
req GET '/api/trace?id=dir1/mine'
want 200 '"batch_size": 4' "the summary of a --traces trace (inspect --json)"
grep -q '"source": "--traces folder 1"' "$TMP/body" || fail "a --traces trace's source is not '--traces folder 1'"
grep -q '"dir1/mine/' "$TMP/body" || fail "the summary's files are not named dir1/mine/...: $(jq -c .summary.files "$TMP/body")"

# API round trips equal the CLI's --json
run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "files": ["timeline", "csv"],
      "options": {"gpus": 8, "topology": "dgx-h100", "slow-gpu": ["1:1.5"], "sp": false}}'
[ "$(jq -r .status "$TMP/status")" = done ] || fail "simulate run: $(jq -r .error "$TMP/status")"
same "simulate with a slow GPU" simulate "$ROOT/traces/cpu-resnet18-b8" --gpus 8 --topology dgx-h100 --slow-gpu 1:1.5
# whom the GPUs waited for: the result's waits lines are the CLI text's (one source, report/waits.h)
"$BIN" simulate "$ROOT/traces/cpu-resnet18-b8" --gpus 8 --topology dgx-h100 --slow-gpu 1:1.5 2>/dev/null |
    awk '/^waits /{on=1} on&&/^$/{exit} on{sub(/^waits +|^ +/, ""); print}' >"$TMP/cli-waits"
jq -r '.result.waits.lines[].text' "$TMP/status" >"$TMP/api-waits"
[ -s "$TMP/api-waits" ] && grep -q 'for GPU 1 ' "$TMP/api-waits" && cmp -s "$TMP/api-waits" "$TMP/cli-waits" ||
    fail "the API's waits lines are not the CLI's: $(cat "$TMP/api-waits") / $(cat "$TMP/cli-waits")"
jq -e '.result.whatif | .change_pct - 100 * (.run_ms - .base_ms) / .base_ms | fabs < 1e-6' "$TMP/status" >/dev/null ||
    fail "the what-if's change_pct is not (run - base) / base: $(jq -c .result.whatif "$TMP/status")"
ok "the API's waits lines are the CLI's ($(head -1 "$TMP/api-waits")); the what-if's change in %"
for f in report.html timeline.json csv/gpus.csv csv/layers.csv csv/ops.csv csv/links.csv csv/collectives.csv result.json; do
    req GET "/api/runs/$ID/$f"
    [ "$CODE" = 200 ] && [ -s "$TMP/body" ] || [ "${f#csv/}" != "$f" ] || fail "download $f: HTTP $CODE"
done
[ "$(jq -r .result.trace "$TMP/status")" = shipped/cpu-resnet18-b8/kineto.json.gz ] ||
    fail "the result names the trace by path: $(jq -r .result.trace "$TMP/status")"
ok "downloads: report.html, timeline.json, the CSV tables, result.json (asked for: \"files\")"
run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 8}}'
[ "$(jq -c .files "$TMP/status")" = '["result.json","report.html"]' ] ||
    fail "a run that asked for no files wrote: $(jq -c .files "$TMP/status")"
req GET "/api/runs/$ID/timeline.json"
want 404 "no such file" "no timeline unless asked for"
run '{"command": "compare", "trace": "dir1/mine", "options": {"gpus": 4, "plans": "ddp=4,dp=4,ddp=2:pp=2", "gpu-mem": "1GB"}}'
[ "$(jq -r .status "$TMP/status")" = done ] || fail "compare run: $(jq -r .error "$TMP/status")"
[ "$(jq .progress.total "$TMP/status")" = 3 ] || fail "compare progress total is not 3 plans"
same "compare on a --traces folder" compare "$TMP/more/mine" --gpus 4 --plans ddp=4,dp=4,ddp=2:pp=2 --gpu-mem 1GB
# the report's memory column: each plan's peak against the 1 GB limit, as the JSON's peak_mem_bytes says
jq -r '.result.rows[] | "fits: \(100 * .peak_mem_bytes / 1e9 | round)% of 1.00 GB"' "$TMP/status" >"$TMP/mem.want"
req GET "/api/runs/$ID/report.html"
grep -o '<td class="l">fits: [0-9]*% of 1.00 GB</td>' "$TMP/body" | sed 's|<td class="l">||; s|</td>||' >"$TMP/mem.got"
[ -s "$TMP/mem.got" ] && cmp -s "$TMP/mem.want" "$TMP/mem.got" ||
    fail "the report's memory column: $(tr '\n' ';' <"$TMP/mem.got"), want $(tr '\n' ';' <"$TMP/mem.want")"
ok "the report's memory column: $(tr '\n' ';' <"$TMP/mem.got")"

# refusals: 4xx and a message
req GET '/api/trace?id=../../etc'
want 400 "never by a path" "a trace id with .."
req GET '/api/runs/1/../../../../etc/passwd'
want 400 "path refused" "a URL with .."
bad_run '{"command": "simulate", "trace": "/etc", "options": {"gpus": 2}}' "never by a path" "an absolute trace path"
bad_run '{"command": "simulate", "trace": "shipped/../../etc"}' "never by a path" "a trace id climbing out"
bad_run '{"command": "simulate", "trace": ' "malformed JSON body at line 1" "malformed JSON"
bad_run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"frobnicate": 1}}' "unknown option 'frobnicate'" "an unknown option"
bad_run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"json": true}}' "unknown option 'json'" "a CLI output flag"
bad_run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"model": "/etc/passwd"}}' "names a file on the server" "a file-valued option"
bad_run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"topology": "/etc/passwd"}}' "is a file on the server" "a topology file"
bad_run '{"command": "rm", "trace": "shipped/cpu-resnet18-b8"}' 'must be .*simulate.*, .*compare.* or .*cluster.* (got .rm.)' "an unknown command"
bad_run '{"trace": "shipped/cpu-resnet18-b8", "extra": 1}' "unknown key 'extra'" "an unknown key"
"$BIN" simulate "$ROOT/traces/cpu-resnet18-b8" --gpus 0 2>"$TMP/cli.err"
cli_msg=$(sed 's/^mitosis simulate: //' "$TMP/cli.err")
bad_run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 0}}' "$cli_msg" "an out-of-range value, with the CLI's message"

# POST /api/check: a run's checks without the run
check_req '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 8}}' \
    200 '"ok": true' "a good request checked"
check_req '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 0}}' \
    400 "$cli_msg" "a bad request checked, with the run's message"
check_req '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 8, "topology": "switch:8", "link-bw": "1e-9GB/s"}}' \
    400 "link-bw 1e-9GB/s is under the web page's floor of 1MB/s" "a bandwidth under the web floor"
check_req '{"command": "compare", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 100000, "topology": "switch:100000", "gpus-per-node": 100000}}' \
    400 "plans to run is too many (at most 4096" "a comparison of too many plans (100000 GPUs)"
req POST /api/runs "${J[@]}" -d '{"command": "compare", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 100000, "topology": "switch:100000"}}'
want 400 "plans to run is too many" "the same comparison refused before it is queued"

# cross-site requests and DNS rebinding (issue 42; docs/serve.md "Who may drive the server")
PORT=${URL##*:}
echo '{"not": "a trace"}' >"$TMP/junk.json"
req GET /api/runs
runs_before=$(jq length "$TMP/body")
GOOD='{"command": "simulate", "trace": "shipped/cpu-resnet18-b4", "options": {"gpus": 2}}'
req POST /api/runs -H 'Content-Type: text/plain' -H 'Origin: http://evil.example' -d "$GOOD"
want 403 "Origin 'http://evil.example' is not this server" "a cross-site text/plain POST"
req POST /api/runs -H 'Content-Type: text/plain' -d "$GOOD"
want 415 "Content-Type: application/json (got 'text/plain')" "a text/plain POST"
req POST /api/runs -d "$GOOD"
want 415 "application/x-www-form-urlencoded" "a form-encoded POST"
req POST /api/runs -H 'Content-Type:' -d "$GOOD"
want 415 "(got 'none')" "a POST without a content type"
req POST /api/runs "${J[@]}" -H 'Origin: null' -d "$GOOD"
want 403 "Origin 'null'" "a POST from an opaque origin"
req POST /api/runs "${J[@]}" -H 'Sec-Fetch-Site: cross-site' -d "$GOOD"
want 403 "cross-site request" "a POST with Sec-Fetch-Site: cross-site and no Origin"
req POST /api/runs "${J[@]}" -H 'Referer: http://evil.example/page.html' -d "$GOOD"
want 403 "Referer 'http://evil.example/page.html'" "a POST referred by another site"
req POST /api/traces -H 'Origin: http://evil.example' -F "file=@$TMP/junk.json"
want 403 "is not this server" "a cross-site upload"
req POST /api/traces -F "file=@$TMP/junk.json"
want 403 "X-Mitosis-Token" "an upload without the token or an Origin"
req POST /api/traces -H 'X-Mitosis-Token: 00000000000000000000000000000000' -F "file=@$TMP/junk.json"
want 403 "X-Mitosis-Token" "an upload with a wrong token"
req DELETE /api/runs/1 -H 'Origin: http://evil.example'
want 403 "is not this server" "a cross-site DELETE"
req GET /api/runs -H 'Host: evil.attacker.example'
want 421 "Host 'evil.attacker.example' is not this server's address" "a foreign Host (DNS rebinding)"
req GET /api/runs/1 -H "Host: evil.attacker.example:$PORT"
want 421 "not this server's address" "a foreign Host with the port"
req GET /api/traces -H 'Host: 127.0.0.1'
want 421 "not this server's address" "a Host without the port"
req GET /api/traces -H "Host: 127.0.0.1:$((PORT + 1))"
want 421 "not this server's address" "a Host with another port"
req GET / -H 'Host:'
want 400 "needs a Host header" "a request without Host"
CLUSTER='{"command": "cluster", "cluster": {"topology": "fattree:k=4", "jobs": [{"trace": "shipped/cpu-resnet18-b4", "options": {"gpus": 2}}]}}'
req POST /api/runs "${J[@]}" -H 'Origin: http://evil.example' -d "$CLUSTER"
want 403 "Origin 'http://evil.example' is not this server" "a cross-site cluster run"
req POST /api/check -H 'Content-Type: text/plain' -d "$CLUSTER"
want 415 "Content-Type: application/json (got 'text/plain')" "a text/plain cluster check"
req POST /api/runs "${J[@]}" -H "Host: evil.attacker.example:$PORT" -d "$CLUSTER"
want 421 "not this server's address" "a cluster run through a foreign Host"
check_req '{"command": "cluster", "cluster": {"topology": "/etc/topo.json", "jobs": [{"trace": "shipped/cpu-resnet18-b4"}]}}' \
    400 "the web API opens no topology file" "a cluster fabric that is a file"
check_req '{"command": "cluster", "cluster": {"topology": "fattree:k=4", "jobs": [{"trace": "shipped/cpu-resnet18-b4", "options": {"model": "/etc/passwd"}}]}}' \
    400 "job 0: option 'model' names a file on the server" "a cluster job's option naming a server file"
check_req '{"command": "cluster", "cluster": {"topology": "fattree:k=4", "jobs": [{"trace": "/etc"}]}}' \
    400 "never by a path" "a cluster job's trace given as a path"
req GET /api/runs
[ "$(jq length "$TMP/body")" = "$runs_before" ] || fail "a refused request started a run"
for h in "localhost:$PORT" "LOCALHOST:$PORT" "[::1]:$PORT" "127.0.0.1:$PORT" "127.0.0.2:$PORT"; do
    req GET /api/traces -H "Host: $h"
    [ "$CODE" = 200 ] || fail "Host: $h refused: HTTP $CODE $(cat "$TMP/body")"
done
req POST /api/check "${J[@]}" -H "Origin: http://localhost:$PORT" -H 'Sec-Fetch-Site: same-origin' -d "$GOOD"
want 200 '"ok": true' "a POST from the server's own page (Origin http://localhost:PORT)"
req POST /api/traces -H "Origin: $URL" -F "file=@$TMP/junk.json"
want 400 "JSON is neither a Kineto trace" "an upload from the server's own Origin, without the token, reaches the readers"
ok "cross-site POSTs, uploads and DELETEs refused, foreign Hosts refused; this server's names accepted"

# a run that fails names the trace by its id, not its path
run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b8", "options": {"gpus": 64, "pp": 64}}'
[ "$(jq -r .status "$TMP/status")" = failed ] || fail "64 stages on 41 layers did not fail"
jq -r .error "$TMP/status" | grep -q "needs at least 64 layers; shipped/cpu-resnet18-b8/kineto.json.gz has 41" ||
    fail "the failed run's error: $(jq -r .error "$TMP/status")"
ok "a failed run's error names the trace by its id"

req GET /api/nothing
want 404 "not found" "an unknown route"
req GET /api/runs/999
want 404 "no such run" "an unknown run"
req POST /
want 405 "method not allowed" "a wrong method"

# uploads: oversize (declared and streamed), junk, a real Kineto + ET pair
head -c 2000000 /dev/zero | tr '\0' 'x' >"$TMP/big.json"
req POST /api/traces "${K[@]}" -F "file=@$TMP/big.json"
want 413 "over the limit" "an oversize upload"
req POST /api/traces "${K[@]}" -H 'Transfer-Encoding: chunked' -F "file=@$TMP/big.json"
want 413 "over the limit" "an oversize chunked upload (no Content-Length)"
echo '{"not": "a trace"}' >"$TMP/junk.json"
req POST /api/traces "${K[@]}" -F "file=@$TMP/junk.json"
want 400 "upload: file-0: JSON is neither a Kineto trace" "an upload that is no trace"
req POST /api/traces "${K[@]}" -H 'Content-Type: application/json' -d '{}'
want 400 "multipart/form-data" "an upload that is not multipart"
req POST /api/traces "${K[@]}" -F name=mine -F "file=@$ROOT/traces/cpu-gpt-tiny-b4/kineto.json.gz" \
    -F "file=@$ROOT/traces/cpu-gpt-tiny-b4/et.json.gz"
want 201 '"batch_size": 4' "a Kineto + ET upload"
UP=$(jq -r .id "$TMP/body")
run "{\"command\": \"simulate\", \"trace\": \"$UP\", \"options\": {\"gpus\": 2}}"
[ "$(jq -r .status "$TMP/status")" = done ] || fail "a run on the upload: $(jq -r .error "$TMP/status")"
ok "a run on the upload"

# 50 concurrent requests; five clients go away mid-upload
head -c 900000 /dev/zero | tr '\0' 'x' >"$TMP/slow.json"
pids=()
mkdir -p "$TMP/conc"
for i in $(seq 50); do
    case $((i % 10)) in
    0 | 1 | 2 | 3) curl -s -o /dev/null -w '%{http_code}\n' "$URL/api/traces" ;;
    4 | 5) curl -s -o /dev/null -w '%{http_code}\n' "$URL/api/trace?id=shipped/cpu-resnet18-b$((4 << (i % 3)))" ;;
    6) curl -s -o /dev/null -w '%{http_code}\n' "${J[@]}" -d '{"trace": "shipped/cpu-resnet18-b4", "options": {"gpus": 2}}' \
           "$URL/api/runs" ;;
    7) curl -s -o /dev/null -w '%{http_code}\n' "${J[@]}" -d '{"trace": ' "$URL/api/runs" ;;
    8) curl -s -o /dev/null -w '%{http_code}\n' "$URL/" ;;
    9) curl -s -o /dev/null -w 'cut\n' --limit-rate 200k --max-time 1 "${K[@]}" -F "file=@$TMP/slow.json" "$URL/api/traces" ;;
    esac >"$TMP/conc/c$i" 2>/dev/null &
    pids+=($!)
done
wait "${pids[@]}"
codes=$(cat "$TMP"/conc/c* | sort | uniq -c | tr -s ' \n' ' ')
[ "$(cat "$TMP"/conc/c* | grep -c '^200$')" = 35 ] || fail "concurrent GETs: $codes"
[ "$(cat "$TMP"/conc/c* | grep -c '^202$')" = 5 ] || fail "concurrent runs: $codes"
[ "$(cat "$TMP"/conc/c* | grep -c '^400$')" = 5 ] || fail "concurrent bad JSON: $codes"
ok "50 concurrent requests answered:$codes"
run '{"command": "simulate", "trace": "shipped/cpu-resnet18-b4", "options": {"gpus": 2}}'
req GET /api/runs
[ "$(jq '[.[] | select(.status == "done")] | length' "$TMP/body")" = "$((ID - 1))" ] ||
    fail "not every run but the failing one is done"
ok "every run done ($ID, one failed as it should)"
for _ in $(seq 100); do # a cut-off upload is removed once the server sees the connection closed
    left=$(find "$STORE" -maxdepth 1 -name 'upload-*' | wc -l)
    [ "$left" = 1 ] && break
    sleep 0.2
done
[ "$left" = 1 ] || fail "$left upload folders left, want 1 (the good upload): $(ls -l "$STORE"/upload-*)"
ok "cut-off and refused uploads removed"

urls=() # every run's status and files, in one curl (a curl process costs ~30 ms of CPU)
for i in $(seq "$ID"); do
    urls+=("$URL/api/runs/$i")
    for f in report.html timeline.json result.json csv/gpus.csv csv/ops.csv csv/layers.csv; do
        urls+=("$URL/api/runs/$i/$f")
    done
done
curl -s "${urls[@]}" "$URL/api/runs" "$URL/api/traces" "$URL/api/options" >>"$TMP/all-bodies"
for p in "$ROOT" "$TMP" "$STORE" "$(cd "$ROOT" && pwd -P)" "$(cd "$TMP" && pwd -P)"; do
    if grep -qF "$p" "$TMP/all-bodies"; then
        fail "an answer shows the server's path $p: $(grep -oF -m1 "$p" -A0 "$TMP/all-bodies" | head -1) in $(grep -F -m1 "$p" "$TMP/all-bodies" | head -c 300)"
    fi
done
[ "$(wc -c <"$TMP/all-bodies")" -gt 100000 ] || fail "too few answers gathered to look for paths"
ok "no answer, run status, error or run file holds the server's paths ($(wc -c <"$TMP/all-bodies") bytes read)"

serve_stop
[ ! -e "$STORE" ] || fail "the private folder $STORE is left after the server stopped"
ok "the private folder removed at exit"

# another address than loopback: a warning
TMPDIR=$TMP/tmpdir serve_start --listen 0.0.0.0
grep -q "warning: listening beyond this machine" "$TMP/serve.err" || fail "no warning for --listen 0.0.0.0"
serve_stop
echo "serve_http: all checks passed"
