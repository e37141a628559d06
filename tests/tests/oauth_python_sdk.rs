//! OAuth against an authorization server someone else wrote: the official
//! Python SDK's (`mcp.server.auth`, pinned in `tests/python/requirements.txt`)
//! in front of an SDK MCP server (`tests/python/oauth_server.py`; only its
//! in-memory storage is ours). Discovery, registration, PKCE, the code
//! exchange, a refresh after expiry and revocation, each checked by the
//! SDK's own handlers.

use std::time::Duration;

use serde_json::json;
use warden_actors::{Authorizer, ServerState, Warden};
use warden_tests::browser::Person;
use warden_tests::python_http::PythonHttpServer;
use warden_tests::{model_text, test_config};

#[tokio::test]
async fn warden_logs_in_to_the_python_sdks_authorization_server_and_refreshes_there() {
    let home = warden_tests::shared_home("oauth-python-home");
    // Access tokens live 3 s: the second call needs a refresh.
    let server = PythonHttpServer::start("oauth_server.py", &["3"]).await;
    let config = test_config(&format!("[servers.py]\nurl = \"{}\"\n", server.url)).unwrap();
    let warden = Warden::start(&config).await.unwrap();
    warden.settled().await;
    let status = warden.status().into_iter().next().unwrap();
    assert!(matches!(status.state, ServerState::NeedsLogin { .. }), "{}", status.state);

    let authorizer = Authorizer::new("py", &server.url, None, &home, None).unwrap();
    let done = authorizer.login(&Person, Duration::from_secs(30)).await.expect("the login succeeds");
    assert_eq!(done.scope.as_deref(), Some("read"));
    warden.reconnect("py").await.unwrap();
    warden.wait_for(|s| s.status("py").is_some_and(|s| s.state == ServerState::Running)).await;
    let text = model_text(&warden, "py__whoami", json!({})).await;
    assert!(text.starts_with("client ") && text.contains(" with scopes read"), "{text}");

    tokio::time::sleep(Duration::from_millis(3200)).await;
    let again = model_text(&warden, "py__whoami", json!({})).await;
    assert_eq!(again, text, "the same client, refreshed");
    assert!(warden.status()[0].state == ServerState::Running);

    // The pinned SDK's revocation endpoint demands a `client_secret` field
    // even of a public client (its form model makes it required), which
    // RFC 6749 says a public client does not send: Warden says so, and
    // forgets the tokens all the same.
    let said = authorizer.logout().await.expect("logout");
    assert!(said.contains("/revoke refused (HTTP 400: invalid_request "), "{said}");
    assert!(said.ends_with("tokens forgotten here, revoke Warden in the provider's settings too"), "{said}");
    assert!(!authorizer.has_tokens());
    warden.shutdown().await;
    server.stop().await;
}
