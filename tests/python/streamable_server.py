"""A small MCP server written with the official Python SDK, for Warden's tests.

Warden's HTTP transport is tested against servers its authors did not write;
this one is built on the `mcp` package from PyPI (pinned, with its
dependencies, in `requirements.txt` next to this file and installed into a
venv under `target/` by `warden_tests::real_servers::python_server_command`).

It serves Streamable HTTP on `127.0.0.1:<port>` at `/mcp`; the port is the
first argument. Once it listens, uvicorn prints
`Uvicorn running on http://127.0.0.1:<port>` on stderr.

Tools:

* `echo(message)` returns `message` unchanged;
* `add(a, b)` returns the integer sum as text;
* `add_tool()` registers a tool `late` (returning `late tool called`) and
  sends `notifications/tools/list_changed` to the calling client. The
  notification is not tied to the request, so the SDK delivers it on the
  session's standalone GET stream: a client sees it only if it opened one.
  (The pinned SDK offers no way to set `tools.listChanged` in its
  capabilities through `MCPServer`, so it declares `false` and sends the
  notification anyway; Warden acts on it either way.)
"""

import sys

from mcp.server.mcpserver import Context, MCPServer

server = MCPServer("warden-python-test-server", version="1.0.0")


@server.tool()
def echo(message: str) -> str:
    """Returns the message unchanged."""
    return message


@server.tool()
def add(a: int, b: int) -> str:
    """Returns the sum of a and b."""
    return str(a + b)


def late() -> str:
    """A tool registered at runtime by add_tool."""
    return "late tool called"


@server.tool()
async def add_tool(ctx: Context) -> str:
    """Registers the tool `late` and tells the client its tool list changed."""
    server.add_tool(late, name="late")
    await ctx.session.send_tool_list_changed()
    return "added late"


if __name__ == "__main__":
    port = int(sys.argv[1])
    server.run(transport="streamable-http", host="127.0.0.1", port=port, streamable_http_path="/mcp")
