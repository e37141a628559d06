"""A client of Warden's MCP front, on the official Python SDK, that answers
the questions servers ask (elicitation, form and URL mode).

Run with the pinned SDK's venv (warden_tests::real_servers::install_python):

    python ask_client.py stdio <command> <args as JSON>
    python ask_client.py http <url> <bearer token>

The front serves `py` (tests/python/asking_server.py). The client calls
`py__book_table` and `py__sign_in`; its elicitation callback records what
it was asked and answers: the form with size "small" and 4 nights, the URL
with accept. It prints what it saw as one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client


async def scenario(session: ClientSession, asked: list) -> dict:
    await session.initialize()
    booked = await session.call_tool("py__book_table", {})
    signed = await session.call_tool("py__sign_in", {})
    return {"booked": booked.content[0].text, "signed": signed.content[0].text, "asked": asked}


def answerer(asked: list):
    async def on_elicit(context, params):
        if getattr(params, "mode", "form") == "url":
            asked.append({"mode": "url", "message": params.message, "url": params.url})
            return types.ElicitResult(action="accept")
        schema = params.requested_schema
        asked.append({"mode": "form", "message": params.message, "fields": list(schema["properties"])})
        return types.ElicitResult(action="accept", content={"size": "small", "nights": 4})

    return on_elicit


async def main() -> None:
    mode, target, extra = sys.argv[1:4]
    asked = []
    on_elicit = answerer(asked)
    if mode == "stdio":
        params = StdioServerParameters(command=target, args=json.loads(extra), env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
                out = await scenario(session, asked)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {extra}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(target, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, elicitation_callback=on_elicit) as session:
                    out = await scenario(session, asked)
    print(json.dumps(out), flush=True)


asyncio.run(main())
