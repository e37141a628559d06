//! A host that embeds Warden as a library: the shortest complete program.
//!
//! It loads a config, builds Warden with its approver (set before start, so
//! the very first call meets it), waits for the servers to settle because
//! it wants every tool before it does anything, lists the tools, calls one,
//! and shuts down. A chat host would skip `settled()` and read `tools()` at
//! each turn.
//!
//! The approver is asked before a tool whose policy needs a person runs.
//! This one has no person to ask, so it approves calls of low and medium
//! risk, refuses high-risk ones, and says so on stderr; a real host would
//! show the request to its user.
//!
//! `--agent NAME` makes the call as one of the config's `[[agents]]`: its
//! allowlist and auto-approval apply. `--cancel-after MS` abandons the call
//! after MS milliseconds, the way a host's stop button would: dropping the
//! call's future is enough — Warden tells the server
//! (`notifications/cancelled`) and frees the call's slot. Progress the
//! server reports is printed to stderr as it comes.
//!
//! ```text
//! embed-host CONFIG TOOL [ARGUMENTS-JSON] [--agent NAME] [--cancel-after MS]
//! embed-host examples/warden.toml everything__echo '{"message":"hello"}'
//! embed-host examples/warden.toml everything__trigger-long-running-operation \
//!     '{"duration":10,"steps":10}' --cancel-after 2500
//! ```

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::time::Duration;

use warden_actors::{
    ApprovalAnswer, ApprovalDecision, ApprovalRequest, CallOptions, Progress, Risk, ServerState, Warden, WardenConfig,
};

/// What the command line asked for.
struct Asked {
    config: PathBuf,
    tool: String,
    arguments: serde_json::Value,
    agent: Option<String>,
    cancel_after: Option<Duration>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let asked = match parse(std::env::args().skip(1).collect()) {
        Ok(asked) => asked,
        Err(problem) => {
            eprintln!("{problem}\nusage: embed-host CONFIG TOOL [ARGUMENTS-JSON] [--agent NAME] [--cancel-after MS]");
            return ExitCode::from(2);
        }
    };

    // 1. Load and check the config: errors name the file, server and field.
    let config = match WardenConfig::load(&asked.config) {
        Ok(config) => config,
        Err(error) => {
            eprintln!("{error}");
            return ExitCode::from(2);
        }
    };

    // 2. Build and start. This returns before any server is up.
    let approver = |request: ApprovalRequest, answer: ApprovalAnswer| {
        eprintln!("approval asked for {} ({}): {}", request.tool, request.risk, request.reason);
        let decision = if request.risk == Risk::High {
            ApprovalDecision::Deny { reason: "this host refuses high-risk tools".into() }
        } else {
            ApprovalDecision::Approve
        };
        answer.send(decision, "embed-host's rule");
    };
    let warden = Warden::builder().config(&config).approver(Arc::new(approver)).start();
    let warden = warden.await.expect("Warden's actors start");

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

    // 4. Call one tool by its namespaced name, for the host or for an agent,
    //    printing progress as the server reports it.
    let (progress, mut reports) = tokio::sync::mpsc::channel::<Progress>(64);
    tokio::spawn(async move {
        while let Some(report) = reports.recv().await {
            let total = report.total.map(|total| format!("/{total}")).unwrap_or_default();
            eprintln!("progress {}{total} {}", report.progress, report.message.unwrap_or_default());
        }
    });
    let options = CallOptions::default().progress(progress);
    // The host's scope, or an agent's: the same type, the same calls.
    let call = async {
        let scope = warden.scope(asked.agent.as_deref())?;
        scope.call(&asked.tool, asked.arguments.clone(), options).await
    };
    let outcome = match asked.cancel_after {
        None => Some(call.await),
        // Dropping the call's future cancels the call.
        Some(after) => tokio::time::timeout(after, call).await.ok(),
    };
    let code = match outcome {
        None => {
            let after = asked.cancel_after.unwrap_or_default().as_millis();
            println!("cancelled after {after} ms: Warden told the server and freed the call's slot");
            ExitCode::SUCCESS
        }
        Some(Ok(result)) if result.is_error() => {
            println!("tool error: {}", result.text());
            ExitCode::from(1)
        }
        Some(Ok(result)) => {
            println!("result: {}", result.text());
            ExitCode::SUCCESS
        }
        Some(Err(error)) => {
            println!("call failed: {error}");
            ExitCode::from(1)
        }
    };

    // 5. Shut down: every server is closed and its process has ended.
    warden.shutdown().await;
    code
}

fn parse(args: Vec<String>) -> Result<Asked, String> {
    let mut positional = Vec::new();
    let (mut agent, mut cancel_after) = (None, None);
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.as_str() {
            "--agent" => agent = Some(args.next().ok_or("--agent needs an agent's name")?),
            "--cancel-after" => {
                let ms = args.next().ok_or("--cancel-after needs milliseconds")?;
                let ms: u64 = ms.parse().map_err(|_| format!("--cancel-after takes milliseconds, not '{ms}'"))?;
                cancel_after = Some(Duration::from_millis(ms));
            }
            _ => positional.push(arg),
        }
    }
    let [config, tool, rest @ ..] = positional.as_slice() else {
        return Err("a config and a tool name are needed".into());
    };
    let arguments = match rest {
        [] => serde_json::json!({}),
        [text] => serde_json::from_str(text).map_err(|error| format!("the arguments are not JSON: {error}"))?,
        _ => return Err("one JSON object of arguments, please".into()),
    };
    Ok(Asked { config: PathBuf::from(config), tool: tool.clone(), arguments, agent, cancel_after })
}
