#!/usr/bin/env bash
# Drives the MCP transport of a live server with the official MCP Python SDK
# (PyPI `mcp`, pinned in scripts/ci-requirements.txt, in the CI venv): starts the debug binary on a fresh
# data directory, creates a user and a personal access token for the `mcp` surface with
# `tocsin token create --surfaces mcp`, then runs initialize, tools/list and tools/call
# through the SDK's Streamable HTTP client (scripts/mcp-client/check.py).
set -euo pipefail

root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
target_dir="${CARGO_TARGET_DIR:-$root/target}"

echo "building the server"
# The same build the integration tests use (see scripts/schemathesis.sh).
cargo test -p tocsin --locked --quiet --no-run --manifest-path "$root/Cargo.toml" >/dev/null 2>&1 \
    || cargo test -p tocsin --locked --no-run --manifest-path "$root/Cargo.toml"
bin="$target_dir/debug/tocsin"

# shellcheck source=scripts/ci-venv.sh
source "$root/scripts/ci-venv.sh"
ci_venv_ready

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

port="$("$CI_VENV/bin/python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')"
base="http://127.0.0.1:$port"
export TOCSIN_DATA_DIR="$work/data"

email="agent@example.com"
"$bin" migrate >/dev/null
"$bin" user create --email "$email" --password "correct horse battery" --name "Agent" >/dev/null
token="$("$bin" token create --email "$email" --name mcp-py --permissions all --surfaces mcp)"

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
TOCSIN_URL="$base" TOCSIN_TOKEN="$token" "$CI_VENV/bin/python" "$root/scripts/mcp-client/check.py" || status=$?
if [ "$status" -ne 0 ]; then
    echo "---- last lines of the server log ----"
    tail -n 50 "$work/server.log" || true
fi
exit "$status"
