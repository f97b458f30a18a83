//! Rewriting a client config so its stdio servers launch through `mcp-lock guard`
//! (`wrap`), and back (`unwrap`).
//!
//! The config is edited as text, never re-serialized: a small span-aware JSONC scanner
//! finds each entry's `command` and `args`, and only those bytes change. Comments, key
//! order and indentation stay as the user wrote them, and unwrapping is the exact
//! inverse of wrapping. A wrapped entry keeps the original command's JSON token
//! verbatim after `--`:
//!
//! ```text
//! "command": "npx", "args": ["-y", "pkg"]
//! "command": "mcp-lock", "args": ["guard", "github", "--", "npx", "-y", "pkg"]
//! ```

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::config::{self, ConfigError, TransportSpec, launches_guard, unwrapped_command};

/// How wrapped entries start the guard.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GuardLaunch {
    /// `mcp-lock`, or a path to it.
    pub command: String,
    /// `--lock PATH` (absolute), for when the guard would not find the lock where it
    /// starts.
    pub lock: Option<String>,
    /// `--config PATH`, for a config the guard would not find where it starts: it
    /// reads the entry's `env` names there, to keep their values out of its log.
    pub config: Option<String>,
}

/// A config's new text, and what happened to each selected server.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub text: String,
    /// The selected servers, in file order.
    pub servers: Vec<ServerChange>,
    /// Unwrap only: `text` is the backup wrap made, restored byte for byte.
    pub restored_backup: bool,
}

impl Rewrite {
    /// How many servers were rewritten.
    pub fn changed(&self) -> usize {
        self.servers
            .iter()
            .filter(|s| matches!(s.outcome, Outcome::Changed { .. }))
            .count()
    }
}

/// One server of a rewrite.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServerChange {
    pub name: String,
    pub outcome: Outcome,
}

/// What a rewrite did to one server.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Outcome {
    /// Wrapped or unwrapped; `command` and `args` are the server's own launch.
    Changed { command: String, args: Vec<String> },
    /// Nothing to do: it already launches through the guard (wrap), or does not
    /// (unwrap).
    Unchanged,
    /// A remote server: the client connects to it, there is nothing to launch.
    Remote,
    /// Unwrap only: it launches the guard with no command after `--`, so there is
    /// no server command to restore.
    NoCommand,
}

/// Where wrap keeps the original bytes of `config`: `FILE.mcp-lock.bak` beside it.
pub fn backup_path(config: &Path) -> PathBuf {
    let mut name = config.file_name().unwrap_or_default().to_os_string();
    name.push(".mcp-lock.bak");
    config.with_file_name(name)
}

/// What wrap saves as the backup of `text`: the config with no server wrapped, which
/// is `text` itself on a first wrap. A later one (a server was added since) would
/// otherwise save a half-wrapped config over the original, so the entries wrapped
/// before get their bytes from the existing `backup`, as [`unwrap`] gives them back.
pub fn backup_text(text: &str, backup: Option<&[u8]>, path: &str) -> Result<String, ConfigError> {
    Ok(unwrap(text, backup, path, &[])?.text)
}

/// Makes the selected stdio servers (all when `only` is empty) launch through the
/// guard. Entries that already do are left as they are.
pub fn wrap(
    text: &str,
    path: &str,
    launch: &GuardLaunch,
    only: &[String],
) -> Result<Rewrite, ConfigError> {
    rewrite(text, path, only, |entry, stdio, edits| {
        wrap_entry(text, entry, stdio, launch, edits)
    })
}

