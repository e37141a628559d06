//! The authorization server: metadata, `/authorize` (consents at once),
//! `/token` (authorization code with PKCE, refresh with rotation, client
//! credentials; client authentication by `none`, Basic, post, or a JWT
//! signed with the client's key), `/register` and `/revoke`.

use std::collections::HashMap;

use base64::engine::general_purpose::{STANDARD, URL_SAFE_NO_PAD};
use base64::Engine as _;
use hyper::StatusCode;
use serde_json::{json, Value};

use super::state::{Code, MetadataAt, State};
use super::{Asked, Reply};

/// The metadata document, if `path` is where the options put it.
pub(crate) fn metadata(state: &State, path: &str) -> Option<Reply> {
    let issuer_path = &state.options.issuer_path;
    let at = match state.options.metadata {
        MetadataAt::Oauth | MetadataAt::NotJson | MetadataAt::Redirect => {
            format!("/.well-known/oauth-authorization-server{issuer_path}")
        }
        MetadataAt::Oidc => format!("/.well-known/openid-configuration{issuer_path}"),
        MetadataAt::None => return None,
    };
    if path != at {
        return None;
    }
    match state.options.metadata {
        MetadataAt::NotJson => return Some(Reply::text(StatusCode::OK, "<html>this is not metadata</html>")),
        MetadataAt::Redirect => {
            return Some(
                Reply::text(StatusCode::FOUND, "moved")
                    .header("location", "https://evil.example.com/.well-known/oauth-authorization-server".into()),
            )
        }
        _ => {}
    }
    let origin = &state.origin;
    let mut document = json!({
        "issuer": state.issuer,
        "authorization_endpoint": format!("{origin}/authorize"),
        "token_endpoint": format!("{origin}/token"),
        "revocation_endpoint": format!("{origin}/revoke"),
        "response_types_supported": ["code"],
        "grant_types_supported": ["authorization_code", "refresh_token", "client_credentials"],
        "code_challenge_methods_supported": ["S256"],
        "token_endpoint_auth_methods_supported": state.options.auth_methods,
        "scopes_supported": state.options.scopes_supported,
        "client_id_metadata_document_supported": state.options.client_metadata_documents,
        "authorization_response_iss_parameter_supported": state.options.iss_in_redirect,
    });
    if state.options.registration {
        document["registration_endpoint"] = json!(format!("{origin}/register"));
    }
    Some(Reply::json(StatusCode::OK, &document))
}

/// `/authorize`: checks the request, then redirects with a code.
pub(crate) fn authorize(state: &mut State, asked: &Asked) -> Reply {
    let query: HashMap<String, String> = asked.query.iter().cloned().collect();
    state.seen.authorizations.push(query.clone());
    let field = |name: &str| query.get(name).cloned().unwrap_or_default();
    let client_id = field("client_id");
    let redirect_uri = field("redirect_uri");
    let known_redirect = match state.registered.get(&client_id) {
        Some(uris) => uris.contains(&redirect_uri),
        // Pre-registered and CIMD clients: any loopback redirect (RFC 8252).
        None => {
            (state.options.clients.iter().any(|c| c.id == client_id)
                || (state.options.client_metadata_documents && client_id.starts_with("https://")))
                && redirect_uri.starts_with("http://127.0.0.1:")
        }
    };
    let refusal = if field("response_type") != "code" {
        Some("response_type must be code")
    } else if !known_redirect {
        Some("unknown client or redirect_uri")
    } else if field("code_challenge_method") != "S256" || field("code_challenge").is_empty() {
        Some("PKCE with S256 is required")
    } else if field("resource") != format!("{}/mcp", state.origin) {
        Some("resource must name the MCP server")
    } else {
        None
    };
    if let Some(refusal) = refusal {
        return Reply::text(StatusCode::BAD_REQUEST, refusal);
    }
    let code = state.fresh("code");
    state.codes.insert(
        code.clone(),
        Code {
            client_id,
            challenge: field("code_challenge"),
            redirect_uri: redirect_uri.clone(),
            scope: field("scope"),
            resource: field("resource"),
        },
    );
    let mut location = url::Url::parse(&redirect_uri).expect("a checked redirect URI");
    {
        let mut pairs = location.query_pairs_mut();
        pairs.append_pair("code", &code);
        pairs.append_pair("state", state.options.forged_state.as_deref().unwrap_or(&field("state")));
        if state.options.iss_in_redirect {
            pairs.append_pair("iss", state.options.forged_iss.as_deref().unwrap_or(&state.issuer));
        }
    }
    Reply::text(StatusCode::FOUND, "redirecting").header("location", location.to_string())
}

