//! Warden's actor system, and the [`Warden`] handle hosts embed.
//!
//! ```text
//! Warden (handle held by the host)
//!  └─ Hub                      root: spawns and supervises the rest, owns shutdown
//!      ├─ Registry             namespaced tool table, collisions, server states;
//!      │                       publishes immutable snapshots the handle reads
//!      ├─ Summarizer           optional (`[summary]`): one-sentence tool summaries
//!      │                       written by a model, cached on disk (spawned by the handle)
//!      └─ ServerSupervisor × N one per server: restarts with backoff
//!          └─ ServerActor      owns its transport, handshake, discovery,
//!                              calls in flight, timeouts
//! ```
//!
//! - [`config`](WardenConfig): the TOML schema, loaded with the `config`
//!   crate, checked strictly, `${VAR}` expanded.
//! - [`ServerSupervisor`]: one server kept alive across crashes.
//! - [`ServerActor`]: one connection's life and its calls.
//! - [`ServerSettings`]: limits, timeouts, restart schedule, crash retry.
//! - [`Registry`]: the one owner of names and states.
//! - [`SummarySettings`]: background tool summaries and their cache.
//! - [`Hub`]: the root of the supervision tree.
//! - [`Wrapper`]: a server's resources and prompts as tools.
//! - [`Warden`]: start, list tools, call, status, settle, reload, shut down.
//! - [`CallError`]: every way a call can fail, each with its own advice.
//!
//! A call: `Warden::call_tool` → the latest Registry snapshot resolves the
//! name (unknown, still starting and failed are different errors; a
//! restarting server is waited for) → the server's actor writes the request
//! and parks it → the transport's reader casts the reply back → the caller
//! gets the result, or, after a crash, the call is repeated when that is safe.

mod approval_queue;
mod approver;
mod call;
mod error;
mod hub;
mod policy_gate;
mod policy_rules;
mod progress;
mod registry;
mod server_actor;
mod server_settings;
mod server_supervisor;
mod summarizer;
mod warden;
mod wrappers;

pub use approval_queue::{ApprovalQueue, QueueError};
pub use approver::{
    ActorApprover, ApprovalAnswer, ApprovalDecision, ApprovalRequest, Approver, AutoApprover, DenyingApprover,
    GrantRequest,
};
pub use call::describe::DESCRIBE_TOOL;
pub use call::CallOptions;
// The config a host loads to start Warden (the whole schema is `warden_config`).
pub use error::{CallError, GrantError};
pub use hub::{Hub, HubArgs, HubMsg, ServerPlan};
pub use policy_gate::{ApprovalOutcome, GateArgs, GateMsg, GateView, PolicyGate};
pub use policy_rules::{AgentRules, ConfiguredApprover, PolicyRules};
pub use progress::{Progress, ProgressSink};
pub use registry::{Registry, RegistryMsg, ServerState, ServerStatus, Snapshot, ToolEntry};
pub use server_actor::{ServerActor, ServerArgs, ServerMsg, ToolCall};
pub use server_settings::ServerSettings;
pub use server_supervisor::{ServerSupervisor, SupervisorArgs, SupervisorMsg};
pub use summarizer::{SummarySettings, SummaryView};
pub use warden::{
    AgentScope, ReloadError, ReloadReport, ServerSpec, StartError, ToolChanges, ToolPolicyRow, Warden, WardenBuilder,
};
pub use warden_config::{ConfigError, CrashRetry, Discovered, WardenConfig};
// What a host needs to use the handle, so that it depends on this crate only.
pub use warden_policy::{Grant, RenderedResult, Risk};
pub use warden_protocol::{CallToolResult, ContentBlock, Tool, ToolAnnotations};
pub use wrappers::Wrapper;
