//! `tasks`: the server-side tasks an earlier daemon's calls left
//! (`warden_actors::LeftTask`), each with what its server says of it now.

use serde_json::{json, Value};
use warden_actors::Warden;

/// Every left task with its key and, asked now, its server's word (or why
/// there is none). A task found ended is not forgotten here: `fetch_task`
/// hands its result over first.
pub(crate) async fn list(warden: &Warden) -> Value {
    let mut tasks = Vec::new();
    for (key, task) in warden.left_tasks() {
        let mut entry = serde_json::to_value(&task).expect("a task serialises");
        entry["key"] = json!(key);
        entry["now"] = match warden.peek_left_task(&key).await {
            Ok(state) => state,
            Err(error) => json!({"error": error.to_string()}),
        };
        tasks.push(entry);
    }
    json!({ "tasks": tasks })
}
