//! The MCP clients Warden knows: where each keeps its MCP servers on this
//! OS, and in what shape. Paths follow each product's documentation; a
//! client whose file is elsewhere is imported by giving the file.

use std::path::PathBuf;

/// How a client's file is written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Format {
    /// Plain JSON.
    Json,
    /// JSON that may hold comments and trailing commas (Zed, VS Code).
    Jsonc,
    /// codex's TOML.
    Toml,
    /// goose's YAML.
    Yaml,
}

/// One MCP client.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Client {
    /// Its name on Warden's command line.
    pub(crate) id: &'static str,
    /// Its name for people.
    pub(crate) label: &'static str,
    /// The file's format.
    pub(crate) format: Format,
    /// The key holding its servers.
    pub(crate) section: &'static str,
    /// Where its file is, from the home directory (see [`Client::path`]).
    place: Place,
}

#[derive(Debug, Clone, Copy)]
enum Place {
    /// Under the home directory.
    Home(&'static str),
    /// Under the per-user config directory: `$XDG_CONFIG_HOME` (or
    /// `~/.config`) on Linux, `~/Library/Application Support` on macOS.
    AppConfig(&'static str),
    /// Under `$XDG_CONFIG_HOME` or `~/.config`, on every OS (Zed, goose).
    DotConfig(&'static str),
    /// codex: `$CODEX_HOME/config.toml`, else `~/.codex/config.toml`.
    Codex,
}

/// Every client Warden can import from and install into.
pub(crate) const CLIENTS: [Client; 8] = [
    Client {
        id: "claude-desktop",
        label: "Claude Desktop",
        format: Format::Json,
        section: "mcpServers",
        place: Place::AppConfig("Claude/claude_desktop_config.json"),
    },
    Client {
        id: "claude-code",
        label: "Claude Code",
        format: Format::Json,
        section: "mcpServers",
        place: Place::Home(".claude.json"),
    },
    Client {
        id: "cursor",
        label: "Cursor",
        format: Format::Json,
        section: "mcpServers",
        place: Place::Home(".cursor/mcp.json"),
    },
    Client {
        id: "windsurf",
        label: "Windsurf",
        format: Format::Json,
        section: "mcpServers",
        place: Place::Home(".codeium/windsurf/mcp_config.json"),
    },
    Client {
        id: "vscode",
        label: "VS Code",
        format: Format::Jsonc,
        section: "servers",
        place: Place::AppConfig("Code/User/mcp.json"),
    },
    Client { id: "codex", label: "Codex", format: Format::Toml, section: "mcp_servers", place: Place::Codex },
    Client {
        id: "goose",
        label: "goose",
        format: Format::Yaml,
        section: "extensions",
        place: Place::DotConfig("goose/config.yaml"),
    },
    Client {
        id: "zed",
        label: "Zed",
        format: Format::Jsonc,
        section: "context_servers",
        place: Place::DotConfig("zed/settings.json"),
    },
];

/// The ids, for messages.
pub(crate) fn ids() -> String {
    CLIENTS.iter().map(|client| client.id).collect::<Vec<_>>().join(", ")
}

impl Client {
    /// The client named `id`.
    pub(crate) fn by_id(id: &str) -> Option<Client> {
        CLIENTS.iter().copied().find(|client| client.id == id)
    }

    /// Where its file is on this machine (whether or not it exists);
    /// `None` without a home directory.
    pub(crate) fn path(&self) -> Option<PathBuf> {
        let env = |name: &str| std::env::var_os(name).filter(|value| !value.is_empty()).map(PathBuf::from);
        let home = env("HOME")?;
        let dot_config = || env("XDG_CONFIG_HOME").unwrap_or_else(|| home.join(".config"));
        Some(match self.place {
            Place::Home(path) => home.join(path),
            Place::AppConfig(path) if cfg!(target_os = "macos") => home.join("Library/Application Support").join(path),
            Place::AppConfig(path) | Place::DotConfig(path) => dot_config().join(path),
            Place::Codex => env("CODEX_HOME").unwrap_or_else(|| home.join(".codex")).join("config.toml"),
        })
    }
}
