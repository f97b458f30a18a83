//! The project's existing MCP client configs: discovery, parsing, `${VAR}` expansion.
//!
//! Users already describe their servers for Claude Code (`.mcp.json`), VS Code
//! (`.vscode/mcp.json`), Cursor (`.cursor/mcp.json`) and Claude Desktop; mcp-lock reads
//! those rather than asking for a second copy.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde_json::Value;

use crate::json::Json;
use crate::secrets::Secrets;

/// Config files looked for in the project directory, in this order.
pub const DISCOVERED: [&str; 3] = [".mcp.json", ".vscode/mcp.json", ".cursor/mcp.json"];

/// A config problem, with the file it concerns.
#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error(
        "no MCP client config found in {dir} (looked for .mcp.json, .vscode/mcp.json, .cursor/mcp.json); pass --config PATH"
    )]
    NotFound { dir: String },
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}:{column}: not valid JSON: {message}")]
    Syntax {
        path: String,
        line: usize,
        column: usize,
        message: String,
    },
    #[error("{path}: {message}")]
    Shape { path: String, message: String },
    #[error(
        "server {name:?} is defined differently in {first} and {second}; keep one or pass --config"
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
}

/// One server entry as a config file has it.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    pub name: String,
    pub file: PathBuf,
    /// The line its entry starts on (1 when the reader cannot tell).
    pub line: usize,
    pub host: Host,
    /// Why the entry is not used (`disabled: true`, `enabled: false`), when it is not.
    pub skipped: Option<String>,
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
}

/// Which tools a host's config lets its agent see.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ToolFilter {
    /// Only these (`includeTools`, `enabled_tools`, `available_tools`, `tools`), when
    /// given.
    pub include: Option<Vec<String>>,
    /// Never these (`excludeTools`, `disabled_tools`, `disabledTools`).
    pub exclude: Vec<String>,
}

impl ToolFilter {
    /// Whether the host's agent is shown a tool of this name.
    pub fn shows(&self, tool: &str) -> bool {
        self.include
            .as_ref()
            .is_none_or(|names| names.iter().any(|n| n == tool))
            && !self.exclude.iter().any(|n| n == tool)
    }

    /// Whether the filter hides anything at all.
    pub fn is_empty(&self) -> bool {
        self.include.is_none() && self.exclude.is_empty()
    }
}

/// The agent host a config file belongs to, told by where the file is (or, for a file
/// named with `--config`, by its name and shape).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Host {
    ClaudeCode,
    VsCode,
    Cursor,
    ClaudeDesktop,
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
            Host::Unknown => "an unknown host",
        }
    }

    /// The host of a config file: `.mcp.json` is Claude Code's, `.vscode/…` (or a
    /// `servers` table) VS Code's, `.cursor/mcp.json` Cursor's and
    /// `claude_desktop_config.json` Claude Desktop's.
    pub fn of_file(path: &Path, vscode_shape: bool) -> Host {
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or("");
        let parent = path
            .parent()
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
            .unwrap_or("");
        match (parent, name) {
            (".vscode", _) | ("User", "settings.json") => Host::VsCode,
            (".cursor", "mcp.json") => Host::Cursor,
            (_, ".mcp.json") => Host::ClaudeCode,
            (_, "claude_desktop_config.json") => Host::ClaudeDesktop,
            _ if vscode_shape => Host::VsCode,
            _ => Host::Unknown,
        }
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
    pub kind: RemoteKind,
    pub url: String,
    /// The URL as written in the config, variables unexpanded: what messages show.
    pub written_url: String,
    /// Header name, expanded value, and the variables the value was built from (for
    /// an authentication error to name).
    pub headers: Vec<(String, String, Vec<String>)>,
    /// Values that must never be shown, logged or written.
    pub secrets: Secrets,
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
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
    /// Values that must never be shown, logged or written.
    pub secrets: Secrets,
}

