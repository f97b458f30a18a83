//! Reading `mcp.lock`: every problem is an error naming the file and line, and every
//! pinned definition must still hash to its pin.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::path::Path;

use serde::Deserialize;
use toml::Spanned;

use super::{FORMAT_VERSION, LockedServer, LockedTool, Lockfile, PinnedServer, Reached};
use crate::hash::definition_hash;
use crate::json::Json;
use crate::surface::Kind;

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
    /// Version 3: the issuer of the login token used.
    oauth_issuer: Option<String>,
    // Version 1 keeps one listing's fields on the server itself.
    protocol_version: Option<String>,
    client_info: Option<Spanned<String>>,
    client_capabilities: Option<Spanned<String>>,
    server_info: Option<Spanned<String>>,
    list_changed: Option<bool>,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Option<Spanned<String>>,
    /// Version 2: one listing per client profile.
    #[serde(default)]
    profile: Vec<RawProfile>,
    #[serde(default)]
    tool: Vec<RawTool>,
    #[serde(default)]
    prompt: Vec<RawTool>,
    #[serde(default)]
    resource_template: Vec<RawTool>,
    #[serde(default)]
    resource: Vec<RawTool>,
    /// Version 3: what the entry launches.
    package: Option<Spanned<RawPackage>>,
}

/// `[server.package]`: the fields of every kind; which ones a kind needs is checked
/// in [`check_package`].
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPackage {
    kind: String,
    launcher: String,
    name: Option<String>,
    version: Option<String>,
    integrity: Option<String>,
    reference: Option<String>,
    digest: Option<String>,
    path: Option<String>,
    sha256: Option<String>,
    #[serde(default)]
    file: Vec<RawFile>,
}

/// `[[server.package.file]]`: one distribution file of a pinned PyPI release.
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    name: String,
    sha256: String,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawProfile {
    name: Spanned<String>,
    protocol_version: String,
    client_info: Spanned<String>,
    client_capabilities: Spanned<String>,
    /// `"project-dir"`: `roots/list` was answered with the lock's directory.
    roots: Option<Spanned<String>>,
    server_info: Spanned<String>,
    list_changed: bool,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Spanned<String>,
    prompts_set_hash: Option<Spanned<String>>,
    resource_templates_set_hash: Option<Spanned<String>>,
    resources_set_hash: Option<Spanned<String>>,
}

/// One pinned definition of any kind: keyed by `name` (tools, prompts),
/// `uri_template` (resource templates) or `uri` (resources).
#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawTool {
    name: Option<Spanned<String>>,
    uri_template: Option<Spanned<String>>,
    uri: Option<Spanned<String>>,
    /// The profiles it was seen under (version 2; version 1 has one listing).
    profiles: Option<Spanned<Vec<String>>>,
    hash: Spanned<String>,
    /// Where the definition's string is: it is read from the text when checked, so
    /// the lock's definitions are not copied out of it (for a large lock, the
    /// megabytes that dominate reading it).
    definition: Spanned<serde::de::IgnoredAny>,
}

/// Reads and checks a lock file. A missing file is `Ok(None)`.
pub fn read_lock(path: &Path) -> Result<Option<Lockfile>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    parse_lock(&text, &path.display().to_string()).map(Some)
}

/// [`read_lock`], also returning where each server and definition is in the file.
pub fn read_lock_with_lines(path: &Path) -> Result<Option<(Lockfile, LockLines)>, LockError> {
    read_unchecked(path)?.map(UncheckedLock::check).transpose()
}

/// A lock read as TOML and not yet checked: [`read_lock_with_lines`] between its two
/// steps. It no longer holds the file's text, so a caller that reads two locks (a
/// diff) holds neither text, nor either lock's parsed definitions, while it reads the
/// other.
pub struct UncheckedLock<'a> {
    version: i64,
    raw: RawLock,
    text: std::borrow::Cow<'a, str>,
    index: LineIndex,
    path: String,
}

