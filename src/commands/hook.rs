//! `mcp-lock hook claude-code`: Claude Code's hook input in, its hook output out. The
//! judging lives in the library ([`mcp_lock::hosts::hook`]); this reads (bounded, within a
//! deadline), verifies at SessionStart only, keeps the record, and answers every
//! failure to judge an MCP call with a deny.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_lock::verdict::exit_codes::ExitCode;
use std::collections::BTreeMap;

use mcp_lock::hosts::hook::reuse::{Material, Reuse};
use mcp_lock::hosts::hook::{
    HookInput, LockStamp, MAX_INPUT_BYTES, PROFILE, ServerRecord, SessionRecord, SessionRules,
    decide, failure_output, glance, pre_tool_use_output, record_path, session_start_output,
};
use mcp_lock::hosts::startup::Verifier;
use serde_json::Value;

use super::Workspace;
use crate::cli::HookHost;

mod verify;
use verify::*;

/// How long a PreToolUse (and the reading of any input) may take before the hook
/// answers deny: well under the 120 s the plugin gives it, after which Claude Code
/// would let the call through.
const PRE_TOOL_USE_DEADLINE: Duration = Duration::from_secs(20);
/// How long SessionStart's verification may take (the plugin gives it 180 s): past
/// it the session's MCP calls are refused until a session start that finishes.
const SESSION_START_DEADLINE: Duration = Duration::from_secs(120);
/// Shortens both deadlines (milliseconds); it cannot lengthen them.
const DEADLINE_VARIABLE: &str = "MCP_LOCK_HOOK_DEADLINE_MS";

fn deadline(default: Duration) -> Duration {
    std::env::var(DEADLINE_VARIABLE)
        .ok()
        .and_then(|v| v.trim().parse::<u64>().ok())
        .map_or(default, |ms| default.min(Duration::from_millis(ms)))
}

pub async fn run(ws: &Workspace, host: HookHost) -> anyhow::Result<ExitCode> {
    let HookHost::ClaudeCode = host;
    let started = Instant::now();
    let mut stuck = false;
    let (input, seen) = match read_input(deadline(PRE_TOOL_USE_DEADLINE)).await {
        Ok(bytes) => match std::str::from_utf8(&bytes)
            .map_err(|e| format!("the hook input is not UTF-8: {e}"))
            .and_then(HookInput::parse)
        {
            Ok(input) => {
                let seen = input.seen();
                (Ok(input), seen)
            }
            Err(e) => (Err(e), glance(&bytes)),
        },
        Err((e, bytes)) => (Err(e), glance(&bytes)),
    };
    let answer = match input {
        Ok(input) => {
            let limit = if input.hook_event_name == "SessionStart" {
                deadline(SESSION_START_DEADLINE)
            } else {
                deadline(PRE_TOOL_USE_DEADLINE)
            };
            let left = limit.saturating_sub(started.elapsed());
            let setting = Setting::of(ws);
            // Its own task: a panic in it is a failure to judge (answered), not a
            // crash that Claude Code would let the call through on.
            let mut task = tokio::spawn(async move { answer(&setting, &input).await });
            match tokio::time::timeout(left, &mut task).await {
                Ok(Ok(answer)) => answer,
                Ok(Err(e)) if e.is_panic() => {
                    Err("mcp-lock failed while judging it (a bug: please report it)".to_string())
                }
                Ok(Err(e)) => Err(format!("mcp-lock's check did not finish: {e}")),
                Err(_) => {
                    // Dropping it ends what it started (servers are killed on drop),
                    // given a moment; one stuck in a blocking read (a FIFO) must not
                    // hold the answer, so the process exits once it is written.
                    task.abort();
                    if tokio::time::timeout(Duration::from_secs(2), &mut task)
                        .await
                        .is_err()
                    {
                        stuck = true;
                    }
                    Err(format!(
                        "mcp-lock did not finish within {} s, its limit for this hook",
                        limit.as_secs_f64()
                    ))
                }
            }
        }
        Err(e) => Err(e),
    };
    let output = match answer {
        Ok(output) => output,
        Err(error) => {
            super::error(&error);
            failure_output(&seen, &error)
        }
    };
    if let Some(output) = output {
        super::out(&format!("{output}\n"));
    }
    if stuck {
        use std::io::Write;
        let _ = std::io::stdout().flush();
        // The runtime would wait for the stuck task at its shutdown; servers it
        // started are ended by their watchdog when this process ends.
        std::process::exit(0);
    }
    Ok(ExitCode::Success)
}

