//! Finding a config's server entries in its text: each entry's span and, for a stdio
//! server, the nodes of its `command` and `args`, so a rewrite changes only those bytes.

use super::*;

/// One server entry, as found in the text.
pub(super) struct Entry {
    pub(super) name: String,
    /// The name as a JSON string token: as written in a JSON config.
    pub(super) key: String,
    /// The span of the entry's object.
    pub(super) object: Range<usize>,
    /// `None` for a remote server.
    pub(super) stdio: Option<Stdio>,
    /// A remote server's entry (JSON configs only), which wrap can move to a sidecar.
    pub(super) remote: bool,
    /// A remote server wrap moved: the sidecar its original entry is in.
    pub(super) wrapped_remote: Option<String>,
}

/// The values a stdio entry is launched from.
pub(super) struct Stdio {
    /// The program: `command` (Zed's older `command.path`), or the first element
    /// of opencode's argv array.
    pub(super) command: Node,
    /// `args`, or the rest of opencode's argv array (whose span is the whole array).
    pub(super) args: Option<Node>,
    /// opencode's argv form.
    pub(super) argv: bool,
    /// What starts an `args` member written right after the command value.
    pub(super) new_args: String,
}

impl Stdio {
    /// `command` and `args` decoded, as the client launches them.
    pub(super) fn launch(&self, text: &str) -> (String, Vec<String>) {
        decode_launch(&self.command, self.args.as_ref(), text)
    }
}

pub(super) fn decode_launch(
    command: &Node,
    args: Option<&Node>,
    text: &str,
) -> (String, Vec<String>) {
    {
        let decode = |node: &Node| match &node.kind {
            Kind::String(s) => s.clone(),
            _ => text[node.span.clone()].to_string(),
        };
        let args = match args {
            Some(Node {
                kind: Kind::Array(items),
                ..
            }) => items.iter().map(decode).collect(),
            _ => Vec::new(),
        };
        (decode(command), args)
    }
}

impl Stdio {
    /// How this entry starts the guard, when wrap could have written it.
    pub(super) fn guard_launch(&self, text: &str) -> Option<GuardLaunch> {
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
            remote: None,
        })
    }
}

/// The entries of the config's server tables (the last of a repeated name, as for
/// every other reader). Shapes are checked by [`config::read_file`] first, so this
/// reads the same servers, with the same transports, every command does.
pub(super) fn entries(text: &str, path: &ConfigPath) -> Result<Vec<Entry>, ConfigError> {
    let shown = path.shown;
    let read = config::read_file(text, shown, path.file, path.project_dir)?;
    let shape_error = |message: String| ConfigError::Shape {
        path: shown.to_string(),
        message,
    };
    let Some(shape) = read.shape else {
        return Ok(Vec::new());
    };
    let format = shape.format();
    if format == Format::Yaml {
        return Err(shape_error(refuse_yaml(shape)));
    }
    let root = config::shape::parse(text, format, shown)?;
    let tables = shape.tables(&config::project_key(path.project_dir));
    let mut entries = Vec::new();
    for (table_path, _) in &tables {
        let Some(values) = config::shape::at(&root, table_path).and_then(|t| t.as_object()) else {
            continue;
        };
        let stdio_names: Vec<&String> = values
            .iter()
            .filter(|(name, value)| {
                match config::entry::read_entry(name, value, read.host) {
                    Ok(config::entry::Read::Server(spec)) => {
                        matches!(spec.transport, TransportSpec::Stdio { .. })
                    }
                    // A disabled entry is wrapped too, for when it is enabled again.
                    Ok(config::entry::Read::Skipped(_)) => {
                        value.get("command").is_some() && value.get("url").is_none()
                    }
                    Err(_) => false,
                }
            })
            .map(|(name, _)| name)
            .collect();
        let mut remote_names = Vec::new();
        let mut wrapped_remote = Vec::new();
        for (name, value) in values {
            let Ok(config::entry::Read::Server(spec)) =
                config::entry::read_entry(name, value, read.host)
            else {
                continue;
            };
            if !matches!(spec.transport, TransportSpec::Remote { .. }) {
                continue;
            }
            let command = value.get("command").and_then(|c| c.as_str());
            let args: Vec<String> = value
                .get("args")
                .and_then(|a| a.as_array())
                .map(|a| {
                    a.iter()
                        .filter_map(|v| v.as_str().map(str::to_string))
                        .collect()
                })
                .unwrap_or_default();
            match command.and_then(|c| wrapped_remote_sidecar(c, &args)) {
                Some(sidecar) => wrapped_remote.push((name.clone(), sidecar)),
                None => remote_names.push(name.clone()),
            }
        }
        let mut found = match format {
            Format::Json => json_entries(text, path, table_path, &stdio_names)?,
            Format::Toml => toml_entries(text, table_path, &stdio_names)?,
            Format::Yaml => unreachable!("refused above"),
        };
        // A `{"command", "args"}` entry is a stdio server only in the mcpServers
        // shapes; others (VS Code, opencode, Zed) keep their remote entries as they are.
        if matches!(shape, Shape::McpServers | Shape::ClaudeUser) {
            for entry in &mut found {
                entry.remote = entry.stdio.is_none() && remote_names.contains(&entry.name);
                entry.wrapped_remote = wrapped_remote
                    .iter()
                    .find(|(n, _)| *n == entry.name)
                    .map(|(_, s)| s.clone());
            }
        }
        entries.extend(found);
    }
    Ok(entries)
}

