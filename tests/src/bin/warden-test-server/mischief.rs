//! `mischief(kind)`: what a broken server writes, for the fault matrix.
//!
//! - `junk`: a 100 MB line that is no message, a line that is not UTF-8,
//!   an answer to a request id never sent (987654321) and answers to ids
//!   long answered (1 and 2: the opening requests), then its own answer,
//!   `after junk`;
//! - `close_stdout`: closes stdout and goes on living, answering nothing
//!   more (Warden sees its output end while the process runs);
//! - `result_first`: answers `result first` with the result written before
//!   `jsonrpc` and `id`, as the TypeScript SDK writes its answers;
//! - `broken_then_whole`: first writes a line that is this call's answer
//!   but for its result, which is not JSON (a string in it never ends),
//!   then the whole answer, `whole`;
//! - `not_a_tool_result`: answers with a result whose `content` is a
//!   string, not a list.

use super::*;

/// How long the junk line is.
const JUNK_LINE_BYTES: usize = 100 << 20;

pub(crate) fn tool_mischief(server: &Server, args: &Args) -> Result<Value, String> {
    match optional_str(args, "kind")? {
        Some("junk") => {
            server.send_raw("x".repeat(JUNK_LINE_BYTES));
            let _ = server.output.send(Output::Bytes(vec![0xff, 0xfe, b'{', 0xc3, b'}']));
            for id in [987_654_321, 1, 2] {
                server.reply(json!(id), json!({"content": [{"type": "text", "text": format!("stray answer {id}")}]}));
            }
            Ok(text_result("after junk"))
        }
        Some("close_stdout") => {
            let _ = server.output.send(Output::Close);
            log!("stdout closed on request; staying alive");
            Ok(text_result("unheard"))
        }
        Some("result_first") => Ok(text_result("result first")),
        Some("broken_then_whole") => Ok(text_result("whole")),
        Some("not_a_tool_result") => Ok(json!({"content": "not a list"})),
        other => Err(format!(
            "`kind` must be \"junk\", \"close_stdout\", \"result_first\", \"broken_then_whole\" or \
             \"not_a_tool_result\", not {other:?}"
        )),
    }
}

/// Writes the answer `result` to call `id`, in the shape a `mischief`
/// call's kind asks for; `false` when it asks for none (the usual answer).
pub(crate) fn answer_in_shape(server: &Server, call: &Call, id: &Value, result: &Value) -> bool {
    if call.name != "mischief" {
        return false;
    }
    match call.arguments.get("kind").and_then(Value::as_str) {
        Some("result_first") => {
            server.send_raw(format!(r#"{{"result":{result},"jsonrpc":"2.0","id":{id}}}"#));
            true
        }
        Some("broken_then_whole") => {
            // Its envelope is whole; inside, a string never ends.
            server.send_raw(format!(
                r#"{{"jsonrpc":"2.0","id":{id},"result":{{"content":[{{"type":"text","text":"cut}}]}}}}"#
            ));
            server.reply(id.clone(), result.clone());
            true
        }
        _ => false,
    }
}