/// Makes the selected wrapped servers (all when `only` is empty) launch directly again.
///
/// `backup` is what wrap saved. Each entry still exactly as wrap left it gets its
/// original bytes back from it; an entry edited since (or with no backup) is undone
/// by the text-level inverse of wrap. So when nothing but wrap touched the file, the
/// result is the backup, byte for byte.
pub fn unwrap(
    text: &str,
    backup: Option<&[u8]>,
    path: &str,
    only: &[String],
) -> Result<Rewrite, ConfigError> {
    let backup = backup.and_then(|b| std::str::from_utf8(b).ok());
    let mut originals = Originals {
        backup,
        path,
        by_launch: Vec::new(),
    };
    let mut rewrite = rewrite(text, path, only, |entry, stdio, edits| {
        let mut inverse = Vec::new();
        let outcome = unwrap_entry(text, stdio, &mut inverse);
        let original = match outcome {
            Outcome::Changed { .. } => stdio.guard_launch(text).and_then(|launch| {
                originals.find(&launch, &entry.name, &text[entry.object.clone()])
            }),
            _ => None,
        };
        match original {
            Some(original) => edits.push(Edit {
                range: entry.object.clone(),
                text: original,
            }),
            None => edits.extend(inverse),
        }
        outcome
    })?;
    rewrite.restored_backup = rewrite.changed() > 0 && backup == Some(rewrite.text.as_str());
    Ok(rewrite)
}

/// The backup's entries and what wrap makes of them, per guard launch (entries name
/// the lock and guard command they were wrapped with).
struct Originals<'a> {
    backup: Option<&'a str>,
    path: &'a str,
    by_launch: Vec<(GuardLaunch, Vec<Original>)>,
}

/// One entry wrap changed: its text before and after.
struct Original {
    name: String,
    before: String,
    after: String,
}

impl Originals<'_> {
    /// The backup's text of the entry `name`, if wrapping it gives `current` exactly.
    fn find(&mut self, launch: &GuardLaunch, name: &str, current: &str) -> Option<String> {
        let backup = self.backup?;
        let index = match self.by_launch.iter().position(|(l, _)| l == launch) {
            Some(index) => index,
            None => {
                // A backup that no longer parses has nothing to give back.
                let found = wrapped_entries(backup, self.path, launch).unwrap_or_default();
                self.by_launch.push((launch.clone(), found));
                self.by_launch.len() - 1
            }
        };
        self.by_launch[index]
            .1
            .iter()
            .find(|o| o.name == name && o.after == current)
            .map(|o| o.before.clone())
    }
}

fn wrapped_entries(
    backup: &str,
    path: &str,
    launch: &GuardLaunch,
) -> Result<Vec<Original>, ConfigError> {
    let wrapped = wrap(backup, path, launch, &[])?;
    let before = entries(backup, path)?;
    let after = entries(&wrapped.text, path)?;
    // Wrap edits inside entries only, so the two lists name the same entries in order.
    Ok(before
        .iter()
        .zip(&after)
        .zip(&wrapped.servers)
        .filter(|(_, server)| matches!(server.outcome, Outcome::Changed { .. }))
        .map(|((b, a), _)| Original {
            name: b.name.clone(),
            before: backup[b.object.clone()].to_string(),
            after: wrapped.text[a.object.clone()].to_string(),
        })
        .collect())
}

/// Runs `edit` on each selected stdio entry and applies the edits it asks for.
fn rewrite(
    text: &str,
    path: &str,
    only: &[String],
    mut edit: impl FnMut(&Entry, &Stdio, &mut Vec<Edit>) -> Outcome,
) -> Result<Rewrite, ConfigError> {
    let mut edits = Vec::new();
    let mut servers = Vec::new();
    for entry in entries(text, path)? {
        if !only.is_empty() && !only.contains(&entry.name) {
            continue;
        }
        let outcome = match &entry.stdio {
            Some(stdio) => edit(&entry, stdio, &mut edits),
            None => Outcome::Remote,
        };
        servers.push(ServerChange {
            name: entry.name.clone(),
            outcome,
        });
    }
    // Back to front, so each range still points at the bytes it was found at.
    edits.sort_by_key(|e| std::cmp::Reverse(e.range.start));
    let mut out = text.to_string();
    for edit in edits {
        out.replace_range(edit.range, &edit.text);
    }
    Ok(Rewrite {
        text: out,
        servers,
        restored_backup: false,
    })
}

/// Replace the bytes in `range` with `text` (an empty range inserts).
struct Edit {
    range: Range<usize>,
    text: String,
}

