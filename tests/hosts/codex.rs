//! Codex CLI (`codex exec`): one namespace tool per server (`mcp__<server>`, called as
//! `{namespace, name}`); `-` in tool names becomes `_`; schemas lose `default`,
//! `minimum`/`maximum`, `minLength`/`maxLength`, `format` and `$schema`.

use serde_json::Value;

use crate::support::{self, CODEX, Presented, View, strip_keys};

/// The schema keywords Codex drops before its model sees a tool.
const DROPPED: &[&str] = &[
    "default",
    "minimum",
    "maximum",
    "minLength",
    "maxLength",
    "format",
    "$schema",
];

struct Codex;

impl View for Codex {
    fn present(&self, body: &Value, server: &str) -> Vec<Presented> {
        let namespace = format!("mcp__{server}");
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .filter(|t| t["type"] == "namespace" && t["name"] == namespace.as_str())
            .flat_map(|t| t["tools"].as_array().cloned().unwrap_or_default())
            .map(|t| Presented {
                name: t["name"].as_str().unwrap().to_string(),
                description: t["description"].clone(),
                schema: t["parameters"].clone(),
            })
            .collect()
    }

    fn expect(&self, _server: &str, tool: &str, def: &Value) -> Presented {
        let mut schema = def["inputSchema"].clone();
        strip_keys(&mut schema, DROPPED);
        Presented {
            name: tool.replace('-', "_"),
            description: def["description"].clone(),
            schema,
        }
    }

    fn call(&self, server: &str, tool: &str) -> (String, Option<String>) {
        (tool.replace('-', "_"), Some(format!("mcp__{server}")))
    }
}

#[test]
fn codex_sends_the_codex_profile_and_shows_the_pinned_tools() {
    support::handshake_and_tools(&CODEX, &Codex);
}

#[test]
fn codex_wrapped_shows_the_same_tools_gets_call_results_and_the_guard_matches_its_profile() {
    support::wrapped(&CODEX, &Codex);
}

#[test]
fn codex_wrapped_is_not_shown_a_tool_that_drifted_since_it_was_pinned() {
    support::drifted(&CODEX, &Codex);
}

#[test]
fn codex_wrapped_is_not_shown_a_tool_the_rules_deny_it_that_claude_codes_section_allows() {
    support::tool_rules(&CODEX, &Codex);
}
