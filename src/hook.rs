//! Claude Code hooks (`mcp-lock hook claude-code`): the lock enforced on a Claude Code
//! session without touching its config. At `SessionStart` the project's servers are
//! verified once, as Claude Code's client profile sees them, and what was found is
//! kept for the session; at `PreToolUse` a call to `mcp__<server>__<tool>` is judged
//! from that record in milliseconds: refused when the lock does not pin the tool, when
//! its server failed the session's verification, or when its arguments do not fit the
//! pinned input schema. Allowed calls get an answer with no decision in it, so Claude
//! Code's own permission rules still apply: the hook only ever takes permission away.
//!
//! It fails closed. A payload that cannot be read, a lock that went missing, a
//! session with no finished verification, a tool name that could belong to two
//! servers, or a deadline passed: an MCP call is denied with the reason. PreToolUse
//! never starts, installs or verifies anything: that is SessionStart's work.
//!
//! Hook input and output follow Claude Code's documented hook JSON: the input's
//! `session_id`, `hook_event_name`, `tool_name` and `tool_input`; the output's
//! `hookSpecificOutput` with `additionalContext` (SessionStart) or
//! `permissionDecision: "deny"` and `permissionDecisionReason` (PreToolUse), and
//! `systemMessage` for the user.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use sha2::{Digest, Sha256};

use crate::drift::{ChangeKind, ServerReport, Verdict};
use crate::exit_codes::ExitCode;
use crate::json::Json;
use crate::lock::Lockfile;
use crate::text::escape_for_terminal as esc;
use crate::validate::{ArgumentCheck, ArgumentSchema};

/// The client profile Claude Code's sessions are verified under.
pub const PROFILE: &str = "claude-code";

/// The largest hook input read (a call's arguments can carry a file's content).
pub const MAX_INPUT_BYTES: u64 = 64 * 1024 * 1024;

/// What Claude Code sends a hook, the members mcp-lock reads.
#[derive(Debug, Clone, Deserialize)]
pub struct HookInput {
    #[serde(default)]
    pub session_id: String,
    #[serde(default)]
    pub hook_event_name: String,
    #[serde(default)]
    pub cwd: Option<PathBuf>,
    #[serde(default)]
    pub source: Option<String>,
    #[serde(default)]
    pub tool_name: Option<String>,
    #[serde(default)]
    pub tool_input: Option<Value>,
}

impl HookInput {
    pub fn parse(text: &str) -> Result<HookInput, String> {
        serde_json::from_str(text)
            .map_err(|e| format!("the hook input is not Claude Code's hook JSON: {e}"))
    }

    /// What the hook can tell of this input when it cannot judge it.
    pub fn seen(&self) -> Seen {
        Seen {
            event: Some(self.hook_event_name.clone()).filter(|e| !e.is_empty()),
            tool: match self.tool_name.as_deref() {
                Some(t) if t.starts_with("mcp__") => SeenTool::Mcp(t.to_string()),
                Some(_) => SeenTool::NotMcp,
                None => SeenTool::Unknown,
            },
        }
    }
}

/// What the hook knows of an input it cannot judge: enough to refuse an MCP call and
/// leave every other tool alone.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// `hook_event_name`, when one value of it was read.
    pub event: Option<String>,
    pub tool: SeenTool,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SeenTool {
    /// An MCP tool (`mcp__...`), by its name.
    Mcp(String),
    /// A tool known not to be an MCP tool.
    NotMcp,
    /// No tool name could be read: not knowable as a non-MCP tool.
    Unknown,
}

/// The longest `tool_name` or `hook_event_name` value the raw scan reads.
const MAX_GLANCED_VALUE: usize = 4096;

/// Reads the event and the tool name out of hook input that is not JSON serde can
/// parse (nested too deep, a lone surrogate, cut at the size limit, not UTF-8): every
/// `"tool_name"` and `"hook_event_name"` member found in the raw bytes, wherever it
/// is. A tool is `NotMcp` only when every `tool_name` read is a plain name that does
/// not start with `mcp__`; a name with an escape in it, one cut short, or none at all
/// leaves it `Unknown`. Bounded: one pass over the bytes, values read up to 4 KiB.
pub fn glance(bytes: &[u8]) -> Seen {
    let events = member_values(bytes, b"\"hook_event_name\"");
    let tools = member_values(bytes, b"\"tool_name\"");
    let mut distinct: Vec<&Option<String>> = Vec::new();
    for e in &events {
        if !distinct.contains(&e) {
            distinct.push(e);
        }
    }
    let event = match distinct.as_slice() {
        [Some(one)] => Some(one.clone()),
        _ => None,
    };
    let tool = if let Some(mcp) = tools.iter().flatten().find(|t| t.starts_with("mcp__")) {
        SeenTool::Mcp(mcp.clone())
    } else if !tools.is_empty() && tools.iter().all(Option::is_some) {
        SeenTool::NotMcp
    } else {
        SeenTool::Unknown
    };
    Seen { event, tool }
}

