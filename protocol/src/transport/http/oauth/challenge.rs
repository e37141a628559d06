//! What a 401 or 403 says about authorization: the `Bearer` challenge of
//! its `WWW-Authenticate` header (RFC 6750 §3, RFC 9728 §5.1).
//!
//! Servers write the header loosely (other schemes first, tokens or
//! quoted strings, stray spaces), so the reader is lenient: it takes the
//! parameters of the first `Bearer` challenge and ignores what it does not
//! understand. A header with no `Bearer` challenge gives an empty one.

/// The parameters of a `Bearer` challenge that Warden acts on.
///
/// Saved with a server's tokens (the last one a request met), so a login
/// in another process can start from it.
#[derive(Debug, Clone, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct Challenge {
    /// Where the Protected Resource Metadata is (RFC 9728).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resource_metadata: Option<String>,
    /// The scopes the request needs, space-separated.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// `invalid_token`, `insufficient_scope`...
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// The server's words about the error.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error_description: Option<String>,
}

impl Challenge {
    /// Reads the `WWW-Authenticate` header's value.
    pub fn parse(header: &str) -> Challenge {
        let mut challenge = Challenge::default();
        let Some(params) = bearer_params(header) else { return challenge };
        for (name, value) in params {
            let slot = match name.to_ascii_lowercase().as_str() {
                "resource_metadata" => &mut challenge.resource_metadata,
                "scope" => &mut challenge.scope,
                "error" => &mut challenge.error,
                "error_description" => &mut challenge.error_description,
                _ => continue,
            };
            if slot.is_none() && !value.is_empty() {
                *slot = Some(value);
            }
        }
        challenge
    }

    /// True for a 403 asking for more scope (step-up authorization).
    pub fn wants_more_scope(&self) -> bool {
        self.error.as_deref() == Some("insufficient_scope")
    }

    /// True when it says where discovery starts or what scope to ask:
    /// worth remembering for a login.
    pub(crate) fn guides_a_login(&self) -> bool {
        self.resource_metadata.is_some() || self.scope.is_some()
    }
}

/// The `name=value` pairs after the first `Bearer` scheme name, up to the
/// next scheme.
fn bearer_params(header: &str) -> Option<Vec<(String, String)>> {
    let mut rest = header;
    // Find `Bearer` as a whole word at a challenge's start.
    loop {
        let at = rest.to_ascii_lowercase().find("bearer")?;
        let before = rest[..at].trim_end();
        let after = &rest[at + "bearer".len()..];
        let starts_challenge = before.is_empty() || before.ends_with(',');
        let ends_word = after.is_empty() || after.starts_with([' ', '\t', ',']);
        if starts_challenge && ends_word {
            rest = after;
            break;
        }
        rest = after;
    }
    let mut params = Vec::new();
    let mut chars = rest.trim_start().char_indices().peekable();
    let text = rest.trim_start();
    while let Some(&(start, c)) = chars.peek() {
        if c == ',' || c.is_whitespace() {
            chars.next();
            continue;
        }
        // A name: up to `=`, or a space (then it is the next scheme).
        let mut end = start;
        while let Some(&(i, c)) = chars.peek() {
            if c == '=' || c.is_whitespace() || c == ',' {
                break;
            }
            end = i + c.len_utf8();
            chars.next();
        }
        let name = &text[start..end];
        if chars.peek().map(|&(_, c)| c) != Some('=') {
            // `Basic realm=…` after ours: another challenge begins.
            if chars.peek().is_some_and(|&(_, c)| c.is_whitespace()) {
                break;
            }
            continue;
        }
        chars.next(); // '='
        let mut value = String::new();
        if chars.peek().map(|&(_, c)| c) == Some('"') {
            chars.next();
            while let Some((_, c)) = chars.next() {
                match c {
                    '\\' => {
                        if let Some((_, escaped)) = chars.next() {
                            value.push(escaped);
                        }
                    }
                    '"' => break,
                    c => value.push(c),
                }
            }
        } else {
            while let Some(&(_, c)) = chars.peek() {
                if c == ',' || c.is_whitespace() {
                    break;
                }
                value.push(c);
                chars.next();
            }
        }
        params.push((name.to_string(), value));
    }
    Some(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_the_bearer_parameters_quoted_or_not() {
        let c = Challenge::parse(
            r#"Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource", scope="files:read files:write", error=insufficient_scope"#,
        );
        assert_eq!(
            c.resource_metadata.as_deref(),
            Some("https://mcp.example.com/.well-known/oauth-protected-resource")
        );
        assert_eq!(c.scope.as_deref(), Some("files:read files:write"));
        assert!(c.wants_more_scope());
    }

    #[test]
    fn skips_other_schemes_and_stops_at_the_next() {
        let c = Challenge::parse(r#"Basic realm="x", Bearer realm="mcp", scope="a\"b" , Basic realm="y""#);
        assert_eq!(c.scope.as_deref(), Some("a\"b"));
        assert_eq!(Challenge::parse("Basic realm=\"x\""), Challenge::default());
        assert_eq!(Challenge::parse("Bearer"), Challenge::default());
        assert_eq!(Challenge::parse("bearer error=invalid_token").error.as_deref(), Some("invalid_token"));
        assert_eq!(Challenge::parse("Bearerx scope=a").scope, None);
    }
}
