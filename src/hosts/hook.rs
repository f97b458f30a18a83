//! Claude Code hooks (`mcp-lock hook claude-code`): the lock enforced on a Claude Code
//! session without touching its config. At `SessionStart` the servers Claude Code
//! starts for the project are verified once, as Claude Code's client profile sees
//! them: the project's against `mcp.lock`, the user's own (user and local scope in
//! `~/.claude.json`; local over project over user for a name defined twice) against
//! the user's lock of the project's personal servers. What was found is kept for the
//! session; a server whose inputs did not change since the last start is taken from
//! it ([`reuse`]). At `PreToolUse` a call to `mcp__<server>__<tool>` is judged from
//! that record in milliseconds: refused when no lock pins the tool, when the lock
//! refuses the tool (the guard's rule, [`ServerRecord::of`]: a drifted tool is
//! refused, its unchanged siblings served), when its server could not be judged, or
//! when its arguments do not fit the pinned input schema. The project's tool rules
//! (`[tools]` and `[profile.claude-code.tools]` of `mcp-lock.toml`, and the user's own
//! file, [`crate::verdict::rules`]) are read at `SessionStart`: a tool they deny to Claude Code
//! is marked in the record and its calls refused naming the rule, and a call that
//! breaks an argument rule is refused. `PreToolUse` reads the two rule files again
//! (bounded) for the argument rules, and refuses every MCP call when their bytes are
//! no longer the ones the session started with. Allowed calls get an answer with no
//! decision in it, so Claude Code's own permission rules still apply: the hook only
//! ever takes permission away.
//!
//! It fails closed. A payload that cannot be read, a lock that went missing, changed
//! or appeared, rule files that cannot be read or changed, a server of the user's that no lock pins, a server that could not be
//! listed, a session with no finished verification, a tool name that could belong to two
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

use crate::base::json::Json;
use crate::base::text::escape_for_terminal as esc;
use crate::contract::validate::{ArgumentCheck, ArgumentSchema};
use crate::records::lock::Lockfile;
use crate::verdict::drift::{ChangeKind, ServerReport, Verdict};

pub mod reuse;

mod decide;
pub use decide::*;

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
    /// The project's `mcp.lock` as verified; `None`: the project had none.
    pub lock: Option<LockStamp>,
    /// The user's own lock of this project's personal servers (`mcp-lock --user
    /// claude-code update`) as verified; `None`: there was none.
    #[serde(default)]
    pub user_lock: Option<LockStamp>,
    /// Per server Claude Code starts for the project (its own, and the user's user-
    /// and local-scope ones), by config name.
    pub servers: BTreeMap<String, ServerRecord>,
    /// Every server name the lock pinned and the project configured when the record
    /// was made, verified or not: a tool name two of them would give is refused.
    #[serde(default)]
    pub names: Vec<String>,
    /// Set while the session's verification has not finished (it is under way, or it
    /// ran out of time): why calls are refused meanwhile.
    #[serde(default)]
    pub pending: Option<String>,
    /// The stamp of the tool rules the session was judged under
    /// ([`SessionRules::stamp`]): rule files that read otherwise now refuse every MCP
    /// call.
    #[serde(default)]
    pub rules: Option<String>,
}

/// One server's standing for the session.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ServerRecord {
    /// Why all its calls are refused (it could not be listed, is not pinned, or its
    /// identity or package changed); `None`: its tools are judged one by one.
    pub refused: Option<String>,
    /// Its tools that may be called, by the name Claude Code gives them, with the
    /// input schema a call is checked against.
    pub tools: BTreeMap<String, PinnedTool>,
    /// Its tools the lock refuses (changed, added or removed in a way the policy
    /// fails), by the name Claude Code gives them, with why.
    #[serde(default)]
    pub drifted: BTreeMap<String, String>,
    /// What changed when some of its tools are refused and the rest are served.
    #[serde(default)]
    pub notice: Option<String>,
    /// The user's own server (user or local scope), pinned in the user's lock.
    #[serde(default)]
    pub personal: bool,
    /// Its tools the tool rules deny to Claude Code, by the name Claude Code gives
    /// them, with the rule and its file.
    #[serde(default)]
    pub denied: BTreeMap<String, String>,
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

impl PartialEq for PinnedTool {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
            && self.input_schema.get() == other.input_schema.get()
            && self.ambiguous == other.ambiguous
    }
}

