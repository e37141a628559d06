//! Sampling: a server's `sampling/createMessage` turned into one
//! chat-completions request to the `[sampling]` endpoint, and its answer
//! turned back into MCP's `CreateMessageResult`.
//!
//! What a server may ask and what Warden does with it:
//!
//! - `messages` (user and assistant turns): text, image and audio content
//!   (one block or a list) become the endpoint's message parts — text as
//!   text, an image as a `data:` URL, audio as `input_audio` (wav or mp3).
//!   Other content (tool use in sampling, resources) is refused with an
//!   error naming it: Warden declares no `sampling.tools`.
//! - `systemPrompt` → a first `system` message.
//! - `maxTokens` → `max_tokens`, capped at `[sampling] max_tokens`.
//! - `temperature`, `stopSequences` → `temperature`, `stop`.
//! - `modelPreferences.hints` → the model a `[sampling.models]` key maps the
//!   first matching hint to, else `[sampling] model`.
//! - `includeContext`: Warden offers no context of its own; `none` is what
//!   it does, and `thisServer`/`allServers` are treated as `none` and said
//!   so (in the log and in the approval request).
//!
//! Every text a server sends is redacted of known secrets before the model
//! (or the approver) sees it.

use serde_json::{json, Map, Value};
use warden_config::SamplingConfig;

use super::sampling_tools;

/// A request ready to send, and what the approver is shown.
pub(crate) struct Prepared {
    /// The chat-completions body.
    pub(crate) body: Value,
    /// The model asked.
    pub(crate) model: String,
    /// What was not done as asked, in words (e.g. includeContext).
    pub(crate) notes: Vec<String>,
}

/// Builds the chat-completions body for `params`; `Err` names what the
/// server sent that cannot be sent on.
pub(crate) fn prepare(
    config: &SamplingConfig,
    params: Option<&Value>,
    redact: &dyn Fn(&str) -> Option<String>,
) -> Result<Prepared, String> {
    let params = params.and_then(Value::as_object).ok_or("`sampling/createMessage` needs params with `messages`")?;
    let scrub = |text: &str| redact(text).unwrap_or_else(|| text.to_string());
    let mut notes = Vec::new();
    let mut messages = Vec::new();
    if let Some(system) = params.get("systemPrompt").and_then(Value::as_str) {
        messages.push(json!({"role": "system", "content": scrub(system)}));
    }
    let turns = params.get("messages").and_then(Value::as_array).ok_or("`messages` must be a list of messages")?;
    for (index, turn) in turns.iter().enumerate() {
        let role = match turn.get("role").and_then(Value::as_str) {
            Some(role @ ("user" | "assistant")) => role,
            _ => return Err(format!("messages[{index}].role must be \"user\" or \"assistant\"")),
        };
        let blocks = match turn.get("content") {
            Some(Value::Array(blocks)) => blocks.iter().collect::<Vec<_>>(),
            Some(block @ Value::Object(_)) => vec![block],
            _ => return Err(format!("messages[{index}].content must be a content block or a list of them")),
        };
        let mut parts = Vec::new();
        let mut tool_calls = Vec::new();
        let mut tool_messages = Vec::new();
        let at = |problem: String| format!("messages[{index}].content: {problem}");
        for block in blocks {
            match block.get("type").and_then(Value::as_str) {
                Some("tool_use") if config.tools => tool_calls.push(sampling_tools::tool_call_of(block).map_err(at)?),
                Some("tool_result") if config.tools => {
                    tool_messages.push(sampling_tools::tool_message_of(block, &scrub).map_err(at)?)
                }
                _ => parts.push(part_of(block, &scrub).map_err(at)?),
            }
        }
        // Results answer the calls of the turn before, so they go first.
        messages.extend(tool_messages);
        match (parts.is_empty(), tool_calls.is_empty()) {
            (_, false) => messages.push(json!({"role": role, "content": if parts.is_empty() { Value::Null } else { Value::Array(parts) }, "tool_calls": tool_calls})),
            (false, true) => messages.push(json!({"role": role, "content": parts})),
            (true, true) => {}
        }
    }
    match params.get("includeContext").and_then(Value::as_str) {
        None | Some("none") => {}
        Some(other) => {
            notes.push(format!("includeContext \"{other}\" was treated as \"none\": Warden adds no context of its own"))
        }
    }
    let hints = params
        .get("modelPreferences")
        .and_then(|preferences| preferences.get("hints"))
        .and_then(Value::as_array)
        .map(|hints| hints.iter().filter_map(|hint| hint.get("name").and_then(Value::as_str)).collect::<Vec<_>>())
        .unwrap_or_default();
    let model = config.model_for(hints).to_string();
    let asked = params.get("maxTokens").and_then(Value::as_u64).ok_or("`maxTokens` must be a positive integer")?;
    let max_tokens = asked.min(config.max_tokens);
    if max_tokens < asked {
        notes.push(format!("maxTokens {asked} was capped at {max_tokens} ([sampling] max_tokens)"));
    }
    let mut body = Map::new();
    body.insert("model".into(), json!(model));
    body.insert("messages".into(), Value::Array(messages));
    body.insert("max_tokens".into(), json!(max_tokens));
    if let Some(temperature) = params.get("temperature").filter(|value| value.is_number()) {
        body.insert("temperature".into(), temperature.clone());
    }
    if let Some(stop) = params.get("stopSequences").and_then(Value::as_array).filter(|stop| !stop.is_empty()) {
        body.insert("stop".into(), Value::Array(stop.clone()));
    }
    if params.contains_key("tools") && !config.tools {
        return Err("`tools` were offered, but Warden did not declare sampling.tools ([sampling] tools = false)".into());
    }
    sampling_tools::tools_of(params, &mut body)?;
    Ok(Prepared { body: Value::Object(body), model, notes })
}

