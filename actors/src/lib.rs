//! Warden's actor system, and the [`Warden`] handle hosts embed.
//!
//! ```text
//! Warden (handle: Clone, shared)
//!  ├─ Hub                      root of the servers: start, reload, shutdown
//!  │   ├─ Registry             namespaced tool table, collisions, server states;
//!  │   │                       publishes immutable snapshots the handle reads
//!  │   └─ ServerSupervisor × N one per server: restarts with backoff
//!  │       └─ ServerActor      owns its transport, handshake, discovery,
//!  │                           calls in flight, timeouts
//!  ├─ PolicyGate               grants, session auto-approval, waiting approvals
//!  └─ Summarizer               optional (`[summary]`): one-sentence tool summaries
//! ```
//!
//! The map of the whole project, with one call end to end and who owns
//! what, is `docs/architecture.md`. The modules:
//!
//! - `warden.rs` + `warden/`: the [`Warden`] handle — [`WardenBuilder`]
//!   (`builder.rs`), [`Scope`] (`scope.rs`: the host's or an agent's), policy views and grants
//!   (`policy_api.rs`), live reload (`reload.rs`).
//! - `call.rs` + `call/`: **the call pipeline**, every step of one call:
//!   resolve, admit (`admit.rs`: allowlist, leak scan, approval), attempt
//!   (`attempt.rs`: restarts, safe repeats, cancel on drop), police
//!   (`police.rs`: redaction), the built-in `describe_tool`
//!   (`describe.rs`), per-server in-flight slots (`slots.rs`);
//!   [`CallOptions`] (timeout, `_meta`, progress).
//! - `hub.rs`: the root of the server tree.
//! - `server_supervisor.rs`: **restart backoff** and give-up.
//! - `server_actor.rs` + `server_actor/`: one connection; `discovery.rs` the
//!   handshake and **`tools/list_changed` refetch**; `freshness.rs` a tool
//!   list's `ttlMs` and lists read again for a caller's miss; `calls.rs`
//!   calls in flight, deadlines, cancellation, progress; `events.rs` what
//!   it reports.
//! - `registry.rs`: names and states, published as [`Snapshot`]s.
//! - `policy_rules.rs`: the config's policy sections compiled;
//!   **policy resolution** per tool (rules in `warden_policy`).
//! - `policy_gate.rs`, `approver.rs`, `approval_queue.rs`: approvals and who
//!   answers them ([`Approver`], [`ApprovalQueue`] for the daemon, which
//!   holds servers' questions too).
//! - `client_features.rs` + `client_features/`: what servers ask of their
//!   client — elicitation (answered by an [`Elicitor`], `elicitor.rs`),
//!   roots ([`Root`]), bounded per call and per server (`throttle.rs`).
//! - `server_settings.rs`: limits, timeouts, restart schedule per server.
//! - `primitive_tools.rs`: a server's resources and prompts as tools.
//! - `metrics.rs` + `metrics/`: counters and gauges of calls, servers and
//!   approvals (Prometheus' text); `audit.rs`: the record of each call,
//!   for the host's audit sink; `trace_context.rs`: a call's span joined
//!   to its caller's trace (`traceparent` in `_meta`).
//! - `chat.rs`: the chat-completions client that sampling and summaries
//!   share.
//! - `era_memo.rs`: servers found to speak `initialize` only, remembered
//!   across runs; `task_journal.rs`: server-side tasks of calls in flight,
//!   left by a process that died; `state_file.rs`: how such small files
//!   are kept (`0600`, written whole).
//! - `summarizer.rs` + `summarizer/`: background summaries and their cache.
//! - `progress.rs`: [`Progress`] reports of one call.
//! - `tickets.rs`: a waiting caller's ticket, and the guard that tells an
//!   actor when the caller leaves (cancel the call, withdraw the request).
//! - `error.rs`: [`CallError`], every way a call can fail, each with advice.
//!
//! The **leak scan** itself is `warden_policy::LeakScanner`; the bridge's
//! **token check** is in the `warden` binary (`bins/src/daemon/token.rs`).

mod approval_queue;
mod approver;
mod audit;
mod call;
mod chat;
mod client_features;
mod elicitor;
mod era_memo;
mod error;
mod hub;
mod metrics;
mod policy_gate;
mod policy_rules;
mod primitive_tools;
mod progress;
mod registry;
mod server_actor;
mod server_settings;
mod server_supervisor;
mod sha256;
mod state_file;
mod summarizer;
mod task_journal;
mod tickets;
mod tool_search;
mod trace_context;
mod warden;

pub use approval_queue::{ApprovalQueue, QueueError};
pub use approver::{
    ActorApprover, ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, AutoApprover, DenyingApprover,
    GrantRequest,
};
pub use call::describe::DESCRIBE_TOOL;
pub use call::forward::ServerRequest;
pub use call::CallOptions;
pub use client_features::{CallingClient, ClientOffers, Root};
pub use elicitor::{ActorElicitor, ElicitationAnswer, ElicitationRequest, Elicitor, Refused};
pub use tool_search::{FoundTool, CALL_TOOL, FIND_TOOLS};
// The config a host loads to start Warden (the whole schema is `warden_config`).
pub use audit::{AuditRecord, AuditSink, Decision, LeakNote};
pub use error::{CallError, GrantError};
pub use hub::ServerPlan;
pub use metrics::{Metrics, Outcome};
pub use policy_gate::ApprovalOutcome;
pub use policy_rules::{AgentRules, ConfiguredApprover, PolicyRules};
pub use progress::{CallLogs, LogSink, Progress, ProgressSink};
pub use registry::{ServerOffers, ServerState, ServerStatus, Snapshot, ToolEntry};
pub use server_actor::ServerNotice;
pub use server_settings::{ServerSettings, ShapedTools, ToolShaping};
pub use summarizer::{SummarySettings, SummaryView};
pub use task_journal::LeftTask;
pub use trace_context::continue_trace;
pub use warden::{
    AttachError, Changes, ProfileChoice, Reconnections, ReloadError, ReloadReport, Scope, ServerSpec, StartError,
    ToolChanges, ToolPolicyRow, Warden, WardenBuilder,
};
pub use warden_config::{ConfigError, CrashRetry, Discovered, OAuthConfig, ProtocolChoice, WardenConfig};
// What a host needs to use the handle, so that it depends on this crate only.
pub use primitive_tools::PrimitiveTool;
pub use warden_policy::{Grant, RenderedResult, Risk};
// OAuth: a host can run the login itself (its own browser, its own UI).
pub use warden_protocol::{AuthFailure, Authorizer, LoggedIn, LoginUi, OAuthError, AUTH_REQUIRED};
pub use warden_protocol::{
    CallToolResult, ContentBlock, ElicitAnswerError, ElicitModes, ElicitReply, ElicitRequest, Field, FieldKind,
    FormSchema, Tool, ToolAnnotations,
};