/// The string value after each occurrence of `key` followed by `:`; `None` for one
/// that is not a plain string (an escape, no closing quote within the bound).
fn member_values(bytes: &[u8], key: &[u8]) -> Vec<Option<String>> {
    let is_space = |b: u8| matches!(b, b' ' | b'\t' | b'\n' | b'\r');
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = find(&bytes[from..], key) {
        let mut i = from + at + key.len();
        from = i;
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if bytes.get(i) != Some(&b':') {
            continue;
        }
        i += 1;
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        if bytes.get(i) != Some(&b'"') {
            found.push(None);
            continue;
        }
        let start = i + 1;
        let end = bytes[start..]
            .iter()
            .take(MAX_GLANCED_VALUE + 1)
            .position(|&b| b == b'"' || b == b'\\');
        found.push(match end {
            Some(n) if bytes[start + n] == b'"' => std::str::from_utf8(&bytes[start..start + n])
                .ok()
                .map(str::to_string),
            _ => None,
        });
    }
    found
}

/// Where `needle` (which starts with `"`) first is in `haystack`: each `"` tried.
fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    let mut from = 0;
    while let Some(at) = haystack[from..].iter().position(|&b| b == needle[0]) {
        if haystack[from + at..].starts_with(needle) {
            return Some(from + at);
        }
        from += at + 1;
    }
    None
}

/// The lock file as it was when a record was made: a different size or time means
/// its bytes are hashed again, and a different hash means the record is stale.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockStamp {
    pub len: u64,
    pub modified_ns: u128,
    pub sha256: String,
}

impl LockStamp {
    pub fn of(path: &Path) -> std::io::Result<LockStamp> {
        let mut file = std::fs::File::open(path)?;
        let meta = file.metadata()?;
        // Hashed as it is read: a lock can be large, and nothing of it is kept.
        let mut hasher = Sha256::new();
        std::io::copy(&mut file, &mut hasher)?;
        Ok(LockStamp {
            len: meta.len(),
            modified_ns: modified_ns(&meta),
            sha256: hex(&hasher.finalize()),
        })
    }

    /// Whether the file at `path` still holds the bytes this stamp was made from.
    pub fn holds(&self, path: &Path) -> bool {
        match std::fs::metadata(path) {
            Ok(meta) if meta.len() == self.len && modified_ns(&meta) == self.modified_ns => true,
            Ok(_) => LockStamp::of(path).is_ok_and(|now| now.sha256 == self.sha256),
            Err(_) => false,
        }
    }
}

fn modified_ns(meta: &std::fs::Metadata) -> u128 {
    meta.modified()
        .ok()
        .and_then(|t| t.duration_since(std::time::UNIX_EPOCH).ok())
        .map_or(0, |d| d.as_nanos())
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// What a session's verification found, kept for its tool calls.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct SessionRecord {
    pub version: u32,
    pub lock: LockStamp,
    /// Per server of the project, by config name.
    pub servers: BTreeMap<String, ServerRecord>,
    /// Every server name the lock pinned and the project configured when the record
    /// was made, verified or not: a tool name two of them would give is refused.
    #[serde(default)]
    pub names: Vec<String>,
    /// Set while the session's verification has not finished (it is under way, or it
    /// ran out of time): why calls are refused meanwhile.
    #[serde(default)]
    pub pending: Option<String>,
}

/// One server's standing for the session.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Why its calls are refused; `None`: its verification passed.
    pub refused: Option<String>,
    /// Its pinned tools when it passed, by the name Claude Code gives them.
    pub tools: BTreeMap<String, PinnedTool>,
}