/// One MCP content block as a chat message part.
fn part_of(block: &Value, scrub: &dyn Fn(&str) -> String) -> Result<Value, String> {
    let field = |name: &str| block.get(name).and_then(Value::as_str);
    match field("type") {
        Some("text") => Ok(json!({"type": "text", "text": scrub(field("text").unwrap_or_default())})),
        Some("image") => {
            let (Some(data), Some(mime)) = (field("data"), field("mimeType")) else {
                return Err("an image needs `data` and `mimeType`".into());
            };
            Ok(json!({"type": "image_url", "image_url": {"url": format!("data:{mime};base64,{data}")}}))
        }
        Some("audio") => {
            let format = match field("mimeType") {
                Some("audio/wav" | "audio/x-wav" | "audio/wave") => "wav",
                Some("audio/mpeg" | "audio/mp3") => "mp3",
                other => return Err(format!("audio of type {other:?} cannot be sent; the endpoint takes wav or mp3")),
            };
            Ok(
                json!({"type": "input_audio", "input_audio": {"data": field("data").unwrap_or_default(), "format": format}}),
            )
        }
        other => {
            Err(format!("content of type {other:?} cannot be sent to the model (Warden sends text, images and audio)"))
        }
    }
}

/// `params` with every text a server wrote redacted (the system prompt and
/// each message's text), for relaying to a client's model.
pub(crate) fn redacted_params(mut params: Value, redact: &dyn Fn(&str) -> Option<String>) -> Value {
    let scrub = |text: &mut Value| {
        if let Some(clean) = text.as_str().and_then(|text| redact(text)) {
            *text = Value::String(clean);
        }
    };
    if let Some(system) = params.get_mut("systemPrompt") {
        scrub(system);
    }
    for message in params.get_mut("messages").and_then(Value::as_array_mut).into_iter().flatten() {
        match message.get_mut("content") {
            Some(Value::Array(blocks)) => blocks.iter_mut().filter_map(|block| block.get_mut("text")).for_each(scrub),
            Some(block) => {
                if let Some(text) = block.get_mut("text") {
                    scrub(text)
                }
            }
            None => {}
        }
    }
    params
}

/// The `CreateMessageResult` for the endpoint's `answer`.
pub(crate) fn result_of(answer: &Value, model: &str) -> Result<Value, String> {
    let choice = answer.pointer("/choices/0").ok_or("the endpoint's answer has no `choices`")?;
    let text = choice.pointer("/message/content").and_then(Value::as_str);
    let tool_uses = choice.get("message").map(sampling_tools::tool_uses_of).unwrap_or_default();
    let stop_reason = match choice.get("finish_reason").and_then(Value::as_str) {
        Some("length") => "maxTokens",
        Some("tool_calls") => "toolUse",
        Some("stop") | None => "endTurn",
        Some(other) => other,
    };
    let content = match (text, tool_uses.is_empty()) {
        (Some(text), true) => json!({"type": "text", "text": text}),
        (None, true) => return Err("the endpoint's answer has no text".into()),
        (text, false) => {
            let mut blocks: Vec<Value> = text.into_iter().map(|text| json!({"type": "text", "text": text})).collect();
            blocks.extend(tool_uses);
            Value::Array(blocks)
        }
    };
    let model = answer.get("model").and_then(Value::as_str).unwrap_or(model);
    Ok(json!({"role": "assistant", "content": content, "model": model, "stopReason": stop_reason}))
}

