//! `mcp-lock wrap` / `unwrap`: make a client config's stdio servers launch through
//! `mcp-lock guard`, and back. The text edits live in [`mcp_lock::hosts::wrap`].

use std::path::{Path, PathBuf};

use anstyle::{AnsiColor, Style};
use anyhow::Context;
use mcp_lock::base::files::{self, normalize};
use mcp_lock::base::text::escape_for_terminal;
use mcp_lock::hosts::wrap::{self, ConfigPath, GuardLaunch, Outcome, Rewrite};
use mcp_lock::records::lock::FileLock;
use mcp_lock::servers::config::{self, ConfigError, MAX_NAMED_BYTES, ServerSpec, TransportSpec};
use mcp_lock::verdict::exit_codes::ExitCode;

use super::{Workspace, display_path, err_out, out, status, warning};
use crate::cli::WrapArgs;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    Wrap,
    Unwrap,
}

/// One config file, read.
struct Config {
    path: PathBuf,
    /// The path as the user would write it.
    shown: String,
    text: String,
    specs: Vec<ServerSpec>,
}

pub fn run(ws: &Workspace, args: WrapArgs, direction: Direction) -> anyhow::Result<ExitCode> {
    let configs = read_configs(ws)?;
    check_selection(&configs, &args.servers)?;
    // Before a backup is read or anything written: a config, backup or sidecar that
    // is a symlink leading out of where it belongs, or dangling, stops the whole run.
    for config in &configs {
        for (path, shown) in files_of(config) {
            files::landing(&path, &ws.belongs_in(&config.path))
                .with_context(|| format!("cannot write {shown}"))?;
        }
    }
    // Every file is rewritten in memory before any is written: an error in one
    // leaves them all untouched.
    let mut planned = Vec::new();
    for config in &configs {
        let config_arg = match direction {
            Direction::Wrap => config_argument(ws, &config.path)?,
            Direction::Unwrap => None,
        };
        let lock = match direction {
            Direction::Wrap => lock_argument(ws, config_arg.is_some())?,
            Direction::Unwrap => None,
        };
        let launch = match direction {
            Direction::Wrap => Some(GuardLaunch {
                command: guard_command(ws, &args.guard_command)?,
                lock: lock.clone(),
                config: config_arg,
                remote: Some(remote_launch(ws, &config.path)?),
            }),
            Direction::Unwrap => None,
        };
        let (rewrite, new_backup) = plan(ws, config, &config.text, launch.as_ref(), &args.servers)?;
        planned.push((config, lock, launch, rewrite, new_backup));
    }
    for (config, lock, launch, rewrite, new_backup) in planned {
        // Without --lock the guard looks for mcp.lock where the client starts it.
        report_servers(config, &rewrite, direction, lock.is_none());
        if rewrite.changed() == 0 {
            nothing_to_do(config, &rewrite, direction);
            continue;
        }
        if args.dry_run {
            print_diff(&config.shown, &config.text, &rewrite.text);
            summarize(config, &rewrite, direction, args.dry_run);
            continue;
        }
        // Another wrap may rewrite this file at the same time, and another program
        // may write it too (Claude Code keeps its state in ~/.claude.json): under the
        // lock every wrap and update takes, read it again and make the same change to
        // what is there now, so only the entries concerned change and no run's edit
        // is lost.
        let root = ws.belongs_in(&config.path);
        let _lock = FileLock::acquire(&config.path, &root, || {
            status(
                "Blocking",
                AnsiColor::Cyan,
                &format!(
                    "waiting for file lock on {} (another mcp-lock run is writing beside it)",
                    config.shown
                ),
            )
        })
        .with_context(|| format!("cannot write {}", config.shown))?;
        let (rewrite, new_backup) = match files::read_regular_text(&config.path, MAX_NAMED_BYTES) {
            Ok(now) if now != config.text => {
                plan(ws, config, &now, launch.as_ref(), &args.servers)?
            }
            _ => (rewrite, new_backup),
        };
        if rewrite.changed() == 0 {
            nothing_to_do(config, &rewrite, direction);
            continue;
        }
        write(config, &root, &rewrite, new_backup.as_deref())?;
        summarize(config, &rewrite, direction, args.dry_run);
    }
    Ok(ExitCode::Success)
}

/// The files wrap and unwrap write for a config, with how the user names each: the
/// config, its backup and its remote sidecar.
fn files_of(config: &Config) -> [(PathBuf, String); 3] {
    [
        (config.path.clone(), config.shown.clone()),
        (
            wrap::backup_path(&config.path),
            format!("{}.mcp-lock.bak", config.shown),
        ),
        (
            wrap::remote_sidecar_path(&config.path),
            format!("{}.mcp-lock.remote.json", config.shown),
        ),
    ]
}

