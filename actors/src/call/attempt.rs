//! Step 3 of a call: sending it, across crashes and restarts.
//!
//! For each attempt it reads the Registry's latest snapshot (where that
//! sends it is `attempt/route.rs`):
//!
//! - server running → send the call to its ServerActor;
//! - server restarting → wait for the next snapshot (within the deadline);
//! - server still on its first start → `ServerStarting` at once (retry later);
//! - server failed → `ServerFailed`, with the reason.
//!
//! When the actor answers "gone, not delivered" — or dies before answering
//! at all — the request never reached the old process, so the call goes to
//! the next one. When it was delivered, it is repeated only if the server's
//! `retry_after_crash` allows it for this tool (by default: tools annotated
//! read-only or idempotent); otherwise the caller learns the server crashed
//! mid-call. A 2026-07-28 HTTP server's answer stream that breaks loses
//! the request: it is sent again to the same server under the same rule
//! (at most three times). Every attempt gets only the time left, so no
//! caller waits past its timeout.
//!
//! A caller that stops waiting — its future dropped, a front's client gone
//! — cancels the attempt under way: a guard casts `CancelCall` to the
//! server's actor, which withdraws the call (`notifications/cancelled` to
//! the server, the slot freed, a late answer ignored).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use ractor::rpc::CallResult;
use ractor::{ActorId, RpcReplyPort};
use serde_json::value::RawValue;
use serde_json::{Map, Value};
use tokio::sync::watch;
use tokio::time::Instant;
use tracing::Instrument as _;
use warden_protocol::{run_heavy, CallToolResult};

use super::CallOptions;
use crate::client_features::AskContext;
use crate::error::CallError;
use crate::primitive_tools;
use crate::registry::{Snapshot, ToolEntry};
use crate::server_actor::{Answer, Sending, ServerMsg, ServerRef, ToolCall};
use crate::server_settings::ServerSettings;
use crate::tickets::{fresh_ticket, CastOnDrop};

pub(crate) use route::unavailable;
use route::{server_route, tool_route, wait_for_route, Wait};

mod route;

/// How many times a call is sent again after its answer stream broke.
const MAX_STREAM_BREAKS: u32 = 3;

/// What step 1 resolved, borrowed for the whole call: the snapshot it read
/// and the tool's entry in it (which names the tool's server). While that
/// snapshot is still the latest, the first attempt goes where it says
/// without looking the tool up again.
#[derive(Clone, Copy)]
pub(super) struct Resolved<'a> {
    pub(super) snapshot: &'a Snapshot,
    pub(super) entry: &'a Arc<ToolEntry>,
}

/// One call as the attempts see it.
pub(super) struct Attempt<'a> {
    /// The namespaced tool name.
    pub(super) name: &'a str,
    /// The tool and its server, as step 1 found them.
    pub(super) resolved: Resolved<'a>,
    /// The server's settings.
    pub(super) settings: &'a ServerSettings,
    /// The call's own timeout (the tool's policy, or the caller's).
    pub(super) timeout: Duration,
    pub(super) options: &'a CallOptions,
    /// Who the call is for and who answers its server's questions.
    pub(super) asks: Option<Arc<AskContext>>,
}