fn wrap_entry(
    text: &str,
    entry: &Entry,
    stdio: &Stdio,
    launch: &GuardLaunch,
    edits: &mut Vec<Edit>,
) -> Outcome {
    let (command, args) = stdio.launch(text);
    if launches_guard(&command, &args) {
        return Outcome::Unchanged;
    }
    let mut prefix = vec!["\"guard\"", entry.key];
    let lock = launch.lock.as_deref().map(json_string);
    if let Some(lock) = &lock {
        prefix.extend(["\"--lock\"", lock.as_str()]);
    }
    let config = launch.config.as_deref().map(json_string);
    if let Some(config) = &config {
        prefix.extend(["\"--config\"", config.as_str()]);
    }
    // The original command's token, escapes and all, so unwrap can put it back as is.
    prefix.extend(["\"--\"", &text[stdio.command.span.clone()]]);
    let prefix = prefix.join(", ");
    edits.push(Edit {
        range: stdio.command.span.clone(),
        text: json_string(&launch.command),
    });
    match &stdio.args {
        Some(Node {
            span,
            kind: Kind::Array(items),
        }) => edits.push(Edit {
            range: span.start + 1..span.start + 1,
            text: if items.is_empty() {
                prefix
            } else {
                format!("{prefix}, ")
            },
        }),
        // `"args": null`, which clients read as no arguments.
        Some(node) => edits.push(Edit {
            range: node.span.clone(),
            text: format!("[{prefix}]"),
        }),
        None => edits.push(Edit {
            range: stdio.command.span.end..stdio.command.span.end,
            text: format!(", \"args\": [{prefix}]"),
        }),
    }
    Outcome::Changed { command, args }
}

fn unwrap_entry(text: &str, stdio: &Stdio, edits: &mut Vec<Edit>) -> Outcome {
    let (command, args) = stdio.launch(text);
    let Some((inner, inner_args)) = unwrapped_command(&command, &args) else {
        return if launches_guard(&command, &args) {
            Outcome::NoCommand
        } else {
            Outcome::Unchanged
        };
    };
    let Some(Node {
        span: array,
        kind: Kind::Array(items),
    }) = &stdio.args
    else {
        unreachable!("a wrapped entry has an args array");
    };
    let inner_ix = items.len() - inner_args.len() - 1;
    let inner_node = &items[inner_ix];
    edits.push(Edit {
        range: stdio.command.span.clone(),
        text: match inner_node.kind {
            Kind::String(_) => text[inner_node.span.clone()].to_string(),
            _ => json_string(&inner),
        },
    });
    let command_end = stdio.command.span.end;
    // Wrap puts its prefix right after "[" and ", " after it; anything else was
    // reformatted since, and only the prefix elements are taken out.
    let wrap_form = items[0].span.start == array.start + 1;
    let prefix_start = items[0].span.start;
    let range = match items.get(inner_ix + 1) {
        Some(_) if wrap_form => {
            let comma = skip_trivia(text, inner_node.span.end);
            let end = comma + 1;
            prefix_start..end + usize::from(text[end..].starts_with(' '))
        }
        Some(first_arg) => prefix_start..first_arg.span.start,
        // The member wrap added when the entry had no args.
        None if wrap_form
            && command_end <= array.start
            && text[command_end..=array.start] == *", \"args\": [" =>
        {
            command_end..array.end
        }
        None if wrap_form => {
            let after = skip_trivia(text, inner_node.span.end);
            let end = if text[after..].starts_with(',') {
                after + 1
            } else {
                inner_node.span.end
            };
            prefix_start..end
        }
        None => array.start + 1..array.end - 1,
    };
    edits.push(Edit {
        range,
        text: String::new(),
    });
    Outcome::Changed {
        command: inner,
        args: inner_args,
    }
}

fn json_string(s: &str) -> String {
    serde_json::to_string(s).expect("a string serializes")
}

/// One server entry, as found in the text.
struct Entry<'t> {
    name: String,
    /// The name's token as written.
    key: &'t str,
    /// The span of the entry's object.
    object: Range<usize>,
    /// `None` for a remote server.
    stdio: Option<Stdio>,
}

/// The values a stdio entry is launched from.
struct Stdio {
    command: Node,
    args: Option<Node>,
}

