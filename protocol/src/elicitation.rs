//! Elicitation (`elicitation/create`): a server asking the person a question.
//!
//! Two modes (MCP 2025-11-25). **Form** mode carries a `requestedSchema`,
//! a deliberately small subset of JSON Schema: one flat object whose
//! properties are strings (with an optional `format`, lengths), numbers or
//! integers (with bounds), booleans, single-choice enums (`enum`, `oneOf`
//! with `const`/`title`, or the legacy `enumNames`) and multi-choice enums
//! (`type: array` of such choices). Anything else — a nested object, a `$ref`,
//! an array of free strings — is refused before a person sees it, with the
//! field named, because no client could render it and no answer could be
//! checked. **URL** mode carries a URL the person opens themselves: Warden
//! shows it and never fetches it.
//!
//! [`FormSchema::check`] checks an answer against the schema before it goes
//! back to the server, so a wrong answer is the answerer's error (naming
//! the field and what it must be), never the server's surprise. A field the
//! person left empty takes the schema's `default` (SEP-1034), and
//! [`FormSchema::defaults`] accepts a form with every default.

use serde_json::{Map, Value};

mod fields;
#[cfg(test)]
mod tests;

pub use fields::{Choice, Field, FieldKind, TextFormat};

/// What a server asked for in one `elicitation/create`.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitRequest {
    /// Form mode: fields to fill in.
    Form {
        /// What the server says to the person.
        message: String,
        /// The fields, checked.
        schema: FormSchema,
        /// The `requestedSchema` as the server wrote it, for relaying to a
        /// client unchanged.
        requested_schema: Value,
    },
    /// URL mode: a page the person opens themselves.
    Url {
        /// Why the server wants it.
        message: String,
        /// The URL, as the server wrote it (never fetched by Warden).
        url: String,
        /// The server's id for it, echoed in `notifications/elicitation/complete`.
        elicitation_id: Option<String>,
    },
}

/// The elicitation modes a client supports.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct ElicitModes {
    /// Forms (`requestedSchema`).
    pub form: bool,
    /// URLs the person opens.
    pub url: bool,
}

impl ElicitModes {
    /// Both modes.
    pub const BOTH: ElicitModes = ElicitModes { form: true, url: true };
    /// Forms only.
    pub const FORM: ElicitModes = ElicitModes { form: true, url: false };

    /// The `elicitation` capability a client declares for these modes
    /// (`None` when it supports neither).
    pub fn capability(self) -> Option<Value> {
        let mut capability = Map::new();
        if self.form {
            capability.insert("form".into(), Value::Object(Map::new()));
        }
        if self.url {
            capability.insert("url".into(), Value::Object(Map::new()));
        }
        (!capability.is_empty()).then_some(Value::Object(capability))
    }

    /// The modes a client's declared `elicitation` capability names: an
    /// empty object means form (the 2025-06-18 shape, before modes).
    pub fn declared_in(capabilities: &Value) -> ElicitModes {
        match capabilities.get("elicitation") {
            Some(Value::Object(modes)) if modes.is_empty() => ElicitModes::FORM,
            Some(Value::Object(modes)) => {
                ElicitModes { form: modes.contains_key("form"), url: modes.contains_key("url") }
            }
            _ => ElicitModes::default(),
        }
    }

    /// Whether a request of this kind can be answered.
    pub fn allows(self, request: &ElicitRequest) -> bool {
        match request {
            ElicitRequest::Form { .. } => self.form,
            ElicitRequest::Url { .. } => self.url,
        }
    }
}

/// What the person did.
#[derive(Debug, Clone, PartialEq)]
pub enum ElicitReply {
    /// Submitted the form (its checked content, defaults filled in), or
    /// agreed to open the URL (no content).
    Accept(Option<Map<String, Value>>),
    /// Said no.
    Decline,
    /// Dismissed it without choosing.
    Cancel,
}

impl ElicitReply {
    /// The `elicitation/create` result the server reads.
    pub fn to_result(&self) -> Value {
        match self {
            ElicitReply::Accept(Some(content)) => {
                serde_json::json!({"action": "accept", "content": content})
            }
            ElicitReply::Accept(None) => serde_json::json!({"action": "accept"}),
            ElicitReply::Decline => serde_json::json!({"action": "decline"}),
            ElicitReply::Cancel => serde_json::json!({"action": "cancel"}),
        }
    }

