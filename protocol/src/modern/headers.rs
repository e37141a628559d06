//! The HTTP headers a 2026-07-28 request mirrors from its body, so that
//! proxies and gateways can route it without reading the body:
//! `Mcp-Method`, `Mcp-Name`, and `Mcp-Param-{Name}` for the tool
//! parameters a server marks with `x-mcp-header` in its input schema.
//!
//! A value that is not plain visible ASCII (or has spaces at its ends, or
//! looks like the encoding itself) goes as `=?base64?…?=`. A tool whose
//! `x-mcp-header` declaration breaks the revision's rules must not be used
//! over HTTP at all; [`header_params`] says why.

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use serde_json::Value;

/// A header value for `text`: itself when plain, else Base64 in the
/// sentinel form.
pub fn header_text(text: &str) -> String {
    let visible = text.bytes().all(|byte| byte == b' ' || byte == b'\t' || (0x21..=0x7e).contains(&byte));
    let padded = text.starts_with([' ', '\t']) || text.ends_with([' ', '\t']);
    let sentinel = text.starts_with("=?base64?") && text.ends_with("?=");
    if visible && !padded && !sentinel {
        text.to_string()
    } else {
        format!("=?base64?{}?=", STANDARD.encode(text))
    }
}

/// What a header value says: itself, or the text its Base64 sentinel form
/// holds (`None` for a sentinel that is not Base64 of UTF-8).
pub fn header_decoded(value: &str) -> Option<String> {
    match value.strip_prefix("=?base64?").and_then(|rest| rest.strip_suffix("?=")) {
        Some(encoded) => String::from_utf8(STANDARD.decode(encoded).ok()?).ok(),
        None => Some(value.to_string()),
    }
}

/// One parameter a tool wants mirrored into `Mcp-Param-{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HeaderParam {
    /// The `x-mcp-header` value: the header is `Mcp-Param-{name}`.
    pub name: String,
    /// The chain of `properties` keys from the schema's root to it.
    pub path: Vec<String>,
}

/// The `x-mcp-header` parameters of a tool's input schema; `Err` says why
/// the declaration is invalid (the tool must then not be offered).
pub fn header_params(schema: &Value) -> Result<Vec<HeaderParam>, String> {
    let mut found = Vec::new();
    walk(schema, Some(&mut Vec::new()), &mut found)?;
    let mut seen: Vec<String> = Vec::new();
    for param in &found {
        let lower = param.name.to_ascii_lowercase();
        if seen.contains(&lower) {
            return Err(format!("`x-mcp-header` \"{}\" is declared twice", param.name));
        }
        seen.push(lower);
    }
    Ok(found)
}

/// Walks a schema node: `path` is `Some` while the node is reachable from
/// the root through `properties` alone, where a declaration may stand.
fn walk(node: &Value, path: Option<&mut Vec<String>>, found: &mut Vec<HeaderParam>) -> Result<(), String> {
    match node {
        Value::Array(items) => items.iter().try_for_each(|item| walk(item, None, found)),
        Value::Object(object) => {
            let Some(path) = path else {
                if object.contains_key("x-mcp-header") {
                    return Err("an `x-mcp-header` is not reachable through `properties` alone".into());
                }
                return object.values().try_for_each(|value| walk(value, None, found));
            };
            if let Some(name) = object.get("x-mcp-header") {
                found.push(declared(name, object, path)?);
            }
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("properties", Value::Object(properties)) => {
                        for (property, schema) in properties {
                            path.push(property.clone());
                            walk(schema, Some(path), found)?;
                            path.pop();
                        }
                    }
                    ("x-mcp-header", _) => {}
                    (_, value) => walk(value, None, found)?,
                }
            }
            Ok(())
        }
        _ => Ok(()),
    }
}

