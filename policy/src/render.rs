//! What the model sees: MCP results turned into text.
//!
//! A model reads tool results as text, so every answer a server gives — a
//! `tools/call` result, a resource read, a listing, a rendered prompt — is
//! turned into one string here, on the raw JSON (`serde_json::Value`) so the
//! rules stay pure and do not depend on the protocol crate's types.
//!
//! Three promises hold everywhere:
//!
//! - Binary data never reaches the model. Images, audio and blobs become a
//!   one-line summary (`[image image/png: ~68 bytes]`) whose size is worked
//!   out from the base64 length, never by decoding it.
//! - Nothing is dropped silently. A content type Warden does not know still
//!   leaves a line (`[video content omitted]`), and a missing field shows a
//!   placeholder (`<no uri>`) rather than vanishing or panicking.
//! - Output is bounded. [`truncate`] cuts anything over
//!   [`DEFAULT_OUTPUT_LIMIT`] on a character boundary and says how much was
//!   cut, so the model knows it saw only part.
//!
//! One block renderer serves both tool results and prompt messages, so an
//! image looks the same wherever it appears.

use serde_json::Value;

/// How many bytes of tool output or resource contents a model sees (100 KB).
pub const DEFAULT_OUTPUT_LIMIT: usize = 100 * 1024;

/// A `tools/call` result as the model sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderedResult {
    /// The rendered content, starting with `Error: ` when the tool failed.
    pub text: String,
    /// The server set `isError: true`.
    pub is_error: bool,
}

/// Cuts `text` to at most `limit` bytes, marker included, and says so.
///
/// Text that fits is returned as is. Longer text keeps its start, cut on a
/// character boundary, followed by `\n[truncated: {cut} of {total} bytes not
/// shown]`. A limit smaller than the marker itself leaves only the marker: the
/// model must always learn that something was cut.
pub fn truncate(mut text: String, limit: usize) -> String {
    let total = text.len();
    if total <= limit {
        return text;
    }
    // The marker's length depends on how much is cut, which depends on the
    // marker's length; `cut <= total`, so sizing it for `total` is never short.
    let room = limit.saturating_sub(marker(total, total).len());
    let keep = floor_char_boundary(&text, room);
    text.truncate(keep);
    // Cutting in place copies nothing; shrinking copies at most `limit` bytes
    // and stops a 10 MB result from pinning 10 MB in the conversation.
    text.push_str(&marker(total - keep, total));
    text.shrink_to_fit();
    text
}

/// Renders a `tools/call` result: `{content: [...], structuredContent?, isError?}`.
///
/// Each content block becomes one part, joined with newlines.
/// `structuredContent` is added as compact JSON unless a text block already
/// carries the same value (servers are asked to send both).
pub fn render_call_result(result: &Value) -> RenderedResult {
    let blocks = as_list(result.get("content"));
    let mut parts: Vec<String> = blocks.iter().map(render_block).collect();
    if let Some(structured) = result.get("structuredContent").filter(|v| !v.is_null()) {
        if !blocks.iter().any(|block| text_block_equals(block, structured)) {
            parts.push(structured.to_string());
        }
    }
    let text = parts.join("\n");
    let is_error = result.get("isError").and_then(Value::as_bool).unwrap_or(false);
    RenderedResult { text: if is_error { error_text(text) } else { text }, is_error }
}

/// Renders a `resources/read` result: `{contents: [{uri, mimeType?, text?|blob?}]}`.
///
/// Every text content is kept, joined with newlines; every blob becomes
/// `[binary <mime>: ~N bytes]` in its place.
pub fn render_resource_read(result: &Value) -> String {
    let contents = as_list(result.get("contents"));
    contents.iter().map(resource_contents).collect::<Vec<_>>().join("\n")
}

/// Renders `resources/list` and `resources/templates/list` results as one
/// listing, with an optional closing `note` (say, that the listing was capped).
///
/// ```text
/// - file:///notes.md — notes (text/markdown, 120 bytes): Meeting notes
/// Templates:
/// - file:///logs/{date}.log — daily-log: One day of logs
/// ```
pub fn render_resource_list(resources: &[Value], templates: &[Value], note: Option<&str>) -> String {
    let mut lines: Vec<String> = resources.iter().map(|r| listing_line(r, "uri")).collect();
    if !templates.is_empty() {
        lines.push("Templates:".to_string());
        lines.extend(templates.iter().map(|t| listing_line(t, "uriTemplate")));
    }
    if lines.is_empty() {
        lines.push("No resources.".to_string());
    }
    lines.extend(note.map(str::to_string));
    lines.join("\n")
}

