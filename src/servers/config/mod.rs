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

/// Reads one config file of any supported shape. `file` tells the host (with the
/// shape); `project_dir` picks the local-scope servers of a `~/.claude.json`.
pub fn read_file(
    text: &str,
    shown: &str,
    file: &Path,
    project_dir: &Path,
) -> Result<ConfigFile, ConfigError> {
    let text = shape::without_bom(text);
    let format = shape::format_of(text, file);
    let root = shape::parse(text, format, shown)?;
    let detected = shape::detect(&root, format);
    let place_host = Host::of_file(file, detected.unwrap_or(Shape::McpServers));
    let agent_file = place_host == Host::AmazonQ && is_amazonq_agent(file);
    let Some(shape) = detected else {
        if place_host == Host::Continue && format == Format::Json {
            // The server is the whole document: its line is where the object opens,
            // past any leading comments.
            let opens = jsonc::skip_trivia(text, 0);
            let line = 1 + text[..opens].matches('\n').count();
            return read_continue_single(&root, shown, file, line);
        }
        // An agent with no servers of its own is an agent all the same.
        if place_host.shares_its_file() || agent_file {
            return Ok(ConfigFile {
                shape: None,
                host: place_host,
                entries: Vec::new(),
            });
        }
        return Err(ConfigError::Shape {
            path: shown.to_string(),
            message: "no \"mcpServers\" or \"servers\" object (nor \"context_servers\", \"mcp\", [mcp_servers] or extensions:); is this an MCP client config?".into(),
        });
    };
    let host = Host::of_file(file, shape);
    let shape_error = |message: String| ConfigError::Shape {
        path: shown.to_string(),
        message,
    };
    let mut key = project_key(project_dir);
    if shape == Shape::ClaudeUser {
        // Claude Code names the directory as it was opened; try it as given too.
        let given = project_dir.display().to_string();
        let projects = root.get("projects");
        if projects.and_then(|p| p.get(&key)).is_none()
            && projects.and_then(|p| p.get(&given)).is_some()
        {
            key = given;
        }
    }
    let tables = shape.tables(&key);
    if format == Format::Json {
        let paths: Vec<Vec<String>> = tables.iter().map(|(p, _)| p.clone()).collect();
        shape::check_repeats(&jsonc::strip_jsonc(text), &paths, shown)?;
    }
    let personal = shape == Shape::ClaudeUser || is_user_file(file, &|v| std::env::var(v).ok());
    // Gemini CLI strips what looks like a secret from a stdio server's environment,
    // but for the names this file's settings allow.
    let gemini = (host == Host::GeminiCli)
        .then(|| environ::gemini_redaction(&root))
        .transpose()
        .map_err(shape_error)?;
    let opencode_rules = |name: &str| {
        if shape == Shape::OpenCode {
            settings::opencode_rules(&root, &settings::opencode_name(name)).map_err(shape_error)
        } else {
            Ok(Vec::new())
        }
    };
    let mut entries = Vec::new();
    for (table_path, scope) in tables {
        let Some(table) = shape::at(&root, &table_path) else {
            continue;
        };
        let scope = scope.or((host == Host::ClaudeCode).then_some(Scope::Project));
        let items: Vec<(String, &serde_json::Value)> = match (shape, table) {
            (Shape::Continue, serde_json::Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(
                    |(i, item)| match item.get("name").and_then(serde_json::Value::as_str) {
                        Some(name) => Ok((name.to_string(), item)),
                        None => Err(shape_error(format!(
                            "mcpServers item {} has no \"name\"",
                            i + 1
                        ))),
                    },
                )
                .collect::<Result<_, _>>()?,
            (_, serde_json::Value::Object(map)) => {
                map.iter().map(|(name, v)| (name.clone(), v)).collect()
            }
            (_, serde_json::Value::Null) => Vec::new(),
            _ => {
                return Err(shape_error(format!(
                    "the servers member \"{}\" is not {}",
                    table_path.join("."),
                    if shape == Shape::Continue {
                        "a list"
                    } else {
                        "an object"
                    }
                )));
            }
        };
        let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
        let lines = shape::entry_lines(text, format, &table_path, &names);
        for ((name, value), line) in items.into_iter().zip(lines) {
            let read = match entry::read_entry(&name, value, host)
                .map_err(|m| shape_error(format!("server {name:?}: {m}")))?
            {
                Read::Server(mut spec) => {
                    if agent_file {
                        spec.filter.include =
                            amazonq_agent_tools(&root, &name).map_err(shape_error)?;
                    }
                    if let (Some(gemini), TransportSpec::Stdio { .. }) = (&gemini, &spec.transport)
                    {
                        let environ = spec.environ.get_or_insert_default();
                        environ.inherit.get_or_insert_with(|| gemini.clone());
                    }
                    let rules = opencode_rules(&name)?;
                    spec.filter.rules = (!rules.is_empty()).then(|| Box::new(NameRules(rules)));
                    Ok(ServerSpec { personal, ..spec })
                }
                Read::Skipped(why) => Err(why),
            };
            entries.push(Entry {
                name,
                line,
                read,
                scope,
            });
        }
    }
    Ok(ConfigFile {
        shape: Some(shape),
        host,
        entries,
    })
}

/// Whether `path` is in `$CONTINUE_GLOBAL_DIR/mcpServers`, Continue's own folder moved
/// (see [`user::user_config_dirs`]).
fn in_continue_global_dir(path: &Path) -> bool {
    let var = |v: &str| std::env::var(v).ok();
    user::continue_dir(None, &var)
        .is_some_and(|d| path.parent() == Some(d.join("mcpServers").as_path()))
}

/// The user's Amazon Q agent files that a project agent of the same `name` shadows,
/// each with the project file: Amazon Q keeps the workspace's agent and drops the
/// global one ("Agent conflict for NAME. Using workspace version.",
/// aws/amazon-q-developer-cli `crates/chat-cli/src/cli/agent/mod.rs`, `load`). An
/// agent's name is its `name` member, not its file name. Not when the project is the
/// home directory: Amazon Q then reads its global agents only.
pub fn amazonq_shadowed_agents(
    project_dir: &Path,
    user_files: &[PathBuf],
) -> Vec<(PathBuf, String, PathBuf)> {
    let name_of = |file: &Path| -> Option<String> {
        let text = read_discovered(file).ok()?;
        let root: serde_json::Value =
            serde_json::from_str(&jsonc::strip_jsonc(shape::without_bom(&text))).ok()?;
        root.get("name")?.as_str().map(str::to_string)
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let same_dir =
        |a: &Path, b: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    if home.is_some_and(|h| same_dir(&h, project_dir)) {
        return Vec::new();
    }
    let project_agents = files_in(&project_dir.join(AMAZONQ_AGENTS_DIR), &["json"]);
    let same = |a: &Path, b: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    let mut shadowed = Vec::new();
    let project_names: Vec<(String, PathBuf)> = project_agents
        .iter()
        .filter(|p| !user_files.iter().any(|u| same(u, p)))
        .filter_map(|p| Some((name_of(p)?, p.clone())))
        .collect();
    for file in user_files.iter().filter(|f| is_amazonq_agent(f)) {
        let Some(name) = name_of(file) else { continue };
        if let Some((_, project)) = project_names.iter().find(|(n, _)| *n == name) {
            shadowed.push((file.clone(), name, project.clone()));
        }
    }
    shadowed
}

/// Whether `file` is an Amazon Q agent file (`.amazonq/cli-agents/NAME.json`, or the
/// user's `~/.aws/amazonq/cli-agents/`).
fn is_amazonq_agent(file: &Path) -> bool {
    let dir = |n: usize| {
        file.ancestors()
            .nth(n)
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
    };
    dir(1) == Some("cli-agents") && matches!(dir(2), Some(".amazonq" | "amazonq"))
}

/// The tools of `server` an Amazon Q agent shows, from its `tools` list: `None` for
/// all of them. As aws/amazon-q-developer-cli `crates/chat-cli/src/cli/chat/tool_manager.rs`
/// reads it: a list of exactly `["*"]` shows everything; otherwise each item starting
/// with `@SERVER` counts, `@SERVER/TOOL` for one tool and any other (`@SERVER`) for
/// all; no item for the server shows none (`tools` defaults to empty,
/// `crates/chat-cli/src/cli/agent/mod.rs`).
fn amazonq_agent_tools(
    root: &serde_json::Value,
    server: &str,
) -> Result<Option<Vec<String>>, String> {
    let tools: Vec<&str> = match root.get("tools") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|t| {
                t.as_str()
                    .ok_or("\"tools\" is not a list of strings".to_string())
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"tools\" is not a list of strings".into()),
    };
    if tools == ["*"] {
        return Ok(None);
    }
    let prefix = format!("@{server}");
    let mut shown = Vec::new();
    for item in tools.iter().filter(|t| t.starts_with(&prefix)) {
        match item.split_once('/') {
            Some((_, tool)) if !tool.is_empty() => {
                if !shown.iter().any(|s| s == tool) {
                    shown.push(tool.to_string());
                }
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(shown))
}

/// The variables an entry's `env` unsets (VS Code's `"NAME": null`), which its
/// resolved environment leaves out whichever host lists it: an entry that unsets
/// others is another definition.
fn unset_names(spec: &ServerSpec) -> Option<&Vec<String>> {
    match spec.environ.as_ref()?.inherit.as_ref()? {
        environ::Inherit::AllBut(names) => Some(names),
        _ => None,
    }
}

/// A Continue `.json` file in `.continue/mcpServers/` holding one server, named after
/// the file, as continuedev/continue `core/context/mcp/json/loadJsonMcpConfigs.ts`
/// reads one that is neither a Claude Code nor a Claude Desktop file.
fn read_continue_single(
    root: &serde_json::Value,
    shown: &str,
    file: &Path,
    line: usize,
) -> Result<ConfigFile, ConfigError> {
    let shape_error = |message: String| ConfigError::Shape {
        path: shown.to_string(),
        message,
    };
    if !root.is_object() || !(root.get("command").is_some() || root.get("url").is_some()) {
        return Err(shape_error(
            "neither \"mcpServers\" nor one server's \"command\" or \"url\"; Continue reads neither".into(),
        ));
    }
    let name = file
        .file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let read = match entry::read_entry(&name, root, Host::Continue)
        .map_err(|m| shape_error(format!("server {name:?}: {m}")))?
    {
        Read::Server(spec) => Ok(ServerSpec {
            personal: is_user_file(file, &|v| std::env::var(v).ok()),
            ..spec
        }),
        Read::Skipped(why) => Err(why),
    };
    Ok(ConfigFile {
        shape: None,
        host: Host::Continue,
        entries: vec![Entry {
            name,
            line,
            read,
            scope: None,
        }],
    })
}

/// opencode's merge of two configs (remeda `mergeDeep`): objects member by member,
/// anything else replaced by the later.
fn merge_deep(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) => merge_deep(existing, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

/// opencode's config files, merged as opencode merges them (`layers` lowest
/// precedence first, see [`opencode_layers`]), each server given to the file of
/// highest precedence that names it.
fn read_opencode_layers(
    layers: &[PathBuf],
    project_dir: &Path,
) -> Result<Vec<(PathBuf, ConfigFile)>, ConfigError> {
    let mut merged = serde_json::Value::Object(Default::default());
    let mut read = Vec::new();
    for file in layers {
        let text = read_discovered(file)?;
        let text = shape::without_bom(&text).to_string();
        let shown = file.display().to_string();
        let root = shape::parse(&text, Format::Json, &shown)?;
        shape::check_repeats(
            &jsonc::strip_jsonc(&text),
            &[vec!["mcp".to_string()]],
            &shown,
        )?;
        merge_deep(&mut merged, root.clone());
        read.push((file, text, root));
    }
    let Some(nearest) = layers.last() else {
        return Ok(Vec::new());
    };
    let shown = format!(
        "{} (merged over {} more opencode config{})",
        nearest.display(),
        layers.len() - 1,
        if layers.len() == 2 { "" } else { "s" }
    );
    let text = serde_json::to_string(&merged).unwrap_or_default();
    let all = read_file(&text, &shown, nearest, project_dir)?;
    let mut by_file: Vec<(PathBuf, ConfigFile)> = Vec::new();
    for entry in all.entries {
        let owner = read
            .iter()
            .rev()
            .find(|(_, _, root)| root.get("mcp").and_then(|m| m.get(&entry.name)).is_some());
        let Some((file, text, _)) = owner else {
            continue;
        };
        let line = shape::entry_lines(
            text,
            Format::Json,
            &["mcp".to_string()],
            std::slice::from_ref(&entry.name),
        )[0];
        let entry = Entry { line, ..entry };
        match by_file.iter_mut().find(|(f, _)| f == *file) {
            Some((_, config)) => config.entries.push(entry),
            None => by_file.push((
                file.to_path_buf(),
                ConfigFile {
                    shape: all.shape,
                    host: all.host,
                    entries: vec![entry],
                },
            )),
        }
    }
    Ok(by_file)
}

/// Parses one config file of any supported shape and returns its servers (disabled
/// entries left out), with the current directory as the project directory.
pub fn parse_config(text: &str, path: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    let cwd = std::env::current_dir().unwrap_or_default();
    let file = read_file(text, path, Path::new(path), &cwd)?;
    Ok(file.servers().cloned().collect())
}

impl ProjectConfig {
    /// Reads the configs found in `project_dir`, or only `explicit` when given.
    pub fn load(project_dir: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        ProjectConfig::load_preferring(project_dir, explicit, &BTreeMap::new())
    }

    /// [`ProjectConfig::load`], taking a server defined differently in two files from
    /// the file `prefer` names for it (`[config] prefer` in mcp-lock.toml, paths
    /// relative to the project directory).
    pub fn load_preferring(
        project_dir: &Path,
        explicit: Option<&Path>,
        prefer: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, ConfigError> {
        let explicit: Vec<PathBuf> = explicit.map(Path::to_path_buf).into_iter().collect();
        ProjectConfig::load_files(project_dir, &explicit, prefer)
    }

    /// [`ProjectConfig::load_preferring`] of these files (all the user-level files of
    /// `--user CLIENT`), or of the configs found in `project_dir` when there are none.
    pub fn load_files(
        project_dir: &Path,
        explicit: &[PathBuf],
        prefer: &BTreeMap<String, PathBuf>,
    ) -> Result<Self, ConfigError> {
        let explicit = (!explicit.is_empty()).then_some(explicit);
        let files: Vec<PathBuf> = match explicit {
            Some(paths) => paths.to_vec(),
            None => discover(project_dir),
        };
        if files.is_empty() {
            return Err(ConfigError::NotFound {
                dir: project_dir.display().to_string(),
            });
        }
        // Each server with the file, scope and `found` entry it was taken from.
        let mut servers: Vec<(ServerSpec, PathBuf, Option<Scope>, usize)> = Vec::new();
        // Where each name is in `servers`: a search per entry is quadratic in the
        // servers of a large config.
        let mut index: HashMap<String, usize> = HashMap::new();
        let mut found: Vec<Found> = Vec::new();
        // opencode merges its files into one config before reading it: read together.
        let layers = match explicit {
            None => opencode_layers(project_dir),
            Some(_) => Vec::new(),
        };
        let mut reads: Vec<(PathBuf, ConfigFile)> = Vec::new();
        let mut modifiers = settings::Modifiers::new(project_dir, &|v| std::env::var(v).ok());
        for file in &files {
            if layers.len() > 1 && layers.contains(file) {
                if Some(file) == layers.first() {
                    reads.extend(read_opencode_layers(&layers, project_dir)?);
                }
                continue;
            }
            // A file of a folder `--user` reads whole (Amazon Q's agents, Continue's
            // `mcpServers`) is bounded as a discovered file is; a file named on its
            // own (`--config`, `~/.claude.json`) is read as before.
            let in_folder = is_amazonq_agent(file)
                || file.parent().and_then(Path::file_name) == Some("mcpServers".as_ref());
            let text = match explicit {
                Some(_) if !in_folder => {
                    crate::base::files::read_regular_text(file, MAX_NAMED_BYTES).map_err(
                        |source| ConfigError::Read {
                            path: file.display().to_string(),
                            source,
                        },
                    )?
                }
                _ => read_discovered(file)?,
            };
            let read = read_file(&text, &file.display().to_string(), file, project_dir)?;
            reads.push((file.clone(), read));
        }
        for (file, read) in reads {
            let file = &file;
            for mut entry in read.entries {
                // An entry its host runs but mcp-lock cannot start or reach as it does:
                // said at every run, not only listed by `servers`.
                if let Err(why) = &entry.read
                    && let Some(why) = why.strip_prefix(entry::NOT_CHECKED)
                {
                    modifiers.warnings.push(format!(
                        "{}: server {:?} is not checked: {why}",
                        file.display(),
                        entry.name
                    ));
                }
                // Settings files outside the entry may turn it off (settings.rs).
                let mut note = None;
                if let Ok(spec) = &entry.read {
                    match modifiers.judge(read.host, entry.scope, &spec.name, spec.personal)? {
                        Some(settings::Verdict::Skip(why)) => entry.read = Err(why),
                        Some(settings::Verdict::Note(why)) => note = Some(why),
                        None => {}
                    }
                }
                found.push(Found {
                    name: entry.name.clone(),
                    file: file.clone(),
                    line: entry.line,
                    host: read.host,
                    skipped: entry.read.as_ref().err().cloned(),
                    note,
                });
                let here = found.len() - 1;
                let Ok(spec) = entry.read else { continue };
                let Some(&at) = index.get(&spec.name) else {
                    index.insert(spec.name.clone(), servers.len());
                    servers.push((spec, file.clone(), entry.scope, here));
                    continue;
                };
                let (existing, first, scope, taken) = &mut servers[at];
                // Claude Code's own scopes: local > project > user.
                if let (Some(old), Some(new)) = (*scope, entry.scope)
                    && old != new
                {
                    let (winner, loser, shadowed) = if new > old {
                        *existing = spec;
                        *first = file.clone();
                        *scope = Some(new);
                        (new, old, std::mem::replace(taken, here))
                    } else {
                        (old, new, here)
                    };
                    found[shadowed].skipped = Some(format!(
                        "{} scope, overridden by the {} scope",
                        loser.as_str(),
                        winner.as_str()
                    ));
                    continue;
                }
                // Each file's text read by its own host's variable rules; an envFile,
                // VS Code's PATH appending, a headersHelper or OAuth turned off is
                // part of what the entry launches: one that differs is another
                // definition, never merged.
                let env_file = |s: &ServerSpec| {
                    s.environ
                        .as_ref()
                        .map(|e| (e.env_file.clone(), e.path_appends))
                };
                if !existing.launches_as(&spec)
                    || env_file(existing).unwrap_or_default() != env_file(&spec).unwrap_or_default()
                    || existing.headers_helper != spec.headers_helper
                    || existing.oauth_off != spec.oauth_off
                    || existing.refusal != spec.refusal
                    || unset_names(existing) != unset_names(&spec)
                {
                    let preferred = prefer.get(&spec.name).map(|p| project_dir.join(p));
                    let same = |a: &Path, b: &Path| {
                        std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
                    };
                    match preferred {
                        Some(p) if same(&p, file) => {
                            found[*taken].skipped = Some(format!(
                                "defined differently in {}; mcp-lock.toml prefers this one",
                                file.display()
                            ));
                            *existing = spec;
                            *first = file.clone();
                            *taken = here;
                        }
                        Some(p) if same(&p, first) => {
                            found[here].skipped = Some(format!(
                                "defined differently in {}; mcp-lock.toml prefers that one",
                                first.display()
                            ));
                        }
                        _ => {
                            return Err(ConfigError::Conflict {
                                name: spec.name,
                                first: first.display().to_string(),
                                second: file.display().to_string(),
                            });
                        }
                    }
                    continue;
                }
                // A variable one host leaves out when unset and the other requires is
                // required (an error names it), never silently left out for both; one
                // a host refuses empty is refused empty.
                let optional = &spec.vars.optional;
                existing.vars.optional.retain(|f| optional.contains(f));
                for field in &spec.vars.non_empty {
                    if !existing.vars.non_empty.contains(field) {
                        existing.vars.non_empty.push(field.clone());
                    }
                }
                // What each host lets the server inherit is the host's: kept per host,
                // so each client profile's listing is made as that host starts it.
                let inherit = |s: &ServerSpec| s.environ.as_ref().and_then(|e| e.inherit.clone());
                if inherit(existing) != inherit(&spec) {
                    let environ = existing.environ.get_or_insert_default();
                    for host in &spec.hosts {
                        if !existing.hosts.contains(host) {
                            environ.by_host.push((*host, inherit(&spec)));
                        }
                    }
                }
                for host in spec.hosts {
                    if !existing.hosts.contains(&host) {
                        existing.hosts.push(host);
                    }
                }
                existing.filter = existing.filter.union(&spec.filter);
                existing.personal &= spec.personal;
                existing.guarded &= spec.guarded;
                existing.allow_scripts &= spec.allow_scripts;
            }
        }
        let mut servers: Vec<ServerSpec> = servers.into_iter().map(|(s, ..)| s).collect();
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ProjectConfig {
            project_dir: project_dir.to_path_buf(),
            files,
            servers,
            found,
            warnings: modifiers.warnings,
        })
    }

    /// The server of this name (`servers` is sorted by name).
    pub fn server(&self, name: &str) -> Option<&ServerSpec> {
        self.servers
            .binary_search_by(|s| s.name.as_str().cmp(name))
            .ok()
            .map(|at| &self.servers[at])
    }

    /// The named servers, or all of them when `names` is empty.
    pub fn select(&self, names: &[String]) -> Result<Vec<ServerSpec>, ConfigError> {
        if names.is_empty() {
            return Ok(self.servers.clone());
        }
        let mut picked = Vec::new();
        for name in names {
            match self.server(name) {
                Some(spec) if !picked.contains(spec) => picked.push(spec.clone()),
                Some(_) => {}
                None => {
                    return Err(ConfigError::UnknownServer {
                        name: name.clone(),
                        known: self.known_names(),
                    });
                }
            }
        }
        picked.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(picked)
    }

    fn known_names(&self) -> String {
        if self.servers.is_empty() {
            return "(no servers)".into();
        }
        self.servers
            .iter()
            .map(|s| s.name.as_str())
            .collect::<Vec<_>>()
            .join(", ")
    }
}

#[cfg(test)]
mod tests;

#[cfg(test)]
mod place_tests;
