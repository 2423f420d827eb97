#!/usr/bin/env bash
# Drives the MCP transport of a live server with the official MCP Python SDK (PyPI `mcp`,
# pinned in scripts/ci-requirements.txt, in the CI venv): initialize, tools/list and
# tools/call through the SDK's Streamable HTTP client (scripts/mcp-client/check.py), with a
# personal access token for the `mcp` surface (server and token: scripts/mcp-server.sh); then
# the whole OAuth 2.1 flow driven by the SDK's own OAuth client (scripts/mcp-client/oauth_check.py):
# discovery, registration, authorize with PKCE, consent, token, calls, refresh, and refresh
# reuse revoking the grant.
set -euo pipefail

# shellcheck source=scripts/mcp-server.sh
source "$(dirname "${BASH_SOURCE[0]}")/mcp-server.sh"
# shellcheck source=scripts/ci-venv.sh
source "$root/scripts/ci-venv.sh"
ci_venv_ready

mcp_server_start mcp-py
status=0
TOCSIN_URL="$base" TOCSIN_TOKEN="$token" "$CI_VENV/bin/python" "$root/scripts/mcp-client/check.py" || status=$?
if [ "$status" -eq 0 ]; then
    TOCSIN_URL="$base" TOCSIN_EMAIL="$email" TOCSIN_PASSWORD="$password" \
        "$CI_VENV/bin/python" "$root/scripts/mcp-client/oauth_check.py" || status=$?
fi
mcp_server_finish "$status"
