//! Gemini CLI (`gemini -p`): tools are `mcp_<server>_<tool>`; every schema gains a
//! `wait_for_previous` property; only the first page of `tools/list` is read (the
//! servers here list one page).

use serde_json::{Value, json};

use crate::support::{self, GEMINI_CLI, Presented, View};

struct GeminiCli;

impl View for GeminiCli {
    fn present(&self, body: &Value, server: &str) -> Vec<Presented> {
        let prefix = format!("mcp_{server}_");
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .flat_map(|t| {
                t["functionDeclarations"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
            })
            .filter(|f| f["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
            .map(|f| Presented {
                name: f["name"].as_str().unwrap().to_string(),
                description: f["description"].clone(),
                schema: if f.get("parametersJsonSchema").is_some() {
                    f["parametersJsonSchema"].clone()
                } else {
                    f["parameters"].clone()
                },
            })
            .collect()
    }

    fn expect(&self, server: &str, tool: &str, def: &Value) -> Presented {
        let mut schema = def["inputSchema"].clone();
        schema["properties"]["wait_for_previous"] = wait_for_previous();
        Presented {
            name: format!("mcp_{server}_{tool}"),
            description: def["description"].clone(),
            schema,
        }
    }

    fn call(&self, server: &str, tool: &str) -> (String, Option<String>) {
        (format!("mcp_{server}_{tool}"), None)
    }
}

/// The property Gemini CLI adds to every tool's schema.
fn wait_for_previous() -> Value {
    json!({
        "type": "boolean",
        "description": "Set to true to wait for all previously requested tools in this turn to complete before starting. Set to false (or omit) to run in parallel. Use true when this tool depends on the output of previous tools."
    })
}

#[test]
fn gemini_cli_sends_the_gemini_cli_profile_and_shows_the_pinned_tools() {
    support::handshake_and_tools(&GEMINI_CLI, &GeminiCli);
}

#[test]
fn gemini_cli_wrapped_shows_the_same_tools_gets_call_results_and_the_guard_matches_its_profile() {
    support::wrapped(&GEMINI_CLI, &GeminiCli);
}

#[test]
fn gemini_cli_wrapped_is_not_shown_a_tool_that_drifted_since_it_was_pinned() {
    support::drifted(&GEMINI_CLI, &GeminiCli);
}
