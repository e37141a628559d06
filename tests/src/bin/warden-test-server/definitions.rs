//! The tools' definitions as `tools/list` shows them.

use super::*;

/// `{"type": "object", ...}` with the given properties and required names.
pub(crate) fn object_schema(properties: Value, required: &[&str]) -> Value {
    json!({"type": "object", "properties": properties, "required": required})
}

pub(crate) fn tool(name: &str, description: &str, input_schema: Value) -> Value {
    json!({"name": name, "description": description, "inputSchema": input_schema})
}

pub(crate) fn builtin_tool_definition(name: &str) -> Option<Value> {
    let no_arguments = || object_schema(json!({}), &[]);
    let definition = match name {
        "echo" => tool(
            "echo",
            "Answers with `message` as text.",
            object_schema(json!({"message": {"type": "string", "description": "Text to send back."}}), &["message"]),
        ),
        "add" => add_tool_definition(),
        "cancellations" => {
            tool("cancellations", "Lists the request ids of the cancellations received.", no_arguments())
        }
        "progress" => tool(
            "progress",
            "Reports `steps` steps of progress, `ms` apart, then answers `<steps> steps`.",
            object_schema(json!({"steps": {"type": "integer"}, "ms": {"type": "integer"}}), &["steps"]),
        ),
        "meta" => tool("meta", "Answers with the request's `_meta` as JSON.", no_arguments()),
        "mischief" => tool(
            "mischief",
            "Misbehaves as `kind` says: `junk` (a 100 MB line, a line that is not UTF-8, stray answers, then `after junk`) or `close_stdout` (closes stdout, lives on).",
            object_schema(json!({"kind": {"type": "string", "enum": ["junk", "close_stdout"]}}), &["kind"]),
        ),
        "record" | "record_safe" => {
            let schema = object_schema(
                json!({"file": {"type": "string"}, "id": {"type": "string"}, "ms": {"type": "integer"}}),
                &["file", "id"],
            );
            let mut record = tool(name, "Appends `id` to `file`, waits `ms`, answers `recorded <id>`.", schema);
            if name == "record_safe" {
                record["annotations"] = json!({"idempotentHint": true});
            }
            record
        }
        "sleep" => {
            let mut sleep = tool(
                "sleep",
                "Waits `ms` milliseconds, then answers `slept <ms> ms`. Can be cancelled.",
                object_schema(
                    json!({"ms": {"type": "integer", "minimum": 0, "description": "How long to wait."}}),
                    &["ms"],
                ),
            );
            sleep["annotations"] = json!({"idempotentHint": true});
            sleep
        }
        "crash" => tool(
            "crash",
            "Exits the server process at once with `code` (default 1), without answering.",
            object_schema(json!({"code": {"type": "integer", "description": "Exit code."}}), &[]),
        ),
        "garbage" => {
            tool("garbage", "Writes three invalid lines to stdout, then answers `after garbage`.", no_arguments())
        }
        "huge" => tool(
            "huge",
            "Answers with one text block of exactly `bytes` 'x' characters.",
            object_schema(
                json!({"bytes": {"type": "integer", "minimum": 0, "description": "Length of the text."}}),
                &["bytes"],
            ),
        ),
        "notify" => tool(
            "notify",
            "Adds `late_tool`, sends tools/list_changed and a log message, then answers `notified`.",
            no_arguments(),
        ),
        "fail" => tool(
            "fail",
            "Answers with a tool error (isError) carrying `message`.",
            object_schema(json!({"message": {"type": "string", "description": "Error text."}}), &[]),
        ),
        "image" => tool("image", "Answers with a text block and a 1x1 PNG image block.", no_arguments()),
        "env" => tool(
            "env",
            "Answers with the value of environment variable `name`, or `<unset>`.",
            object_schema(json!({"name": {"type": "string", "description": "Variable name."}}), &["name"]),
        ),
        "cwd" => tool("cwd", "Answers with the server's working directory.", no_arguments()),
        "pid" => tool("pid", "Answers with the server's process id.", no_arguments()),
        "stderr" => tool(
            "stderr",
            "Writes `lines` lines to stderr, then answers `wrote <lines> lines`.",
            object_schema(
                json!({"lines": {"type": "integer", "minimum": 0, "description": "How many lines."}}),
                &["lines"],
            ),
        ),
        "ask_client" => tool(
            "ask_client",
            "Sends the client a request, waits for its answer and reports it as text.",
            object_schema(
                json!({
                    "method": {"type": "string", "description": "Method to call on the client, e.g. ping."},
                    "params": {"type": "object", "description": "Optional request params."},
                }),
                &["method"],
            ),
        ),
        LATE_TOOL => tool(LATE_TOOL, "Appears after `notify`; answers `late`.", no_arguments()),
        _ => return None,
    };
    Some(definition)
}

/// `add` carries every optional field, so tests can check they pass through.
pub(crate) fn add_tool_definition() -> Value {
    let number = json!({"type": "number"});
    let mut add = tool(
        "add",
        "Adds `a` and `b`; answers the sum as text and as structuredContent.",
        object_schema(json!({"a": number, "b": number}), &["a", "b"]),
    );
    add["outputSchema"] = object_schema(json!({"sum": number}), &["sum"]);
    add["annotations"] = json!({"readOnlyHint": true, "title": "Add two numbers"});
    add["_meta"] = json!({"warden-test/owner": "tests"});
    add
}

pub(crate) fn extra_tool_definition(name: &str) -> Value {
    tool(name, &format!("Extra tool added by --extra-tool; answers `extra {name}`."), object_schema(json!({}), &[]))
}