/// `/token`.
pub(crate) fn token(state: &mut State, asked: &Asked) -> Reply {
    let mut form: HashMap<String, String> = asked.form().into_iter().collect();
    let client = match authenticate(state, asked, &form) {
        Ok((client_id, method)) => {
            form.insert("auth".into(), method);
            form.insert("client".into(), client_id.clone());
            client_id
        }
        Err(error) => {
            state.seen.token_requests.push(form);
            return refuse(StatusCode::UNAUTHORIZED, "invalid_client", &error);
        }
    };
    state.seen.token_requests.push(form.clone());
    let field = |name: &str| form.get(name).cloned().unwrap_or_default();
    match field("grant_type").as_str() {
        "authorization_code" => {
            let Some(code) = state.codes.remove(&field("code")) else {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "unknown or used code");
            };
            let verifier =
                URL_SAFE_NO_PAD.encode(ring::digest::digest(&ring::digest::SHA256, field("code_verifier").as_bytes()));
            if code.client_id != client || code.redirect_uri != field("redirect_uri") {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "client or redirect_uri differs");
            }
            if verifier != code.challenge {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "PKCE verification failed");
            }
            if field("resource") != code.resource {
                return refuse(StatusCode::BAD_REQUEST, "invalid_target", "resource differs from the authorization's");
            }
            let answer = state.issue(&client, &code.scope, true);
            Reply::json(StatusCode::OK, &answer)
        }
        "refresh_token" => {
            let Some(grant) = state.refresh.get(&field("refresh_token")).cloned() else {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "refresh token unknown, used or revoked");
            };
            if grant.client_id != client {
                return refuse(StatusCode::BAD_REQUEST, "invalid_grant", "refresh token of another client");
            }
            let rotate = state.options.rotate_refresh_tokens;
            if rotate {
                state.refresh.remove(&field("refresh_token"));
            }
            let answer = state.issue(&client, &grant.scope, rotate);
            Reply::json(StatusCode::OK, &answer)
        }
        "client_credentials" => {
            let answer = state.issue(&client, &field("scope"), false);
            Reply::json(StatusCode::OK, &answer)
        }
        other => refuse(StatusCode::BAD_REQUEST, "unsupported_grant_type", other),
    }
}

/// Who the client is and how it proved it.
fn authenticate(state: &State, asked: &Asked, form: &HashMap<String, String>) -> Result<(String, String), String> {
    if let Some(basic) = asked.header("authorization").and_then(|h| h.strip_prefix("Basic ")) {
        let decoded =
            String::from_utf8(STANDARD.decode(basic).map_err(|e| e.to_string())?).map_err(|e| e.to_string())?;
        let (id, secret) = decoded.split_once(':').ok_or("Basic without a colon")?;
        let decode = |t: &str| {
            url::form_urlencoded::parse(format!("x={t}").as_bytes())
                .next()
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default()
        };
        let (id, secret) = (decode(id), decode(secret));
        let client = state.options.clients.iter().find(|c| c.id == id).ok_or("unknown client")?;
        return if client.method == "client_secret_basic" && client.secret.as_deref() == Some(secret.as_str()) {
            Ok((id, "client_secret_basic".into()))
        } else {
            Err("wrong secret or method".into())
        };
    }
    let id = form.get("client_id").cloned().ok_or("no client_id")?;
    if let Some(assertion) = form.get("client_assertion") {
        let client = state.options.clients.iter().find(|c| c.id == id).ok_or("unknown client")?;
        let key = client.public_key.as_ref().ok_or("the client has no key")?;
        // The audience is the issuer identifier (RFC 7523bis; MCP's client
        // credentials extension), not the token endpoint.
        verify_jwt(assertion, key, &id, &state.issuer)?;
        return Ok((id, "private_key_jwt".into()));
    }
    if let Some(secret) = form.get("client_secret") {
        let client = state.options.clients.iter().find(|c| c.id == id).ok_or("unknown client")?;
        return if client.method == "client_secret_post" && client.secret.as_deref() == Some(secret.as_str()) {
            Ok((id, "client_secret_post".into()))
        } else {
            Err("wrong secret or method".into())
        };
    }
    let public = state.registered.contains_key(&id)
        || state.options.clients.iter().any(|c| c.id == id && c.method == "none")
        || (state.options.client_metadata_documents && id.starts_with("https://"));
    if public {
        Ok((id, "none".into()))
    } else {
        Err("this client must authenticate".into())
    }
}

