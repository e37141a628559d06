"""The server the official conformance suite's server scenarios expect,
on the official Python SDK (mcp 2.3.0), for testing Warden's MCP front
with that suite: the suite's client talks to Warden's front, and the front
to this server (stdio). What the suite checks is then what the front
passes on — names, content, progress, logs, questions, sampling,
subscriptions, completions — and the front's own HTTP behaviour.

Everything here is as the suite's scenarios describe it
(`conformance list --server`, each scenario's "Server Implementation
Requirements"): the tools `test_simple_text`, `test_image_content`,
`test_audio_content`, `test_embedded_resource`,
`test_multiple_content_types`, `test_tool_with_logging`,
`test_error_handling`, `test_tool_with_progress`, `test_sampling`,
`test_elicitation`, `test_elicitation_sep1034_defaults`,
`test_elicitation_sep1330_enums`, `json_schema_2020_12_tool`; the
resources `test://static-text`, `test://static-binary`,
`test://watched-resource` and the template `test://template/{id}/data`;
the prompts `test_simple_prompt`, `test_prompt_with_arguments`,
`test_prompt_with_embedded_resource`, `test_prompt_with_image`;
completions, log levels and resource subscriptions.

It speaks the `initialize` revisions only as far as its questions go:
sampling and elicitation are session requests, which the SDK sends in
2025-11-25 (Warden's config pins that revision for it).
"""

import asyncio
import base64
import json

from mcp import types
from mcp.server.mcpserver import Context, MCPServer
from mcp.server.mcpserver.prompts.base import UserMessage
from mcp_types import (
    AudioContent,
    CallToolResult,
    Completion,
    EmbeddedResource,
    ImageContent,
    SamplingMessage,
    TextContent,
    TextResourceContents,
)

# A 1x1 red PNG, and a WAV of one silent sample.
PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8z8DwHwAFBQIAX8jx0gAAAABJRU5ErkJggg=="
)
WAV = base64.b64encode(
    b"RIFF" + (38).to_bytes(4, "little") + b"WAVEfmt " + (16).to_bytes(4, "little")
    + (1).to_bytes(2, "little") + (1).to_bytes(2, "little") + (8000).to_bytes(4, "little")
    + (16000).to_bytes(4, "little") + (2).to_bytes(2, "little") + (16).to_bytes(2, "little")
    + b"data" + (2).to_bytes(4, "little") + b"\x00\x00"
).decode()

server = MCPServer("warden-conformance-backend", version="1.0.0")
SUBSCRIBED: set[str] = set()


def text(value: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=value)])


@server.tool(description="Returns simple text.")
def test_simple_text() -> CallToolResult:
    return text("This is a simple text response for testing.")


@server.tool(description="Returns an image.")
def test_image_content() -> CallToolResult:
    return CallToolResult(content=[ImageContent(type="image", data=PNG, mime_type="image/png")])


@server.tool(description="Returns audio.")
def test_audio_content() -> CallToolResult:
    return CallToolResult(content=[AudioContent(type="audio", data=WAV, mime_type="audio/wav")])


@server.tool(description="Returns an embedded resource.")
def test_embedded_resource() -> CallToolResult:
    resource = TextResourceContents(
        uri="test://embedded-resource", mime_type="text/plain", text="This is an embedded resource content."
    )
    return CallToolResult(content=[EmbeddedResource(type="resource", resource=resource)])


@server.tool(description="Returns text, an image and a resource.")
def test_multiple_content_types() -> CallToolResult:
    resource = TextResourceContents(
        uri="test://mixed-content-resource",
        mime_type="application/json",
        text=json.dumps({"test": "data", "value": 123}),
    )
    return CallToolResult(
        content=[
            TextContent(type="text", text="Multiple content types test:"),
            ImageContent(type="image", data=PNG, mime_type="image/png"),
            EmbeddedResource(type="resource", resource=resource),
        ]
    )


@server.tool(description="Logs three messages while it runs.")
async def test_tool_with_logging(ctx: Context) -> CallToolResult:
    await ctx.info("Tool execution started")
    await asyncio.sleep(0.05)
    await ctx.info("Tool processing data")
    await asyncio.sleep(0.05)
    await ctx.info("Tool execution completed")
    return text("Tool with logging executed successfully")


@server.tool(description="Always fails.")
def test_error_handling() -> CallToolResult:
    result = text("This tool intentionally returns an error for testing")
    result.is_error = True
    return result


@server.tool(description="Reports progress while it runs.")
async def test_tool_with_progress(ctx: Context) -> CallToolResult:
    await ctx.report_progress(0, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(50, 100)
    await asyncio.sleep(0.05)
    await ctx.report_progress(100, 100)
    return text("Tool with progress executed successfully")


@server.tool(description="Asks the client's model.")
async def test_sampling(prompt: str, ctx: Context) -> CallToolResult:
    message = SamplingMessage(role="user", content=TextContent(type="text", text=prompt))
    answer = await ctx.session.create_message(
        messages=[message], max_tokens=100, related_request_id=ctx.request_id
    )
    said = answer.content.text if isinstance(answer.content, TextContent) else str(answer.content)
    return text(f"LLM response: {said}")


async def elicited(ctx: Context, message: str, schema: dict) -> types.ElicitResult:
    return await ctx.session.elicit_form(message, schema, related_request_id=ctx.request_id)


@server.tool(description="Asks the person for a username and an email.")
async def test_elicitation(message: str, ctx: Context) -> CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "username": {"type": "string", "description": "User's response"},
            "email": {"type": "string", "description": "User's email address"},
        },
        "required": ["username", "email"],
    }
    answer = await elicited(ctx, message, schema)
    return text(f"User response: action={answer.action}, content={json.dumps(answer.content)}")


