//! What each server is started from: its plan (name, connector, settings)
//! and its [`Identity`], which a reload compares to tell changed servers
//! from unchanged ones; and the approver a config names.

use std::sync::Arc;

use warden_config::{ServerConfig, WardenConfig};
use warden_protocol::{Authorizer, Connector, HttpConnector, HttpSpec, HttpTransport, StdioConnector, StdioSpec};

use crate::approver::{Approver, AutoApprover, DenyingApprover};
use crate::hub::ServerPlan;
use crate::policy_rules::ConfiguredApprover;
use crate::server_settings::ServerSettings;

/// What a running server was started from.
#[derive(Clone)]
pub(crate) enum Identity {
    /// A configured server: its config without what applies live (policy,
    /// roots, tool filters and renames), and the
    /// config-wide message limit its connector got.
    Config(Box<ServerConfig>, usize),
    /// A host's own connector: the same one (the same `Arc`) is the same server.
    Connector(Arc<dyn Connector>),
    /// A server attached while Warden runs (`attached.rs`): no config's,
    /// so no reload's but one that configures its name.
    Attached,
}

impl Identity {
    pub(crate) fn of_config(server: &ServerConfig, config: &WardenConfig) -> Identity {
        // Policy, roots, tool filters and renames apply live, without a
        // restart.
        let server = ServerConfig {
            default_policy: None,
            roots: None,
            enabled_tools: None,
            disabled_tools: Vec::new(),
            rename: Default::default(),
            ..server.clone()
        };
        Identity::Config(Box::new(server), config.max_message_bytes)
    }

    pub(super) fn same_as(&self, other: &Identity) -> bool {
        match (self, other) {
            (Identity::Config(a, a_limit), Identity::Config(b, b_limit)) => a == b && a_limit == b_limit,
            (Identity::Connector(a), Identity::Connector(b)) => {
                std::ptr::eq(Arc::as_ptr(a) as *const (), Arc::as_ptr(b) as *const ())
            }
            _ => false,
        }
    }
}

/// The servers of a config, as the Hub starts them, with what each was
/// started from.
pub(super) fn plans_of(config: &WardenConfig) -> Vec<(ServerPlan, Identity)> {
    config
        .servers
        .iter()
        .map(|(name, server)| {
            let oauth =
                server.url.as_deref().map(|url| authorizer_for(name, url, server)).transpose().map(Option::flatten);
            let (connector, oauth) = match oauth {
                Ok(oauth) => (connector_for(name, server, config, oauth.clone()), oauth),
                Err(problem) => (Err(problem), None),
            };
            let plan =
                ServerPlan { name: name.clone(), connector, settings: ServerSettings::of(server, config, oauth) };
            (plan, Identity::of_config(server, config))
        })
        .collect()
}

/// The connector for a configured server, or why there is none yet.
fn connector_for(
    name: &str,
    server: &ServerConfig,
    config: &WardenConfig,
    oauth: Option<Arc<Authorizer>>,
) -> Result<Arc<dyn Connector>, String> {
    match (&server.command, &server.url) {
        (Some(command), _) => {
            let mut spec = StdioSpec::new(name, command.clone(), server.args.clone());
            spec.env = server.env.clone();
            spec.cwd = server.cwd.clone();
            spec.inherit_env = server.inherit_env;
            spec.pass_env = server.pass_env.clone();
            spec.max_message_bytes = config.max_message_bytes;
            Ok(Arc::new(StdioConnector::new(spec)))
        }
        (None, Some(url)) => {
            let mut spec = HttpSpec::new(name, url.clone());
            spec.headers = server.headers.clone();
            spec.ca_cert = server.ca_cert.clone();
            // Checked at load time.
            spec.transport = server.transport.as_deref().and_then(HttpTransport::parse).unwrap_or_default();
            spec.max_message_bytes = config.max_message_bytes;
            spec.authorizer = oauth;
            Ok(Arc::new(HttpConnector::new(spec)))
        }
        (None, None) => Err("it has neither `command` nor `url`".into()),
    }
}

/// The OAuth side of a `url` server: every one has it (a server may ask
/// for authorization without the config saying so), unless the config
/// sends its own `Authorization` header, or there is no state directory
/// to keep tokens in.
fn authorizer_for(name: &str, url: &str, server: &ServerConfig) -> Result<Option<Arc<Authorizer>>, String> {
    if server.headers.keys().any(|header| header.eq_ignore_ascii_case("authorization")) {
        return Ok(None);
    }
    let Some(state) = warden_config::state_home(|name| std::env::var_os(name)) else { return Ok(None) };
    Authorizer::new(name, url, server.oauth.clone(), &state, server.ca_cert.as_deref())
        .map(Some)
        .map_err(|error| error.to_string())
}

/// The approver a config names.
pub(super) fn approver_of(configured: ConfiguredApprover) -> Option<Arc<dyn Approver>> {
    match configured {
        ConfiguredApprover::None => None,
        ConfiguredApprover::Auto => Some(Arc::new(AutoApprover)),
        ConfiguredApprover::Deny => Some(Arc::new(DenyingApprover)),
    }
}
