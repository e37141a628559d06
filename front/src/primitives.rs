//! Resources, prompts, completions and log levels on the front.
//!
//! On `/mcp/servers/<name>` each request goes to that server as the client
//! wrote it, cursor and all, and its answer comes back as the server wrote
//! it (secrets redacted): a transparent, policed proxy. On `/mcp` the
//! servers' answers are merged: listings gather every page of every server
//! in view that offers the primitive (one that fails is left out and
//! logged, never taking the others with it), resource URIs are mapped
//! ([`super::uris`]) and prompts named `server__prompt`; requests about one
//! resource or prompt are sent to its server under its own URI or name.

use serde_json::{json, Value};
use warden_actors::{CallError, ServerOffers, ServerRequest};
use warden_protocol::{ErrorCode, ErrorObject};

use super::session::Session;
use super::{uris, LogLevel};

/// The most pages read from one server for one merged listing.
const MAX_PAGES: usize = 100;

type Answer = Result<Value, ErrorObject>;

impl Session {
    pub(super) async fn primitive(&self, method: &str, params: Value) -> Answer {
        let request = ServerRequest::from_method(method).expect("only passed-on methods come here");
        if request == ServerRequest::SetLogLevel {
            return self.set_level(&params).await;
        }
        // Servers still on their first start are waited for (bounded), as
        // a listing or a call waits.
        self.first_list_wait().await;
        if let Some(server) = self.inner.view.server.clone() {
            return self.own_server(&server, request, params).await;
        }
        match request {
            ServerRequest::ListResources => self.merged(request, "resources", "uri", |offers| offers.resources).await,
            ServerRequest::ListResourceTemplates => {
                self.merged(request, "resourceTemplates", "uriTemplate", |offers| offers.resources).await
            }
            ServerRequest::ListPrompts => self.merged(request, "prompts", "name", |offers| offers.prompts).await,
            ServerRequest::ReadResource => {
                let (server, own) = mapped_uri(&params)?;
                let mut result = self.send(&server, request, json!({"uri": own})).await?;
                if let Some(Value::Array(contents)) = result.get_mut("contents") {
                    for content in contents {
                        if let Some(uri) = content.get("uri").and_then(Value::as_str) {
                            content["uri"] = json!(uris::to_client(&server, uri));
                        }
                    }
                }
                Ok(result)
            }
            ServerRequest::Subscribe => {
                let (server, own) = mapped_uri(&params)?;
                self.subscribe(&server, &own).await
            }
            ServerRequest::Unsubscribe => {
                let (server, own) = mapped_uri(&params)?;
                self.unsubscribe(&server, &own).await
            }
            ServerRequest::GetPrompt => {
                let (server, own) = self.prompt(&params).await?;
                let mut params = params;
                params["name"] = json!(own);
                self.send(&server, request, params).await
            }
            ServerRequest::Complete => {
                let mut params = params;
                let server = match params.pointer("/ref/type").and_then(Value::as_str) {
                    Some("ref/prompt") => {
                        let name = json!({"name": params.pointer("/ref/name").cloned().unwrap_or_default()});
                        let (server, own) = self.prompt(&name).await?;
                        params["ref"]["name"] = json!(own);
                        server
                    }
                    Some("ref/resource") => {
                        let (server, own) = mapped_uri(&json!({"uri": params.pointer("/ref/uri")}))?;
                        params["ref"]["uri"] = json!(own);
                        server
                    }
                    _ => {
                        let problem = "completion/complete needs `ref` of type \"ref/prompt\" or \"ref/resource\"";
                        return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, problem));
                    }
                };
                self.send(&server, request, params).await
            }
            ServerRequest::SetLogLevel => unreachable!("answered above"),
            _ => {
                Err(ErrorObject::new(ErrorCode::METHOD_NOT_FOUND, format!("Warden's front does not serve `{method}`")))
            }
        }
    }

    /// `/mcp/servers/<name>`: the request as it is, the answer as it is.
    async fn own_server(&self, server: &str, request: ServerRequest, params: Value) -> Answer {
        match request {
            ServerRequest::Subscribe | ServerRequest::Unsubscribe => {
                let Some(uri) = params.get("uri").and_then(Value::as_str) else {
                    return Err(ErrorObject::new(ErrorCode::INVALID_PARAMS, "needs `uri`, the resource's URI"));
                };
                if request == ServerRequest::Subscribe {
                    self.subscribe(server, uri).await
                } else {
                    self.unsubscribe(server, uri).await
                }
            }
            _ => self.send(server, request, params).await,
        }
    }

    /// Subscribes this session to `uri` of `server`. The request always goes
    /// to the server through this session's view, so the agent's allowlist
    /// is asked even when another session holds the same subscription (the
    /// server takes a repeated subscribe as one); the front counts the
    /// sessions, so the server is unsubscribed after the last.
    pub(crate) async fn subscribe(&self, server: &str, uri: &str) -> Answer {
        let key = (server.to_string(), uri.to_string());
        if self.state().subscriptions.contains(&key) {
            return Ok(json!({}));
        }
        self.send(server, ServerRequest::Subscribe, json!({ "uri": uri })).await?;
        let inserted = {
            let mut state = self.state();
            let inserted = state.subscriptions.insert(key);
            state.changes += u64::from(inserted);
            inserted
        };
        if inserted {
            self.inner.front.count_subscriber(server, uri);
        }
        Ok(json!({}))
    }

    pub(crate) async fn unsubscribe(&self, server: &str, uri: &str) -> Answer {
        let removed = {
            let mut state = self.state();
            let removed = state.subscriptions.remove(&(server.to_string(), uri.to_string()));
            state.changes += u64::from(removed);
            removed
        };
        if removed {
            self.inner.front.unsubscribe(server, uri).await;
        }
        Ok(json!({}))
    }

    async fn send(&self, server: &str, request: ServerRequest, params: Value) -> Answer {
        let view = &self.inner.view;
        match view.request(server, request, params.clone()).await {
            Err(CallError::ServerStarting { .. }) => {
                self.wait_for_start(server, request.method()).await;
                view.request(server, request, params).await.map_err(to_rpc)
            }
            outcome => outcome.map_err(to_rpc),
        }
    }

    /// Every page of `field` from every server in view that `offers`, with
    /// `key` (a URI, a template, a name) mapped for the client.
    async fn merged(
        &self,
        request: ServerRequest,
        field: &str,
        key: &str,
        offers: fn(&ServerOffers) -> bool,
    ) -> Answer {
        let snapshot = self.inner.front.warden.snapshot();
        let mut items = Vec::new();
        for server in self.inner.view.servers_offering(&snapshot, offers) {
            let found = match self.all_pages(&server, request, field).await {
                Ok(found) => found,
                Err(CallError::NotAllowed { .. }) => continue,
                Err(error) => {
                    tracing::warn!(server = %server, "{} left out of a merged listing: {error}", request.method());
                    continue;
                }
            };
            for mut item in found {
                let Some(own) = item.get(key).and_then(Value::as_str).map(str::to_string) else { continue };
                let shown = if key == "name" {
                    let shown = snapshot.name_for(&server, &own);
                    self.state().prompts.insert(shown.clone(), (server.clone(), own));
                    shown
                } else {
                    uris::to_client(&server, &own)
                };
                item[key] = json!(shown);
                items.push(item);
            }
        }
        Ok(json!({ field: items }))
    }

    async fn all_pages(&self, server: &str, request: ServerRequest, field: &str) -> Result<Vec<Value>, CallError> {
        let mut items = Vec::new();
        let mut params = json!({});
        for _ in 0..MAX_PAGES {
            let mut page = self.inner.view.request(server, request, params).await?;
            if let Some(Value::Array(found)) = page.get_mut(field).map(Value::take) {
                items.extend(found);
            }
            match page.get("nextCursor").and_then(Value::as_str) {
                Some(cursor) => params = json!({ "cursor": cursor }),
                None => return Ok(items),
            }
        }
        tracing::warn!(server, "{} stopped after {MAX_PAGES} pages", request.method());
        Ok(items)
    }

    /// The server and own name of the prompt the client calls `params.name`.
    async fn prompt(&self, params: &Value) -> Result<(String, String), ErrorObject> {
        let Some(name) = params.get("name").and_then(Value::as_str) else {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                "needs `name`, the prompt's name as prompts/list shows it",
            ));
        };
        if let Some(found) = self.state().prompts.get(name).cloned() {
            return Ok(found);
        }
        // Not listed in this session yet: list, then look again.
        self.merged(ServerRequest::ListPrompts, "prompts", "name", |offers| offers.prompts).await?;
        self.state().prompts.get(name).cloned().ok_or_else(|| {
            ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("unknown prompt '{name}': prompts/list shows the prompts"),
            )
        })
    }

    pub(crate) async fn set_level(&self, params: &Value) -> Answer {
        let asked = params.get("level").and_then(Value::as_str).unwrap_or_default();
        let Some(level) = LogLevel::parse(asked) else {
            return Err(ErrorObject::new(
                ErrorCode::INVALID_PARAMS,
                format!("`level` \"{asked}\" is not an MCP log level (debug, info, notice, warning, error, critical, alert, emergency)"),
            ));
        };
        {
            let mut state = self.state();
            state.level = Some(level);
            state.changes += 1;
        }
        self.first_list_wait().await;
        let snapshot = self.inner.front.warden.snapshot();
        for server in self.inner.view.servers_offering(&snapshot, |offers| offers.logging) {
            self.inner.front.want_level(&server, level).await;
        }
        Ok(json!({}))
    }
}

