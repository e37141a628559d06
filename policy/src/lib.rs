//! Warden's rules, as pure functions: no I/O, no async, no actors.
//!
//! Everything here can be tested with plain `#[test]`s and reused by any
//! face of Warden (embedded, daemon, CLI). Today it holds tool naming:
//!
//! - [`validate_server_name`]: which server names are allowed, and why.
//! - [`namespaced_tool_name`]: how a server's tool becomes `server__tool`, a
//!   name every major LLM provider accepts.
//!
//! Tool policies, approval rules, allowlists and leak detection join it.

mod naming;

pub use naming::{
    namespaced_tool_name, split_namespaced, validate_server_name, NameError, MAX_TOOL_NAME_CHARS, SEPARATOR,
};
