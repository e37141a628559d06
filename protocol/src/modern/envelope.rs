//! The `_meta` fields every 2026-07-28 request carries, and writing them
//! into a request's params.
//!
//! On the call path the params arrive already serialised (the caller
//! writes them; the ServerActor only frames them), so the envelope is
//! written into the text: the params' top-level members are read as raw
//! text (their values are not parsed into trees; a call's arguments are
//! copied as they are), and `_meta` — the caller's own keys, small —
//! written again with the envelope's, which are serialised once per
//! connection. Measured in `benches/era_overhead.rs`.

use std::borrow::Cow;
use std::collections::BTreeMap;

use serde_json::value::RawValue;
use serde_json::{Map, Value};

use super::{CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, LOG_LEVEL_KEY, PROTOCOL_VERSION_KEY};

/// The prefix of every key the protocol reserves in `_meta`; a client's
/// own keys under it are replaced by Warden's when Warden is the client.
const RESERVED_PREFIX: &str = "io.modelcontextprotocol/";

/// The `_meta` fields every modern request of one client to one server
/// carries: protocol version, capabilities, name.
#[derive(Debug, Clone)]
pub struct Envelope {
    fields: Map<String, Value>,
    /// `fields` as JSON object members, without the braces.
    members: String,
}

impl Envelope {
    /// The envelope of `version`, declaring `capabilities`, sent by `client`.
    pub fn new(version: &str, capabilities: Value, client: Value) -> Envelope {
        let mut fields = Map::new();
        fields.insert(PROTOCOL_VERSION_KEY.into(), Value::String(version.into()));
        fields.insert(CLIENT_CAPABILITIES_KEY.into(), capabilities);
        fields.insert(CLIENT_INFO_KEY.into(), client);
        let mut envelope = Envelope { fields, members: String::new() };
        envelope.write_members();
        envelope
    }

    fn write_members(&mut self) {
        let object = serde_json::to_string(&self.fields).expect("a JSON map always serialises");
        self.members = object[1..object.len() - 1].to_string();
    }

    /// Asks for log messages at `level` and above with every request
    /// (`None`: none), the 2026-07-28 replacement of `logging/setLevel`.
    pub fn set_log_level(&mut self, level: Option<&str>) {
        match level {
            Some(level) => self.fields.insert(LOG_LEVEL_KEY.into(), Value::String(level.into())),
            None => self.fields.remove(LOG_LEVEL_KEY),
        };
        self.write_members();
    }

    /// The envelope's fields as JSON object members, without the braces:
    /// a request's whole `_meta` when it has none of its own.
    pub fn members(&self) -> &str {
        &self.members
    }

    /// Whether every request asks for log messages (a level was set).
    pub fn asks_logs(&self) -> bool {
        self.fields.contains_key(LOG_LEVEL_KEY)
    }

    /// `params` with the envelope in its `_meta`. The caller's own `_meta`
    /// keys (`progressToken`, `traceparent`, ...) stay; keys under the
    /// protocol's reserved prefix are Warden's to set, as the client — but
    /// for a call's own `logLevel`, which wins over the connection's.
    pub fn stamp(&self, params: Option<Value>) -> Value {
        let mut params = match params {
            Some(Value::Object(params)) => params,
            _ => Map::new(),
        };
        let meta = params.entry("_meta").or_insert_with(|| Value::Object(Map::new()));
        if !meta.is_object() {
            *meta = Value::Object(Map::new());
        }
        let meta = meta.as_object_mut().expect("made an object above");
        meta.retain(|key, _| is_callers(key));
        let own_level = meta.contains_key(LOG_LEVEL_KEY);
        let fields = self.fields.iter().filter(|(key, _)| !own_level || *key != LOG_LEVEL_KEY);
        meta.extend(fields.map(|(key, value)| (key.clone(), value.clone())));
        Value::Object(params)
    }

    /// [`stamp`](Self::stamp) for params already serialised: the same
    /// result, written into the text (see the module's notes).
    pub fn stamp_raw(&self, params: &str) -> Box<RawValue> {
        let Ok(members) = serde_json::from_str::<BTreeMap<Cow<'_, str>, &RawValue>>(params) else {
            // Not an object (or not JSON): the slow way makes one.
            let params = serde_json::from_str::<Value>(params).ok();
            return serde_json::value::to_raw_value(&self.stamp(params)).expect("a JSON value always serialises");
        };
        let mut text = String::with_capacity(params.len() + self.members.len() + 16);
        text.push('{');
        for (key, value) in members.iter().filter(|(key, _)| *key != "_meta") {
            push_key(&mut text, key);
            text.push_str(value.get());
            text.push(',');
        }
        text.push_str("\"_meta\":{");
        let own = members.get("_meta").and_then(|meta| serde_json::from_str::<Map<String, Value>>(meta.get()).ok());
        for (key, value) in own.iter().flatten().filter(|(key, _)| is_callers(key)) {
            push_key(&mut text, key);
            text.push_str(&value.to_string());
            text.push(',');
        }
        if own.as_ref().is_some_and(|own| own.contains_key(LOG_LEVEL_KEY)) && self.fields.contains_key(LOG_LEVEL_KEY) {
            // The call's own level wins over the connection's (rare: written out).
            let fields: Map<String, Value> = self
                .fields
                .iter()
                .filter(|(key, _)| *key != LOG_LEVEL_KEY)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            let object = serde_json::to_string(&fields).expect("a JSON map always serialises");
            text.push_str(&object[1..object.len() - 1]);
        } else {
            text.push_str(&self.members);
        }
        text.push_str("}}");
        RawValue::from_string(text).expect("the envelope writes JSON")
    }
}

/// Whether a caller's `_meta` key goes with the request: its own keys, and
/// the log level a call asks for its own messages at (Warden sets it for a
/// caller that wants them; a front strips its clients' reserved keys).
fn is_callers(key: &str) -> bool {
    !key.starts_with(RESERVED_PREFIX) || key == LOG_LEVEL_KEY
}

/// `"key":`, the key escaped as JSON.
fn push_key(text: &mut String, key: &str) {
    text.push_str(&serde_json::to_string(key).expect("a string always serialises"));
    text.push(':');
}