/// The first step of [`read_lock_with_lines`]: the file read as TOML, its header
/// checked. `Ok(None)`: no file.
pub fn read_unchecked(path: &Path) -> Result<Option<UncheckedLock<'static>>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    parse_unchecked(text.into(), &path.display().to_string()).map(Some)
}

fn parse_unchecked<'a>(
    text: std::borrow::Cow<'a, str>,
    path: &str,
) -> Result<UncheckedLock<'a>, LockError> {
    let version = check_header(&text, path)?;
    let raw: RawLock = toml::from_str(&text).map_err(|e| toml_error(&text, path, e))?;
    Ok(UncheckedLock {
        version,
        raw,
        index: LineIndex::new(&text),
        text,
        path: path.to_string(),
    })
}

impl UncheckedLock<'_> {
    /// The second step: every server checked, every definition against its pin.
    pub fn check(self) -> Result<(Lockfile, LockLines), LockError> {
        let UncheckedLock {
            version,
            raw,
            text,
            index,
            path,
        } = self;
        let file = LockText {
            text: &text,
            index: &index,
            path: &path,
        };
        let mut lock = Lockfile::default();
        let mut lines = LockLines::default();
        for server in raw.server {
            let name_at = server.name.span().start;
            let name = server.name.get_ref().clone();
            lines.add_server(&index, &server);
            let locked = check_server(server, version, &file)?;
            if lock.servers.insert(name.clone(), locked).is_some() {
                return Err(invalid_at(
                    &index,
                    &path,
                    name_at,
                    format!("server {name:?} appears twice"),
                ));
            }
        }
        Ok((lock, lines))
    }
}

fn read_text(path: &Path) -> Result<Option<String>, LockError> {
    match std::fs::read_to_string(path) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(source) => Err(LockError::Read {
            path: path.display().to_string(),
            source,
        }),
    }
}

/// [`read_lock`], also returning the file's text (for [`LockLines`]).
pub fn read_lock_with_text(path: &Path) -> Result<Option<(Lockfile, String)>, LockError> {
    let Some(text) = read_text(path)? else {
        return Ok(None);
    };
    let lock = parse_lock(&text, &path.display().to_string())?;
    Ok(Some((lock, text)))
}

/// Parses and checks lock text; `path` is only for messages.
pub fn parse_lock(text: &str, path: &str) -> Result<Lockfile, LockError> {
    parse_lock_with_lines(text, path).map(|(lock, _)| lock)
}

/// [`parse_lock`], also returning where each server and definition is: the same as
/// [`LockLines::of`] the text, from the one reading of it.
pub fn parse_lock_with_lines(text: &str, path: &str) -> Result<(Lockfile, LockLines), LockError> {
    parse_unchecked(text.into(), path)?.check()
}

/// Reads and checks one server's part of a lock file: what the guard needs. The TOML
/// is read whole (a few passes over the text), but the other servers' definitions are
/// never parsed as JSON, hashed or kept, so a guard for a small server does not pay
/// for a large one. `Ok(None)`: no file;
/// `Ok(Some(None))`: the lock does not pin that server.
pub fn read_lock_server(
    path: &Path,
    name: &str,
) -> Result<Option<Option<PinnedServer>>, LockError> {
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
) -> Result<Option<PinnedServer>, LockError> {
    let version = check_header(text, path)?;
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
        Some(server) => {
            let index = LineIndex::new(text);
            let file = LockText {
                text,
                index: &index,
                path,
            };
            check_server(server, version, &file).map(Some)
        }
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

/// The lock's text while its servers are checked: where its definitions are read
/// from, and what its errors point into.
struct LockText<'a> {
    text: &'a str,
    index: &'a LineIndex,
    path: &'a str,
}

