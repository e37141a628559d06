//! The MCP clients people already use, and moving their servers under
//! Warden: `warden clients`, `warden import`, `warden install` and
//! `warden uninstall` (the commands are in `commands/import.rs` and
//! `commands/install.rs`).
//!
//! - [`known`]: each client, where its config lives on this OS, and the
//!   shape of its file.
//! - [`client_file`]: one client's file — the servers it has, whether one
//!   of them is Warden, and the file rewritten so Warden replaces them.
//! - [`merge`]: Warden's own config with servers added, edited in place
//!   (comments and layout kept), conflicts named.
//! - [`entry`]: the `warden mcp` entry a client gets.
//! - `goose_yaml`: goose's YAML rewritten.
//! - [`jsonc`]: JSON with comments, as Zed and VS Code write it.
//! - [`diff`]: what `--dry-run` prints.
//! - [`files`]: files written whole or not at all, their mode kept.
//! - [`record`]: what an install did, for uninstall.
//!
//! Values move as written: a `${VAR}` reference in the client's file stays
//! a reference in Warden's (the secret stays in the environment), never
//! the value it expands to.

pub(crate) mod client_file;
pub(crate) mod diff;
pub(crate) mod entry;
pub(crate) mod files;
mod goose_yaml;
pub(crate) mod jsonc;
pub(crate) mod known;
pub(crate) mod merge;
pub(crate) mod record;
