//! The daemon: `warden serve`, and the files clients find it by.
//!
//! ```text
//! CLI / any client ──TCP, bridge protocol──▶ listener ─▶ connection × N ─▶ ops ─▶ Warden
//!         │                                                                 (actors, servers)
//!         └── reads daemon.json (address, token) in the state directory
//! ```
//!
//! - [`serve`]: the daemon's life: single-instance lock, config, listener,
//!   lockfile, serving, graceful shutdown.
//! - [`admission`]: who gets a connection slot: the token proven in time,
//!   oldest strangers evicted first, idle connections closed.
//! - [`connection`]: one client connection; ordered answers, limits;
//!   [`bridge_metrics`]: its requests and connections, counted.
//! - [`ops`]: what each operation does with the `Warden` handle;
//!   [`names`] indexes tools by server and tool name for it.
//! - [`approvals`], [`questions`]: what waits for a person in the
//!   daemon's queue — calls for approval, servers' questions — answered
//!   over the bridge.
//! - [`idle`]: the idle timer; calls in flight count as activity.
//! - [`log_file`]: `daemon.log` rotated by size (`[daemon] log_max_mb`).
//! - [`shutdown`]: the one stop switch (signals, `shutdown` op, idle).
//! - [`reload`]: live config reload (the `reload` op and SIGHUP).
//! - [`workers`]: the threads it runs on (`[daemon] workers`), read before
//!   the runtime is built.
//! - [`state_dir`], [`lockfile`], [`pid_lock`], [`token`]: the daemon's
//!   files and its secret, shared with the client side.
//!
//! The wire types are `warden_protocol::bridge`; the protocol is described
//! for client authors in `docs/bridge-protocol.md`.

mod admission;
mod approvals;
mod audit_log;
mod bridge_metrics;
mod connection;
mod elsewhere;
mod idle;
mod left_tasks;
pub(crate) mod lockfile;
mod log_file;
mod names;
mod ops;
pub(crate) mod pid_lock;
mod questions;
mod reload;
mod serve;
pub(crate) use serve::CannotListen;
mod shutdown;
pub(crate) mod state_dir;
mod token;
mod unix_socket;
mod workers;

pub(crate) use log_file::{shift as shift_log, RotatingLog};
pub(crate) use serve::run;
pub(crate) use workers::workers;
