//! Servers' questions shared across the cluster: a question waiting in one
//! node's queue (a server's `elicitation/create` that no client of its
//! call could answer — a call from another node among them) is listed by
//! `warden pending` on every node, as `NODE:ID`, and answered from any
//! (`warden answer a:7 --accept '{…}'`).
//!
//! The same machinery as approvals (`waiting.rs`): the bucket
//! `PREFIX_questions` (`NODE.ID` → the question as `pending` lists it,
//! its text already redacted), and `PREFIX.answer.NODE` for the answers.
//! The holding node's queue checks an answer against the form as it does
//! a local one: one that does not fit is refused with the reason, and the
//! question keeps waiting.

use std::sync::Arc;

use async_nats::jetstream::kv;
use async_nats::Client;
use serde::{Deserialize, Serialize};
use serde_json::{json, Map, Value};
use warden_actors::{ApprovalQueue, ElicitReply, QueueError};
use warden_protocol::AnswerAction;

use crate::names::Names;
use crate::waiting;

/// An answer sent to the node whose queue holds the question.
#[derive(Debug, Serialize, Deserialize)]
struct RemoteAnswer {
    id: u64,
    action: AnswerAction,
    #[serde(default)]
    content: Option<Value>,
    /// Who answered, and where.
    by: String,
}

/// Keeps this node's entries in the bucket equal to the questions its
/// queue holds, until the task is aborted.
pub(crate) async fn publish(queue: ApprovalQueue, names: Arc<Names>, store: kv::Store) {
    waiting::publish(store, names.node.clone(), move || {
        let questions = queue.questions().into_iter();
        questions.map(|question| (question.id, question.to_json().to_string().into_bytes())).collect()
    })
    .await;
}

/// Answers other nodes' answers to this node's questions until aborted.
pub(crate) async fn answer(client: Client, names: Arc<Names>, queue: ApprovalQueue) {
    let node = names.node.clone();
    waiting::answer(client, names.answer(&names.node), move |answer: RemoteAnswer| {
        let reply = match answer.action {
            AnswerAction::Accept => ElicitReply::Accept(match answer.content {
                Some(Value::Object(fields)) => Some(fields),
                _ => None,
            }),
            AnswerAction::Defaults => ElicitReply::Accept(Some(Map::new())),
            AnswerAction::Decline => ElicitReply::Decline,
            AnswerAction::Cancel => ElicitReply::Cancel,
        };
        let answered = match queue.answer_question(answer.id, reply, &answer.by) {
            Ok(()) => json!({ "answered": answer.id, "action": answer.action }),
            Err(error) => {
                let refused = matches!(error, QueueError::Refused { .. });
                json!({ "error": format!("on node {node}: {error}"), "refused": refused })
            }
        };
        std::future::ready(answered)
    })
    .await;
}

/// The questions waiting on the live nodes in `live`, each with its id as
/// `NODE:ID` and its `node`.
pub(crate) async fn remote(store: &kv::Store, names: &Names, live: &[String]) -> Vec<Value> {
    waiting::remote(store, names, live, "requested_at").await
}

/// Why an answer to another node's question was not taken.
#[derive(Debug)]
pub enum NotTaken {
    /// It does not fit the question's form; the question still waits.
    Refused(String),
    /// No such question there (answered already, or never), or no answer
    /// from its node.
    Unanswered(String),
}

/// Sends an answer to question `NODE:ID` to that node; its answer, or why
/// it was not taken.
pub(crate) async fn answer_remote(
    client: &Client,
    names: &Names,
    id: &str,
    action: AnswerAction,
    content: Option<Value>,
    by: &str,
) -> Result<Value, NotTaken> {
    let (node, number) = waiting::split_id(id, "a question").map_err(NotTaken::Unanswered)?;
    let answer = RemoteAnswer { id: number, action, content, by: format!("{by} on node {}", names.node) };
    let answered = waiting::send_raw(client, names.answer(node), node, &answer).await.map_err(NotTaken::Unanswered)?;
    match answered.get("error").and_then(Value::as_str) {
        Some(error) if answered["refused"] == true => Err(NotTaken::Refused(error.to_string())),
        Some(error) => Err(NotTaken::Unanswered(error.to_string())),
        None => Ok(answered),
    }
}
