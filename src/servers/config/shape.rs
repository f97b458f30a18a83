//! Which client's file a config is, told from its content whatever it is called, and
//! where in it the servers are.

use std::collections::HashMap;
use std::path::Path;

use serde_json::Value;

use super::ConfigError;
use super::depth::{MAX_YAML_DEPTH, yaml_too_deep};
use super::jsonc::{Kind, Node, Scanner, strip_jsonc};
use crate::base::json::Json;

/// The layout of a config file: which member holds its servers and how entries look.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Shape {
    /// `mcpServers` (Claude Code's `.mcp.json`, Cursor, Claude Desktop, Gemini CLI,
    /// Windsurf, Cline, Roo Code, Kiro, Amazon Q).
    McpServers,
    /// `servers` (VS Code's `.vscode/mcp.json`).
    VsCode,
    /// `mcp.servers` (VS Code's settings).
    VsCodeSettings,
    /// `~/.claude.json`: top-level `mcpServers` (user scope) and
    /// `projects["<absolute dir>"].mcpServers` (local scope).
    ClaudeUser,
    /// `context_servers` (Zed).
    Zed,
    /// `mcp` with `type: local|remote` entries (opencode).
    OpenCode,
    /// TOML `[mcp_servers.NAME]` (Codex CLI).
    Codex,
    /// YAML `extensions:` (Goose).
    Goose,
    /// YAML `mcpServers:` as a list of items with `name` (Continue).
    Continue,
}

/// The syntax a config is written in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Format {
    /// JSON, with the comments and trailing commas VS Code and others allow.
    Json,
    Toml,
    Yaml,
}

impl Format {
    pub fn as_str(self) -> &'static str {
        match self {
            Format::Json => "JSON",
            Format::Toml => "TOML",
            Format::Yaml => "YAML",
        }
    }
}

impl Shape {
    pub fn format(self) -> Format {
        match self {
            Shape::Codex => Format::Toml,
            Shape::Goose | Shape::Continue => Format::Yaml,
            _ => Format::Json,
        }
    }

    /// What holds the servers, as a message names it.
    pub fn describe(self) -> &'static str {
        match self {
            Shape::McpServers => "\"mcpServers\"",
            Shape::VsCode => "\"servers\" (VS Code)",
            Shape::VsCodeSettings => "\"mcp.servers\" (VS Code settings)",
            Shape::ClaudeUser => "Claude Code's ~/.claude.json",
            Shape::Zed => "\"context_servers\" (Zed)",
            Shape::OpenCode => "\"mcp\" (opencode)",
            Shape::Codex => "[mcp_servers] (Codex)",
            Shape::Goose => "extensions: (Goose)",
            Shape::Continue => "mcpServers: (Continue)",
        }
    }

    /// The members leading to each server table, with the Claude Code scope of each
    /// (`~/.claude.json` has two tables). `project_key` is the project directory as
    /// `projects` names it.
    pub fn tables(self, project_key: &str) -> Vec<(Vec<String>, Option<Scope>)> {
        let path = |p: &[&str]| p.iter().map(|s| s.to_string()).collect::<Vec<_>>();
        match self {
            Shape::McpServers | Shape::Continue => vec![(path(&["mcpServers"]), None)],
            Shape::VsCode => vec![(path(&["servers"]), None)],
            Shape::VsCodeSettings => vec![(path(&["mcp", "servers"]), None)],
            Shape::ClaudeUser => vec![
                (path(&["mcpServers"]), Some(Scope::User)),
                (
                    path(&["projects", project_key, "mcpServers"]),
                    Some(Scope::Local),
                ),
            ],
            Shape::Zed => vec![(path(&["context_servers"]), None)],
            Shape::OpenCode => vec![(path(&["mcp"]), None)],
            Shape::Codex => vec![(path(&["mcp_servers"]), None)],
            Shape::Goose => vec![(path(&["extensions"]), None)],
        }
    }
}

/// Claude Code's own scopes, lowest first: among its files a local entry wins over a
/// project one, which wins over a user one.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub enum Scope {
    User,
    Project,
    Local,
}

