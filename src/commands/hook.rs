//! `mcp-lock hook claude-code`: Claude Code's hook input in, its hook output out. The
//! judging lives in the library ([`mcp_lock::hook`]); this reads (bounded, within a
//! deadline), verifies at SessionStart only, keeps the record, and answers every
//! failure to judge an MCP call with a deny.

use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mcp_lock::exit_codes::ExitCode;
use mcp_lock::hook::{
    HookInput, LockStamp, MAX_INPUT_BYTES, PROFILE, SessionRecord, decide, failure_output, glance,
    pre_tool_use_output, record_path, session_start_output,
};
use mcp_lock::startup::Verifier;
use serde_json::Value;

use super::Workspace;
use crate::cli::HookHost;

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
        let records = mcp_lock::hook::cache_dir(&|v| std::env::var(v).ok()).ok_or(
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
        match std::fs::symlink_metadata(&self.lock) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(false),
            Err(e) => Err(format!("cannot look at {}: {e}", self.lock.display())),
            Ok(_) => match std::fs::metadata(&self.lock) {
                Ok(_) => Ok(true),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Err(format!(
                    "{} is a link to nothing; a person must restore the lock",
                    self.lock.display()
                )),
                Err(e) => Err(format!("cannot look at {}: {e}", self.lock.display())),
            },
        }
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
                &mcp_lock::hook::Decision::PassThrough,
            )));
        }
    }
    let place = Place::of(ws)?;
    let path = record_path(&place.records, &input.session_id);
    match input.hook_event_name.as_str() {
        "SessionStart" => {
            if !place.lock_present()? {
                // A project with no lock is left alone; a record of an earlier start
                // of this session (resumed) is no longer the lock's.
                let _ = std::fs::remove_file(&path);
                return Ok(None);
            }
            // Kept first: until the verification below finishes (or if it runs out of
            // time), the session's MCP calls are refused.
            keep(
                &place,
                &path,
                &SessionRecord::pending(
                    stamp(&place)?,
                    "the verification of this project's MCP servers at session start did not finish".to_string(),
                ),
            )?;
            // Only what Claude Code itself starts unasked: a server it would ask about
            // first is refused until a session start at which it is approved.
            let project = ws_config(ws, &place)?;
            let approval =
                mcp_lock::config::ClaudeApproval::read(&place.project, &|v| std::env::var(v).ok());
            let (now, deferred): (Vec<String>, Vec<String>) = project
                .servers
                .iter()
                .filter(|s| s.hosts.contains(&mcp_lock::config::Host::ClaudeCode))
                .map(|s| s.name.clone())
                .partition(|name| approval.approves(name));
            let mut record = if now.is_empty() {
                SessionRecord::empty(stamp(&place)?)
            } else {
                verify(ws, &place, &now).await?
            };
            let lock = mcp_lock::lock::read_lock(&place.lock)
                .map_err(|e| e.to_string())?
                .ok_or_else(|| format!("{} disappeared while it was read", place.lock.display()))?;
            // The servers Claude Code has from the user's own ~/.claude.json too: a
            // tool name one of them shares with a pinned server is refused.
            let personal = mcp_lock::config::claude_user_server_names(&place.project, &|v| {
                std::env::var(v).ok()
            })
            .map_err(|e| e.to_string())?;
            record.names = lock
                .servers
                .keys()
                .cloned()
                .chain(project.servers.iter().map(|s| s.name.clone()))
                .chain(personal)
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
            if !place.lock_present()? {
                return match record {
                    // Verified against a lock that is gone now: what was allowed a
                    // moment ago is not known to be allowed any more.
                    Some(_) => Err(format!(
                        "{} was removed during this session; a person must restore it",
                        place.lock.display()
                    )),
                    // A project with no lock is left alone.
                    None => Ok(Some(pre_tool_use_output(
                        &mcp_lock::hook::Decision::PassThrough,
                    ))),
                };
            }
            // PreToolUse never verifies (that can take minutes: a server's start, a
            // closure's install): it judges from what SessionStart found.
            let Some(record) = record else {
                return Err("this session's MCP servers were not verified when it started (the hook did not run at its start, or its record is gone); restart Claude Code, or run /compact or /clear, so they are verified".to_string());
            };
            if !record.lock.holds(&place.lock) {
                return Err(format!(
                    "{} changed since this session's MCP servers were verified; restart Claude Code, or run /compact or /clear, so they are verified against it",
                    place.lock.display()
                ));
            }
            let project = ws_config(ws, &place)?;
            let configured: Vec<String> = project.servers.iter().map(|s| s.name.clone()).collect();
            Ok(Some(pre_tool_use_output(&decide(
                &record,
                &configured,
                tool,
                &arguments,
            ))))
        }
        "SessionEnd" => {
            let _ = std::fs::remove_file(&path);
            Ok(None)
        }
        _ => Ok(None),
    }
}

fn ws_config(ws: &Setting, place: &Place) -> Result<mcp_lock::config::ProjectConfig, String> {
    mcp_lock::config::ProjectConfig::load(&place.project, ws.config.as_deref())
        .map_err(|e| e.to_string())
}

fn stamp(place: &Place) -> Result<LockStamp, String> {
    LockStamp::of(&place.lock).map_err(|e| format!("cannot read {}: {e}", place.lock.display()))
}

/// Verifies `servers` (at least one) as Claude Code's profile sees them.
async fn verify(ws: &Setting, place: &Place, servers: &[String]) -> Result<SessionRecord, String> {
    let stamp = stamp(place)?;
    let mut verifier = Verifier::new(&place.project)
        .lock(&place.lock)
        .client(PROFILE)
        .servers(servers.iter().cloned());
    if let Some(config) = &ws.config {
        verifier = verifier.config(config);
    }
    if let Some(policy) = &ws.policy_path {
        verifier = verifier.policy(policy);
    }
    let verification = verifier.verify().await.map_err(|e| e.to_string())?;
    let lock = mcp_lock::lock::read_lock(&place.lock)
        .map_err(|e| e.to_string())?
        .ok_or_else(|| format!("{} disappeared while it was read", place.lock.display()))?;
    Ok(SessionRecord::from_reports(
        &verification.reports,
        &lock,
        stamp,
    ))
}

fn read_record(path: &Path) -> Option<SessionRecord> {
    // A record holds one input schema per pinned tool; past this it is not ours.
    const MAX_RECORD_BYTES: u64 = 512 * 1024 * 1024;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return None;
    }
    serde_json::from_slice::<SessionRecord>(&bytes)
        .ok()
        .filter(|r| r.version == SessionRecord::VERSION)
}

/// Writes the record whole (a temporary file renamed over it) in a private directory
/// that no symlink leads out of.
fn keep(place: &Place, path: &Path, record: &SessionRecord) -> Result<(), String> {
    let root = mcp_lock::files::parent_of(&place.records);
    mcp_lock::files::create_dir_within(&place.records, &root, 0o700)
        .map_err(|e| format!("cannot create {}: {e}", place.records.display()))?;
    let bytes = serde_json::to_vec(record).expect("a record serializes");
    mcp_lock::files::replace(path, &place.records, &bytes, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Records of sessions that ended without a SessionEnd (a crash, a kill) are removed
/// after a week.
fn remove_old_records(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > week);
        if old && path != keep && path.extension().is_some_and(|e| e == "json") {
            let _ = std::fs::remove_file(path);
        }
    }
}