/// Why a YAML config is not rewritten, and what to do instead.
pub(super) fn refuse_yaml(shape: Shape) -> String {
    let (client, command) = match shape {
        Shape::Goose => ("Goose", "cmd"),
        _ => ("Continue", "command"),
    };
    format!(
        "mcp-lock does not rewrite YAML configs ({client}): YAML cannot be edited here without losing comments or layout, so the change could not be undone byte for byte. Edit it by hand: set {command} to mcp-lock and put guard NAME --config PATH -- before the original command and its args"
    )
}

pub(super) fn json_entries(
    text: &str,
    path: &ConfigPath,
    table_path: &[String],
    stdio_names: &[&String],
) -> Result<Vec<Entry>, ConfigError> {
    let root = Scanner {
        text,
        path: path.shown,
        pos: 0,
    }
    .document()?;
    let shape_error = |message: &str| ConfigError::Shape {
        path: path.shown.to_string(),
        message: message.to_string(),
    };
    let table = table_path.iter().try_fold(&root, |n, key| n.member(key));
    let Some(Node {
        kind: Kind::Object(table),
        ..
    }) = table
    else {
        return Err(shape_error("no server table"));
    };
    let mut entries = Vec::new();
    for (i, member) in table.iter().enumerate() {
        if table[i + 1..].iter().any(|later| later.key == member.key) {
            continue;
        }
        let stdio = if stdio_names.contains(&&member.key) {
            // Cline's nested form keeps the launch under "transport".
            let launch = member
                .value
                .member("transport")
                .filter(|t| t.member("command").is_some())
                .unwrap_or(&member.value);
            let command = launch
                .member("command")
                .ok_or_else(|| shape_error("a stdio entry has no \"command\""))?;
            Some(match &command.kind {
                Kind::Array(items) => {
                    let (first, rest) = items
                        .split_first()
                        .ok_or_else(|| shape_error("a stdio entry's command is empty"))?;
                    Stdio {
                        command: first.clone(),
                        args: Some(Node {
                            span: command.span.clone(),
                            kind: Kind::Array(rest.to_vec()),
                        }),
                        argv: true,
                        new_args: String::new(),
                    }
                }
                // Zed's older `command: {path, args, env}`.
                Kind::Object(_) => Stdio {
                    command: command
                        .member("path")
                        .cloned()
                        .ok_or_else(|| shape_error("\"command\" has no \"path\""))?,
                    args: command.member("args").cloned(),
                    argv: false,
                    new_args: ", \"args\": ".into(),
                },
                _ => Stdio {
                    command: command.clone(),
                    args: launch.member("args").cloned(),
                    argv: false,
                    new_args: ", \"args\": ".into(),
                },
            })
        } else {
            None
        };
        entries.push(Entry {
            name: member.key.clone(),
            key: text[member.key_span.clone()].to_string(),
            object: member.value.span.clone(),
            stdio,
            remote: false,
            wrapped_remote: None,
        });
    }
    Ok(entries)
}

