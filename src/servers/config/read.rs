//! Reading one config file: each host's format and layout (Continue's folders, Amazon
//! Q's agents, opencode's layers).

use super::*;

/// Reads one config file of any supported shape. `file` tells the host (with the
/// shape); `project_dir` picks the local-scope servers of a `~/.claude.json`.
pub fn read_file(
    text: &str,
    shown: &str,
    file: &Path,
    project_dir: &Path,
) -> Result<ConfigFile, ConfigError> {
    let text = shape::without_bom(text);
    let format = shape::format_of(text, file);
    let root = shape::parse(text, format, shown)?;
    let detected = shape::detect(&root, format);
    let place_host = Host::of_file(file, detected.unwrap_or(Shape::McpServers));
    let agent_file = place_host == Host::AmazonQ && is_amazonq_agent(file);
    let Some(shape) = detected else {
        if place_host == Host::Continue && format == Format::Json {
            // The server is the whole document: its line is where the object opens,
            // past any leading comments.
            let opens = jsonc::skip_trivia(text, 0);
            let line = 1 + text[..opens].matches('\n').count();
            return read_continue_single(&root, shown, file, line);
        }
        // An agent with no servers of its own is an agent all the same.
        if place_host.shares_its_file() || agent_file {
            return Ok(ConfigFile {
                shape: None,
                host: place_host,
                entries: Vec::new(),
            });
        }
        return Err(ConfigError::Shape {
            path: shown.to_string(),
            message: "no \"mcpServers\" or \"servers\" object (nor \"context_servers\", \"mcp\", [mcp_servers] or extensions:); is this an MCP client config?".into(),
        });
    };
    let host = Host::of_file(file, shape);
    let shape_error = |message: String| ConfigError::Shape {
        path: shown.to_string(),
        message,
    };
    let mut key = project_key(project_dir);
    if shape == Shape::ClaudeUser {
        // Claude Code names the directory as it was opened; try it as given too.
        let given = project_dir.display().to_string();
        let projects = root.get("projects");
        if projects.and_then(|p| p.get(&key)).is_none()
            && projects.and_then(|p| p.get(&given)).is_some()
        {
            key = given;
        }
    }
    let tables = shape.tables(&key);
    if format == Format::Json {
        let paths: Vec<Vec<String>> = tables.iter().map(|(p, _)| p.clone()).collect();
        shape::check_repeats(&jsonc::strip_jsonc(text), &paths, shown)?;
    }
    let personal = shape == Shape::ClaudeUser || is_user_file(file, &|v| std::env::var(v).ok());
    // Gemini CLI strips what looks like a secret from a stdio server's environment,
    // but for the names this file's settings allow.
    let gemini = (host == Host::GeminiCli)
        .then(|| environ::gemini_redaction(&root))
        .transpose()
        .map_err(shape_error)?;
    let opencode_rules = |name: &str| {
        if shape == Shape::OpenCode {
            settings::opencode_rules(&root, &settings::opencode_name(name)).map_err(shape_error)
        } else {
            Ok(Vec::new())
        }
    };
    let mut entries = Vec::new();
    for (table_path, scope) in tables {
        let Some(table) = shape::at(&root, &table_path) else {
            continue;
        };
        let scope = scope.or((host == Host::ClaudeCode).then_some(Scope::Project));
        let items: Vec<(String, &serde_json::Value)> = match (shape, table) {
            (Shape::Continue, serde_json::Value::Array(items)) => items
                .iter()
                .enumerate()
                .map(
                    |(i, item)| match item.get("name").and_then(serde_json::Value::as_str) {
                        Some(name) => Ok((name.to_string(), item)),
                        None => Err(shape_error(format!(
                            "mcpServers item {} has no \"name\"",
                            i + 1
                        ))),
                    },
                )
                .collect::<Result<_, _>>()?,
            (_, serde_json::Value::Object(map)) => {
                map.iter().map(|(name, v)| (name.clone(), v)).collect()
            }
            (_, serde_json::Value::Null) => Vec::new(),
            _ => {
                return Err(shape_error(format!(
                    "the servers member \"{}\" is not {}",
                    table_path.join("."),
                    if shape == Shape::Continue {
                        "a list"
                    } else {
                        "an object"
                    }
                )));
            }
        };
        let names: Vec<String> = items.iter().map(|(n, _)| n.clone()).collect();
        let lines = shape::entry_lines(text, format, &table_path, &names);
        for ((name, value), line) in items.into_iter().zip(lines) {
            let read = match entry::read_entry(&name, value, host)
                .map_err(|m| shape_error(format!("server {name:?}: {m}")))?
            {
                Read::Server(mut spec) => {
                    if agent_file {
                        spec.filter.include =
                            amazonq_agent_tools(&root, &name).map_err(shape_error)?;
                    }
                    if let (Some(gemini), TransportSpec::Stdio { .. }) = (&gemini, &spec.transport)
                    {
                        let environ = spec.environ.get_or_insert_default();
                        environ.inherit.get_or_insert_with(|| gemini.clone());
                    }
                    let rules = opencode_rules(&name)?;
                    spec.filter.rules = (!rules.is_empty()).then(|| Box::new(NameRules(rules)));
                    Ok(ServerSpec { personal, ..spec })
                }
                Read::Skipped(why) => Err(why),
            };
            entries.push(Entry {
                name,
                line,
                read,
                scope,
            });
        }
    }
    Ok(ConfigFile {
        shape: Some(shape),
        host,
        entries,
    })
}