impl ProjectConfig {
    /// Reads the configs found in `project_dir`, or only `explicit` when given.
    pub fn load(project_dir: &Path, explicit: Option<&Path>) -> Result<Self, ConfigError> {
        let files: Vec<PathBuf> = match explicit {
            Some(path) => vec![path.to_path_buf()],
            None => DISCOVERED
                .iter()
                .map(|rel| project_dir.join(rel))
                .filter(|p| p.is_file())
                .collect(),
        };
        if files.is_empty() {
            return Err(ConfigError::NotFound {
                dir: project_dir.display().to_string(),
            });
        }
        let mut servers: Vec<(ServerSpec, PathBuf)> = Vec::new();
        for file in &files {
            let text = std::fs::read_to_string(file).map_err(|source| ConfigError::Read {
                path: file.display().to_string(),
                source,
            })?;
            for spec in parse_config(&text, &file.display().to_string())? {
                let spec = ServerSpec {
                    hosts: vec![Host::of_file(file, spec.hosts.contains(&Host::VsCode))],
                    ..spec
                };
                match servers.iter_mut().find(|(s, _)| s.name == spec.name) {
                    Some((existing, _)) if existing.transport == spec.transport => {
                        for host in spec.hosts {
                            if !existing.hosts.contains(&host) {
                                existing.hosts.push(host);
                            }
                        }
                    }
                    Some((_, first)) => {
                        return Err(ConfigError::Conflict {
                            name: spec.name,
                            first: first.display().to_string(),
                            second: file.display().to_string(),
                        });
                    }
                    None => servers.push((spec, file.clone())),
                }
            }
        }
        let mut servers: Vec<ServerSpec> = servers.into_iter().map(|(s, _)| s).collect();
        servers.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(ProjectConfig {
            project_dir: project_dir.to_path_buf(),
            files,
            servers,
            found: Vec::new(),
        })
    }