/// A pinned tool as a call is checked against it. The schema is kept as text, parsed
/// only for a call to this tool: reading a record costs little however many tools
/// the lock pins.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct PinnedTool {
    pub name: String,
    pub input_schema: Box<serde_json::value::RawValue>,
    /// Two pinned tools that Claude Code names alike: which one a call means is not
    /// known, so neither is called.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub ambiguous: bool,
}

impl SessionRecord {
    pub const VERSION: u32 = 2;

    /// The record of a verification: each report judged as `verify` judges it (a
    /// server passes when its exit code alone would be 0), and each passing server's
    /// pinned tools, as approved for Claude Code's profile (or, not pinned under it,
    /// for any profile).
    pub fn from_reports(reports: &[ServerReport], lock: &Lockfile, stamp: LockStamp) -> Self {
        let mut servers = BTreeMap::new();
        for report in reports {
            let refused = refusal(report);
            let mut tools = BTreeMap::new();
            if refused.is_none()
                && let Some(pinned) = lock.servers.get(&report.name)
            {
                let view = match pinned.profiles.get(PROFILE) {
                    Some(exact) => std::borrow::Cow::Borrowed(exact),
                    None => std::borrow::Cow::Owned(pinned.union(PROFILE)),
                };
                for (name, tool) in &view.tools {
                    let text = tool
                        .definition
                        .get("inputSchema")
                        .and_then(|s| s.canonical().ok())
                        .unwrap_or_else(|| "{}".into());
                    let input_schema = serde_json::value::RawValue::from_string(text)
                        .expect("a canonical form is JSON");
                    tools
                        .entry(normalize(name))
                        .and_modify(|t: &mut PinnedTool| t.ambiguous = true)
                        .or_insert(PinnedTool {
                            name: name.clone(),
                            input_schema,
                            ambiguous: false,
                        });
                }
            }
            servers.insert(report.name.clone(), ServerRecord { refused, tools });
        }
        SessionRecord {
            version: SessionRecord::VERSION,
            lock: stamp,
            servers,
            names: Vec::new(),
            pending: None,
        }
    }

    /// A record of no server yet.
    pub fn empty(lock: LockStamp) -> Self {
        SessionRecord {
            version: SessionRecord::VERSION,
            lock,
            servers: BTreeMap::new(),
            names: Vec::new(),
            pending: None,
        }
    }

    /// The record kept while a verification is under way: every MCP call is refused
    /// with `why` until it is replaced.
    pub fn pending(lock: LockStamp, why: String) -> Self {
        SessionRecord {
            pending: Some(why),
            ..SessionRecord::empty(lock)
        }
    }
}

/// Why a server's calls are refused for the session, in words the model can act on;
/// `None` when its verification passed.
fn refusal(report: &ServerReport) -> Option<String> {
    if ExitCode::for_reports(std::slice::from_ref(report)) == ExitCode::Success {
        return None;
    }
    let name = esc(&report.name);
    let what = match report.verdict {
        Verdict::Unverifiable | Verdict::Incomplete => format!(
            "could not be verified against mcp.lock at session start ({})",
            esc(report.error.as_deref().unwrap_or(report.verdict.as_str()))
        ),
        _ if !report.pinned => "is not pinned in mcp.lock".to_string(),
        _ => {
            let mut parts: Vec<String> = report
                .changes
                .iter()
                .filter(|c| c.action == crate::action::Action::Fail)
                .map(|c| {
                    let class = c.class.map_or("changed", |k| k.as_str());
                    match c.change {
                        ChangeKind::Changed => {
                            format!("{} {} changed ({class})", c.kind.noun(), esc(&c.tool))
                        }
                        other => format!("{} {} {}", c.kind.noun(), esc(&c.tool), other.as_str()),
                    }
                })
                .collect();
            parts.extend(
                report
                    .server_changes
                    .iter()
                    .filter(|c| c.action == Some(crate::action::Action::Fail))
                    .map(|c| format!("{} changed", c.field)),
            );
            if let Some(package) = &report.package
                && package.action == crate::action::Action::Fail
            {
                parts.push(format!("its package: {}", esc(&package.message)));
            }
            format!(
                "changed since it was approved in mcp.lock: {}",
                if parts.is_empty() {
                    report.verdict.as_str().to_string()
                } else {
                    parts.join("; ")
                }
            )
        }
    };
    let fix = if report.pinned && report.verdict != Verdict::Unverifiable {
        format!("review with `mcp-lock diff {name}` and approve with `mcp-lock update {name}`")
    } else if report.pinned {
        format!("check the server, then run `mcp-lock verify {name}`")
    } else {
        format!("pin it with `mcp-lock update {name}`")
    };
    Some(format!("MCP server {name} {what}; a person must {fix}"))
}

