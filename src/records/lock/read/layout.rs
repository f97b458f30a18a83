//! A reader for exactly the layout the lock writer writes: many times faster than the
//! general TOML reader on a large lock, most of which is definitions in `'''` strings.
//!
//! It reads only what it is sure of, and declines (`None`) anything else: an escape
//! in a string, a comment after a value, spaces it does not expect, a key or table
//! out of the writer's places, a repeated key, a missing one. The TOML reader then
//! reads the text, so wherever this reader answers its answer is the TOML reader's
//! (the tests compare the two, spans included), and every error is the TOML reader's.

use toml::Spanned;

use super::raw::{RawFile, RawLock, RawPackage, RawProfile, RawServer, RawTool};

/// The lock's tables, or `None`: the TOML reader is to read this text.
pub(super) fn read(text: &str) -> Option<RawLock> {
    let mut reader = Reader {
        text,
        at: 0,
        version: None,
        servers: Vec::new(),
        table: Table::Top,
    };
    while reader.at < text.len() {
        reader.line()?;
    }
    reader.finish()
}

/// Which table the keys that follow belong to.
#[derive(Clone, Copy, PartialEq)]
enum Table {
    Top,
    Server,
    Package,
    PackageFile,
    Profile,
    /// `[[server.tool]]`, `prompt`, `resource_template` or `resource`: which, by
    /// the list it was pushed on.
    Item(ItemList),
}

#[derive(Clone, Copy, PartialEq)]
enum ItemList {
    Tool,
    Prompt,
    ResourceTemplate,
    Resource,
}

struct Reader<'a> {
    text: &'a str,
    /// The start of the next line.
    at: usize,
    version: Option<i64>,
    servers: Vec<ServerDraft>,
    table: Table,
}

/// A value as written: its span in the text and what it holds.
enum Value {
    Str(Spanned<String>),
    List(Spanned<Vec<String>>),
    Bool(bool),
    Int(i64),
}

