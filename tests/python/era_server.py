"""An MCP server on the official Python SDK (mcp 2.3.0) that speaks one
MCP era, or both, for Warden's protocol-era tests.

    era_server.py modern|legacy|dual [http PORT]

serves stdio (or Streamable HTTP on 127.0.0.1:PORT at /mcp):

* `modern`: MCP 2026-07-28 only (no `initialize`: the SDK refuses it with
  -32022 naming 2026-07-28), as a new stateless server would be;
* `legacy`: the `initialize` revisions only (the SDK refuses a
  `server/discover` probe and any enveloped request), as a server built
  before 2026-07-28 is;
* `dual`: both, the era chosen by how the client opens (the SDK's default).

The SDK's own serving loops for one era are private (`_serve_modern_stream`,
`_serve_legacy_stream`); the SDK is pinned, so they are used as they are.
Over HTTP the SDK routes each request by its `MCP-Protocol-Version`
header; one era is kept by refusing the other's requests in front of it,
as a server of that era alone answers them: a modern-only server refuses
anything without a 2026-07-28 header with 400 and -32022 naming the
version it speaks (and GET/DELETE with 405); a legacy-only one refuses the
2026-07-28 header with 400 and the -32000 "Bad Request: Unsupported
protocol version" of the 2025 SDKs.

Tools:

* `echo(message)` returns the message (read-only).
* `whoami()` asks the person their name (a form with one `name` field):
  in 2026-07-28 through an `input_required` answer and a retry, in the
  legacy era through an `elicitation/create` request mid-call. Returns
  `hello <name>`, or `no name` when they declined.
* `grow(name = "late")` adds the tool `name` (answering `late`) and
  announces the list changed (on a modern connection, to a
  `subscriptions/listen` that asked for it).
* `era()` says what the request was served in: `modern` or `legacy`.
* `shout(words)` logs `words` at `warning` (in 2026-07-28, only for a
  request that asked for log messages in its `_meta`) and returns
  `shouted`.
* `touch()` says the resource `note://current` ("a note") was updated —
  to `subscriptions/listen` streams that asked for it (modern), or as the
  notification of old (legacy) — and returns `touched`.
* `locate(region)` returns the region; `region` is marked `x-mcp-header:
  Region`, so a 2026-07-28 client over HTTP must mirror it in
  `Mcp-Param-Region` (the SDK checks it against the body).
* `measure(amount)` marks a `number` parameter with `x-mcp-header`, which
  the revision forbids: a 2026-07-28 client over HTTP must leave the tool
  out.

* `served(method)` says how many `method` requests the server has seen.
* `add_note(name)` adds the resource `note://NAME` and says the resource list
  changed.

With `ERA_CACHE_HINTS=1` in its environment, its cacheable answers carry
freshness hints (2026-07-28 `ttlMs`/`cacheScope`): `resources/list` and
`resources/read` public for a minute, `prompts/list` private for a
minute, `resources/templates/list` public for a second, `tools/list` for
1.5 s. Without it they carry the SDK's default (`ttlMs: 0`).

Every request the server sees is logged to stderr as `request <method>`.
"""

import json
import os
import sys
from collections import Counter
from typing import Annotated

import anyio
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.resources import FunctionResource
from mcp.server.mcpserver.resolve import Elicit, Resolve
from mcp.server.caching import CacheHint
from mcp.server.runner import _serve_legacy_stream, _serve_modern_stream
from mcp.server.stdio import stdio_server
from mcp.types import ToolAnnotations
from pydantic import BaseModel, Field


SERVED: Counter = Counter()


class LogRequests:
    """Logs and counts each request's method, so tests can see what reached the server."""

    async def __call__(self, ctx, call_next):
        print(f"request {ctx.method}", file=sys.stderr, flush=True)
        SERVED[ctx.method] += 1
        return await call_next(ctx)


def cache_hints() -> dict[str, CacheHint] | None:
    if os.environ.get("ERA_CACHE_HINTS") != "1":
        return None
    return {
        "resources/list": CacheHint(ttl_ms=60_000, scope="public"),
        "resources/read": CacheHint(ttl_ms=60_000, scope="public"),
        "prompts/list": CacheHint(ttl_ms=60_000, scope="private"),
        "resources/templates/list": CacheHint(ttl_ms=1_000, scope="public"),
        "tools/list": CacheHint(ttl_ms=1_500, scope="public"),
    }


server = MCPServer(
    "warden-era-test-server", version="2.0.0", middleware=[LogRequests()], cache_hints=cache_hints()
)


class Name(BaseModel):
    name: str = Field(title="Name", description="What to call you")


def ask_name() -> Elicit[Name]:
    return Elicit("What is your name?", Name)


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def echo(message: str) -> str:
    """Returns the message."""
    return message


@server.tool()
def whoami(who: Annotated[Name, Resolve(ask_name)]) -> str:
    """Asks the person their name and greets them."""
    return f"hello {who.name}"