/// The server and its own URI of the mapped `params.uri`.
fn mapped_uri(params: &Value) -> Result<(String, String), ErrorObject> {
    let Some(uri) = params.get("uri").and_then(Value::as_str) else {
        return Err(ErrorObject::new(
            ErrorCode::INVALID_PARAMS,
            "needs `uri`, the resource's URI as resources/list shows it",
        ));
    };
    match uris::from_client(uri) {
        Some((server, own)) => Ok((server.to_string(), own.to_string())),
        None => Err(ErrorObject::new(
            ErrorCode::RESOURCE_NOT_FOUND,
            format!("resource '{uri}' is not one of Warden's: its URIs look like warden://<server>/<the server's URI>"),
        )),
    }
}

/// A failed request as the client reads it: a server's own error as the
/// server gave it, Warden's with its words.
fn to_rpc(error: CallError) -> ErrorObject {
    match error {
        CallError::Server { code, message, .. } => ErrorObject::new(ErrorCode(code), message),
        error @ (CallError::UnknownServer { .. } | CallError::NotAllowed { .. }) => {
            ErrorObject::new(ErrorCode::INVALID_PARAMS, error.to_string())
        }
        error => ErrorObject::new(ErrorCode::INTERNAL_ERROR, error.to_string()),
    }
}