    /// The word for it in logs and listings.
    pub fn action(&self) -> &'static str {
        match self {
            ElicitReply::Accept(_) => "accept",
            ElicitReply::Decline => "decline",
            ElicitReply::Cancel => "cancel",
        }
    }
}

/// Why a server's elicitation request cannot be shown.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct RequestError(pub String);

/// Why an answer does not fit the form.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct AnswerError(pub String);

impl ElicitRequest {
    /// Reads `elicitation/create` params: the mode (form unless `mode`
    /// says `url`), the message, and a schema within the allowed subset.
    pub fn parse(params: Option<&Value>) -> Result<ElicitRequest, RequestError> {
        let params = params.and_then(Value::as_object).ok_or_else(|| {
            RequestError("`elicitation/create` needs params with `message` and `requestedSchema` or `url`".into())
        })?;
        let message = match params.get("message") {
            Some(Value::String(message)) => message.clone(),
            _ => return Err(RequestError("`elicitation/create` needs a `message` string".into())),
        };
        match params.get("mode").and_then(Value::as_str) {
            Some("url") => {
                let url = match params.get("url") {
                    Some(Value::String(url)) => url.clone(),
                    _ => return Err(RequestError("a URL elicitation needs a `url` string".into())),
                };
                check_url(&url)?;
                let elicitation_id = params.get("elicitationId").and_then(Value::as_str).map(str::to_string);
                Ok(ElicitRequest::Url { message, url, elicitation_id })
            }
            None | Some("form") => {
                let schema = params.get("requestedSchema").ok_or_else(|| {
                    RequestError("a form elicitation needs a `requestedSchema` (mode \"form\")".into())
                })?;
                Ok(ElicitRequest::Form {
                    message,
                    schema: FormSchema::parse(schema)?,
                    requested_schema: schema.clone(),
                })
            }
            Some(other) => {
                Err(RequestError(format!("elicitation mode `{other}` is unknown; Warden answers \"form\" and \"url\"")))
            }
        }
    }

    /// The `elicitation/create` params that ask a client the same: a form
    /// without `mode` (clients from before modes read it as a form), a URL
    /// with it.
    pub fn to_params(&self) -> Value {
        match self {
            ElicitRequest::Form { message, requested_schema, .. } => {
                serde_json::json!({"message": message, "requestedSchema": requested_schema})
            }
            ElicitRequest::Url { message, url, elicitation_id } => {
                let mut params = serde_json::json!({"mode": "url", "message": message, "url": url});
                if let Some(id) = elicitation_id {
                    params["elicitationId"] = Value::String(id.clone());
                }
                params
            }
        }
    }

    /// Reads a client's `elicitation/create` result.
    pub fn reply_of(result: &Value) -> Result<ElicitReply, AnswerError> {
        let content = match result.get("content") {
            None | Some(Value::Null) => None,
            Some(Value::Object(content)) => Some(content.clone()),
            Some(_) => return Err(AnswerError("`content` must be an object of fields".into())),
        };
        match result.get("action").and_then(Value::as_str) {
            Some("accept") => Ok(ElicitReply::Accept(content)),
            Some("decline") => Ok(ElicitReply::Decline),
            Some("cancel") => Ok(ElicitReply::Cancel),
            _ => Err(AnswerError("`action` must be \"accept\", \"decline\" or \"cancel\"".into())),
        }
    }

    /// What the server said to the person.
    pub fn message(&self) -> &str {
        match self {
            ElicitRequest::Form { message, .. } | ElicitRequest::Url { message, .. } => message,
        }
    }

    /// `form` or `url`.
    pub fn mode(&self) -> &'static str {
        match self {
            ElicitRequest::Form { .. } => "form",
            ElicitRequest::Url { .. } => "url",
        }
    }

    /// Checks `reply` against the request: a form's content against its
    /// schema (defaults filled in); a URL accept carries no content.
    pub fn check(&self, reply: ElicitReply) -> Result<ElicitReply, AnswerError> {
        match (self, reply) {
            (ElicitRequest::Form { schema, .. }, ElicitReply::Accept(content)) => {
                Ok(ElicitReply::Accept(Some(schema.check(content.unwrap_or_default())?)))
            }
            (ElicitRequest::Url { .. }, ElicitReply::Accept(Some(content))) if !content.is_empty() => {
                Err(AnswerError("a URL elicitation is accepted without content: the person enters nothing here".into()))
            }
            (ElicitRequest::Url { .. }, ElicitReply::Accept(_)) => Ok(ElicitReply::Accept(None)),
            (_, other) => Ok(other),
        }
    }
}

