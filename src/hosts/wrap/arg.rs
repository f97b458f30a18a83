//! Changing one argument of a server's launch in place (`tiny-mcp@1.0.0` to
//! `tiny-mcp@1.0.1`), for moving a server's package to a new version: the token's
//! bytes are replaced, written in the quoting it had, and every other byte of the
//! file stays as it was.
//!
//! JSON and TOML entries are found as [`wrap`](super::wrap) finds them. YAML (Goose,
//! Continue) has no span-keeping reader here, so its entry's lines are read for
//! scalars (see [`yaml`]); the argument is changed when exactly one scalar of the
//! entry holds it. In every format the result is parsed again and must differ from
//! the original in that one argument of that one server, or nothing is returned.

use serde_json::Value;

use super::entries::{Entry, entries};
use super::*;

mod yaml;

/// Why an argument could not be changed. Each names the file and the server.
#[derive(Debug, thiserror::Error)]
pub enum ArgError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error("{path}: no server {server:?} to change; is it defined in another config?")]
    NoServer { path: String, server: String },
    #[error("{path}: server {server:?} is a remote server: it has no args to change")]
    Remote { path: String, server: String },
    #[error(
        "{path}: server {server:?} has no argument {old:?}; its args may have been edited: change them by hand"
    )]
    NotFound {
        path: String,
        server: String,
        old: String,
    },
    #[error(
        "{path}: server {server:?} has the argument {old:?} {count} times, and which one to change cannot be told: change it by hand"
    )]
    Repeated {
        path: String,
        server: String,
        old: String,
        count: usize,
    },
    /// The edit could not be made safely (a YAML layout this reader does not follow,
    /// or a result that would read differently).
    #[error("{path}: server {server:?}: {reason}; change {old:?} by hand")]
    Unsafe {
        path: String,
        server: String,
        old: String,
        reason: String,
    },
}

/// `text` with the one `args` element of server `server` whose value is `old`
/// written as `new`, in the same quoting (a TOML literal string stays literal when
/// `new` can be one; a YAML plain scalar stays plain when `new` reads back as the
/// same string). In a wrapped entry only the server's own args, after its command
/// following `--`, are looked at; a command is never changed.
///
/// An error when the server is not in the file, is remote, or has `old` in its args
/// other than exactly once (in `~/.claude.json` its user and local entries count
/// together).
pub fn set_arg(
    text: &str,
    path: &ConfigPath,
    server: &str,
    old: &str,
    new: &str,
) -> Result<String, ArgError> {
    let read = config::read_file(text, path.shown, path.file, path.project_dir)?;
    let no_server = || ArgError::NoServer {
        path: path.shown.to_string(),
        server: server.to_string(),
    };
    let shape = read.shape.ok_or_else(no_server)?;
    let format = shape.format();
    let tokens = match format {
        Format::Yaml => {
            let found = yaml::scalars(text, shape, server).map_err(|reason| ArgError::Unsafe {
                path: path.shown.to_string(),
                server: server.to_string(),
                old: old.to_string(),
                reason,
            })?;
            let found = found.ok_or_else(no_server)?;
            found
                .into_iter()
                .filter(|s| s.value == old)
                .map(|s| (s.span, s.style))
                .collect()
        }
        Format::Json | Format::Toml => {
            let named: Vec<Entry> = entries(text, path)?
                .into_iter()
                .filter(|e| e.name == server)
                .collect();
            if named.is_empty() {
                return Err(no_server());
            }
            if named.iter().all(|e| e.stdio.is_none()) {
                return Err(ArgError::Remote {
                    path: path.shown.to_string(),
                    server: server.to_string(),
                });
            }
            let style = match format {
                Format::Json => Style::Json,
                _ => Style::Toml,
            };
            named
                .iter()
                .filter_map(|e| e.stdio.as_ref())
                .flat_map(|stdio| own_args(text, stdio))
                .filter(|node| matches!(&node.kind, Kind::String(s) if s == old))
                .map(|node| (node.span.clone(), style))
                .collect::<Vec<_>>()
        }
    };
    let (span, style) = match tokens.as_slice() {
        [one] => one.clone(),
        [] => {
            return Err(ArgError::NotFound {
                path: path.shown.to_string(),
                server: server.to_string(),
                old: old.to_string(),
            });
        }
        many => {
            return Err(ArgError::Repeated {
                path: path.shown.to_string(),
                server: server.to_string(),
                old: old.to_string(),
                count: many.len(),
            });
        }
    };
    let before = config::shape::parse(text, format, path.shown)?;
    let mut last_reason = String::new();
    for token in encodings(&text[span.clone()], style, new) {
        let mut out = text.to_string();
        out.replace_range(span.clone(), &token);
        match changed_only(&before, &out, shape, path, server, old, new) {
            Ok(()) => return Ok(out),
            Err(reason) => last_reason = reason,
        }
    }
    Err(ArgError::Unsafe {
        path: path.shown.to_string(),
        server: server.to_string(),
        old: old.to_string(),
        reason: last_reason,
    })
}

/// How the token being replaced was written.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Style {
    Json,
    /// A TOML string of any of its four kinds, told from the token.
    Toml,
    YamlPlain,
    YamlSingle,
    YamlDouble,
}

