// A client of the serve-mcp example (examples/serve_mcp.rs) written with the
// official TypeScript SDK: it signs in with the host's token, lists the
// tools, makes a call the host's approver approves and one it refuses, and
// tries a wrong token. Prints what it saw as one JSON line.
//
//   node serve_mcp_client.mjs <url> <token>

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, token] = process.argv.slice(2);
const connect = async (bearer) => {
  const transport = new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: { Authorization: `Bearer ${bearer}` } },
  });
  const client = new Client({ name: "serve-mcp-test", version: "1.0.0" });
  await client.connect(transport);
  return client;
};

const out = {};
const client = await connect(token);
out.server = client.getServerVersion()?.name;
out.tools = (await client.listTools()).tools.map((tool) => tool.name).sort();
const echo = await client.callTool({ name: "test__echo", arguments: { message: "through the host" } });
out.echo = echo.content[0].text;
const add = await client.callTool({ name: "test__add", arguments: { a: 2, b: 3 } });
out.add = { error: add.isError === true, text: add.content[0].text };
const refused = await client.callTool({ name: "test__crash", arguments: {} });
out.refused = { error: refused.isError === true, text: refused.content[0].text };
await client.close();

try {
  await connect("not-the-token-0123456789");
  out.wrong_token = "accepted";
} catch (error) {
  out.wrong_token = String(error.message ?? error);
}
console.log(JSON.stringify(out));
