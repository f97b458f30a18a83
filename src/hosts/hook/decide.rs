//! Deciding a tool call, and the JSON answer each Claude Code hook gives.

use super::*;

/// What the hook answers to one tool call.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Decision {
    /// Not an MCP tool, or a call the lock allows: an answer with no decision, Claude
    /// Code decides.
    PassThrough,
    /// Refused, with the reason Claude shows the model.
    Deny(String),
}

pub(super) const NOTHING_RAN: &str = "The call was not made; nothing was run.";

/// Judges one `PreToolUse` call from the session's record; `configured` are the
/// project's server names now (a name Claude Code gives two servers' tools alike is
/// refused whichever of them is pinned).
///
/// `rules` are the tool rules read now, the ones the record was made under (the
/// caller compares their stamps): a call that breaks an argument rule of Claude
/// Code's is refused naming the rule.
pub fn decide(
    record: &SessionRecord,
    configured: &[String],
    tool_name: &str,
    arguments: &Value,
    rules: &crate::verdict::rules::ToolRules,
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
    if let Some(why) = standing.denied.get(tool) {
        return Decision::Deny(format!(
            "mcp-lock refused {} (TOOL_DENIED): {why}. {NOTHING_RAN} Do not retry it: use another tool, or ask the user to change the rule if this tool is needed.",
            esc(tool_name)
        ));
    }
    if let Some(why) = standing.drifted.get(tool) {
        return Decision::Deny(format!(
            "mcp-lock refused {}: {why}. {NOTHING_RAN} Its other pinned tools may still be used; do not retry this tool in this session until the user has approved the change.",
            esc(tool_name)
        ));
    }
    let Some(pinned) = standing.tools.get(tool).filter(|t| !t.ambiguous) else {
        return Decision::Deny(format!(
            "mcp-lock refused {}: MCP server {} has no tool {} pinned in {}, so it was never approved. {NOTHING_RAN} Use one of its pinned tools, or ask the user to review and approve it with `{} update {}`.",
            esc(tool_name),
            esc(&server),
            esc(tool),
            lock_name(standing.personal),
            command(standing.personal),
            esc(&server)
        ));
    };
    let name = &pinned.name;
    let schema = Json::parse(pinned.input_schema.get()).unwrap_or(Json::Null);
    match ArgumentSchema::compile(&schema).check(arguments) {
        ArgumentCheck::Valid => match rules.check_arguments(PROFILE, &server, name, arguments) {
            None => Decision::PassThrough,
            Some(denial) => Decision::Deny(format!(
                "mcp-lock refused {} (ARGUMENT_DENIED): its arguments break the project's argument rule {}. {NOTHING_RAN} Call it again with a value the rule allows, or ask the user to change the rule.",
                esc(tool_name),
                esc(&denial.to_string())
            )),
        },
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

pub(super) fn capitalized(text: &str) -> String {
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_uppercase().chain(chars).collect(),
        None => String::new(),
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
    let passed = record
        .servers
        .values()
        .filter(|s| s.refused.is_none() && s.notice.is_none())
        .count();
    let against = if record.servers.values().any(|s| s.personal) {
        "mcp.lock and your own lock of its personal servers"
    } else {
        "mcp.lock"
    };
    let mut context = format!(
        "mcp-lock verified this project's MCP servers against {against} at session start: {passed} of {} match what was approved.",
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
    let partly: Vec<&String> = record
        .servers
        .values()
        .filter_map(|s| s.notice.as_ref())
        .collect();
    for why in &partly {
        context.push(' ');
        context.push_str(why);
        context.push('.');
    }
    if !partly.is_empty() {
        context.push_str(" Calls to those changed tools will be refused this session; tell the user rather than working around it.");
    }
    let denied: Vec<&String> = record
        .servers
        .values()
        .flat_map(|s| s.denied.values())
        .collect();
    for why in &denied {
        context.push(' ');
        context.push_str(&capitalized(why));
        context.push('.');
    }
    if !denied.is_empty() {
        context.push_str(" Calls to those tools will be refused this session; do not try to reach them another way.");
    }
    if !deferred.is_empty() {
        let names: Vec<String> = deferred.iter().map(|n| esc(n)).collect();
        context.push_str(&format!(
            " Not verified yet, as Claude Code has not been told to start them unasked: {}; calls to their tools are refused until a session start at which they are approved.",
            names.join(", ")
        ));
    }
    context.push_str(if refused.is_empty() && partly.is_empty() {
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
    let mut message = Vec::new();
    if !refused.is_empty() {
        let lines: Vec<String> = refused.iter().map(|r| format!("  {r}")).collect();
        message.push(format!(
            "mcp-lock: {} of {} MCP servers did not verify against their lock; their tools are refused this session:\n{}",
            refused.len(),
            record.servers.len(),
            lines.join("\n")
        ));
    }
    if !partly.is_empty() {
        let lines: Vec<String> = partly.iter().map(|r| format!("  {r}")).collect();
        message.push(format!(
            "mcp-lock: {} MCP servers changed some of their tools; those tools are refused this session, the others served:\n{}",
            partly.len(),
            lines.join("\n")
        ));
    }
    if !message.is_empty() {
        out["systemMessage"] = Value::String(message.join("\n"));
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