/// Renders a `prompts/list` result: one line per prompt, required arguments
/// marked with `*`, and an indented line for each described argument.
///
/// ```text
/// - summarize(text*, style): Summarize a text
///     text: What to summarize
/// ```
pub fn render_prompt_list(prompts: &[Value]) -> String {
    if prompts.is_empty() {
        return "No prompts.".to_string();
    }
    prompts.iter().map(prompt_entry).collect::<Vec<_>>().join("\n")
}

/// Renders a `prompts/get` result: `{description?, messages: [{role, content}]}`.
///
/// The description (if any) comes first, then each message as
/// `[<role>] <body>`, separated by blank lines. Bodies use the same block
/// rendering as tool results.
pub fn render_prompt(result: &Value) -> String {
    let mut sections: Vec<String> =
        result.get("description").and_then(Value::as_str).map(str::to_string).into_iter().collect();
    let messages = as_list(result.get("messages"));
    if messages.is_empty() {
        sections.push("No messages.".to_string());
    }
    for message in messages {
        let role = str_or(message, "role", "<no role>");
        sections.push(format!("[{role}] {}", render_content(message.get("content"))));
    }
    sections.join("\n\n")
}

/// The line that ends a truncated text.
fn marker(cut: usize, total: usize) -> String {
    format!("\n[truncated: {cut} of {total} bytes not shown]")
}

/// The largest character boundary at or below `index` (`str::floor_char_boundary`
/// is newer than the workspace's minimum Rust).
fn floor_char_boundary(text: &str, mut index: usize) -> usize {
    // A UTF-8 character is at most 4 bytes, so this loops at most 3 times.
    while !text.is_char_boundary(index) {
        index -= 1;
    }
    index
}

/// A field that MCP says holds a list, leniently: missing or `null` is empty,
/// a lone value is a list of one.
fn as_list(value: Option<&Value>) -> &[Value] {
    match value {
        None | Some(Value::Null) => &[],
        Some(Value::Array(items)) => items,
        Some(other) => std::slice::from_ref(other),
    }
}

/// A string field, or `placeholder` when it is missing or not a string.
fn str_or<'a>(value: &'a Value, key: &str, placeholder: &'a str) -> &'a str {
    value.get(key).and_then(Value::as_str).unwrap_or(placeholder)
}

/// A message's or result's content: one block, or a list of them.
fn render_content(content: Option<&Value>) -> String {
    match content {
        None | Some(Value::Null) => "<no content>".to_string(),
        Some(content) => as_list(Some(content)).iter().map(render_block).collect::<Vec<_>>().join("\n"),
    }
}

/// One content block (text, image, audio, resource link, embedded resource).
fn render_block(block: &Value) -> String {
    // A bare string is not valid MCP, but its meaning is plain.
    if let Some(text) = block.as_str() {
        return text.to_string();
    }
    match block.get("type").and_then(Value::as_str) {
        Some("text") => str_or(block, "text", "<no text>").to_string(),
        Some(kind @ ("image" | "audio")) => {
            format!("[{kind} {}: ~{} bytes]", str_or(block, "mimeType", "<no mimeType>"), base64_size(block))
        }
        Some("resource_link") => resource_link(block),
        Some("resource") => embedded_resource(block.get("resource").unwrap_or(&Value::Null)),
        Some(other) => format!("[{other} content omitted]"),
        None => "[<no type> content omitted]".to_string(),
    }
}

/// `[resource_link <uri> (<name>)]`, without the parentheses when unnamed.
fn resource_link(block: &Value) -> String {
    let uri = str_or(block, "uri", "<no uri>");
    match block.get("name").and_then(Value::as_str) {
        Some(name) => format!("[resource_link {uri} ({name})]"),
        None => format!("[resource_link {uri}]"),
    }
}

