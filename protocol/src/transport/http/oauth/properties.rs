//! What OAuth reads from servers, property-tested (issue 19): the token
//! endpoint's answer, authorization server metadata, the `Bearer`
//! challenge of `WWW-Authenticate`, and the PEM file of a client key.
//! Whatever they hold, nothing panics; what is accepted is what Warden
//! relies on (a non-empty Bearer access token, refresh before expiry,
//! endpoints on https or loopback http, the issuer asked for); and what
//! has a written form reads back the same.
//!
//! Found by these: an `expires_in` of 2^64 - 1 overflowed (a panic in a
//! debug build), and `-----BEGIN X-----END X-----` sliced backwards.
//! `PROPTEST_CASES` sets how many cases (default 2,000).

use base64::engine::general_purpose::STANDARD;
use base64::Engine as _;
use hyper::StatusCode;
use proptest::prelude::*;
use serde_json::{json, Map, Value};
use url::Url;

use super::challenge::Challenge;
use super::discovery::{read_metadata, IssuerRule};
use super::jwt::pem_block;
use super::tokens::read_answer;
use crate::properties::config;

/// Any JSON a server might put in a field, numbers at their extremes.
fn value() -> impl Strategy<Value = Value> + Clone {
    let leaf = prop_oneof![
        Just(Value::Null),
        any::<bool>().prop_map(Value::Bool),
        any::<u64>().prop_map(|n| json!(n)),
        Just(json!(u64::MAX)),
        any::<i64>().prop_map(|n| json!(n)),
        any::<f64>().prop_map(|n| json!(n)),
        "[ -~]{0,16}".prop_map(Value::String),
        prop_oneof![Just("Bearer"), Just("bearer"), Just("DPoP"), Just("")].prop_map(|text| json!(text)),
    ];
    leaf.prop_recursive(2, 8, 3, |inner| proptest::collection::vec(inner, 0..3).prop_map(Value::Array))
}

/// A URL as metadata might give one: right, wrong scheme, remote plain
/// http, not a URL.
fn url_text() -> impl Strategy<Value = Value> + Clone {
    prop_oneof![
        Just(json!("https://auth.example/token")),
        Just(json!("http://127.0.0.1:9/token")),
        Just(json!("http://localhost/authorize")),
        Just(json!("http://auth.example/token")),
        Just(json!("javascript:alert(1)")),
        Just(json!("file:///etc/passwd")),
        "[ -~]{0,24}".prop_map(Value::String),
        value(),
    ]
}

/// An object with some of `keys`, each with a value from `values`.
fn object(keys: &'static [&'static str], values: impl Strategy<Value = Value> + Clone) -> impl Strategy<Value = Value> {
    proptest::collection::vec((proptest::sample::select(keys), values), 0..keys.len() + 2).prop_map(|fields| {
        Value::Object(fields.into_iter().map(|(key, value)| (key.to_string(), value)).collect::<Map<_, _>>())
    })
}

/// A token endpoint's answer: mostly near-right (so the checks past the
/// first are reached), each field sometimes missing or of any kind.
fn token_answer() -> impl Strategy<Value = Value> {
    let token = prop_oneof![4 => "[A-Za-z0-9._-]{1,24}".prop_map(Value::String), 1 => value()];
    let kind = prop_oneof![3 => Just(json!("Bearer")), 1 => Just(json!("bearer")), 1 => value()];
    let expires = prop_oneof![
        2 => (0u64..100_000).prop_map(|n| json!(n)),
        1 => prop_oneof![Just(u64::MAX), Just(u64::MAX - 1), Just(1 << 63), Just(0)].prop_map(|n| json!(n)),
        1 => value(),
    ];
    let text = prop_oneof![3 => "[ -~]{0,12}".prop_map(Value::String), 1 => value()];
    let field = |strategy: BoxedStrategy<Value>| proptest::option::weighted(0.8, strategy);
    (
        field(token.boxed()),
        field(kind.boxed()),
        field(expires.boxed()),
        field(text.clone().boxed()),
        field(text.clone().boxed()),
        field(text.boxed()),
        field(value().boxed()),
    )
        .prop_map(|(access, kind, expires, refresh, scope, error, extra)| {
            let names = ["access_token", "token_type", "expires_in", "refresh_token", "scope", "error", "x"];
            let values = [access, kind, expires, refresh, scope, error, extra];
            let fields = names.into_iter().zip(values).filter_map(|(name, value)| Some((name.to_string(), value?)));
            Value::Object(fields.collect::<Map<_, _>>())
        })
}

const METADATA_FIELDS: &[&str] = &[
    "issuer",
    "authorization_endpoint",
    "token_endpoint",
    "registration_endpoint",
    "revocation_endpoint",
    "token_endpoint_auth_methods_supported",
    "code_challenge_methods_supported",
    "scopes_supported",
    "client_id_metadata_document_supported",
    "authorization_response_iss_parameter_supported",
];

/// Text made of the pieces a `WWW-Authenticate` header is made of.
fn header_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("Bearer"),
        Just("bearer "),
        Just("Basic realm=\"x\""),
        Just(", "),
        Just(","),
        Just("="),
        Just("\""),
        Just("\\"),
        Just(" "),
        Just("resource_metadata"),
        Just("scope"),
        Just("error"),
        Just("error_description"),
        Just("insufficient_scope"),
        Just("é"),
    ]
    .prop_map(str::to_string);
    proptest::collection::vec(prop_oneof![piece, "[ -~]{0,6}"], 0..16).prop_map(|pieces| pieces.concat())
}

