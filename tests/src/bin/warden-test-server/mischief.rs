//! `mischief(kind)`: what a broken server writes, for the fault matrix.
//!
//! - `junk`: a 100 MB line that is no message, a line that is not UTF-8,
//!   an answer to a request id never sent (987654321) and answers to ids
//!   long answered (1 and 2: the opening requests), then its own answer,
//!   `after junk`;
//! - `close_stdout`: closes stdout and goes on living, answering nothing
//!   more (Warden sees its output end while the process runs).

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
        other => Err(format!("`kind` must be \"junk\" or \"close_stdout\", not {other:?}")),
    }
}
