//! `protocol_version`: which MCP revision Warden speaks to a server —
//! `auto` (find out, and prefer the newest both speak) or one named.
//!
//! Forcing one is for the server `auto` gets wrong: a legacy server that
//! hangs on the `server/discover` probe (say `2025-11-25` to skip it), or
//! a modern one Warden should not fall back from (`2026-07-28`).

/// The MCP revisions a server may be told to speak, newest first: the
/// 2026-07-28 one without a handshake, and those `initialize` negotiates.
pub const KNOWN_PROTOCOL_VERSIONS: [&str; 5] = ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"];

/// A server's `protocol_version`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum ProtocolChoice {
    /// Probe the server and speak the newest revision both know.
    #[default]
    Auto,
    /// Speak this revision (one of [`KNOWN_PROTOCOL_VERSIONS`]) and no other.
    Version(&'static str),
}

impl ProtocolChoice {
    /// Reads the config spelling; `Err` is the message for the user.
    pub fn parse(text: &str) -> Result<ProtocolChoice, String> {
        if text == "auto" {
            return Ok(ProtocolChoice::Auto);
        }
        KNOWN_PROTOCOL_VERSIONS
            .iter()
            .find(|known| **known == text)
            .map(|known| ProtocolChoice::Version(known))
            .ok_or_else(|| {
                format!(
                    "`protocol_version` must be \"auto\" or one of {}, not \"{text}\"",
                    KNOWN_PROTOCOL_VERSIONS.map(|version| format!("\"{version}\"")).join(", ")
                )
            })
    }
}