@server.tool(description="Asks with a default for every primitive type.")
async def test_elicitation_sep1034_defaults(ctx: Context) -> CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "score": {"type": "number", "default": 95.5},
            "status": {"type": "string", "enum": ["active", "inactive", "pending"], "default": "active"},
            "verified": {"type": "boolean", "default": True},
        },
    }
    answer = await elicited(ctx, "Please review and update the form fields with defaults", schema)
    return text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}")


@server.tool(description="Asks with every kind of enum.")
async def test_elicitation_sep1330_enums(ctx: Context) -> CallToolResult:
    schema = {
        "type": "object",
        "properties": {
            "untitledSingle": {"type": "string", "enum": ["option1", "option2", "option3"]},
            "titledSingle": {
                "type": "string",
                "oneOf": [
                    {"const": "value1", "title": "First Option"},
                    {"const": "value2", "title": "Second Option"},
                    {"const": "value3", "title": "Third Option"},
                ],
            },
            "legacyEnum": {
                "type": "string",
                "enum": ["opt1", "opt2", "opt3"],
                "enumNames": ["Option One", "Option Two", "Option Three"],
            },
            "untitledMulti": {"type": "array", "items": {"type": "string", "enum": ["option1", "option2", "option3"]}},
            "titledMulti": {
                "type": "array",
                "items": {
                    "anyOf": [
                        {"const": "value1", "title": "First Choice"},
                        {"const": "value2", "title": "Second Choice"},
                        {"const": "value3", "title": "Third Choice"},
                    ]
                },
            },
        },
    }
    answer = await elicited(ctx, "Please select options from the enum fields", schema)
    return text(f"Elicitation completed: action={answer.action}, content={json.dumps(answer.content)}")


@server.tool(name="json_schema_2020_12_tool", description="Tool with JSON Schema 2020-12 features")
def json_schema_tool(name: str = "", address: dict | None = None) -> CallToolResult:
    return text(f"name={name}, address={json.dumps(address)}")


# The listing shows the schema as the scenario writes it (the SDK would
# derive its own from the signature).
server._tool_manager.get_tool("json_schema_2020_12_tool").parameters = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "$defs": {
        "address": {"type": "object", "properties": {"street": {"type": "string"}, "city": {"type": "string"}}}
    },
    "properties": {"name": {"type": "string"}, "address": {"$ref": "#/$defs/address"}},
    "additionalProperties": False,
}


@server.resource("test://static-text", name="static-text", description="A static text resource", mime_type="text/plain")
def static_text() -> str:
    return "This is the content of the static text resource."


@server.resource("test://static-binary", name="static-binary", description="A static PNG", mime_type="image/png")
def static_binary() -> bytes:
    return base64.b64decode(PNG)


@server.resource("test://watched-resource", name="watched-resource", description="A resource to subscribe to")
def watched() -> str:
    return "Watched resource content"


@server.resource("test://template/{id}/data", name="template", description="Data by id", mime_type="application/json")
def template(id: str) -> str:
    return json.dumps({"id": id, "templateTest": True, "data": f"Data for ID: {id}"})


@server.prompt(description="A simple prompt")
def test_simple_prompt() -> str:
    return "This is a simple prompt for testing."


@server.prompt(description="A prompt with arguments")
def test_prompt_with_arguments(arg1: str, arg2: str) -> str:
    return f"Prompt with arguments: arg1='{arg1}', arg2='{arg2}'"


@server.prompt(description="A prompt with an embedded resource")
def test_prompt_with_embedded_resource(resourceUri: str) -> list:
    resource = TextResourceContents(uri=resourceUri, mime_type="text/plain", text="Embedded resource content for testing.")
    return [
        UserMessage(content=EmbeddedResource(type="resource", resource=resource)),
        UserMessage(content=TextContent(type="text", text="Please process the embedded resource above.")),
    ]


@server.prompt(description="A prompt with an image")
def test_prompt_with_image() -> list:
    return [
        UserMessage(content=ImageContent(type="image", data=PNG, mime_type="image/png")),
        UserMessage(content=TextContent(type="text", text="Please analyze the image above.")),
    ]


@server.completion()
async def complete(ref, argument, context) -> Completion:
    values = [value for value in ["paris", "park", "party"] if value.startswith(argument.value or "")]
    return Completion(values=values, total=len(values), has_more=False)


async def subscribe(ctx, params: types.SubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.add(str(params.uri))
    return types.EmptyResult()


async def unsubscribe(ctx, params: types.UnsubscribeRequestParams) -> types.EmptyResult:
    SUBSCRIBED.discard(str(params.uri))
    return types.EmptyResult()


# MCPServer has no decorator for the 2025 subscriptions: its low-level server's.
server._lowlevel_server.add_request_handler("resources/subscribe", types.SubscribeRequestParams, subscribe)
server._lowlevel_server.add_request_handler("resources/unsubscribe", types.UnsubscribeRequestParams, unsubscribe)


if __name__ == "__main__":
    server.run()