/// The answer when the command failed before it could start (no current directory,
/// ...): the input is read and an MCP call denied with `error`.
pub async fn unjudged(error: &str) {
    let bytes = match read_input(deadline(PRE_TOOL_USE_DEADLINE)).await {
        Ok(bytes) | Err((_, bytes)) => bytes,
    };
    let seen = match std::str::from_utf8(&bytes)
        .map_err(|e| e.to_string())
        .and_then(HookInput::parse)
    {
        Ok(input) => input.seen(),
        Err(_) => glance(&bytes),
    };
    if let Some(output) = failure_output(&seen, error) {
        super::out(&format!("{output}\n"));
    }
}

/// Reads standard input whole, up to [`MAX_INPUT_BYTES`], within `limit`. On an error,
/// an input over the limit or the deadline, what was read so far comes back with it.
async fn read_input(limit: Duration) -> Result<Vec<u8>, (String, Vec<u8>)> {
    let read = Arc::new(Mutex::new(Vec::new()));
    let (done, finished) = tokio::sync::oneshot::channel();
    let buffer = Arc::clone(&read);
    // A thread of its own: a writer that never closes the pipe must not hold the
    // answer past the deadline (the thread ends with the process).
    std::thread::spawn(move || {
        let mut stdin = std::io::stdin().lock();
        let mut chunk = vec![0u8; 64 * 1024];
        let result = loop {
            match stdin.read(&mut chunk) {
                Ok(0) => break Ok(()),
                Ok(n) => {
                    let mut all = buffer.lock().unwrap_or_else(|e| e.into_inner());
                    let room = (MAX_INPUT_BYTES as usize + 1).saturating_sub(all.len());
                    all.extend_from_slice(&chunk[..n.min(room)]);
                    if all.len() as u64 > MAX_INPUT_BYTES {
                        break Err(format!(
                            "the hook input is larger than {} MiB",
                            MAX_INPUT_BYTES / (1024 * 1024)
                        ));
                    }
                }
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => break Err(format!("cannot read the hook input: {e}")),
            }
        };
        let _ = done.send(result);
    });
    let outcome = tokio::time::timeout(limit, finished).await;
    let bytes = std::mem::take(&mut *read.lock().unwrap_or_else(|e| e.into_inner()));
    match outcome {
        Ok(Ok(Ok(()))) => Ok(bytes),
        Ok(Ok(Err(e))) => Err((e, bytes)),
        Ok(Err(_)) => Err(("the hook input could not be read".to_string(), bytes)),
        Err(_) => Err((
            format!(
                "the hook input was not read whole within {} s",
                limit.as_secs_f64()
            ),
            bytes,
        )),
    }
}

/// What the hook needs of the workspace, owned (its judging runs as a task).
struct Setting {
    project_dir: PathBuf,
    lock_path: PathBuf,
    config: Option<PathBuf>,
    policy_path: Option<PathBuf>,
}

impl Setting {
    fn of(ws: &Workspace) -> Setting {
        Setting {
            project_dir: ws.project_dir.clone(),
            lock_path: ws.lock_path.clone(),
            config: ws.configs.first().cloned(),
            policy_path: ws.policy_path.clone(),
        }
    }
}

/// Where the hook's project, lock and records are.
struct Place {
    project: PathBuf,
    lock: PathBuf,
    records: PathBuf,
}

impl Place {
    /// Claude Code's project directory (`CLAUDE_PROJECT_DIR`), else the current one;
    /// `--lock` when given.
    fn of(ws: &Setting) -> Result<Place, String> {
        let project = std::env::var_os("CLAUDE_PROJECT_DIR")
            .filter(|v| !v.is_empty())
            .map(PathBuf::from)
            .unwrap_or_else(|| ws.project_dir.clone());
        let lock = if ws.lock_path == ws.project_dir.join("mcp.lock") {
            project.join("mcp.lock")
        } else {
            ws.lock_path.clone()
        };
        let records = mcp_lock::hosts::hook::cache_dir(&|v| std::env::var(v).ok()).ok_or(
            "neither XDG_CACHE_HOME nor HOME is set: no place to keep the session's verification",
        )?;
        Ok(Place {
            project,
            lock,
            records,
        })
    }

