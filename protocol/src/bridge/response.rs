//! Answer lines: the daemon writes them ([`ResponseLine`]), clients read
//! them ([`Response`]). A tool's result is written straight into its line
//! (`json_write.rs`), not first into text of its own.

use serde::{Deserialize, Serialize};
use serde_json::value::RawValue;
use serde_json::Value;

use super::BridgeError;
use super::BridgeErrorCode;
use crate::json_len::json_len_hint;
use crate::json_write::write_json;

/// One answer line, as the daemon writes it. The result is JSON text
/// (`RawValue`), or anything that serialises: a tool's result is written
/// straight into the line, not first into text of its own.
#[derive(Debug, Serialize)]
pub struct ResponseLine<'a, R: ?Sized + Serialize = RawValue> {
    /// True for `result`, false for `error`.
    pub ok: bool,
    /// The request's `id`, when it had one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub id: Option<&'a Value>,
    /// The operation's answer.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub result: Option<&'a R>,
    /// Why it failed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<&'a BridgeError>,
}

impl ResponseLine<'_> {
    /// The line's JSON text, with its newline.
    pub fn to_line(&self) -> String {
        self.to_line_sized(self.result.map_or(0, |result| result.get().len()))
    }
}

impl<R: ?Sized + Serialize> ResponseLine<'_, R> {
    /// The line's JSON text, with its newline, in a buffer sized up front
    /// for about `result_bytes` of result: a buffer grown by doubling holds
    /// its old and new capacity at once, up to three times a large result
    /// (measured in `benches/large_results.rs`).
    pub fn to_line_sized(&self, result_bytes: usize) -> String {
        let mut line = Vec::with_capacity(result_bytes + 256);
        serde_json::to_writer(&mut line, self).expect("an answer always serialises");
        line.push(b'\n');
        String::from_utf8(line).expect("serde_json writes UTF-8")
    }
}

impl ResponseLine<'_, Value> {
    /// The line's JSON text, with its newline: the text `to_line_sized`
    /// writes, in a buffer sized for it up front, its strings copied in
    /// runs (`json_write.rs`) — a large tool result is most of its line.
    pub fn to_value_line(&self) -> String {
        let result_bytes = self.result.map_or(0, json_len_hint);
        let mut line = Vec::with_capacity(result_bytes + 256);
        line.extend_from_slice(if self.ok { b"{\"ok\":true" } else { b"{\"ok\":false" });
        if let Some(id) = self.id {
            line.extend_from_slice(b",\"id\":");
            write_json(&mut line, id);
        }
        if let Some(result) = self.result {
            line.extend_from_slice(b",\"result\":");
            write_json(&mut line, result);
        }
        if let Some(error) = self.error {
            line.extend_from_slice(b",\"error\":");
            serde_json::to_writer(&mut line, error).expect("an error always serialises");
        }
        line.extend_from_slice(b"}\n");
        String::from_utf8(line).expect("JSON text is UTF-8")
    }
}

/// One answer line, as a client reads it.
#[derive(Debug, Deserialize)]
pub struct Response {
    /// True for `result`, false for `error`.
    pub ok: bool,
    /// The request's `id`, when it had one.
    #[serde(default)]
    pub id: Option<Value>,
    /// The operation's answer, undecoded.
    #[serde(default)]
    pub result: Option<Box<RawValue>>,
    /// Why it failed.
    #[serde(default)]
    pub error: Option<BridgeError>,
}

impl Response {
    /// Reads an answer line.
    pub fn parse(line: &str) -> Result<Response, serde_json::Error> {
        serde_json::from_str(line)
    }

    /// The result, or the error; an answer with neither is an error too.
    pub fn into_result(self) -> Result<Box<RawValue>, BridgeError> {
        match (self.ok, self.result, self.error) {
            (true, Some(result), _) => Ok(result),
            (false, _, Some(error)) => Err(error),
            _ => Err(BridgeError::new(BridgeErrorCode::INVALID_REQUEST, "the daemon's answer has no result or error")),
        }
    }
}