    /// The named servers, or all of them when `names` is empty.
    pub fn select(&self, names: &[String]) -> Result<Vec<ServerSpec>, ConfigError> {
        if names.is_empty() {
            return Ok(self.servers.clone());
        }
        let mut picked = Vec::new();
        for name in names {
            match self.servers.iter().find(|s| &s.name == name) {
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

/// Parses one config file of any supported shape: `mcpServers` (Claude Code, Claude
/// Desktop, Cursor), `servers` (VS Code) or `mcp.servers` (VS Code settings). Comments
/// and trailing commas, which VS Code allows, are accepted.
pub fn parse_config(text: &str, path: &str) -> Result<Vec<ServerSpec>, ConfigError> {
    let cleaned = strip_jsonc(text);
    let root: Value = serde_json::from_str(&cleaned).map_err(|e| ConfigError::Syntax {
        path: path.to_string(),
        line: e.line(),
        column: e.column(),
        message: e
            .to_string()
            .split(" at line")
            .next()
            .unwrap_or("")
            .to_string(),
    })?;
    let shape = |message: String| ConfigError::Shape {
        path: path.to_string(),
        message,
    };
    let (table, table_path): (_, &[&str]) = if let Some(t) = root.get("mcpServers") {
        (t, &["mcpServers"])
    } else if let Some(t) = root.get("servers") {
        (t, &["servers"])
    } else if let Some(t) = root.get("mcp").and_then(|m| m.get("servers")) {
        (t, &["mcp", "servers"])
    } else {
        return Err(shape(
            "no \"mcpServers\" or \"servers\" object; is this an MCP client config?".into(),
        ));
    };
    // serde_json keeps the last of a repeated member: a server defined twice would be
    // taken silently as its second definition. The strict reader sees every copy; a
    // repeat counts where it changes what is read (the servers table, or the members
    // leading to it), not elsewhere in a settings file.
    let table_path: Vec<String> = table_path.iter().map(|s| s.to_string()).collect();
    let mut repeats = Vec::new();
    if let Ok(strict) = Json::parse(&cleaned) {
        repeated_members(&strict, &mut Vec::new(), &mut repeats);
    }
    let relevant = repeats.into_iter().find(|(at, name)| {
        at.starts_with(&table_path)
            || (table_path.starts_with(at) && table_path.get(at.len()) == Some(name))
    });
    if let Some((at, name)) = relevant {
        let message = match at.strip_prefix(table_path.as_slice()) {
            Some([]) => format!("server {name:?} is defined more than once; keep one"),
            Some([server, inner @ ..]) => {
                let member: Vec<&str> = inner.iter().chain([&name]).map(String::as_str).collect();
                format!(
                    "server {server:?}: \"{}\" is given more than once; keep one",
                    member.join(".")
                )
            }
            None => {
                let member: Vec<&str> = at.iter().chain([&name]).map(String::as_str).collect();
                format!("\"{}\" is given more than once; keep one", member.join("."))
            }
        };
        return Err(shape(message));
    }
    let table = table
        .as_object()
        .ok_or_else(|| shape("the servers member is not an object".into()))?;
    // Only VS Code's files keep servers under `servers`.
    let hosts = if table_path[0] == "mcpServers" {
        vec![Host::Unknown]
    } else {
        vec![Host::VsCode]
    };
    let mut specs = Vec::new();
    for (name, entry) in table {
        let spec = parse_entry(name, entry).map_err(|m| shape(format!("server {name:?}: {m}")))?;
        specs.push(ServerSpec {
            hosts: hosts.clone(),
            ..spec
        });
    }
    Ok(specs)
}

/// Every member named twice in one object, in document order: the path of that object
/// (member names and array indexes) and the name.
fn repeated_members(value: &Json, path: &mut Vec<String>, out: &mut Vec<(Vec<String>, String)>) {
    let children: Vec<(String, &Json)> = match value {
        Json::Object(members) => {
            let mut seen = std::collections::BTreeSet::new();
            for (name, _) in members {
                if !seen.insert(name) {
                    out.push((path.clone(), name.to_string_lossy()));
                }
            }
            members
                .iter()
                .map(|(name, v)| (name.to_string_lossy(), v))
                .collect()
        }
        Json::Array(items) => items
            .iter()
            .enumerate()
            .map(|(i, v)| (i.to_string(), v))
            .collect(),
        _ => return,
    };
    for (name, child) in children {
        path.push(name);
        repeated_members(child, path, out);
        path.pop();
    }
}

fn parse_entry(name: &str, entry: &Value) -> Result<ServerSpec, String> {
    let obj = entry.as_object().ok_or("entry is not an object")?;
    let string = |key: &str| -> Result<Option<String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.clone())),
            Some(_) => Err(format!("\"{key}\" is not a string")),
        }
    };
    let string_map = |key: &str| -> Result<BTreeMap<String, String>, String> {
        match obj.get(key) {
            None | Some(Value::Null) => Ok(BTreeMap::new()),
            Some(Value::Object(map)) => map
                .iter()
                .map(|(k, v)| match v {
                    Value::String(s) => Ok((k.clone(), s.clone())),
                    // Clients differ on what they make of these; say it as meant.
                    Value::Number(_) | Value::Bool(_) => Err(format!(
                        "\"{key}.{k}\" is not a string; write it in quotes: \"{v}\""
                    )),
                    _ => Err(format!("\"{key}.{k}\" is not a string")),
                })
                .collect(),
            Some(_) => Err(format!("\"{key}\" is not an object")),
        }
    };
    let kind = string("type")?;
    let url = string("url")?;
    let command = string("command")?;
    if command.is_some() && url.is_some() {
        return Err(
            "has both \"command\" and \"url\"; a stdio server has a command, a remote one a url"
                .into(),
        );
    }
    let remote = match kind.as_deref() {
        Some("stdio") => None,
        None if url.is_some() && command.is_none() => Some(RemoteKind::StreamableHttp),
        None => None,
        Some(other) => match RemoteKind::parse(other) {
            Some(kind) => Some(kind),
            None => return Err(format!("unknown transport type {other:?}")),
        },
    };
    let transport = if let Some(kind) = remote {
        TransportSpec::Remote {
            kind,
            url: url.ok_or("remote entry has no \"url\"")?,
            headers: string_map("headers")?,
        }
    } else {
        let args = match obj.get("args") {
            None | Some(Value::Null) => Vec::new(),
            Some(Value::Array(items)) => items
                .iter()
                .map(|a| match a {
                    Value::String(s) => Ok(s.clone()),
                    Value::Number(n) => Ok(n.to_string()),
                    _ => Err("\"args\" holds a value that is not a string".to_string()),
                })
                .collect::<Result<_, _>>()?,
            Some(_) => return Err("\"args\" is not an array".into()),
        };
        let command = command.ok_or("stdio entry has no \"command\"")?;
        // An entry `mcp-lock wrap` rewrote launches the guard, which starts the real
        // server: read it as that server, so wrapping never moves a pin.
        let (command, args) = unwrapped_command(&command, &args).unwrap_or((command, args));
        TransportSpec::Stdio {
            command,
            args,
            env: string_map("env")?,
            cwd: string("cwd")?,
        }
    };
    Ok(ServerSpec {
        name: name.to_string(),
        transport,
        hosts: Vec::new(),
        filter: ToolFilter::default(),
    })
}

