//! Reading `mcp.lock`: every problem is an error naming the file and line, and every
//! pinned definition must still hash to its pin.

use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{FORMAT_VERSION, LockedServer, LockedTool, Lockfile, Reached};
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
    protocol_version: String,
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
    check_header(text, path)?;
    let raw: RawLock = toml::from_str(text).map_err(|e| toml_error(text, path, e))?;
    let mut lock = Lockfile::default();
    for server in raw.server {
        let name_at = server.name.span().start;
        let locked = check_server(server, text, path)?;
        let name = locked.name.clone();
        if lock.servers.insert(name.clone(), locked).is_some() {
            return Err(invalid(
                text,
                path,
                name_at,
                format!("server {name:?} appears twice"),
            ));
        }
    }
    Ok(lock)
}

/// Reads and checks one server's part of a lock file: what the guard needs. The TOML
/// is read whole (a few passes over the text), but the other servers' definitions are
/// never parsed as JSON, hashed or kept, so a guard for a small server does not pay
/// for a large one. `Ok(None)`: no file;
/// `Ok(Some(None))`: the lock does not pin that server.
pub fn read_lock_server(
    path: &Path,
    name: &str,
) -> Result<Option<Option<LockedServer>>, LockError> {
    let shown = path.display().to_string();
    let text = match std::fs::read_to_string(path) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LockError::Read {
                path: shown,
                source,
            });
        }
    };
    parse_lock_server(&text, &shown, name).map(Some)
}

/// [`parse_lock`] for one server only.
pub fn parse_lock_server(
    text: &str,
    path: &str,
    name: &str,
) -> Result<Option<LockedServer>, LockError> {
    check_header(text, path)?;
    let names: ServerNames = toml::from_str(text).map_err(|e| toml_error(text, path, e))?;
    let mut found = None;
    for (index, server) in names.server.iter().enumerate() {
        if server.name.get_ref() == name {
            if found.is_some() {
                let at = server.name.span().start;
                return Err(invalid(
                    text,
                    path,
                    at,
                    format!("server {name:?} appears twice"),
                ));
            }
            found = Some(index);
        }
    }
    let Some(index) = found else {
        return Ok(None);
    };
    let deserializer = toml::Deserializer::parse(text).map_err(|e| toml_error(text, path, e))?;
    let one =
        OneServer::deserialize_with(deserializer, index).map_err(|e| toml_error(text, path, e))?;
    match one {
        Some(server) => check_server(server, text, path).map(Some),
        None => Ok(None),
    }
}

/// Server names only; every other key is skipped.
#[derive(Deserialize)]
struct ServerNames {
    #[serde(default)]
    server: Vec<ServerName>,
}

#[derive(Deserialize)]
struct ServerName {
    name: Spanned<String>,
}

/// The lock with only the `index`th server read; the others are skipped unread.
struct OneServer;

impl OneServer {
    fn deserialize_with<'de, D: serde::Deserializer<'de>>(
        deserializer: D,
        index: usize,
    ) -> Result<Option<RawServer>, D::Error> {
        use serde::de::{DeserializeSeed, IgnoredAny, MapAccess, SeqAccess, Visitor};
        struct Top(usize);
        struct Servers(usize);
        impl<'de> Visitor<'de> for Top {
            type Value = Option<RawServer>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("a lock")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                while let Some(key) = map.next_key::<String>()? {
                    if key == "server" {
                        found = map.next_value_seed(Servers(self.0))?;
                    } else {
                        map.next_value::<IgnoredAny>()?;
                    }
                }
                Ok(found)
            }
        }
        impl<'de> DeserializeSeed<'de> for Servers {
            type Value = Option<RawServer>;
            fn deserialize<D: serde::Deserializer<'de>>(
                self,
                d: D,
            ) -> Result<Self::Value, D::Error> {
                d.deserialize_seq(self)
            }
        }
        impl<'de> Visitor<'de> for Servers {
            type Value = Option<RawServer>;
            fn expecting(&self, f: &mut std::fmt::Formatter) -> std::fmt::Result {
                f.write_str("an array of servers")
            }
            fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
                let mut found = None;
                let mut at = 0;
                loop {
                    if at == self.0 {
                        match seq.next_element::<RawServer>()? {
                            Some(server) => found = Some(server),
                            None => break,
                        }
                    } else if seq.next_element::<IgnoredAny>()?.is_none() {
                        break;
                    }
                    at += 1;
                }
                Ok(found)
            }
        }
        deserializer.deserialize_map(Top(index))
    }
}

