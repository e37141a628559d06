"""A client of Warden's MCP front on the official Python SDK (mcp 2.3.0),
speaking one MCP era, for Warden's protocol-era tests.

    era_client.py MODE stdio <command> <args as JSON>
    era_client.py MODE http <url> <bearer token>

MODE is `auto` (the SDK probes with `server/discover` and, Warden's front
speaking 2026-07-28, stays there: no handshake, every request carries the
envelope) or `legacy` (`initialize`, 2025-11-25). The front serves `modern` and
`legacy` (tests/python/era_server.py, each of one era) and `test`
(Warden's own test server). The client:

1. says which version it speaks and what the front says it is;
2. lists the tools, and calls `modern__echo`, `legacy__echo`,
   `modern__era`, `legacy__era` (which era each server was spoken to in);
3. calls `modern__whoami` and `legacy__whoami`, whose servers ask the
   person's name (each in its own era), answering "Ada" — a 2026-07-28
   client is asked through `input_required` answers and retries, a
   legacy one through requests on its session;
4. has both servers log a warning: a legacy client sets a level and gets
   both; a 2026-07-28 client asks with every request and gets the
   2026-07-28 server's (on the call's stream); (legacy) subscribes to the 2026-07-28 server's `note://current`
   and has it updated;
5. listens for tool list changes (2026-07-28 through
   `subscriptions/listen`, legacy through the session's notifications),
   calls `modern__grow` with a name of its own and waits for the list to
   change, then lists again;
6. prints what it saw as one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import Client, types
from mcp.client.stdio import StdioServerParameters


def text(result) -> str:
    return result.content[0].text if result.content else ""


async def scenario(client: Client, mode: str, changes: list, logs: list, updates: list, late: str) -> dict:
    out = {"version": client.protocol_version}
    info = client.server_info
    out["server"] = info.name if info else None
    tools = await client.list_tools()
    out["tools"] = sorted(tool.name for tool in tools.tools)
    out["echo"] = [text(await client.call_tool(f"{name}__echo", {"message": name})) for name in ("modern", "legacy")]
    out["eras"] = [text(await client.call_tool(f"{name}__era", {})) for name in ("modern", "legacy")]
    out["whoami"] = [text(await client.call_tool(f"{name}__whoami", {})) for name in ("modern", "legacy")]
    if mode == "legacy":
        # The front asks each server for log messages at this level: the
        # legacy one by `logging/setLevel`, the 2026-07-28 one by the
        # `logLevel` every request then carries.
        await client.set_logging_level("info")
        for name in ("modern", "legacy"):
            await client.call_tool(f"{name}__shout", {"words": f"{name} shouts"})
        for _ in range(200):
            if len(logs) >= 2:
                break
            await asyncio.sleep(0.05)
        out["logs"] = sorted(str(log.data) for log in logs)
        # A resource subscription of old, to a 2026-07-28 server: the front
        # asks it through `subscriptions/listen`.
        await client.subscribe_resource("warden://modern/note://current")
        await client.call_tool("modern__touch", {})
        for _ in range(200):
            if updates:
                break
            await asyncio.sleep(0.05)
        out["updated"] = updates
    if mode == "legacy":
        await client.call_tool("modern__grow", {"name": late})
        for _ in range(200):
            if changes:
                break
            await asyncio.sleep(0.05)
        out["changed"] = bool(changes)
    else:
        # Every request asks for its own log messages at `info` (the
        # client's `log_level`): the 2026-07-28 server's reach the client
        # on the call's own stream; the legacy server logs per connection,
        # not per request, so nothing of it comes.
        for name in ("modern", "legacy"):
            await client.call_tool(f"{name}__shout", {"words": f"{name} shouts"})
        for _ in range(40):
            if logs:
                break
            await asyncio.sleep(0.05)
        out["logs"] = sorted(str(log.data) for log in logs)
        async with client.listen(tools_list_changed=True) as subscription:
            out["honored"] = bool(subscription.honored.tools_list_changed)
            await client.call_tool("modern__grow", {"name": late})
            event = await asyncio.wait_for(subscription.__anext__(), 10)
            out["changed"] = type(event).__name__
    tools = await client.list_tools()
    out["late"] = f"modern__{late}" in {tool.name for tool in tools.tools}
    return out


async def main() -> None:
    mode, transport, target, extra = sys.argv[1:5]
    changes = []
    logs = []
    updates = []

    async def on_log(params) -> None:
        logs.append(params)

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            changes.append(method)
        if method == "notifications/resources/updated":
            updates.append(str(getattr(message, "root", message).params.uri))

    if transport == "stdio":
        # The whole environment: the front finds its daemon by WARDEN_HOME.
        server = StdioServerParameters(command=target, args=json.loads(extra), env=dict(os.environ))
    else:
        import httpx2

        from mcp.client.streamable_http import streamable_http_client

        http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {extra}"}, timeout=30)
        server = streamable_http_client(target, http_client=http)
    async def on_elicit(context, params):
        return types.ElicitResult(action="accept", content={"name": "Ada"})

    async with Client(
        server,
        mode=mode,
        message_handler=on_message,
        elicitation_callback=on_elicit,
        logging_callback=on_log,
        log_level="info" if mode == "auto" else None,
        cache=None,
    ) as client:
        out = await scenario(client, mode, changes, logs, updates, f"late_{mode}_{transport}")
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