/// Whether `path` is in `$CONTINUE_GLOBAL_DIR/mcpServers`, Continue's own folder moved
/// (see [`user::user_config_dirs`]).
pub(super) fn in_continue_global_dir(path: &Path) -> bool {
    let var = |v: &str| std::env::var(v).ok();
    user::continue_dir(None, &var)
        .is_some_and(|d| path.parent() == Some(d.join("mcpServers").as_path()))
}

/// The user's Amazon Q agent files that a project agent of the same `name` shadows,
/// each with the project file: Amazon Q keeps the workspace's agent and drops the
/// global one ("Agent conflict for NAME. Using workspace version.",
/// aws/amazon-q-developer-cli `crates/chat-cli/src/cli/agent/mod.rs`, `load`). An
/// agent's name is its `name` member, not its file name. Not when the project is the
/// home directory: Amazon Q then reads its global agents only.
pub fn amazonq_shadowed_agents(
    project_dir: &Path,
    user_files: &[PathBuf],
) -> Vec<(PathBuf, String, PathBuf)> {
    let name_of = |file: &Path| -> Option<String> {
        let text = read_discovered(file).ok()?;
        let root: serde_json::Value =
            serde_json::from_str(&jsonc::strip_jsonc(shape::without_bom(&text))).ok()?;
        root.get("name")?.as_str().map(str::to_string)
    };
    let home = std::env::var_os("HOME").map(PathBuf::from);
    let same_dir =
        |a: &Path, b: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    if home.is_some_and(|h| same_dir(&h, project_dir)) {
        return Vec::new();
    }
    let project_agents = files_in(&project_dir.join(AMAZONQ_AGENTS_DIR), &["json"]);
    let same = |a: &Path, b: &Path| std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok();
    let mut shadowed = Vec::new();
    let project_names: Vec<(String, PathBuf)> = project_agents
        .iter()
        .filter(|p| !user_files.iter().any(|u| same(u, p)))
        .filter_map(|p| Some((name_of(p)?, p.clone())))
        .collect();
    for file in user_files.iter().filter(|f| is_amazonq_agent(f)) {
        let Some(name) = name_of(file) else { continue };
        if let Some((_, project)) = project_names.iter().find(|(n, _)| *n == name) {
            shadowed.push((file.clone(), name, project.clone()));
        }
    }
    shadowed
}

/// Whether `file` is an Amazon Q agent file (`.amazonq/cli-agents/NAME.json`, or the
/// user's `~/.aws/amazonq/cli-agents/`).
pub(super) fn is_amazonq_agent(file: &Path) -> bool {
    let dir = |n: usize| {
        file.ancestors()
            .nth(n)
            .and_then(|p| p.file_name())
            .and_then(|n| n.to_str())
    };
    dir(1) == Some("cli-agents") && matches!(dir(2), Some(".amazonq" | "amazonq"))
}

/// The tools of `server` an Amazon Q agent shows, from its `tools` list: `None` for
/// all of them. As aws/amazon-q-developer-cli `crates/chat-cli/src/cli/chat/tool_manager.rs`
/// reads it: a list of exactly `["*"]` shows everything; otherwise each item starting
/// with `@SERVER` counts, `@SERVER/TOOL` for one tool and any other (`@SERVER`) for
/// all; no item for the server shows none (`tools` defaults to empty,
/// `crates/chat-cli/src/cli/agent/mod.rs`).
pub(super) fn amazonq_agent_tools(
    root: &serde_json::Value,
    server: &str,
) -> Result<Option<Vec<String>>, String> {
    let tools: Vec<&str> = match root.get("tools") {
        None | Some(serde_json::Value::Null) => Vec::new(),
        Some(serde_json::Value::Array(items)) => items
            .iter()
            .map(|t| {
                t.as_str()
                    .ok_or("\"tools\" is not a list of strings".to_string())
            })
            .collect::<Result<_, _>>()?,
        Some(_) => return Err("\"tools\" is not a list of strings".into()),
    };
    if tools == ["*"] {
        return Ok(None);
    }
    let prefix = format!("@{server}");
    let mut shown = Vec::new();
    for item in tools.iter().filter(|t| t.starts_with(&prefix)) {
        match item.split_once('/') {
            Some((_, tool)) if !tool.is_empty() => {
                if !shown.iter().any(|s| s == tool) {
                    shown.push(tool.to_string());
                }
            }
            _ => return Ok(None),
        }
    }
    Ok(Some(shown))
}