fn invalid(text: &str, path: &str, offset: usize, message: String) -> LockError {
    LockError::Invalid {
        path: path.to_string(),
        line: line_of(text, offset),
        message,
    }
}

fn toml_error(text: &str, path: &str, e: toml::de::Error) -> LockError {
    let offset = e.span().map_or(0, |s| s.start);
    invalid(
        text,
        path,
        offset,
        format!("not a valid lock: {}", e.message().trim()),
    )
}

/// The checks before any server is read: no conflict marker, a version this build reads.
fn check_header(text: &str, path: &str) -> Result<(), LockError> {
    let at = |offset: usize, message: String| invalid(text, path, offset, message);
    if let Some((line, marker)) = conflict_marker(text) {
        return Err(LockError::Invalid {
            path: path.to_string(),
            line,
            message: format!(
                "merge conflict marker {marker:?}; take either side whole, then run `mcp-lock update` to re-pin"
            ),
        });
    }
    let version = toml::from_str::<VersionOnly>(text).map_err(|e| toml_error(text, path, e))?;
    match version.version {
        None => Err(at(0, "no `version` key; is this an mcp.lock?".into())),
        Some(v) if *v.get_ref() > FORMAT_VERSION => Err(at(
            v.span().start,
            format!(
                "lock format version {} is newer than this mcp-lock understands ({FORMAT_VERSION}); upgrade mcp-lock",
                v.get_ref()
            ),
        )),
        Some(v) if *v.get_ref() != FORMAT_VERSION => Err(at(
            v.span().start,
            format!("unknown lock format version {}", v.get_ref()),
        )),
        Some(_) => Ok(()),
    }
}

/// One server's entry, checked: its JSON fields read, every pin against its hash.
fn check_server(server: RawServer, text: &str, path: &str) -> Result<LockedServer, LockError> {
    let at = |offset: usize, message: String| invalid(text, path, offset, message);
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
            .insert(
                tool_name.clone(),
                LockedTool {
                    hash,
                    definition: definition.into(),
                },
            )
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
        protocol_version: server.protocol_version,
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
    Ok(locked)
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

#[cfg(test)]
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../mcp.lock.example");

    /// The example lock with a second server whose pins are broken.
    fn two_servers() -> String {
        let at = EXAMPLE.find("\n[[server]]").unwrap();
        let section = &EXAMPLE[at..].replacen("name = \"memory\"", "name = \"broken\"", 1);
        let section = section.replacen("set_hash = \"197bb8", "set_hash = \"000000", 1);
        format!("{EXAMPLE}{section}")
    }

    #[test]
    fn one_server_is_read_as_the_whole_lock_reads_it_and_the_others_are_skipped() {
        let whole = parse_lock(EXAMPLE, "mcp.lock").unwrap();
        let text = two_servers();
        assert!(parse_lock(&text, "mcp.lock").is_err());
        let one = parse_lock_server(&text, "mcp.lock", "memory").unwrap();
        assert_eq!(one.as_ref(), whole.servers.get("memory"));
        assert_eq!(
            parse_lock_server(&text, "mcp.lock", "nosuch").unwrap(),
            None
        );
        let err = parse_lock_server(&text, "mcp.lock", "broken").unwrap_err();
        assert!(err.to_string().contains("set_hash does not match"), "{err}");
    }

    #[test]
    fn one_server_named_twice_is_refused() {
        let at = EXAMPLE.find("\n[[server]]").unwrap();
        let text = format!("{EXAMPLE}{}", &EXAMPLE[at..]);
        let err = parse_lock_server(&text, "mcp.lock", "memory").unwrap_err();
        assert!(err.to_string().contains("appears twice"), "{err}");
    }
}
