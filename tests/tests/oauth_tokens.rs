//! OAuth tokens at run time, on the embedded handle: refreshed before they
//! expire and after a 401 (rotation honoured, one refresh for many
//! concurrent calls), a refused refresh putting the server in
//! `needs_login`, step-up on a 403 asking for scope, and the client
//! credentials grant (a secret, or an ES256 or RS256 key signing
//! `private_key_jwt`) that needs no person. Against `warden_tests::oauth_server`.

use std::path::PathBuf;
use std::time::Duration;

use serde_json::json;
use warden_actors::{Authorizer, CallError, ServerState, Warden, AUTH_REQUIRED};
use warden_tests::browser::Person;
use warden_tests::oauth_server::{Client, OAuthServer, Options};
use warden_tests::{model_text, test_config};

fn home() -> PathBuf {
    warden_tests::shared_home("oauth-tokens-home")
}

/// A Warden whose one server, `remote`, is behind `server`, logged in
/// and running.
async fn logged_in(server: &OAuthServer) -> Warden {
    home();
    let config = test_config(&format!("[servers.remote]\nurl = \"{}\"\n", server.mcp_url())).unwrap();
    let warden = Warden::start(&config).await.expect("Warden starts");
    warden.settled().await;
    login(server).await;
    warden.reconnect("remote").await.unwrap();
    warden.wait_for(|s| s.status("remote").is_some_and(|s| s.state == ServerState::Running)).await;
    warden
}

async fn login(server: &OAuthServer) {
    let authorizer = Authorizer::new("remote", &server.mcp_url(), None, &home(), None).unwrap();
    authorizer.login(&Person, Duration::from_secs(20)).await.expect("the login succeeds");
}

fn state(warden: &Warden) -> ServerState {
    warden.status().into_iter().find(|s| s.name == "remote").unwrap().state
}

