"""A client of Warden's MCP front, on the official Python SDK, that answers
the approvals Warden asks it (as elicitations) for its own calls.

Run with the pinned SDK's venv (warden_tests::real_servers::install_python):

    python approve_client.py stdio <command> <args as JSON>

The front serves `test` (Warden's test server; its tools need approval).
The client calls `test__echo` four times and `test__pid` once; its
elicitation callback answers the approval questions with, in turn:
"once", "session" (the third and fourth echo then run unasked), and for
`test__pid` "deny" with the reason "not now". It prints what it saw as
one JSON line.
"""

import asyncio
import json
import os
import sys

from mcp import ClientSession, types
from mcp.client.stdio import StdioServerParameters, stdio_client

ANSWERS = [{"decision": "once"}, {"decision": "session"}, {"decision": "deny", "reason": "not now"}]


async def scenario(session: ClientSession, asked: list) -> dict:
    await session.initialize()
    out = {}
    for n in range(1, 5):
        echo = await session.call_tool("test__echo", {"message": f"call {n}"})
        out[f"echo{n}"] = echo.content[0].text
    pid = await session.call_tool("test__pid", {})
    out["pid"] = pid.content[0].text
    out["pid_is_error"] = pid.isError if hasattr(pid, "isError") else pid.is_error
    out["asked"] = asked
    return out


def answerer(asked: list):
    async def on_elicit(context, params):
        schema = params.requested_schema
        choices = [choice["const"] for choice in schema["properties"]["decision"]["oneOf"]]
        asked.append({"message": params.message, "choices": choices})
        return types.ElicitResult(action="accept", content=ANSWERS[len(asked) - 1])

    return on_elicit


async def main() -> None:
    _, target, extra = sys.argv[1:4]
    asked = []
    params = StdioServerParameters(command=target, args=json.loads(extra), env=dict(os.environ))
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write, elicitation_callback=answerer(asked)) as session:
            out = await scenario(session, asked)
    print(json.dumps(out), flush=True)


asyncio.run(main())
