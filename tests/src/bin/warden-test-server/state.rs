//! State shared by the main loop and the request tasks: the tool list,
//! running calls and their cancellation, requests to the client.

use super::*;

/// State shared by the main loop and the request tasks.
pub(crate) struct Server {
    pub(crate) options: Options,
    /// Feeds the stdout writer thread.
    pub(crate) output: std_mpsc::Sender<Output>,
    pub(crate) initialize_seen: AtomicBool,
    /// Whether `late_tool` has been added to the list.
    pub(crate) late_tool_listed: AtomicBool,
    /// Running `tools/call`s by request id (as JSON text), so that
    /// `notifications/cancelled` can stop them.
    pub(crate) running_calls: Mutex<HashMap<String, RunningCall>>,
    /// Our own requests to the client, by id (as JSON text), waiting for the
    /// client's response.
    pub(crate) client_requests: Mutex<ClientRequests>,
    pub(crate) next_call_token: AtomicU64,
    pub(crate) next_client_request: AtomicU64,
    /// The `requestId` of every `notifications/cancelled`, in order.
    pub(crate) cancellations: Mutex<Vec<Value>>,
}

pub(crate) struct RunningCall {
    /// Tells this registration apart from a later call reusing the same id.
    pub(crate) token: u64,
    /// Sending (or dropping) this stops the call.
    pub(crate) cancel: oneshot::Sender<()>,
}

/// What a call task keeps to learn about (and check for) its cancellation.
pub(crate) struct CallTicket {
    pub(crate) key: String,
    pub(crate) token: u64,
    pub(crate) cancelled: oneshot::Receiver<()>,
}

#[derive(Default)]
pub(crate) struct ClientRequests {
    pub(crate) waiting: HashMap<String, oneshot::Sender<Value>>,
    /// Set at stdin EOF: from then on no response can arrive.
    pub(crate) stdin_closed: bool,
}

/// Running calls and client requests are keyed by the id's JSON text, so that
/// the number `1` and the string `"1"` stay different ids.
pub(crate) fn id_key(id: &Value) -> String {
    id.to_string()
}

impl Server {
    pub(crate) fn new(options: Options, output: std_mpsc::Sender<Output>) -> Self {
        Server {
            options,
            output,
            initialize_seen: AtomicBool::new(false),
            late_tool_listed: AtomicBool::new(false),
            running_calls: Mutex::new(HashMap::new()),
            client_requests: Mutex::new(ClientRequests::default()),
            next_call_token: AtomicU64::new(0),
            next_client_request: AtomicU64::new(1),
            cancellations: Mutex::new(Vec::new()),
        }
    }

    // --- output ------------------------------------------------------------

    pub(crate) fn send(&self, message: &Value) {
        self.send_raw(message.to_string());
    }

    /// Writes a line as is; also used for deliberate garbage.
    pub(crate) fn send_raw(&self, line: String) {
        // Fails only once the writer has given up on a broken stdout.
        let _ = self.output.send(Output::Line(line));
    }

