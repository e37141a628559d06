//! MCP's log levels: what `logging/setLevel` (before 2026-07-28) and a
//! request's `io.modelcontextprotocol/logLevel` (since) ask for, and what a
//! `notifications/message` says it is.

use serde_json::Value;

/// MCP's log levels (RFC 5424's), least severe first.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum LogLevel {
    /// `debug`.
    Debug,
    /// `info`.
    Info,
    /// `notice`.
    Notice,
    /// `warning`.
    Warning,
    /// `error`.
    Error,
    /// `critical`.
    Critical,
    /// `alert`.
    Alert,
    /// `emergency`.
    Emergency,
}

impl LogLevel {
    const ALL: [LogLevel; 8] = [
        LogLevel::Debug,
        LogLevel::Info,
        LogLevel::Notice,
        LogLevel::Warning,
        LogLevel::Error,
        LogLevel::Critical,
        LogLevel::Alert,
        LogLevel::Emergency,
    ];

    /// The level's name on the wire.
    pub fn name(self) -> &'static str {
        match self {
            LogLevel::Debug => "debug",
            LogLevel::Info => "info",
            LogLevel::Notice => "notice",
            LogLevel::Warning => "warning",
            LogLevel::Error => "error",
            LogLevel::Critical => "critical",
            LogLevel::Alert => "alert",
            LogLevel::Emergency => "emergency",
        }
    }

    /// The level named `name`, if it is one.
    pub fn parse(name: &str) -> Option<LogLevel> {
        LogLevel::ALL.into_iter().find(|level| level.name() == name)
    }

    /// The level of a `notifications/message`'s params (`info` if unsaid
    /// or unknown).
    pub fn of(params: Option<&Value>) -> LogLevel {
        params
            .and_then(|params| params.get("level"))
            .and_then(Value::as_str)
            .and_then(LogLevel::parse)
            .unwrap_or(LogLevel::Info)
    }
}