/// Claude Code's name for an MCP server or tool inside `mcp__<server>__<tool>`, as
/// its own code makes it (read in `@anthropic-ai/claude-code` 2.0.77's cli.js and
/// 2.1.332's bundled code: `name.replace(/[^a-zA-Z0-9_-]/g, "_")`, and for a name
/// starting `claude.ai ` runs of `_` made one and `_` trimmed at both ends; no length
/// cut). The regular expression has no `u` flag: a character outside the BMP is two
/// UTF-16 code units, so two `_`.
pub fn normalize(name: &str) -> String {
    let plain = crate::config::tool_name_part(name);
    if !name.starts_with("claude.ai ") {
        return plain;
    }
    let mut collapsed = String::with_capacity(plain.len());
    for c in plain.chars() {
        if !(c == '_' && collapsed.ends_with('_')) {
            collapsed.push(c);
        }
    }
    let collapsed = collapsed.strip_prefix('_').unwrap_or(&collapsed);
    collapsed.strip_suffix('_').unwrap_or(collapsed).to_string()
}

/// Every server among `servers` a Claude Code tool name could belong to (its
/// normalized name then `__` prefixes the part after `mcp__`; server names may hold
/// `__`), with the tool part for each. More than one: the name is ambiguous.
pub fn servers_of<'a, 'b, I>(tool_name: &'a str, servers: I) -> Vec<(String, &'a str)>
where
    I: IntoIterator<Item = &'b String>,
{
    let Some(rest) = tool_name.strip_prefix("mcp__") else {
        return Vec::new();
    };
    let mut found: Vec<(String, &'a str)> = Vec::new();
    for server in servers {
        if found.iter().any(|(s, _)| s == server) {
            continue;
        }
        if let Some(tool) = rest
            .strip_prefix(&normalize(server))
            .and_then(|t| t.strip_prefix("__"))
        {
            found.push((server.clone(), tool));
        }
    }
    found
}

/// What the hook answers to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not an MCP tool, or a call the lock allows: an answer with no decision, Claude
    /// Code decides.
    PassThrough,
    /// Refused, with the reason Claude shows the model.
    Deny(String),
}

const NOTHING_RAN: &str = "The call was not made; nothing was run.";