/// What the approver is shown of a request: the model, the system prompt,
/// each turn's text (images and audio named, not shown), the cap, notes.
pub(crate) fn shown(prepared: &Prepared) -> Value {
    let turns: Vec<Value> = prepared.body["messages"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|message| {
            let text = match &message["content"] {
                Value::String(text) => text.clone(),
                Value::Array(parts) => parts
                    .iter()
                    .map(|part| match part["type"].as_str() {
                        Some("text") => part["text"].as_str().unwrap_or_default().to_string(),
                        Some(kind) => format!("[{kind}]"),
                        None => String::new(),
                    })
                    .collect::<Vec<_>>()
                    .join(" "),
                _ => String::new(),
            };
            json!({"role": message["role"], "text": text})
        })
        .collect();
    json!({"model": prepared.model, "messages": turns, "max_tokens": prepared.body["max_tokens"], "notes": prepared.notes})
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> SamplingConfig {
        let mut config = SamplingConfig {
            endpoint: "http://x/v1".into(),
            model: "base".into(),
            max_tokens: 50,
            ..Default::default()
        };
        config.models.insert("claude".into(), "big".into());
        config
    }

    #[test]
    fn a_request_becomes_a_chat_body_capped_redacted_and_noted() {
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "key sk-SECRET here"}},
                {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "image", "data": "AAA", "mimeType": "image/png"}]}
            ],
            "systemPrompt": "Be brief.",
            "maxTokens": 100,
            "temperature": 0.2,
            "stopSequences": ["END"],
            "includeContext": "allServers",
            "modelPreferences": {"hints": [{"name": "claude-3"}]}
        });
        let redact = |text: &str| text.contains("sk-SECRET").then(|| text.replace("sk-SECRET", "[REDACTED]"));
        let prepared = prepare(&config(), Some(&params), &redact).unwrap();
        assert_eq!(
            prepared.body,
            json!({
                "model": "big",
                "messages": [
                    {"role": "system", "content": "Be brief."},
                    {"role": "user", "content": [{"type": "text", "text": "key [REDACTED] here"}]},
                    {"role": "assistant", "content": [{"type": "text", "text": "ok"}, {"type": "image_url", "image_url": {"url": "data:image/png;base64,AAA"}}]}
                ],
                "max_tokens": 50,
                "temperature": 0.2,
                "stop": ["END"]
            })
        );
        assert_eq!(
            prepared.notes,
            [
                "includeContext \"allServers\" was treated as \"none\": Warden adds no context of its own",
                "maxTokens 100 was capped at 50 ([sampling] max_tokens)"
            ]
        );
        assert_eq!(shown(&prepared)["messages"][2]["text"], "ok [image_url]");
    }

    #[test]
    fn what_cannot_be_sent_is_named() {
        let none = |_: &str| None;
        let tool_use =
            json!({"messages": [{"role": "user", "content": {"type": "tool_use", "id": "1"}}], "maxTokens": 5});
        assert_eq!(
            prepare(&config(), Some(&tool_use), &none).err().unwrap(),
            "messages[0].content: content of type Some(\"tool_use\") cannot be sent to the model (Warden sends text, images and audio)"
        );
        let no_cap = json!({"messages": []});
        assert_eq!(prepare(&config(), Some(&no_cap), &none).err().unwrap(), "`maxTokens` must be a positive integer");
    }

    #[test]
    fn tools_and_their_uses_and_results_map_to_function_calls() {
        let mut config = config();
        let none = |_: &str| None;
        let params = json!({
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "weather?"}},
                {"role": "assistant", "content": [{"type": "tool_use", "id": "c1", "name": "weather", "input": {"city": "Oslo"}}]},
                {"role": "user", "content": [{"type": "tool_result", "toolUseId": "c1", "content": [{"type": "text", "text": "rain"}]}]}
            ],
            "maxTokens": 10,
            "tools": [{"name": "weather", "description": "The weather.", "inputSchema": {"type": "object"}}],
            "toolChoice": {"mode": "auto"}
        });
        assert_eq!(
            prepare(&config, Some(&params), &none).err().unwrap(),
            "messages[1].content: content of type Some(\"tool_use\") cannot be sent to the model (Warden sends text, images and audio)"
        );
        config.tools = true;
        let body = prepare(&config, Some(&params), &none).unwrap().body;
        assert_eq!(
            body["tools"],
            json!([{"type": "function", "function": {"name": "weather", "parameters": {"type": "object"}, "description": "The weather."}}])
        );
        assert_eq!(body["tool_choice"], "auto");
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [{"type": "text", "text": "weather?"}]},
                {"role": "assistant", "content": null, "tool_calls": [{"id": "c1", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Oslo\"}"}}]},
                {"role": "tool", "tool_call_id": "c1", "content": "rain"}
            ])
        );
        let answer = json!({"choices": [{"message": {"content": null, "tool_calls": [{"id": "c2", "type": "function", "function": {"name": "weather", "arguments": "{\"city\":\"Bergen\"}"}}]}, "finish_reason": "tool_calls"}]});
        assert_eq!(
            result_of(&answer, "m").unwrap(),
            json!({"role": "assistant", "content": [{"type": "tool_use", "id": "c2", "name": "weather", "input": {"city": "Bergen"}}], "model": "m", "stopReason": "toolUse"})
        );
    }

    #[test]
    fn an_answer_becomes_a_create_message_result() {
        let answer =
            json!({"model": "big-2024", "choices": [{"message": {"content": "Hi."}, "finish_reason": "length"}]});
        assert_eq!(
            result_of(&answer, "big").unwrap(),
            json!({"role": "assistant", "content": {"type": "text", "text": "Hi."}, "model": "big-2024", "stopReason": "maxTokens"})
        );
        assert_eq!(result_of(&json!({}), "big").unwrap_err(), "the endpoint's answer has no `choices`");
    }
}
