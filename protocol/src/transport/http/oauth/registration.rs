//! Dynamic Client Registration (RFC 7591): how Warden gets a client id
//! from an authorization server it was never introduced to.
//!
//! Warden registers as a native application (`application_type`
//! `native`), a public client (`token_endpoint_auth_method` `none`: a
//! secret on every user's machine protects nothing, PKCE does the work)
//! with its loopback redirect URI. The registration is saved per
//! authorization server and reused; a new one is made when the issuer
//! changes or the saved redirect URI's port cannot be had again.

use serde_json::{json, Value};
use url::Url;

use super::store::Registration;
use super::tokens::AuthMethod;
use super::web::{Body, Web};

/// The name an authorization server shows the person on its consent page.
const CLIENT_NAME: &str = "Warden";

/// Registers Warden at `endpoint` for `redirect_uri`, asking for `scope`.
pub(crate) async fn register(
    web: &Web,
    endpoint: &str,
    redirect_uri: &str,
    scope: Option<&str>,
) -> Result<Registration, String> {
    let url = Url::parse(endpoint).map_err(|error| format!("the registration endpoint is not a URL: {error}"))?;
    let mut metadata = json!({
        "client_name": CLIENT_NAME,
        "redirect_uris": [redirect_uri],
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "none",
        "application_type": "native",
    });
    if let Some(scope) = scope {
        metadata["scope"] = json!(scope);
    }
    let answer = web.post(&url, Body::Json(&metadata), None, "client registration endpoint").await?;
    let field = |name: &str| answer.json.get(name).and_then(Value::as_str).map(str::to_string);
    if !answer.status.is_success() {
        let error = field("error").unwrap_or_else(|| format!("HTTP {}", answer.status.as_u16()));
        let description = field("error_description").map(|d| format!(" ({d})")).unwrap_or_default();
        return Err(format!("the authorization server refused to register Warden at {url}: {error}{description}"));
    }
    let client_id = field("client_id")
        .filter(|id| !id.is_empty())
        .ok_or_else(|| format!("the registration answer from {url} has no `client_id`"))?;
    let client_secret = field("client_secret");
    let auth_method = match field("token_endpoint_auth_method") {
        Some(method) if AuthMethod::parse(&method).is_some() => method,
        Some(method) => {
            return Err(format!("the authorization server registered Warden for `{method}`, which Warden cannot do"))
        }
        None if client_secret.is_some() => AuthMethod::Basic.name().to_string(),
        None => AuthMethod::None.name().to_string(),
    };
    Ok(Registration {
        client_id,
        client_secret,
        redirect_uri: Some(redirect_uri.to_string()),
        auth_method: Some(auth_method),
    })
}
