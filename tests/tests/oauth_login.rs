//! OAuth for remote servers, end to end on the embedded handle: a server
//! behind OAuth waits in `needs_login`; a login (discovery, registration,
//! PKCE, the loopback redirect) saves tokens the running server picks up;
//! each discovery shape and client identity of the spec works; forged
//! redirects are refused. Against `warden_tests::oauth_server`, a strict
//! authorization server written from the specs.

use std::os::unix::fs::PermissionsExt as _;
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use serde_json::json;
use warden_actors::{Authorizer, CallError, OAuthConfig, ServerState, Warden};
use warden_tests::browser::Person;
use warden_tests::oauth_server::{Client, MetadataAt, OAuthServer, Options, PrmAt};
use warden_tests::{model_text, test_config};

fn home() -> PathBuf {
    warden_tests::shared_home("oauth-home")
}

fn config(server: &OAuthServer, extra: &str) -> warden_actors::WardenConfig {
    test_config(&format!("[servers.remote]\nurl = \"{}\"\n{extra}", server.mcp_url())).expect("the config loads")
}

fn authorizer(server: &OAuthServer, oauth: Option<OAuthConfig>) -> Arc<Authorizer> {
    Authorizer::new("remote", &server.mcp_url(), oauth, &home(), None).expect("an authorizer")
}

async fn login(server: &OAuthServer) -> Result<warden_protocol::LoggedIn, warden_protocol::OAuthError> {
    authorizer(server, None).login(&Person, Duration::from_secs(20)).await
}

async fn start(server: &OAuthServer) -> Warden {
    home();
    let warden = Warden::start(&config(server, "")).await.expect("Warden starts");
    warden.settled().await;
    warden
}

#[tokio::test]
async fn a_server_behind_oauth_waits_for_a_login_and_runs_after_it() {
    let server = OAuthServer::start(Options::default());
    let warden = start(&server).await;
    let status = warden.status().into_iter().find(|s| s.name == "remote").unwrap();
    let ServerState::NeedsLogin { reason } = &status.state else { panic!("not needs_login: {}", status.state) };
    assert!(reason.contains("needs a login: the server asks for authorization"), "{reason}");
    assert!(warden.tools().is_empty(), "its tools are not listed");
    let error = warden.call_tool("remote__whoami", json!({})).await.unwrap_err();
    assert!(matches!(error, CallError::NeedsLogin { .. }), "{error:?}");
    assert!(error.to_string().ends_with("is unavailable until someone logs in to it"), "{error}");

    let done = login(&server).await.expect("the login succeeds");
    assert_eq!(done.issuer, server.issuer());
    assert_eq!(done.scope.as_deref(), Some("read offline_access"));
    let seen = server.seen();
    // Discovery: the PRM the 401 named, then RFC 8414 metadata; then DCR.
    assert!(seen.paths.contains(&"GET /meta/resource.json".to_string()), "{:?}", seen.paths);
    assert!(seen.paths.contains(&"GET /.well-known/oauth-authorization-server".to_string()), "{:?}", seen.paths);
    assert_eq!(seen.registrations.len(), 1);
    let registration = &seen.registrations[0];
    assert_eq!(registration["application_type"], "native");
    assert_eq!(registration["token_endpoint_auth_method"], "none");
    let redirect = registration["redirect_uris"][0].as_str().unwrap().to_string();
    assert!(redirect.starts_with("http://127.0.0.1:") && redirect.ends_with("/callback"), "{redirect}");
    // PKCE and the resource went along; the server verified them.
    let authorization = &seen.authorizations[0];
    assert_eq!(authorization["code_challenge_method"], "S256");
    assert_eq!(authorization["resource"], server.mcp_url());
    assert_eq!(authorization["scope"], "read offline_access");
    let exchange = &seen.grants("authorization_code")[0];
    assert_eq!(exchange["code_verifier"].len(), 43);
    // The redirect listener is closed once the login is over.
    let port: u16 = redirect.trim_start_matches("http://127.0.0.1:").trim_end_matches("/callback").parse().unwrap();
    assert!(std::net::TcpStream::connect(("127.0.0.1", port)).is_err(), "the listener on {port} is closed");

    // The tokens file is the owner's alone.
    let file = authorizer(&server, None).token_file();
    assert_eq!(std::fs::metadata(&file).unwrap().permissions().mode() & 0o777, 0o600);
    assert_eq!(std::fs::metadata(file.parent().unwrap()).unwrap().permissions().mode() & 0o777, 0o700);

    warden.reconnect("remote").await.expect("reconnects");
    warden.wait_for(|s| s.status("remote").is_some_and(|s| s.state == ServerState::Running)).await;
    let text = model_text(&warden, "remote__whoami", json!({})).await;
    assert!(text.contains("with scope read offline_access"), "{text}");
    warden.shutdown().await;
}

/// Logs in, connects the waiting server again and calls `whoami`.
async fn login_and_call(server: &OAuthServer, extra: &str) -> String {
    let config = config(server, extra);
    let warden = Warden::start(&config).await.expect("Warden starts");
    warden.settled().await;
    let oauth = config.servers["remote"].oauth.clone();
    authorizer(server, oauth).login(&Person, Duration::from_secs(20)).await.expect("the login succeeds");
    warden.reconnect("remote").await.expect("reconnects");
    warden
        .wait_for(|s| s.status("remote").is_some_and(|s| s.state.is_settled() && s.state != ServerState::Starting))
        .await;
    let text = model_text(&warden, "remote__whoami", json!({})).await;
    warden.shutdown().await;
    text
}

