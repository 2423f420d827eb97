#!/usr/bin/env bash
# Drives the MCP transport of a live server with the official MCP TypeScript SDK
# (scripts/mcp-client/, versions pinned by its lockfile): starts the debug binary on a fresh
# data directory, creates a user and a personal access token for the `mcp` surface with
# `tocsin token create --surfaces mcp`, then runs initialize, tools/list and tools/call
# through the SDK's Streamable HTTP client (scripts/mcp-client/check.mjs).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

echo "building the server"
# The same build the integration tests use (see scripts/schemathesis.sh).
cargo test -p tocsin --locked --quiet --no-run --manifest-path "$root/Cargo.toml" >/dev/null 2>&1 \
    || cargo test -p tocsin --locked --no-run --manifest-path "$root/Cargo.toml"
bin="$target_dir/debug/tocsin"

echo "installing the TypeScript SDK"
(cd "$root/scripts/mcp-client" && npm ci --no-audit --no-fund --silent)

work="$(mktemp -d)"
server_pid=""
cleanup() {
    if [ -n "$server_pid" ] && kill -0 "$server_pid" 2>/dev/null; then
        kill "$server_pid"
        wait "$server_pid" 2>/dev/null || true
    fi
    rm -rf "$work"
}
trap cleanup EXIT

port="$(node -e 'const s=require("net").createServer();s.listen(0,"127.0.0.1",()=>{console.log(s.address().port);s.close()})')"
base="http://127.0.0.1:$port"
export TOCSIN_DATA_DIR="$work/data"

email="agent@example.com"
"$bin" migrate >/dev/null
"$bin" user create --email "$email" --password "correct horse battery" --name "Agent" >/dev/null
token="$("$bin" token create --email "$email" --name mcp-ts --permissions all --surfaces mcp)"

TOCSIN_LOG_LEVEL="${TOCSIN_LOG_LEVEL:-warn}" "$bin" serve --listen "127.0.0.1:$port" \
    --public-url "$base" >"$work/server.log" 2>&1 &
server_pid=$!
for _ in $(seq 1 100); do
    if curl -fsS "$base/readyz" >/dev/null 2>&1; then
        break
    fi
    if ! kill -0 "$server_pid" 2>/dev/null; then
        echo "the server exited before becoming ready" >&2
        tail -n 50 "$work/server.log" || true
        exit 1
    fi
    sleep 0.2
done

status=0
TOCSIN_URL="$base" TOCSIN_TOKEN="$token" node "$root/scripts/mcp-client/check.mjs" || status=$?
if [ "$status" -ne 0 ]; then
    echo "---- last lines of the server log ----"
    tail -n 50 "$work/server.log" || true
fi
exit "$status"
