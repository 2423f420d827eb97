#!/usr/bin/env bash
# Drives the MCP transport of a live server with the official MCP TypeScript SDK
# (scripts/mcp-client/, versions pinned by its lockfile): initialize, tools/list and
# tools/call through the SDK's Streamable HTTP client (scripts/mcp-client/check.mjs), with a
# personal access token for the `mcp` surface (server and token: scripts/mcp-server.sh).
set -euo pipefail

# shellcheck source=scripts/mcp-server.sh
source "$(dirname "${BASH_SOURCE[0]}")/mcp-server.sh"

echo "installing the TypeScript SDK"
(cd "$root/scripts/mcp-client" && npm ci --no-audit --no-fund --silent)

mcp_server_start mcp-ts
status=0
TOCSIN_URL="$base" TOCSIN_TOKEN="$token" node "$root/scripts/mcp-client/check.mjs" || status=$?
mcp_server_finish "$status"
