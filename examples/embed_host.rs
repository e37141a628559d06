//! A host that embeds Warden as a library: the shortest complete program.
//!
//! It loads a config, starts Warden (which returns at once; servers start in
//! the background), waits for the servers to settle because it wants every
//! tool before it does anything, lists the tools, calls one, and shuts down.
//! A chat host would skip `settled()` and read `tools()` at each turn.
//!
//! It attaches an approver: Warden asks it before running a tool whose
//! policy needs a person (with none attached, such calls are denied). This
//! one has no person to ask, so it approves calls of low and medium risk,
//! refuses high-risk ones, and says so on stderr; a real host would show the
//! request to its user.
//!
//! ```text
//! embed-host CONFIG TOOL [ARGUMENTS-JSON]
//! embed-host examples/warden.toml everything__echo '{"message":"hello"}'
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;

use warden_actors::{ApprovalAnswer, ApprovalDecision, ApprovalRequest, ServerState, Warden, WardenConfig};
use warden_policy::Risk;

#[tokio::main]
async fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let [config, tool, rest @ ..] = args.as_slice() else {
        eprintln!("usage: embed-host CONFIG TOOL [ARGUMENTS-JSON]");
        return ExitCode::from(2);
    };
    let arguments: serde_json::Value = match rest.first().map(|text| serde_json::from_str(text)) {
        None => serde_json::json!({}),
        Some(Ok(value)) => value,
        Some(Err(error)) => {
            eprintln!("the arguments are not JSON: {error}");
            return ExitCode::from(2);
        }
    };

    // 1. Load and check the config: errors name the file, server and field.
    let config = match WardenConfig::load(&PathBuf::from(config)) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };

    // 2. Start. This returns before any server is up.
    let warden = Warden::start(&config).await.expect("Warden's actors start");
    warden.attach_approver(Arc::new(|request: ApprovalRequest, answer: ApprovalAnswer| {
        eprintln!("approval asked for {} ({}): {}", request.tool, request.risk, request.reason);
        let decision = if request.risk == Risk::High {
            ApprovalDecision::Deny { reason: "this host refuses high-risk tools".into() }
        } else {
            ApprovalDecision::Approve
        };
        answer.send(decision, "embed-host's rule");
    }));

    // 3. Wait until every server is running or failed, then look.
    warden.settled().await;
    for server in warden.status() {
        match &server.state {
            ServerState::Failed { reason } => println!("server {}: failed: {reason}", server.name),
            state => println!("server {}: {state}, {} tools", server.name, server.tools),
        }
    }
    for entry in warden.tools() {
        println!("tool {}", entry.name);
    }

    // 4. Call one tool by its namespaced name.
    let code = match warden.call_tool(tool, arguments).await {
        Ok(result) if result.is_error() => {
            println!("tool error: {}", result.text());
            ExitCode::from(1)
        }
        Ok(result) => {
            println!("result: {}", result.text());
            ExitCode::SUCCESS
        }
        Err(error) => {
            println!("call failed: {error}");
            ExitCode::from(1)
        }
    };

    // 5. Shut down: every server is closed and its process has ended.
    warden.shutdown().await;
    code
}
