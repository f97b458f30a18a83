//! The MCP client configs users already have: discovery, parsing, `${VAR}` expansion.
//!
//! Users already describe their servers for Claude Code, VS Code, Cursor, Codex,
//! Gemini CLI, Zed, Roo Code, opencode, Kiro, Amazon Q, Continue (and, at user level,
//! Windsurf, Cline and Goose); mcp-lock reads those rather than asking for a second
//! copy. Each client's variable syntax is translated into `${VAR}` templates
//! ([`vars`]), expanded only when a server is contacted, by that client's own rules
//! of which references it expands ([`vars::Syntax`]).

use std::collections::{BTreeMap, HashMap};
use std::path::{Path, PathBuf};

mod depth;
pub(crate) mod entry;
pub mod environ;
mod expand;
mod goose;
pub(crate) mod jsonc;
pub(crate) mod settings;
pub mod shape;
pub mod user;
pub mod vars;
mod wrapped;

mod project;

mod read;
pub use read::*;

pub use expand::{Expanded, expand, expand_with, match_expansion, match_expansion_with};
pub use settings::{
    ClaudeApproval, MAX_SETTINGS_BYTES, NameRule, claude_user_server_names,
    claude_user_server_scopes, tool_name_part,
};
pub use shape::{Format, Scope, Shape};
pub use user::{Platform, USER_CLIENTS, UserConfig, is_user_file, user_config, user_config_path};
pub use wrapped::{launches_guard, unwrapped_command, wrapped_remote_sidecar};

use crate::base::secrets::Secrets;
use entry::Read;

/// Config files looked for in the project directory, in this order (then
/// [`CONTINUE_DIR`]'s files).
pub const DISCOVERED: [&str; 11] = [
    ".mcp.json",
    ".vscode/mcp.json",
    ".cursor/mcp.json",
    ".codex/config.toml",
    ".gemini/settings.json",
    ".zed/settings.json",
    ".roo/mcp.json",
    "opencode.json",
    "opencode.jsonc",
    ".kiro/settings/mcp.json",
    ".amazonq/mcp.json",
];

/// Continue keeps one file per server (or several) in this folder of the project.
pub const CONTINUE_DIR: &str = ".continue/mcpServers";

/// Amazon Q's agent files: each carries its own `mcpServers` and a `tools` allow-list
/// (aws/amazon-q-developer-cli `crates/chat-cli/src/util/paths.rs`, `agents_dir`).
pub const AMAZONQ_AGENTS_DIR: &str = ".amazonq/cli-agents";

/// The largest discovered config read (a file above the project, an agent file):
/// anything bigger is no client config.
pub const MAX_DISCOVERED_BYTES: u64 = 16 * 1024 * 1024;

/// The largest config file named on its own (`--config`, `~/.claude.json`, which
/// keeps a user's history and grows): a regular file only, as every config read.
pub const MAX_NAMED_BYTES: u64 = 64 * 1024 * 1024;

/// The files of `dir` with one of `extensions`, by name.
pub(crate) fn files_in(dir: &Path, extensions: &[&str]) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            p.is_file()
                && p.extension()
                    .and_then(|e| e.to_str())
                    .is_some_and(|e| extensions.contains(&e))
        })
        .collect();
    files.sort();
    files
}

