//! The CLI's side of the bridge: find the daemon, start one if needed, ask.
//!
//! - [`find`]: read the lockfile, tell a live daemon from a stale file,
//!   start a detached daemon when none runs and wait (bounded) for it.
//! - [`spawn`]: how a daemon is started detached, and its log read back.
//! - [`connection`]: one connection, requests and answers.

mod connection;
mod find;
mod spawn;

pub(crate) use connection::{Client, ClientError};
pub(crate) use find::{adopt, connect, running};