impl SessionRecord {
    pub const VERSION: u32 = 4;

    /// The record of a verification of the project's servers against its lock, under
    /// `rules`.
    pub fn from_reports(
        reports: &[ServerReport],
        lock: &Lockfile,
        stamp: LockStamp,
        rules: &SessionRules,
    ) -> Self {
        let mut record = SessionRecord::empty(Some(stamp));
        record.rules = Some(rules.stamp.clone());
        for report in reports {
            record.servers.insert(
                report.name.clone(),
                ServerRecord::of(report, lock, false, &rules.policy),
            );
        }
        record
    }

    /// A record of no server yet.
    pub fn empty(lock: Option<LockStamp>) -> Self {
        SessionRecord {
            version: SessionRecord::VERSION,
            lock,
            user_lock: None,
            servers: BTreeMap::new(),
            names: Vec::new(),
            pending: None,
            rules: None,
        }
    }

    /// The record kept while a verification is under way: every MCP call is refused
    /// with `why` until it is replaced.
    pub fn pending(lock: Option<LockStamp>, user_lock: Option<LockStamp>, why: String) -> Self {
        SessionRecord {
            pending: Some(why),
            user_lock,
            ..SessionRecord::empty(lock)
        }
    }
}

impl ServerRecord {
    /// One server's standing from its verify report, judged tool by tool as the guard
    /// judges a listing ([`Policy::serve`] of each change, verify's own judgement
    /// after the policy): a tool whose change the policy fails is refused, a tool
    /// whose live definition the lock approves is served even when a sibling drifted.
    /// The whole server is refused only when its tools cannot be judged (it could not
    /// be listed whole), when the lock does not pin it, or when what runs changed in
    /// a way the policy fails (its identity, instructions or package): the guard
    /// refuses all its tools then too. `personal`: pinned in the user's own lock.
    ///
    /// The tools served are the ones pinned for Claude Code's profile (or, not pinned
    /// under it, under any profile), each checked against its pinned input schema; a
    /// change the policy lets through as the live definition is checked against the
    /// live schema, as the guard serves it.
    ///
    /// A tool the policy's tool rules deny to Claude Code ([`PROFILE`]) is marked
    /// `denied` with the rule, judged on the definition it would be served in (the
    /// pinned one, or the live one the policy lets through).
    pub fn of(
        report: &ServerReport,
        lock: &Lockfile,
        personal: bool,
        policy: &crate::verdict::policy::Policy,
    ) -> ServerRecord {
        let mut record = ServerRecord {
            refused: whole_refusal(report, personal),
            tools: BTreeMap::new(),
            drifted: BTreeMap::new(),
            notice: None,
            personal,
            denied: BTreeMap::new(),
        };
        if record.refused.is_some() {
            return record;
        }
        let Some(pinned) = lock.servers.get(&report.name) else {
            return record;
        };
        let view = match pinned.profiles.get(PROFILE) {
            Some(exact) => std::borrow::Cow::Borrowed(exact),
            None => std::borrow::Cow::Owned(pinned.union(PROFILE)),
        };
        let schema_of = |definition: &Json| {
            let text = definition
                .get("inputSchema")
                .and_then(|s| s.canonical().ok())
                .unwrap_or_else(|| "{}".into());
            serde_json::value::RawValue::from_string(text).expect("a canonical form is JSON")
        };
        let rules = &policy.rules;
        let denial = |name: &str, definition: &Json| {
            if rules.is_empty() {
                return None;
            }
            rules
                .decide_definition(
                    Some(PROFILE),
                    crate::contract::surface::Kind::Tool,
                    &report.name,
                    name,
                    Some(definition),
                )
                .map(|d| {
                format!(
                    "the project's tool rules do not allow Claude Code to use tool {} of MCP server {} ({}); only a person changing that rule makes it usable",
                    esc(name),
                    esc(&report.name),
                    esc(&d.to_string())
                )
            })
        };
        let mut denied: BTreeMap<String, Option<String>> = BTreeMap::new();
        for (name, tool) in &view.tools {
            denied.insert(name.clone(), denial(name, &tool.definition));
            record
                .tools
                .entry(normalize(name))
                .and_modify(|t: &mut PinnedTool| t.ambiguous = true)
                .or_insert(PinnedTool {
                    name: name.clone(),
                    input_schema: schema_of(&tool.definition),
                    ambiguous: false,
                });
        }
        let mut refused_parts = Vec::new();
        for change in report
            .changes
            .iter()
            .filter(|c| c.kind == crate::contract::surface::Kind::Tool)
        {
            let key = normalize(&change.tool);
            match policy.serve(change) {
                crate::verdict::policy::Serve::Hide => {
                    // Denied on the live definition approving it would serve, as the
                    // guard judges a hidden tool.
                    if let Some(live) = &change.live {
                        denied.insert(change.tool.clone(), denial(&change.tool, live));
                    }
                    record.tools.remove(&key);
                    let part = change_part(change);
                    refused_parts.push(part.clone());
                    record.drifted.insert(
                        key,
                        format!(
                            "MCP server {} has {part} since it was approved in {}; a person must {}",
                            esc(&report.name),
                            lock_name(personal),
                            fix(report, personal)
                        ),
                    );
                }
                crate::verdict::policy::Serve::Pinned => {}
                crate::verdict::policy::Serve::Live => {
                    if let Some(live) = &change.live {
                        denied.insert(change.tool.clone(), denial(&change.tool, live));
                        let served = PinnedTool {
                            name: change.tool.clone(),
                            input_schema: schema_of(live),
                            ambiguous: false,
                        };
                        record
                            .tools
                            .entry(key)
                            .and_modify(|t| {
                                if t.name == served.name {
                                    t.input_schema = served.input_schema.clone();
                                } else {
                                    t.ambiguous = true;
                                }
                            })
                            .or_insert(served);
                    }
                }
            }
        }
        for (name, why) in denied {
            let Some(why) = why else {
                continue;
            };
            let key = normalize(&name);
            record.tools.remove(&key);
            record.denied.insert(key, why);
        }
        if !refused_parts.is_empty() {
            record.notice = Some(format!(
                "MCP server {} changed since it was approved in {}: {}; these tools are refused and its other pinned tools are served; a person must {}",
                esc(&report.name),
                lock_name(personal),
                refused_parts.join("; "),
                fix(report, personal)
            ));
        }
        record
    }