/// Runs the call with `arguments` until it has an outcome.
pub(super) async fn run(
    snapshots: &watch::Receiver<Arc<Snapshot>>,
    attempt: &Attempt<'_>,
    arguments: &Map<String, Value>,
) -> Result<CallToolResult, CallError> {
    let Attempt { name, resolved, settings, timeout, options, ref asks } = *attempt;
    let server = resolved.entry.server.as_str();
    let deadline = Instant::now() + timeout;
    let mut failed_actor: Option<ActorId> = None;
    let mut number = 0u32;
    let mut broken = 0u32;
    loop {
        number += 1;
        // Only the first attempt may go by step 1: a later one follows a
        // crash or a broken stream, and the tool is looked up again.
        let resolved = (number == 1).then_some(resolved);
        let wait = Wait { name, server, failed_actor, deadline, timeout, settings, resolved };
        let target = wait_for_route(snapshots, wait, tool_route).await?;
        let outcome = match target.tool.primitive_tool {
            Some(wrapper) => {
                let caller = asks.as_ref().and_then(|asks| asks.agent.as_deref()).map(Arc::<str>::from);
                let request = |method, params: Value| {
                    let call = ToolCall::request(name, method, &params, deadline, timeout);
                    let call = ToolCall { asks: asks.clone(), caller: caller.clone(), ..call };
                    let to = &target.server;
                    async move {
                        let result = send(to, server, name, call).await?.into_raw();
                        // Wrappers work on JSON trees; their requests are
                        // not the hot path.
                        serde_json::from_str::<Value>(result.get()).map_err(|error| CallError::BadResult {
                            server: server.to_string(),
                            name: name.to_string(),
                            problem: error.to_string(),
                        })
                    }
                };
                // Boxed: a wrapper's future is large, and a tool call's
                // future (moved on every call) would carry its size.
                Box::pin(primitive_tools::run(wrapper, arguments, settings.output_limit, request)).await
            }
            None => {
                // One span per attempt; the server is sent its context.
                let span = tracing::info_span!(
                    "upstream tools/call",
                    otel.name = %format_args!("tools/call {}", target.tool.upstream_name),
                    warden.server = server,
                    warden.attempt = number,
                );
                let meta = crate::trace_context::for_server(&span, &options.more().meta);
                let call = tool_call(name, &target.tool.upstream_name, arguments, options, meta, deadline, timeout);
                let call = ToolCall { asks: asks.clone(), as_task: target.as_task, ..call };
                // A lane answer comes decoded by the stdio reader, which read
                // it once; any other is decoded here, in the caller's task,
                // not in the actor that every call to this server passes
                // through.
                send(&target.server, server, name, call).instrument(span).await.and_then(|answer| match answer {
                    // The lane's reader decoded it already.
                    Answer::Tool(result) => Ok(result),
                    Answer::Raw(result) => {
                        run_heavy(result.get().len(), || decode_result(&result)).map_err(|error| CallError::BadResult {
                            server: server.to_string(),
                            name: name.to_string(),
                            problem: error.to_string(),
                        })
                    }
                })
            }
        };
        match outcome {
            Err(CallError::ServerGone { delivered: true, server, name, reason }) => {
                if !target.repeatable {
                    return Err(CallError::CrashedMidCall { server, name, reason, policy: settings.crash_retry });
                }
                tracing::info!(server = %server, "repeating '{name}' after the server went down: the tool is safe to repeat");
            }
            // It never reached the process: send it to the next one.
            Err(CallError::ServerGone { delivered: false, .. }) => {}
            // The answer's stream broke (over HTTP, not resumable): the same
            // server is asked again, under a new id, if the tool is safe
            // to repeat — the same rule as after a crash.
            Err(CallError::StreamBroken { server, name, reason, policy }) => {
                broken += 1;
                if !target.repeatable {
                    return Err(CallError::StreamBroken { server, name, reason, policy });
                }
                if broken > MAX_STREAM_BREAKS {
                    return Err(CallError::StreamBrokenRepeatedly { server, name, reason, times: broken });
                }
                tracing::info!(server = %server, "asking again for '{name}': its answer stream broke ({reason}) and the tool is safe to repeat");
                continue;
            }
            other => return other,
        }
        failed_actor = Some(target.server.actor.get_id());
    }
}

/// The `tools/call` request of one attempt: the caller's `_meta` (or
/// `traced`, the same with the attempt's trace context), plus a
/// `progressToken` (the attempt's own ticket) when the caller wants progress
/// and the log level when it wants its log messages.
fn tool_call(
    name: &str,
    tool: &str,
    arguments: &Map<String, Value>,
    options: &CallOptions,
    traced: Option<Map<String, Value>>,
    deadline: Instant,
    timeout: Duration,
) -> ToolCall {
    let more = options.more();
    if more.progress.is_none() && more.logs.is_none() {
        let meta = traced.as_ref().unwrap_or(&more.meta);
        return ToolCall::new(name, tool, arguments, meta, deadline, timeout);
    }
    // The ticket is known before the params are written: it is the token.
    let ticket = fresh_ticket();
    let mut meta = traced.unwrap_or_else(|| more.meta.clone());
    if more.progress.is_some() {
        meta.insert("progressToken".into(), ticket.into());
    }
    if let Some(logs) = &more.logs {
        meta.insert(warden_protocol::LOG_LEVEL_KEY.into(), logs.level.name().into());
    }
    let call = ToolCall::new(name, tool, arguments, &meta, deadline, timeout);
    ToolCall { ticket, progress: more.progress.clone(), logs: more.logs.clone(), ..call }
}

