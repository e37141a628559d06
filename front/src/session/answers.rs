//! The JSON-RPC answers a session sends: a result moved into its
//! response, and errors with Warden's words or a server's own.

use serde_json::{json, Map, Value};
use warden_protocol::{ErrorCode, ErrorObject};

/// A JSON-RPC response with `result`, moved in. Not `json!`: the macro
/// takes each value by reference and copies it whole (`to_value`), which
/// for a large tool result was a copy of every string in it — the front's
/// third copy of a 10 MB result, and about a fifth of its CPU for the call.
pub(crate) fn result(id: Value, result: Value) -> Value {
    let mut message = Map::new();
    message.insert("jsonrpc".into(), Value::String("2.0".into()));
    message.insert("id".into(), id);
    message.insert("result".into(), result);
    Value::Object(message)
}

/// The answer to request `id` that failed with `problem` (its data too).
pub(crate) fn error_answer(id: &Value, problem: ErrorObject) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": problem})
}

/// A JSON-RPC error response.
pub(crate) fn error(id: &Value, code: ErrorCode, message: &str) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code.0, "message": message}})
}

#[cfg(test)]
mod tests {
    use serde_json::{json, Map, Value};

    #[test]
    fn a_result_is_moved_into_its_response_not_copied() {
        let text = "a large result ".repeat(1000);
        let address = text.as_ptr();
        let mut block = Map::new();
        block.insert("text".into(), Value::String(text));
        let message = super::result(json!(7), Value::Object(block));
        assert_eq!(
            message.to_string(),
            json!({"jsonrpc": "2.0", "id": 7, "result": {"text": message["result"]["text"]}}).to_string()
        );
        assert_eq!(message["result"]["text"].as_str().unwrap().as_ptr(), address, "the text is the one passed in");
    }
}