/// The opencode config files that apply in `project_dir`, lowest precedence first, as
/// opencode finds them (anomalyco/opencode, formerly sst/opencode,
/// `packages/opencode/src/config/paths.ts` and `config.ts`): `opencode.json` then
/// `opencode.jsonc` in each directory from the worktree root down to `project_dir`
/// (the nearest wins), then each `.opencode/` directory's `opencode.json` and
/// `opencode.jsonc` from `project_dir` up (in that order, as opencode merges them).
/// The walk stops at the git root (the nearest directory holding `.git`), else at the
/// filesystem root, as opencode's worktree does. The user's own files are `--user
/// opencode`'s.
pub fn opencode_layers(project_dir: &Path) -> Vec<PathBuf> {
    let mut levels: Vec<&Path> = Vec::new();
    let mut in_repository = false;
    for dir in project_dir.ancestors() {
        levels.push(dir);
        if dir.join(".git").exists() {
            in_repository = true;
            break;
        }
    }
    // Outside any git repository opencode walks on to `/`, reading the home
    // directory's and any other parent's config (`/tmp/opencode.json`, planted by
    // anyone): none of them is the project's to pin in its shared lock, so only the
    // project directory is read then.
    if !in_repository {
        levels.truncate(1);
    }
    let mut files: Vec<PathBuf> = Vec::new();
    for dir in levels.iter().rev() {
        files.extend(["opencode.json", "opencode.jsonc"].map(|n| dir.join(n)));
    }
    for dir in &levels {
        files.extend(["opencode.json", "opencode.jsonc"].map(|n| dir.join(".opencode").join(n)));
    }
    files.retain(|p| p.exists());
    files
}

/// The config files found in `project_dir`, in [`DISCOVERED`] order (opencode's as
/// [`opencode_layers`] finds them, Amazon Q's agent files after its `mcp.json`), then
/// Continue's `*.yaml`, `*.yml` and `*.json` files by name.
pub fn discover(project_dir: &Path) -> Vec<PathBuf> {
    let mut files: Vec<PathBuf> = Vec::new();
    for rel in DISCOVERED {
        match rel {
            "opencode.json" => files.extend(opencode_layers(project_dir)),
            "opencode.jsonc" => {}
            _ => {
                let path = project_dir.join(rel);
                // Anything by a config's name is a config: a directory there is
                // reported when it is read, not skipped as if nothing were there.
                if path.exists() {
                    files.push(path);
                }
                if rel == ".amazonq/mcp.json" {
                    files.extend(files_in(&project_dir.join(AMAZONQ_AGENTS_DIR), &["json"]));
                }
            }
        }
    }
    files.extend(files_in(
        &project_dir.join(CONTINUE_DIR),
        &["yaml", "yml", "json"],
    ));
    files
}

/// Reads a discovered config file: a regular file only, refusing one larger than
/// [`MAX_DISCOVERED_BYTES`].
fn read_discovered(file: &Path) -> Result<String, ConfigError> {
    let error = |source| ConfigError::Read {
        path: file.display().to_string(),
        source,
    };
    match crate::base::files::read_regular_text(file, MAX_DISCOVERED_BYTES) {
        Ok(text) => Ok(text),
        Err(e) if crate::base::files::too_large(&e) => Err(ConfigError::Shape {
            path: file.display().to_string(),
            message: format!(
                "larger than {} MiB; is this an MCP client config?",
                MAX_DISCOVERED_BYTES >> 20
            ),
        }),
        Err(source) => Err(error(source)),
    }
}

/// A config problem, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no MCP client config found in {dir} (looked for .mcp.json, .vscode/mcp.json, .cursor/mcp.json, .codex/config.toml, .gemini/settings.json and the other clients' files); pass --config PATH or --user CLIENT"
    )]
    NotFound { dir: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not valid {language}: {message}")]
    Syntax {
        path: String,
        line: usize,
        column: usize,
        /// JSON, TOML or YAML.
        language: &'static str,
        message: String,
    },
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
    #[error(
        "server {name:?} is defined differently in {first} and {second}; keep one, pass --config, or pick one in mcp-lock.toml: [config] prefer = {{ {name} = \"FILE\" }}"
    )]
    Conflict {
        name: String,
        first: String,
        second: String,
    },
    #[error("unknown server {name:?}; the config defines: {known}")]
    UnknownServer { name: String, known: String },
    #[error("server {server:?}: environment variable {var} is not set (used in {field})")]
    UnsetVariable {
        server: String,
        var: String,
        field: String,
    },
    #[error("server {server:?}: {message} (in {field})")]
    Variable {
        server: String,
        field: String,
        message: String,
    },
}

