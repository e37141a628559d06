//! `tools/call`: running one tool (cancellable), and every tool's code.

use super::*;

pub(crate) fn start_tool_call(server: &Arc<Server>, tasks: &mut JoinSet<()>, id: Value, params: &Value) {
    let Some(name) = params.get("name").and_then(Value::as_str) else {
        server.reply_error(id, INVALID_PARAMS, "tools/call needs a string `name`");
        return;
    };
    if !server.serves(name) {
        server.reply_error(id, INVALID_PARAMS, &format!("Unknown tool: {name}"));
        return;
    }
    let arguments = match params.get("arguments") {
        None | Some(Value::Null) => json!({}),
        Some(arguments) => arguments.clone(),
    };
    let call = Call { name: name.to_owned(), arguments, meta: params.get("_meta").cloned().unwrap_or(Value::Null) };
    let ticket = server.register_call(&id);
    tasks.spawn(run_call(Arc::clone(server), id, call, ticket));
}

/// Runs one tool call and answers it, unless it gets cancelled first.
/// One `tools/call`: the tool, its arguments and the request's `_meta`.
pub(crate) struct Call {
    pub(crate) name: String,
    pub(crate) arguments: Value,
    pub(crate) meta: Value,
}

pub(crate) async fn run_call(server: Arc<Server>, id: Value, call: Call, ticket: Option<CallTicket>) {
    let result = match ticket {
        None => call_tool(&server, &call).await,
        Some(ticket) => {
            let result = tokio::select! {
                result = call_tool(&server, &call) => result,
                // The spec says a cancelled request gets no response.
                _ = ticket.cancelled => return,
            };
            if !server.finish_call(&ticket.key, ticket.token) {
                return;
            }
            result
        }
    };
    if !super::mischief::answer_in_shape(&server, &call, &id, &result) {
        server.reply(id, result);
    }
}

/// Runs a served tool. Bad arguments become an `isError` result, never a crash.
pub(crate) async fn call_tool(server: &Server, call: &Call) -> Value {
    let Call { name, arguments, meta } = call;
    let Some(args) = arguments.as_object() else {
        return tool_error("arguments must be an object");
    };
    let result = match name.as_str() {
        "echo" => tool_echo(args),
        "add" => tool_add(args),
        "sleep" => tool_sleep(args).await,
        "crash" => tool_crash(args),
        "garbage" => Ok(tool_garbage(server)),
        "huge" => tool_huge(args),
        "notify" => Ok(tool_notify(server)),
        "fail" => tool_fail(args),
        "image" => Ok(tool_image()),
        "env" => tool_env(args),
        "cwd" => tool_cwd(),
        "pid" => Ok(text_result(&std::process::id().to_string())),
        "stderr" => tool_stderr(args),
        "ask_client" => tool_ask_client(server, args).await,
        "cancellations" => Ok(tool_cancellations(server)),
        "progress" => tool_progress(server, args, meta).await,
        "meta" => Ok(text_result(&meta.to_string())),
        "record" | "record_safe" => tool_record(args).await,
        "mischief" => super::mischief::tool_mischief(server, args),
        LATE_TOOL => Ok(text_result("late")),
        // `start_tool_call` checked that the name is served: it is an extra tool.
        extra => Ok(text_result(&format!("extra {extra}"))),
    };
    result.unwrap_or_else(|message| tool_error(&message))
}

pub(crate) type Args = Map<String, Value>;

pub(crate) fn text_result(text: &str) -> Value {
    json!({"content": [{"type": "text", "text": text}]})
}

pub(crate) fn tool_error(message: &str) -> Value {
    json!({"content": [{"type": "text", "text": message}], "isError": true})
}

pub(crate) fn tool_echo(args: &Args) -> Result<Value, String> {
    Ok(text_result(required_str(args, "message")?))
}

pub(crate) fn tool_add(args: &Args) -> Result<Value, String> {
    let a = required_number(args, "a")?;
    let b = required_number(args, "b")?;
    let sum = add_numbers(a, b).ok_or("the sum is not a finite number")?;
    Ok(json!({
        "content": [{"type": "text", "text": sum.to_string()}],
        "structuredContent": {"sum": sum},
    }))
}

