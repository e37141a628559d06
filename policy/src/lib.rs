//! Warden's rules, as pure functions: no I/O, no async, no actors.
//!
//! Everything here can be tested with plain `#[test]`s and reused by any
//! face of Warden (embedded, daemon, CLI): tool naming, policy precedence,
//! approval decisions, what the model sees, and leak detection:
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
//!   ([`KnownSecret`]) and well-known token shapes in text and JSON
//!   (`leaks.rs`: **the leak scan**).
//! - [`resolve_policy`] (`tool_policy.rs`): **policy resolution** — a tool's
//!   risk, approval, timeout and leak action, field by field from the
//!   layers (tool override, server default, annotations, Warden's default),
//!   each remembering where it came from.
//! - [`approval_need`] and [`Grant`] (`approval.rs`): whether a call needs a
//!   person, given auto-approval and the grants in force.
//! - [`ToolPatterns`] (`patterns.rs`): `*`, `?` and `[..]` over tool names,
//!   for allowlists, grants and profiles.
//!
//! The call path that applies them is `warden_actors`' `call.rs`.

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
    resolve_policy, Approval, LeakAction, PolicyDefaults, PolicyError, PolicyLayer, PolicySource, ResolvedPolicy, Risk,
    Sourced, ToolHints,
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
