"""A client of Warden's MCP front written with the official Python SDK.

Run with the pinned SDK's venv (warden_tests::real_servers::install_python):

    python front_client.py stdio <command> <args as JSON>
    python front_client.py http <url> <bearer token>

It runs one scenario against a front serving `everything` (server-everything)
and `test` (Warden's test server) and prints what it saw as one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client


async def scenario(session: ClientSession, logs: list) -> dict:
    out = {}
    init = await session.initialize()
    out["server"] = init.server_info.name if hasattr(init, "server_info") else init.serverInfo.name
    tools = await session.list_tools()
    out["tools"] = sorted(tool.name for tool in tools.tools)
    echo = await session.call_tool("everything__echo", {"message": "hi"})
    out["echo"] = echo.content[0].text
    resources = await session.list_resources()
    first = resources.resources[0]
    out["resource_uri"] = str(first.uri)
    read = await session.read_resource(first.uri)
    out["read_uri"] = str(read.contents[0].uri)
    prompt = await session.get_prompt("everything__simple-prompt")
    out["prompt_messages"] = len(prompt.messages)
    progress = []

    async def on_progress(value, total, message):
        progress.append(value)

    await session.call_tool(
        "everything__trigger-long-running-operation",
        {"duration": 1, "steps": 3},
        progress_callback=on_progress,
    )
    out["progress"] = len(progress)
    await session.set_logging_level("info")
    out["notify"] = (await session.call_tool("test__notify", {})).content[0].text
    for _ in range(100):
        if logs:
            break
        await asyncio.sleep(0.05)
    out["loggers"] = sorted({log.logger for log in logs})
    return out


async def main() -> None:
    mode, target, extra = sys.argv[1:4]
    logs = []

    async def on_log(params):
        logs.append(params)

    if mode == "stdio":
        # The whole environment: the front finds its daemon by WARDEN_HOME.
        params = StdioServerParameters(command=target, args=json.loads(extra), env=dict(os.environ))
        async with stdio_client(params) as (read, write):
            async with ClientSession(read, write, logging_callback=on_log) as session:
                out = await scenario(session, logs)
    else:
        import httpx2
        from mcp.client.streamable_http import streamable_http_client

        headers = {"Authorization": f"Bearer {extra}"}
        async with httpx2.AsyncClient(headers=headers, timeout=60) as http:
            async with streamable_http_client(target, http_client=http) as streams:
                read, write = streams[0], streams[1]
                async with ClientSession(read, write, logging_callback=on_log) as session:
                    out = await scenario(session, logs)
    print(json.dumps(out), flush=True)


asyncio.run(main())
