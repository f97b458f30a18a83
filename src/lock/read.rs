//! Reading `mcp.lock`: every problem is an error naming the file and line, and every
//! pinned definition must still hash to its pin.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{FORMAT_VERSION, LockedServer, LockedTool, Lockfile, Reached};
use crate::client::PROTOCOL_VERSIONS;
use crate::hash::definition_hash;
use crate::json::Json;

/// A lock that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
}

#[derive(Deserialize)]
struct VersionOnly {
    version: Option<Spanned<i64>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLock {
    #[allow(dead_code)]
    version: i64,
    #[serde(default)]
    server: Vec<RawServer>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    name: Spanned<String>,
    transport: String,
    command: Option<String>,
    #[serde(default)]
    args: Vec<String>,
    #[serde(default)]
    env: Vec<String>,
    url: Option<String>,
    #[serde(default)]
    headers: Vec<String>,
    protocol_version: Spanned<String>,
    client_info: Spanned<String>,
    client_capabilities: Spanned<String>,
    server_info: Spanned<String>,
    list_changed: bool,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Spanned<String>,
    #[serde(default)]
    tool: Vec<RawTool>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: Spanned<String>,
    hash: Spanned<String>,
    definition: Spanned<String>,
}

/// Reads and checks a lock file. A missing file is `Ok(None)`.
pub fn read_lock(path: &Path) -> Result<Option<Lockfile>, LockError> {
    Ok(read_lock_with_text(path)?.map(|(lock, _)| lock))
}

/// [`read_lock`], also returning the file's text (for [`LockLines`]).
pub fn read_lock_with_text(path: &Path) -> Result<Option<(Lockfile, String)>, LockError> {
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LockError::Read {
                path: path.display().to_string(),
                source,
            });
        }
    };
    let lock = parse_lock(&text, &path.display().to_string())?;
    Ok(Some((lock, text)))
}

