use super::*;
use serde_json::json;

fn hides(root: Value, server: &str, tool: &str) -> bool {
    let rules = opencode_rules(&root, &opencode_name(server)).unwrap();
    rules
        .iter()
        .rev()
        .find(|r| r.matches(tool))
        .is_some_and(|r| r.hides)
}

#[test]
fn opencode_tools_keys_are_patterns_over_the_sanitised_server_and_tool_names() {
    let root = json!({"tools": {"my_mcp_deploy*": false}});
    assert!(hides(root.clone(), "my.mcp", "deploy_preview"));
    assert!(hides(root.clone(), "my mcp", "deploy.preview"));
    assert!(!hides(root, "my.mcp", "search_docs"));
    assert!(hides(json!({"tools": {"fix*": false}}), "fixture", "x"));
    assert!(hides(
        json!({"tools": {"fixture_?ead_ticket": false}}),
        "fixture",
        "read_ticket"
    ));
    assert!(!hides(
        json!({"tools": {"fixture": false}}),
        "fixture",
        "read_ticket"
    ));
}

#[test]
fn the_last_matching_opencode_rule_decides_and_permission_wins_for_its_key() {
    let later = json!({"tools": {"fixture_*": false, "fixture_search_docs": true}});
    assert!(!hides(later.clone(), "fixture", "search_docs"));
    assert!(hides(later, "fixture", "read_ticket"));
    let earlier = json!({"tools": {"fixture_search_docs": true, "fixture_*": false}});
    assert!(hides(earlier, "fixture", "search_docs"));
    let overridden = json!({"tools": {"fixture_*": false}, "permission": {"fixture_*": "ask"}});
    assert!(!hides(overridden, "fixture", "read_ticket"));
    let denied = json!({"permission": {"fixture_read_ticket": "deny"}});
    assert!(hides(denied, "fixture", "read_ticket"));
    let partly = json!({"permission": {"fixture_*": {"*": "deny", "x": "allow"}}});
    assert!(!hides(partly, "fixture", "read_ticket"));
}

#[test]
fn an_opencode_tools_value_that_is_not_a_boolean_is_an_error() {
    assert!(opencode_rules(&json!({"tools": {"a_b": "no"}}), "a_").is_err());
    assert!(opencode_rules(&json!({"tools": ["a_b"]}), "a_").is_err());
    assert!(
        opencode_rules(&json!({"permission": "allow"}), "a_")
            .unwrap()
            .is_empty()
    );
}

#[test]
fn wildcards_match_as_opencode_matches_them() {
    assert!(wildcard("abc", "a*"));
    assert!(wildcard("abc", "**"));
    assert!(wildcard("abc", "**/abc"));
    assert!(wildcard("abc", "a?c"));
    assert!(wildcard("abc", "abc *"));
    assert!(!wildcard("abc", "a/c"));
    assert!(!wildcard("abc", "ab"));
    assert!(wildcard("a.b", "a.b"));
    assert!(!wildcard("axb", "a.b"));
}