/// The servers of a project, as its client configs describe them.
#[derive(Debug, Clone, Default)]
pub struct ProjectConfig {
    /// The directory servers are started in and the lock lives in by default.
    pub project_dir: PathBuf,
    /// The config files read.
    pub files: Vec<PathBuf>,
    /// Every server, sorted by name.
    pub servers: Vec<ServerSpec>,
    /// Every entry read, where it was, and why it was skipped when it was (disabled):
    /// what `mcp-lock servers` shows.
    pub found: Vec<Found>,
    /// Settings files the host itself ignores (invalid), ignored here too: to warn of.
    pub warnings: Vec<String>,
}

/// One server entry as a config file has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    pub file: PathBuf,
    /// The line its entry starts on (1 when the reader cannot tell).
    pub line: usize,
    pub host: Host,
    /// Why the entry is not used (`disabled: true`, `enabled: false`, a committed
    /// settings file turning it off), when it is not.
    pub skipped: Option<String>,
    /// What the developer's own settings say of an entry still used: turned off for
    /// them only (`.claude/settings.local.json`, `~/.gemini/…`), still pinned.
    pub note: Option<String>,
}

/// One server entry, unexpanded: `${VAR}` stays as written until it is connected to.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSpec {
    pub name: String,
    pub transport: TransportSpec,
    /// The hosts whose config files define this entry (the same entry in two files
    /// has both), which pick its default client profiles.
    pub hosts: Vec<Host>,
    /// Tools the host's config hides from its agent (`includeTools`, `disabled_tools`,
    /// …): they are not pinned, and their drift is "filtered by the host".
    pub filter: ToolFilter,
    /// Read from a user-level file (`--user CLIENT`, `~/.claude.json`, or a file at a
    /// place `--user` reads): the user's own server, not the project's.
    pub personal: bool,
    /// The entry launches `mcp-lock guard` (`mcp-lock wrap` rewrote it): the guard
    /// starts the pinned package version. An entry defined in two files is guarded
    /// only when both launch the guard.
    pub guarded: bool,
    /// The wrapped entry passes `--allow-scripts` to the guard: its pinned closure is
    /// installed with install scripts run.
    pub allow_scripts: bool,
    /// A client registered with the server's authorization server beforehand
    /// (`"oauth": {"clientId": ..., "clientSecret": "${VAR}"}`), for `mcp-lock login`.
    pub oauth_client: Option<Box<OAuthClientSpec>>,
    /// `"oauth": {"clientMetadataUrl": "https://..."}`: the entry's Client ID
    /// Metadata Document, used as its client id where the authorization server
    /// supports them.
    pub client_metadata_url: Option<String>,
    /// `"oauth": false` (opencode): the host never tries OAuth for it, so neither does
    /// mcp-lock (no `mcp-lock login` token is sent or offered).
    pub oauth_off: bool,
    /// Which `${...}` references the host expands ([`vars::Variables`]): the text
    /// stays as written (the lock records it so), read by the host's own rules.
    pub vars: vars::Variables,
    /// Claude Code's `headersHelper` of a remote entry, as written: a shell command
    /// whose JSON output adds headers. Run only to contact the server
    /// ([`ServerSpec::resolve_to_contact`]), never when the config is read. Boxed, to
    /// keep the struct small.
    pub headers_helper: Option<Box<String>>,
    /// Where a stdio server's environment comes from besides its host's own and its
    /// `env`, when anywhere (an `envFile`, a host that passes only some variables).
    /// Boxed: it is rare, and a `ServerSpec` is moved a lot.
    pub environ: Option<Box<environ::Environ>>,
    /// Why mcp-lock cannot contact this remote server as its host would (Gemini CLI's
    /// Google `authProviderType`): contacting it is unverifiable with this line.
    pub refusal: Option<Box<String>>,
}

