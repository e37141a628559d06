//! What each incoming line is: a request (dispatched by method, with
//! `initialize` answered here), a notification, or a response to one of
//! the server's own requests.

use super::*;

/// Sorts one incoming line into request, notification or response.
pub(crate) fn handle_line(server: &Arc<Server>, tasks: &mut JoinSet<()>, line: &str) {
    let message: Value = match serde_json::from_str(line) {
        Ok(message) => message,
        Err(error) => {
            log!("stdin line is not JSON ({error}): {}", shorten(line));
            server.reply_error(Value::Null, PARSE_ERROR, &format!("Parse error: {error}"));
            return;
        }
    };
    let Some(fields) = message.as_object() else {
        log!("stdin message is not an object: {}", shorten(line));
        server.reply_error(Value::Null, INVALID_REQUEST, "Invalid Request: not a JSON object");
        return;
    };
    let params = fields.get("params").cloned().unwrap_or(Value::Null);
    match (fields.get("method"), fields.get("id")) {
        (Some(Value::String(method)), Some(id)) => {
            handle_request(server, tasks, id.clone(), method, &params);
        }
        (Some(Value::String(method)), None) => handle_notification(server, method, &params),
        (None, Some(id)) if fields.contains_key("result") || fields.contains_key("error") => {
            server.route_client_response(id, message.clone());
        }
        (None, Some(_)) => log!("ignoring a response without result or error: {}", shorten(line)),
        _ => {
            let id = fields.get("id").cloned().unwrap_or(Value::Null);
            server.reply_error(id, INVALID_REQUEST, "Invalid Request: no valid method");
        }
    }
}

/// Cuts long lines down for the log.
pub(crate) fn shorten(line: &str) -> String {
    const LIMIT: usize = 200;
    match line.char_indices().nth(LIMIT) {
        Some((cut, _)) => format!("{}...", &line[..cut]),
        None => line.to_owned(),
    }
}

pub(crate) fn handle_request(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, method: &str, params: &Value) {
    // A method it does not serve is refused below without a word, as SDK
    // servers refuse a `server/discover` probe before `initialize`.
    let served = matches!(method, "tools/list" | "tools/call");
    if served && !server.initialize_seen.load(Ordering::SeqCst) {
        log!("warning: {method} received before initialize; answering anyway");
    }
    match method {
        "initialize" => handle_initialize(server, tasks, id, params),
        "ping" => server.reply(id, json!({})),
        "tools/list" => match server.tools_page(params) {
            Ok(page) => server.reply(id, page),
            Err(message) => server.reply_error(id, INVALID_PARAMS, &message),
        },
        "tools/call" => start_tool_call(server, tasks, id, params),
        _ => {
            note_refused(method);
            server.send(&json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {"code": METHOD_NOT_FOUND, "message": "Method not found", "data": {"method": method}},
            }))
        }
    }
}

/// Appends `method` to the file `WARDEN_TEST_REFUSED_LOG` names, if any, so
/// a test can count what it refused (a `server/discover` probe) across
/// processes.
fn note_refused(method: &str) {
    use std::io::Write as _;
    let Some(path) = std::env::var_os("WARDEN_TEST_REFUSED_LOG") else { return };
    if let Ok(mut file) = std::fs::OpenOptions::new().create(true).append(true).open(path) {
        let _ = writeln!(file, "{method}");
    }
}

pub(crate) fn handle_notification(server: &Server, method: &str, params: &Value) {
    match method {
        "notifications/initialized" => {
            if server.initialize_seen.load(Ordering::SeqCst) {
                log!("client sent notifications/initialized");
            } else {
                log!("warning: notifications/initialized before initialize");
            }
            // Mimics servers (e.g. server-everything) that register some tools
            // only once the client is initialized.
            if server.options.list_changed_after_initialized {
                server.list_late_tool();
            }
        }
        "notifications/cancelled" => server.cancel_call(params.get("requestId")),
        _ => log!("ignoring notification {method}"),
    }
}

pub(crate) fn handle_initialize(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, params: &Value) {
    server.initialize_seen.store(true, Ordering::SeqCst);
    let requested = params.get("protocolVersion").and_then(Value::as_str);
    let version = match &server.options.protocol_version {
        Some(forced) => forced.clone(),
        None => negotiate_version(requested).to_owned(),
    };
    let client = params.pointer("/clientInfo/name").and_then(Value::as_str).unwrap_or("<unnamed>");
    let asked = requested.unwrap_or("no version");
    log!("initialize from {client}, asking for {asked}; answering {version}");

    if server.options.hang_initialize {
        log!("leaving initialize unanswered (--hang-initialize)");
        return;
    }
    let result = initialize_result(&server.options, &version);
    if !server.options.request_during_initialize {
        server.reply(id, result);
        return;
    }
    // The client's answer to our ping arrives through the main loop, so the
    // wait must happen in a task of its own.
    let server = Arc::clone(server);
    tasks.spawn(async move {
        match server.ask_client("ping", None, "init-ping".to_owned()).await {
            Ok(answer) => {
                log!("client answered init-ping: {answer}");
                server.reply(id, result);
            }
            Err(error) => log!("no answer to init-ping ({error}); leaving initialize unanswered"),
        }
    });
}

/// The client's version if we support it, else our latest (as the spec says).
pub(crate) fn negotiate_version(requested: Option<&str>) -> &'static str {
    SUPPORTED_PROTOCOL_VERSIONS
        .into_iter()
        .find(|supported| Some(*supported) == requested)
        .unwrap_or(LATEST_PROTOCOL_VERSION)
}

pub(crate) fn initialize_result(options: &Options, version: &str) -> Value {
    let capabilities = if options.no_tools_capability { json!({}) } else { json!({"tools": {"listChanged": true}}) };
    json!({
        "protocolVersion": version,
        "capabilities": capabilities,
        "serverInfo": {"name": SERVER_NAME, "version": SERVER_VERSION},
        "instructions": "Scriptable test server for Warden's integration tests. \
                         Each tool does what its name and description say.",
    })
}
