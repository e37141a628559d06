//! Warden's actor system, and the [`Warden`] handle hosts embed.
//!
//! ```text
//! Warden (handle held by the host)
//!  └─ Hub                 root: spawns and supervises the rest, owns shutdown
//!      ├─ Registry        namespaced tool table, collisions, server states;
//!      │                  publishes immutable snapshots the handle reads
//!      └─ ServerActor × N one per server: owns its transport, handshake,
//!                         discovery, calls in flight, timeouts
//! ```
//!
//! - [`config`](WardenConfig): the TOML schema, loaded with the `config`
//!   crate, checked strictly, `${VAR}` expanded.
//! - [`ServerActor`]: one server's life and its calls.
//! - [`Registry`]: the one owner of names and states.
//! - [`Hub`]: the root of the supervision tree.
//! - [`Warden`]: start, list tools, call, status, settle, shut down.
//! - [`CallError`]: every way a call can fail, each with its own advice.
//!
//! A call: `Warden::call_tool` → the latest Registry snapshot resolves the
//! name (unknown, still starting and failed are different errors) →
//! the server's actor writes the request and parks it → the transport's
//! reader casts the reply back → the caller gets the result.

mod config;
mod error;
mod hub;
mod registry;
mod server_actor;
mod warden;

pub use config::{ConfigError, ServerConfig, WardenConfig, DEFAULT_CALL_TIMEOUT, DEFAULT_STARTUP_TIMEOUT};
pub use error::CallError;
pub use hub::{Hub, HubArgs, HubMsg, ServerPlan};
pub use registry::{Registry, RegistryMsg, ServerState, ServerStatus, Snapshot, ToolEntry};
pub use server_actor::{ServerActor, ServerArgs, ServerMsg, ServerSettings, ToolCall};
pub use warden::{ServerSpec, StartError, Warden};