impl Reader<'_> {
    /// Reads the line at `at` (and, for a multi-line string, the lines it spans).
    fn line(&mut self) -> Option<()> {
        let text = self.text;
        let start = self.at;
        let end =
            memchr::memchr(b'\n', &text.as_bytes()[start..]).map_or(text.len(), |i| start + i);
        self.at = (end + 1).min(text.len());
        let line = &text[start..end];
        match line.as_bytes().first() {
            None => Some(()),
            Some(b'#') => plain(&line[1..]).then_some(()),
            Some(b'[') => self.header(line, start),
            Some(_) => self.key_value(line, start),
        }
    }

    fn header(&mut self, line: &str, start: usize) -> Option<()> {
        let server = self.servers.last_mut();
        let table = match (line, server) {
            ("[[server]]", _) => {
                self.servers.push(ServerDraft::default());
                Table::Server
            }
            ("[server.package]", Some(server))
                if self.table == Table::Server && server.package.is_none() =>
            {
                // A table's span is its header's.
                server.package = Some(PackageDraft {
                    header: start..start + line.len(),
                    ..PackageDraft::default()
                });
                Table::Package
            }
            ("[[server.package.file]]", Some(server))
                if matches!(self.table, Table::Package | Table::PackageFile) =>
            {
                server.package.as_mut()?.file.push(FileDraft::default());
                Table::PackageFile
            }
            ("[[server.profile]]", Some(server)) => {
                server.profile.push(ProfileDraft::default());
                Table::Profile
            }
            (header, Some(server)) => {
                let list = match header {
                    "[[server.tool]]" => ItemList::Tool,
                    "[[server.prompt]]" => ItemList::Prompt,
                    "[[server.resource_template]]" => ItemList::ResourceTemplate,
                    "[[server.resource]]" => ItemList::Resource,
                    _ => return None,
                };
                server.items(list).push(ItemDraft::default());
                Table::Item(list)
            }
            _ => return None,
        };
        self.table = table;
        Some(())
    }

    fn key_value(&mut self, line: &str, start: usize) -> Option<()> {
        let (key, rest) = line.split_once(" = ")?;
        if key.is_empty() || !key.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') {
            return None;
        }
        let value_at = start + key.len() + 3;
        let value = self.value(rest, value_at)?;
        match self.table {
            Table::Top => match (key, value) {
                ("version", Value::Int(v)) => set(&mut self.version, v),
                _ => None,
            },
            Table::Server => self.servers.last_mut()?.set(key, value),
            Table::Package => self.servers.last_mut()?.package.as_mut()?.set(key, value),
            Table::PackageFile => {
                let file = self.servers.last_mut()?.package.as_mut()?.file.last_mut()?;
                match (key, value) {
                    ("name", Value::Str(v)) => set(&mut file.name, v.into_inner()),
                    ("sha256", Value::Str(v)) => set(&mut file.sha256, v.into_inner()),
                    _ => None,
                }
            }
            Table::Profile => self.servers.last_mut()?.profile.last_mut()?.set(key, value),
            Table::Item(list) => self
                .servers
                .last_mut()?
                .items(list)
                .last_mut()?
                .set(key, value),
        }
    }

    /// The value starting at `at`, which is `rest` (to the end of its line). A
    /// multi-line string moves `self.at` past its closing quotes.
    fn value(&mut self, rest: &str, at: usize) -> Option<Value> {
        match rest.as_bytes().first()? {
            b'"' => {
                let (s, len) = basic(rest, at)?;
                (len == rest.len()).then_some(Value::Str(s))
            }
            b'\'' if rest == "'''" => self.multiline_literal(at).map(Value::Str),
            b'\'' => {
                let close = 1 + rest[1..].find('\'')?;
                let inner = &rest[1..close];
                (close + 1 == rest.len() && plain(inner))
                    .then(|| Value::Str(Spanned::new(at..at + close + 1, inner.to_string())))
            }
            b'[' => list(rest, at).map(Value::List),
            _ => match rest {
                "true" => Some(Value::Bool(true)),
                "false" => Some(Value::Bool(false)),
                "0" => Some(Value::Int(0)),
                digits
                    if !digits.starts_with('0') && digits.bytes().all(|b| b.is_ascii_digit()) =>
                {
                    digits.parse().ok().map(Value::Int)
                }
                _ => None,
            },
        }
    }

    /// A `'''` string opened at `at`, at the end of its line: its text runs from the
    /// next line to the first `'''`, which ends its line.
    fn multiline_literal(&mut self, at: usize) -> Option<Spanned<String>> {
        let bytes = self.text.as_bytes();
        let body = self.at;
        // `line` left `self.at` past the newline; a text ending in `'''` has none.
        if body != at + 4 || bytes.get(at + 3) != Some(&b'\n') {
            return None;
        }
        let close = body + memchr::memmem::find(&bytes[body..], b"'''")?;
        let after = close + 3;
        // A fourth quote would belong to the text; anything after ends no line.
        if !matches!(bytes.get(after), None | Some(b'\n')) {
            return None;
        }
        let inner = &self.text[body..close];
        if !multiline_plain(inner.as_bytes()) {
            return None;
        }
        self.at = (after + 1).min(bytes.len());
        Some(Spanned::new(at..after, inner.to_string()))
    }

    fn finish(self) -> Option<RawLock> {
        let server = self
            .servers
            .into_iter()
            .map(ServerDraft::finish)
            .collect::<Option<_>>()?;
        Some(RawLock {
            version: self.version?,
            server,
        })
    }
}

/// Text a TOML string holds as it stands: no control character but tab (a
/// multi-line string also holds newlines, checked by its caller).
fn plain(text: &str) -> bool {
    text.bytes().all(|b| (b >= 0x20 && b != 0x7f) || b == b'\t')
}

/// [`plain`] for a multi-line string's bytes: also newlines, never a carriage return.
fn multiline_plain(bytes: &[u8]) -> bool {
    // Eight at a time: a chunk is plain when no byte is below 0x20 or is 0x7f, the
    // common case, checked without a branch per byte.
    let mut chunks = bytes.chunks_exact(8);
    for chunk in &mut chunks {
        let mut clean = true;
        for &b in chunk {
            clean &= b >= 0x20 && b != 0x7f;
        }
        if !clean && !chunk.iter().all(|&b| multiline_byte(b)) {
            return false;
        }
    }
    chunks.remainder().iter().all(|&b| multiline_byte(b))
}

fn multiline_byte(b: u8) -> bool {
    (b >= 0x20 && b != 0x7f) || b == b'\t' || b == b'\n'
}

/// A basic string at the start of `rest` with no escape:
/// the string and its length in `rest`.
fn basic(rest: &str, at: usize) -> Option<(Spanned<String>, usize)> {
    if !rest.starts_with('"') {
        return None;
    }
    let close = 1 + rest[1..].find('"')?;
    let inner = &rest[1..close];
    if inner.contains('\\') || !plain(inner) {
        return None;
    }
    Some((
        Spanned::new(at..at + close + 1, inner.to_string()),
        close + 1,
    ))
}

