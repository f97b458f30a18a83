//! Claude Code hooks (`mcp-lock hook claude-code`): the lock enforced on a Claude Code
//! session without touching its config. At `SessionStart` the project's servers are
//! verified once, as Claude Code's client profile sees them, and what was found is
//! kept for the session; at `PreToolUse` a call to `mcp__<server>__<tool>` is judged
//! from that record in milliseconds: refused when the lock does not pin the tool, when
//! its server failed the session's verification, or when its arguments do not fit the
//! pinned input schema. Allowed calls get no answer at all, so Claude Code's own
//! permission rules still apply: the hook only ever takes permission away.
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
    pub const VERSION: u32 = 1;

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
        }
    }

    /// A record of no server yet.
    pub fn empty(lock: LockStamp) -> Self {
        SessionRecord {
            version: SessionRecord::VERSION,
            lock,
            servers: BTreeMap::new(),
        }
    }

    /// Adds what a later verification of some servers found.
    pub fn merge(&mut self, other: SessionRecord) {
        self.lock = other.lock;
        self.servers.extend(other.servers);
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

/// Claude Code's name for an MCP server or tool inside `mcp__<server>__<tool>`.
pub fn normalize(name: &str) -> String {
    crate::config::tool_name_part(name)
}

/// The server a Claude Code tool name belongs to, among `servers`: the longest whose
/// normalized name prefixes it (server names may hold `__`), and the tool part.
pub fn split_tool_name<'a, I>(tool_name: &'a str, servers: I) -> Option<(String, &'a str)>
where
    I: IntoIterator<Item = &'a String>,
{
    let rest = tool_name.strip_prefix("mcp__")?;
    servers
        .into_iter()
        .filter_map(|server| {
            let tool = rest.strip_prefix(&normalize(server))?.strip_prefix("__")?;
            Some((server.clone(), tool))
        })
        .max_by_key(|(server, _)| server.len())
}

/// What the hook answers to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not an MCP tool, or a call the lock allows: no answer, Claude Code decides.
    PassThrough,
    /// Refused, with the reason Claude shows the model.
    Deny(String),
}

const NOTHING_RAN: &str = "The call was not made; nothing was run.";

/// Judges one `PreToolUse` call from the session's record.
pub fn decide(record: &SessionRecord, tool_name: &str, arguments: &Value) -> Decision {
    if !tool_name.starts_with("mcp__") {
        return Decision::PassThrough;
    }
    let Some((server, tool)) = split_tool_name(tool_name, record.servers.keys()) else {
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
    let standing = &record.servers[&server];
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

/// The `PreToolUse` answer for a decision: nothing for a pass, else a deny.
pub fn pre_tool_use_output(decision: &Decision) -> Option<Value> {
    match decision {
        Decision::PassThrough => None,
        Decision::Deny(reason) => Some(json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })),
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
            " Not verified yet, as Claude Code has not been told to start them unasked: {}; each is verified at its first tool call.",
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

/// The answer when the hook itself could not judge: a tool call to an MCP server is
/// refused (fail closed), anything else passes.
pub fn failure_output(input: Option<&HookInput>, error: &str) -> Option<Value> {
    let error = esc(error);
    match input.map(|i| (i.hook_event_name.as_str(), i.tool_name.as_deref())) {
        Some(("PreToolUse", Some(tool))) if tool.starts_with("mcp__") => {
            pre_tool_use_output(&Decision::Deny(format!(
                "mcp-lock could not check {} against mcp.lock: {error}. {NOTHING_RAN} Tell the user; they can run `mcp-lock verify` to see why.",
                esc(tool)
            )))
        }
        Some(("SessionStart", _)) => Some(json!({
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
            split_tool_name("mcp__fx__two__list", names.iter()),
            Some(("fx__two".to_string(), "list"))
        );
        assert_eq!(
            split_tool_name("mcp__fx__list", names.iter()),
            Some(("fx".to_string(), "list"))
        );
        assert_eq!(
            split_tool_name("mcp__my_server__x", names.iter()),
            Some(("my.server".to_string(), "x"))
        );
        assert_eq!(split_tool_name("Bash", names.iter()), None);
    }

    #[test]
    fn calls_are_passed_refused_or_checked_against_the_pinned_schema() {
        let r = record();
        assert_eq!(decide(&r, "Bash", &json!({})), Decision::PassThrough);
        assert_eq!(
            decide(&r, "mcp__fx__read_ticket", &json!({"id": "T-1"})),
            Decision::PassThrough
        );
        let Decision::Deny(why) = decide(&r, "mcp__fx__read_ticket", &json!({"id": 7})) else {
            panic!("invalid arguments pass")
        };
        assert!(why.contains("do not fit the input schema"), "{why}");
        let Decision::Deny(why) = decide(&r, "mcp__fx__rollback", &json!({})) else {
            panic!("an unpinned tool passes")
        };
        assert!(why.contains("no tool rollback pinned"), "{why}");
        let Decision::Deny(why) = decide(&r, "mcp__my_server__x", &json!({})) else {
            panic!("a refused server's tool passes")
        };
        assert!(why.contains("my.server changed"), "{why}");
        let Decision::Deny(why) = decide(&r, "mcp__other__x", &json!({})) else {
            panic!("an unknown server's tool passes")
        };
        assert!(why.contains("not one of this project's servers"), "{why}");
    }

    #[test]
    fn a_hook_that_cannot_judge_refuses_mcp_calls_and_passes_the_rest() {
        let input = |tool: &str| HookInput {
            session_id: "s".into(),
            hook_event_name: "PreToolUse".into(),
            cwd: None,
            source: None,
            tool_name: Some(tool.into()),
            tool_input: None,
        };
        assert!(failure_output(Some(&input("mcp__fx__x")), "boom").is_some());
        assert!(failure_output(Some(&input("Read")), "boom").is_none());
        assert!(failure_output(None, "boom").is_none());
    }
}
