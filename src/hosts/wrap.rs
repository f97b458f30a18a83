//! Rewriting a client config so its stdio servers launch through `mcp-lock guard`
//! (`wrap`), and back (`unwrap`).
//!
//! The config is edited as text, never re-serialized: a small span-aware JSONC scanner
//! (or, for Codex's TOML, toml_edit's spans) finds each entry's `command` and `args`,
//! and only those bytes change. YAML configs (Goose, Continue) are refused: there is
//! no reader here that keeps their bytes, and a rewrite that loses comments or layout
//! could not be undone byte for byte. Comments, key
//! order and indentation stay as the user wrote them, and unwrapping is the exact
//! inverse of wrapping. A wrapped entry keeps the original command's JSON token
//! verbatim after `--`:
//!
//! ```text
//! "command": "npx", "args": ["-y", "pkg"]
//! "command": "mcp-lock", "args": ["guard", "github", "--", "npx", "-y", "pkg"]
//! ```
//!
//! [`set_arg`] changes one argument of a server's launch the same way (a package's
//! version, for an upgrade); it edits YAML configs too, where the argument is one
//! scalar of the entry (see `arg`).

use std::ops::Range;
use std::path::{Path, PathBuf};

use crate::servers::config::jsonc::{Kind, Node, Scanner, skip_trivia};
use crate::servers::config::{
    self, ConfigError, Format, Shape, TransportSpec, launches_guard, unwrapped_command,
    wrapped_remote_sidecar,
};

mod arg;
mod entries;

pub use arg::{ArgError, set_arg};
use entries::{Entry, Stdio, entries};

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
    /// For remote entries: the absolute path of the file their original entries move
    /// to ([`remote_sidecar_path`]), and the absolute lock path; `None` leaves remote
    /// entries as they are.
    pub remote: Option<RemoteLaunch>,
}

/// Where a wrapped remote entry's guard finds its server and its lock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RemoteLaunch {
    pub sidecar: String,
    pub lock: String,
}

/// The largest sidecar read (a regular file only): it holds remote entries of one
/// config.
pub const MAX_SIDECAR_BYTES: u64 = crate::servers::config::MAX_DISCOVERED_BYTES;

/// Where wrap keeps the original entries of the remote servers it wrapped in
/// `config`: `FILE.mcp-lock.remote.json` beside it, an `mcpServers` config the
/// wrapped entries name with `--config`. Their URL and header templates stay there.
pub fn remote_sidecar_path(config: &Path) -> PathBuf {
    let mut name = config.file_name().unwrap_or_default().to_os_string();
    name.push(".mcp-lock.remote.json");
    config.with_file_name(name)
}

/// The entries of a sidecar file, verbatim, by name.
pub fn sidecar_entries(text: &str, shown: &str) -> Result<Vec<(String, String)>, ConfigError> {
    let root = Scanner {
        text,
        path: shown,
        pos: 0,
    }
    .document()?;
    let Some(Node {
        kind: Kind::Object(members),
        ..
    }) = root.member("mcpServers")
    else {
        return Ok(Vec::new());
    };
    Ok(members
        .iter()
        .map(|m| (m.key.clone(), text[m.value.span.clone()].to_string()))
        .collect())
}

/// A sidecar holding `entries` (name, original entry text), in the order given.
pub fn sidecar_text(entries: &[(String, String)]) -> String {
    let members: Vec<String> = entries
        .iter()
        .map(|(name, entry)| format!("    {}: {entry}", json_string(name)))
        .collect();
    format!(
        "{{\n  \"//\": \"Written by mcp-lock wrap: the remote servers it wrapped, as they were. mcp-lock unwrap puts them back.\",\n  \"mcpServers\": {{\n{}\n  }}\n}}\n",
        members.join(",\n")
    )
}

