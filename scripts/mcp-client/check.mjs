// Connects to a live Tocsin with the official MCP TypeScript SDK over Streamable HTTP and a
// personal access token: initialize, tools/list, tools/call (create_monitor, get_monitor, a
// refused and a failing call), then ends the session. Exits non-zero on any mismatch.
// Usage: TOCSIN_URL=http://127.0.0.1:8080 TOCSIN_TOKEN=svc_... node check.mjs
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const base = process.env.TOCSIN_URL;
const token = process.env.TOCSIN_TOKEN;
if (!base || !token) {
  console.error("set TOCSIN_URL and TOCSIN_TOKEN");
  process.exit(2);
}

function check(cond, what, detail) {
  if (!cond) {
    console.error(`FAIL: ${what}`, detail === undefined ? "" : JSON.stringify(detail));
    process.exit(1);
  }
  console.log(`ok: ${what}`);
}

const transport = new StreamableHTTPClientTransport(new URL("/mcp", base), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "tocsin-ts-check", version: "1.0.0" });
await client.connect(transport);
check(client.getServerVersion()?.name === "tocsin", "initialize: server is tocsin", client.getServerVersion());
check(typeof transport.sessionId === "string" && transport.sessionId.length > 0, "initialize: a session id");
check(client.getServerCapabilities()?.tools !== undefined, "initialize: tools capability");

const { tools } = await client.listTools();
const byName = Object.fromEntries(tools.map((t) => [t.name, t]));
check(tools.length >= 30, `tools/list: ${tools.length} tools`);
check(byName.get_monitor?.annotations?.readOnlyHint === true, "get_monitor is read-only", byName.get_monitor);
check(byName.delete_monitor?.annotations?.destructiveHint === true, "delete_monitor is destructive");
check(byName.create_monitor?.inputSchema?.properties?.name !== undefined, "create_monitor schema has name");

const created = await client.callTool({
  name: "create_monitor",
  arguments: { name: "ts-sdk", type: "HTTP", url: "http://127.0.0.1:9/health", interval: 60 },
});
check(created.isError === false, "tools/call create_monitor", created);
const monitor = created.structuredContent;
check(typeof monitor?.id === "string" && monitor.name === "ts-sdk", "create_monitor answers the monitor", monitor);
check(JSON.parse(created.content[0].text).id === monitor.id, "text content is the same JSON");

const got = await client.callTool({ name: "get_monitor", arguments: { monitorId: monitor.id } });
check(got.isError === false && got.structuredContent.id === monitor.id, "tools/call get_monitor", got);

const missing = await client.callTool({ name: "get_monitor", arguments: { monitorId: "mon_missing" } });
check(missing.isError === true && missing.structuredContent?.code === "MONITOR_NOT_FOUND", "a failing call is a tool error with the code", missing);

const removed = await client.callTool({ name: "delete_monitor", arguments: { monitorId: monitor.id } });
check(removed.isError === false, "tools/call delete_monitor", removed);

await transport.terminateSession();
check(transport.sessionId === undefined, "DELETE ends the session");
await client.close();
console.log("typescript sdk: all checks passed");
