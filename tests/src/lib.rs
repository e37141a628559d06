//! Shared pieces of Warden's integration suites.
//!
//! - [`real_servers`]: MCP servers other people wrote, installed at pinned
//!   versions into a cache under `target/`, so the suites test Warden against
//!   the servers users run rather than against Warden's own idea of MCP.
//! - [`bins`]: where the binaries built by this workspace are (the `warden`
//!   CLI, the scriptable `warden-test-server`, the `embed-host` example).
//! - The scriptable test server itself is `src/bin/warden-test-server.rs`,
//!   written from scratch so it shares no code (and no bugs) with Warden.

pub mod bins;
pub mod real_servers;
