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
    transport: Option<String>,
    command: Option<String>,
    args: Option<Vec<String>>,
    env: Option<Vec<String>>,
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
            "transport" => set(&mut self.transport, string(value)?.into_inner()),
            "command" => set(&mut self.command, string(value)?.into_inner()),
            "args" => set(&mut self.args, strings(value)?),
            "env" => set(&mut self.env, strings(value)?),
            "url" => set(&mut self.url, string(value)?.into_inner()),
            "headers" => set(&mut self.headers, strings(value)?),
            "oauth_issuer" => set(&mut self.oauth_issuer, string(value)?.into_inner()),
            _ => None,
        }
    }

    fn finish(self) -> Option<RawServer> {
        Some(RawServer {
            name: self.name?,
            transport: self.transport?,
            command: self.command,
            args: self.args.unwrap_or_default(),
            env: self.env.unwrap_or_default(),
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
    file: Vec<FileDraft>,
}

impl PackageDraft {
    fn set(&mut self, key: &str, value: Value) -> Option<()> {
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
mod tests {
    use super::*;

    const EXAMPLE: &str = include_str!("../../../mcp.lock.example");

    /// Every table and key the writer writes: two servers (one remote), a PyPI
    /// package with files, two profiles, each kind of definition.
    const EVERY_TABLE: &str = r#"# This file is generated by mcp-lock. Do not edit it by hand.
version = 3

[[server]]
name = "local"
transport = "stdio"
command = "uvx"
args = ["tiny-server==1.0.0", "--flag", ""]
env = ["API_KEY", "OTHER"]

[server.package]
kind = "pypi"
launcher = "uvx"
name = "tiny-server"
version = "1.0.0"

[[server.package.file]]
name = "tiny_server-1.0.0-py3-none-any.whl"
sha256 = "0000000000000000000000000000000000000000000000000000000000000000"

[[server.package.file]]
name = "tiny_server-1.0.0.tar.gz"
sha256 = "1111111111111111111111111111111111111111111111111111111111111111"

[[server.profile]]
name = "bare"
protocol_version = "2025-11-25"
client_info = '{"name":"mcp-lock","version":"1"}'
client_capabilities = '{}'
server_info = '{"name":"tiny","version":"1"}'
list_changed = false
instructions_hash = "2222222222222222222222222222222222222222222222222222222222222222"
set_hash = "3333333333333333333333333333333333333333333333333333333333333333"
prompts_set_hash = "4444444444444444444444444444444444444444444444444444444444444444"
resource_templates_set_hash = "5555555555555555555555555555555555555555555555555555555555555555"
resources_set_hash = "6666666666666666666666666666666666666666666666666666666666666666"

[[server.profile]]
name = "claude-code"
protocol_version = "2025-11-25"
client_info = '{"name":"claude-code","version":"2"}'
client_capabilities = '{"roots":{"listChanged":true}}'
roots = "project-dir"
server_info = '{"name":"tiny","version":"1"}'
list_changed = true
set_hash = "3333333333333333333333333333333333333333333333333333333333333333"

[[server.tool]]
name = "echo ✓"
profiles = ["bare", "claude-code"]
hash = "7777777777777777777777777777777777777777777777777777777777777777"
definition = '''
{
  "description": "it's 'quoted'	with a tab",
  "name": "echo ✓"
}
'''

[[server.prompt]]
name = "p"
profiles = ["bare"]
hash = "8888888888888888888888888888888888888888888888888888888888888888"
definition = '''
{
  "name": "p"
}
'''

[[server.resource_template]]
uri_template = "demo://{id}"
profiles = ["bare"]
hash = "9999999999999999999999999999999999999999999999999999999999999999"
definition = '''
{
  "name": "t",
  "uriTemplate": "demo://{id}"
}
'''

[[server.resource]]
uri = "demo://one"
profiles = ["bare"]
hash = "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa"
definition = '''
{
  "name": "one",
  "uri": "demo://one"
}
'''

[[server]]
name = "remote"
transport = "streamable-http"
url = "https://mcp.example.com/mcp"
headers = ["Authorization"]
oauth_issuer = "https://auth.example.com/"

[[server.profile]]
name = "bare"
protocol_version = "2026-07-28"
client_info = '{"name":"mcp-lock","version":"1"}'
client_capabilities = '{}'
server_info = '{"name":"remote","version":"1"}'
list_changed = false
set_hash = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
"#;

    /// What the TOML reader makes of `text`, spans included; `None` when it refuses.
    fn by_toml(text: &str) -> Option<String> {
        toml::from_str::<RawLock>(text)
            .ok()
            .map(|r| format!("{r:?}"))
    }

    fn by_layout(text: &str) -> Option<String> {
        read(text).map(|r| format!("{r:?}"))
    }

    /// Asserts two readings equal, showing where they part.
    fn same(layout: &str, toml: Option<&str>, what: &str) {
        let Some(toml) = toml else {
            panic!("{what}: the layout reader read what TOML refuses");
        };
        if layout != toml {
            let at = layout
                .bytes()
                .zip(toml.bytes())
                .position(|(a, b)| a != b)
                .unwrap_or(layout.len().min(toml.len()));
            let from = at.saturating_sub(80);
            panic!(
                "{what}: the readings part at byte {at}:\n layout: {}\n   toml: {}",
                &layout[from..(at + 80).min(layout.len())],
                &toml[from..(at + 80).min(toml.len())]
            );
        }
    }

    #[test]
    fn the_writers_layout_reads_as_the_toml_reader_reads_it_spans_included() {
        for (name, text) in [("example", EXAMPLE), ("every table", EVERY_TABLE)] {
            let layout = by_layout(text).unwrap_or_else(|| panic!("{name}: declined"));
            same(&layout, by_toml(text).as_deref(), name);
        }
        // The last line's newline is optional, as it is to TOML.
        let cut = EXAMPLE.trim_end_matches('\n');
        let layout = by_layout(cut).expect("no final newline: declined");
        same(&layout, by_toml(cut).as_deref(), "no final newline");
    }

    #[test]
    fn what_the_layout_does_not_cover_is_declined_for_the_toml_reader() {
        let declined = [
            ("an escape", r#"name = "memory""#, r#"name = "mem\u006Fry""#),
            (
                "a comment after a value",
                "list_changed = true",
                "list_changed = true # x",
            ),
            (
                "other spacing",
                r#"transport = "stdio""#,
                r#"transport="stdio""#,
            ),
            (
                "a repeated key",
                "list_changed = true",
                "list_changed = true\nlist_changed = true",
            ),
            (
                "an unknown key",
                "list_changed = true",
                "list_changed = true\ncolour = \"red\"",
            ),
            (
                "a quoted key",
                r#"transport = "stdio""#,
                r#""transport" = "stdio""#,
            ),
            (
                "a version-1 key on the server",
                "env = [\"MEMORY_FILE_PATH\"]",
                "env = [\"MEMORY_FILE_PATH\"]\nlist_changed = true",
            ),
            (
                "an unknown table",
                "[[server.profile]]",
                "[server.extra]\n[[server.profile]]",
            ),
            (
                "the package after a profile",
                "[server.package]",
                "[[server.profile]]\n[server.package]",
            ),
            ("a carriage return", "version = 3\n", "version = 3\r\n"),
            ("a leading zero", "version = 3", "version = 03"),
            ("a fourth closing quote", "}\n'''", "}\n''''"),
            ("text after closing quotes", "}\n'''", "}\n''' "),
            (
                "a control character",
                "Add new observations",
                "Add new\u{1}observations",
            ),
            (
                "another array spacing",
                r#"["-y", "@model"#,
                r#"["-y","@model"#,
            ),
        ];
        for (what, from, to) in declined {
            assert!(
                EXAMPLE.contains(from),
                "{what}: {from:?} not in the example"
            );
            let text = EXAMPLE.replacen(from, to, 1);
            assert_eq!(by_layout(&text), None, "{what}");
        }
        assert_eq!(by_layout(""), None, "no version");
    }

    /// A small deterministic generator: the same edits every run.
    struct Rng(u64);

    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
        fn below(&mut self, n: usize) -> usize {
            (self.next() % n as u64) as usize
        }
    }

    #[test]
    fn whatever_the_layout_reads_of_an_edited_lock_the_toml_reader_reads_the_same() {
        // Edits at random places: bytes TOML gives meaning to, dropped, doubled or
        // moved lines. Wherever the layout reader answers, TOML must agree.
        const BYTES: &[u8] = b"'\"[]=#\\ \n\t,.\r{}a0";
        let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
        let mut answered = 0;
        for round in 0..3000 {
            let base = if round % 2 == 0 { EXAMPLE } else { EVERY_TABLE };
            let mut bytes = base.as_bytes().to_vec();
            for _ in 0..1 + rng.below(3) {
                let at = rng.below(bytes.len());
                match rng.below(4) {
                    0 => bytes[at] = BYTES[rng.below(BYTES.len())],
                    1 => {
                        bytes.remove(at);
                    }
                    2 => bytes.insert(at, BYTES[rng.below(BYTES.len())]),
                    _ => {
                        let lines: Vec<&[u8]> = bytes.split_inclusive(|&b| b == b'\n').collect();
                        let i = rng.below(lines.len());
                        let j = rng.below(lines.len());
                        let mut moved: Vec<&[u8]> = lines.clone();
                        let line = moved.remove(i);
                        moved.insert(j, line);
                        bytes = moved.concat();
                    }
                }
            }
            let Ok(text) = String::from_utf8(bytes) else {
                continue;
            };
            if let Some(layout) = by_layout(&text) {
                answered += 1;
                if let Err(e) = toml::from_str::<RawLock>(&text) {
                    panic!("round {round}: TOML refuses what the layout reader read: {e}");
                }
                same(
                    &layout,
                    by_toml(&text).as_deref(),
                    &format!("round {round}"),
                );
            }
        }
        // The edits must leave many texts the layout still reads, or nothing was tested.
        assert!(answered > 300, "only {answered} edited texts were read");
    }
}