impl LockText<'_> {
    /// The string value whose TOML text is at `span`: a literal string as it stands
    /// in the text, any other through the TOML reader.
    fn string_at(&self, span: std::ops::Range<usize>) -> Result<Cow<'_, str>, LockError> {
        let raw = &self.text[span.clone()];
        if !raw.contains('\r') {
            if let Some(body) = raw
                .strip_prefix("'''")
                .and_then(|r| r.strip_suffix("'''"))
                .filter(|_| raw.len() >= 6)
            {
                // A newline right after the opening quotes is not part of the string.
                return Ok(Cow::Borrowed(body.strip_prefix('\n').unwrap_or(body)));
            }
            if !raw.starts_with("'''")
                && raw.len() >= 2
                && raw.starts_with('\'')
                && raw.ends_with('\'')
            {
                return Ok(Cow::Borrowed(&raw[1..raw.len() - 1]));
            }
        }
        toml::de::ValueDeserializer::parse(raw)
            .and_then(String::deserialize)
            .map(Cow::Owned)
            .map_err(|e| {
                let offset = span.start + e.span().map_or(0, |s| s.start);
                invalid_at(
                    self.index,
                    self.path,
                    offset,
                    format!("not a valid lock: {}", e.message().trim()),
                )
            })
    }
}