#[tokio::test]
async fn every_discovery_path_of_the_spec_finds_the_authorization_server() {
    home();
    let cases = [
        (
            PrmAt::WellKnownPath,
            MetadataAt::Oauth,
            "",
            "GET /.well-known/oauth-protected-resource/mcp",
            "GET /.well-known/oauth-authorization-server",
        ),
        (
            PrmAt::WellKnownRoot,
            MetadataAt::Oidc,
            "",
            "GET /.well-known/oauth-protected-resource",
            "GET /.well-known/openid-configuration",
        ),
        (
            PrmAt::Header,
            MetadataAt::Oauth,
            "/tenant",
            "GET /meta/resource.json",
            "GET /.well-known/oauth-authorization-server/tenant",
        ),
        (
            PrmAt::Header,
            MetadataAt::Oidc,
            "/tenant",
            "GET /meta/resource.json",
            "GET /.well-known/openid-configuration/tenant",
        ),
        // 2025-03-26: no PRM, no metadata: /authorize, /token, /register at the origin.
        (PrmAt::None, MetadataAt::None, "", "POST /register", "GET /authorize"),
    ];
    for (prm, metadata, issuer_path, first, second) in cases {
        let server =
            OAuthServer::start(Options { prm, metadata, issuer_path: issuer_path.into(), ..Options::default() });
        let text = login_and_call(&server, "").await;
        assert!(text.starts_with("client client-"), "{prm:?} {metadata:?}: {text}");
        let paths = server.seen().paths;
        let at = |path: &str| paths.iter().position(|p| p == path);
        let (Some(a), Some(b)) = (at(first), at(second)) else { panic!("{prm:?} {metadata:?}: {paths:?}") };
        assert!(a < b, "{prm:?} {metadata:?}: {paths:?}");
    }
}

#[tokio::test]
async fn a_preregistered_client_authenticates_the_way_the_server_allows() {
    home();
    for (methods, secret, expected) in [
        (vec!["client_secret_basic", "client_secret_post"], Some("s3cret"), "client_secret_basic"),
        (vec!["client_secret_post"], Some("s3cret"), "client_secret_post"),
        (vec!["none"], None, "none"),
    ] {
        let client =
            Client { id: "pre".into(), secret: secret.map(String::from), method: expected.into(), public_key: None };
        let server = OAuthServer::start(Options {
            auth_methods: methods.iter().map(|m| m.to_string()).collect(),
            registration: false,
            clients: vec![client],
            ..Options::default()
        });
        let secret_line = secret.map(|s| format!("client_secret = \"{s}\"\n")).unwrap_or_default();
        let text =
            login_and_call(&server, &format!("[servers.remote.oauth]\nclient_id = \"pre\"\n{secret_line}")).await;
        assert!(text.starts_with("client pre "), "{text}");
        let seen = server.seen();
        assert!(seen.registrations.is_empty(), "no registration for a configured client");
        assert_eq!(seen.grants("authorization_code")[0]["auth"], expected);
    }
}

#[tokio::test]
async fn a_client_metadata_document_url_is_the_client_id_where_supported() {
    home();
    let server = OAuthServer::start(Options { client_metadata_documents: true, ..Options::default() });
    let url = "https://warden.example.com/client.json";
    let text = login_and_call(&server, &format!("[servers.remote.oauth]\nclient_metadata_url = \"{url}\"\n")).await;
    assert!(text.starts_with(&format!("client {url} ")), "{text}");
    let seen = server.seen();
    assert!(seen.registrations.is_empty());
    assert_eq!(seen.authorizations[0]["client_id"], url);
}

#[tokio::test]
async fn a_forged_state_or_issuer_in_the_redirect_is_refused() {
    home();
    let server = OAuthServer::start(Options { forged_state: Some("forged".into()), ..Options::default() });
    let error = login(&server).await.unwrap_err();
    let refused = "the redirect's `state` is not the one Warden sent: refused (a forged or stale redirect)";
    assert_eq!(error, warden_protocol::OAuthError::Browser(refused.into()));
    assert!(server.seen().grants("authorization_code").is_empty(), "no code was exchanged");

    let server =
        OAuthServer::start(Options { forged_iss: Some("http://127.0.0.1:9/evil".into()), ..Options::default() });
    let error = login(&server).await.unwrap_err();
    assert_eq!(
        error,
        warden_protocol::OAuthError::Browser(format!(
            "the redirect comes from the issuer http://127.0.0.1:9/evil, not {}: refused (RFC 9207 mix-up protection)",
            server.issuer()
        ))
    );
    assert!(!authorizer(&server, None).has_tokens());
}

#[tokio::test]
async fn bad_metadata_and_token_answers_are_named() {
    home();
    use warden_protocol::OAuthError::{Discovery, Token};
    // Each with the step it must be named as.
    type Step = fn(String) -> warden_protocol::OAuthError;
    let cases: [(Options, &str, Step); 4] = [
        (Options { metadata: MetadataAt::NotJson, ..Options::default() }, "/.well-known/oauth-authorization-server is not JSON", Discovery),
        (
            Options { advertised_issuer: Some("http://auth.example.com".into()), ..Options::default() },
            "the authorization server URL http://auth.example.com/ is plain http:// on another machine; OAuth needs https://",
            Discovery,
        ),
        (
            Options { metadata: MetadataAt::Redirect, ..Options::default() },
            "redirected (HTTP 302) to https://evil.example.com/.well-known/oauth-authorization-server; Warden does not follow redirects",
            Discovery,
        ),
        (Options { token_without_access_token: true, ..Options::default() }, "/token has no `access_token`", Token),
    ];
    for (options, expected, step) in cases {
        let server = OAuthServer::start(options);
        let error = login(&server).await.unwrap_err();
        assert!(error.to_string().contains(expected), "expected «{expected}» in «{error}»");
        assert_eq!(error, step(error.to_string()), "the wrong step named");
    }
}