/// `["a", "b"]` as the writer writes it: basic strings, `, ` between them.
fn list(rest: &str, at: usize) -> Option<Spanned<Vec<String>>> {
    if rest == "[]" {
        return Some(Spanned::new(at..at + 2, Vec::new()));
    }
    let mut items = Vec::new();
    let mut i = 1;
    loop {
        let (item, len) = basic(&rest[i..], at + i)?;
        items.push(item.into_inner());
        i += len;
        match &rest[i..] {
            "]" => return Some(Spanned::new(at..at + i + 1, items)),
            more if more.starts_with(", \"") => i += 2,
            _ => return None,
        }
    }
}

/// Sets a key not set before: a repeated key is the TOML reader's error to give.
fn set<T>(slot: &mut Option<T>, value: T) -> Option<()> {
    match slot {
        Some(_) => None,
        None => {
            *slot = Some(value);
            Some(())
        }
    }
}

fn string(value: Value) -> Option<Spanned<String>> {
    match value {
        Value::Str(s) => Some(s),
        _ => None,
    }
}

fn strings(value: Value) -> Option<Vec<String>> {
    match value {
        Value::List(l) => Some(l.into_inner()),
        _ => None,
    }
}

#[derive(Default)]
struct ServerDraft {
    name: Option<Spanned<String>>,
    approved: Option<Spanned<String>>,
    transport: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<String>>,
    code_env: Option<Spanned<Vec<String>>>,
    url: Option<String>,
    headers: Option<Vec<String>>,
    oauth_issuer: Option<String>,
    package: Option<PackageDraft>,
    profile: Vec<ProfileDraft>,
    tool: Vec<ItemDraft>,
    prompt: Vec<ItemDraft>,
    resource_template: Vec<ItemDraft>,
    resource: Vec<ItemDraft>,
}

impl ServerDraft {
    fn items(&mut self, list: ItemList) -> &mut Vec<ItemDraft> {
        match list {
            ItemList::Tool => &mut self.tool,
            ItemList::Prompt => &mut self.prompt,
            ItemList::ResourceTemplate => &mut self.resource_template,
            ItemList::Resource => &mut self.resource,
        }
    }

    /// The server's own keys: version 1's listing keys are left to the TOML reader.
    fn set(&mut self, key: &str, value: Value) -> Option<()> {
        match key {
            "name" => set(&mut self.name, string(value)?),
            "approved" => set(&mut self.approved, string(value)?),
            "transport" => set(&mut self.transport, string(value)?.into_inner()),
            "command" => set(&mut self.command, string(value)?.into_inner()),
            "args" => set(&mut self.args, strings(value)?),
            "env" => set(&mut self.env, strings(value)?),
            "code_env" => match value {
                Value::List(l) => set(&mut self.code_env, l),
                _ => None,
            },
            "url" => set(&mut self.url, string(value)?.into_inner()),
            "headers" => set(&mut self.headers, strings(value)?),
            "oauth_issuer" => set(&mut self.oauth_issuer, string(value)?.into_inner()),
            _ => None,
        }
    }

    fn finish(self) -> Option<RawServer> {
        Some(RawServer {
            name: self.name?,
            approved: self.approved,
            transport: self.transport?,
            command: self.command,
            args: self.args.unwrap_or_default(),
            env: self.env.unwrap_or_default(),
            code_env: self.code_env,
            url: self.url,
            headers: self.headers.unwrap_or_default(),
            oauth_issuer: self.oauth_issuer,
            protocol_version: None,
            client_info: None,
            client_capabilities: None,
            server_info: None,
            list_changed: None,
            instructions_hash: None,
            set_hash: None,
            profile: self
                .profile
                .into_iter()
                .map(ProfileDraft::finish)
                .collect::<Option<_>>()?,
            tool: finish_items(self.tool)?,
            prompt: finish_items(self.prompt)?,
            resource_template: finish_items(self.resource_template)?,
            resource: finish_items(self.resource)?,
            package: match self.package {
                Some(p) => Some(p.finish()?),
                None => None,
            },
        })
    }
}

#[derive(Default)]
struct PackageDraft {
    /// Where its header is: the table's span.
    header: std::ops::Range<usize>,
    kind: Option<String>,
    launcher: Option<String>,
    name: Option<String>,
    version: Option<String>,
    integrity: Option<String>,
    reference: Option<String>,
    digest: Option<String>,
    path: Option<String>,
    sha256: Option<String>,
    reason: Option<String>,
    closure: Option<String>,
    closure_packages: Option<u64>,
    file: Vec<FileDraft>,
}

impl PackageDraft {
    fn set(&mut self, key: &str, value: Value) -> Option<()> {
        if let ("closure_packages", Value::Int(n)) = (key, &value) {
            return set(&mut self.closure_packages, u64::try_from(*n).ok()?);
        }
        let value = string(value)?.into_inner();
        let slot = match key {
            "kind" => &mut self.kind,
            "launcher" => &mut self.launcher,
            "name" => &mut self.name,
            "version" => &mut self.version,
            "integrity" => &mut self.integrity,
            "reference" => &mut self.reference,
            "digest" => &mut self.digest,
            "path" => &mut self.path,
            "sha256" => &mut self.sha256,
            "reason" => &mut self.reason,
            "closure" => &mut self.closure,
            _ => return None,
        };
        set(slot, value)
    }