/// Checks an ES256 or RS256 client assertion: signature, issuer, subject,
/// audience, expiry.
fn verify_jwt(jwt: &str, public_key: &[u8], client_id: &str, audience: &str) -> Result<(), String> {
    let parts: Vec<&str> = jwt.split('.').collect();
    let [header, claims, signature] = parts[..] else { return Err("not a JWT".into()) };
    let signature = URL_SAFE_NO_PAD.decode(signature).map_err(|e| e.to_string())?;
    let header: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(header.as_bytes()).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let algorithm: &dyn ring::signature::VerificationAlgorithm = match header["alg"].as_str() {
        Some("ES256") => &ring::signature::ECDSA_P256_SHA256_FIXED,
        Some("RS256") => &ring::signature::RSA_PKCS1_2048_8192_SHA256,
        other => return Err(format!("unsupported alg {other:?}")),
    };
    let header = parts[0];
    ring::signature::UnparsedPublicKey::new(algorithm, public_key)
        .verify(format!("{header}.{claims}").as_bytes(), &signature)
        .map_err(|_| "bad JWT signature".to_string())?;
    let claims: Value = serde_json::from_slice(&URL_SAFE_NO_PAD.decode(claims).map_err(|e| e.to_string())?)
        .map_err(|e| e.to_string())?;
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_secs();
    if claims["iss"] != client_id || claims["sub"] != client_id || claims["aud"] != audience {
        return Err(format!("wrong iss, sub or aud: {claims}"));
    }
    if claims["exp"].as_u64().is_none_or(|exp| exp < now) {
        return Err("expired assertion".into());
    }
    Ok(())
}

/// `/register` (RFC 7591).
pub(crate) fn register(state: &mut State, asked: &Asked) -> Reply {
    let Ok(body) = serde_json::from_slice::<Value>(&asked.body) else {
        return refuse(StatusCode::BAD_REQUEST, "invalid_client_metadata", "not JSON");
    };
    state.seen.registrations.push(body.clone());
    if !state.options.registration {
        return Reply::text(StatusCode::NOT_FOUND, "no registration here");
    }
    let uris: Vec<String> =
        body["redirect_uris"].as_array().into_iter().flatten().filter_map(|u| u.as_str().map(String::from)).collect();
    if uris.is_empty() || uris.iter().any(|u| !u.starts_with("http://127.0.0.1:")) {
        return refuse(StatusCode::BAD_REQUEST, "invalid_redirect_uri", "loopback redirect URIs only");
    }
    let id = state.fresh("client");
    state.registered.insert(id.clone(), uris.clone());
    Reply::json(
        StatusCode::CREATED,
        &json!({"client_id": id, "redirect_uris": uris, "token_endpoint_auth_method": "none",
                "grant_types": ["authorization_code", "refresh_token"]}),
    )
}

/// `/revoke` (RFC 7009).
pub(crate) fn revoke(state: &mut State, asked: &Asked) -> Reply {
    let form: HashMap<String, String> = asked.form().into_iter().collect();
    if let Some(token) = form.get("token") {
        state.refresh.remove(token);
        state.access.remove(token);
        state.seen.revoked.push(token.clone());
    }
    Reply::text(StatusCode::OK, "")
}

fn refuse(status: StatusCode, error: &str, description: &str) -> Reply {
    Reply::json(status, &json!({"error": error, "error_description": description}))
}
