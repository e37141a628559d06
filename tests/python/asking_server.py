"""An MCP server on the official Python SDK whose tools ask their client
things: a form (elicitation with defaults and an enum), a URL, the roots,
a model completion (sampling). For Warden's client-feature tests.

Its tools ask the pre-2026 way, with requests of their own in the middle
of a call (`ctx.elicit`, ...), which MCP 2026-07-28 does not allow (the SDK
refuses: "no back-channel for server-initiated requests"): Warden's tests
speak 2025-11-25 to it (`protocol_version`). `era_server.py` asks both ways.

It serves stdio by default, or Streamable HTTP on `127.0.0.1:<port>` at
`/mcp` when started as `asking_server.py http <port>`.

Tools:

* `book_table()` asks for a booking (name, default "Ada"; size, one of
  small/large, required; nights, 1-14, default 2) and returns what it got:
  `booked <name> <size> <nights>`, `declined` or `cancelled`; an error the
  client sent is returned as `error: <message>`.
* `sign_in()` asks the person to open https://login.example.com/auth?x=1
  and returns `url accept|decline|cancel`.
* `ask_twice()` asks two questions at once and returns both outcomes,
  comma-separated (a client that allows one question at a time per call
  refuses the second).
* `give_up()` asks for a booking, gives up on the question after a
  second (the SDK then tells the client `notifications/cancelled`), waits
  two more seconds and returns `gave up` (or what the person said, had
  they answered in time).
* `roots()` returns the client's roots, one URI a line (`error: ...` if
  the client refused).
* `roots_changes()` returns how many `notifications/roots/list_changed`
  the server has heard.
* `sample(prompt)` asks the client's model and returns `<model>: <text>`.
"""

import asyncio
import sys

import anyio
from typing import Literal

from mcp.server.mcpserver import Context, MCPServer
from mcp.types import NotificationParams
from pydantic import BaseModel, Field

server = MCPServer("warden-asking-test-server", version="1.0.0")
heard = {"roots_changes": 0}


class Booking(BaseModel):
    name: str = Field(default="Ada", title="Name", description="Who the table is for")
    size: Literal["small", "large"] = Field(title="Size")
    nights: int = Field(default=2, ge=1, le=14, title="Nights")


def outcome(result) -> str:
    if result.action == "accept":
        data = result.data
        return f"booked {data.name} {data.size} {data.nights}"
    return {"decline": "declined", "cancel": "cancelled"}[result.action]


@server.tool()
async def book_table(ctx: Context) -> str:
    """Asks for a booking and returns what the person said."""
    try:
        return outcome(await ctx.elicit("Book a table for how many nights?", Booking))
    except Exception as error:  # the client's JSON-RPC error, or a bad answer
        return f"error: {error}"


@server.tool()
async def sign_in(ctx: Context) -> str:
    """Asks the person to open a sign-in page."""
    try:
        result = await ctx.elicit_url("Sign in to continue", "https://login.example.com/auth?x=1", "sign-in-1")
        return f"url {result.action}"
    except Exception as error:
        return f"error: {error}"


@server.tool()
async def give_up(ctx: Context) -> str:
    """Asks for a booking, and gives up on the question after a second."""
    with anyio.move_on_after(1):
        return outcome(await ctx.elicit("Quick: how many nights?", Booking))
    await anyio.sleep(2)
    return "gave up"


@server.tool()
async def ask_twice(ctx: Context) -> str:
    """Asks two questions at once."""

    async def one() -> str:
        try:
            return outcome(await ctx.elicit("One of two", Booking))
        except Exception as error:
            return f"error: {error}"

    return ", ".join(await asyncio.gather(one(), one()))


@server.tool()
async def roots(ctx: Context) -> str:
    """Lists the client's roots."""
    try:
        result = await ctx.session.list_roots()
        return "\n".join(str(root.uri) for root in result.roots) or "(none)"
    except Exception as error:
        return f"error: {error}"


@server.tool()
def roots_changes() -> str:
    """How many roots list changes were heard."""
    return str(heard["roots_changes"])


@server.tool()
async def sample(prompt: str, ctx: Context) -> str:
    """Asks the client's model."""
    from mcp.types import SamplingMessage, TextContent

    try:
        result = await ctx.session.create_message(
            messages=[SamplingMessage(role="user", content=TextContent(type="text", text=prompt))],
            max_tokens=100,
        )
        return f"{result.model}: {result.content.text}"
    except Exception as error:
        return f"error: {error}"


async def on_roots_list_changed(ctx, params) -> None:
    heard["roots_changes"] += 1


server._lowlevel_server.add_notification_handler(
    "notifications/roots/list_changed", NotificationParams, on_roots_list_changed
)


if __name__ == "__main__":
    if len(sys.argv) > 2 and sys.argv[1] == "http":
        server.run(transport="streamable-http", host="127.0.0.1", port=int(sys.argv[2]), streamable_http_path="/mcp")
    else:
        server.run()