@server.tool()
async def grow(ctx: Context, name: str = "late") -> str:
    """Adds the tool `name` (default `late`) and says the list changed."""

    def late() -> str:
        """A tool that appeared later."""
        return "late"

    server.add_tool(late, name=name)
    # To `subscriptions/listen` streams (modern), and on a legacy
    # connection as the notification of old (a modern one sends nothing).
    await ctx.notify_tools_changed()
    await ctx.session.send_tool_list_changed()
    return "grown"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def era(ctx: Context) -> str:
    """Says which era the request was served in."""
    version = ctx.request_context.protocol_version or ""
    return "modern" if version >= "2026-07-28" else "legacy"


@server.resource("note://current")
def note() -> str:
    """A note that `touch` says was updated."""
    return "a note"


@server.tool()
async def touch(ctx: Context) -> str:
    """Says `note://current` was updated."""
    await ctx.notify_resource_updated("note://current")
    await ctx.session.send_resource_updated("note://current")
    return "touched"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
async def shout(ctx: Context, words: str = "hey") -> str:
    """Logs the words at warning."""
    await ctx.warning(words, logger_name="shouter")
    return "shouted"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def served(method: str) -> str:
    """Says how many `method` requests the server has seen."""
    return str(SERVED[method])


@server.prompt()
def greeting() -> str:
    """A greeting."""
    return "hello"


@server.tool()
async def add_note(ctx: Context, name: str) -> str:
    """Adds the resource `note://NAME` and says the resource list changed."""

    def text() -> str:
        return f"note {name}"

    server.add_resource(FunctionResource.from_function(text, uri=f"note://{name}", name=name))
    await ctx.notify_resources_changed()
    await ctx.session.send_resource_list_changed()
    return "noted"


@server.tool(annotations=ToolAnnotations(readOnlyHint=True))
def locate(region: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Region"})]) -> str:
    """Returns the region it was given."""
    return f"region {region}"


@server.tool()
def measure(amount: Annotated[str, Field(json_schema_extra={"x-mcp-header": "Amount"})]) -> str:
    """Declares a header on a number, which MCP 2026-07-28 does not allow."""
    return f"amount {amount}"


# The SDK refuses such a declaration when a tool is registered; made
# afterwards, it is what a server on another SDK could well list.
server._tool_manager._tools["measure"].parameters["properties"]["amount"]["type"] = "number"


async def serve(mode: str) -> None:
    low = server._lowlevel_server
    async with stdio_server() as (read, write):
        if mode == "dual":
            await low.run(read, write, low.create_initialization_options())
            return
        async with low.lifespan(low) as state:
            if mode == "modern":
                await _serve_modern_stream(low, read, write, lifespan_state=state, raise_exceptions=False)
            else:
                options = low.create_initialization_options()
                await _serve_legacy_stream(
                    low, read, write, lifespan_state=state, session_id=None, init_options=options, raise_exceptions=False
                )


def one_era(app, mode: str):
    """The ASGI app, refusing the other era's requests (see the top)."""
    if mode == "dual":
        return app

    async def refuse(send, status: int, body: dict | None) -> None:
        payload = json.dumps(body).encode() if body is not None else b""
        headers = [(b"content-type", b"application/json")] if body is not None else []
        await send({"type": "http.response.start", "status": status, "headers": headers})
        await send({"type": "http.response.body", "body": payload})

    async def guarded(scope, receive, send):
        if scope["type"] != "http":
            return await app(scope, receive, send)
        headers = dict(scope["headers"])
        version = headers.get(b"mcp-protocol-version", b"").decode()
        modern = version == "2026-07-28"
        if mode == "modern" and scope["method"] in ("GET", "DELETE"):
            return await refuse(send, 405, None)
        if mode == "modern" and not modern:
            error = {"code": -32022, "message": "Unsupported protocol version",
                     "data": {"supported": ["2026-07-28"], "requested": version or None}}
            return await refuse(send, 400, {"jsonrpc": "2.0", "id": None, "error": error})
        if mode == "legacy" and modern:
            error = {"code": -32000, "message": f"Bad Request: Unsupported protocol version: {version}"}
            return await refuse(send, 400, {"jsonrpc": "2.0", "id": "server-error", "error": error})
        return await app(scope, receive, send)

    return guarded


def serve_http(mode: str, port: int) -> None:
    import uvicorn

    app = one_era(server.streamable_http_app(streamable_http_path="/mcp"), mode)
    uvicorn.run(app, host="127.0.0.1", port=port, log_level="info")


if __name__ == "__main__":
    mode = sys.argv[1] if len(sys.argv) > 1 else "dual"
    if mode not in ("modern", "legacy", "dual"):
        sys.exit(f"usage: era_server.py modern|legacy|dual [http PORT] (not {mode!r})")
    if len(sys.argv) > 3 and sys.argv[2] == "http":
        serve_http(mode, int(sys.argv[3]))
    else:
        anyio.run(serve, mode)