/// A config's new text, and what happened to each selected server.
#[derive(Debug, Clone)]
pub struct Rewrite {
    pub text: String,
    /// The selected servers, in file order.
    pub servers: Vec<ServerChange>,
    /// Unwrap only: `text` is the backup wrap made, restored byte for byte.
    pub restored_backup: bool,
    /// Wrap: the remote entries moved to the sidecar (name, original text); unwrap:
    /// the names put back from it.
    pub remote_moved: Vec<(String, String)>,
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
pub fn backup_text(
    text: &str,
    backup: Option<&[u8]>,
    file: &ConfigPath,
) -> Result<String, ConfigError> {
    Ok(unwrap(text, backup, file, &[])?.text)
}

/// Which file a text is, for telling its shape and host, and the project whose
/// local-scope servers a `~/.claude.json` holds.
#[derive(Debug, Clone, Copy)]
pub struct ConfigPath<'a> {
    /// The path as messages show it.
    pub shown: &'a str,
    pub file: &'a Path,
    pub project_dir: &'a Path,
}

impl<'a> ConfigPath<'a> {
    /// A file shown as its path, in the current directory's project.
    pub fn new(shown: &'a str, project_dir: &'a Path) -> Self {
        ConfigPath {
            shown,
            file: Path::new(shown),
            project_dir,
        }
    }
}

