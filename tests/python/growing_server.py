"""An MCP server on the official Python SDK (mcp 2.3.0) that adds tools at
run time the way servers written with it commonly do — `add_tool`, then
the 2025 notification on its session — so Warden does not hear of them in
every era. For `tests/tests/unannounced_tools.rs`.

    growing_server.py quiet|listening

* `quiet`: `MCPServer(subscriptions=False)`: it declares
  `tools.listChanged: false` in every era (and in 2025-11-25 sends
  `notifications/tools/list_changed` anyway);
* `listening`: the SDK's default: at 2026-07-28 it serves
  `subscriptions/listen` and declares `listChanged: true`, but `grow`,
  written the 2025 way, never publishes to it (the SDK drops the session
  notification on a 2026-07-28 connection).

Either way its tool lists say `ttlMs: 0` (the SDK's default). A client
speaking to it directly sees a grown tool as soon as it lists again.

Tools:

* `grow(name = "grown")` adds the tool `name` (answering `grown here`).
* `listings()` says how many `tools/list` requests it has answered.
"""

import sys
from collections import Counter

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import ToolAnnotations

SERVED: Counter = Counter()


class CountRequests:
    """Counts each request's method, so tests can see what reached the server."""

    async def __call__(self, ctx, call_next):
        SERVED[ctx.method] += 1
        return await call_next(ctx)


quiet = len(sys.argv) > 1 and sys.argv[1] == "quiet"
server = MCPServer("growing", middleware=[CountRequests()], subscriptions=False if quiet else None)


@server.tool()
async def grow(ctx: Context, name: str = "grown") -> str:
    """Adds the tool `name`."""

    def grown() -> str:
        """A tool added at run time."""
        return "grown here"

    server.add_tool(grown, name=name)
    await ctx.session.send_tool_list_changed()
    return "grew"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def listings() -> str:
    """Says how many tools/list requests the server answered."""
    return str(SERVED["tools/list"])


if __name__ == "__main__":
    server.run()
