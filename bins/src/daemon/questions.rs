//! Servers' questions waiting in the daemon, answered over the bridge.
//!
//! The daemon's [`ApprovalQueue`] is also its elicitor: a server's
//! `elicitation/create` that no client of its own call can answer waits
//! there beside the approvals. `warden pending` lists both; `warden answer
//! ID --accept '{..}'` (or `--defaults`, `--decline`, `--cancel`) answers a
//! question. An answer that does not fit the form is refused with the
//! reason and the question keeps waiting; a question nobody answers within
//! `security.approval_timeout_secs` is cancelled.

use serde_json::{json, Map, Value};
use tokio::sync::mpsc;
use warden_actors::{ApprovalQueue, ElicitReply, ElicitationAnswer, ElicitationRequest, Elicitor, QueueError};
use warden_cluster::{ClusterLink, NotTaken};
use warden_protocol::{AnswerAction, BridgeError, BridgeErrorCode as Code};

/// Who the log says answered.
const ANSWERED_BY: &str = "a person over the bridge (warden answer)";

/// `pending`: every approval and question waiting, oldest first; on a
/// cluster node also those waiting on the other nodes (`NODE:ID`).
pub(crate) async fn pending(queue: &ApprovalQueue, cluster: Option<&ClusterLink>) -> Value {
    let mut listed = json!({ "approvals": queue.pending(), "questions": queue.questions() });
    super::elsewhere::add_remote(&mut listed, cluster).await;
    listed
}

/// `answer` of `NODE:ID`: the answer goes to that node, whose queue checks
/// and takes it. `None` when the id is this node's own.
pub(crate) async fn answer_remote(
    cluster: Option<&ClusterLink>,
    id: &str,
    action: AnswerAction,
    content: Option<Value>,
) -> Option<Result<Value, BridgeError>> {
    let cluster = match super::elsewhere::cluster_for(cluster, id, "question")? {
        Ok(cluster) => cluster,
        Err(error) => return Some(Err(error)),
    };
    Some(match cluster.answer_question(id, action, content, ANSWERED_BY).await {
        Ok(answer) => Ok(json!({ "answered": id, "action": answer["action"] })),
        Err(NotTaken::Refused(message)) => Err(BridgeError::new(Code::ANSWER_REFUSED, message)),
        Err(NotTaken::Unanswered(message)) => Err(BridgeError::new(Code::UNKNOWN_QUESTION, message)),
    })
}

/// `answer`: answers one question.
pub(crate) fn answer(
    queue: &ApprovalQueue,
    id: &str,
    action: AnswerAction,
    content: Option<Value>,
) -> Result<Value, BridgeError> {
    let number = id.trim_start_matches('#').parse::<u64>().map_err(|_| {
        BridgeError::new(Code::INVALID_REQUEST, format!("'{id}' is not a question id; `warden pending` lists them"))
    })?;
    let reply = match action {
        AnswerAction::Accept => {
            let content = match content {
                Some(Value::Object(fields)) => Some(fields),
                _ => None,
            };
            ElicitReply::Accept(content)
        }
        AnswerAction::Defaults => ElicitReply::Accept(Some(Map::new())),
        AnswerAction::Decline => ElicitReply::Decline,
        AnswerAction::Cancel => ElicitReply::Cancel,
    };
    match queue.answer_question(number, reply, ANSWERED_BY) {
        Ok(()) => Ok(json!({ "answered": number, "action": action })),
        Err(QueueError::NoSuchQuestion(_)) if queue.pending().iter().any(|request| request.id == number) => {
            Err(BridgeError::new(
                Code::UNKNOWN_QUESTION,
                format!(
                    "#{number} is an approval, not a question: `warden approve {number}` or `warden deny {number}`"
                ),
            ))
        }
        Err(error @ QueueError::Refused { .. }) => Err(BridgeError::new(Code::ANSWER_REFUSED, error.to_string())),
        Err(error) => Err(BridgeError::new(Code::UNKNOWN_QUESTION, crate::advice::queue_error(&error))),
    }
}

/// Where a connection's notice lines go, with the id of the request they
/// are about.
#[derive(Clone)]
pub(crate) struct Notices {
    pub(crate) lines: mpsc::UnboundedSender<String>,
    pub(crate) id: Option<Value>,
}

/// The elicitor of a `call_tool` that asked for notices (`warden call`):
/// the question waits in the queue like any other, and the caller is told
/// at once — so a person at a terminal is asked in place, and a script sees
/// on stderr what waits and the command that answers it.
pub(crate) struct Noticing {
    pub(crate) queue: ApprovalQueue,
    pub(crate) notices: Notices,
}

impl Elicitor for Noticing {
    fn elicit(&self, request: ElicitationRequest, answer: ElicitationAnswer) {
        let notice = json!({"id": self.notices.id, "notice": request.to_json()});
        self.queue.elicit(request, answer);
        // A caller that left has nobody to tell; the question still waits.
        let _ = self.notices.lines.send(format!("{notice}\n"));
    }
}