/// A pre-registered OAuth client, as written (the secret is a `${VAR}` template).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthClientSpec {
    pub client_id: String,
    pub client_secret: Option<String>,
    /// The callback port the client was registered with, if fixed.
    pub callback_port: Option<u16>,
    /// `"grant": "client_credentials"`: a machine logs in by itself (no person, no
    /// browser), with the secret or with `privateKey` (`private_key_jwt`).
    pub client_credentials: bool,
    /// A PEM private key (PKCS#8) for `private_key_jwt`, as a `${VAR}` template.
    pub private_key: Option<String>,
    /// The key's JWS algorithm: `ES256` (default) or `RS256`.
    pub signing_algorithm: Option<String>,
    /// The scope a machine login asks for; the server's own otherwise.
    pub scope: Option<String>,
    /// `tokenEndpointAuthMethod`: how a pre-registered client was registered to
    /// authenticate (`client_secret_basic`, `client_secret_post`, `none`).
    pub token_endpoint_auth_method: Option<String>,
}

/// Which tools a host's config lets its agent see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Only these (`includeTools`, `enabled_tools`, `available_tools`, `tools`), when
    /// given.
    pub include: Option<Vec<String>>,
    /// Never these (`excludeTools`, `disabled_tools`, `disabledTools`).
    pub exclude: Vec<String>,
    /// Rules over the host's own names for the tools (opencode's top-level `tools`
    /// and `permission` maps, `"<server>_<tool>": false`): the last one matching a
    /// tool decides whether it is hidden. Boxed: most filters have none, and every
    /// server entry carries a filter.
    pub rules: Option<Box<NameRules>>,
}

/// [`NameRule`]s in the order the host weighs them.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NameRules(pub Vec<NameRule>);

impl ToolFilter {
    /// Whether the host's agent is shown a tool of this name.
    pub fn shows(&self, tool: &str) -> bool {
        self.include
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool))
            && !self.exclude.iter().any(|n| n == tool)
            && !self
                .rules
                .iter()
                .flat_map(|rules| rules.0.iter())
                .rev()
                .find(|r| r.matches(tool))
                .is_some_and(|r| r.hides)
    }

    /// Whether the filter hides anything at all.
    pub fn is_empty(&self) -> bool {
        self.include.is_none() && self.exclude.is_empty() && self.rules.is_none()
    }

    /// The filter of one server that two hosts define: a tool is shown when either
    /// host shows it, since the lock pins what any of them sees.
    pub fn union(&self, other: &ToolFilter) -> ToolFilter {
        let include = match (&self.include, &other.include) {
            (Some(a), Some(b)) => {
                let mut all = a.clone();
                all.extend(b.iter().filter(|n| !a.contains(n)).cloned());
                Some(all)
            }
            _ => None,
        };
        let exclude = self
            .exclude
            .iter()
            .filter(|n| other.exclude.contains(n))
            .cloned()
            .collect();
        // Rules that differ cannot be joined: without them more is shown (and pinned),
        // never less. A host without rules shows all they would hide.
        let rules = if self.rules == other.rules {
            self.rules.clone()
        } else {
            None
        };
        ToolFilter {
            include,
            exclude,
            rules,
        }
    }
}

/// The agent host a config file belongs to, told by where the file is or, failing
/// that, by its shape.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Host {
    ClaudeCode,
    VsCode,
    Cursor,
    ClaudeDesktop,
    Codex,
    GeminiCli,
    Zed,
    Windsurf,
    Cline,
    RooCode,
    Continue,
    Goose,
    OpenCode,
    Kiro,
    AmazonQ,
    /// A file whose host cannot be told.
    Unknown,
}