/// Judges one `PreToolUse` call from the session's record; `configured` are the
/// project's server names now (a name Claude Code gives two servers' tools alike is
/// refused whichever of them is pinned).
pub fn decide(
    record: &SessionRecord,
    configured: &[String],
    tool_name: &str,
    arguments: &Value,
) -> Decision {
    if !tool_name.starts_with("mcp__") {
        return Decision::PassThrough;
    }
    if let Some(why) = &record.pending {
        return Decision::Deny(format!(
            "mcp-lock refused {}: {why}. {NOTHING_RAN} Tell the user; its MCP servers are verified when a session starts (restart Claude Code, or run /compact or /clear).",
            esc(tool_name)
        ));
    }
    let names = record
        .servers
        .keys()
        .chain(record.names.iter())
        .chain(configured.iter());
    let owners = servers_of(tool_name, names);
    if owners.len() > 1 {
        let listed: Vec<String> = owners.iter().map(|(s, _)| esc(s)).collect();
        return Decision::Deny(format!(
            "mcp-lock refused {}: Claude Code gives this name to the tools of more than one MCP server of this project ({}), so which server it would call is not known. {NOTHING_RAN} Ask the user to rename one of these servers so that their names differ in letters, digits, `-` and `_`, and pin it with `mcp-lock update`.",
            esc(tool_name),
            listed.join(", ")
        ));
    }
    let Some((server, tool)) = owners.into_iter().next() else {
        return Decision::Deny(format!(
            "mcp-lock refused {}: its MCP server is not one of this project's servers pinned in mcp.lock ({}). {NOTHING_RAN} Ask the user to add the server to the project's config and pin it with `mcp-lock update`.",
            esc(tool_name),
            record
                .servers
                .keys()
                .map(|s| esc(s))
                .collect::<Vec<_>>()
                .join(", ")
        ));
    };
    let Some(standing) = record.servers.get(&server) else {
        return Decision::Deny(format!(
            "mcp-lock refused {}: MCP server {} was not verified against mcp.lock when this session started (Claude Code had not been told to start it then), and mcp-lock does not start or verify a server during a tool call. {NOTHING_RAN} Tell the user: once Claude Code starts the server unasked, it is verified at the next session start (restart Claude Code, or run /compact or /clear).",
            esc(tool_name),
            esc(&server)
        ));
    };
    if let Some(why) = &standing.refused {
        return Decision::Deny(format!(
            "mcp-lock refused {}: {why}. {NOTHING_RAN} Do not retry this server's tools in this session until the user has approved the change.",
            esc(tool_name)
        ));
    }
    let Some(pinned) = standing.tools.get(tool).filter(|t| !t.ambiguous) else {
        return Decision::Deny(format!(
            "mcp-lock refused {}: MCP server {} has no tool {} pinned in mcp.lock, so it was never approved. {NOTHING_RAN} Use one of its pinned tools, or ask the user to review and approve it with `mcp-lock update {}`.",
            esc(tool_name),
            esc(&server),
            esc(tool),
            esc(&server)
        ));
    };
    let name = &pinned.name;
    let schema = Json::parse(pinned.input_schema.get()).unwrap_or(Json::Null);
    match ArgumentSchema::compile(&schema).check(arguments) {
        ArgumentCheck::Valid => Decision::PassThrough,
        ArgumentCheck::Invalid(violations) => {
            let listed: Vec<String> = violations
                .iter()
                .map(|v| {
                    let at = if v.path.is_empty() {
                        "(arguments)"
                    } else {
                        &v.path
                    };
                    format!("{}: {}", esc(at), esc(&v.message))
                })
                .collect();
            Decision::Deny(format!(
                "mcp-lock refused {}: the arguments do not fit the input schema of {} as approved in mcp.lock ({}). {NOTHING_RAN} Fix the arguments to match the tool's schema and call it again.",
                esc(tool_name),
                esc(name),
                listed.join("; ")
            ))
        }
        ArgumentCheck::Unusable(why) => Decision::Deny(format!(
            "mcp-lock refused {}: the pinned input schema of {} cannot be used to check arguments ({}). {NOTHING_RAN} Ask the user to review the pin with `mcp-lock diff {}`.",
            esc(tool_name),
            esc(name),
            esc(&why),
            esc(&server)
        )),
    }
}

/// The `PreToolUse` answer for a decision: for a pass an answer with no decision in
/// it (Claude Code's own permissions decide; the plugin's script tells it from a hook
/// that said nothing), else a deny.
pub fn pre_tool_use_output(decision: &Decision) -> Value {
    match decision {
        Decision::PassThrough => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
            }
        }),
        Decision::Deny(reason) => json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        }),
    }
}

/// The `SessionStart` answer: what the model should know for the session, and for the
/// user a message when something was refused.
/// `deferred` names the servers left for their first call (not approved in Claude
/// Code's settings yet, so not started by anything but Claude Code).
pub fn session_start_output(record: &SessionRecord, deferred: &[String]) -> Value {
    let refused: Vec<&String> = record
        .servers
        .values()
        .filter_map(|s| s.refused.as_ref())
        .collect();
    let passed = record.servers.len() - refused.len();
    let mut context = format!(
        "mcp-lock verified this project's MCP servers against mcp.lock at session start: {passed} of {} match what was approved.",
        record.servers.len()
    );
    for why in &refused {
        context.push(' ');
        context.push_str(why);
        context.push('.');
    }
    if !refused.is_empty() {
        context.push_str(" Calls to the tools of these servers will be refused this session; tell the user rather than working around it.");
    }
    if !deferred.is_empty() {
        let names: Vec<String> = deferred.iter().map(|n| esc(n)).collect();
        context.push_str(&format!(
            " Not verified yet, as Claude Code has not been told to start them unasked: {}; calls to their tools are refused until a session start at which they are approved.",
            names.join(", ")
        ));
    }
    context.push_str(if refused.is_empty() {
        " Calls to MCP tools are checked against their pinned input schemas, and tools mcp.lock does not pin are refused."
    } else {
        " Calls to the other servers' tools are checked against their pinned input schemas, and tools mcp.lock does not pin are refused."
    });
    let mut out = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": context,
        }
    });
    if !refused.is_empty() {
        let lines: Vec<String> = refused.iter().map(|r| format!("  {r}")).collect();
        out["systemMessage"] = Value::String(format!(
            "mcp-lock: {} of {} MCP servers did not verify against mcp.lock; their tools are refused this session:\n{}",
            refused.len(),
            record.servers.len(),
            lines.join("\n")
        ));
    }
    out
}