impl Stdio {
    /// `command` and `args` decoded, as the client launches them.
    fn launch(&self, text: &str) -> (String, Vec<String>) {
        let decode = |node: &Node| match &node.kind {
            Kind::String(s) => s.clone(),
            _ => text[node.span.clone()].to_string(),
        };
        let args = match &self.args {
            Some(Node {
                kind: Kind::Array(items),
                ..
            }) => items.iter().map(decode).collect(),
            _ => Vec::new(),
        };
        (decode(&self.command), args)
    }

    /// How this entry starts the guard, when wrap could have written it.
    fn guard_launch(&self, text: &str) -> Option<GuardLaunch> {
        let (command, args) = self.launch(text);
        let (_, inner_args) = unwrapped_command(&command, &args)?;
        let options = &args[2..args.len() - inner_args.len() - 2];
        let (lock, config) = match options {
            [] => (None, None),
            [flag, lock] if flag == "--lock" => (Some(lock.clone()), None),
            [flag, config] if flag == "--config" => (None, Some(config.clone())),
            [f1, lock, f2, config] if f1 == "--lock" && f2 == "--config" => {
                (Some(lock.clone()), Some(config.clone()))
            }
            _ => return None,
        };
        Some(GuardLaunch {
            command,
            lock,
            config,
        })
    }
}

/// The entries of the config's server table (the last of a repeated name, as for
/// every other reader). Shapes are checked by [`config::parse_config`] first, so
/// this reads the same servers, with the same transports, every command does.
fn entries<'t>(text: &'t str, path: &str) -> Result<Vec<Entry<'t>>, ConfigError> {
    let specs = config::parse_config(text, path)?;
    let root = Scanner { text, path, pos: 0 }.document()?;
    let shape = |message: &str| ConfigError::Shape {
        path: path.to_string(),
        message: message.to_string(),
    };
    let table = root
        .member("mcpServers")
        .or_else(|| root.member("servers"))
        .or_else(|| root.member("mcp").and_then(|m| m.member("servers")));
    let Some(Node {
        kind: Kind::Object(table),
        ..
    }) = table
    else {
        return Err(shape("no server table"));
    };
    let mut entries = Vec::new();
    for (i, member) in table.iter().enumerate() {
        if table[i + 1..].iter().any(|later| later.key == member.key) {
            continue;
        }
        let remote = specs
            .iter()
            .any(|s| s.name == member.key && matches!(s.transport, TransportSpec::Remote { .. }));
        let stdio = match member.value.member("command") {
            _ if remote => None,
            Some(command) => Some(Stdio {
                command: command.clone(),
                args: member.value.member("args").cloned(),
            }),
            None => return Err(shape("a stdio entry has no \"command\"")),
        };
        entries.push(Entry {
            name: member.key.clone(),
            key: &text[member.key_span.clone()],
            object: member.value.span.clone(),
            stdio,
        });
    }
    Ok(entries)
}

/// Where the next token starts at or after `pos`: past whitespace and comments.
fn skip_trivia(text: &str, pos: usize) -> usize {
    let mut scanner = Scanner {
        text,
        path: "",
        pos,
    };
    // Only called between tokens of a document that scanned, so comments are closed.
    let _ = scanner.trivia();
    scanner.pos
}

/// A JSON value and the bytes it spans.
#[derive(Debug, Clone)]
struct Node {
    span: Range<usize>,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    Object(Vec<Member>),
    Array(Vec<Node>),
    /// Decoded.
    String(String),
    /// A number, `true`, `false` or `null`, as written.
    Scalar,
}

#[derive(Debug, Clone)]
struct Member {
    key: String,
    key_span: Range<usize>,
    value: Node,
}

impl Node {
    /// The value of an object's member; the last one when the name repeats.
    fn member(&self, key: &str) -> Option<&Node> {
        match &self.kind {
            Kind::Object(members) => members
                .iter()
                .rev()
                .find(|m| m.key == key)
                .map(|m| &m.value),
            _ => None,
        }
    }
}

/// Reads JSON with comments and trailing commas (what VS Code accepts), keeping the
/// byte span of every value.
struct Scanner<'t> {
    text: &'t str,
    path: &'t str,
    pos: usize,
}

/// Deeper than serde_json goes, so nothing it accepts is refused here.
const MAX_DEPTH: usize = 256;