impl Scope {
    pub fn as_str(self) -> &'static str {
        match self {
            Scope::User => "user",
            Scope::Project => "project",
            Scope::Local => "local",
        }
    }
}

/// The syntax of a file: by its extension, else by its first character (`{` is JSON),
/// else TOML when it parses as TOML, else YAML.
pub fn format_of(text: &str, path: &Path) -> Format {
    match path.extension().and_then(|e| e.to_str()) {
        Some("json" | "jsonc") => return Format::Json,
        Some("toml") => return Format::Toml,
        Some("yaml" | "yml") => return Format::Yaml,
        _ => {}
    }
    let first = strip_jsonc(without_bom(text)).trim_start().chars().next();
    if matches!(first, Some('{') | None) {
        Format::Json
    } else if toml::from_str::<toml::Table>(text).is_ok() {
        Format::Toml
    } else {
        Format::Yaml
    }
}

/// The text after a leading UTF-8 byte order mark, which editors on Windows write and
/// every client skips.
pub fn without_bom(text: &str) -> &str {
    text.strip_prefix('\u{feff}').unwrap_or(text)
}

/// Parses a file of any format into a JSON value.
pub fn parse(text: &str, format: Format, path: &str) -> Result<Value, ConfigError> {
    let text = without_bom(text);
    let syntax = |line, column, message: String| ConfigError::Syntax {
        path: path.to_string(),
        line,
        column,
        language: format.as_str(),
        message,
    };
    match format {
        Format::Json => serde_json::from_str(&strip_jsonc(text)).map_err(|e| {
            let message = e.to_string();
            let message = message.split(" at line").next().unwrap_or("").to_string();
            syntax(e.line(), e.column(), message)
        }),
        Format::Toml => {
            let table: toml::Table = toml::from_str(text).map_err(|e| {
                let (line, column) = e
                    .span()
                    .map_or((1, 1), |span| line_and_column(text, span.start));
                syntax(line, column, e.message().to_string())
            })?;
            serde_json::to_value(table).map_err(|e| syntax(1, 1, e.to_string()))
        }
        Format::Yaml => {
            if let Some((line, column)) = yaml_too_deep(text, MAX_YAML_DEPTH) {
                return Err(syntax(
                    line,
                    column,
                    format!("nested more than {MAX_YAML_DEPTH} deep"),
                ));
            }
            serde_norway::from_str::<Value>(text).map_err(|e| {
                let (line, column) = e.location().map_or((1, 1), |l| (l.line(), l.column()));
                let message = e.to_string();
                let message = message.split(" at line").next().unwrap_or("").to_string();
                syntax(line, column, message)
            })
        }
    }
}

/// The shape of a parsed file, from its content; `None` when it holds no server table.
pub fn detect(root: &Value, format: Format) -> Option<Shape> {
    let has = |key: &str| root.get(key).is_some();
    match format {
        Format::Json => {
            if root.get("projects").is_some_and(Value::is_object) && !has("servers") {
                Some(Shape::ClaudeUser)
            } else if has("mcpServers") {
                Some(Shape::McpServers)
            } else if has("servers") {
                Some(Shape::VsCode)
            } else if root.get("mcp").and_then(|m| m.get("servers")).is_some() {
                Some(Shape::VsCodeSettings)
            } else if has("context_servers") {
                Some(Shape::Zed)
            } else if root.get("mcp").is_some_and(Value::is_object) {
                Some(Shape::OpenCode)
            } else {
                None
            }
        }
        Format::Toml => has("mcp_servers").then_some(Shape::Codex),
        Format::Yaml => {
            if has("extensions") {
                Some(Shape::Goose)
            } else {
                match root.get("mcpServers") {
                    Some(Value::Array(_)) => Some(Shape::Continue),
                    Some(_) => Some(Shape::McpServers),
                    None => None,
                }
            }
        }
    }
}

/// The value at a path of member names.
pub fn at<'v>(root: &'v Value, path: &[String]) -> Option<&'v Value> {
    path.iter().try_fold(root, |v, key| v.get(key))
}

