//! The handshake's answer and tool discovery: `initialize` checked,
//! `notifications/initialized` sent (the modern revision's
//! `server/discover` is in `era.rs`), `tools/list` paged through, and
//! re-listed when the server says its list changed.

use ractor::ActorRef;
use serde_json::json;
use serde_json::value::RawValue;
use tokio::task::JoinHandle;
use warden_protocol::{
    ErrorCode, ErrorObject, InitializeResult, ListToolsResult, Message, Tool, SUPPORTED_PROTOCOL_VERSIONS,
};

use crate::server_settings::MAX_LIST_PAGES;

use super::{decode, Pending, Phase, ServerActorState, ServerEvent, ServerMsg};

/// The tool list being read.
#[derive(Default)]
pub(super) struct Listing {
    /// A `tools/list` run is under way.
    pub(super) running: bool,
    /// Bumped by each `list_changed`: a run that finds it moved starts over.
    pub(super) generation: u64,
}

/// This start of the server: which attempt, its timer, its trace span.
pub(super) struct Startup {
    /// 0 for the first start, N for the Nth restart in a row.
    pub(super) attempt: u32,
    /// Runs out at `startup_timeout_secs`.
    pub(super) timer: Option<JoinHandle<()>>,
    /// From connecting to the first tool list (ends when dropped).
    pub(super) span: Option<tracing::Span>,
}

impl Startup {
    /// Start number `attempt`, not begun.
    pub(super) fn of(attempt: u32) -> Startup {
        Startup { attempt, timer: None, span: None }
    }

    /// The first tool list, of `tools` tools, is in: the timer stops and
    /// the span ends with the count.
    fn ready(&mut self, tools: usize) {
        if let Some(span) = self.span.take() {
            span.record("warden.tools", tools);
        }
        self.stop();
    }

    /// The server is ready, or down: no timer, the span ended.
    pub(super) fn stop(&mut self) {
        if let Some(timer) = self.timer.take() {
            timer.abort();
        }
        self.span = None;
    }
}

