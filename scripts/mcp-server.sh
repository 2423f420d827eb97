# Sourced by the MCP client checks (scripts/mcp-ts-client.sh, scripts/mcp-py-client.sh): builds
# the debug binary as the integration tests do, starts it on a fresh data directory and a free
# port, and mints a personal access token for the `mcp` surface with `tocsin token create`.
# `mcp_server_start NAME` sets `base`, `token`, and `email` and `password` (the person's, for
# the checks that sign in to the dashboard); the server stops when the script exits.
# `mcp_server_finish STATUS` prints the server's log when the check failed and exits with it.

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

mcp_server_start() {
    local name="$1"
    echo "building the server"
    # The same build the integration tests use (see scripts/schemathesis.sh).
    cargo test -p tocsin --locked --quiet --no-run --manifest-path "$root/Cargo.toml" >/dev/null 2>&1 \
        || cargo test -p tocsin --locked --no-run --manifest-path "$root/Cargo.toml"
    local bin="$target_dir/debug/tocsin"

    work="$(mktemp -d)"
    server_pid=""
    trap mcp_server_cleanup EXIT

    local port
    port="$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
    base="http://127.0.0.1:$port"
    export TOCSIN_DATA_DIR="$work/data"

    email="agent@example.com"
    password="correct horse battery"
    "$bin" migrate >/dev/null
    "$bin" user create --email "$email" --password "$password" --name "Agent" >/dev/null
    token="$("$bin" token create --email "$email" --name "$name" --permissions all --surfaces mcp)"

    TOCSIN_LOG_LEVEL="${TOCSIN_LOG_LEVEL:-warn}" "$bin" serve --listen "127.0.0.1:$port" \
        --public-url "$base" >"$work/server.log" 2>&1 &
    server_pid=$!
    for _ in $(seq 1 100); do
        if curl -fsS "$base/readyz" >/dev/null 2>&1; then
            return 0
        fi
        if ! kill -0 "$server_pid" 2>/dev/null; then
            echo "the server exited before becoming ready" >&2
            tail -n 50 "$work/server.log" || true
            exit 1
        fi
        sleep 0.2
    done
}

mcp_server_cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}

mcp_server_finish() {
    local status="$1"
    if [ "$status" -ne 0 ]; then
        echo "---- last lines of the server log ----"
        tail -n 50 "$work/server.log" || true
    fi
    exit "$status"
}