/// The rewrite of `text` (config's content), wrapping with `launch` or unwrapping
/// when it is `None`, and for wrap the backup to save.
fn plan(
    ws: &Workspace,
    config: &Config,
    text: &str,
    launch: Option<&GuardLaunch>,
    servers: &[String],
) -> anyhow::Result<(Rewrite, Option<String>)> {
    let path = ConfigPath {
        shown: &config.shown,
        file: &config.path,
        project_dir: &ws.project_dir,
    };
    let backup_path = wrap::backup_path(&config.path);
    let backup = match files::read_regular(&backup_path, MAX_NAMED_BYTES) {
        Ok(bytes) => Some(bytes),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => None,
        Err(e) => anyhow::bail!(
            "cannot read {}: {e}",
            display_path(&backup_path, &ws.project_dir)
        ),
    };
    Ok(match launch {
        Some(launch) => {
            let rewrite = wrap::wrap(text, &path, launch, servers)?;
            let new_backup = wrap::backup_text(text, backup.as_deref(), &path)?;
            (rewrite, Some(new_backup))
        }
        None => (wrap::unwrap(text, backup.as_deref(), &path, servers)?, None),
    })
}

/// `--config`, or every discovered config in the project directory.
fn read_configs(ws: &Workspace) -> anyhow::Result<Vec<Config>> {
    let paths: Vec<PathBuf> = match ws.configs.is_empty() {
        false => ws.configs.iter().map(|p| ws.project_dir.join(p)).collect(),
        // Never a file above the project (an opencode config of a parent directory):
        // wrap writes only inside the project.
        true => config::discover(&ws.project_dir)
            .into_iter()
            .filter(|p| p.starts_with(&ws.project_dir))
            .collect(),
    };
    if paths.is_empty() {
        return Err(ConfigError::NotFound {
            dir: ws.project_dir.display().to_string(),
        }
        .into());
    }
    let mut configs = Vec::new();
    for path in paths {
        let shown = display_path(&path, &ws.project_dir);
        let bytes =
            files::read_regular(&path, MAX_NAMED_BYTES).map_err(|source| ConfigError::Read {
                path: shown.clone(),
                source,
            })?;
        let text = String::from_utf8(bytes)
            .ok()
            .with_context(|| format!("{shown}: not UTF-8 text; is this an MCP client config?"))?;
        let specs = config::read_file(&text, &shown, &path, &ws.project_dir)?
            .servers()
            .cloned()
            .collect();
        configs.push(Config {
            path,
            shown,
            text,
            specs,
        });
    }
    Ok(configs)
}

/// Every named server must be defined in some config.
fn check_selection(configs: &[Config], names: &[String]) -> Result<(), ConfigError> {
    let mut known: Vec<&str> = configs
        .iter()
        .flat_map(|c| c.specs.iter().map(|s| s.name.as_str()))
        .collect();
    known.sort();
    known.dedup();
    match names.iter().find(|n| !known.contains(&n.as_str())) {
        Some(name) => Err(ConfigError::UnknownServer {
            name: name.clone(),
            known: if known.is_empty() {
                "(no servers)".into()
            } else {
                known.join(", ")
            },
        }),
        None => Ok(()),
    }
}

/// Where a wrapped remote entry's guard reads the original entry and the lock: both
/// absolute, since the entry names another file than the one it is in.
fn remote_launch(ws: &Workspace, config: &Path) -> anyhow::Result<wrap::RemoteLaunch> {
    let sidecar = normalize(&ws.project_dir.join(wrap::remote_sidecar_path(config)));
    let sidecar = sidecar
        .to_str()
        .with_context(|| {
            format!(
                "{} is not UTF-8 and cannot be written into a config",
                sidecar.display()
            )
        })?
        .to_string();
    let lock = lock_argument(ws, true)?.expect("a lock argument is given when asked for");
    Ok(wrap::RemoteLaunch { sidecar, lock })
}

/// The `--lock` a wrapped entry needs, as an absolute path: clients start servers in
/// a directory of their own choosing (Claude Desktop in `/`), so nothing written into
/// a config may depend on it. None only when the config is one the guard discovers in
/// the project (`needs_config` false) and the lock is `mcp.lock` there: such an
/// entry is shared with the project, and its clients start servers in the project.
fn lock_argument(ws: &Workspace, needs_config: bool) -> anyhow::Result<Option<String>> {
    let lock = normalize(&ws.project_dir.join(&ws.lock_path));
    if !needs_config && lock == normalize(&ws.project_dir).join("mcp.lock") {
        return Ok(None);
    }
    let written = lock.to_str().with_context(|| {
        format!(
            "the lock path {} is not UTF-8 and cannot be written into a config",
            lock.display()
        )
    })?;
    Ok(Some(written.to_string()))
}