/// Sends one request for tool `name` to its server and waits for its
/// answer: down the server's fast lane when the call needs nothing of its
/// actor, else through the actor.
///
/// The lane is offered the call at once, when this is called, not when the
/// future is first polled (it is awaited at once, so the order is the
/// same): the future then holds what the offer left — a wait, an error, a
/// boxed refused call — instead of the call itself, and every call's
/// future, moved whole on every call, is that much smaller.
fn send<'a>(
    to: &'a ServerRef,
    server: &'a str,
    name: &'a str,
    call: ToolCall,
) -> impl Future<Output = Result<Answer, CallError>> + 'a {
    let sending = to.lane.try_send(call);
    async move {
        match sending {
            Sending::Sent(wait) => wait.answer(name).await,
            Sending::Unsent(error) => Err(*error),
            // Boxed: a ractor call's future is large, and every call's
            // future would carry its size for a path that only calls
            // needing the actor take.
            Sending::Refused(call) => Box::pin(send_to_actor(to, server, name, *call)).await.map(Answer::Raw),
        }
    }
}

/// Sends `call` through the server's actor. An actor that stops before it
/// answers never took the request: that is "gone, not delivered", and the
/// caller may repeat it.
async fn send_to_actor(to: &ServerRef, server: &str, name: &str, call: ToolCall) -> Result<Box<RawValue>, CallError> {
    let actor = &to.actor;
    // Dropped with the caller's future, it tells the server the caller left.
    let cancel = CastOnDrop::new(actor, ServerMsg::CancelCall { ticket: call.ticket });
    let outcome =
        actor.call(|reply: RpcReplyPort<Result<Box<RawValue>, CallError>>| ServerMsg::CallTool { call, reply }, None);
    let outcome = outcome.await;
    cancel.disarm();
    match outcome {
        Ok(CallResult::Success(result)) => result,
        _ => {
            let reason = "its actor stopped before taking the call".to_string();
            Err(CallError::ServerGone { server: server.to_string(), name: name.to_string(), reason, delivered: false })
        }
    }
}

/// A `tools/call` result from the server's text. Straight from the text is
/// the fast way; should that fail, the text is read again through a
/// [`Value`] tree, the way results were read before they stayed raw, so the
/// error the caller reads is worded exactly as it was.
fn decode_result(result: &RawValue) -> Result<CallToolResult, serde_json::Error> {
    serde_json::from_str(result.get())
        .or_else(|_| serde_json::from_str::<Value>(result.get()).and_then(serde_json::from_value))
}

/// Sends a request of the server's own (`resources/read`, ...), labelled
/// `name` in errors, until it has an answer: through restarts like a tool
/// call, and repeated after a crash (these requests only read or set
/// per-connection state, so repeating one is safe).
pub(super) async fn request(
    snapshots: &watch::Receiver<Arc<Snapshot>>,
    caller: super::Caller<'_>,
    name: &str,
    server: &str,
    method: &'static str,
    params: &Value,
    settings: &ServerSettings,
    timeout: Duration,
) -> Result<Box<RawValue>, CallError> {
    let deadline = Instant::now() + timeout;
    let mut failed_actor: Option<ActorId> = None;
    let mut broken = 0u32;
    loop {
        let wait = Wait { name, server, failed_actor, deadline, timeout, settings, resolved: None };
        let to = wait_for_route(snapshots, wait, server_route).await?;
        let call = ToolCall::request(name, method, params, deadline, timeout);
        let call = ToolCall { caller: caller.map(Arc::from), ..call };
        match send(&to, server, name, call).await.map(Answer::into_raw) {
            Err(CallError::ServerGone { delivered, server, .. }) => {
                tracing::debug!(server = %server, delivered, "repeating '{name}' after the server went down");
            }
            // Its answer's stream broke (2026-07-28 over HTTP): asked again
            // of the same server, as safe as after a crash.
            Err(CallError::StreamBroken { reason, .. }) if broken < MAX_STREAM_BREAKS => {
                broken += 1;
                tracing::debug!(server = %server, "repeating '{name}': its answer stream broke ({reason})");
                continue;
            }
            other => return other,
        }
        failed_actor = Some(to.actor.get_id());
    }
}