/// Adds like JavaScript would print it: exact for integers, and whole floats
/// without a trailing `.0`.
pub(crate) fn add_numbers(a: &Number, b: &Number) -> Option<Number> {
    if let (Some(a), Some(b)) = (a.as_i64(), b.as_i64()) {
        if let Some(sum) = a.checked_add(b) {
            return Some(sum.into());
        }
    }
    let sum = a.as_f64()? + b.as_f64()?;
    if sum.fract() == 0.0 && sum.abs() <= MAX_SAFE_INTEGER {
        return Some((sum as i64).into());
    }
    Number::from_f64(sum)
}

pub(crate) async fn tool_sleep(args: &Args) -> Result<Value, String> {
    let ms = required_u64(args, "ms")?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(text_result(&format!("slept {ms} ms")))
}

pub(crate) fn tool_cancellations(server: &Server) -> Value {
    let ids = server.cancellations.lock().unwrap();
    if ids.is_empty() {
        return text_result("cancelled: none");
    }
    text_result(&format!("cancelled: {}", ids.iter().map(Value::to_string).collect::<Vec<_>>().join(", ")))
}

pub(crate) async fn tool_progress(server: &Server, args: &Args, meta: &Value) -> Result<Value, String> {
    let steps = required_u64(args, "steps")?;
    let ms = optional(args, "ms").map_or(Some(10), Value::as_u64).ok_or("argument `ms` must be an integer")?;
    if let Some(token) = meta.get("progressToken") {
        for step in 1..=steps {
            let message = format!("step {step} of {steps}");
            let params = json!({"progressToken": token, "progress": step, "total": steps, "message": message});
            server.notify("notifications/progress", Some(params));
            // No pause at all for 0 ms (a timer rounds up to 1 ms): a flood.
            if ms == 0 {
                tokio::task::yield_now().await;
            } else {
                tokio::time::sleep(Duration::from_millis(ms)).await;
            }
        }
    }
    Ok(text_result(&format!("{steps} steps")))
}

pub(crate) fn tool_crash(args: &Args) -> Result<Value, String> {
    let code = match optional(args, "code") {
        None => 1,
        Some(code) => {
            code.as_i64().and_then(|code| i32::try_from(code).ok()).ok_or("argument `code` must be a 32-bit integer")?
        }
    };
    log!("crashing on request with exit code {code}");
    std::process::exit(code);
}

pub(crate) fn tool_garbage(server: &Server) -> Value {
    for line in GARBAGE_LINES {
        server.send_raw(line.to_owned());
    }
    text_result("after garbage")
}

pub(crate) fn tool_huge(args: &Args) -> Result<Value, String> {
    let bytes = required_u64(args, "bytes")?;
    let too_big = || format!("argument `bytes` must be at most {MAX_HUGE_BYTES}");
    if bytes > MAX_HUGE_BYTES {
        return Err(too_big());
    }
    Ok(text_result(&"x".repeat(usize::try_from(bytes).map_err(|_| too_big())?)))
}

pub(crate) fn tool_notify(server: &Server) -> Value {
    server.list_late_tool();
    server.notify("notifications/message", Some(json!({"level": "info", "data": "tools changed"})));
    text_result("notified")
}

pub(crate) fn tool_fail(args: &Args) -> Result<Value, String> {
    let message = optional_str(args, "message")?.unwrap_or("failed on request");
    Ok(tool_error(message))
}

pub(crate) fn tool_image() -> Value {
    json!({"content": [
        {"type": "text", "text": "a 1x1 PNG image follows"},
        {"type": "image", "data": PNG_1X1_BASE64, "mimeType": "image/png"},
    ]})
}

pub(crate) fn tool_env(args: &Args) -> Result<Value, String> {
    let name = required_str(args, "name")?;
    // std may panic on such names, and they cannot exist anyway.
    if name.is_empty() || name.contains(['=', '\0']) {
        return Err(format!("`{name}` is not a valid environment variable name"));
    }
    let value = std::env::var_os(name).map(|value| value.to_string_lossy().into_owned());
    Ok(text_result(value.as_deref().unwrap_or("<unset>")))
}