    /// A server Claude Code starts for the project that no lock pins: refused, saying
    /// how to pin it.
    pub fn unpinned(name: &str, personal: bool) -> ServerRecord {
        let how = if personal {
            format!(
                "is one of your own Claude Code servers (user or local scope in ~/.claude.json) and is not pinned in your lock of this project's personal servers; a person must pin it with `mcp-lock --user claude-code update {}`",
                esc(name)
            )
        } else {
            format!(
                "is not pinned in mcp.lock; a person must pin it with `mcp-lock update {}`",
                esc(name)
            )
        };
        ServerRecord {
            refused: Some(format!("MCP server {} {how}", esc(name))),
            tools: BTreeMap::new(),
            drifted: BTreeMap::new(),
            notice: None,
            personal,
            denied: BTreeMap::new(),
        }
    }
}

/// The tool rules a session is held to: the project's policy file and the user's own
/// file, each read once (bounded) and parsed from the very bytes stamped.
#[derive(Debug, Clone)]
pub struct SessionRules {
    /// The policy of the project's file (the defaults when it has none) with the
    /// user's own rules added.
    pub policy: crate::verdict::policy::Policy,
    /// A SHA-256 over both files' bytes (or their absence): the same stamp, the same
    /// rules.
    pub stamp: String,
}

impl SessionRules {
    /// Reads the project's policy file at `policy_file` (shown as `shown`; a missing
    /// file is the defaults unless `required`) and the user's own file, looked up with
    /// `lookup`. An error says which file cannot be used: the caller refuses MCP calls.
    pub fn read(
        policy_file: &Path,
        shown: &str,
        required: bool,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<SessionRules, String> {
        let read =
            |path: &Path, limit: u64| match crate::base::files::read_regular_text(path, limit) {
                Ok(text) => Ok(Some(text)),
                Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
                Err(e) => Err(format!("cannot read {}: {e}", path.display())),
            };
        let project = read(policy_file, crate::verdict::policy::MAX_POLICY_BYTES)?;
        if project.is_none() && required {
            return Err(format!("policy file {shown} not found"));
        }
        let user_path = crate::records::audit::signing::user_settings_path(lookup);
        let user = match &user_path {
            Some(path) => crate::verdict::rules::read_user_file(path)?,
            None => None,
        };
        let mut hasher = Sha256::new();
        for text in [&project, &user] {
            match text {
                Some(text) => {
                    hasher.update(format!("{}:", text.len()));
                    hasher.update(text);
                }
                None => hasher.update("absent:"),
            }
        }
        let mut policy = match &project {
            Some(text) => {
                crate::verdict::policy::Policy::parse(text, shown).map_err(|e| e.to_string())?
            }
            None => crate::verdict::policy::Policy::default(),
        };
        if let (Some(text), Some(path)) = (&user, &user_path)
            && let Some(layer) =
                crate::verdict::rules::user_layer_from_text(text, &path.display().to_string())?
        {
            policy.rules.add_user_layer(layer);
        }
        Ok(SessionRules {
            policy,
            stamp: hex(&hasher.finalize()),
        })
    }
}

/// The lock a server is pinned in, as messages name it.
fn lock_name(personal: bool) -> &'static str {
    if personal {
        "your own lock of this project's personal servers"
    } else {
        "mcp.lock"
    }
}

