//! `warden pending`: calls waiting for approval and servers' questions,
//! each question with what it needs and the exact command that answers it.

use serde_json::Value;

/// The whole listing.
pub(crate) fn render(approvals: Option<&Vec<Value>>, questions: Option<&Vec<Value>>) -> String {
    let approvals = approvals.map(Vec::as_slice).unwrap_or_default();
    let questions = questions.map(Vec::as_slice).unwrap_or_default();
    if approvals.is_empty() && questions.is_empty() {
        return "nothing is waiting for a person\n".into();
    }
    let mut text = String::new();
    if !approvals.is_empty() {
        text.push_str(&super::approval_lines(approvals));
    }
    for question in questions {
        text.push_str(&self::question(question));
    }
    text
}

/// One question: who asks, during which call, what; its fields or URL;
/// how to answer it.
pub(crate) fn question(question: &Value) -> String {
    // Another node's question is `NODE:ID`, a string: shown bare too.
    let id = question["id"].as_str().map_or_else(|| question["id"].to_string(), str::to_string);
    let during = question["tool"].as_str().map(|tool| format!(" during {tool}")).unwrap_or_default();
    let agent = question["agent"].as_str().map(|agent| format!(", agent {agent}")).unwrap_or_default();
    let mut text = format!(
        "#{id} question from server {}{during}{agent}: {}\n",
        question["server"].as_str().unwrap_or("?"),
        question["message"].as_str().unwrap_or("")
    );
    if let Some(url) = question["url"].as_str() {
        let host = question["host"].as_str().unwrap_or("?");
        text.push_str(&format!("    open {url}\n    it leads to {host} — check that before you open it\n"));
        text.push_str(&format!(
            "    answer: `warden answer {id} --accept '{{}}'` once opened, `--decline` or `--cancel`\n"
        ));
        return text;
    }
    let fields = question["fields"].as_array().map(Vec::as_slice).unwrap_or_default();
    for field in fields {
        let name = field["name"].as_str().unwrap_or("?");
        let title = field["title"].as_str().filter(|title| *title != name).map(|title| format!(" ({title})"));
        let mut line = format!("    {name}{}: {}", title.unwrap_or_default(), field["expects"].as_str().unwrap_or("?"));
        if !field["default"].is_null() {
            line.push_str(&format!(", default {}", field["default"]));
        } else if field["required"] == Value::Bool(true) {
            line.push_str(", required");
        }
        if let Some(description) = field["description"].as_str() {
            line.push_str(&format!(" — {description}"));
        }
        text.push_str(&line);
        text.push('\n');
    }
    text.push_str(&format!(
        "    answer: `warden answer {id} --accept '{}'`, `--defaults`, `--decline` or `--cancel`\n",
        example(fields)
    ));
    text
}

/// An `--accept` value to start from: each required field without a
/// default, with a placeholder of its kind.
fn example(fields: &[Value]) -> String {
    let needed: Vec<String> = fields
        .iter()
        .filter(|field| field["required"] == Value::Bool(true) && field["default"].is_null())
        .map(|field| {
            let name = field["name"].as_str().unwrap_or("?");
            let value = match field["choices"].as_array().and_then(|choices| choices.first()) {
                Some(choice) => choice["value"].to_string(),
                None if field["expects"].as_str().is_some_and(|expects| expects.contains("number")) => "0".into(),
                None if field["expects"] == "true or false" => "true".into(),
                None => "\"...\"".into(),
            };
            format!("\"{name}\": {value}")
        })
        .collect();
    format!("{{{}}}", needed.join(", "))
}