/// Codex's `[mcp_servers.NAME]` tables (or inline tables), from toml_edit's spans.
pub(super) fn toml_entries(
    text: &str,
    table_path: &[String],
    stdio_names: &[&String],
) -> Result<Vec<Entry>, ConfigError> {
    let doc = toml_edit::Document::parse(text.to_string()).map_err(|e| {
        let (line, column) = e
            .span()
            .map_or((1, 1), |s| config::shape::line_and_column(text, s.start));
        ConfigError::Syntax {
            path: String::new(),
            line,
            column,
            language: "TOML",
            message: e.message().to_string(),
        }
    })?;
    let table = table_path
        .iter()
        .try_fold(doc.as_item(), |item, key| item.get(key.as_str()))
        .and_then(|item| item.as_table_like());
    let Some(table) = table else {
        return Ok(Vec::new());
    };
    let node = |value: &toml_edit::Value| -> Option<Node> {
        let span = value.span()?;
        let kind = match value {
            toml_edit::Value::String(s) => Kind::String(s.value().clone()),
            toml_edit::Value::Array(items) => {
                let mut nodes = Vec::new();
                for item in items.iter() {
                    let span = item.span()?;
                    nodes.push(Node {
                        span,
                        kind: match item {
                            toml_edit::Value::String(s) => Kind::String(s.value().clone()),
                            _ => Kind::Scalar,
                        },
                    });
                }
                Kind::Array(nodes)
            }
            _ => Kind::Scalar,
        };
        Some(Node { span, kind })
    };
    let mut entries = Vec::new();
    for (name, item) in table.iter() {
        let Some(server) = item.as_table_like() else {
            continue;
        };
        let stdio = if stdio_names.iter().any(|n| n.as_str() == name) {
            let command = server
                .get("command")
                .and_then(|c| c.as_value())
                .and_then(node);
            let args = server.get("args").and_then(|a| a.as_value()).and_then(node);
            command.map(|command| {
                let inline = item.as_inline_table().is_some()
                    || item.as_value().is_some_and(|v| v.is_inline_table());
                let new_args = if inline {
                    ", args = ".to_string()
                } else {
                    let line_start = text[..command.span.start].rfind('\n').map_or(0, |p| p + 1);
                    let indent: String = text[line_start..]
                        .chars()
                        .take_while(|c| *c == ' ' || *c == '\t')
                        .collect();
                    format!("\n{indent}args = ")
                };
                Stdio {
                    command,
                    args,
                    argv: false,
                    new_args,
                }
            })
        } else {
            None
        };
        let object = match &stdio {
            Some(s) => {
                let args = s.args.as_ref().map(|a| a.span.clone());
                let start = args
                    .as_ref()
                    .map_or(s.command.span.start, |a| a.start.min(s.command.span.start));
                let end = args
                    .as_ref()
                    .map_or(s.command.span.end, |a| a.end.max(s.command.span.end));
                start..end
            }
            None => 0..0,
        };
        entries.push(Entry {
            name: name.to_string(),
            key: json_string(name),
            object,
            stdio,
            remote: false,
            wrapped_remote: None,
        });
    }
    Ok(entries)
}