    /// Whether the lock is there: `Ok(false)` when nothing is at its path, an error for
    /// a link to nothing or anything that cannot be looked at.
    fn lock_present(&self) -> Result<bool, String> {
        present(&self.lock)
    }

    /// Whether the project has a server config of its own to read (`--config`, or one
    /// found in it).
    fn project_config_present(&self, ws: &Setting) -> bool {
        ws.config.is_some() || !mcp_lock::servers::config::discover(&self.project).is_empty()
    }
}

async fn answer(ws: &Setting, input: &HookInput) -> Result<Option<Value>, String> {
    if input.hook_event_name.is_empty() {
        // Not knowable as anything but a tool call: an MCP one is refused.
        return Err("the hook input names no hook_event_name".to_string());
    }
    if input.hook_event_name == "PreToolUse" {
        let Some(tool) = input.tool_name.as_deref() else {
            return Err("the PreToolUse input names no tool".to_string());
        };
        // Most calls are not MCP tools: answered before anything is read.
        if !tool.starts_with("mcp__") {
            return Ok(Some(pre_tool_use_output(
                &mcp_lock::hosts::hook::Decision::PassThrough,
            )));
        }
    }
    let place = Place::of(ws)?;
    let path = record_path(&place.records, &input.session_id);
    let user_lock = super::user_lock_path(&place.project).ok();
    let user_lock_here = match &user_lock {
        Some(lock) => present(lock)?,
        None => false,
    };
    match input.hook_event_name.as_str() {
        "SessionStart" => {
            let project_lock_here = place.lock_present()?;
            if !project_lock_here && !user_lock_here {
                // A project with no lock (nor a lock of the user's own for it) is left
                // alone; a record of an earlier start of this session (resumed) is no
                // longer a lock's.
                let _ = std::fs::remove_file(&path);
                return Ok(None);
            }
            let project_stamp = if project_lock_here {
                Some(stamp_of(&place.lock)?)
            } else {
                None
            };
            let user_stamp = match (&user_lock, user_lock_here) {
                (Some(lock), true) => Some(stamp_of(lock)?),
                _ => None,
            };
            // Kept first: until the verification below finishes (or if it runs out of
            // time), the session's MCP calls are refused.
            keep(
                &place,
                &path,
                &SessionRecord::pending(
                    project_stamp.clone(),
                    user_stamp.clone(),
                    "the verification of this project's MCP servers at session start did not finish".to_string(),
                ),
            )?;
            let lookup = |v: &str| std::env::var(v).ok();
            // The tool rules, read once for the whole start: every record below is
            // judged under them, and calls are refused once they read otherwise.
            let rules = session_rules(ws, &place)?;
            // The user's own servers, by Claude Code's scope: local > project > user
            // for a name defined twice.
            let (user_scope, local_scope) =
                mcp_lock::servers::config::claude_user_server_scopes(&place.project, &lookup)
                    .map_err(|e| e.to_string())?;
            let project = if project_lock_here || place.project_config_present(ws) {
                Some(ws_config(ws, &place)?)
            } else {
                None
            };
            let project_names: Vec<String> = project
                .iter()
                .flat_map(|p| p.servers.iter())
                .filter(|s| {
                    s.hosts
                        .contains(&mcp_lock::servers::config::Host::ClaudeCode)
                })
                .map(|s| s.name.clone())
                .collect();
            // Only what Claude Code itself starts unasked: a project server it would
            // ask about first is refused until a session start at which it is
            // approved. The user's own servers are never asked about.
            let approval = mcp_lock::servers::config::ClaudeApproval::read(&place.project, &lookup);
            let (now, deferred): (Vec<String>, Vec<String>) = project_names
                .iter()
                .filter(|n| !local_scope.contains(n))
                .cloned()
                .partition(|name| approval.approves(name));
            let mut personal: Vec<String> = local_scope
                .iter()
                .chain(
                    user_scope
                        .iter()
                        .filter(|n| !project_names.contains(n) && !local_scope.contains(n)),
                )
                .cloned()
                .collect();
            personal.sort();
            personal.dedup();
            let mut reuse = Reuse::open(&place.project, &place.records);
            let mut record = SessionRecord::empty(project_stamp.clone());
            record.rules = Some(rules.stamp.clone());
            let mut lock_names = Vec::new();
            record.user_lock = user_stamp.clone();
            if !now.is_empty() {
                let group = Group {
                    personal: false,
                    lock: place.lock.clone(),
                    stamp: project_stamp.clone(),
                    config: ws.config.clone(),
                    policy: ws.policy_path.clone(),
                };
                record.servers.extend(
                    verify(
                        &group,
                        &place,
                        &rules,
                        &now,
                        reuse.as_mut(),
                        &mut lock_names,
                    )
                    .await?,
                );
            }
            if !personal.is_empty() {
                let group = Group {
                    personal: true,
                    lock: user_lock.clone().unwrap_or_default(),
                    stamp: user_stamp.clone(),
                    config: Some(claude_json(&lookup).ok_or(
                        "HOME is not set: the user's own Claude Code servers cannot be read",
                    )?),
                    // The project's own mcp-lock.toml applies to its personal servers,
                    // as it does for `mcp-lock --user claude-code verify`.
                    policy: ws.policy_path.clone().or_else(|| {
                        let policy = place.project.join(mcp_lock::verdict::policy::POLICY_FILE);
                        policy.is_file().then_some(policy)
                    }),
                };
                record.servers.extend(
                    verify(
                        &group,
                        &place,
                        &rules,
                        &personal,
                        reuse.as_mut(),
                        &mut Vec::new(),
                    )
                    .await?,
                );
            }
            if let Some(mut reuse) = reuse {
                let ids: Vec<String> = now
                    .iter()
                    .map(|n| reuse_id(false, n))
                    .chain(personal.iter().map(|n| reuse_id(true, n)))
                    .chain([false, true].map(|p| format!("lock:{}", reuse_id(p, ""))))
                    .collect();
                reuse.retain(&ids);
                if let Err(e) = reuse.save() {
                    super::warning(&format!("{e}; the next session start verifies again"));
                }
            }
            let lock = match (project_lock_here, now.is_empty()) {
                // Read by the verification already.
                (true, false) => lock_names,
                (true, true) => mcp_lock::records::lock::read_lock(&place.lock)
                    .map_err(|e| e.to_string())?
                    .map(|l| l.servers.keys().cloned().collect::<Vec<_>>())
                    .unwrap_or_default(),
                (false, _) => Vec::new(),
            };
            // The servers Claude Code has from the user's own ~/.claude.json too: a
            // tool name one of them shares with another server is refused.
            record.names = lock
                .into_iter()
                .chain(project_names.iter().cloned())
                .chain(user_scope)
                .chain(local_scope)
                .collect();
            record.names.sort();
            record.names.dedup();
            keep(&place, &path, &record)?;
            remove_old_records(&place.records, &path);
            Ok(Some(session_start_output(&record, &deferred)))
        }
        "PreToolUse" => {
            let tool = input.tool_name.as_deref().unwrap_or_default();
            let arguments = input.tool_input.clone().unwrap_or(Value::Null);
            let record = read_record(&path);
            let project_lock_here = place.lock_present()?;
            let Some(record) = record else {
                if !project_lock_here && !user_lock_here {
                    // A project with no lock is left alone.
                    return Ok(Some(pre_tool_use_output(
                        &mcp_lock::hosts::hook::Decision::PassThrough,
                    )));
                }
                // PreToolUse never verifies (that can take minutes: a server's start, a
                // closure's install): it judges from what SessionStart found.
                return Err("this session's MCP servers were not verified when it started (the hook did not run at its start, or its record is gone); restart Claude Code, or run /compact or /clear, so they are verified".to_string());
            };
            still_holds(record.lock.as_ref(), project_lock_here, &place.lock)?;
            if let Some(user_lock) = &user_lock {
                still_holds(record.user_lock.as_ref(), user_lock_here, user_lock)?;
            }
            // Read again for the argument rules; the tools they deny were marked at the
            // start, so rules that read otherwise now refuse every call until a start
            // judges under them (a rule removed mid-session widens nothing).
            let rules = session_rules(ws, &place)?;
            // (A record still pending refuses every call of its own accord.)
            if record.pending.is_none() && record.rules.as_deref() != Some(rules.stamp.as_str()) {
                return Err("the tool rules (mcp-lock.toml, or your own mcp-lock settings file) changed since this session's MCP servers were verified; restart Claude Code, or run /compact or /clear, so its tools are judged under them".to_string());
            }
            let configured: Vec<String> = if project_lock_here || place.project_config_present(ws) {
                ws_config(ws, &place)?
                    .servers
                    .iter()
                    .map(|s| s.name.clone())
                    .collect()
            } else {
                Vec::new()
            };
            Ok(Some(pre_tool_use_output(&decide(
                &record,
                &configured,
                tool,
                &arguments,
                &rules.policy.rules,
            ))))
        }
        "SessionEnd" => {
            let _ = std::fs::remove_file(&path);
            Ok(None)
        }
        _ => Ok(None),
    }
}

