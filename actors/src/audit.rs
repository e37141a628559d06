//! The audit record of every call: who asked for what, what policy said,
//! who decided, what leak policing did, and how it ended.
//!
//! Warden's security story is that a call runs only when policy and, where
//! needed, a person allow it; an operator must be able to show afterwards
//! who was allowed to do what. The call pipeline fills one [`AuditRecord`]
//! per call as it goes (its record lives in the call's metrics guard, so a
//! call its caller drops is recorded too, as `cancelled`) and hands it to
//! the [`AuditSink`] the host attached: the daemon writes JSON Lines
//! (`audit.jsonl`), an embedded host may keep them however it likes.
//!
//! What a record never holds: a secret's value (leaks are named by kind and
//! JSON pointer), and the arguments themselves unless the host asked for
//! them redacted — by default only their SHA-256 digest, which proves what
//! was sent without keeping it.

use std::borrow::Cow;
use std::time::{SystemTime, UNIX_EPOCH};

use serde::Serialize;
use serde_json::Value;
use warden_policy::{LeakScanner, ResolvedPolicy};
use warden_protocol::{json_len_hint, run_heavy};

use crate::error::CallError;

/// Where audit records go.
pub trait AuditSink: Send + Sync {
    /// One call, ended. Called on the caller's task: write quickly (buffer,
    /// or hand off), never block on a person.
    fn record(&self, record: &AuditRecord);

    /// Whether records carry the arguments (secrets redacted) besides their
    /// digest.
    fn with_arguments(&self) -> bool {
        false
    }
}

/// One call as the audit log keeps it.
#[derive(Debug, Clone, Serialize)]
pub struct AuditRecord {
    /// When it ended, in seconds since the Unix epoch.
    pub time: f64,
    /// The agent it was made for; none: the host's own call.
    pub agent: Option<String>,
    /// Through what it came (`bridge`, `front: agent 'coder'`, ...); none:
    /// the embedding host.
    pub via: Option<String>,
    /// The server, once the name resolved to one.
    pub server: Option<String>,
    /// The tool, by Warden's name, as called.
    pub tool: String,
    /// The policy it ran under, each field with its source.
    pub policy: Option<ResolvedPolicy>,
    /// Who or what let it run, or stopped it.
    pub decision: Decision,
    /// What leak policing found, by kind and place (never the value).
    pub leaks: Vec<LeakNote>,
    /// SHA-256 of the arguments' JSON text, hex.
    pub arguments_sha256: String,
    /// The arguments with secrets redacted, when the sink asks for them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub arguments: Option<Value>,
    /// How long it took, in milliseconds.
    pub duration_ms: f64,
    /// How it ended (the metrics' `outcome`).
    pub outcome: &'static str,
    /// Why it failed, for a call that did not get a result.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
}

/// Who or what decided that a call runs (or not).
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum Decision {
    /// None was made: the call stopped before (unknown tool, bad arguments,
    /// the agent's allowlist), or its caller left first.
    None,
    /// The policy needs no approval for it.
    NotNeeded,
    /// Auto-approval let it through.
    Auto {
        /// Which: the agent's, the config's, the session's.
        why: Cow<'static, str>,
    },
    /// A grant covered it.
    Grant {
        /// The grant's id.
        grant: u64,
    },
    /// A person (or the host's approver) approved it.
    Approved {
        /// Who: the approval queue, the terminal, a client, the host.
        by: String,
        /// The grant handed out with it, if any.
        grant: Option<u64>,
    },
    /// A person (or the host's approver) denied it.
    Denied {
        /// Who.
        by: String,
        /// What they said.
        reason: String,
    },
    /// Nobody answered in time.
    TimedOut {
        /// How long it waited, in seconds.
        after_secs: f64,
    },
    /// It needed approval and nobody could give it.
    NoApprover,
    /// A secret in its arguments stopped it before any decision.
    Blocked,
}

/// A secret leak policing acted on.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LeakNote {
    /// The secret's kind (a known secret's label, or a shape).
    pub kind: String,
    /// The JSON pointer of the string it was in (in the arguments or the
    /// result).
    pub pointer: String,
    /// `blocked` (in the arguments: the call stopped), `redacted` or
    /// `withheld` (in the result).
    pub action: &'static str,
}

/// What the pipeline learns of a call as it goes, before it ends.
#[derive(Debug, Default)]
pub(crate) struct AuditDraft {
    pub(crate) agent: Option<String>,
    pub(crate) via: Option<String>,
    pub(crate) tool: String,
    pub(crate) arguments_sha256: String,
    pub(crate) arguments: Option<Value>,
    pub(crate) policy: Option<ResolvedPolicy>,
    pub(crate) decision: Option<Decision>,
    pub(crate) leaks: Vec<LeakNote>,
}

impl AuditDraft {
    /// A call of `tool` with `arguments`: digested, and kept redacted when
    /// `keep` says so.
    pub(crate) fn new(tool: &str, arguments: &Value, keep: Option<&LeakScanner>) -> AuditDraft {
        // Large arguments are digested off the worker (`run_heavy`).
        let (sha, arguments) = run_heavy(json_len_hint(arguments), || {
            let sha = crate::sha256::sha256_json_hex(arguments);
            let arguments = keep.map(|scanner| {
                let mut shown = arguments.clone();
                scanner.redact_json(&mut shown);
                shown
            });
            (sha, arguments)
        });
        AuditDraft { tool: tool.to_string(), arguments_sha256: sha, arguments, ..AuditDraft::default() }
    }

    /// The record of the call, ended so.
    pub(crate) fn finish(
        self,
        server: Option<String>,
        duration_ms: f64,
        outcome: &'static str,
        error: Option<String>,
    ) -> AuditRecord {
        AuditRecord {
            time: SystemTime::now().duration_since(UNIX_EPOCH).map_or(0.0, |since| since.as_secs_f64()),
            agent: self.agent,
            via: self.via,
            server,
            tool: self.tool,
            policy: self.policy,
            decision: self.decision.unwrap_or(Decision::None),
            leaks: self.leaks,
            arguments_sha256: self.arguments_sha256,
            arguments: self.arguments,
            duration_ms,
            outcome,
            error,
        }
    }
}

/// The decision a call's error says was made (none for errors that came
/// before any decision, or after it).
pub(crate) fn decision_of(error: &CallError) -> Option<Decision> {
    Some(match error {
        CallError::ApprovalDenied { by, reason, .. } => Decision::Denied { by: by.clone(), reason: reason.clone() },
        CallError::ApprovalTimedOut { after, .. } => Decision::TimedOut { after_secs: after.as_secs_f64() },
        CallError::NoApprover { .. } => Decision::NoApprover,
        CallError::SecretInArguments { .. } => Decision::Blocked,
        _ => return None,
    })
}
