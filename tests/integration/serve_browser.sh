#!/usr/bin/env bash
# Integration: the web UI (`mitosis serve`) in a real browser. Debian's headless Chromium driven
# by puppeteer-core from npm (serve_browser.mjs: choose a shipped trace, 8 GPUs on the DGX-H100
# preset, run, check the answer sentence and the report's charts in the DOM, run compare and check
# the ranking, put the two runs side by side, a bad upload shows an error; screenshots into the
# build folder's serve-screens/). puppeteer-core is installed by this test into the build folder
# (serve-browser/, once), pinned to the release whose Chrome is Debian's (156). Skips (77) with a
# message when Chromium, node/npm or the npm registry is absent.
set -u
BIN=$1
ROOT=${MT_ROOT:-$(cd "$(dirname "$0")/../.." && pwd)}
BUILD=$(cd "$(dirname "$BIN")" && pwd)
PPTR_VERSION=25.16.0 # its Chrome is 156.0.8078, as Debian bookworm's chromium
CHROMIUM=${MT_CHROMIUM:-$(command -v chromium || true)}
[ -n "$CHROMIUM" ] || { echo "serve_browser: skipped: no chromium (apt-get install chromium)"; exit 77; }
command -v node >/dev/null && command -v npm >/dev/null ||
    { echo "serve_browser: skipped: node and npm are needed (apt-get install npm)"; exit 77; }
CACHE=$BUILD/serve-browser
if [ ! -f "$CACHE/node_modules/puppeteer-core/package.json" ]; then
    mkdir -p "$CACHE"
    if ! timeout 180 npm install --prefix "$CACHE" --no-audit --no-fund --loglevel=error \
            "puppeteer-core@$PPTR_VERSION" >"$CACHE/npm.log" 2>&1; then
        echo "serve_browser: skipped: cannot install puppeteer-core@$PPTR_VERSION from the npm registry" \
             "($(tail -1 "$CACHE/npm.log"))"
        exit 77
    fi
fi
TMP=$(mktemp -d)
trap 'rm -rf "$TMP"' EXIT
. "$ROOT/tests/integration/serve_lib.bash"
SHOTS=$BUILD/serve-screens
mkdir -p "$SHOTS"
serve_start
node "$ROOT/tests/integration/serve_browser.mjs" "$URL/" "$CACHE/node_modules/puppeteer-core" "$SHOTS" "$CHROMIUM" ||
    { kill "$SERVE_PID"; echo "FAIL: the browser checks (screenshots in $SHOTS)"; exit 1; }
serve_stop
echo "serve_browser: screenshots in $SHOTS"