/// Makes the selected stdio servers (all when `only` is empty) launch through the
/// guard. Entries that already do are left as they are.
pub fn wrap(
    text: &str,
    path: &ConfigPath,
    launch: &GuardLaunch,
    only: &[String],
) -> Result<Rewrite, ConfigError> {
    let mut moved = Vec::new();
    let mut rewrite = rewrite(text, path, only, |entry, edits| match &entry.stdio {
        Some(stdio) => wrap_entry(text, entry, stdio, launch, edits),
        None => match (&launch.remote, entry.remote) {
            (Some(remote), true) => {
                let original = text[entry.object.clone()].to_string();
                let mut args = vec!["\"guard\"".to_string(), entry.key.clone()];
                args.extend(["\"--lock\"".to_string(), json_string(&remote.lock)]);
                args.extend(["\"--config\"".to_string(), json_string(&remote.sidecar)]);
                edits.push(Edit {
                    range: entry.object.clone(),
                    text: format!(
                        "{{\"command\": {}, \"args\": [{}]}}",
                        json_string(&launch.command),
                        args.join(", ")
                    ),
                });
                // Reports show the URL as written (no secret: variables unexpanded).
                let url = serde_json::from_str::<serde_json::Value>(&original)
                    .ok()
                    .and_then(|v| v["url"].as_str().map(str::to_string))
                    .unwrap_or_else(|| "remote".into());
                moved.push((entry.name.clone(), original));
                Outcome::Changed {
                    command: url,
                    args: Vec::new(),
                }
            }
            _ => Outcome::Remote,
        },
    })?;
    rewrite.remote_moved = moved;
    Ok(rewrite)
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
    path: &ConfigPath,
    only: &[String],
) -> Result<Rewrite, ConfigError> {
    let backup = backup.and_then(|b| std::str::from_utf8(b).ok());
    let mut originals = Originals {
        backup,
        path: *path,
        by_launch: Vec::new(),
    };
    let mut restored = Vec::new();
    let mut failure = None;
    let mut rewrite = rewrite(text, path, only, |entry, edits| {
        if let Some(sidecar) = &entry.wrapped_remote {
            // The original entry, byte for byte, from the file the guard reads it from.
            let found = crate::base::files::read_regular_text(sidecar.as_ref(), MAX_SIDECAR_BYTES)
                .map_err(|e| format!("cannot read {sidecar}: {e}"))
                .and_then(|t| sidecar_entries(&t, sidecar).map_err(|e| e.to_string()))
                .map(|entries| entries.into_iter().find(|(n, _)| *n == entry.name));
            return match found {
                Ok(Some((name, original))) => {
                    edits.push(Edit {
                        range: entry.object.clone(),
                        text: original.clone(),
                    });
                    restored.push((name, original));
                    Outcome::Changed {
                        command: "(remote)".into(),
                        args: Vec::new(),
                    }
                }
                Ok(None) => Outcome::NoCommand,
                Err(e) => {
                    failure.get_or_insert(e);
                    Outcome::NoCommand
                }
            };
        }
        let Some(stdio) = &entry.stdio else {
            return Outcome::Remote;
        };
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
    if let Some(message) = failure {
        return Err(ConfigError::Shape {
            path: path.shown.to_string(),
            message: format!("a wrapped remote entry cannot be restored: {message}"),
        });
    }
    rewrite.restored_backup = rewrite.changed() > 0 && backup == Some(rewrite.text.as_str());
    rewrite.remote_moved = restored;
    Ok(rewrite)
}

/// The backup's entries and what wrap makes of them, per guard launch (entries name
/// the lock and guard command they were wrapped with).
struct Originals<'a> {
    backup: Option<&'a str>,
    path: ConfigPath<'a>,
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
                let found = wrapped_entries(backup, &self.path, launch).unwrap_or_default();
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
    path: &ConfigPath,
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

/// Runs `edit` on each selected entry and applies the edits it asks for.
fn rewrite(
    text: &str,
    path: &ConfigPath,
    only: &[String],
    mut edit: impl FnMut(&Entry, &mut Vec<Edit>) -> Outcome,
) -> Result<Rewrite, ConfigError> {
    let mut edits = Vec::new();
    let mut servers = Vec::new();
    for entry in entries(text, path)? {
        if !only.is_empty() && !only.contains(&entry.name) {
            continue;
        }
        let outcome = edit(&entry, &mut edits);
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
        remote_moved: Vec::new(),
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
    let mut prefix = vec!["\"guard\"", entry.key.as_str()];
    let lock = launch.lock.as_deref().map(json_string);
    if let Some(lock) = &lock {
        prefix.extend(["\"--lock\"", lock.as_str()]);
    }
    let config = launch.config.as_deref().map(json_string);
    if let Some(config) = &config {
        prefix.extend(["\"--config\"", config.as_str()]);
    }
    if stdio.argv {
        // opencode's `command: [program, args...]`: the guard goes in front.
        prefix.insert(0, "");
        let launch_command = json_string(&launch.command);
        prefix[0] = &launch_command;
        prefix.push("\"--\"");
        edits.push(Edit {
            range: stdio.command.span.start..stdio.command.span.start,
            text: format!("{}, ", prefix.join(", ")),
        });
        return Outcome::Changed { command, args };
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
            text: format!("{}[{prefix}]", stdio.new_args),
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
    if stdio.argv {
        // The guard's words in front of the program, whatever their layout.
        edits.push(Edit {
            range: stdio.command.span.start..inner_node.span.start,
            text: String::new(),
        });
        return Outcome::Changed {
            command: inner,
            args: inner_args,
        };
    }
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
            && text[command_end..=array.start] == format!("{}[", stdio.new_args) =>
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

#[cfg(test)]
mod tests {
    use super::*;

    fn t() -> ConfigPath<'static> {
        ConfigPath::new("t.json", Path::new("/p"))
    }

    fn launch() -> GuardLaunch {
        GuardLaunch {
            command: "mcp-lock".into(),
            lock: None,
            config: None,
            remote: None,
        }
    }

    #[test]
    fn wrap_inserts_the_prefix_and_keeps_the_command_token_verbatim() {
        let text = r#"{"mcpServers": {"gh": {"command": "np\u0078", "args": ["-y", "pkg"]}}}"#;
        let out = wrap(text, &t(), &launch(), &[]).unwrap();
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
        assert_eq!(unwrap(&out.text, None, &t(), &[]).unwrap().text, text);
    }

    #[test]
    fn wrap_adds_args_after_the_command_when_there_are_none() {
        let text = "{\"servers\": {\"m\": {\n  \"command\": \"srv\"\n}}}";
        let lock = GuardLaunch {
            lock: Some("/p/mcp.lock".into()),
            ..launch()
        };
        let out = wrap(text, &t(), &lock, &[]).unwrap();
        assert_eq!(
            out.text,
            "{\"servers\": {\"m\": {\n  \"command\": \"mcp-lock\", \"args\": [\"guard\", \"m\", \"--lock\", \"/p/mcp.lock\", \"--\", \"srv\"]\n}}}"
        );
        assert_eq!(unwrap(&out.text, None, &t(), &[]).unwrap().text, text);
    }

    #[test]
    fn a_cline_nested_transport_entry_is_wrapped_inside_its_transport() {
        let path = ConfigPath::new("cline_mcp_settings.json", Path::new("/p"));
        let text = r#"{"mcpServers": {"gh": {"transport": {"type": "stdio", "command": "npx", "args": ["pkg"]}, "disabled": false}}}"#;
        let out = wrap(text, &path, &launch(), &[]).unwrap();
        assert_eq!(
            out.text,
            r#"{"mcpServers": {"gh": {"transport": {"type": "stdio", "command": "mcp-lock", "args": ["guard", "gh", "--", "npx", "pkg"]}, "disabled": false}}}"#
        );
        assert_eq!(unwrap(&out.text, None, &path, &[]).unwrap().text, text);
    }

    #[test]
    fn wrapping_a_wrapped_entry_changes_nothing() {
        let text = r#"{"mcpServers": {"a": {"command": "/bin/mcp-lock", "args": ["guard", "a", "--", "x"]},
                       "b": {"command": "mcp-lock", "args": ["guard", "b"]}}}"#;
        let out = wrap(text, &t(), &launch(), &[]).unwrap();
        assert_eq!(out.text, text);
        assert_eq!(out.changed(), 0);
    }

    #[test]
    fn unwrap_in_place_follows_a_reformatted_array() {
        let wrapped = "{\"mcpServers\": {\"a\": {\"command\": \"mcp-lock\", \"args\": [\n    \"guard\",\n    \"a\",\n    \"--\",\n    \"srv\",\n    \"--flag\"\n  ]}, \"b\": {\"command\": \"mcp-lock\", \"args\": [ \"guard\", \"b\", \"--\", \"srv\", ]}}}";
        let out = unwrap(wrapped, None, &t(), &[]).unwrap();
        assert_eq!(
            out.text,
            "{\"mcpServers\": {\"a\": {\"command\": \"srv\", \"args\": [\n    \"--flag\"\n  ]}, \"b\": {\"command\": \"srv\", \"args\": []}}}"
        );
    }

    #[test]
    fn unwrap_restores_the_backup_only_when_it_wraps_to_the_current_text() {
        let original = r#"{"mcpServers": {"a": {"command": "srv", "args": []}}}"#;
        let wrapped = wrap(original, &t(), &launch(), &[]).unwrap().text;
        // In place, "args": [] right after the command reads as the member wrap added.
        let in_place = unwrap(&wrapped, None, &t(), &[]).unwrap();
        assert_eq!(
            in_place.text,
            r#"{"mcpServers": {"a": {"command": "srv"}}}"#
        );
        let restored = unwrap(&wrapped, Some(original.as_bytes()), &t(), &[]).unwrap();
        assert!(restored.restored_backup);
        assert_eq!(restored.text, original);
        let stale = unwrap(&wrapped, Some(b"{\"mcpServers\": {}}"), &t(), &[]).unwrap();
        assert!(!stale.restored_backup);
    }

    #[test]
    fn unwrap_takes_untouched_entries_from_the_backup_and_inverts_edited_ones() {
        let original = r#"{"mcpServers": {"a": {"command": "x", "args": []}, "b": {"command": "y", "args": []}}}"#;
        let wrapped = wrap(original, &t(), &launch(), &[]).unwrap().text;
        let edited = wrapped.replace(r#""--", "y"]"#, r#""--", "y"], "cwd": "sub""#);
        let out = unwrap(&edited, Some(original.as_bytes()), &t(), &[]).unwrap();
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
        let wrapped = wrap(original, &t(), &launch(), &[]).unwrap().text;
        let added = wrapped.replace("}}}", r#"}, "b": {"command": "y"}}}"#);
        let expected =
            r#"{"mcpServers": {"a": {"command": "x", "args": []}, "b": {"command": "y"}}}"#;
        assert_eq!(
            backup_text(&added, Some(original.as_bytes()), &t()).unwrap(),
            expected
        );
        assert_eq!(backup_text(original, None, &t()).unwrap(), original);
    }

    #[test]
    fn remote_and_unselected_entries_are_left_alone() {
        let text = r#"{"mcpServers": {"r": {"url": "https://h/mcp"}, "s": {"command": "x"}, "t": {"command": "y"}}}"#;
        let out = wrap(text, &t(), &launch(), &["r".into(), "t".into()]).unwrap();
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
