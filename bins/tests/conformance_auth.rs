//! The official MCP conformance suite's client authorization scenarios,
//! with `warden` as the client: discovery in every metadata layout, scope
//! selection and step-up, the token endpoint's authentication methods,
//! pre-registration, the 2025-03-26 back-compat paths and the client
//! credentials extension. Each scenario scripts an MCP server and an
//! authorization server, runs `warden-conformance-client` (which writes
//! the config a user would and runs `warden call --no-daemon`, logging in
//! through the test browser), and checks what Warden sent.
//!
//! Not run: `auth/cross-app-access-complete-flow` (an extension Warden
//! does not implement: an enterprise IdP's ID token exchanged for an
//! authorization grant) and the `draft` scenarios.

#![allow(unused_crate_dependencies)]

use warden_tests::{bins, conformance};

/// The scenarios for MCP 2025-11-25 and the revisions before it, and the
/// client credentials extension.
const SCENARIOS: [&str; 18] = [
    "auth/metadata-default",
    "auth/metadata-var1",
    "auth/metadata-var2",
    "auth/metadata-var3",
    "auth/basic-cimd",
    "auth/scope-from-www-authenticate",
    "auth/scope-from-scopes-supported",
    "auth/scope-omitted-when-undefined",
    "auth/scope-step-up",
    "auth/scope-retry-limit",
    "auth/token-endpoint-auth-basic",
    "auth/token-endpoint-auth-post",
    "auth/token-endpoint-auth-none",
    "auth/pre-registration",
    "auth/2025-03-26-oauth-metadata-backcompat",
    "auth/2025-03-26-oauth-endpoint-fallback",
    "auth/client-credentials-jwt",
    "auth/client-credentials-basic",
];

#[test]
fn warden_passes_every_client_auth_scenario_of_the_conformance_suite() {
    // The list is the suite's: a scenario renamed or added for 2025-11-25
    // shows here, not as a silent skip.
    let listed = conformance::scenarios("client", "2025-11-25");
    let for_2025_11_25: Vec<&str> =
        listed.iter().map(String::as_str).filter(|name| name.starts_with("auth/")).collect();
    let ours: Vec<&str> = SCENARIOS.iter().copied().filter(|name| for_2025_11_25.contains(name)).collect();
    assert_eq!(ours, for_2025_11_25, "the suite's 2025-11-25 auth scenarios changed");

    let client = bins::binary("warden-conformance-client").display().to_string();
    let warden = env!("CARGO_BIN_EXE_warden");
    let browser = bins::test_browser().display().to_string();
    let env = [("WARDEN_CONFORMANCE_WARDEN", warden), ("WARDEN_CONFORMANCE_BROWSER", browser.as_str())];
    // Two at a time: each is a few processes for a few seconds.
    let outcomes: Vec<conformance::Outcome> = SCENARIOS
        .chunks(2)
        .flat_map(|pair| {
            std::thread::scope(|scope| {
                let runs: Vec<_> =
                    pair.iter().map(|scenario| scope.spawn(|| conformance::client(scenario, &client, &env))).collect();
                runs.into_iter().map(|run| run.join().expect("the scenario ran")).collect::<Vec<_>>()
            })
        })
        .collect();
    let failed: Vec<String> = outcomes.iter().filter_map(conformance::Outcome::failed).collect();
    for outcome in &outcomes {
        for warning in outcome.with_status("WARNING") {
            eprintln!("{}: warning {}: {}", outcome.scenario, warning.id, warning.description);
        }
    }
    let passed = outcomes.len() - failed.len();
    assert!(failed.is_empty(), "{passed} of {} scenarios passed:\n{}", outcomes.len(), failed.join("\n"));
}
