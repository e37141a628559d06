//! `warden tasks` for people: the tasks a dead daemon's calls left, and a
//! fetched one's result.

use serde_json::Value;

/// The list, each task with its server's word now and how to fetch it.
pub(crate) fn left_tasks(answer: &Value) -> String {
    let tasks = answer["tasks"].as_array().map(Vec::as_slice).unwrap_or_default();
    if tasks.is_empty() {
        return "no tasks were left by an earlier daemon\n".into();
    }
    let mut text = String::new();
    for task in tasks {
        let now = &task["now"];
        let said = match (now["status"].as_str(), now["error"].as_str()) {
            (Some(status), _) => match now["statusMessage"].as_str() {
                Some(message) => format!("{status}: {message}"),
                None => status.to_string(),
            },
            (None, Some(error)) => format!("cannot ask: {error}"),
            (None, None) => "?".to_string(),
        };
        text.push_str(&format!(
            "{} {} (server {}, task {}): {said}\n",
            task["key"].as_str().unwrap_or("?"),
            task["tool"].as_str().unwrap_or("?"),
            task["server"].as_str().unwrap_or("?"),
            task["task_id"].as_str().unwrap_or("?"),
        ));
    }
    text.push_str("fetch a result with `warden tasks --result KEY`\n");
    text
}

/// A fetched task: its status, then its result's text (or its error).
pub(crate) fn left_task_result(answer: &Value) -> String {
    let status = answer["status"].as_str().unwrap_or("?");
    let mut text = match answer["statusMessage"].as_str() {
        Some(message) => format!("task {status}: {message}\n"),
        None => format!("task {status}\n"),
    };
    if let Some(error) = answer.get("error") {
        let message = error["message"].as_str().map(str::to_string).unwrap_or_else(|| error.to_string());
        text.push_str(&format!("error: {message}\n"));
    } else if let Some(result) = answer.get("result") {
        let texts: Vec<&str> =
            result["content"].as_array().into_iter().flatten().filter_map(|block| block["text"].as_str()).collect();
        if texts.is_empty() {
            text.push_str(&format!("{result}\n"));
        } else {
            text.push_str(&texts.join("\n"));
            text.push('\n');
        }
    } else {
        text.push_str("not ended yet: ask again later\n");
    }
    text
}
