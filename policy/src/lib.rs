//! Warden's rules, as pure functions: no I/O, no async, no actors.
//!
//! Everything here can be tested with plain `#[test]`s and reused by any
//! face of Warden (embedded, daemon, CLI). Today it holds tool naming, what
//! the model sees, and leak detection:
//!
//! - [`validate_server_name`]: which server names are allowed, and why.
//! - [`namespaced_tool_name`]: how a server's tool becomes `server__tool`, a
//!   name every major LLM provider accepts; [`NameRules`] for a `_`
//!   separator or another length limit.
//! - [`ToolProfile`] and [`present_tool`]: how much of each tool definition
//!   the model is shown ([`Detail`]: full, summary or brief), chosen per tool
//!   by exact name or glob.
//! - [`render_call_result`], [`render_resource_read`], [`render_resource_list`],
//!   [`render_prompt_list`], [`render_prompt`] and [`truncate`]: what the model
//!   sees of a server's answers — text kept, binary summarised, output bounded.
//! - [`LeakScanner`]: finds and redacts the secrets Warden handed to servers
//!   ([`KnownSecret`]) and well-known token shapes in text and JSON.
//!
//! Tool policies, approval rules and allowlists join it.

mod approval;
mod leaks;
mod naming;
mod patterns;
mod profiles;
mod render;
mod tool_policy;

pub use approval::{approval_need, ApprovalNeed, AutoApproval, Grant};
pub use patterns::{PatternError, ToolPattern, ToolPatterns};
pub use tool_policy::{
    resolve_policy, Approval, LeakAction, PolicyDefaults, PolicyLayer, PolicySource, ResolvedPolicy, Risk, Sourced,
    ToolHints,
};

pub use leaks::{KnownSecret, Leak, LeakScanner};
pub use naming::{
    namespaced_tool_name, split_namespaced, validate_server_name, NameError, NameRules, MAX_TOOL_NAME_CHARS, SEPARATOR,
};
pub use profiles::{first_sentence, present_tool, Detail, ProfileError, ToolProfile};
pub use render::{
    render_call_result, render_prompt, render_prompt_list, render_resource_list, render_resource_read, truncate,
    RenderedResult, DEFAULT_OUTPUT_LIMIT,
};