/// Whether a stdio entry launches `mcp-lock guard`: the command's file name starts
/// with `mcp-lock` and the first argument is `guard`.
pub fn launches_guard(command: &str, args: &[String]) -> bool {
    let file_name = command.rsplit(['/', '\\']).next().unwrap_or(command);
    matches!(file_name, "mcp-lock" | "mcp-lock.exe") && args.first().is_some_and(|a| a == "guard")
}

/// The server a wrapped entry starts: for `mcp-lock guard NAME [OPTIONS] -- COMMAND
/// ARGS...` (what `mcp-lock wrap` writes), `COMMAND` and `ARGS`. `None` for an entry
/// that does not launch the guard, or names no command after `--`.
pub fn unwrapped_command(command: &str, args: &[String]) -> Option<(String, Vec<String>)> {
    if !launches_guard(command, args) {
        return None;
    }
    // The "--" is looked for after the server name, which could itself be "--".
    let dashes = 2 + args.get(2..)?.iter().position(|a| a == "--")?;
    let (inner, rest) = args[dashes + 1..].split_first()?;
    Some((inner.clone(), rest.to_vec()))
}

/// Removes `//` and `/* */` comments, then trailing commas, outside strings.
fn strip_jsonc(text: &str) -> String {
    remove_trailing_commas(&remove_comments(text))
}

/// Copies `text`, asking `skip` at each char outside JSON strings how many chars to
/// drop there (0 keeps it).
fn filter_outside_strings(text: &str, mut skip: impl FnMut(&[char], usize) -> usize) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    let mut in_string = false;
    while i < chars.len() {
        let c = chars[i];
        if in_string {
            out.push(c);
            if c == '\\' && i + 1 < chars.len() {
                out.push(chars[i + 1]);
                i += 1;
            } else if c == '"' {
                in_string = false;
            }
            i += 1;
            continue;
        }
        let n = skip(&chars, i);
        if n > 0 {
            // Keep line breaks so error positions still point at the right line.
            out.extend(chars[i..i + n].iter().filter(|&&c| c == '\n'));
            i += n;
            continue;
        }
        in_string = c == '"';
        out.push(c);
        i += 1;
    }
    out
}

fn remove_comments(text: &str) -> String {
    filter_outside_strings(text, |chars, i| match (chars[i], chars.get(i + 1)) {
        ('/', Some('/')) => chars[i..]
            .iter()
            .position(|&c| c == '\n')
            .unwrap_or(chars.len() - i),
        ('/', Some('*')) => chars[i + 2..]
            .windows(2)
            .position(|w| w == ['*', '/'])
            .map_or(chars.len() - i, |p| p + 4),
        _ => 0,
    })
}

fn remove_trailing_commas(text: &str) -> String {
    filter_outside_strings(text, |chars, i| {
        let next = chars[i + 1..].iter().find(|c| !c.is_whitespace());
        usize::from(chars[i] == ',' && matches!(next, Some('}' | ']')))
    })
}