fn invalid_at(index: &LineIndex, path: &str, offset: usize, message: String) -> LockError {
    LockError::Invalid {
        path: path.to_string(),
        line: index.line(offset),
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

/// The checks before any server is read: no conflict marker, a version this build
/// reads. Returns the version.
fn check_header(text: &str, path: &str) -> Result<i64, LockError> {
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
    // Top-level keys come before the first table, so the version is read from the
    // text above it, not from a parse of the whole lock. Should that head not read
    // on its own (a table header inside a multi-line string), the whole text is read.
    let head = &text[..first_table_at(text)];
    let version = toml::from_str::<VersionOnly>(head)
        .or_else(|_| toml::from_str::<VersionOnly>(text))
        .map_err(|e| toml_error(text, path, e))?;
    match version.version {
        None => Err(at(0, "no `version` key; is this an mcp.lock?".into())),
        Some(v) if *v.get_ref() > FORMAT_VERSION => Err(at(
            v.span().start,
            format!(
                "lock format version {} is newer than this mcp-lock understands ({FORMAT_VERSION}); upgrade mcp-lock",
                v.get_ref()
            ),
        )),
        Some(v) if *v.get_ref() < 1 => Err(at(
            v.span().start,
            format!("unknown lock format version {}", v.get_ref()),
        )),
        Some(v) => Ok(*v.get_ref()),
    }
}

/// Where the first line that opens a table (`[` after any indentation) starts; the
/// text's length when there is none.
fn first_table_at(text: &str) -> usize {
    let mut at = 0;
    for line in text.split_inclusive('\n') {
        if line.trim_start().starts_with('[') {
            return at;
        }
        at += line.len();
    }
    text.len()
}

/// The listing fields of one profile, however the lock version spells them.
struct RawListing {
    profile: Spanned<String>,
    protocol_version: String,
    client_info: Spanned<String>,
    client_capabilities: Spanned<String>,
    roots: Option<Spanned<String>>,
    server_info: Spanned<String>,
    list_changed: bool,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Spanned<String>,
    /// The set hashes of the other kinds this profile pins.
    other_set_hashes: Vec<(Kind, Spanned<String>)>,
}

/// The value `roots` is written with: the project directory, never a path.
pub(crate) const PROJECT_ROOT: &str = "project-dir";

/// One server's entry, checked: its JSON fields read, every pin against its hash.
fn check_server(
    server: RawServer,
    version: i64,
    file: &LockText<'_>,
) -> Result<PinnedServer, LockError> {
    let (index, path) = (file.index, file.path);
    let at = |offset: usize, message: String| invalid_at(index, path, offset, message);
    let name_at = server.name.span().start;
    let name = server.name.get_ref().clone();
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
            oauth_issuer: server.oauth_issuer,
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
    let listings = if version == 1 {
        if let Some(profile) = server.profile.first() {
            return Err(at(
                profile.name.span().start,
                format!(
                    "server {name:?}: [[server.profile]] needs lock format version 2 (this lock says version 1)"
                ),
            ));
        }
        let missing =
            |field: &str| at(name_at, format!("server {name:?}: missing field `{field}`"));
        vec![RawListing {
            // A version-1 lock was made with no client capabilities: `bare`.
            profile: Spanned::new(name_at..name_at, crate::profile::BARE.to_string()),
            protocol_version: server
                .protocol_version
                .ok_or_else(|| missing("protocol_version"))?,
            client_info: server.client_info.ok_or_else(|| missing("client_info"))?,
            client_capabilities: server
                .client_capabilities
                .ok_or_else(|| missing("client_capabilities"))?,
            roots: None,
            server_info: server.server_info.ok_or_else(|| missing("server_info"))?,
            list_changed: server.list_changed.ok_or_else(|| missing("list_changed"))?,
            instructions_hash: server.instructions_hash,
            set_hash: server.set_hash.ok_or_else(|| missing("set_hash"))?,
            other_set_hashes: Vec::new(),
        }]
    } else {
        let v1_field = [
            ("protocol_version", server.protocol_version.is_some()),
            ("client_info", server.client_info.is_some()),
            ("client_capabilities", server.client_capabilities.is_some()),
            ("server_info", server.server_info.is_some()),
            ("list_changed", server.list_changed.is_some()),
            ("instructions_hash", server.instructions_hash.is_some()),
            ("set_hash", server.set_hash.is_some()),
        ]
        .into_iter()
        .find(|(_, present)| *present);
        if let Some((field, _)) = v1_field {
            return Err(at(
                name_at,
                format!(
                    "server {name:?}: `{field}` belongs in a [[server.profile]] in lock format version 2"
                ),
            ));
        }
        if server.profile.is_empty() {
            return Err(at(
                name_at,
                format!("server {name:?}: no [[server.profile]]; run `mcp-lock update` to pin it"),
            ));
        }
        server
            .profile
            .into_iter()
            .map(|p| RawListing {
                profile: p.name,
                protocol_version: p.protocol_version,
                client_info: p.client_info,
                client_capabilities: p.client_capabilities,
                roots: p.roots,
                server_info: p.server_info,
                list_changed: p.list_changed,
                instructions_hash: p.instructions_hash,
                set_hash: p.set_hash,
                other_set_hashes: [
                    (Kind::Prompt, p.prompts_set_hash),
                    (Kind::ResourceTemplate, p.resource_templates_set_hash),
                    (Kind::Resource, p.resources_set_hash),
                ]
                .into_iter()
                .filter_map(|(k, h)| h.map(|h| (k, h)))
                .collect(),
            })
            .collect()
    };
    if version == 1
        && let Some(item) = server.prompt.first().or(server.resource_template.first())
    {
        return Err(at(
            item.hash.span().start,
            format!("server {name:?}: prompts and resource templates need lock format version 2"),
        ));
    }
    let profile_names: Vec<&str> = listings
        .iter()
        .map(|l| l.profile.get_ref().as_str())
        .collect();
    // Each kind's definitions, under the profiles that saw them: a definition seen
    // under several profiles is written once.
    let mut pinned: BTreeMap<(String, Kind), BTreeMap<String, LockedTool>> = BTreeMap::new();
    let kinds = [
        (Kind::Tool, server.tool),
        (Kind::Prompt, server.prompt),
        (Kind::ResourceTemplate, server.resource_template),
        (Kind::Resource, server.resource),
    ];
    for (kind, items) in kinds {
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for item in items {
            let noun = kind.noun();
            let key_name = kind.lock_key();
            let (key, others) = match kind {
                Kind::Tool | Kind::Prompt => (&item.name, [&item.uri_template, &item.uri]),
                Kind::ResourceTemplate => (&item.uri_template, [&item.name, &item.uri]),
                Kind::Resource => (&item.uri, [&item.name, &item.uri_template]),
            };
            let Some(key_at) = key else {
                return Err(at(
                    item.hash.span().start,
                    format!(
                        "server {name:?}: a [[server.{}]] has no `{key_name}`",
                        kind.lock_table()
                    ),
                ));
            };
            if others.iter().any(|o| o.is_some()) {
                return Err(at(
                    key_at.span().start,
                    format!(
                        "{noun} {:?}: only `{key_name}` names a [[server.{}]]",
                        key_at.get_ref(),
                        kind.lock_table()
                    ),
                ));
            }
            let key = key_at.get_ref().clone();
            let hash = item.hash.get_ref().clone();
            if !is_sha256_hex(&hash) {
                return Err(at(
                    item.hash.span().start,
                    format!("{noun} {key:?}: hash is not 64 lowercase hex digits"),
                ));
            }
            let def_at = item.definition.span().start;
            let definition_text = file.string_at(item.definition.span())?;
            let definition = Json::parse(&definition_text).map_err(|e| {
                // The definition starts on the line after the opening quotes.
                let line = index.line(def_at) + e.line;
                LockError::Invalid {
                    path: path.to_string(),
                    line,
                    message: format!(
                        "{noun} {key:?}: definition is not valid JSON: {}",
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
                            "{noun} {key:?} of server {name:?}: the definition does not match its hash (edited by hand?); run `mcp-lock update`"
                        ),
                    ));
                }
                Err(e) => {
                    return Err(at(def_at, format!("{noun} {key:?}: definition has {e}")));
                }
            }
            if definition
                .get(kind.key_member())
                .and_then(Json::as_str)
                .as_deref()
                != Some(&key)
            {
                return Err(at(
                    key_at.span().start,
                    format!(
                        "{noun} {key:?}: the definition's {} differs",
                        kind.key_member()
                    ),
                ));
            }
            let under: Vec<String> = match (&item.profiles, version) {
                (None, 1) => vec![crate::profile::BARE.to_string()],
                (Some(p), 1) => {
                    return Err(at(
                        p.span().start,
                        format!("{noun} {key:?}: `profiles` needs lock format version 2"),
                    ));
                }
                (None, _) => {
                    return Err(at(
                        key_at.span().start,
                        format!("{noun} {key:?}: no `profiles`; which client profiles saw it?"),
                    ));
                }
                (Some(p), _) => {
                    if let Some(unknown) = p
                        .get_ref()
                        .iter()
                        .find(|n| !profile_names.contains(&n.as_str()))
                    {
                        return Err(at(
                            p.span().start,
                            format!(
                                "{noun} {key:?}: profile {unknown:?} has no [[server.profile]]"
                            ),
                        ));
                    }
                    if p.get_ref().is_empty() {
                        return Err(at(
                            p.span().start,
                            format!("{noun} {key:?}: `profiles` is empty"),
                        ));
                    }
                    p.get_ref().clone()
                }
            };
            let twice = if version == 1 {
                // Keys sort first by name: the first at or after (key, "") tells.
                seen.range((key.clone(), String::new())..)
                    .next()
                    .is_some_and(|((k, _), _)| *k == key)
            } else {
                seen.contains_key(&(key.clone(), hash.clone()))
            };
            if twice {
                return Err(at(
                    key_at.span().start,
                    format!("server {name:?} pins {noun} {key:?} twice"),
                ));
            }
            seen.insert((key.clone(), hash.clone()), key_at.span().start);
            let locked = LockedTool {
                hash,
                definition: definition.into(),
            };
            for profile in under {
                let slot = pinned.entry((profile.clone(), kind)).or_default();
                if slot.insert(key.clone(), locked.clone()).is_some() {
                    return Err(at(
                        key_at.span().start,
                        format!("server {name:?} profile {profile:?} pins {noun} {key:?} twice"),
                    ));
                }
            }
        }
    }
    let mut profiles = BTreeMap::new();
    for listing in listings {
        let profile = listing.profile.get_ref().clone();
        let profile_at = listing.profile.span().start;
        let label = if version == 1 {
            format!("server {name:?}")
        } else {
            format!("server {name:?} profile {profile:?}")
        };
        let json = |field: &Spanned<String>, what: &str| {
            let value = Json::parse(field.get_ref()).map_err(|e| {
                at(
                    field.span().start,
                    format!("{label}: {what} is not valid JSON: {e}"),
                )
            })?;
            match value.canonical() {
                Ok(_) => Ok(value),
                Err(e) => Err(at(field.span().start, format!("{label}: {what} has {e}"))),
            }
        };
        if let Some(hash) = &listing.instructions_hash
            && !is_sha256_hex(hash.get_ref())
        {
            return Err(at(
                hash.span().start,
                format!("{label}: instructions_hash is not 64 lowercase hex digits"),
            ));
        }
        if let Some(roots) = &listing.roots
            && roots.get_ref() != PROJECT_ROOT
        {
            return Err(at(
                roots.span().start,
                format!(
                    "{label}: roots is {:?}; the only value is {PROJECT_ROOT:?}",
                    roots.get_ref()
                ),
            ));
        }
        let tools = pinned
            .remove(&(profile.clone(), Kind::Tool))
            .unwrap_or_default();
        let mut others: BTreeMap<Kind, BTreeMap<String, LockedTool>> = BTreeMap::new();
        for (kind, _) in &listing.other_set_hashes {
            others.insert(
                *kind,
                pinned.remove(&(profile.clone(), *kind)).unwrap_or_default(),
            );
        }
        let locked = LockedServer {
            name: name.clone(),
            profile: profile.clone(),
            reached: reached.clone(),
            protocol_version: listing.protocol_version,
            client_info: json(&listing.client_info, "client_info")?,
            client_capabilities: json(&listing.client_capabilities, "client_capabilities")?,
            server_info: json(&listing.server_info, "server_info")?,
            list_changed: listing.list_changed,
            instructions_hash: listing.instructions_hash.map(Spanned::into_inner),
            tools,
            prompts: others.remove(&Kind::Prompt),
            resource_templates: others.remove(&Kind::ResourceTemplate),
            resources: others.remove(&Kind::Resource),
        };
        if locked.set_hash() != *listing.set_hash.get_ref() {
            return Err(at(
                listing.set_hash.span().start,
                format!(
                    "{label}: set_hash does not match its tools (edited by hand?); run `mcp-lock update`"
                ),
            ));
        }
        for (kind, hash) in &listing.other_set_hashes {
            if locked.set_hash_of(*kind).as_deref() != Some(hash.get_ref().as_str()) {
                return Err(at(
                    hash.span().start,
                    format!(
                        "{label}: {} does not match its {} (edited by hand?); run `mcp-lock update`",
                        kind.set_hash_key(),
                        kind.plural()
                    ),
                ));
            }
        }
        if profiles.insert(profile.clone(), locked).is_some() {
            return Err(at(
                profile_at,
                format!("server {name:?} lists profile {profile:?} twice"),
            ));
        }
    }
    // A definition under a profile that does not pin its kind (no set hash for it).
    if let Some(((profile, kind), items)) = pinned.iter().find(|(_, items)| !items.is_empty()) {
        let key = items.keys().next().cloned().unwrap_or_default();
        return Err(at(
            name_at,
            format!(
                "server {name:?}: {} {key:?} is pinned under profile {profile:?}, which has no {}",
                kind.noun(),
                kind.set_hash_key()
            ),
        ));
    }
    let package = match server.package {
        None => None,
        Some(_) if version < 3 => {
            return Err(at(
                name_at,
                format!(
                    "server {name:?}: [server.package] needs lock format version 3 (this lock says version {version})"
                ),
            ));
        }
        Some(raw) => {
            let offset = raw.span().start;
            Some(
                check_package(raw.into_inner())
                    .map_err(|e| at(offset, format!("server {name:?}: [server.package]: {e}")))?,
            )
        }
    };
    Ok(PinnedServer { profiles, package })
}

/// The pin a `[server.package]` table describes, with the fields its kind needs.
fn check_package(raw: RawPackage) -> Result<crate::package::PackagePin, String> {
    use crate::package::{Package, PackagePin};
    let need = |field: Option<String>, key: &str| {
        field.ok_or_else(|| format!("kind {:?} needs `{key}`", raw.kind))
    };
    let sha = |value: &str, what: &str| {
        if is_sha256_hex(value) {
            Ok(())
        } else {
            Err(format!("{what} is not 64 lowercase hex digits"))
        }
    };
    let package = match raw.kind.as_str() {
        "npm" => {
            let integrity = need(raw.integrity.clone(), "integrity")?;
            if !integrity.starts_with("sha") || !integrity.contains('-') {
                return Err(format!(
                    "integrity {integrity:?} is not an SRI hash (sha512-…)"
                ));
            }
            Package::Npm {
                name: need(raw.name.clone(), "name")?,
                version: need(raw.version.clone(), "version")?,
                integrity,
            }
        }
        "pypi" => {
            let mut files = BTreeMap::new();
            for f in &raw.file {
                sha(&f.sha256, &format!("the sha256 of {}", f.name))?;
                if files.insert(f.name.clone(), f.sha256.clone()).is_some() {
                    return Err(format!("file {:?} is listed twice", f.name));
                }
            }
            Package::Pypi {
                name: need(raw.name.clone(), "name")?,
                version: need(raw.version.clone(), "version")?,
                files,
            }
        }
        "oci" => Package::Oci {
            reference: need(raw.reference.clone(), "reference")?,
            digest: raw.digest.clone(),
        },
        "script" => {
            let sha256 = need(raw.sha256.clone(), "sha256")?;
            sha(&sha256, "sha256")?;
            Package::Script {
                path: need(raw.path.clone(), "path")?,
                sha256,
            }
        }
        "unrecognised" => Package::Unrecognised,
        other => {
            return Err(format!(
                "unknown kind {other:?} (expected npm, pypi, oci, script or unrecognised)"
            ));
        }
    };
    Ok(PackagePin {
        launcher: raw.launcher,
        package,
    })
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// The 1-based line of a byte offset, counting once; for one lookup (an error).
fn line_of(text: &str, offset: usize) -> usize {
    LineIndex::new(text).line(offset)
}

/// The start of every line of a text, so that many offsets find their lines in
/// log time each rather than by rescanning the text.
pub(crate) struct LineIndex {
    /// Byte offset just after each newline.
    starts: Vec<usize>,
    len: usize,
}

impl LineIndex {
    pub(crate) fn new(text: &str) -> LineIndex {
        let starts = newline_ends(text.as_bytes());
        LineIndex {
            starts,
            len: text.len(),
        }
    }

    /// The 1-based line holding `offset` (the last line past the end).
    pub(crate) fn line(&self, offset: usize) -> usize {
        let offset = offset.min(self.len);
        // Lines before `offset`: newlines at positions < offset.
        self.starts.partition_point(|&start| start <= offset) + 1
    }
}

fn newline_ends(bytes: &[u8]) -> Vec<usize> {
    bytes
        .iter()
        .enumerate()
        .filter(|(_, b)| **b == b'\n')
        .map(|(i, _)| i + 1)
        .collect()
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

/// Where each server and definition is in a lock's text, for reports that point at
/// lines.
#[derive(Debug, Clone, Default)]
pub struct LockLines {
    servers: BTreeMap<String, usize>,
    items: BTreeMap<(String, Kind, String), usize>,
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
            tool: Vec<KeyName>,
            #[serde(default)]
            prompt: Vec<KeyName>,
            #[serde(default)]
            resource_template: Vec<KeyName>,
            #[serde(default)]
            resource: Vec<KeyName>,
        }
        #[derive(Deserialize)]
        struct KeyName {
            #[serde(alias = "uri_template", alias = "uri")]
            name: Spanned<String>,
        }
        let mut lines = LockLines::default();
        let Ok(names) = toml::from_str::<Names>(text) else {
            return lines;
        };
        let index = LineIndex::new(text);
        let line_of = |offset: usize| index.line(offset);
        for server in names.server {
            let line = line_of(server.name.span().start);
            let name = server.name.into_inner();
            let kinds = [
                (Kind::Tool, server.tool),
                (Kind::Prompt, server.prompt),
                (Kind::ResourceTemplate, server.resource_template),
                (Kind::Resource, server.resource),
            ];
            for (kind, items) in kinds {
                for item in items {
                    let at = line_of(item.name.span().start);
                    // A key pinned with two definitions points at the first.
                    lines
                        .items
                        .entry((name.clone(), kind, item.name.into_inner()))
                        .or_insert(at);
                }
            }
            lines.servers.insert(name, line);
        }
        lines
    }

    /// The lines of one server read by [`parse_lock_with_lines`], as
    /// [`LockLines::of`] finds them.
    fn add_server(&mut self, index: &LineIndex, server: &RawServer) {
        let name = server.name.get_ref();
        let kinds = [
            (Kind::Tool, &server.tool),
            (Kind::Prompt, &server.prompt),
            (Kind::ResourceTemplate, &server.resource_template),
            (Kind::Resource, &server.resource),
        ];
        for (kind, items) in kinds {
            for item in items {
                let Some(key) = [&item.name, &item.uri_template, &item.uri]
                    .into_iter()
                    .flatten()
                    .next()
                else {
                    continue;
                };
                self.items
                    .entry((name.clone(), kind, key.get_ref().clone()))
                    .or_insert_with(|| index.line(key.span().start));
            }
        }
        self.servers
            .insert(name.clone(), index.line(server.name.span().start));
    }

    /// The line naming a tool, else its server, else 1.
    pub fn line(&self, server: &str, tool: Option<&str>) -> usize {
        self.line_of(server, Kind::Tool, tool)
    }

    /// The line keying a definition of any kind, else its server's, else 1.
    pub fn line_of(&self, server: &str, kind: Kind, key: Option<&str>) -> usize {
        key.and_then(|k| self.items.get(&(server.to_string(), kind, k.to_string())))
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

    /// The example lock with its first definition written as `form` makes of its
    /// text (the definition without the opening and closing quotes).
    fn first_definition_as(form: impl Fn(&str) -> String) -> String {
        let start = EXAMPLE.find("definition = '''\n").unwrap() + "definition = ".len();
        let end = start + 4 + EXAMPLE[start + 4..].find("\n'''").unwrap() + 4;
        let body = &EXAMPLE[start + 4..end - 4];
        format!("{}{}{}", &EXAMPLE[..start], form(body), &EXAMPLE[end..])
    }

    #[test]
    fn a_definition_reads_the_same_in_every_toml_string_form() {
        let whole = parse_lock(EXAMPLE, "mcp.lock").unwrap();
        let basic = |body: &str| body.replace('\\', "\\\\").replace('"', "\\\"");
        let forms: [Box<dyn Fn(&str) -> String>; 5] = [
            Box::new(|b| format!("'''{b}'''")),
            Box::new(|b| format!("'{}'", b.replace('\n', " "))),
            Box::new(move |b| format!("\"\"\"\n{}\"\"\"", basic(b))),
            Box::new(move |b| format!("\"{}\"", basic(b).replace('\n', "\\n"))),
            Box::new(|b| format!("'''\r\n{}\r\n'''", b.replace('\n', "\r\n"))),
        ];
        for (i, form) in forms.iter().enumerate() {
            let text = first_definition_as(form);
            assert_ne!(text, EXAMPLE);
            let lock = parse_lock(&text, "mcp.lock").unwrap_or_else(|e| panic!("form {i}: {e}"));
            assert_eq!(lock, whole, "form {i}");
        }
    }

    #[test]
    fn a_definition_that_is_not_a_string_is_refused_at_its_line() {
        let text = first_definition_as(|_| "42".into());
        let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
        let line = 1 + text[..text.find("definition = 42").unwrap()]
            .matches('\n')
            .count();
        assert!(
            err.starts_with(&format!("mcp.lock:{line}: not a valid lock")),
            "{err}"
        );
        let text = first_definition_as(|_| "\"\\q\"".into());
        let err = parse_lock(&text, "mcp.lock").unwrap_err().to_string();
        assert!(
            err.starts_with(&format!("mcp.lock:{line}: not a valid lock")),
            "{err}"
        );
    }
}