/// The tool rules of the session: the policy file (`--policy`, else beside the lock)
/// and the user's own file.
fn session_rules(ws: &Setting, place: &Place) -> Result<SessionRules, String> {
    let path = ws.policy_path.clone().unwrap_or_else(|| {
        mcp_lock::base::files::parent_of(&place.lock).join(mcp_lock::verdict::policy::POLICY_FILE)
    });
    let shown = path
        .strip_prefix(&place.project)
        .unwrap_or(&path)
        .display()
        .to_string();
    SessionRules::read(&path, &shown, ws.policy_path.is_some(), &|v| {
        std::env::var(v).ok()
    })
}

/// Whether a lock the record was made against still holds the same bytes: one
/// removed, changed or newly made since the session started is an error (its calls
/// are refused until a session start verifies against it).
fn still_holds(stamp: Option<&LockStamp>, here: bool, lock: &Path) -> Result<(), String> {
    match (stamp, here) {
        (Some(_), false) => Err(format!(
            "{} was removed during this session; a person must restore it",
            lock.display()
        )),
        (Some(stamp), true) if !stamp.holds(lock) => Err(format!(
            "{} changed since this session's MCP servers were verified; restart Claude Code, or run /compact or /clear, so they are verified against it",
            lock.display()
        )),
        (None, true) => Err(format!(
            "{} was made since this session's MCP servers were verified; restart Claude Code, or run /compact or /clear, so they are verified against it",
            lock.display()
        )),
        _ => Ok(()),
    }
}