impl ServerActorState {
    pub(super) fn initialized(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        forced: Option<&'static str>,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        let info = match outcome {
            Ok(result) => match decode::<InitializeResult>(&result) {
                Ok(info) => info,
                Err(error) => {
                    return self.fail(myself, format!("its answer to `initialize` is malformed: {error}"), true)
                }
            },
            Err(error) if error.code == ErrorCode::ANSWER_TOO_LARGE => {
                return self.fail(myself, format!("its `initialize` answer {}", error.message), true)
            }
            Err(error) if self.initialize_refused_as_modern(myself, &error) => return,
            Err(error) => {
                return self.fail(
                    myself,
                    format!("it refused `initialize`: {} (JSON-RPC error {})", error.message, error.code),
                    true,
                )
            }
        };
        let spoken = info.protocol_version.as_str();
        let refusal = match forced {
            Some(forced) if spoken != forced => Some(format!(
                "it answered protocol version '{spoken}' though `protocol_version = \"{forced}\"`; \
                 set `protocol_version = \"auto\"` or the version it speaks"
            )),
            _ if !SUPPORTED_PROTOCOL_VERSIONS.contains(&spoken) => Some(format!(
                "it answered protocol version '{spoken}', which Warden does not speak (Warden speaks {})",
                super::era::spoken_versions()
            )),
            _ => None,
        };
        if let Some(reason) = refusal {
            return self.fail(myself, reason, true);
        }
        self.send(Message::notification("notifications/initialized", None));
        self.begin_discovery(info);
    }

    /// The server said who it is and what it can do (`initialize`, or
    /// `server/discover` for a modern one): report it and read its tools.
    pub(super) fn begin_discovery(&mut self, info: InitializeResult) {
        self.phase = Phase::Discovering;
        self.task_support.tools =
            info.capabilities.extra.get("tasks").and_then(|tasks| tasks.pointer("/requests/tools/call")).is_some();
        let has_tools = info.capabilities.tools.is_some();
        self.note_tools_announced(info.capabilities.tools.as_ref());
        let pid = self.connection.as_ref().and_then(|connection| connection.pid());
        self.report(ServerEvent::Initialized { info: Box::new(info), pid });
        if has_tools {
            self.list_tools(None, Vec::new(), 0);
        } else {
            self.tools_discovered(Vec::new());
        }
    }

    pub(super) fn list_tools(&mut self, cursor: Option<String>, tools: Vec<Tool>, pages: usize) {
        self.listing.running = true;
        let params = cursor.map(|cursor| json!({ "cursor": cursor }));
        let pending = Pending::ListTools { generation: self.listing.generation, tools, pages: pages + 1 };
        self.request("tools/list", params, pending);
    }

    pub(super) fn tools_page(
        &mut self,
        myself: &ActorRef<ServerMsg>,
        generation: u64,
        mut tools: Vec<Tool>,
        pages: usize,
        outcome: Result<Box<RawValue>, ErrorObject>,
    ) {
        if generation != self.listing.generation {
            // The list changed while this run read it: start over, once for
            // however many notifications came in the meantime.
            return self.list_tools(None, Vec::new(), 0);
        }
        let page = match outcome.map(|result| decode::<ListToolsResult>(&result)) {
            Ok(Ok(page)) => page,
            Ok(Err(error)) => {
                return self.listing_failed(myself, format!("its `tools/list` answer is malformed: {error}"))
            }
            Err(error) if error.code == ErrorCode::ANSWER_TOO_LARGE => {
                return self.listing_failed(myself, format!("its `tools/list` answer {}", error.message))
            }
            Err(error) => {
                return self.listing_failed(
                    myself,
                    format!("it refused `tools/list`: {} (JSON-RPC error {})", error.message, error.code),
                )
            }
        };
        self.note_tools_ttl(pages == 1, &page.extra);
        tools.extend(page.tools);
        match page.next_cursor {
            Some(cursor) if pages < MAX_LIST_PAGES => self.list_tools(Some(cursor), tools, pages),
            next => {
                if next.is_some() {
                    tracing::warn!(server = %self.name, "MCP '{}': stopped reading tools/list after {MAX_LIST_PAGES} pages", self.name);
                }
                self.tools_read(myself);
                self.tools_discovered(tools);
            }
        }
    }

    pub(super) fn listing_failed(&mut self, myself: &ActorRef<ServerMsg>, reason: String) {
        self.listing.running = false;
        self.tools_not_read();
        if self.phase == Phase::Ready {
            // The old list stays; the next list_changed tries again.
            tracing::warn!(server = %self.name, "MCP '{}': refreshing tools failed: {reason}", self.name);
        } else {
            self.fail(myself, reason, true);
        }
    }

    pub(super) fn tools_discovered(&mut self, tools: Vec<Tool>) {
        self.listing.running = false;
        // `enabled_tools` / `disabled_tools` / `rename`: a tool filtered out
        // is never registered, so no caller anywhere can see or call it; a
        // renamed one is registered under its new name only.
        let listed = tools.len();
        let shaped = self.settings.tools.shape(&self.name, tools);
        if shaped.tools.len() != listed {
            tracing::debug!(server = %self.name, "{} of {listed} tools filtered out by the config", listed - shaped.tools.len());
        }
        if self.phase != Phase::Ready {
            self.phase = Phase::Ready;
            self.startup.ready(shaped.tools.len());
        }
        self.open_lane();
        let waiting = self.take_list_waiters();
        self.report(ServerEvent::ToolsDiscovered { tools: shaped, waiting });
    }

    /// Marks the list stale. A run already under way notices at its next
    /// page and starts over; otherwise a new run starts now. Either way a
    /// burst of notifications costs one more listing, not one each.
    pub(super) fn refresh_tools(&mut self) {
        if matches!(self.phase, Phase::Initializing | Phase::Down) {
            return; // The first listing comes after the handshake anyway.
        }
        self.listing.generation += 1;
        tracing::debug!(server = %self.name, generation = self.listing.generation, "tool list changed");
        if !self.listing.running {
            self.list_tools(None, Vec::new(), 0);
        }
    }
}
