#!/usr/bin/env bash
# Integration: `mitosis serve` that one client cannot exhaust or hang (issue 34), loopback only,
# bounded. serve_abuse.py does the work (timings need a parent that waits on the server itself):
# a long run cancelled by DELETE (cancel latency < 1 s), a queued one cancelled at once, a run
# refused by its estimate (--max-events, --max-run-seconds) and one stopped at its wall limit,
# SIGTERM during a long run (exit < 2 s, exit 0, the private folder gone, no sanitizer report),
# 100 slow-header clients + 3 gzip bombs while a prober's GET p99 stays < 1 s, ids with %00
# refused, the favicon, and N small runs (MT_SERVE_ABUSE_RUNS, default 40; 1000 for the README's
# numbers) with eviction keeping the runs, the disk and the RSS under their caps. Issue 42: 300
# slow-header connections from 300 addresses shut at the header deadline while another client is
# answered, refusals counted in one summary line; kept 1024-GPU runs hold no result in memory (RSS
# flat, the status streamed from result.json), a result over --max-run-bytes fails its run.
set -u
BIN=$1
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
command -v python3 >/dev/null || { echo "serve_abuse: skipped: python3 is needed"; exit 77; }
exec python3 "$ROOT/tests/integration/serve_abuse.py" "$BIN" "$ROOT"