pub(crate) fn tool_cwd() -> Result<Value, String> {
    let dir = std::env::current_dir().map_err(|error| format!("cannot read the working directory: {error}"))?;
    Ok(text_result(&dir.display().to_string()))
}

pub(crate) fn tool_stderr(args: &Args) -> Result<Value, String> {
    let lines = required_u64(args, "lines")?;
    // One lock for all lines keeps them together, even if other tasks log.
    let mut stderr = std::io::stderr().lock();
    for i in 1..=lines {
        writeln!(stderr, "stderr line {i}").map_err(|error| format!("cannot write to stderr: {error}"))?;
    }
    Ok(text_result(&format!("wrote {lines} lines")))
}

pub(crate) async fn tool_ask_client(server: &Server, args: &Args) -> Result<Value, String> {
    let method = required_str(args, "method")?;
    let params = match optional(args, "params") {
        None => None,
        Some(params @ Value::Object(_)) => Some(params.clone()),
        Some(_) => return Err("argument `params` must be an object".into()),
    };
    let id = format!("srv-{}", server.next_client_request.fetch_add(1, Ordering::SeqCst));
    let response = server.ask_client(method, params, id).await?;
    Ok(text_result(&describe_client_response(&response)))
}

/// `result: <JSON>` or `error: <code> <message>`.
pub(crate) fn describe_client_response(response: &Value) -> String {
    match (response.get("result"), response.get("error")) {
        (Some(result), _) => format!("result: {result}"),
        (None, Some(error)) => {
            let message = error.get("message").and_then(Value::as_str).unwrap_or("");
            format!("error: {} {message}", error.get("code").unwrap_or(&Value::Null))
        }
        (None, None) => format!("unexpected response: {response}"),
    }
}

// --- argument helpers ---------------------------------------------------------

/// An argument, treating `null` like a missing one.
pub(crate) fn optional<'a>(args: &'a Args, name: &str) -> Option<&'a Value> {
    args.get(name).filter(|value| !value.is_null())
}

pub(crate) fn required<'a>(args: &'a Args, name: &str) -> Result<&'a Value, String> {
    optional(args, name).ok_or_else(|| format!("missing required argument `{name}`"))
}

pub(crate) fn required_str<'a>(args: &'a Args, name: &str) -> Result<&'a str, String> {
    required(args, name)?.as_str().ok_or_else(|| format!("argument `{name}` must be a string"))
}

pub(crate) fn optional_str<'a>(args: &'a Args, name: &str) -> Result<Option<&'a str>, String> {
    optional(args, name)
        .map(|value| value.as_str().ok_or_else(|| format!("argument `{name}` must be a string")))
        .transpose()
}

pub(crate) fn required_number<'a>(args: &'a Args, name: &str) -> Result<&'a Number, String> {
    match required(args, name)? {
        Value::Number(number) => Ok(number),
        _ => Err(format!("argument `{name}` must be a number")),
    }
}

pub(crate) fn required_u64(args: &Args, name: &str) -> Result<u64, String> {
    required(args, name)?.as_u64().ok_or_else(|| format!("argument `{name}` must be a non-negative integer"))
}

/// Appends `id` to `file` (one line, in one write, so executions are counted
/// on the server's side across crashes and restarts), waits `ms`, then
/// answers `recorded <id>`.
pub(crate) async fn tool_record(args: &Args) -> Result<Value, String> {
    let file = required_str(args, "file")?;
    let id = required_str(args, "id")?;
    let ms = optional(args, "ms").map_or(Some(0), Value::as_u64).ok_or("argument `ms` must be an integer")?;
    let mut log = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(file)
        .map_err(|error| format!("cannot open {file}: {error}"))?;
    log.write_all(format!("{id}\n").as_bytes()).map_err(|error| format!("cannot write {file}: {error}"))?;
    tokio::time::sleep(Duration::from_millis(ms)).await;
    Ok(text_result(&format!("recorded {id}")))
}