/// Parses and checks lock text; `path` is only for messages.
pub fn parse_lock(text: &str, path: &str) -> Result<Lockfile, LockError> {
    let at = |offset: usize, message: String| LockError::Invalid {
        path: path.to_string(),
        line: line_of(text, offset),
        message,
    };
    if let Some((line, marker)) = conflict_marker(text) {
        return Err(LockError::Invalid {
            path: path.to_string(),
            line,
            message: format!(
                "merge conflict marker {marker:?}; take either side whole, then run `mcp-lock update` to re-pin"
            ),
        });
    }
    let toml_error = |e: toml::de::Error| {
        let offset = e.span().map_or(0, |s| s.start);
        at(offset, format!("not a valid lock: {}", e.message().trim()))
    };
    let version = toml::from_str::<VersionOnly>(text).map_err(toml_error)?;
    match version.version {
        None => return Err(at(0, "no `version` key; is this an mcp.lock?".into())),
        Some(v) if *v.get_ref() > FORMAT_VERSION => {
            return Err(at(
                v.span().start,
                format!(
                    "lock format version {} is newer than this mcp-lock understands ({FORMAT_VERSION}); upgrade mcp-lock",
                    v.get_ref()
                ),
            ));
        }
        Some(v) if *v.get_ref() != FORMAT_VERSION => {
            return Err(at(
                v.span().start,
                format!("unknown lock format version {}", v.get_ref()),
            ));
        }
        Some(_) => {}
    }
    let raw: RawLock = toml::from_str(text).map_err(toml_error)?;
    let mut lock = Lockfile::default();
    for server in raw.server {
        let name_at = server.name.span().start;
        let name = server.name.into_inner();
        let json = |field: &Spanned<String>, what: &str| {
            let value = Json::parse(field.get_ref()).map_err(|e| {
                at(
                    field.span().start,
                    format!("server {name:?}: {what} is not valid JSON: {e}"),
                )
            })?;
            match value.canonical() {
                Ok(_) => Ok(value),
                Err(e) => Err(at(
                    field.span().start,
                    format!("server {name:?}: {what} has {e}"),
                )),
            }
        };
        if let Some(hash) = &server.instructions_hash
            && !is_sha256_hex(hash.get_ref())
        {
            return Err(at(
                hash.span().start,
                format!("server {name:?}: instructions_hash is not 64 lowercase hex digits"),
            ));
        }
        if !PROTOCOL_VERSIONS.contains(&server.protocol_version.get_ref().as_str()) {
            return Err(at(
                server.protocol_version.span().start,
                format!(
                    "server {name:?}: protocol_version {:?} is not one this mcp-lock speaks ({}); restore the value that was pinned, or upgrade mcp-lock if a newer one wrote it",
                    server.protocol_version.get_ref(),
                    PROTOCOL_VERSIONS.join(", ")
                ),
            ));
        }
        let reached = match (server.transport.as_str(), server.command, server.url) {
            ("stdio", Some(command), None) => Reached::Stdio {
                command,
                args: server.args,
                env: server.env,
            },
            (kind @ ("streamable-http" | "sse"), None, Some(url)) => Reached::Remote {
                kind: kind.to_string(),
                url,
                headers: server.headers,
            },
            (kind, _, _) => {
                return Err(at(
                    name_at,
                    format!(
                        "server {name:?}: transport {kind:?} does not match its command/url (expected \"stdio\" with command, or \"streamable-http\"/\"sse\" with url)"
                    ),
                ));
            }
        };
        let mut tools = BTreeMap::new();
        for tool in server.tool {
            let tool_name = tool.name.get_ref().clone();
            let hash = tool.hash.get_ref().clone();
            if !is_sha256_hex(&hash) {
                return Err(at(
                    tool.hash.span().start,
                    format!("tool {tool_name:?}: hash is not 64 lowercase hex digits"),
                ));
            }
            let def_at = tool.definition.span().start;
            let definition = Json::parse(tool.definition.get_ref()).map_err(|e| {
                // The definition starts on the line after the opening quotes.
                let line = line_of(text, def_at) + e.line;
                LockError::Invalid {
                    path: path.to_string(),
                    line,
                    message: format!(
                        "tool {tool_name:?}: definition is not valid JSON: {}",
                        e.message
                    ),
                }
            })?;
            match definition_hash(&definition) {
                Ok(h) if h == hash => {}
                Ok(_) => {
                    return Err(at(
                        def_at,
                        format!(
                            "tool {tool_name:?} of server {name:?}: the definition does not match its hash (edited by hand?); run `mcp-lock update`"
                        ),
                    ));
                }
                Err(e) => {
                    return Err(at(
                        def_at,
                        format!("tool {tool_name:?}: definition has {e}"),
                    ));
                }
            }
            if definition.get("name").and_then(Json::as_str).as_deref() != Some(&tool_name) {
                return Err(at(
                    tool.name.span().start,
                    format!("tool {tool_name:?}: the definition's name differs"),
                ));
            }
            if tools
                .insert(tool_name.clone(), LockedTool { hash, definition })
                .is_some()
            {
                return Err(at(
                    tool.name.span().start,
                    format!("server {name:?} pins tool {tool_name:?} twice"),
                ));
            }
        }
        let locked = LockedServer {
            name: name.clone(),
            reached,
            protocol_version: server.protocol_version.into_inner(),
            client_info: json(&server.client_info, "client_info")?,
            client_capabilities: json(&server.client_capabilities, "client_capabilities")?,
            server_info: json(&server.server_info, "server_info")?,
            list_changed: server.list_changed,
            instructions_hash: server.instructions_hash.map(Spanned::into_inner),
            tools,
        };
        if locked.set_hash() != *server.set_hash.get_ref() {
            return Err(at(
                server.set_hash.span().start,
                format!(
                    "server {name:?}: set_hash does not match its tools (edited by hand?); run `mcp-lock update`"
                ),
            ));
        }
        if lock.servers.insert(name.clone(), locked).is_some() {
            return Err(at(name_at, format!("server {name:?} appears twice")));
        }
    }
    Ok(lock)
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

fn line_of(text: &str, offset: usize) -> usize {
    text.as_bytes()[..offset.min(text.len())]
        .iter()
        .filter(|&&b| b == b'\n')
        .count()
        + 1
}

fn conflict_marker(text: &str) -> Option<(usize, &'static str)> {
    text.lines().enumerate().find_map(|(i, line)| {
        let marker = if line.starts_with("<<<<<<<") {
            "<<<<<<<"
        } else if line.starts_with(">>>>>>>") {
            ">>>>>>>"
        } else if line == "=======" || line.starts_with("======= ") {
            "======="
        } else if line.starts_with("|||||||") {
            "|||||||"
        } else {
            return None;
        };
        Some((i + 1, marker))
    })
}

/// Where each server and tool is in a lock's text, for reports that point at lines.
#[derive(Debug, Clone, Default)]
pub struct LockLines {
    servers: BTreeMap<String, usize>,
    tools: BTreeMap<(String, String), usize>,
}

impl LockLines {
    /// The lines of lock text; text that is not a lock gives no lines.
    pub fn of(text: &str) -> LockLines {
        #[derive(Deserialize)]
        struct Names {
            #[serde(default)]
            server: Vec<ServerNames>,
        }
        #[derive(Deserialize)]
        struct ServerNames {
            name: Spanned<String>,
            #[serde(default)]
            tool: Vec<ToolName>,
        }
        #[derive(Deserialize)]
        struct ToolName {
            name: Spanned<String>,
        }
        let mut lines = LockLines::default();
        let Ok(names) = toml::from_str::<Names>(text) else {
            return lines;
        };
        for server in names.server {
            let line = line_of(text, server.name.span().start);
            let name = server.name.into_inner();
            for tool in server.tool {
                let at = line_of(text, tool.name.span().start);
                lines
                    .tools
                    .insert((name.clone(), tool.name.into_inner()), at);
            }
            lines.servers.insert(name, line);
        }
        lines
    }

    /// The line naming a tool, else its server, else 1.
    pub fn line(&self, server: &str, tool: Option<&str>) -> usize {
        tool.and_then(|t| self.tools.get(&(server.to_string(), t.to_string())))
            .or_else(|| self.servers.get(server))
            .copied()
            .unwrap_or(1)
    }
}