/// Expands `${VAR}`, `${VAR:-default}`, `${env:VAR}` and `${workspaceFolder}` in one
/// value, recording every expanded value as a secret.
pub fn expand(
    value: &str,
    server: &str,
    field: &str,
    project_dir: &Path,
    lookup: &dyn Fn(&str) -> Option<String>,
    secrets: &mut Secrets,
) -> Result<String, ConfigError> {
    let mut out = String::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        out.push_str(&rest[..start]);
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: "unclosed \"${\"".into(),
            });
        };
        let body = &after[..end];
        rest = &after[end + 1..];
        if body == "workspaceFolder" {
            out.push_str(&project_dir.display().to_string());
            continue;
        }
        if let Some(input) = body.strip_prefix("input:") {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: format!(
                    "VS Code input variable ${{input:{input}}} cannot be answered here; use ${{env:NAME}} instead"
                ),
            });
        }
        let body = body.strip_prefix("env:").unwrap_or(body);
        let (var, default) = match body.split_once(":-") {
            Some((var, default)) => (var, Some(default)),
            None => (body, None),
        };
        let valid = !var.is_empty() && var.chars().all(|c| c.is_ascii_alphanumeric() || c == '_');
        if !valid {
            return Err(ConfigError::Variable {
                server: server.into(),
                field: field.into(),
                message: format!("\"${{{body}}}\" is not a variable reference"),
            });
        }
        match lookup(var).or_else(|| default.map(str::to_string)) {
            Some(v) => {
                secrets.add_variable(var, &v);
                out.push_str(&v);
            }
            None => {
                return Err(ConfigError::UnsetVariable {
                    server: server.into(),
                    var: var.into(),
                    field: field.into(),
                });
            }
        }
    }
    out.push_str(rest);
    Ok(out)
}

/// The values a client gave the variables of `template` when it expanded it to
/// `actual`: for a wrapped entry, whose guard receives only the expanded arguments.
/// `None` when `actual` cannot be an expansion of `template`. Where two adjacent
/// variables make the split ambiguous, the first takes as little as it can.
pub fn match_expansion(template: &str, actual: &str) -> Option<Vec<(String, String)>> {
    let (parts, closed) = template_parts(template);
    if !closed {
        return None;
    }

    fn go(parts: &[Part], actual: &str, out: &mut Vec<(String, String)>) -> bool {
        match parts.split_first() {
            None => actual.is_empty(),
            Some((Part::Text(text), rest)) => {
                actual.starts_with(text) && go(rest, &actual[text.len()..], out)
            }
            Some((Part::Var(name), rest)) => {
                for (cut, _) in actual.char_indices().chain([(actual.len(), ' ')]) {
                    out.push((name.to_string(), actual[..cut].to_string()));
                    if go(rest, &actual[cut..], out) {
                        return true;
                    }
                    out.pop();
                }
                false
            }
        }
    }
    let mut out = Vec::new();
    go(&parts, actual, &mut out).then_some(out)
}

/// The variables a value refers to, as `${NAME}` / `${env:NAME}` name them.
fn variables_in(value: &str) -> Vec<String> {
    template_parts(value)
        .0
        .into_iter()
        .filter_map(|part| match part {
            Part::Var(name) if name != "workspaceFolder" => Some(name.to_string()),
            _ => None,
        })
        .collect()
}