    pub(crate) fn reply(&self, id: Value, result: Value) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "result": result}));
    }

    pub(crate) fn reply_error(&self, id: Value, code: i64, message: &str) {
        self.send(&json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}));
    }

    pub(crate) fn notify(&self, method: &str, params: Option<Value>) {
        let mut notification = json!({"jsonrpc": "2.0", "method": method});
        if let Some(params) = params {
            notification["params"] = params;
        }
        self.send(&notification);
    }

    // --- tool list ---------------------------------------------------------

    /// Adds `late_tool` to the list and tells the client.
    pub(crate) fn list_late_tool(&self) {
        self.late_tool_listed.store(true, Ordering::SeqCst);
        log!("late_tool added; sending notifications/tools/list_changed");
        self.notify("notifications/tools/list_changed", None);
    }

    /// Names of the served tools, in listing order, without duplicates.
    pub(crate) fn served_tool_names(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self.options.tools.iter().map(String::as_str).collect();
        if self.late_tool_listed.load(Ordering::SeqCst) && !names.contains(&LATE_TOOL) {
            names.push(LATE_TOOL);
        }
        names.extend(self.options.extra_tools.iter().map(String::as_str));
        names
    }

    pub(crate) fn serves(&self, name: &str) -> bool {
        self.served_tool_names().contains(&name)
    }

    /// The full tool list, with `--duplicate-tool` copies next to the original.
    pub(crate) fn listed_tools(&self) -> Vec<Value> {
        let mut tools = Vec::new();
        for name in self.served_tool_names() {
            let definition = builtin_tool_definition(name).unwrap_or_else(|| extra_tool_definition(name));
            if self.options.duplicate_tools.iter().any(|duplicate| duplicate == name) {
                tools.push(definition.clone());
            }
            tools.push(definition);
        }
        tools
    }

    /// One `tools/list` page; an error message for a cursor we never issued.
    pub(crate) fn tools_page(&self, params: &Value) -> Result<Value, String> {
        let tools = self.listed_tools();
        let start = match params.get("cursor") {
            None | Some(Value::Null) => 0,
            Some(cursor) => {
                self.cursor_offset(cursor, tools.len()).ok_or_else(|| format!("Invalid cursor: {cursor}"))?
            }
        };
        let end = match self.options.page_size {
            Some(size) => (start + size).min(tools.len()),
            None => tools.len(),
        };
        let mut page = json!({"tools": tools[start..end]});
        if end < tools.len() {
            page["nextCursor"] = json!(end.to_string());
        }
        Ok(page)
    }

    /// Accepts only cursors that `tools_page` could have handed out.
    // `usize::is_multiple_of` is newer than the workspace's rust-version (1.85).
    #[allow(clippy::manual_is_multiple_of)]
    pub(crate) fn cursor_offset(&self, cursor: &Value, tool_count: usize) -> Option<usize> {
        let offset: usize = cursor.as_str()?.parse().ok()?;
        let size = self.options.page_size?;
        (offset > 0 && offset % size == 0 && offset < tool_count).then_some(offset)
    }

    // --- running calls and cancellation -------------------------------------

    /// Registers a call as cancellable. This happens before its task starts,
    /// so a cancellation can never arrive before the registration.
    pub(crate) fn register_call(&self, id: &Value) -> Option<CallTicket> {
        let key = id_key(id);
        let mut running = self.running_calls.lock().unwrap();
        if running.contains_key(&key) {
            log!("warning: request id {key} is already used by a running call; this one cannot be cancelled");
            return None;
        }
        let token = self.next_call_token.fetch_add(1, Ordering::SeqCst);
        let (cancel, cancelled) = oneshot::channel();
        running.insert(key.clone(), RunningCall { token, cancel });
        Some(CallTicket { key, token, cancelled })
    }

    /// Unregisters a finished call; false if it was cancelled meanwhile, in
    /// which case it must not be answered.
    pub(crate) fn finish_call(&self, key: &str, token: u64) -> bool {
        let mut running = self.running_calls.lock().unwrap();
        match running.get(key) {
            Some(call) if call.token == token => {
                running.remove(key);
                true
            }
            _ => false,
        }
    }

    pub(crate) fn cancel_call(&self, request_id: Option<&Value>) {
        let Some(id) = request_id else {
            log!("notifications/cancelled without requestId; ignored");
            return;
        };
        self.cancellations.lock().unwrap().push(id.clone());
        let call = self.running_calls.lock().unwrap().remove(&id_key(id));
        match call {
            Some(call) => {
                let _ = call.cancel.send(());
                log!("cancelled {id}");
            }
            None => log!("cancellation of {id}, which is not running; ignored"),
        }
    }

    // --- requests to the client ----------------------------------------------

    /// Sends the client a request and waits for its response message.
    pub(crate) async fn ask_client(&self, method: &str, params: Option<Value>, id: String) -> Result<Value, String> {
        let (answer, answered) = oneshot::channel();
        {
            let mut requests = self.client_requests.lock().unwrap();
            if requests.stdin_closed {
                return Err("stdin is closed, so the client cannot answer".into());
            }
            requests.waiting.insert(id_key(&json!(id)), answer);
        }
        let mut request = json!({"jsonrpc": "2.0", "id": id, "method": method});
        if let Some(params) = params {
            request["params"] = params;
        }
        log!("asking the client: {method} (id {id})");
        self.send(&request);
        answered.await.map_err(|_| "stdin closed before the client answered".to_owned())
    }

    pub(crate) fn route_client_response(&self, id: &Value, response: Value) {
        let waiting = self.client_requests.lock().unwrap().waiting.remove(&id_key(id));
        match waiting {
            Some(answer) => {
                if answer.send(response).is_err() {
                    log!("response to {id} arrived after its tool call ended");
                }
            }
            None => log!("warning: response for unknown request id {id}; ignored"),
        }
    }

    /// Fails every pending client request (their senders are dropped).
    pub(crate) fn abandon_client_requests(&self) {
        let mut requests = self.client_requests.lock().unwrap();
        requests.stdin_closed = true;
        requests.waiting.clear();
    }
}
