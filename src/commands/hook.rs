//! `mcp-lock hook claude-code`: Claude Code's hook input in, its hook output out. The
//! judging lives in the library ([`mcp_lock::hook`]); this reads, verifies when the
//! session has no record yet, and keeps the record.

use std::io::Read;
use std::path::{Path, PathBuf};

use mcp_lock::exit_codes::ExitCode;
use mcp_lock::hook::{
    HookInput, LockStamp, MAX_INPUT_BYTES, PROFILE, SessionRecord, decide, failure_output,
    pre_tool_use_output, record_path, session_start_output, split_tool_name,
};
use mcp_lock::startup::Verifier;
use serde_json::Value;

use super::Workspace;
use crate::cli::HookHost;

pub async fn run(ws: &Workspace, host: HookHost) -> anyhow::Result<ExitCode> {
    let HookHost::ClaudeCode = host;
    let mut text = String::new();
    let read = std::io::stdin()
        .take(MAX_INPUT_BYTES + 1)
        .read_to_string(&mut text);
    let input = match read {
        Err(e) => Err(format!("cannot read the hook input: {e}")),
        Ok(n) if n as u64 > MAX_INPUT_BYTES => Err(format!(
            "the hook input is larger than {} MiB",
            MAX_INPUT_BYTES / (1024 * 1024)
        )),
        Ok(_) => HookInput::parse(&text),
    };
    let answer = match &input {
        Ok(input) => answer(ws, input).await,
        Err(e) => Err(e.clone()),
    };
    let output = match answer {
        Ok(output) => output,
        Err(error) => {
            super::error(&error);
            failure_output(input.as_ref().ok(), &error)
        }
    };
    if let Some(output) = output {
        super::out(&format!("{output}\n"));
    }
    Ok(ExitCode::Success)
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
    fn of(ws: &Workspace) -> Result<Place, String> {
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
}

async fn answer(ws: &Workspace, input: &HookInput) -> Result<Option<Value>, String> {
    // Most calls are not MCP tools: answered before anything is read.
    if input.hook_event_name == "PreToolUse"
        && !input
            .tool_name
            .as_deref()
            .is_some_and(|t| t.starts_with("mcp__"))
    {
        return Ok(None);
    }
    let place = Place::of(ws)?;
    if !place.lock.exists() {
        return Ok(None);
    }
    let path = record_path(&place.records, &input.session_id);
    match input.hook_event_name.as_str() {
        "SessionStart" => {
            // Only what Claude Code itself starts unasked: a server it would ask about
            // first is verified at its first call, once the person said yes.
            let project = ws_config(ws, &place)?;
            let approval =
                mcp_lock::config::ClaudeApproval::read(&place.project, &|v| std::env::var(v).ok());
            let (now, deferred): (Vec<String>, Vec<String>) = project
                .servers
                .iter()
                .filter(|s| s.hosts.contains(&mcp_lock::config::Host::ClaudeCode))
                .map(|s| s.name.clone())
                .partition(|name| approval.approves(name));
            let record = if now.is_empty() {
                SessionRecord::empty(stamp(&place)?)
            } else {
                verify(ws, &place, &now).await?
            };
            keep(&place, &path, &record)?;
            remove_old_records(&place.records, &path);
            Ok(Some(session_start_output(&record, &deferred)))
        }
        "PreToolUse" => {
            let tool = input.tool_name.as_deref().unwrap_or_default();
            let arguments = input.tool_input.clone().unwrap_or(Value::Null);
            let mut record = read_record(&path).filter(|r| r.lock.holds(&place.lock));
            let known = record
                .as_ref()
                .is_some_and(|r| split_tool_name(tool, r.servers.keys()).is_some());
            if !known {
                // No record for this session yet (the plugin came mid-session, the
                // lock was approved anew), or a server it has not verified: verify
                // that server now, once.
                let project = ws_config(ws, &place)?;
                let names: Vec<String> = project.servers.iter().map(|s| s.name.clone()).collect();
                if let Some((server, _)) = split_tool_name(tool, names.iter()) {
                    let found = verify(ws, &place, &[server]).await?;
                    match &mut record {
                        Some(r) => r.merge(found),
                        None => record = Some(found),
                    }
                    if let Some(r) = &record {
                        keep(&place, &path, r)?;
                    }
                }
            }
            let record = match record {
                Some(r) => r,
                None => SessionRecord::empty(stamp(&place)?),
            };
            Ok(pre_tool_use_output(&decide(&record, tool, &arguments)))
        }
        "SessionEnd" => {
            let _ = std::fs::remove_file(&path);
            Ok(None)
        }
        _ => Ok(None),
    }
}

fn ws_config(ws: &Workspace, place: &Place) -> Result<mcp_lock::config::ProjectConfig, String> {
    mcp_lock::config::ProjectConfig::load(&place.project, ws.configs.first().map(PathBuf::as_path))
        .map_err(|e| e.to_string())
}

fn stamp(place: &Place) -> Result<LockStamp, String> {
    LockStamp::of(&place.lock).map_err(|e| format!("cannot read {}: {e}", place.lock.display()))
}

/// Verifies `servers` (at least one) as Claude Code's profile sees them.
async fn verify(
    ws: &Workspace,
    place: &Place,
    servers: &[String],
) -> Result<SessionRecord, String> {
    let stamp = stamp(place)?;
    let mut verifier = Verifier::new(&place.project)
        .lock(&place.lock)
        .client(PROFILE)
        .servers(servers.iter().cloned());
    if let Some(config) = ws.configs.first() {
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