/// A piece of a value as written: text, or a `${...}` reference by variable name.
enum Part<'a> {
    Text(&'a str),
    Var(&'a str),
}

/// A value split at its `${NAME}`, `${env:NAME}` and `${NAME:-default}` references
/// (`${workspaceFolder}` among them), and whether every `${` was closed; the parts
/// after an unclosed one are left out.
fn template_parts(value: &str) -> (Vec<Part<'_>>, bool) {
    let mut parts = Vec::new();
    let mut rest = value;
    while let Some(start) = rest.find("${") {
        parts.push(Part::Text(&rest[..start]));
        let after = &rest[start + 2..];
        let Some(end) = after.find('}') else {
            return (parts, false);
        };
        let body = after[..end].strip_prefix("env:").unwrap_or(&after[..end]);
        parts.push(Part::Var(
            body.split_once(":-").map_or(body, |(name, _)| name),
        ));
        rest = &after[end + 1..];
    }
    parts.push(Part::Text(rest));
    (parts, true)
}

impl ServerSpec {
    /// Expands the entry's variables from the given environment.
    pub fn resolve(
        &self,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Resolved, ConfigError> {
        match &self.transport {
            TransportSpec::Stdio { .. } => self
                .resolve_stdio(project_dir, lookup)
                .map(|r| Resolved::Stdio(r.expect("a stdio entry"))),
            TransportSpec::Remote { kind, url, headers } => {
                let mut secrets = Secrets::default();
                let name = &self.name;
                let written_url = url.clone();
                let url = expand(url, name, "url", project_dir, lookup, &mut secrets)?;
                let mut resolved = Vec::new();
                for (key, value) in headers {
                    let field = format!("headers.{key}");
                    let expanded = expand(value, name, &field, project_dir, lookup, &mut secrets)?;
                    // A header value is a credential whether or not it came from a variable.
                    secrets.add_header(key, &expanded);
                    resolved.push((key.clone(), expanded, variables_in(value)));
                }
                Ok(Resolved::Remote(ResolvedRemote {
                    kind: *kind,
                    url,
                    written_url,
                    headers: resolved,
                    secrets,
                }))
            }
        }
    }

    /// Expands a stdio entry's variables from the given environment, recording its
    /// secrets by the rule in [`crate::secrets`].
    pub fn resolve_stdio(
        &self,
        project_dir: &Path,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Option<ResolvedStdio>, ConfigError> {
        let TransportSpec::Stdio {
            command,
            args,
            env,
            cwd,
        } = &self.transport
        else {
            return Ok(None);
        };
        let mut secrets = Secrets::default();
        let name = &self.name;
        let mut resolved_env = BTreeMap::new();
        for (key, value) in env {
            let v = expand(
                value,
                name,
                &format!("env.{key}"),
                project_dir,
                lookup,
                &mut secrets,
            )?;
            if !value.contains("${") {
                secrets.add_literal_env(key, value);
            }
            resolved_env.insert(key.clone(), v);
        }
        let self_command = command;
        let command = expand(command, name, "command", project_dir, lookup, &mut secrets)?;
        let args = args
            .iter()
            .enumerate()
            .map(|(i, a)| {
                expand(
                    a,
                    name,
                    &format!("args[{i}]"),
                    project_dir,
                    lookup,
                    &mut secrets,
                )
            })
            .collect::<Result<Vec<_>, _>>()?;
        let cwd = match cwd {
            Some(c) => project_dir.join(expand(c, name, "cwd", project_dir, lookup, &mut secrets)?),
            None => project_dir.to_path_buf(),
        };
        Ok(Some(ResolvedStdio {
            written_command: self_command.clone(),
            command,
            args,
            env: resolved_env,
            cwd,
            secrets,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(var: &str) -> Option<String> {
        match var {
            "TOKEN" => Some("s3cr3t-value".into()),
            "HOME" => Some("/home/me".into()),
            _ => None,
        }
    }

    #[test]
    fn reads_every_supported_shape() {
        let claude = r#"{"mcpServers":{"a":{"command":"x","args":["1"],"env":{"K":"v"}}}}"#;
        let vscode = r#"{ // comment
            "servers": {"a": {"type": "stdio", "command": "x", "args": ["1", "// not a comment"], // why
                              /* block, */ },
                        "r": {"type": "http", "url": "https://h/mcp", "headers": {"Authorization": "Bearer ${T}"}}},
            "inputs": []}"#;
        let settings = r#"{"mcp":{"servers":{"a":{"command":"x"}}}}"#;
        assert_eq!(parse_config(claude, "c").unwrap()[0].name, "a");
        let v = parse_config(vscode, "v").unwrap();
        assert_eq!(v.len(), 2);
        assert!(
            matches!(&v[0].transport, TransportSpec::Stdio { args, .. } if args == &["1", "// not a comment"])
        );
        assert!(
            matches!(&v[1].transport, TransportSpec::Remote { headers, .. } if headers.keys().eq(["Authorization"]))
        );
        assert_eq!(parse_config(settings, "s").unwrap().len(), 1);
    }

    #[test]
    fn url_without_command_is_remote() {
        let specs = parse_config(
            r#"{"mcpServers":{"r":{"url":"http://127.0.0.1/mcp"}}}"#,
            "c",
        )
        .unwrap();
        assert_eq!(specs[0].transport_name(), "streamable-http");
    }

    #[test]
    fn syntax_errors_name_file_and_line() {
        let err = parse_config(
            "{\n\"mcpServers\": {\n  \"a\": {\"command\": }\n}}",
            ".mcp.json",
        )
        .unwrap_err();
        assert!(err.to_string().starts_with(".mcp.json:3:"), "{err}");
    }

    #[test]
    fn wrapped_entry_reads_as_the_server_it_launches() {
        let text = r#"{"mcpServers":{
            "gh": {"command": "/usr/local/bin/mcp-lock", "env": {"K": "v"},
                   "args": ["guard", "gh", "--lock", "../mcp.lock", "--", "npx", "-y", "pkg"]},
            "bare": {"command": "mcp-lock", "args": ["guard", "bare", "--", "server"]},
            "hand": {"command": "mcp-lock", "args": ["guard", "hand"]},
            "other": {"command": "tool", "args": ["guard", "x", "--", "server"]}}}"#;
        let specs = parse_config(text, "c").unwrap();
        let launch = |name: &str| match &specs.iter().find(|s| s.name == name).unwrap().transport {
            TransportSpec::Stdio {
                command, args, env, ..
            } => (command.clone(), args.join(" "), env.len()),
            TransportSpec::Remote { .. } => panic!("stdio"),
        };
        assert_eq!(launch("gh"), ("npx".into(), "-y pkg".into(), 1));
        assert_eq!(launch("bare"), ("server".into(), String::new(), 0));
        assert_eq!(launch("hand"), ("mcp-lock".into(), "guard hand".into(), 0));
        assert_eq!(
            launch("other"),
            ("tool".into(), "guard x -- server".into(), 0)
        );
    }

    #[test]
    fn unwrapped_command_looks_for_the_separator_after_the_server_name() {
        let args = |a: &[&str]| a.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        assert_eq!(
            unwrapped_command("mcp-lock", &args(&["guard", "--", "--", "srv", "a"])),
            Some(("srv".into(), args(&["a"])))
        );
        assert_eq!(
            unwrapped_command("C:\\bin\\mcp-lock.exe", &args(&["guard", "s", "--", "x"])),
            Some(("x".into(), vec![]))
        );
        assert_eq!(
            unwrapped_command("mcp-lock", &args(&["guard", "s", "--"])),
            None
        );
    }

    #[test]
    fn expands_variables_and_remembers_them_as_secrets() {
        let mut secrets = Secrets::default();
        let out = expand(
            "Bearer ${TOKEN} ${env:HOME} ${MISSING:-fallback}",
            "s",
            "args[0]",
            Path::new("/p"),
            &env,
            &mut secrets,
        )
        .unwrap();
        assert_eq!(out, "Bearer s3cr3t-value /home/me fallback");
        assert_eq!(secrets.redact("x s3cr3t-value y"), "x ${TOKEN} y");
    }

    #[test]
    fn match_expansion_recovers_the_values_a_client_expanded() {
        assert_eq!(
            match_expansion("--token=${SECRET}", "--token=abc123"),
            Some(vec![("SECRET".into(), "abc123".into())])
        );
        assert_eq!(
            match_expansion("${env:A}/x/${B:-d}", "one/x/two"),
            Some(vec![("A".into(), "one".into()), ("B".into(), "two".into())])
        );
        assert_eq!(match_expansion("plain", "plain"), Some(vec![]));
        assert_eq!(match_expansion("--token=${SECRET}", "--other=abc"), None);
        assert_eq!(match_expansion("plain", "other"), None);
    }

    #[test]
    fn unset_variable_is_an_error_naming_it() {
        let err = expand(
            "${NOPE}",
            "gh",
            "env.X",
            Path::new("/"),
            &env,
            &mut Secrets::default(),
        )
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "server \"gh\": environment variable NOPE is not set (used in env.X)"
        );
    }
}