/// The nodes of the arguments the server itself is launched with: `args`, or for a
/// wrapped entry those after the server's command.
fn own_args<'a>(text: &str, stdio: &'a Stdio) -> &'a [Node] {
    let Some(Node {
        kind: Kind::Array(items),
        ..
    }) = &stdio.args
    else {
        return &[];
    };
    let (command, args) = stdio.launch(text);
    match unwrapped_command(&command, &args) {
        Some((_, inner_args)) => &items[items.len() - inner_args.len()..],
        None => items,
    }
}

/// The ways to write `new` in place of `token`, best first: in the token's own
/// quoting when `new` can be written so, then in a quoting that holds any string.
fn encodings(token: &str, style: Style, new: &str) -> Vec<String> {
    match style {
        Style::Json => vec![json_string(new)],
        Style::Toml => vec![toml_string(token, new)],
        Style::YamlPlain => vec![new.to_string(), json_string(new)],
        Style::YamlSingle if !new.chars().any(char::is_control) => {
            vec![format!("'{}'", new.replace('\'', "''")), json_string(new)]
        }
        // A JSON string is a YAML double-quoted scalar.
        Style::YamlSingle | Style::YamlDouble => vec![json_string(new)],
    }
}

/// `new` as a TOML string of the kind `token` is: literal (`'…'`, `'''…'''`) when
/// `new` needs no escape, else basic (`"…"`, or `"""…"""` when the token was).
fn toml_string(token: &str, new: &str) -> String {
    let literal = !new.contains('\'') && !new.chars().any(|c| c.is_control() && c != '\t');
    if token.starts_with("'''") && literal {
        format!("'''{new}'''")
    } else if token.starts_with('\'') && literal {
        format!("'{new}'")
    } else if token.starts_with("\"\"\"") {
        format!("\"\"\"{}\"\"\"", toml_escape(new))
    } else {
        format!("\"{}\"", toml_escape(new))
    }
}

/// The inside of a TOML basic string holding `s`.
fn toml_escape(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '"' => out.push_str("\\\""),
            '\\' => out.push_str("\\\\"),
            '\n' => out.push_str("\\n"),
            '\r' => out.push_str("\\r"),
            '\t' => out.push_str("\\t"),
            '\u{8}' => out.push_str("\\b"),
            '\u{c}' => out.push_str("\\f"),
            c if c.is_control() => out.push_str(&format!("\\u{:04X}", c as u32)),
            c => out.push(c),
        }
    }
    out
}

/// Whether `after` reads as `before` with only `old` changed to `new`, in an `args`
/// array of server `server`'s entry; why not, when not.
fn changed_only(
    before: &Value,
    after: &str,
    shape: Shape,
    path: &ConfigPath,
    server: &str,
    old: &str,
    new: &str,
) -> Result<(), String> {
    let unreadable = || "the new value would not read back as written".to_string();
    let after =
        config::shape::parse(after, shape.format(), path.shown).map_err(|_| unreadable())?;
    let mut changes = Vec::new();
    changed_leaves(before, &after, &mut Vec::new(), &mut changes);
    let [(at, Value::String(was), Value::String(now))] = changes.as_slice() else {
        return Err(unreadable());
    };
    if was != old || now != new {
        return Err(unreadable());
    }
    let in_entry = shape
        .tables(&config::project_key(path.project_dir))
        .iter()
        .any(|(table, _)| {
            let Some(rest) = at.strip_prefix(table.as_slice()) else {
                return false;
            };
            match (shape, rest) {
                (Shape::Continue, [item, ..]) => {
                    let item = item.parse::<usize>().ok();
                    config::shape::at(before, table)
                        .and_then(|items| items.get(item?))
                        .and_then(|e| e.get("name"))
                        .and_then(Value::as_str)
                        == Some(server)
                }
                (_, [name, ..]) => name == server,
                _ => false,
            }
        });
    // opencode's argv is its `command` array.
    let holder = at.len().checked_sub(2).map(|i| at[i].as_str());
    let in_args = holder == Some("args") || (shape == Shape::OpenCode && holder == Some("command"));
    if in_entry && in_args {
        Ok(())
    } else {
        Err(format!("{old:?} was found outside the server's args"))
    }
}

/// The leaves that differ between two values of the same structure (a leaf is
/// whatever is not an object or array of the same keys or length), by path.
fn changed_leaves(
    a: &Value,
    b: &Value,
    at: &mut Vec<String>,
    out: &mut Vec<(Vec<String>, Value, Value)>,
) {
    match (a, b) {
        (Value::Object(x), Value::Object(y))
            if x.len() == y.len() && x.keys().all(|k| y.contains_key(k)) =>
        {
            for (key, value) in x {
                at.push(key.clone());
                changed_leaves(value, &y[key], at, out);
                at.pop();
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                at.push(i.to_string());
                changed_leaves(p, q, at, out);
                at.pop();
            }
        }
        _ if a != b => out.push((at.clone(), a.clone(), b.clone())),
        _ => {}
    }
}

#[cfg(test)]
mod tests;