/// The answer when the hook itself could not judge: a tool call that is, or may be,
/// to an MCP server is refused (fail closed); a tool known not to be an MCP tool is
/// left alone. An input whose event could not be read is taken for a PreToolUse.
pub fn failure_output(seen: &Seen, error: &str) -> Option<Value> {
    let error = esc(error);
    match seen.event.as_deref() {
        Some("PreToolUse") | None => match &seen.tool {
            SeenTool::NotMcp if seen.event.is_some() => {
                Some(pre_tool_use_output(&Decision::PassThrough))
            }
            SeenTool::NotMcp => None,
            SeenTool::Mcp(tool) => Some(pre_tool_use_output(&Decision::Deny(format!(
                "mcp-lock could not check {} against mcp.lock: {error}. {NOTHING_RAN} Tell the user; they can run `mcp-lock verify` to see why.",
                esc(tool)
            )))),
            SeenTool::Unknown => Some(pre_tool_use_output(&Decision::Deny(format!(
                "mcp-lock could not tell which tool this call is for, so it could not be checked against mcp.lock: {error}. {NOTHING_RAN} Tell the user; they can run `mcp-lock verify` to see why."
            )))),
        },
        Some("SessionStart") => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "SessionStart",
                "additionalContext": format!("mcp-lock could not verify this project's MCP servers at session start: {error}. Calls to MCP tools will be refused until it can."),
            },
            "systemMessage": format!("mcp-lock: could not verify the MCP servers: {error}"),
        })),
        _ => None,
    }
}

/// Where a session's record is kept: a file named by a hash of the session id, in
/// mcp-lock's cache directory.
pub fn record_path(cache_dir: &Path, session_id: &str) -> PathBuf {
    let digest = Sha256::digest(session_id.as_bytes());
    cache_dir.join(format!("{}.json", hex(&digest[..16])))
}

