//! Which MCP revision a connection speaks, and opening it.
//!
//! A server of the 2026-07-28 ("modern") revision has no handshake: it is
//! asked `server/discover`, and every request carries the [`Envelope`].
//! Servers before it ("legacy") answer `initialize`. With
//! `protocol_version = "auto"` (the default) a stdio server is probed with
//! `server/discover` first, and only positive evidence keeps it modern
//! ([`judge_discover`]): any other error, or silence for [`PROBE_WAIT`],
//! falls back to `initialize` on the same connection, so an old server
//! that never heard of the probe still starts (a host that assumed the new
//! revision broke old servers; this must not). What was found is reported
//! to the supervisor, which hands it to the next actor after a restart: a
//! legacy server is probed once per Warden, not once per start.
//!
//! A forced version skips the probe: a legacy one goes straight to
//! `initialize` (and the server must answer that version), a modern one
//! must answer `server/discover` or the server fails with a reason.

use std::time::Duration;

use ractor::ActorRef;
use serde_json::value::RawValue;
use serde_json::{json, Value};
use tokio::task::JoinHandle;
use tokio::time::Instant;
use warden_config::ProtocolChoice;
use warden_protocol::{
    is_modern, judge_discover, unsupported_versions, DiscoverResult, Envelope, ErrorObject, Message, RequestId,
    Verdict, LATEST_MODERN_VERSION, LATEST_PROTOCOL_VERSION, MODERN_PROTOCOL_VERSIONS, SUPPORTED_PROTOCOL_VERSIONS,
};

use super::{spawn_timer, Pending, ServerActorState, ServerEvent, ServerMsg, ToolCall};

/// How long a probe waits before taking silence for a legacy server
/// (some legacy servers ignore requests that come before `initialize`).
pub(super) const PROBE_WAIT: Duration = Duration::from_secs(5);

/// What a server was found to speak; its supervisor keeps it across
/// restarts.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum KnownEra {
    /// It answers `initialize`; no probe next time.
    Legacy,
    /// It answered `server/discover`.
    Modern,
}

/// What this connection speaks.
#[derive(Debug, Default)]
pub(super) enum Spoken {
    /// Not decided yet (a probe is out) or legacy: requests go as they are.
    #[default]
    Plain,
    /// Modern: every request carries the envelope.
    Modern(Envelope),
}

/// Why a `server/discover` was sent, which decides what its answer means.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Probe {
    /// `auto`'s first probe: anything but a modern answer falls back.
    First,
    /// The server named a mutual version: a second and last probe.
    Again,
    /// `protocol_version` names a modern version: it must be answered.
    Forced,
}

/// Which revision the connection speaks, what earlier ones found, and the
/// timer that takes a probe's silence for a legacy server.
pub(super) struct Era {
    /// What the connection speaks, once known.
    pub(super) spoken: Spoken,
    /// What this or an earlier connection found the server speaks.
    pub(super) known: Option<KnownEra>,
    /// Takes silence after a `server/discover` probe for a legacy server.
    pub(super) probe_timer: Option<JoinHandle<()>>,
}

impl Era {
    /// A connection not yet spoken to; `known` is what an earlier one found.
    pub(super) fn of(known: Option<KnownEra>) -> Era {
        Era { spoken: Spoken::Plain, known, probe_timer: None }
    }

    /// The probe was answered, or the actor stops.
    pub(super) fn stop_probe_timer(&mut self) {
        if let Some(timer) = self.probe_timer.take() {
            timer.abort();
        }
    }
}

impl ServerActorState {
    /// Opens the connection in the revision chosen: probe, or handshake.
    pub(super) fn open(&mut self, myself: &ActorRef<ServerMsg>) {
        match self.settings.protocol {
            ProtocolChoice::Version(version) if is_modern(version) => self.discover(myself, version, Probe::Forced),
            ProtocolChoice::Version(version) => self.initialize(Some(version)),
            ProtocolChoice::Auto if !self.connector.probes_era() || self.era.known == Some(KnownEra::Legacy) => {
                self.initialize(None)
            }
            ProtocolChoice::Auto => self.discover(myself, LATEST_MODERN_VERSION, Probe::First),
        }
    }

