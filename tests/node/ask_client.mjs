// A client of Warden's MCP front on the official TypeScript SDK (pinned by
// warden_tests::real_servers) that answers the questions servers ask: it
// declares elicitation (form and URL), calls `py__book_table` and
// `py__sign_in` (tests/python/asking_server.py behind the front), answers
// the form with size "small" and 4 nights and the URL with accept, and
// prints what it saw as one JSON line.
//
//   node ask_client.mjs stdio <command> <args as JSON>
//   node ask_client.mjs http <url> <bearer token>

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";

const [mode, target, extra] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: JSON.parse(extra), stderr: "inherit", env: process.env })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${extra}` } },
      });

const client = new Client(
  { name: "warden-ask-test", version: "1.0.0" },
  { capabilities: { elicitation: { form: {}, url: {} } } },
);
const asked = [];
client.setRequestHandler(ElicitRequestSchema, async (request) => {
  const params = request.params;
  if (params.mode === "url") {
    asked.push({ mode: "url", message: params.message, url: params.url });
    return { action: "accept" };
  }
  asked.push({ mode: "form", message: params.message, fields: Object.keys(params.requestedSchema.properties) });
  return { action: "accept", content: { size: "small", nights: 4 } };
});

await client.connect(transport);
const booked = await client.callTool({ name: "py__book_table", arguments: {} });
const signed = await client.callTool({ name: "py__sign_in", arguments: {} });
console.log(JSON.stringify({ booked: booked.content[0].text, signed: signed.content[0].text, asked }));
await client.close();
