// A client of Warden's MCP front written with the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned by warden_tests::real_servers) that
// finds its tools with tool search; the twin of tests/python/search_client.py,
// printing the same JSON line for bins/tests/front_tool_search.rs.
//
//   node search_client.mjs <url> <bearer token>

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ToolListChangedNotificationSchema } from "@modelcontextprotocol/sdk/types.js";

const [url, token] = process.argv.slice(2);
const transport = new StreamableHTTPClientTransport(new URL(url), {
  requestInit: { headers: { Authorization: `Bearer ${token}` } },
});
const client = new Client({ name: "warden-search-test", version: "1.0.0" });
let changes = 0;
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  changes += 1;
});
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const names = async () => (await client.listTools()).tools.map((tool) => tool.name).sort();
const text = (result) => result.content?.[0]?.text ?? "";

await client.connect(transport);
const out = {};
out.listed = await names();
const found = await client.callTool({ name: "find_tools", arguments: { query: "the sum of two numbers", limit: 3 } });
out.found = (found.structuredContent?.tools ?? []).map((tool) => tool.name);
out.reason = found.structuredContent?.tools?.[0]?.reason ?? null;
for (let i = 0; i < 200 && changes === 0; i += 1) {
  await sleep(50);
}
out.list_changed = changes > 0;
out.relisted = await names();
out.sum = text(await client.callTool({ name: "test__add", arguments: { a: 2, b: 3 } }));
const via = await client.callTool({
  name: "call_tool",
  arguments: { name: "test__echo", arguments: { message: "via call_tool" } },
});
out.via_call_tool = text(via);
await client.close();
console.log(JSON.stringify(out));