fn declared(name: &Value, schema: &serde_json::Map<String, Value>, path: &[String]) -> Result<HeaderParam, String> {
    let at = if path.is_empty() { "the schema's root".to_string() } else { format!("`{}`", path.join(".")) };
    let Some(name) = name.as_str() else {
        return Err(format!("the `x-mcp-header` of {at} is not a string"));
    };
    if path.is_empty() {
        return Err("`x-mcp-header` is on the schema's root, not on a parameter".into());
    }
    let token = |byte: u8| byte.is_ascii_alphanumeric() || b"!#$%&'*+-.^_`|~".contains(&byte);
    if name.is_empty() || !name.bytes().all(token) {
        return Err(format!("the `x-mcp-header` \"{name}\" of {at} is not an HTTP header name"));
    }
    match schema.get("type").and_then(Value::as_str) {
        Some("string" | "integer" | "boolean") => Ok(HeaderParam { name: name.to_string(), path: path.to_vec() }),
        _ => Err(format!("{at} has an `x-mcp-header` but is not of type string, integer or boolean")),
    }
}

/// The `Mcp-Param-*` headers of a call with `arguments`: name and value,
/// for each parameter that has a value (null or absent: no header).
pub fn param_headers(params: &[HeaderParam], arguments: &Value) -> Vec<(String, String)> {
    const SAFE: i64 = (1 << 53) - 1;
    params
        .iter()
        .filter_map(|param| {
            let value = param.path.iter().try_fold(arguments, |node, key| node.get(key))?;
            let text = match value {
                Value::String(text) => header_text(text),
                Value::Bool(flag) => flag.to_string(),
                Value::Number(number) => match number.as_i64() {
                    Some(integer) if (-SAFE..=SAFE).contains(&integer) => integer.to_string(),
                    _ => return None,
                },
                _ => return None,
            };
            Some((format!("Mcp-Param-{}", param.name), text))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn plain_values_go_as_they_are_and_others_in_base64() {
        assert_eq!(header_text("us-west1"), "us-west1");
        assert_eq!(header_text("Hello, 世界"), "=?base64?SGVsbG8sIOS4lueVjA==?=");
        assert_eq!(header_text(" padded "), "=?base64?IHBhZGRlZCA=?=");
        assert_eq!(header_text("line1\nline2"), "=?base64?bGluZTEKbGluZTI=?=");
        assert_eq!(header_text("=?base64?literal?="), "=?base64?PT9iYXNlNjQ/bGl0ZXJhbD89?=");
        for text in ["us-west1", "Hello, 世界", " padded ", "=?base64?literal?="] {
            assert_eq!(header_decoded(&header_text(text)).as_deref(), Some(text));
        }
        assert_eq!(header_decoded("=?base64?not base64?="), None);
    }

    #[test]
    fn declarations_reachable_through_properties_are_read_and_their_values_mirrored() {
        let schema = json!({"type": "object", "properties": {
            "region": {"type": "string", "x-mcp-header": "Region"},
            "limits": {"type": "object", "properties": {"max": {"type": "integer", "x-mcp-header": "Max"}}},
            "dry": {"type": "boolean", "x-mcp-header": "Dry-Run"},
        }});
        let params = header_params(&schema).unwrap();
        assert_eq!(params.len(), 3);
        let headers = param_headers(&params, &json!({"region": "eu 1 ", "limits": {"max": 42}, "dry": null}));
        assert_eq!(
            headers,
            [
                ("Mcp-Param-Region".to_string(), "=?base64?ZXUgMSA=?=".to_string()),
                ("Mcp-Param-Max".to_string(), "42".to_string())
            ]
        );
    }

    #[test]
    fn an_invalid_declaration_says_what_is_wrong() {
        let cases = [
            (json!({"properties": {"n": {"type": "number", "x-mcp-header": "N"}}}), "is not of type string"),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "bad name"}}}),
                "is not an HTTP header name",
            ),
            (json!({"properties": {"a": {"type": "string", "x-mcp-header": ""}}}), "is not an HTTP header name"),
            (
                json!({"properties": {"a": {"type": "string", "x-mcp-header": "X"}, "b": {"type": "string", "x-mcp-header": "x"}}}),
                "declared twice",
            ),
            (
                json!({"properties": {"a": {"type": "array", "items": {"type": "string", "x-mcp-header": "A"}}}}),
                "not reachable through `properties` alone",
            ),
            (json!({"anyOf": [{"properties": {"a": {"type": "string", "x-mcp-header": "A"}}}]}), "not reachable"),
        ];
        for (schema, expected) in cases {
            let error = header_params(&schema).unwrap_err();
            assert!(error.contains(expected), "{schema}: {error}");
        }
        assert_eq!(header_params(&json!({"type": "object"})).unwrap(), []);
    }
}