/// Text made of the pieces a PEM file is made of.
fn pem_text() -> impl Strategy<Value = String> {
    let piece = prop_oneof![
        Just("-----BEGIN "),
        Just("-----END "),
        Just("-----"),
        Just("PRIVATE KEY"),
        Just("EC PRIVATE KEY"),
        Just("\n"),
        Just("MIIB"),
        Just("=="),
        Just("é"),
    ]
    .prop_map(str::to_string);
    proptest::collection::vec(prop_oneof![piece, "[A-Za-z0-9+/= \n-]{0,8}"], 0..16).prop_map(|pieces| pieces.concat())
}

proptest! {
    #![proptest_config(config())]

    #[test]
    fn a_token_answer_never_panics_and_what_it_accepts_is_a_bearer_token_refreshed_before_expiry(
        status in prop_oneof![3 => 200u16..300, 1 => 100u16..600],
        answer in token_answer(),
        now in 0u64..(1 << 40),
        previous in proptest::option::of("[a-z]{1,8}"),
    ) {
        let status = StatusCode::from_u16(status).unwrap();
        let endpoint = Url::parse("https://auth.example/token").unwrap();
        if let Ok(tokens) = read_answer(status, &answer, &endpoint, previous.as_deref(), now) {
            prop_assert!(status.is_success());
            prop_assert!(!tokens.access_token.is_empty());
            prop_assert_eq!(Some(tokens.access_token.as_str()), answer["access_token"].as_str());
            let kind = answer.get("token_type").and_then(Value::as_str);
            prop_assert!(kind.is_none_or(|kind| kind.eq_ignore_ascii_case("bearer")), "{:?}", kind);
            if let (Some(expires), Some(refresh)) = (tokens.expires_at, tokens.refresh_at) {
                prop_assert!(now <= refresh && refresh <= expires, "{now} {refresh} {expires}");
            }
            let kept = answer.get("refresh_token").and_then(Value::as_str).map(str::to_string).or(previous);
            prop_assert_eq!(tokens.refresh_token, kept);
        }
    }

    #[test]
    fn metadata_never_panics_and_what_it_accepts_names_the_issuer_and_safe_endpoints(
        mut document in object(METADATA_FIELDS, url_text()),
        issuer_matches in any::<bool>(),
    ) {
        let issuer = Url::parse("https://auth.example/").unwrap();
        if issuer_matches {
            document["issuer"] = json!("https://auth.example");
        }
        let at = Url::parse("https://auth.example/.well-known/oauth-authorization-server").unwrap();
        if let Ok(server) = read_metadata(&document, &issuer, &at, IssuerRule::Exact) {
            prop_assert_eq!(server.issuer.trim_end_matches('/'), "https://auth.example");
            let endpoints = [Some(&server.authorization_endpoint), Some(&server.token_endpoint)]
                .into_iter()
                .chain([server.registration_endpoint.as_ref(), server.revocation_endpoint.as_ref()]);
            for endpoint in endpoints.flatten() {
                let url = Url::parse(endpoint).unwrap();
                let loopback = matches!(url.host_str(), Some("localhost" | "127.0.0.1"));
                prop_assert!(url.scheme() == "https" || (url.scheme() == "http" && loopback), "{}", endpoint);
            }
        }
    }

    #[test]
    fn any_www_authenticate_header_reads_without_panicking(header in header_text()) {
        let challenge = Challenge::parse(&header);
        for value in [&challenge.resource_metadata, &challenge.scope, &challenge.error, &challenge.error_description] {
            prop_assert!(value.as_deref() != Some(""), "an empty parameter is not taken");
        }
    }

    #[test]
    fn a_written_bearer_challenge_reads_back(
        scope in "[a-z:]{1,12}( [a-z:]{1,12}){0,2}",
        metadata in "https://[a-z]{1,8}\\.example/[a-z/-]{0,12}",
        error in proptest::option::of("[a-z_]{1,16}"),
        other_first in any::<bool>(),
    ) {
        let mut header = String::new();
        if other_first {
            header += "Basic realm=\"x\", ";
        }
        header += &format!("Bearer resource_metadata=\"{metadata}\", scope=\"{scope}\"");
        if let Some(error) = &error {
            header += &format!(", error={error}");
        }
        let challenge = Challenge::parse(&header);
        prop_assert_eq!(challenge.resource_metadata, Some(metadata));
        prop_assert_eq!(challenge.scope, Some(scope));
        prop_assert_eq!(challenge.error, error);
    }

    #[test]
    fn any_pem_text_reads_without_panicking(text in pem_text()) {
        let _ = pem_block(&text);
    }

    #[test]
    fn a_written_pem_block_reads_back(label in "[A-Z]{1,8}( [A-Z]{1,8}){0,2}", bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let encoded = STANDARD.encode(&bytes);
        let lines: Vec<&str> = encoded.as_bytes().chunks(64).map(|line| std::str::from_utf8(line).unwrap()).collect();
        let pem = format!("-----BEGIN {label}-----\n{}\n-----END {label}-----\n", lines.join("\n"));
        prop_assert_eq!(pem_block(&pem), Some((label, bytes)));
    }
}