impl Scanner<'_> {
    fn document(&mut self) -> Result<Node, ConfigError> {
        let root = self.value(0)?;
        self.trivia()?;
        if self.pos < self.text.len() {
            return Err(self.error("trailing characters"));
        }
        Ok(root)
    }

    fn peek(&self) -> Option<u8> {
        self.text.as_bytes().get(self.pos).copied()
    }

    fn trivia(&mut self) -> Result<(), ConfigError> {
        loop {
            let rest = &self.text.as_bytes()[self.pos..];
            match rest {
                [b' ' | b'\t' | b'\n' | b'\r', ..] => self.pos += 1,
                [b'/', b'/', ..] => {
                    self.pos += rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
                }
                [b'/', b'*', ..] => match self.text[self.pos + 2..].find("*/") {
                    Some(end) => self.pos += end + 4,
                    None => return Err(self.error("unclosed comment")),
                },
                _ => return Ok(()),
            }
        }
    }

    fn value(&mut self, depth: usize) -> Result<Node, ConfigError> {
        if depth > MAX_DEPTH {
            return Err(self.error("nested too deeply"));
        }
        self.trivia()?;
        let start = self.pos;
        let kind = match self.peek() {
            Some(b'{') => {
                self.pos += 1;
                Kind::Object(self.members(depth)?)
            }
            Some(b'[') => {
                self.pos += 1;
                Kind::Array(self.items(depth)?)
            }
            Some(b'"') => Kind::String(self.string()?),
            Some(b) if b.is_ascii_alphanumeric() || b == b'-' => {
                while self
                    .peek()
                    .is_some_and(|b| b.is_ascii_alphanumeric() || b"+-.".contains(&b))
                {
                    self.pos += 1;
                }
                Kind::Scalar
            }
            _ => return Err(self.error("expected a value")),
        };
        Ok(Node {
            span: start..self.pos,
            kind,
        })
    }

    /// After `{`: members up to and including `}`.
    fn members(&mut self, depth: usize) -> Result<Vec<Member>, ConfigError> {
        let mut members = Vec::new();
        loop {
            self.trivia()?;
            match self.peek() {
                Some(b'}') => {
                    self.pos += 1;
                    return Ok(members);
                }
                Some(b'"') => {}
                _ => return Err(self.error("expected a member name or '}'")),
            }
            let key_start = self.pos;
            let key = self.string()?;
            let key_span = key_start..self.pos;
            self.trivia()?;
            if self.peek() != Some(b':') {
                return Err(self.error("expected ':'"));
            }
            self.pos += 1;
            let value = self.value(depth + 1)?;
            members.push(Member {
                key,
                key_span,
                value,
            });
            self.separator(b'}')?;
        }
    }

    /// After `[`: elements up to and including `]`.
    fn items(&mut self, depth: usize) -> Result<Vec<Node>, ConfigError> {
        let mut items = Vec::new();
        loop {
            self.trivia()?;
            if self.peek() == Some(b']') {
                self.pos += 1;
                return Ok(items);
            }
            items.push(self.value(depth + 1)?);
            self.separator(b']')?;
        }
    }

    /// A comma (a trailing one is allowed), or the closing bracket left for the caller.
    fn separator(&mut self, close: u8) -> Result<(), ConfigError> {
        self.trivia()?;
        match self.peek() {
            Some(b',') => {
                self.pos += 1;
                Ok(())
            }
            Some(b) if b == close => Ok(()),
            _ => Err(self.error(&format!("expected ',' or '{}'", close as char))),
        }
    }

    /// A string token, decoded by serde_json so escapes mean what they mean to clients.
    fn string(&mut self) -> Result<String, ConfigError> {
        let start = self.pos;
        self.pos += 1;
        loop {
            match self.peek() {
                None => return Err(self.error("unclosed string")),
                Some(b'\\') => self.pos += 2,
                Some(b'"') => break,
                Some(_) => self.pos += 1,
            }
        }
        self.pos += 1;
        serde_json::from_str(&self.text[start..self.pos])
            .map_err(|e| self.error(&format!("invalid string: {e}")))
    }

    fn error(&self, message: &str) -> ConfigError {
        let before = &self.text.as_bytes()[..self.pos.min(self.text.len())];
        let line_start = before
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |p| p + 1);
        ConfigError::Syntax {
            path: self.path.to_string(),
            line: before.iter().filter(|&&b| b == b'\n').count() + 1,
            column: before.len() - line_start + 1,
            message: message.to_string(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch() -> GuardLaunch {
        GuardLaunch {
            command: "mcp-lock".into(),
            lock: None,
            config: None,
        }
    }

    fn scan(text: &str) -> Node {
        Scanner {
            text,
            path: "t",
            pos: 0,
        }
        .document()
        .unwrap()
    }

    #[test]
    fn scanner_spans_cover_each_value_as_written() {
        let text = "{ // c\n \"a\": [ \"x\\u00e9\" , 12, /* ] */ true, ], \"b\": {\"c\": null,},}";
        let root = scan(text);
        let a = root.member("a").unwrap();
        assert_eq!(
            &text[a.span.clone()],
            "[ \"x\\u00e9\" , 12, /* ] */ true, ]"
        );
        let Kind::Array(items) = &a.kind else {
            panic!("an array")
        };
        let spans: Vec<&str> = items.iter().map(|n| &text[n.span.clone()]).collect();
        assert_eq!(spans, ["\"x\\u00e9\"", "12", "true"]);
        assert!(matches!(&items[0].kind, Kind::String(s) if s == "xé"));
        let c = root.member("b").and_then(|b| b.member("c")).unwrap();
        assert_eq!(&text[c.span.clone()], "null");
    }

    #[test]
    fn scanner_errors_point_at_line_and_column() {
        let err = Scanner {
            text: "{\n  \"a\": [1 2]\n}",
            path: "f.json",
            pos: 0,
        }
        .document()
        .unwrap_err();
        assert_eq!(
            err.to_string(),
            "f.json:2:11: not valid JSON: expected ',' or ']'"
        );
    }

    #[test]
    fn scanner_keeps_comment_markers_inside_strings() {
        let text = r#"{"a": "// not /* a comment", "b": "\"*/"}"#;
        let root = scan(text);
        assert!(matches!(&root.member("b").unwrap().kind, Kind::String(s) if s == "\"*/"));
    }

    #[test]
    fn wrap_inserts_the_prefix_and_keeps_the_command_token_verbatim() {
        let text = r#"{"mcpServers": {"gh": {"command": "np\u0078", "args": ["-y", "pkg"]}}}"#;
        let out = wrap(text, "t", &launch(), &[]).unwrap();
        assert_eq!(
            out.text,
            r#"{"mcpServers": {"gh": {"command": "mcp-lock", "args": ["guard", "gh", "--", "np\u0078", "-y", "pkg"]}}}"#
        );
        assert_eq!(
            out.servers[0].outcome,
            Outcome::Changed {
                command: "npx".into(),
                args: vec!["-y".into(), "pkg".into()]
            }
        );
        assert_eq!(unwrap(&out.text, None, "t", &[]).unwrap().text, text);
    }

    #[test]
    fn wrap_adds_args_after_the_command_when_there_are_none() {
        let text = "{\"servers\": {\"m\": {\n  \"command\": \"srv\"\n}}}";
        let lock = GuardLaunch {
            lock: Some("/p/mcp.lock".into()),
            ..launch()
        };
        let out = wrap(text, "t", &lock, &[]).unwrap();
        assert_eq!(
            out.text,
            "{\"servers\": {\"m\": {\n  \"command\": \"mcp-lock\", \"args\": [\"guard\", \"m\", \"--lock\", \"/p/mcp.lock\", \"--\", \"srv\"]\n}}}"
        );
        assert_eq!(unwrap(&out.text, None, "t", &[]).unwrap().text, text);
    }

    #[test]
    fn wrapping_a_wrapped_entry_changes_nothing() {
        let text = r#"{"mcpServers": {"a": {"command": "/bin/mcp-lock", "args": ["guard", "a", "--", "x"]},
                       "b": {"command": "mcp-lock", "args": ["guard", "b"]}}}"#;
        let out = wrap(text, "t", &launch(), &[]).unwrap();
        assert_eq!(out.text, text);
        assert_eq!(out.changed(), 0);
    }

    #[test]
    fn unwrap_in_place_follows_a_reformatted_array() {
        let wrapped = "{\"mcpServers\": {\"a\": {\"command\": \"mcp-lock\", \"args\": [\n    \"guard\",\n    \"a\",\n    \"--\",\n    \"srv\",\n    \"--flag\"\n  ]}, \"b\": {\"command\": \"mcp-lock\", \"args\": [ \"guard\", \"b\", \"--\", \"srv\", ]}}}";
        let out = unwrap(wrapped, None, "t", &[]).unwrap();
        assert_eq!(
            out.text,
            "{\"mcpServers\": {\"a\": {\"command\": \"srv\", \"args\": [\n    \"--flag\"\n  ]}, \"b\": {\"command\": \"srv\", \"args\": []}}}"
        );
    }

    #[test]
    fn unwrap_restores_the_backup_only_when_it_wraps_to_the_current_text() {
        let original = r#"{"mcpServers": {"a": {"command": "srv", "args": []}}}"#;
        let wrapped = wrap(original, "t", &launch(), &[]).unwrap().text;
        // In place, "args": [] right after the command reads as the member wrap added.
        let in_place = unwrap(&wrapped, None, "t", &[]).unwrap();
        assert_eq!(
            in_place.text,
            r#"{"mcpServers": {"a": {"command": "srv"}}}"#
        );
        let restored = unwrap(&wrapped, Some(original.as_bytes()), "t", &[]).unwrap();
        assert!(restored.restored_backup);
        assert_eq!(restored.text, original);
        let stale = unwrap(&wrapped, Some(b"{\"mcpServers\": {}}"), "t", &[]).unwrap();
        assert!(!stale.restored_backup);
    }

    #[test]
    fn unwrap_takes_untouched_entries_from_the_backup_and_inverts_edited_ones() {
        let original = r#"{"mcpServers": {"a": {"command": "x", "args": []}, "b": {"command": "y", "args": []}}}"#;
        let wrapped = wrap(original, "t", &launch(), &[]).unwrap().text;
        let edited = wrapped.replace(r#""--", "y"]"#, r#""--", "y"], "cwd": "sub""#);
        let out = unwrap(&edited, Some(original.as_bytes()), "t", &[]).unwrap();
        assert_eq!(
            out.text,
            r#"{"mcpServers": {"a": {"command": "x", "args": []}, "b": {"command": "y", "cwd": "sub"}}}"#
        );
        assert!(!out.restored_backup);
        assert_eq!(out.changed(), 2);
    }

    #[test]
    fn the_backup_of_a_partly_wrapped_config_has_nothing_wrapped() {
        let original = r#"{"mcpServers": {"a": {"command": "x", "args": []}}}"#;
        let wrapped = wrap(original, "t", &launch(), &[]).unwrap().text;
        let added = wrapped.replace("}}}", r#"}, "b": {"command": "y"}}}"#);
        let expected =
            r#"{"mcpServers": {"a": {"command": "x", "args": []}, "b": {"command": "y"}}}"#;
        assert_eq!(
            backup_text(&added, Some(original.as_bytes()), "t").unwrap(),
            expected
        );
        assert_eq!(backup_text(original, None, "t").unwrap(), original);
    }

    #[test]
    fn remote_and_unselected_entries_are_left_alone() {
        let text = r#"{"mcpServers": {"r": {"url": "https://h/mcp"}, "s": {"command": "x"}, "t": {"command": "y"}}}"#;
        let out = wrap(text, "t", &launch(), &["r".into(), "t".into()]).unwrap();
        assert_eq!(
            out.text,
            r#"{"mcpServers": {"r": {"url": "https://h/mcp"}, "s": {"command": "x"}, "t": {"command": "mcp-lock", "args": ["guard", "t", "--", "y"]}}}"#
        );
        assert_eq!(out.servers[0].outcome, Outcome::Remote);
        assert_eq!(out.servers.len(), 2);
    }

    #[test]
    fn backup_sits_beside_the_config() {
        assert_eq!(
            backup_path(Path::new("/p/.vscode/mcp.json")),
            Path::new("/p/.vscode/mcp.json.mcp-lock.bak")
        );
    }
}