/// An embedded resource: its text, or a summary of its blob and where it came
/// from (a tool result may embed several).
fn embedded_resource(resource: &Value) -> String {
    let rendered = resource_contents(resource);
    let is_blob = resource.get("text").and_then(Value::as_str).is_none() && resource.get("blob").is_some();
    if is_blob {
        format!("{rendered} {}", str_or(resource, "uri", "<no uri>"))
    } else {
        rendered
    }
}

/// Resource contents (`{uri, mimeType?, text?|blob?}`): the text, or a blob
/// summary.
fn resource_contents(contents: &Value) -> String {
    if let Some(text) = contents.get("text").and_then(Value::as_str) {
        return text.to_string();
    }
    if contents.get("blob").is_some() {
        let mime = str_or(contents, "mimeType", "application/octet-stream");
        let size = base64_len(contents.get("blob").and_then(Value::as_str).unwrap_or(""));
        return format!("[binary {mime}: ~{size} bytes]");
    }
    format!("[resource {}: no contents]", str_or(contents, "uri", "<no uri>"))
}

/// The decoded size of a block's base64 `data`.
fn base64_size(block: &Value) -> usize {
    base64_len(block.get("data").and_then(Value::as_str).unwrap_or(""))
}

/// How many bytes base64 `data` decodes to, without decoding it: every 4
/// characters carry 3 bytes, `=` padding carries none, and line breaks some
/// encoders insert are not data.
fn base64_len(data: &str) -> usize {
    let data = data.trim_end_matches(|c: char| c == '=' || c.is_ascii_whitespace());
    let chars = data.bytes().filter(|b| !b.is_ascii_whitespace()).count();
    chars * 3 / 4
}

/// Whether a text block holds the same JSON as `structured`.
fn text_block_equals(block: &Value, structured: &Value) -> bool {
    let Some(text) = block.get("text").and_then(Value::as_str) else { return false };
    block.get("type").and_then(Value::as_str) == Some("text")
        && serde_json::from_str::<Value>(text).is_ok_and(|parsed| &parsed == structured)
}

/// A failed tool's text, starting with `Error: ` exactly once (many servers
/// already start their message that way).
fn error_text(text: String) -> String {
    if text.starts_with("Error:") {
        text
    } else if text.is_empty() {
        "Error: the server gave no details".to_string()
    } else {
        format!("Error: {text}")
    }
}

/// `- <uri> — <name> (<mime>, <size> bytes): <description>` for a resource or
/// template; `key` names the field holding its address.
fn listing_line(entry: &Value, key: &str) -> String {
    let address = str_or(entry, key, "<no uri>");
    let mut line = format!("- {address} — {}", str_or(entry, "name", "<no name>"));
    let mime = entry.get("mimeType").and_then(Value::as_str);
    let size = entry.get("size").and_then(Value::as_u64).map(|size| format!("{size} bytes"));
    let details: Vec<String> = mime.map(str::to_string).into_iter().chain(size).collect();
    if !details.is_empty() {
        line.push_str(&format!(" ({})", details.join(", ")));
    }
    push_description(&mut line, entry);
    line
}

/// `- <name>(<arg>*, <arg>): <description>` and a line per described argument.
fn prompt_entry(prompt: &Value) -> String {
    let arguments = as_list(prompt.get("arguments"));
    let signature: Vec<String> = arguments
        .iter()
        .map(|arg| {
            let required = arg.get("required").and_then(Value::as_bool).unwrap_or(false);
            format!("{}{}", str_or(arg, "name", "<no name>"), if required { "*" } else { "" })
        })
        .collect();
    let mut entry = format!("- {}({})", str_or(prompt, "name", "<no name>"), signature.join(", "));
    push_description(&mut entry, prompt);
    for arg in arguments {
        if let Some(description) = arg.get("description").and_then(Value::as_str) {
            entry.push_str(&format!("\n    {}: {description}", str_or(arg, "name", "<no name>")));
        }
    }
    entry
}

/// Appends `: <description>` when the entry has one.
fn push_description(line: &mut String, entry: &Value) {
    if let Some(description) = entry.get("description").and_then(Value::as_str) {
        line.push_str(": ");
        line.push_str(description);
    }
}

#[cfg(test)]
mod tests;