#[tokio::test]
async fn a_token_is_refreshed_before_it_expires() {
    // Five seconds of life: refreshed when a fifth of it is left.
    let server = OAuthServer::start(Options { token_secs: 5, ..Options::default() });
    let warden = logged_in(&server).await;
    assert!(server.seen().grants("refresh_token").is_empty());
    tokio::time::sleep(Duration::from_millis(4300)).await;
    model_text(&warden, "remote__whoami", json!({})).await;
    let seen = server.seen();
    assert_eq!(seen.grants("refresh_token").len(), 1, "one refresh, before the call");
    let unauthorized = seen.mcp_authorizations.iter().filter(|a| a.is_empty()).count();
    // Only the probe of the login and the first start went without a token.
    assert_eq!(unauthorized, 2, "{:?}", seen.mcp_authorizations);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_401_refreshes_once_with_the_rotated_token_and_the_call_goes_through() {
    let server = OAuthServer::start(Options::default());
    let warden = logged_in(&server).await;
    for round in 1..=2 {
        server.expire_access_tokens();
        let text = model_text(&warden, "remote__whoami", json!({})).await;
        assert!(text.contains("scope read offline_access"), "{text}");
        assert_eq!(server.seen().grants("refresh_token").len(), round);
    }
    let seen = server.seen();
    let refreshes = seen.grants("refresh_token");
    assert_ne!(refreshes[0]["refresh_token"], refreshes[1]["refresh_token"], "the rotated token is used");
    assert_eq!(refreshes[0]["resource"], server.mcp_url());
    let metrics = warden.metrics().encode(&warden.status());
    assert!(metrics.contains("warden_oauth_refreshes_total{server=\"remote\",outcome=\"ok\"} 2\n"), "{metrics}");
    warden.shutdown().await;
}

#[tokio::test]
async fn concurrent_calls_after_expiry_share_one_refresh() {
    let server = OAuthServer::start(Options::default());
    let warden = logged_in(&server).await;
    server.expire_access_tokens();
    let mut calls = tokio::task::JoinSet::new();
    for _ in 0..8 {
        let warden = warden.clone();
        calls.spawn(async move { warden.call_tool("remote__whoami", json!({})).await });
    }
    while let Some(result) = calls.join_next().await {
        assert!(!result.unwrap().expect("the call succeeds").is_error());
    }
    assert_eq!(server.seen().grants("refresh_token").len(), 1);
    warden.shutdown().await;
}

#[tokio::test]
async fn a_refused_refresh_puts_the_server_in_needs_login_not_a_crash_loop() {
    let server = OAuthServer::start(Options::default());
    let warden = logged_in(&server).await;
    server.expire_access_tokens();
    server.revoke_refresh_tokens();
    let error = warden.call_tool("remote__whoami", json!({})).await.unwrap_err();
    let CallError::Server { code, message, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*code, AUTH_REQUIRED.0);
    assert!(message.starts_with("server 'remote' needs a login (refreshing the token failed:"), "{message}");
    // The library names no command: a host has its own way to log in.
    assert!(message.ends_with(")") && !message.contains("warden login"), "{message}");
    warden.wait_for(|s| s.status("remote").is_some_and(|s| s.state.is_settled())).await;
    let ServerState::NeedsLogin { reason } = state(&warden) else { panic!("{}", state(&warden)) };
    assert!(reason.contains("refused: invalid_grant (refresh token unknown, used or revoked)"), "{reason}");
    // It stays there: no restarts.
    tokio::time::sleep(Duration::from_millis(1500)).await;
    let status = warden.status().into_iter().find(|s| s.name == "remote").unwrap();
    assert!(matches!(status.state, ServerState::NeedsLogin { .. }));
    assert_eq!(status.restarts, 0);
    let error = warden.call_tool("remote__whoami", json!({})).await.unwrap_err();
    assert!(matches!(error, CallError::NeedsLogin { .. }), "{error:?}");
    let metrics = warden.metrics().encode(&warden.status());
    assert!(metrics.contains("warden_oauth_refreshes_total{server=\"remote\",outcome=\"failed\"} 1\n"), "{metrics}");
    warden.shutdown().await;
}

#[tokio::test]
async fn a_403_for_more_scope_fails_that_call_and_the_next_login_asks_for_it() {
    let server = OAuthServer::start(Options::default());
    let warden = logged_in(&server).await;
    let error = warden.call_tool("remote__admin", json!({})).await.unwrap_err();
    let CallError::Server { code, message, .. } = &error else { panic!("{error:?}") };
    assert_eq!(*code, AUTH_REQUIRED.0);
    assert_eq!(message, "the server needs the scope `admin` for this call: a new login must grant it, then call again");
    assert_eq!(state(&warden), ServerState::Running, "the other tools go on");
    login(&server).await;
    let asked = &server.seen().authorizations[1]["scope"];
    assert_eq!(asked, "read admin offline_access");
    assert_eq!(model_text(&warden, "remote__admin", json!({})).await, "admin ok");
    warden.shutdown().await;
}

#[tokio::test]
async fn client_credentials_need_no_person_with_a_secret_or_an_es256_or_rs256_assertion() {
    home();
    let key = rcgen::KeyPair::generate().expect("a P-256 key");
    let key_file = warden_tests::scratch_dir("oauth-key").join("key.pem");
    std::fs::write(&key_file, key.serialize_pem()).unwrap();
    // An RSA key too, made by the pinned Python `cryptography` (ring makes none).
    let rsa_file = key_file.with_file_name("rsa.pem");
    let (python, mut args) =
        warden_tests::real_servers::python_server_command(&warden_tests::real_servers::python_script("rsa_key.py"));
    args.push(rsa_file.display().to_string());
    let made = std::process::Command::new(python).args(&args).output().expect("python runs");
    assert!(made.status.success(), "{}", String::from_utf8_lossy(&made.stderr));
    let hex = String::from_utf8(made.stdout).unwrap();
    let rsa_public: Vec<u8> =
        (0..hex.trim().len()).step_by(2).map(|i| u8::from_str_radix(&hex.trim()[i..i + 2], 16).unwrap()).collect();
    let cases = [
        (
            Client {
                id: "svc".into(),
                secret: Some("s3cret".into()),
                method: "client_secret_basic".into(),
                public_key: None,
            },
            "client_secret = \"s3cret\"".to_string(),
            "client_secret_basic",
        ),
        (
            Client {
                id: "svc".into(),
                secret: None,
                method: "private_key_jwt".into(),
                public_key: Some(key.public_key_raw().to_vec()),
            },
            format!("private_key_file = {:?}\nsigning_alg = \"ES256\"", key_file.display().to_string()),
            "private_key_jwt",
        ),
        (
            Client { id: "svc".into(), secret: None, method: "private_key_jwt".into(), public_key: Some(rsa_public) },
            format!("private_key_file = {:?}\nsigning_alg = \"RS256\"", rsa_file.display().to_string()),
            "private_key_jwt",
        ),
    ];
    for (client, proof, method) in cases {
        let auth_methods = vec![method.to_string()];
        let server = OAuthServer::start(Options { clients: vec![client], auth_methods, ..Options::default() });
        let text = format!(
            "[servers.remote]\nurl = \"{}\"\n[servers.remote.oauth]\ngrant = \"client_credentials\"\nclient_id = \"svc\"\n{proof}\n",
            server.mcp_url()
        );
        let warden = Warden::start(&test_config(&text).unwrap()).await.unwrap();
        warden.settled().await;
        assert_eq!(state(&warden), ServerState::Running, "{method}");
        assert!(model_text(&warden, "remote__whoami", json!({})).await.starts_with("client svc"));
        let grants = server.seen();
        let grants = grants.grants("client_credentials");
        assert_eq!(grants.len(), 1, "{method}: one token for the whole start");
        assert_eq!(grants[0]["auth"], method);
        assert_eq!(grants[0]["resource"], server.mcp_url());
        warden.shutdown().await;
    }
}

#[tokio::test]
async fn a_servers_tokens_never_reach_a_model_or_another_server() {
    let server = OAuthServer::start(Options::default());
    let warden = logged_in(&server).await;
    // A careless server says the token it was sent: redacted.
    let text = model_text(&warden, "remote__leak", json!({})).await;
    assert_eq!(text, "debug: you sent Bearer [REDACTED:oauth_token:remote]");
    // A model handing the token to a server: refused before it is sent.
    let token = server.seen().mcp_authorizations.last().unwrap().trim_start_matches("Bearer ").to_string();
    let error = warden.call_tool("remote__echo", json!({"message": format!("use {token}")})).await.unwrap_err();
    let CallError::SecretInArguments { kinds, paths, .. } = &error else { panic!("{error:?}") };
    assert_eq!(kinds, &["oauth_token:remote"]);
    assert_eq!(paths, &["/message"]);
    // After a refresh the new token is known, the old one no longer matters.
    server.expire_access_tokens();
    let text = model_text(&warden, "remote__leak", json!({})).await;
    assert_eq!(text, "debug: you sent Bearer [REDACTED:oauth_token:remote]");
    warden.shutdown().await;
}