/// `--guard-command` as written into the config: a bare name is looked up in `PATH`
/// wherever the client starts it, but a relative path would depend on that
/// directory, so it is made absolute.
fn guard_command(ws: &Workspace, command: &str) -> anyhow::Result<String> {
    if !command.contains('/') || Path::new(command).is_absolute() {
        return Ok(command.to_string());
    }
    let path = normalize(&ws.project_dir.join(command));
    let written = path.to_str().with_context(|| {
        format!(
            "the guard command {} is not UTF-8 and cannot be written into a config",
            path.display()
        )
    })?;
    Ok(written.to_string())
}

/// The `--config` a wrapped entry needs: none for a config the guard discovers in the
/// project directory by itself (`.mcp.json`, `.vscode/mcp.json`, … see
/// [`config::discover`]); the absolute path of any other.
fn config_argument(ws: &Workspace, config: &Path) -> anyhow::Result<Option<String>> {
    let config = normalize(&ws.project_dir.join(config));
    if config::discover(&ws.project_dir)
        .iter()
        .any(|found| config == normalize(found))
    {
        return Ok(None);
    }
    let written = config.to_str().with_context(|| {
        format!(
            "the config path {} is not UTF-8 and cannot be written into a config",
            config.display()
        )
    })?;
    Ok(Some(written.to_string()))
}

fn report_servers(
    config: &Config,
    rewrite: &Rewrite,
    direction: Direction,
    lock_is_found_from_cwd: bool,
) {
    let verb = match direction {
        Direction::Wrap => "Wrapping",
        Direction::Unwrap => "Unwrapping",
    };
    for server in &rewrite.servers {
        let name = escape_for_terminal(&server.name);
        match &server.outcome {
            Outcome::Changed { command, args } => {
                status(
                    verb,
                    AnsiColor::Cyan,
                    &format!("{name} ({})", command_line(command, args)),
                );
                if direction == Direction::Wrap
                    && lock_is_found_from_cwd
                    && sets_cwd(config, &server.name)
                {
                    warning(&format!(
                        "{} sets \"cwd\", and the guard looks for mcp.lock from there; if the lock is elsewhere, wrap again with --lock PATH",
                        server.name
                    ));
                }
            }
            Outcome::Remote if direction == Direction::Wrap => note(&format!(
                "{name} is a remote server: the client connects to it, so it is left as it is"
            )),
            Outcome::NoCommand => warning(&format!(
                "{} launches mcp-lock guard with no command after \"--\"; left as it is",
                server.name
            )),
            Outcome::Remote | Outcome::Unchanged => {}
        }
    }
}

fn sets_cwd(config: &Config, name: &str) -> bool {
    config.specs.iter().any(|s| {
        s.name == name && matches!(&s.transport, TransportSpec::Stdio { cwd: Some(_), .. })
    })
}

fn nothing_to_do(config: &Config, rewrite: &Rewrite, direction: Direction) {
    let already = rewrite
        .servers
        .iter()
        .filter(|s| s.outcome == Outcome::Unchanged)
        .count();
    let why = match direction {
        Direction::Wrap if already == 1 => {
            "its stdio server already launches through the guard".into()
        }
        Direction::Wrap if already > 1 => {
            format!("its {already} stdio servers already launch through the guard")
        }
        Direction::Wrap => "no stdio servers".into(),
        Direction::Unwrap => "no wrapped servers".into(),
    };
    status(
        "Unchanged",
        AnsiColor::Green,
        &format!("{}: nothing to do, {why}", config.shown),
    );
}

/// The backup first (wrap: `backup_text`, the config with no server wrapped), then
/// the config, each replaced atomically with the config's permissions.
fn write(
    config: &Config,
    root: &Path,
    rewrite: &Rewrite,
    backup_text: Option<&str>,
) -> anyhow::Result<()> {
    use std::os::unix::fs::PermissionsExt;
    let mode = std::fs::metadata(&config.path)
        .map(|m| m.permissions().mode())
        .unwrap_or(0o644);
    let backup = wrap::backup_path(&config.path);
    let shown_backup = format!("{}.mcp-lock.bak", config.shown);
    if let Some(text) = backup_text {
        files::replace(&backup, root, text.as_bytes(), mode)
            .with_context(|| format!("cannot write the backup {shown_backup}"))?;
    }
    let wrapping = backup_text.is_some();
    // Remote entries are in the sidecar before the config names it, and leave it
    // only once the config has them back.
    if wrapping && !rewrite.remote_moved.is_empty() {
        write_sidecar(config, root, rewrite, mode, true)?;
    }
    // A symlinked config (dotfiles) keeps its link: the file it points at changes.
    files::replace(&config.path, root, rewrite.text.as_bytes(), mode)
        .with_context(|| format!("cannot write {}", config.shown))?;
    if !wrapping && !rewrite.remote_moved.is_empty() {
        write_sidecar(config, root, rewrite, mode, false)?;
    }
    if rewrite.restored_backup {
        std::fs::remove_file(&backup)
            .with_context(|| format!("cannot remove {shown_backup} after restoring it"))?;
    }
    Ok(())
}

