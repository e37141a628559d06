"""A client of Warden's HTTP front, on the official Python SDK, with roots
of its own (or none): it calls `py__roots` (tests/python/asking_server.py
behind the front), which lists the roots its server is told, and prints
them as one JSON line.

    python roots_client.py <url> <bearer token> '<roots as a JSON list, or null for no roots capability>'
"""

import asyncio
import json
import sys

import httpx2
from mcp import ClientSession, types
from mcp.client.streamable_http import streamable_http_client


async def main() -> None:
    url, token, roots = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    asked = []

    async def list_roots(context):
        asked.append(True)
        return types.ListRootsResult(roots=[types.Root(uri=uri) for uri in roots])

    callback = list_roots if roots is not None else None
    headers = {"Authorization": f"Bearer {token}"}
    async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
        async with streamable_http_client(url, http_client=http) as streams:
            async with ClientSession(streams[0], streams[1], list_roots_callback=callback) as session:
                await session.initialize()
                result = await session.call_tool("py__roots", {})
    print(json.dumps({"roots": result.content[0].text, "asked": len(asked)}), flush=True)


asyncio.run(main())