impl Host {
    /// The host's name, as a notice names it.
    pub fn as_str(self) -> &'static str {
        match self {
            Host::ClaudeCode => "Claude Code",
            Host::VsCode => "VS Code",
            Host::Cursor => "Cursor",
            Host::ClaudeDesktop => "Claude Desktop",
            Host::Codex => "Codex CLI",
            Host::GeminiCli => "Gemini CLI",
            Host::Zed => "Zed",
            Host::Windsurf => "Windsurf",
            Host::Cline => "Cline",
            Host::RooCode => "Roo Code",
            Host::Continue => "Continue",
            Host::Goose => "Goose",
            Host::OpenCode => "opencode",
            Host::Kiro => "Kiro",
            Host::AmazonQ => "Amazon Q",
            Host::Unknown => "an unknown host",
        }
    }

    /// The host of a config file: by where it is (`.mcp.json` is Claude Code's,
    /// `.vscode/…` VS Code's, `.gemini/settings.json` Gemini CLI's, …), else by its
    /// shape (`[mcp_servers]` is Codex's, `context_servers` Zed's, …).
    pub fn of_file(path: &Path, shape: Shape) -> Host {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let dir = |depth: usize| {
            path.ancestors()
                .nth(depth)
                .and_then(|p| p.file_name())
                .and_then(|n| n.to_str())
                .unwrap_or("")
        };
        let by_place = match (dir(1), name) {
            (".vscode", _) | ("User", "settings.json" | "mcp.json") => Some(Host::VsCode),
            (".cursor", "mcp.json") => Some(Host::Cursor),
            (_, ".mcp.json") | (_, ".claude.json") => Some(Host::ClaudeCode),
            (_, "claude_desktop_config.json") => Some(Host::ClaudeDesktop),
            (".codex", _) => Some(Host::Codex),
            (".gemini", "settings.json") => Some(Host::GeminiCli),
            (".zed", _) | ("zed" | "Zed", "settings.json") => Some(Host::Zed),
            (".roo", "mcp.json") | (_, "mcp_settings.json") => Some(Host::RooCode),
            ("settings", "mcp.json") if dir(2) == ".kiro" => Some(Host::Kiro),
            (".amazonq" | "amazonq", "mcp.json") => Some(Host::AmazonQ),
            ("cli-agents", _) if matches!(dir(2), ".amazonq" | "amazonq") => Some(Host::AmazonQ),
            ("windsurf", "mcp_config.json") => Some(Host::Windsurf),
            (_, "cline_mcp_settings.json") => Some(Host::Cline),
            ("mcpServers", _) if dir(2) == ".continue" || in_continue_global_dir(path) => {
                Some(Host::Continue)
            }
            ("goose", "config.yaml") => Some(Host::Goose),
            (_, "opencode.json" | "opencode.jsonc") => Some(Host::OpenCode),
            _ => None,
        };
        by_place.unwrap_or(match shape {
            Shape::VsCode | Shape::VsCodeSettings => Host::VsCode,
            Shape::ClaudeUser => Host::ClaudeCode,
            Shape::Zed => Host::Zed,
            Shape::OpenCode => Host::OpenCode,
            Shape::Codex => Host::Codex,
            Shape::Goose => Host::Goose,
            Shape::Continue => Host::Continue,
            Shape::McpServers => Host::Unknown,
        })
    }

    /// Files whose servers table may be missing: settings files that hold other
    /// things too.
    fn shares_its_file(self) -> bool {
        matches!(
            self,
            Host::Codex | Host::GeminiCli | Host::Zed | Host::OpenCode | Host::Goose
        )
    }
}

/// How a server is reached, as written in the config.
#[derive(Debug, Clone, PartialEq)]
pub enum TransportSpec {
    Stdio {
        command: String,
        args: Vec<String>,
        env: BTreeMap<String, String>,
        cwd: Option<String>,
    },
    Remote {
        kind: RemoteKind,
        /// The URL as written, variables unexpanded.
        url: String,
        /// Header names and values as written, variables unexpanded.
        headers: BTreeMap<String, String>,
    },
}

/// Which HTTP transport a remote entry asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RemoteKind {
    /// `type: "http"`, `"streamable-http"` or only a `url`: Streamable HTTP, falling
    /// back to legacy HTTP+SSE when the server turns out to be one.
    StreamableHttp,
    /// `type: "sse"`: the legacy HTTP+SSE transport of 2024-11-05, used directly.
    Sse,
}

impl RemoteKind {
    /// The name used in the lock and in reports.
    pub fn as_str(self) -> &'static str {
        match self {
            RemoteKind::StreamableHttp => "streamable-http",
            RemoteKind::Sse => "sse",
        }
    }

    pub fn parse(name: &str) -> Option<Self> {
        match name {
            "http" | "streamable-http" | "streamableHttp" | "streamable_http" => {
                Some(RemoteKind::StreamableHttp)
            }
            "sse" => Some(RemoteKind::Sse),
            _ => None,
        }
    }
}