    fn finish(self) -> Option<Spanned<RawPackage>> {
        let file = self
            .file
            .into_iter()
            .map(|f| {
                Some(RawFile {
                    name: f.name?,
                    sha256: f.sha256?,
                })
            })
            .collect::<Option<_>>()?;
        let package = RawPackage {
            kind: self.kind?,
            launcher: self.launcher?,
            name: self.name,
            version: self.version,
            integrity: self.integrity,
            reference: self.reference,
            digest: self.digest,
            path: self.path,
            sha256: self.sha256,
            reason: self.reason,
            closure: self.closure,
            closure_packages: self.closure_packages,
            file,
        };
        Some(Spanned::new(self.header, package))
    }
}

#[derive(Default)]
struct FileDraft {
    name: Option<String>,
    sha256: Option<String>,
}

#[derive(Default)]
struct ProfileDraft {
    name: Option<Spanned<String>>,
    protocol_version: Option<String>,
    client_info: Option<Spanned<String>>,
    client_capabilities: Option<Spanned<String>>,
    roots: Option<Spanned<String>>,
    server_info: Option<Spanned<String>>,
    list_changed: Option<bool>,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Option<Spanned<String>>,
    prompts_set_hash: Option<Spanned<String>>,
    resource_templates_set_hash: Option<Spanned<String>>,
    resources_set_hash: Option<Spanned<String>>,
}

impl ProfileDraft {
    fn set(&mut self, key: &str, value: Value) -> Option<()> {
        if key == "list_changed" {
            return match value {
                Value::Bool(b) => set(&mut self.list_changed, b),
                _ => None,
            };
        }
        let value = string(value)?;
        match key {
            "protocol_version" => set(&mut self.protocol_version, value.into_inner()),
            key => {
                let slot = match key {
                    "name" => &mut self.name,
                    "client_info" => &mut self.client_info,
                    "client_capabilities" => &mut self.client_capabilities,
                    "roots" => &mut self.roots,
                    "server_info" => &mut self.server_info,
                    "instructions_hash" => &mut self.instructions_hash,
                    "set_hash" => &mut self.set_hash,
                    "prompts_set_hash" => &mut self.prompts_set_hash,
                    "resource_templates_set_hash" => &mut self.resource_templates_set_hash,
                    "resources_set_hash" => &mut self.resources_set_hash,
                    _ => return None,
                };
                set(slot, value)
            }
        }
    }

    fn finish(self) -> Option<RawProfile> {
        Some(RawProfile {
            name: self.name?,
            protocol_version: self.protocol_version?,
            client_info: self.client_info?,
            client_capabilities: self.client_capabilities?,
            roots: self.roots,
            server_info: self.server_info?,
            list_changed: self.list_changed?,
            instructions_hash: self.instructions_hash,
            set_hash: self.set_hash?,
            prompts_set_hash: self.prompts_set_hash,
            resource_templates_set_hash: self.resource_templates_set_hash,
            resources_set_hash: self.resources_set_hash,
        })
    }
}

#[derive(Default)]
struct ItemDraft {
    name: Option<Spanned<String>>,
    uri_template: Option<Spanned<String>>,
    uri: Option<Spanned<String>>,
    profiles: Option<Spanned<Vec<String>>>,
    hash: Option<Spanned<String>>,
    definition: Option<Spanned<String>>,
}

impl ItemDraft {
    fn set(&mut self, key: &str, value: Value) -> Option<()> {
        if key == "profiles" {
            return match value {
                Value::List(l) => set(&mut self.profiles, l),
                _ => None,
            };
        }
        let slot = match key {
            "name" => &mut self.name,
            "uri_template" => &mut self.uri_template,
            "uri" => &mut self.uri,
            "hash" => &mut self.hash,
            "definition" => &mut self.definition,
            _ => return None,
        };
        set(slot, string(value)?)
    }
}

fn finish_items(items: Vec<ItemDraft>) -> Option<Vec<RawTool>> {
    items
        .into_iter()
        .map(|i| {
            Some(RawTool {
                name: i.name,
                uri_template: i.uri_template,
                uri: i.uri,
                profiles: i.profiles,
                hash: i.hash?,
                definition: i.definition?,
            })
        })
        .collect()
}

#[cfg(test)]
#[path = "layout_tests.rs"]
mod tests;
