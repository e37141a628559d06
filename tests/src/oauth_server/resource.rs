//! The protected MCP server: a Streamable HTTP endpoint answering JSON
//! (no SSE, no sessions) that wants a valid bearer token on every POST,
//! and its Protected Resource Metadata.

use std::time::Instant;

use hyper::{Method, StatusCode};
use serde_json::{json, Value};

use super::state::{PrmAt, State};
use super::{Asked, Reply};

/// The path the PRM is served at when only the 401 points to it.
const PRM_ELSEWHERE: &str = "/meta/resource.json";

/// The PRM document, if `path` is where the options put it.
pub(crate) fn metadata(state: &State, path: &str) -> Option<Reply> {
    let at = match state.options.prm {
        PrmAt::Header => PRM_ELSEWHERE,
        PrmAt::WellKnownPath => "/.well-known/oauth-protected-resource/mcp",
        PrmAt::WellKnownRoot => "/.well-known/oauth-protected-resource",
        PrmAt::None => return None,
    };
    if path != at {
        return None;
    }
    let issuer = state.options.advertised_issuer.clone().unwrap_or_else(|| state.issuer.clone());
    Some(Reply::json(
        StatusCode::OK,
        &json!({
            "resource": format!("{}/mcp", state.origin),
            "authorization_servers": [issuer],
            "scopes_supported": state.options.scopes_supported,
            "bearer_methods_supported": ["header"],
        }),
    ))
}

/// `/mcp`.
pub(crate) fn mcp(state: &mut State, asked: &Asked) -> Reply {
    let authorization = asked.header("authorization").unwrap_or_default().to_string();
    state.seen.mcp_authorizations.push(authorization.clone());
    let token = authorization.strip_prefix("Bearer ").unwrap_or_default();
    let grant = state.access.get(token).filter(|grant| grant.expires > Instant::now()).cloned();
    let Some(grant) = grant else {
        let mut challenge = String::from("Bearer realm=\"mcp\"");
        if state.options.prm == PrmAt::Header {
            challenge.push_str(&format!(", resource_metadata=\"{}{PRM_ELSEWHERE}\"", state.origin));
        }
        if let Some(scope) = &state.options.challenge_scope {
            challenge.push_str(&format!(", scope=\"{scope}\""));
        }
        if !token.is_empty() {
            challenge.push_str(", error=\"invalid_token\"");
        }
        return Reply::json(StatusCode::UNAUTHORIZED, &json!({"error": "unauthorized"}))
            .header("www-authenticate", challenge);
    };
    if asked.method == Method::GET {
        return Reply::text(StatusCode::METHOD_NOT_ALLOWED, "no GET stream");
    }
    if asked.method == Method::DELETE {
        return Reply::text(StatusCode::OK, "");
    }
    let Ok(message) = serde_json::from_slice::<Value>(&asked.body) else {
        return Reply::text(StatusCode::BAD_REQUEST, "not JSON");
    };
    let Some(id) = message.get("id").cloned() else {
        return Reply::text(StatusCode::ACCEPTED, "");
    };
    let result = match message["method"].as_str().unwrap_or_default() {
        "initialize" => json!({
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "oauth-test-server", "version": "1.0.0"},
        }),
        "tools/list" => json!({"tools": [
            {"name": "whoami", "description": "Says which client and scopes the token carries.",
             "inputSchema": {"type": "object"}},
            {"name": "admin", "description": "Needs the scope `admin`.", "inputSchema": {"type": "object"}},
            {"name": "echo", "description": "Says `message` back.", "inputSchema": {"type": "object"}},
            {"name": "leak", "description": "Says the token it was sent (a careless server).",
             "inputSchema": {"type": "object"}},
        ]}),
        "tools/call" => {
            let scopes: Vec<&str> = grant.scope.split_whitespace().collect();
            match message["params"]["name"].as_str() {
                Some("admin") if state.options.always_insufficient || !scopes.contains(&"admin") => {
                    let challenge = "Bearer error=\"insufficient_scope\", scope=\"admin\", error_description=\"admin needs the admin scope\"";
                    return Reply::json(StatusCode::FORBIDDEN, &json!({"error": "insufficient_scope"}))
                        .header("www-authenticate", challenge.to_string());
                }
                Some("admin") => text("admin ok"),
                Some("echo") => text(message["params"]["arguments"]["message"].as_str().unwrap_or_default()),
                Some("leak") => text(&format!("debug: you sent {authorization}")),
                _ => text(&format!("client {} with scope {}", grant.client_id, grant.scope)),
            }
        }
        "ping" => json!({}),
        other => {
            return Reply::json(
                StatusCode::OK,
                &json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32601, "message": format!("no method {other}")}}),
            )
        }
    };
    Reply::json(StatusCode::OK, &json!({"jsonrpc": "2.0", "id": id, "result": result}))
}

fn text(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}