/// Only web URLs are shown: a `file:`, `javascript:` or `data:` URL opened
/// on a person's consent could do harm no server should be able to ask for.
fn check_url(url: &str) -> Result<(), RequestError> {
    let lower = url.to_ascii_lowercase();
    let Some(rest) = lower.strip_prefix("https://").or_else(|| lower.strip_prefix("http://")) else {
        return Err(RequestError(format!("the elicitation URL `{url}` is not an http(s) URL; Warden shows no other")));
    };
    if rest.is_empty() || rest.starts_with('/') || url.chars().any(char::is_control) {
        return Err(RequestError(format!("the elicitation URL `{url}` has no host")));
    }
    Ok(())
}

/// The host of an http(s) URL (lower-cased, without user info or port),
/// for showing the person where a URL leads.
pub fn url_host(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, host)| host);
    let host = if host_port.starts_with('[') {
        host_port.split_inclusive(']').next()?
    } else {
        host_port.split(':').next()?
    };
    (!host.is_empty()).then(|| host.to_ascii_lowercase())
}

/// A form: its fields in the server's order.
#[derive(Debug, Clone, PartialEq)]
pub struct FormSchema {
    /// The fields.
    pub fields: Vec<Field>,
}

impl FormSchema {
    /// Reads a `requestedSchema`, refusing anything outside the subset.
    pub fn parse(schema: &Value) -> Result<FormSchema, RequestError> {
        let Some(schema) = schema.as_object() else {
            return Err(RequestError("`requestedSchema` must be a JSON object".into()));
        };
        if schema.get("type").and_then(Value::as_str) != Some("object") {
            return Err(RequestError("`requestedSchema` must have `\"type\": \"object\"`".into()));
        }
        let properties = match schema.get("properties") {
            Some(Value::Object(properties)) => properties,
            None => return Ok(FormSchema { fields: Vec::new() }),
            Some(_) => return Err(RequestError("`requestedSchema.properties` must be an object".into())),
        };
        let required: Vec<&str> = match schema.get("required") {
            None => Vec::new(),
            Some(Value::Array(names)) => names.iter().filter_map(Value::as_str).collect(),
            Some(_) => return Err(RequestError("`requestedSchema.required` must be a list of field names".into())),
        };
        if let Some(unknown) = required.iter().find(|name| !properties.contains_key(**name)) {
            return Err(RequestError(format!("`requestedSchema.required` names `{unknown}`, which is not a field")));
        }
        let fields = properties
            .iter()
            .map(|(name, property)| Field::parse(name, property, required.contains(&name.as_str())))
            .collect::<Result<_, _>>()?;
        Ok(FormSchema { fields })
    }

    /// Checks an answer: no unknown fields, every value of its field's type
    /// and within its bounds, every required field present. An empty field
    /// takes its default; the content returned is what the server gets.
    pub fn check(&self, mut content: Map<String, Value>) -> Result<Map<String, Value>, AnswerError> {
        if let Some(unknown) = content.keys().find(|name| !self.fields.iter().any(|field| &field.name == *name)) {
            let known: Vec<&str> = self.fields.iter().map(|field| field.name.as_str()).collect();
            return Err(AnswerError(format!(
                "the form has no field `{unknown}`; its fields are: {}",
                if known.is_empty() { "none".into() } else { known.join(", ") }
            )));
        }
        let mut checked = Map::new();
        for field in &self.fields {
            let value = match content.remove(&field.name) {
                Some(Value::Null) | None => field.default.clone(),
                Some(Value::String(text)) if text.is_empty() && field.default.is_some() => field.default.clone(),
                Some(value) => Some(value),
            };
            match value {
                Some(value) => {
                    checked.insert(field.name.clone(), field.check(value)?);
                }
                None if field.required => {
                    return Err(AnswerError(format!(
                        "`{}` is required and has no default; give it a value ({})",
                        field.name,
                        field.kind.describe()
                    )))
                }
                None => {}
            }
        }
        Ok(checked)
    }

    /// The form accepted with every field's default (`warden answer ID
    /// --defaults`); fails when a required field has none.
    pub fn defaults(&self) -> Result<Map<String, Value>, AnswerError> {
        self.check(Map::new())
    }
}