    /// Sends `server/discover` in `version`'s envelope.
    fn discover(&mut self, myself: &ActorRef<ServerMsg>, version: &'static str, probe: Probe) {
        let envelope = self.envelope(version);
        let id = self.fresh_id();
        self.requests.pending.insert(id, Pending::Discover { version, probe });
        self.send(Message::request(RequestId::Number(id), "server/discover", Some(envelope.stamp(None))));
        if probe == Probe::First {
            let wait = self.probe_wait();
            self.era.probe_timer =
                Some(spawn_timer(myself, Instant::now() + wait, move || ServerMsg::ProbeUnanswered { id }));
        }
    }

    /// How long the first probe waits: [`PROBE_WAIT`], or half the
    /// startup timeout when that is shorter.
    fn probe_wait(&self) -> Duration {
        PROBE_WAIT.min(self.settings.startup_timeout / 2)
    }

    /// Sends `initialize`, asking for `forced` or the newest legacy version.
    pub(super) fn initialize(&mut self, forced: Option<&'static str>) {
        let params = json!({
            "protocolVersion": forced.unwrap_or(LATEST_PROTOCOL_VERSION),
            // Only what Warden can answer: elicitation when someone is
            // there to ask, roots when there are roots to tell.
            "capabilities": self.client.capabilities(&self.name),
            "clientInfo": client_info(),
        });
        self.request("initialize", Some(params), Pending::Initialize { forced });
    }

    /// The envelope of Warden's requests to this server in `version`.
    fn envelope(&self, version: &'static str) -> Envelope {
        Envelope::new(version, self.client.capabilities(&self.name), client_info())
    }

    /// The probe went unanswered: a legacy server that ignores what comes
    /// before `initialize`. A late answer finds nothing pending.
    pub(super) fn probe_unanswered(&mut self, id: i64) {
        if matches!(self.requests.pending.get(&id), Some(Pending::Discover { .. })) {
            self.requests.pending.remove(&id);
            self.era.probe_timer = None;
            let secs = self.probe_wait().as_secs_f64();
            tracing::info!(server = %self.name, "MCP '{}': no answer to `server/discover` within {secs} s; speaking to it through `initialize`", self.name);
            self.learned(KnownEra::Legacy);
            self.initialize(None);
        }
    }

    /// The answer to a `server/discover`.
    pub(super) fn discovered(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        asked: &'static str,
        probe: Probe,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        self.era.stop_probe_timer();
        match judge_discover(outcome.as_ref().map(AsRef::as_ref)) {
            Verdict::Modern { version, result } => self.speak_modern(version, *result),
            Verdict::AskAgain { version } if probe == Probe::First => self.discover(myself, version, Probe::Again),
            Verdict::AskAgain { .. } => {
                let reason = format!("it refused `server/discover` in {asked}, a version it had named");
                self.fail(myself, reason, true)
            }
            Verdict::Incompatible { supported } => {
                let reason = format!(
                    "it speaks only MCP {}, none of which Warden speaks (Warden speaks {})",
                    supported.join(", "),
                    spoken_versions()
                );
                self.fail(myself, reason, true)
            }
            Verdict::Legacy { evidence } if probe == Probe::Forced => {
                let reason = format!(
                    "`protocol_version = \"{asked}\"`, but it does not speak that revision: {evidence}; \
                     set `protocol_version = \"auto\"` or a version it speaks"
                );
                self.fail(myself, reason, true)
            }
            Verdict::Legacy { evidence } => {
                tracing::info!(server = %self.name, "MCP '{}': an `initialize`-era server ({evidence})", self.name);
                self.learned(KnownEra::Legacy);
                self.initialize(None);
            }
        }
    }

    /// `initialize` was refused with "unsupported protocol version" naming
    /// a modern version: the probe timed out on a slow server that then
    /// took it. One more probe, in that version. `false`: not that case.
    pub(super) fn initialize_refused_as_modern(&mut self, myself: &ActorRef<ServerMsg>, error: &ErrorObject) -> bool {
        let version =
            unsupported_versions(error).and_then(|supported| warden_protocol::mutual_modern_version(&supported));
        match version {
            Some(version) if self.settings.protocol == ProtocolChoice::Auto => {
                self.discover(myself, version, Probe::Again);
                true
            }
            _ => false,
        }
    }

