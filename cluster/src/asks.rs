//! A server's question, asked during a call that entered the cluster at
//! another node, put to that call's own caller.
//!
//! The node that runs the call gives it an elicitor of its own
//! ([`RemoteElicitor`]): the question — already checked, its message
//! redacted of the node's secrets — goes to the entering node on
//! `PREFIX.ask.NODE` with the call's id. There the remote server's
//! connection that sent the call hands it to its server actor as a
//! request of the server during that call, so the entering node answers
//! it as it answers a local server's question: the call's client when it
//! can answer (a front client that declared elicitation, `warden call` on
//! a terminal), else that node's queue (`warden pending`). The answer goes
//! back the same way. A call that ended, or a node that is gone, leaves
//! the question unanswered: the server is told `cancel`, as always. A
//! question the server gives up on while its call goes on is withdrawn on
//! the entering node too (a [`Withdrawn`] on the same subject): its client
//! is told `notifications/cancelled`, its queue forgets it.

use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_nats::Client;
use futures_util::StreamExt as _;
use serde::{Deserialize, Serialize};
use serde_json::{json, Value};
use tokio::task::AbortHandle;
use warden_actors::{ElicitationAnswer, ElicitationRequest, Elicitor};
use warden_protocol::{ElicitRequest, Message};

use crate::names::Names;
use crate::remote::AskRoutes;

/// How long a question may wait for its caller (the server, or the
/// entering node's own limit, usually ends it sooner).
const ASK_LIMIT: Duration = Duration::from_secs(3600);

/// A question as it travels.
#[derive(Serialize, Deserialize)]
struct Asked {
    /// The call it belongs to.
    call: String,
    /// Which of the call's questions it is (older nodes: 0).
    #[serde(default)]
    question: u64,
    /// The `elicitation/create` params.
    params: Value,
}

/// "The server gave up on question `question` of call `call`": published
/// (no reply wanted) to the node the question went to.
#[derive(Serialize, Deserialize)]
struct Withdrawn {
    call: String,
    withdrawn: u64,
}

/// The elicitor of a call that entered at node `from`: its questions go
/// to that node.
pub(crate) struct RemoteElicitor {
    pub(crate) client: Client,
    pub(crate) subject: String,
    pub(crate) call: String,
    pub(crate) from: String,
}

impl Elicitor for RemoteElicitor {
    fn elicit(&self, request: ElicitationRequest, mut answer: ElicitationAnswer) {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        let question = NEXT.fetch_add(1, Ordering::Relaxed);
        let asked = Asked { call: self.call.clone(), question, params: request.request.to_params() };
        let (client, subject, from) = (self.client.clone(), self.subject.clone(), self.from.clone());
        tokio::spawn(async move {
            let payload = serde_json::to_vec(&asked).expect("a question serialises");
            let sent = async_nats::Request::new().payload(payload.into()).timeout(Some(ASK_LIMIT));
            let reply = tokio::select! {
                reply = client.send_request(subject.clone(), sent) => reply,
                () = answer.abandoned() => {
                    let withdrawn = Withdrawn { call: asked.call, withdrawn: question };
                    let payload = serde_json::to_vec(&withdrawn).expect("a withdrawal serialises");
                    let _ = client.publish(subject, payload.into()).await;
                    return;
                }
            };
            let response = match reply {
                Ok(reply) => serde_json::from_slice::<Value>(&reply.payload).unwrap_or_default(),
                Err(error) => {
                    tracing::info!(node = %from, "a server's question could not reach the caller's node ({error}): cancelled");
                    return;
                }
            };
            match response.get("result").map(ElicitRequest::reply_of) {
                Some(Ok(reply)) => {
                    if let Err(refused) = answer.send(reply, format!("the caller, on node {from}")) {
                        tracing::warn!(node = %from, "the caller's answer does not fit the question ({}): cancelled", refused.error);
                    }
                }
                Some(Err(error)) => {
                    tracing::warn!(node = %from, "the caller's answer cannot be read ({error}): cancelled")
                }
                None => tracing::info!(node = %from, "the caller did not answer ({}): cancelled", response["error"]),
            }
        });
    }
}

/// Puts the questions other nodes relay for calls that entered here to
/// those calls' callers, until the task is aborted.
pub(crate) async fn answer(client: Client, names: Arc<Names>, routes: Arc<AskRoutes>) {
    let subject = names.ask(&names.node);
    let Ok(mut questions) = client.subscribe(subject.clone()).await else {
        tracing::error!("cannot subscribe to {subject}: remote servers' questions go to their own node's queue");
        return;
    };
    // The questions being asked here, to withdraw one its server gave up on.
    let asking: Arc<Mutex<HashMap<(String, u64), AbortHandle>>> = Arc::default();
    while let Some(message) = questions.next().await {
        let Some(reply) = message.reply else {
            if let Ok(Withdrawn { call, withdrawn }) = serde_json::from_slice(&message.payload) {
                let task = asking.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&(call, withdrawn));
                if let Some(task) = task {
                    tracing::info!("a remote server withdrew its question");
                    task.abort();
                }
            }
            continue;
        };
        let asked = match serde_json::from_slice::<Asked>(&message.payload) {
            Ok(asked) => asked,
            Err(error) => {
                let refused = json!({ "error": format!("the question cannot be read: {error}") });
                let _ = client.publish(reply, refused.to_string().into()).await;
                continue;
            }
        };
        let key = (asked.call.clone(), asked.question);
        let (client, routes, asked_here) = (client.clone(), routes.clone(), asking.clone());
        // Held while the task is spawned, so that it cannot end (and
        // forget its key) before its key is known.
        let mut tasks = asking.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let task = tokio::spawn(async move {
            let answered = match routes.find(&asked.call) {
                None => json!({ "error": "the call it belongs to is no longer running here" }),
                Some((link, during)) => match link.ask(during, "elicitation/create", asked.params).await {
                    Some(Message::Response(response)) => match response.outcome {
                        Ok(result) => json!({ "result": result }),
                        Err(error) => json!({ "error": error.message }),
                    },
                    _ => json!({ "error": "the call ended before its caller answered" }),
                },
            };
            let _ = client.publish(reply, answered.to_string().into()).await;
            asked_here.lock().unwrap_or_else(|poisoned| poisoned.into_inner()).remove(&(asked.call, asked.question));
        });
        tasks.insert(key, task.abort_handle());
    }
}
