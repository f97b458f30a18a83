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
                drifted: BTreeMap::from([(
                    "deploy".to_string(),
                    "MCP server fx has tool deploy changed (authority)".to_string(),
                )]),
                notice: None,
                personal: false,
                denied: BTreeMap::from([(
                    "merge".to_string(),
                    "the project's tool rules do not allow Claude Code to use tool merge of MCP server fx ([tools] deny \"fx/merge\" in mcp-lock.toml)".to_string(),
                )]),
            },
        );
    servers.insert(
        "my.server".to_string(),
        ServerRecord {
            refused: Some("MCP server my.server changed".into()),
            tools: BTreeMap::new(),
            drifted: BTreeMap::new(),
            notice: None,
            personal: false,
            denied: BTreeMap::new(),
        },
    );
    SessionRecord {
        version: SessionRecord::VERSION,
        lock: Some(LockStamp {
            len: 0,
            modified_ns: 0,
            sha256: String::new(),
        }),
        user_lock: None,
        servers,
        names: Vec::new(),
        pending: None,
        rules: None,
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
fn a_denied_tool_and_a_broken_argument_rule_are_refused_naming_the_rule() {
    let r = record();
    let policy = crate::verdict::policy::Policy::parse(
        "[tools.arguments.\"fx/read_ticket\"]\nid = { pattern = \"^T-\" }\n",
        "mcp-lock.toml",
    )
    .unwrap();
    let decide = |tool: &str, arguments: &Value| decide(&r, &[], tool, arguments, &policy.rules);
    let Decision::Deny(why) = decide("mcp__fx__merge", &json!({})) else {
        panic!("a denied tool passes")
    };
    assert!(why.contains("TOOL_DENIED"), "{why}");
    assert!(why.contains("[tools] deny \"fx/merge\""), "{why}");
    assert_eq!(
        decide("mcp__fx__read_ticket", &json!({"id": "T-1"})),
        Decision::PassThrough
    );
    let Decision::Deny(why) = decide("mcp__fx__read_ticket", &json!({"id": "X-1"})) else {
        panic!("an argument the rule does not allow passes")
    };
    assert!(why.contains("ARGUMENT_DENIED"), "{why}");
    assert!(
        why.contains("[tools.arguments.\"fx/read_ticket\"] id: \"X-1\" does not match /^T-/"),
        "{why}"
    );
}

#[test]
fn the_raw_glance_tells_an_mcp_call_from_another_tool_or_cannot() {
    let seen = glance(
        br#"{"hook_event_name":"PreToolUse","tool_name":"mcp__fx__x","tool_input":{"a":"\ud800"}}"#,
    );
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
    let none = crate::verdict::rules::ToolRules::default();
    let decide = |tool: &str, arguments: &Value| decide(&r, &[], tool, arguments, &none);
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
    // A sibling that drifted is refused; read_ticket above was served.
    let Decision::Deny(why) = decide("mcp__fx__deploy", &json!({})) else {
        panic!("a drifted tool passes")
    };
    assert!(why.contains("deploy changed (authority)"), "{why}");
    assert!(
        why.contains("other pinned tools may still be used"),
        "{why}"
    );
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
        &none,
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