/// Wrap adds the moved entries to the sidecar (an entry of the same name is
/// replaced); unwrap takes the restored ones out, and the file when none is left.
fn write_sidecar(
    config: &Config,
    root: &Path,
    rewrite: &Rewrite,
    mode: u32,
    wrapping: bool,
) -> anyhow::Result<()> {
    let path = wrap::remote_sidecar_path(&config.path);
    let shown = format!("{}.mcp-lock.remote.json", config.shown);
    let existing = match files::read_regular_text(&path, wrap::MAX_SIDECAR_BYTES) {
        Ok(text) => wrap::sidecar_entries(&text, &shown)?,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Vec::new(),
        Err(e) => return Err(anyhow::anyhow!("cannot read {shown}: {e}")),
    };
    let moved: Vec<&str> = rewrite
        .remote_moved
        .iter()
        .map(|(n, _)| n.as_str())
        .collect();
    let mut entries: Vec<(String, String)> = existing
        .into_iter()
        .filter(|(n, _)| !moved.contains(&n.as_str()))
        .collect();
    if wrapping {
        entries.extend(rewrite.remote_moved.iter().cloned());
    }
    if entries.is_empty() {
        if path.exists() {
            std::fs::remove_file(&path).with_context(|| format!("cannot remove {shown}"))?;
        }
        return Ok(());
    }
    files::replace(
        &path,
        root,
        wrap::sidecar_text(&entries).as_bytes(),
        mode & 0o666,
    )
    .with_context(|| format!("cannot write {shown}"))
}

fn summarize(config: &Config, rewrite: &Rewrite, direction: Direction, dry: bool) {
    let count = rewrite.changed();
    let servers = if count == 1 { "server" } else { "servers" };
    let file = &config.shown;
    let backup = format!("{file}.mcp-lock.bak");
    match (direction, dry) {
        (Direction::Wrap, true) => status(
            "Would wrap",
            AnsiColor::Yellow,
            &format!("{count} {servers} in {file} (dry run: nothing written)"),
        ),
        (Direction::Wrap, false) => status(
            "Wrapped",
            AnsiColor::Green,
            &format!("{count} {servers} in {file} (backup: {backup})"),
        ),
        (Direction::Unwrap, true) => {
            let how = if rewrite.restored_backup {
                format!("by restoring {backup}")
            } else {
                "in place".into()
            };
            status(
                "Would unwrap",
                AnsiColor::Yellow,
                &format!("{count} {servers} in {file} {how} (dry run: nothing written)"),
            )
        }
        (Direction::Unwrap, false) if rewrite.restored_backup => status(
            "Unwrapped",
            AnsiColor::Green,
            &format!("{count} {servers} in {file} (restored {backup} byte for byte)"),
        ),
        (Direction::Unwrap, false) => {
            status(
                "Unwrapped",
                AnsiColor::Green,
                &format!("{count} {servers} in {file} (in place)"),
            );
            if wrap::backup_path(&config.path).exists() {
                note(&format!(
                    "{file} changed since it was wrapped, so it is not the backup; {backup} still holds the config from before wrap"
                ));
            }
        }
    }
}

/// The changed lines, unified-diff style, on stdout.
fn print_diff(shown: &str, old: &str, new: &str) {
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
    let diff = similar::TextDiff::from_lines(old, new);
    let mut text = format!("--- {shown}\n+++ {shown}\n");
    for hunk in diff.unified_diff().context_radius(0).iter_hunks() {
        text.push_str(&format!("{}\n", hunk.header()));
        for change in hunk.iter_changes() {
            let (sign, style) = match change.tag() {
                similar::ChangeTag::Delete => ('-', red),
                similar::ChangeTag::Insert => ('+', green),
                similar::ChangeTag::Equal => (' ', Style::new()),
            };
            let line = change.value().trim_end_matches(['\n', '\r']);
            text.push_str(&format!(
                "{style}{sign}{}{style:#}\n",
                escape_for_terminal(line)
            ));
        }
    }
    out(&text);
}

/// A launch as one readable line: arguments with spaces (or nothing) quoted.
fn command_line(command: &str, args: &[String]) -> String {
    std::iter::once(command)
        .chain(args.iter().map(String::as_str))
        .map(|word| {
            if word.is_empty() || word.contains(char::is_whitespace) {
                format!("'{word}'")
            } else {
                word.to_string()
            }
        })
        .map(|word| escape_for_terminal(&word))
        .collect::<Vec<_>>()
        .join(" ")
}

fn note(message: &str) {
    if super::quiet() {
        return;
    }
    let style = Style::new().bold();
    err_out(&format!("{style}note{style:#}: {message}\n"));
}