/// 1-based line and column of a byte offset.
pub fn line_and_column(text: &str, offset: usize) -> (usize, usize) {
    let before = &text.as_bytes()[..offset.min(text.len())];
    let line_start = before
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |p| p + 1);
    (
        before.iter().filter(|&&b| b == b'\n').count() + 1,
        before.len() - line_start + 1,
    )
}

/// Where each line of a text starts, for the line of many offsets at the cost of one
/// pass: [`line_and_column`] per entry scans from the start each time, quadratic in a
/// file of many servers.
struct LineStarts(Vec<usize>);

impl LineStarts {
    fn of(text: &str) -> Self {
        let breaks = text.bytes().enumerate().filter(|&(_, b)| b == b'\n');
        LineStarts(
            std::iter::once(0)
                .chain(breaks.map(|(i, _)| i + 1))
                .collect(),
        )
    }

    /// The 1-based line of a byte offset.
    fn line(&self, offset: usize) -> usize {
        self.0.partition_point(|&start| start <= offset)
    }
}

/// The line each server of a table starts on, by name (1 when it cannot be told).
pub fn entry_lines(text: &str, format: Format, table: &[String], names: &[String]) -> Vec<usize> {
    let found: Vec<Option<usize>> = match format {
        Format::Json => json_lines(text, table, names),
        Format::Toml => toml_lines(text, table, names),
        Format::Yaml => yaml_lines(text, table, names),
    };
    found.into_iter().map(|l| l.unwrap_or(1)).collect()
}

fn json_lines(text: &str, table: &[String], names: &[String]) -> Vec<Option<usize>> {
    let root = Scanner {
        text,
        path: "",
        pos: 0,
    }
    .document()
    .ok();
    let node = root
        .as_ref()
        .and_then(|root| table.iter().try_fold(root, |n, key| n.member(key)));
    let Some(Node {
        kind: Kind::Object(members),
        ..
    }) = node
    else {
        return vec![None; names.len()];
    };
    let starts = LineStarts::of(text);
    // The last member of a repeated name, as serde_json keeps it.
    let by_name: HashMap<&str, usize> = members
        .iter()
        .map(|m| (m.key.as_str(), m.key_span.start))
        .collect();
    names
        .iter()
        .map(|name| by_name.get(name.as_str()).map(|&at| starts.line(at)))
        .collect()
}

fn toml_lines(text: &str, table: &[String], names: &[String]) -> Vec<Option<usize>> {
    let doc = toml_edit::Document::parse(text.to_string()).ok();
    let table = doc.as_ref().and_then(|doc| {
        table
            .iter()
            .try_fold(doc.as_item(), |item, key| item.get(key.as_str()))
            .and_then(|item| item.as_table_like())
    });
    let starts = LineStarts::of(text);
    names
        .iter()
        .map(|name| {
            let (key, item) = table?.get_key_value(name)?;
            let start = key
                .span()
                .or_else(|| item.span())
                .or_else(|| item.as_table().and_then(|t| t.span()))?;
            Some(starts.line(start.start))
        })
        .collect()
}

/// YAML keeps no positions through serde: the first line after the table's key that
/// names the entry (`NAME:` for a map, `name: NAME` for a list), found by reading
/// each line once for the names it could give.
fn yaml_lines(text: &str, table: &[String], names: &[String]) -> Vec<Option<usize>> {
    let key = table.last().map(String::as_str).unwrap_or("");
    let table_key = format!("{key}:");
    let lines: Vec<&str> = text.lines().collect();
    let start = lines
        .iter()
        .position(|l| l.trim_start().starts_with(&table_key))
        .unwrap_or(0);
    let mut first: HashMap<&str, usize> = HashMap::new();
    for (i, line) in lines.iter().enumerate().skip(start) {
        let t = line.trim_start();
        if t.starts_with(&table_key) {
            continue;
        }
        let item = t.strip_prefix("- ").map_or(t, str::trim_start);
        // `NAME:` (a map entry), and `name: NAME` (a list item).
        if let Some((name, _)) = item.split_once(':') {
            first.entry(unquote(name)).or_insert(i + 1);
        }
        if let Some(value) = item.strip_prefix("name:") {
            let value = value.split(" #").next().unwrap_or(value);
            first.entry(unquote(value)).or_insert(i + 1);
        }
    }
    names
        .iter()
        .map(|name| first.get(name.as_str()).copied())
        .collect()
}