    fn speak_modern(&mut self, version: &'static str, result: DiscoverResult) {
        tracing::debug!(server = %self.name, version, "speaking MCP {version} (no handshake)");
        // The tasks extension, when the server offers it: Warden takes a
        // task in place of any result (`tasks.rs`).
        self.task_support.extension = result
            .capabilities
            .extra
            .get("extensions")
            .is_some_and(|extensions| extensions.get(warden_protocol::TASKS_EXTENSION).is_some());
        let mut capabilities = self.client.capabilities(&self.name);
        if let (true, Some(capabilities)) = (self.task_support.extension, capabilities.as_object_mut()) {
            capabilities.insert("extensions".into(), json!({ warden_protocol::TASKS_EXTENSION: {} }));
        }
        self.era.spoken = Spoken::Modern(Envelope::new(version, capabilities, client_info()));
        self.learned(KnownEra::Modern);
        let info = result.into_initialize_result(version);
        self.listen(&info.capabilities);
        self.begin_discovery(info);
    }

    /// The process ended while the probe was out: a legacy server that
    /// exits on a request it does not know. The next start goes straight
    /// to `initialize`.
    pub(super) fn closed_while_probing(&mut self) {
        let probing = self
            .requests
            .pending
            .values()
            .any(|pending| matches!(pending, Pending::Discover { probe: Probe::First, .. }));
        if probing {
            tracing::info!(server = %self.name, "MCP '{}': it stopped on the `server/discover` probe; it will be started through `initialize`", self.name);
            self.learned(KnownEra::Legacy);
        }
    }

    /// Tells the operator, once, when a tool failed asking the pre-2026
    /// way (`lane/modern.rs`).
    pub(super) fn note_old_style_question(&self, outcome: &Result<Box<RawValue>, ErrorObject>) {
        if self.is_modern() {
            self.lane.note_old_style_question(match outcome {
                Ok(result) => result.get(),
                Err(error) => error.message.as_str(),
            });
        }
    }

    fn learned(&mut self, era: KnownEra) {
        if self.era.known != Some(era) {
            self.era.known = Some(era);
            self.report(ServerEvent::EraLearned(era));
        }
    }

    /// `params` as this connection sends them: with the envelope when modern.
    pub(super) fn stamped(&self, params: Option<Value>) -> Option<Value> {
        match &self.era.spoken {
            Spoken::Plain => params,
            Spoken::Modern(envelope) => Some(envelope.stamp(params)),
        }
    }

    /// The answer, made here, to a request 2026-07-28 replaced: a log
    /// level is no longer set on the connection but asked for with every
    /// request, so `logging/setLevel` (a front relaying its clients'
    /// levels) becomes the envelope's `logLevel`; a resource subscription
    /// is a URI in the `subscriptions/listen` filter (`subscription.rs`).
    /// `None`: send it.
    pub(super) fn answered_for_modern(&mut self, call: &ToolCall) -> Option<Box<RawValue>> {
        if !self.is_modern() {
            return None;
        }
        if matches!(call.method, "resources/subscribe" | "resources/unsubscribe") {
            return Some(self.resource_subscription(call));
        }
        let Spoken::Modern(envelope) = &mut self.era.spoken else { return None };
        if call.method != "logging/setLevel" {
            return None;
        }
        let level = serde_json::from_str::<Value>(call.params.get())
            .ok()
            .and_then(|params| params.get("level").and_then(Value::as_str).map(str::to_string));
        tracing::debug!(server = %self.name, level = ?level, "log level asked for with every request (2026-07-28)");
        envelope.set_log_level(level.as_deref());
        self.lane.set_envelope(envelope.clone());
        Some(serde_json::value::to_raw_value(&json!({})).expect("a JSON value always serialises"))
    }

    /// The envelope of a modern connection's requests.
    pub(super) fn spoken_envelope(&self) -> Option<&Envelope> {
        match &self.era.spoken {
            Spoken::Modern(envelope) => Some(envelope),
            Spoken::Plain => None,
        }
    }

    /// Whether the connection speaks the modern revision.
    pub(super) fn is_modern(&self) -> bool {
        matches!(self.era.spoken, Spoken::Modern(_))
    }
}

/// Every version Warden speaks, for errors.
pub(super) fn spoken_versions() -> String {
    format!(
        "{}, and {} through `initialize`",
        MODERN_PROTOCOL_VERSIONS.join(", "),
        SUPPORTED_PROTOCOL_VERSIONS.join(", ")
    )
}

/// Who Warden is, to servers.
fn client_info() -> Value {
    json!({"name": "warden", "version": env!("CARGO_PKG_VERSION")})
}