/// The variables an entry's `env` unsets (VS Code's `"NAME": null`), which its
/// resolved environment leaves out whichever host lists it: an entry that unsets
/// others is another definition.
pub(super) fn unset_names(spec: &ServerSpec) -> Option<&Vec<String>> {
    match spec.environ.as_ref()?.inherit.as_ref()? {
        environ::Inherit::AllBut(names) => Some(names),
        _ => None,
    }
}

/// A Continue `.json` file in `.continue/mcpServers/` holding one server, named after
/// the file, as continuedev/continue `core/context/mcp/json/loadJsonMcpConfigs.ts`
/// reads one that is neither a Claude Code nor a Claude Desktop file.
pub(super) fn read_continue_single(
    root: &serde_json::Value,
    shown: &str,
    file: &Path,
    line: usize,
) -> Result<ConfigFile, ConfigError> {
    let shape_error = |message: String| ConfigError::Shape {
        path: shown.to_string(),
        message,
    };
    if !root.is_object() || !(root.get("command").is_some() || root.get("url").is_some()) {
        return Err(shape_error(
            "neither \"mcpServers\" nor one server's \"command\" or \"url\"; Continue reads neither".into(),
        ));
    }
    let name = file
        .file_stem()
        .and_then(|n| n.to_str())
        .unwrap_or_default()
        .to_string();
    let read = match entry::read_entry(&name, root, Host::Continue)
        .map_err(|m| shape_error(format!("server {name:?}: {m}")))?
    {
        Read::Server(spec) => Ok(ServerSpec {
            personal: is_user_file(file, &|v| std::env::var(v).ok()),
            ..spec
        }),
        Read::Skipped(why) => Err(why),
    };
    Ok(ConfigFile {
        shape: None,
        host: Host::Continue,
        entries: vec![Entry {
            name,
            line,
            read,
            scope: None,
        }],
    })
}

/// opencode's merge of two configs (remeda `mergeDeep`): objects member by member,
/// anything else replaced by the later.
pub(super) fn merge_deep(into: &mut serde_json::Value, from: serde_json::Value) {
    match (into, from) {
        (serde_json::Value::Object(a), serde_json::Value::Object(b)) => {
            for (k, v) in b {
                match a.get_mut(&k) {
                    Some(existing) => merge_deep(existing, v),
                    None => {
                        a.insert(k, v);
                    }
                }
            }
        }
        (into, from) => *into = from,
    }
}

/// opencode's config files, merged as opencode merges them (`layers` lowest
/// precedence first, see [`opencode_layers`]), each server given to the file of
/// highest precedence that names it.
pub(super) fn read_opencode_layers(
    layers: &[PathBuf],
    project_dir: &Path,
) -> Result<Vec<(PathBuf, ConfigFile)>, ConfigError> {
    let mut merged = serde_json::Value::Object(Default::default());
    let mut read = Vec::new();
    for file in layers {
        let text = read_discovered(file)?;
        let text = shape::without_bom(&text).to_string();
        let shown = file.display().to_string();
        let root = shape::parse(&text, Format::Json, &shown)?;
        shape::check_repeats(
            &jsonc::strip_jsonc(&text),
            &[vec!["mcp".to_string()]],
            &shown,
        )?;
        merge_deep(&mut merged, root.clone());
        read.push((file, text, root));
    }
    let Some(nearest) = layers.last() else {
        return Ok(Vec::new());
    };
    let shown = format!(
        "{} (merged over {} more opencode config{})",
        nearest.display(),
        layers.len() - 1,
        if layers.len() == 2 { "" } else { "s" }
    );
    let text = serde_json::to_string(&merged).unwrap_or_default();
    let all = read_file(&text, &shown, nearest, project_dir)?;
    let mut by_file: Vec<(PathBuf, ConfigFile)> = Vec::new();
    for entry in all.entries {
        let owner = read
            .iter()
            .rev()
            .find(|(_, _, root)| root.get("mcp").and_then(|m| m.get(&entry.name)).is_some());
        let Some((file, text, _)) = owner else {
            continue;
        };
        let line = shape::entry_lines(
            text,
            Format::Json,
            &["mcp".to_string()],
            std::slice::from_ref(&entry.name),
        )[0];
        let entry = Entry { line, ..entry };
        match by_file.iter_mut().find(|(f, _)| f == *file) {
            Some((_, config)) => config.entries.push(entry),
            None => by_file.push((
                file.to_path_buf(),
                ConfigFile {
                    shape: all.shape,
                    host: all.host,
                    entries: vec![entry],
                },
            )),
        }
    }
    Ok(by_file)
}
