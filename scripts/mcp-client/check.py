"""Drives a live Tocsin's /mcp with the official MCP Python SDK (pinned in
scripts/ci-requirements.txt) and a personal access token: initialize, tools/list, tools/call
(create_monitor, get_monitor, a failing call), then ends the session. Exits non-zero on any
mismatch. Usage: TOCSIN_URL=http://127.0.0.1:8080 TOCSIN_TOKEN=svc_... python check.py
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.streamable_http import create_mcp_http_client, streamable_http_client


def check(cond, what, detail=None):
    if not cond:
        print(f"FAIL: {what}", "" if detail is None else detail, file=sys.stderr)
        sys.exit(1)
    print(f"ok: {what}")


async def main():
    url = os.environ["TOCSIN_URL"].rstrip("/") + "/mcp"
    http = create_mcp_http_client(headers={"Authorization": f"Bearer {os.environ['TOCSIN_TOKEN']}"})
    async with http, streamable_http_client(url, http_client=http) as streams:
        async with ClientSession(streams[0], streams[1]) as session:
            init = await session.initialize()
            check(init.server_info.name == "tocsin", "initialize: server is tocsin", init)
            check(init.capabilities.tools is not None, "initialize: tools capability")

            listed = await session.list_tools()
            tools = {t.name: t for t in listed.tools}
            check(len(tools) >= 30, f"tools/list: {len(tools)} tools")
            check(tools["get_monitor"].annotations.read_only_hint is True, "get_monitor is read-only")
            check(tools["delete_monitor"].annotations.destructive_hint is True, "delete_monitor is destructive")

            created = await session.call_tool(
                "create_monitor",
                {"name": "py-sdk", "type": "HTTP", "url": "http://127.0.0.1:9/health", "interval": 60},
            )
            check(created.is_error is False, "tools/call create_monitor", created)
            monitor = created.structured_content
            check(monitor["name"] == "py-sdk", "create_monitor answers the monitor", monitor)
            check(json.loads(created.content[0].text)["id"] == monitor["id"], "text content is the same JSON")

            got = await session.call_tool("get_monitor", {"monitorId": monitor["id"]})
            check(got.is_error is False and got.structured_content["id"] == monitor["id"], "tools/call get_monitor", got)

            missing = await session.call_tool("get_monitor", {"monitorId": "mon_missing"})
            check(
                missing.is_error is True and missing.structured_content["code"] == "MONITOR_NOT_FOUND",
                "a failing call is a tool error with the code",
                missing,
            )
    print("python sdk: all checks passed")


asyncio.run(main())