/// Whether a path is there: `Ok(false)` when nothing is at it, an error for a link to
/// nothing or anything that cannot be looked at.
fn present(path: &Path) -> Result<bool, String> {
    match std::fs::symlink_metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(format!("cannot look at {}: {e}", path.display())),
        Ok(_) => match std::fs::metadata(path) {
            Ok(_) => Ok(true),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                "{} is a link to nothing; a person must restore the lock",
                path.display()
            )),
            Err(e) => Err(format!("cannot look at {}: {e}", path.display())),
        },
    }
}

fn claude_json(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    lookup("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".claude.json"))
}

fn ws_config(
    ws: &Setting,
    place: &Place,
) -> Result<mcp_lock::servers::config::ProjectConfig, String> {
    mcp_lock::servers::config::ProjectConfig::load(&place.project, ws.config.as_deref())
        .map_err(|e| e.to_string())
}

fn stamp_of(lock: &Path) -> Result<LockStamp, String> {
    LockStamp::of(lock).map_err(|e| format!("cannot read {}: {e}", lock.display()))
}

/// One lock's servers: the project's, or the user's own.
struct Group {
    personal: bool,
    lock: PathBuf,
    /// The lock as it was when the session started; `None`: there is none.
    stamp: Option<LockStamp>,
    config: Option<PathBuf>,
    policy: Option<PathBuf>,
}

fn reuse_id(personal: bool, name: &str) -> String {
    format!("{}:{name}", if personal { "personal" } else { "project" })
}

fn read_pinned(group: &Group) -> Result<mcp_lock::records::lock::Lockfile, String> {
    mcp_lock::records::lock::read_lock(&group.lock)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} disappeared while it was read", group.lock.display()))
}

