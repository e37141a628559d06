// A client of Warden's MCP front written with the official TypeScript SDK
// (@modelcontextprotocol/sdk, pinned by warden_tests::real_servers). It
// runs one scenario and prints what it saw as one JSON line, which the Rust
// test asserts on.
//
//   node front_client.mjs stdio <command> <args as JSON>
//   node front_client.mjs http <url> <bearer token>
//
// The front must serve `everything` (server-everything) and `test` (Warden's
// test server with echo, sleep, notify and cancellations).

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import {
  LoggingMessageNotificationSchema,
  ToolListChangedNotificationSchema,
} from "@modelcontextprotocol/sdk/types.js";

const [mode, target, extra] = process.argv.slice(2);
const transport =
  mode === "stdio"
    ? new StdioClientTransport({ command: target, args: JSON.parse(extra), stderr: "inherit", env: process.env })
    : new StreamableHTTPClientTransport(new URL(target), {
        requestInit: { headers: { Authorization: `Bearer ${extra}` } },
      });

const client = new Client({ name: "warden-front-test", version: "1.0.0" });
let toolChanges = 0;
const logs = [];
client.setNotificationHandler(ToolListChangedNotificationSchema, () => {
  toolChanges += 1;
});
client.setNotificationHandler(LoggingMessageNotificationSchema, (notification) => {
  logs.push(notification.params);
});

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));
const out = {};
await client.connect(transport);

// Progress counted as it reaches the client, on the wire. The SDK hands a
// notification to its handler a microtask later but settles a response at
// once, so when the last progress and the answer arrive in one read (a busy
// machine), the SDK drops that progress itself ("unknown token"): counted
// by `onprogress`, the test would measure the SDK's race, not Warden.
let progressOnWire = 0;
const deliver = transport.onmessage;
transport.onmessage = (message, extra) => {
  if (message.method === "notifications/progress") progressOnWire += 1;
  deliver(message, extra);
};
out.server = client.getServerVersion()?.name;
out.protocol = transport.protocolVersion ?? null;
out.tools = (await client.listTools()).tools.map((tool) => tool.name).sort();

const echo = await client.callTool({ name: "everything__echo", arguments: { message: "hi" } });
out.echo = echo.content[0].text;

const resources = (await client.listResources()).resources;
out.resource_uri = resources[0]?.uri;
const read = await client.readResource({ uri: resources[0].uri });
out.read_uri = read.contents[0].uri;
out.read_text = typeof read.contents[0].text === "string";

const prompts = (await client.listPrompts()).prompts.map((prompt) => prompt.name);
out.prompts = prompts;
out.prompt_messages = (await client.getPrompt({ name: "everything__simple-prompt" })).messages.length;
const completion = await client.complete({
  ref: { type: "ref/prompt", name: "everything__completable-prompt" },
  argument: { name: "department", value: "En" },
});
out.completion = completion.completion.values;

// `onprogress` makes the SDK send a progressToken.
const progressBefore = progressOnWire;
await client.callTool(
  { name: "everything__trigger-long-running-operation", arguments: { duration: 1, steps: 3 } },
  undefined,
  { onprogress: () => {} },
);
out.progress = progressOnWire - progressBefore;

const abort = new AbortController();
const slow = client.callTool({ name: "test__sleep", arguments: { ms: 20000 } }, undefined, { signal: abort.signal });
setTimeout(() => abort.abort("the test cancels"), 500);
const started = Date.now();
try {
  await slow;
  out.cancel = "finished";
} catch {
  out.cancel = "aborted";
}
out.cancel_ms = Date.now() - started;
await sleep(500);
out.cancellations = (await client.callTool({ name: "test__cancellations", arguments: {} })).content[0].text;

await client.setLoggingLevel("info");
const before = toolChanges;
out.notify = (await client.callTool({ name: "test__notify", arguments: {} })).content[0].text;
for (let waited = 0; waited < 5000 && (toolChanges === before || logs.length === 0); waited += 50) {
  await sleep(50);
}
out.tool_changes = toolChanges - before;
out.late_tool_listed = (await client.listTools()).tools.some((tool) => tool.name === "test__late_tool");
out.loggers = [...new Set(logs.map((log) => log.logger))];

await client.close();
console.log(JSON.stringify(out));
