//! opencode (`opencode run`): tools are `<server>_<tool>`; every schema gains
//! `additionalProperties: false`.

use serde_json::{Value, json};

use crate::support::{self, OPENCODE, Presented, View};

struct OpenCode;

impl View for OpenCode {
    fn present(&self, body: &Value, server: &str) -> Vec<Presented> {
        let prefix = format!("{server}_");
        body["tools"]
            .as_array()
            .into_iter()
            .flatten()
            .map(|t| &t["function"])
            .filter(|f| f["name"].as_str().is_some_and(|n| n.starts_with(&prefix)))
            .map(|f| Presented {
                name: f["name"].as_str().unwrap().to_string(),
                description: f["description"].clone(),
                schema: f["parameters"].clone(),
            })
            .collect()
    }

    fn expect(&self, server: &str, tool: &str, def: &Value) -> Presented {
        let mut schema = def["inputSchema"].clone();
        schema["additionalProperties"] = json!(false);
        Presented {
            name: format!("{server}_{tool}"),
            description: def["description"].clone(),
            schema,
        }
    }

    fn call(&self, server: &str, tool: &str) -> (String, Option<String>) {
        (format!("{server}_{tool}"), None)
    }
}

#[test]
fn opencode_sends_the_opencode_profile_and_shows_the_pinned_tools() {
    support::handshake_and_tools(&OPENCODE, &OpenCode);
}

#[test]
fn opencode_wrapped_shows_the_same_tools_gets_call_results_and_the_guard_matches_its_profile() {
    support::wrapped(&OPENCODE, &OpenCode);
}

#[test]
fn opencode_wrapped_is_not_shown_a_tool_that_drifted_since_it_was_pinned() {
    support::drifted(&OPENCODE, &OpenCode);
}