/// What one server's verification depends on (see [`mcp_lock::hosts::hook::reuse`]), or
/// `None` when it must be verified at every start (what runs is not pinned by its
/// entry: a remote server, a package by tag or range, a launch not recognised).
fn material(
    group: &Group,
    stamp: &LockStamp,
    config: &mcp_lock::servers::config::ProjectConfig,
    spec: &mcp_lock::servers::config::ServerSpec,
    place: &Place,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<Material> {
    use mcp_lock::servers::config::Resolved;
    let resolved = spec.resolve_to_contact(&place.project, lookup).ok()?;
    let identity = match &resolved {
        Resolved::Stdio(stdio) => {
            mcp_lock::hosts::hook::reuse::launch_identity(&stdio.command, &stdio.args, &stdio.cwd)?
        }
        Resolved::Remote(_) => return None,
    };
    let mut m = Material::new();
    m.part(reuse_id(group.personal, &spec.name).as_bytes())
        .part(PROFILE.as_bytes())
        .part(stamp.sha256.as_bytes())
        .file(&mcp_lock::records::lock::closures::companion_path(
            &group.lock,
        ));
    match &group.policy {
        Some(policy) => m.file(policy),
        None => m.file(
            &mcp_lock::base::files::parent_of(&group.lock)
                .join(mcp_lock::verdict::policy::POLICY_FILE),
        ),
    };
    for file in &config.files {
        // ~/.claude.json holds much more than servers (history, costs): only its
        // servers part is keyed.
        if group.personal || file.file_name().is_some_and(|n| n == ".claude.json") {
            continue;
        }
        m.part(file.display().to_string().as_bytes()).file(file);
    }
    m.part(&claude_json_servers_part(&place.project, lookup));
    // Claude Code's settings files, which turn servers off and approve them.
    for settings in [
        place.project.join(".claude/settings.json"),
        place.project.join(".claude/settings.local.json"),
    ]
    .into_iter()
    .chain(lookup("HOME").map(|h| PathBuf::from(h).join(".claude/settings.json")))
    {
        m.file(&settings);
    }
    // The entry as it resolves (variables expanded: the seal keeps them unreadable).
    m.part(format!("{resolved:?}").as_bytes())
        .part(identity.as_bytes());
    Some(m)
}

/// The parts of `~/.claude.json` that define or turn off this project's servers:
/// its top-level `mcpServers`, and of this project's entry the servers and the lists
/// that disable or approve them.
fn claude_json_servers_part(project: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> Vec<u8> {
    const MAX: u64 = 64 * 1024 * 1024;
    let Some(path) = claude_json(lookup) else {
        return b"no home".to_vec();
    };
    let text = match mcp_lock::base::files::read_regular_text(&path, MAX) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return b"absent".to_vec(),
        Err(_) => return b"unreadable".to_vec(),
    };
    let Ok(root) = serde_json::from_str::<Value>(&text) else {
        return mcp_lock::contract::hash::sha256_hex(text.as_bytes()).into_bytes();
    };
    let key = mcp_lock::servers::config::project_key(project);
    let given = project.display().to_string();
    let entry = root
        .get("projects")
        .and_then(|p| p.get(&key).or_else(|| p.get(&given)));
    let pick = |name: &str| entry.and_then(|e| e.get(name)).cloned();
    serde_json::json!({
        "mcpServers": root.get("mcpServers"),
        "local": pick("mcpServers"),
        "disabledMcpServers": pick("disabledMcpServers"),
        "disabledMcpjsonServers": pick("disabledMcpjsonServers"),
        "enabledMcpjsonServers": pick("enabledMcpjsonServers"),
        "enableAllProjectMcpServers": pick("enableAllProjectMcpServers"),
    })
    .to_string()
    .into_bytes()
}