/// A YAML key or value as written, without its quotes.
fn unquote(s: &str) -> &str {
    let s = s.trim();
    ['"', '\'']
        .iter()
        .find_map(|q| s.strip_prefix(*q).and_then(|s| s.strip_suffix(*q)))
        .unwrap_or(s)
}

/// Rejects a member repeated where it changes what is read: serde_json keeps the last
/// of a repeated member, so a server defined twice would be taken silently as its
/// second definition. The strict reader sees every copy.
pub fn check_repeats(cleaned: &str, tables: &[Vec<String>], path: &str) -> Result<(), ConfigError> {
    let mut repeats = Vec::new();
    if let Ok(strict) = Json::parse(cleaned) {
        repeated_members(&strict, &mut Vec::new(), &mut repeats);
    }
    for table_path in tables {
        let relevant = repeats.iter().find(|(at, name)| {
            at.starts_with(table_path)
                || (table_path.starts_with(at) && table_path.get(at.len()) == Some(name))
        });
        let Some((at, name)) = relevant else {
            continue;
        };
        let message = match at.strip_prefix(table_path.as_slice()) {
            Some([]) => format!("server {name:?} is defined more than once; keep one"),
            Some([server, inner @ ..]) => {
                let member: Vec<&str> = inner.iter().chain([name]).map(String::as_str).collect();
                format!(
                    "server {server:?}: \"{}\" is given more than once; keep one",
                    member.join(".")
                )
            }
            None => {
                let member: Vec<&str> = at.iter().chain([name]).map(String::as_str).collect();
                format!("\"{}\" is given more than once; keep one", member.join("."))
            }
        };
        return Err(ConfigError::Shape {
            path: path.to_string(),
            message,
        });
    }
    Ok(())
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

#[cfg(test)]
mod tests {
    use super::*;

    fn shape_of(text: &str) -> Option<Shape> {
        let format = format_of(text, Path::new("odd-name"));
        detect(&parse(text, format, "t").unwrap(), format)
    }

    #[test]
    fn shape_is_told_from_content_whatever_the_file_is_called() {
        assert_eq!(
            shape_of("# c\n[mcp_servers.a]\ncommand = \"x\"\n"),
            Some(Shape::Codex)
        );
        assert_eq!(
            shape_of(r#"{"context_servers": {"a": {"command": "x"}}}"#),
            Some(Shape::Zed)
        );
        assert_eq!(
            shape_of(r#"{"mcp": {"a": {"type": "local", "command": ["x"]}}}"#),
            Some(Shape::OpenCode)
        );
        assert_eq!(
            shape_of("extensions:\n  a:\n    cmd: x\n"),
            Some(Shape::Goose)
        );
        assert_eq!(
            shape_of("mcpServers:\n  - name: a\n    command: x\n"),
            Some(Shape::Continue)
        );
        assert_eq!(
            shape_of(r#"{"projects": {}, "mcpServers": {}}"#),
            Some(Shape::ClaudeUser)
        );
        assert_eq!(shape_of(r#"{"theme": "dark"}"#), None);
    }

    #[test]
    fn entry_lines_point_at_each_entry_in_every_format() {
        let json = "{\n  \"mcpServers\": {\n    \"a\": {},\n    \"b\": {}\n  }\n}";
        let names = vec!["a".to_string(), "b".to_string()];
        let table = vec!["mcpServers".to_string()];
        assert_eq!(entry_lines(json, Format::Json, &table, &names), [3, 4]);
        let toml = "# c\n[mcp_servers.a]\ncommand = \"x\"\n\n[mcp_servers.b]\nurl = \"u\"\n";
        let table = vec!["mcp_servers".to_string()];
        assert_eq!(entry_lines(toml, Format::Toml, &table, &names), [2, 5]);
        let yaml = "mcpServers:\n  - name: a\n    command: x\n  - name: b\n    command: y\n";
        let table = vec!["mcpServers".to_string()];
        assert_eq!(entry_lines(yaml, Format::Yaml, &table, &names), [2, 4]);
    }
}