/// The directory records live in: `$XDG_CACHE_HOME/mcp-lock/claude-code`, else
/// `$HOME/.cache/mcp-lock/claude-code`.
pub fn cache_dir(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let base = lookup("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            lookup("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("mcp-lock").join("claude-code"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record() -> SessionRecord {
        let mut servers = BTreeMap::new();
        servers.insert(
            "fx".to_string(),
            ServerRecord {
                refused: None,
                tools: BTreeMap::from([(
                    "read_ticket".to_string(),
                    PinnedTool {
                        name: "read_ticket".into(),
                        input_schema: serde_json::value::RawValue::from_string(
                            r#"{"type":"object","properties":{"id":{"type":"string"}},"required":["id"]}"#.into(),
                        )
                        .unwrap(),
                        ambiguous: false,
                    },
                )]),
            },
        );
        servers.insert(
            "my.server".to_string(),
            ServerRecord {
                refused: Some("MCP server my.server changed".into()),
                tools: BTreeMap::new(),
            },
        );
        SessionRecord {
            version: SessionRecord::VERSION,
            lock: LockStamp {
                len: 0,
                modified_ns: 0,
                sha256: String::new(),
            },
            servers,
            names: Vec::new(),
            pending: None,
        }
    }

    #[test]
    fn server_names_are_matched_as_claude_code_normalizes_them() {
        let names = [
            "fx".to_string(),
            "fx__two".to_string(),
            "my.server".to_string(),
        ];
        assert_eq!(
            servers_of("mcp__fx__two__list", names.iter()),
            vec![
                ("fx".to_string(), "two__list"),
                ("fx__two".to_string(), "list")
            ]
        );
        assert_eq!(
            servers_of("mcp__fx__list", names.iter()),
            vec![("fx".to_string(), "list")]
        );
        assert_eq!(
            servers_of("mcp__my_server__x", names.iter()),
            vec![("my.server".to_string(), "x")]
        );
        assert!(servers_of("Bash", names.iter()).is_empty());
        // Claude Code's own rule: one `_` per UTF-16 code unit, and claude.ai
        // connectors' names collapsed.
        assert_eq!(normalize("a.b"), "a_b");
        assert_eq!(normalize("t\u{e9}st"), "t_st");
        assert_eq!(normalize("x\u{1F600}y"), "x__y");
        assert_eq!(
            normalize("claude.ai Google  Drive"),
            "claude_ai_Google_Drive"
        );
        assert_eq!(normalize(" lead-"), "_lead-");
    }

    #[test]
    fn the_raw_glance_tells_an_mcp_call_from_another_tool_or_cannot() {
        let seen = glance(br#"{"hook_event_name":"PreToolUse","tool_name":"mcp__fx__x","tool_input":{"a":"\ud800"}}"#);
        assert_eq!(seen.event.as_deref(), Some("PreToolUse"));
        assert_eq!(seen.tool, SeenTool::Mcp("mcp__fx__x".into()));
        let seen = glance(br#"{"hook_event_name" : "PreToolUse", "tool_name" : "Write", "tool_input":{"c":"\"tool_name\":\"mcp__a__b\""}}"#);
        assert_eq!(seen.tool, SeenTool::NotMcp);
        // A nested member of that name that says mcp__ wins; an escaped name or none
        // cannot be told.
        let seen = glance(br#"{"tool_name":"Write","tool_input":{"tool_name":"mcp__a__b"}}"#);
        assert_eq!(seen.tool, SeenTool::Mcp("mcp__a__b".into()));
        assert_eq!(
            glance(br#"{"tool_name":"mcp\u005f_a__b"}"#).tool,
            SeenTool::Unknown
        );
        assert_eq!(glance(br#"{"tool_input":{}}"#).tool, SeenTool::Unknown);
        assert_eq!(glance(br#"{"tool_name":"mcp__a"#).tool, SeenTool::Unknown);
        assert_eq!(
            glance(br#"{"tool_name":"Bash","tool_name":7}"#).tool,
            SeenTool::Unknown
        );
        assert_eq!(
            glance(br#"{"hook_event_name":"A","hook_event_name":"B"}"#).event,
            None
        );
    }

    #[test]
    fn calls_are_passed_refused_or_checked_against_the_pinned_schema() {
        let r = record();
        let decide = |tool: &str, arguments: &Value| decide(&r, &[], tool, arguments);
        assert_eq!(decide("Bash", &json!({})), Decision::PassThrough);
        assert_eq!(
            decide("mcp__fx__read_ticket", &json!({"id": "T-1"})),
            Decision::PassThrough
        );
        let Decision::Deny(why) = decide("mcp__fx__read_ticket", &json!({"id": 7})) else {
            panic!("invalid arguments pass")
        };
        assert!(why.contains("do not fit the input schema"), "{why}");
        let Decision::Deny(why) = decide("mcp__fx__rollback", &json!({})) else {
            panic!("an unpinned tool passes")
        };
        assert!(why.contains("no tool rollback pinned"), "{why}");
        let Decision::Deny(why) = decide("mcp__my_server__x", &json!({})) else {
            panic!("a refused server's tool passes")
        };
        assert!(why.contains("my.server changed"), "{why}");
        let Decision::Deny(why) = decide("mcp__other__x", &json!({})) else {
            panic!("an unknown server's tool passes")
        };
        assert!(why.contains("not one of this project's servers"), "{why}");
        // my_server is configured, not verified: my.server's tool names are its too.
        let Decision::Deny(why) = super::decide(
            &r,
            &["my_server".to_string()],
            "mcp__my_server__x",
            &json!({}),
        ) else {
            panic!("an ambiguous name passes")
        };
        assert!(why.contains("more than one MCP server"), "{why}");
    }

    #[test]
    fn a_hook_that_cannot_judge_refuses_mcp_calls_and_passes_the_rest() {
        let input = |tool: Option<&str>| HookInput {
            session_id: "s".into(),
            hook_event_name: "PreToolUse".into(),
            cwd: None,
            source: None,
            tool_name: tool.map(str::to_string),
            tool_input: None,
        };
        let denies = |out: Option<Value>| {
            out.is_some_and(|o| o["hookSpecificOutput"]["permissionDecision"] == "deny")
        };
        assert!(denies(failure_output(
            &input(Some("mcp__fx__x")).seen(),
            "boom"
        )));
        assert!(!denies(failure_output(&input(Some("Read")).seen(), "boom")));
        assert!(denies(failure_output(&input(None).seen(), "boom")));
        assert!(denies(failure_output(&glance(b"\xff"), "boom")));
    }
}
