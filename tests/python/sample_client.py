"""A client of Warden's MCP front, on the official Python SDK, whose model
answers the servers' sampling requests during its own calls (or that
offers no model, with `without`).

    python sample_client.py with|without <command> <args as JSON>

It calls `py__sample` (tests/python/asking_server.py behind the front)
with the prompt "hi from the test" and prints what it saw as one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client


async def main() -> None:
    offer, command, args = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
    seen = []

    async def sample(context, params):
        seen.append({"maxTokens": params.max_tokens, "text": params.messages[0].content.text})
        return types.CreateMessageResult(
            role="assistant",
            content=types.TextContent(type="text", text=f"client says: {params.messages[0].content.text}"),
            model="client-model",
        )

    callback = sample if offer == "with" else None
    params = StdioServerParameters(command=command, args=args, env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, sampling_callback=callback) as session:
            await session.initialize()
            result = await session.call_tool("py__sample", {"prompt": "hi from the test"})
    print(json.dumps({"sampled": result.content[0].text, "seen": seen}), flush=True)


asyncio.run(main())
