//! Claude Code (`claude -p`): tools are `mcp__<server>__<tool>`, description and
//! inputSchema as listed (ToolSearch deferral turned off with ENABLE_TOOL_SEARCH=false).

use serde_json::Value;

use crate::support::{self, CLAUDE_CODE, Presented, View};

struct ClaudeCode;

impl View for ClaudeCode {
    fn present(&self, body: &Value, server: &str) -> Vec<Presented> {
        let prefix = format!("mcp__{server}__");
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
            .map(|t| Presented {
                name: t["name"].as_str().unwrap().to_string(),
                description: t["description"].clone(),
                schema: t["input_schema"].clone(),
            })
            .collect()
    }

    fn expect(&self, server: &str, tool: &str, def: &Value) -> Presented {
        Presented {
            name: format!("mcp__{server}__{tool}"),
            description: def["description"].clone(),
            schema: def["inputSchema"].clone(),
        }
    }

    fn call(&self, server: &str, tool: &str) -> (String, Option<String>) {
        (format!("mcp__{server}__{tool}"), None)
    }
}

#[test]
fn claude_code_sends_the_claude_code_profile_and_shows_the_pinned_tools() {
    support::handshake_and_tools(&CLAUDE_CODE, &ClaudeCode);
}

#[test]
fn claude_code_wrapped_shows_the_same_tools_gets_call_results_and_the_guard_matches_its_profile() {
    support::wrapped(&CLAUDE_CODE, &ClaudeCode);
}

#[test]
fn claude_code_wrapped_is_not_shown_a_tool_that_drifted_since_it_was_pinned() {
    support::drifted(&CLAUDE_CODE, &ClaudeCode);
}

/// The mcp-lock plugin (plugins/claude-code), installed as README.md says: in a real
/// `claude -p` session a call to a pinned tool reaches the server; after the tool
/// drifts, the next session's call to it is refused by the plugin's PreToolUse hook,
/// and the model reads the hook's refusal, not a result.
#[test]
fn claude_code_with_the_plugin_allows_a_pinned_call_and_refuses_it_after_drift() {
    let setup = support::Setup::new(&CLAUDE_CODE);
    setup.install_claude_plugin();
    let final_text = "FINAL-ANSWER-FROM-STANDIN";
    setup.standin.script(
        "mcp__local__greet",
        None,
        serde_json::json!({"who": "Ada"}),
        final_text,
    );
    let output = setup.run_host();
    assert!(output.contains(final_text), "{output}");
    let text = support::all_text(&setup.standin.take_requests());
    assert!(
        text.contains(r#"called greet: {\"who\": \"Ada\"}"#),
        "the pinned call did not reach the server with the plugin on:\n{output}"
    );

    setup.drift_greet();
    let output = setup.run_host();
    assert!(output.contains(final_text), "{output}");
    let requests = setup.standin.take_requests();
    let text = support::all_text(&requests);
    assert!(
        !text.contains("called greet"),
        "the drifted tool was called with the plugin on"
    );
    let results = tool_results(&requests);
    assert!(
        results.iter().any(
            |r| r.starts_with("PreToolUse:mcp__local__greet hook error:") && r.contains("mcp-lock")
        ),
        "the model did not read the plugin's refusal; tool results it was sent: {results:?}"
    );
}

/// The text of every tool_result block the host sent its model.
fn tool_results(requests: &[Value]) -> Vec<String> {
    let mut out = Vec::new();
    for r in requests {
        for m in r["body"]["messages"].as_array().into_iter().flatten() {
            for block in m["content"].as_array().into_iter().flatten() {
                if block["type"] != "tool_result" {
                    continue;
                }
                match &block["content"] {
                    Value::String(s) => out.push(s.clone()),
                    Value::Array(parts) => out.extend(
                        parts
                            .iter()
                            .filter_map(|p| p["text"].as_str().map(str::to_string)),
                    ),
                    _ => {}
                }
            }
        }
    }
    out.sort();
    out.dedup();
    out
}

#[test]
fn claude_code_wrapped_is_shown_a_tool_its_own_rules_section_allows_where_the_projects_rules_deny_it()
 {
    support::tool_rules(&CLAUDE_CODE, &ClaudeCode);
}

/// The plugin in a real `claude -p` session under tool rules: a tool the project's
/// `[tools] deny` takes from Claude Code is refused by the plugin's PreToolUse hook
/// naming the rule, and the model reads that refusal; a sibling the rules leave alone
/// is still called.
#[test]
fn claude_code_with_the_plugin_is_refused_a_tool_the_rules_deny_it_naming_the_rule() {
    let setup = support::Setup::new(&CLAUDE_CODE);
    let policy = setup.project.path().join("mcp-lock.toml");
    let before = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        format!("{before}[tools]\ndeny = [\"local/greet\"]\n"),
    )
    .unwrap();
    setup.install_claude_plugin();
    let final_text = "FINAL-ANSWER-FROM-STANDIN";
    setup.standin.script(
        "mcp__local__greet",
        None,
        serde_json::json!({"who": "Ada"}),
        final_text,
    );
    let output = setup.run_host();
    assert!(output.contains(final_text), "{output}");
    let requests = setup.standin.take_requests();
    assert!(
        !support::all_text(&requests).contains("called greet"),
        "the denied tool was called with the plugin on:\n{output}"
    );
    let results = tool_results(&requests);
    assert!(
        results.iter().any(
            |r| r.starts_with("PreToolUse:mcp__local__greet hook error:")
                && r.contains("TOOL_DENIED")
                && r.contains(r#"[tools] deny "local/greet""#)
        ),
        "the model did not read the plugin's refusal naming the rule; tool results it was sent: {results:?}"
    );

    setup.standin.script(
        "mcp__local__add",
        None,
        serde_json::json!({"a": 2, "b": 3}),
        final_text,
    );
    let output = setup.run_host();
    assert!(output.contains(final_text), "{output}");
    let text = support::all_text(&setup.standin.take_requests());
    assert!(
        text.contains(r#"called add: {\"a\": 2, \"b\": 3}"#),
        "a tool the rules allow was not called with the plugin on:\n{output}"
    );
}
