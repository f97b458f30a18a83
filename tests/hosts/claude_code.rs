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
