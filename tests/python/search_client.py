"""A client of Warden's MCP front on the official Python SDK (mcp 2.3.0)
that finds its tools with tool search, for `bins/tests/front_tool_search.rs`.

    search_client.py <url> <bearer token>

Speaking 2025-11-25, it:

1. lists the tools (a deferring profile: a few, and `find_tools`);
2. calls `find_tools` for "the sum of two numbers", and waits for
   `notifications/tools/list_changed`;
3. lists again, calls the found `test__add` with 2 and 3, and calls
   `test__echo` through `call_tool`;
4. prints what it saw as one JSON line.
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


def text(result) -> str:
    return result.content[0].text if result.content else ""


async def main() -> None:
    url, token = sys.argv[1:3]
    changes: list = []

    async def on_message(message) -> None:
        method = getattr(getattr(message, "root", message), "method", None)
        if method == "notifications/tools/list_changed":
            changes.append(method)

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    out = {}
    async with Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=on_message) as client:
        out["listed"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        found = await client.call_tool("find_tools", {"query": "the sum of two numbers", "limit": 3})
        out["found"] = [tool["name"] for tool in (found.structured_content or {}).get("tools", [])]
        out["reason"] = ((found.structured_content or {}).get("tools") or [{}])[0].get("reason")
        for _ in range(200):
            if changes:
                break
            await asyncio.sleep(0.05)
        out["list_changed"] = bool(changes)
        out["relisted"] = sorted(tool.name for tool in (await client.list_tools()).tools)
        out["sum"] = text(await client.call_tool("test__add", {"a": 2, "b": 3}))
        via = await client.call_tool("call_tool", {"name": "test__echo", "arguments": {"message": "via call_tool"}})
        out["via_call_tool"] = text(via)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