impl ServerSpec {
    pub fn transport_name(&self) -> &str {
        match &self.transport {
            TransportSpec::Stdio { .. } => "stdio",
            TransportSpec::Remote { kind, .. } => kind.as_str(),
        }
    }
}

/// A remote entry with every variable expanded, ready to connect.
#[derive(Debug, Clone)]
pub struct ResolvedRemote {
    /// The entry's name in the config, for messages (`mcp-lock login NAME`).
    pub name: String,
    pub kind: RemoteKind,
    pub url: String,
    /// The URL as written in the config, variables unexpanded: what messages show.
    pub written_url: String,
    /// Header name, expanded value, and the variables the value was built from (for
    /// an authentication error to name).
    pub headers: Vec<(String, String, Vec<String>)>,
    /// Values that must never be shown, logged or written.
    pub secrets: Secrets,
    /// Set when the Authorization header is a token from `mcp-lock login`: its issuer.
    pub oauth_issuer: Option<String>,
    /// The entry turns OAuth off (`"oauth": false`): no login token is sent or offered.
    pub oauth_off: bool,
    /// Why the entry's `headersHelper` gave no headers: the server is not contacted,
    /// and is unverifiable with this error, as when it refuses authentication.
    pub headers_helper_error: Option<String>,
    /// The entry's client-credentials client, which gets tokens by itself.
    pub machine: Option<Box<crate::servers::auth::machine::MachineClient>>,
}

/// A server entry ready to contact.
#[derive(Debug, Clone)]
pub enum Resolved {
    Stdio(ResolvedStdio),
    Remote(ResolvedRemote),
}

impl Resolved {
    pub fn secrets(&self) -> &Secrets {
        match self {
            Resolved::Stdio(s) => &s.secrets,
            Resolved::Remote(r) => &r.secrets,
        }
    }
}

/// A stdio entry with every variable expanded, ready to spawn.
#[derive(Debug, Clone)]
pub struct ResolvedStdio {
    pub command: String,
    /// The command as written in the config, variables unexpanded: what messages show.
    pub written_command: String,
    pub args: Vec<String>,
    /// Set on top of what is inherited: the `envFile`'s variables, then `env`'s.
    pub env: BTreeMap<String, String>,
    /// What of this process's environment the server inherits, when its host passes
    /// only some ([`environ::set_environment`]); `None`: all.
    pub inherit: Option<environ::Inherit>,
    pub cwd: PathBuf,
    /// Values that must never be shown, logged or written.
    pub secrets: Secrets,
}

/// One config file, read: its shape, host and entries.
#[derive(Debug, Clone)]
pub struct ConfigFile {
    /// `None` for a settings file with no servers in it.
    pub shape: Option<Shape>,
    pub host: Host,
    pub entries: Vec<Entry>,
}

/// One entry of a config file.
#[derive(Debug, Clone)]
pub struct Entry {
    pub name: String,
    pub line: usize,
    /// The server, or why the entry is skipped.
    pub read: Result<ServerSpec, String>,
    /// Claude Code's scope of the entry, in Claude Code's files.
    pub scope: Option<Scope>,
}

impl ConfigFile {
    /// The servers used (entries not skipped).
    pub fn servers(&self) -> impl Iterator<Item = &ServerSpec> {
        self.entries.iter().filter_map(|e| e.read.as_ref().ok())
    }
}

/// The key `~/.claude.json` gives a project directory under `projects`.
pub fn project_key(project_dir: &Path) -> String {
    std::fs::canonicalize(project_dir)
        .unwrap_or_else(|_| project_dir.to_path_buf())
        .display()
        .to_string()
}

/// Parses one config file of any supported shape and returns its servers (disabled
/// entries left out), with the current directory as the project directory.
pub fn parse_config(text: &str, path: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = read_file(text, path, Path::new(path), &cwd)?;
    Ok(file.servers().cloned().collect())
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod place_tests;
