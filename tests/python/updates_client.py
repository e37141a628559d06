"""A client of Warden's MCP front on the official Python SDK (mcp 2.3.0)
that subscribes to a resource and hears list changes, for the cluster's
tests (`bins/tests/cluster_fronts.rs`), where the server —
`tests/python/era_server.py` — runs on another node than the front.

    updates_client.py <url> <bearer token> <server name>

Speaking 2025-11-25 (`initialize`, `resources/subscribe`), it:

1. subscribes to `warden://SERVER/note://current`, calls `SERVER__touch`
   (the server says the note was updated), and waits for the update;
2. calls `SERVER__add_note` with `fresh` (the server adds `note://fresh`
   and says its resource list changed), waits for the list change, and
   lists the resources;
3. unsubscribes, calls `SERVER__touch` again, and waits 3 s for an update
   that should not come;
4. prints what it saw as one JSON line: `updated` (the URIs of updates
   before unsubscribing), `list_changed`, `listed` (resource URIs),
   `after_unsubscribe` (URIs of updates after).
"""

import asyncio
import json
import sys

import httpx2
from mcp import Client
from mcp.client.streamable_http import streamable_http_client


async def wait_for(seen: list, seconds: float) -> None:
    for _ in range(int(seconds / 0.05)):
        if seen:
            return
        await asyncio.sleep(0.05)


async def main() -> None:
    url, token, name = sys.argv[1:4]
    updates: list = []
    changes: list = []

    async def on_message(message) -> None:
        root = getattr(message, "root", message)
        method = getattr(root, "method", None)
        if method == "notifications/resources/updated":
            updates.append(str(root.params.uri))
        if method == "notifications/resources/list_changed":
            changes.append(method)

    http = httpx2.AsyncClient(headers={"Authorization": f"Bearer {token}"}, timeout=30)
    note = f"warden://{name}/note://current"
    out = {}
    async with Client(streamable_http_client(url, http_client=http), mode="legacy", message_handler=on_message) as client:
        await client.subscribe_resource(note)
        await client.call_tool(f"{name}__touch", {})
        await wait_for(updates, 15)
        out["updated"] = list(updates)
        await client.call_tool(f"{name}__add_note", {"name": "fresh"})
        await wait_for(changes, 15)
        out["list_changed"] = bool(changes)
        listed = await client.list_resources()
        out["listed"] = sorted(str(resource.uri) for resource in listed.resources)
        await client.unsubscribe_resource(note)
        updates.clear()
        await client.call_tool(f"{name}__touch", {})
        await asyncio.sleep(3)
        out["after_unsubscribe"] = list(updates)
    print(json.dumps(out), flush=True)


if __name__ == "__main__":
    asyncio.run(main())
