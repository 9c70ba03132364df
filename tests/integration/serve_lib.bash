# Shared by the web UI tests (sourced, not a test itself: ctest runs only *.sh here).
# Needs BIN (the mitosis binary) and TMP (a folder). serve_start ARGS...: starts `mitosis serve
# --port 0 ARGS` in the background and sets URL (http://127.0.0.1:PORT) once it listens (60 s at
# most: the ASan build starts slower). serve_stop: SIGTERM, then checks that it exits 0 within 30 s
# with no sanitizer report (leaks included) on its stderr. Both fail with "FAIL: ..." and exit 1.
serve_start() {
    rm -f "$TMP/serve.out" "$TMP/serve.err" # not a previous server's address
    "$BIN" serve --port 0 "$@" >"$TMP/serve.out" 2>"$TMP/serve.err" &
    SERVE_PID=$!
    URL=
    for _ in $(seq 600); do
        URL=$(sed -n 's|^mitosis serve: \(http://[^/]*\)/.*|\1|p' "$TMP/serve.out")
        [ -n "$URL" ] && return 0
        kill -0 "$SERVE_PID" 2>/dev/null || { echo "FAIL: mitosis serve exited: $(cat "$TMP/serve.err")"; exit 1; }
        sleep 0.1
    done
    echo "FAIL: mitosis serve did not print its address in 60 s"
    kill "$SERVE_PID"
    exit 1
}

serve_stop() {
    kill -TERM "$SERVE_PID"
    local rc=
    for _ in $(seq 300); do
        kill -0 "$SERVE_PID" 2>/dev/null || { wait "$SERVE_PID"; rc=$?; break; }
        sleep 0.1
    done
    [ -n "$rc" ] || { kill -KILL "$SERVE_PID"; echo "FAIL: mitosis serve did not stop in 30 s on SIGTERM"; exit 1; }
    if grep -q "Sanitizer" "$TMP/serve.err"; then
        echo "FAIL: sanitizer report from mitosis serve:"; cat "$TMP/serve.err"; exit 1
    fi
    [ "$rc" -eq 0 ] || { echo "FAIL: mitosis serve exited $rc: $(cat "$TMP/serve.err")"; exit 1; }
    echo "ok: the server stopped cleanly (exit 0, no sanitizer report)"
}