/// `mcp-lock` as a person runs it for the server's lock.
fn command(personal: bool) -> &'static str {
    if personal {
        "mcp-lock --user claude-code"
    } else {
        "mcp-lock"
    }
}

/// One changed tool as a refusal names it.
fn change_part(c: &crate::verdict::drift::ToolChange) -> String {
    let class = c.class.map_or("changed", |k| k.as_str());
    match c.change {
        ChangeKind::Changed => format!("{} {} changed ({class})", c.kind.noun(), esc(&c.tool)),
        other => format!("{} {} {}", c.kind.noun(), esc(&c.tool), other.as_str()),
    }
}

/// What a person must do about a server that did not verify.
fn fix(report: &ServerReport, personal: bool) -> String {
    let name = esc(&report.name);
    let cmd = command(personal);
    if report.pinned && report.verdict != Verdict::Unverifiable {
        format!("review with `{cmd} diff {name}` and approve with `{cmd} update {name}`")
    } else if report.pinned {
        format!("check the server, then run `{cmd} verify {name}`")
    } else {
        format!("pin it with `{cmd} update {name}`")
    }
}

/// Why every call to a server is refused for the session, in words the model can act
/// on; `None` when its tools are judged one by one.
fn whole_refusal(report: &ServerReport, personal: bool) -> Option<String> {
    let name = esc(&report.name);
    let lock = lock_name(personal);
    let package_unverified = report
        .package
        .as_ref()
        .is_some_and(|p| p.status == crate::servers::package::PackageStatus::Unverifiable);
    let what = match report.verdict {
        // Not pinned: what it serves is never approved, reachable or not.
        _ if !report.pinned => format!("is not pinned in {lock}"),
        Verdict::Unverifiable | Verdict::Incomplete => format!(
            "could not be verified against {lock} at session start ({})",
            esc(report.error.as_deref().unwrap_or(report.verdict.as_str()))
        ),
        _ if package_unverified => format!(
            "could not be verified against {lock} at session start (its package: {})",
            esc(report
                .package
                .as_ref()
                .map_or("unverifiable", |p| p.message.as_str()))
        ),
        _ => {
            let mut parts: Vec<String> = report
                .server_changes
                .iter()
                .filter(|c| c.action == Some(crate::base::action::Action::Fail))
                .map(|c| format!("{} changed", c.field))
                .collect();
            if let Some(package) = &report.package
                && package.action == crate::base::action::Action::Fail
            {
                parts.push(format!("its package: {}", esc(&package.message)));
            }
            if parts.is_empty() {
                return None;
            }
            format!(
                "changed since it was approved in {lock}: {}",
                parts.join("; ")
            )
        }
    };
    Some(format!(
        "MCP server {name} {what}; a person must {}",
        fix(report, personal)
    ))
}

/// Claude Code's name for an MCP server or tool inside `mcp__<server>__<tool>`, as
/// its own code makes it (read in `@anthropic-ai/claude-code` 2.0.77's cli.js and
/// 2.1.332's bundled code: `name.replace(/[^a-zA-Z0-9_-]/g, "_")`, and for a name
/// starting `claude.ai ` runs of `_` made one and `_` trimmed at both ends; no length
/// cut). The regular expression has no `u` flag: a character outside the BMP is two
/// UTF-16 code units, so two `_`.
pub fn normalize(name: &str) -> String {
    let plain = crate::servers::config::tool_name_part(name);
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
mod tests;
