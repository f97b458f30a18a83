//! Calls and messages the guard decides: arguments against the pinned schema, integers exact, batches member by member, messages too large, empty or read two ways.

use super::*;

#[test]
fn arguments_that_do_not_fit_the_pinned_schema_are_refused_with_the_failing_path() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.call("search_docs", json!({"query": "x", "limit": 0}));
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "INVALID_ARGUMENTS");
    assert_eq!(r["required_action"], "fix_arguments");
    assert_eq!(r["violations"][0]["path"], "/limit");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(text.contains("at /limit:"), "{text}");
    let answer = agent.call("deploy_preview", json!({}));
    assert_eq!(refusal(&answer)["violations"][0]["path"], "");
    assert!(actions(&project).is_empty());
    // Valid arguments go through.
    let answer = agent.call("search_docs", json!({"query": "x", "limit": 5}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(actions(&project).len(), 1);
}

#[test]
fn messages_readers_would_disagree_on_are_not_forwarded() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    // Which name counts depends on the reader: first wins in some, last in others.
    agent.send_raw(r#"{"jsonrpc":"2.0","id":77,"method":"tools/call","params":{"name":"read_ticket","name":"deploy_preview","arguments":{"id":"1","branch":"main"}}}"#);
    let answer = agent.answer(77);
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    agent.send_raw("{not json");
    let answer = agent.next(Duration::from_secs(10)).unwrap();
    assert_eq!(answer["error"]["code"], -32700, "{answer}");
    assert!(actions(&project).is_empty());
}

#[test]
fn calls_are_checked_with_integers_exact_and_integers_beyond_64_bits_are_refused() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    // 2^53 + 1 as a limit: exact in 64 bits, not in a double.
    agent.send_raw(r#"{"jsonrpc":"2.0","id":50,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"q","limit":9007199254740993}}}"#);
    let answer = agent.answer(50);
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(log.contains("\"limit\":9007199254740993"), "{log}");
    agent.send_raw(r#"{"jsonrpc":"2.0","id":51,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"q","limit":123456789012345678901234567890}}}"#);
    let answer = agent.answer(51);
    assert_eq!(refusal(&answer)["error_code"], "INVALID_ARGUMENTS");
    // A lone surrogate makes the exact reading impossible: refused, not checked loosely.
    agent.send_raw(r#"{"jsonrpc":"2.0","id":53,"method":"tools/call","params":{"name":"search_docs","arguments":{"query":"q","limit":2},"_meta":{"x":"\ud800"}}}"#);
    let answer = agent.answer(53);
    assert_eq!(refusal(&answer)["error_code"], "INVALID_ARGUMENTS");
    // A call sent as a notification, a request reusing a waiting id, a bare value.
    agent.send_raw(r#"{"jsonrpc":"2.0","method":"tools/call","params":{"name":"deploy_preview","arguments":{"branch":"x"}}}"#);
    agent.send_raw(r#"[[{"jsonrpc":"2.0","id":52,"method":"tools/call","params":{"name":"deploy_preview","arguments":{"branch":"x"}}}]]"#);
    let answer = agent.next(Duration::from_secs(10)).unwrap();
    assert_eq!(answer[0]["error"]["code"], -32600, "{answer}");
    assert_eq!(
        actions(&project),
        [
            json!({"tool": "search_docs", "arguments": {"query": "q", "limit": 9007199254740993_u64}})
        ]
    );
}

#[test]
fn a_batch_is_decided_member_by_member() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    agent.send_raw(
        r#"[{"jsonrpc":"2.0","id":60,"method":"tools/call","params":{"name":"read_ticket","arguments":{"id":"T-60"}}},{"jsonrpc":"2.0","id":61,"method":"tools/call","params":{"name":"rollback","arguments":{"branch":"main"}}}]"#,
    );
    let mut seen = Vec::new();
    while seen.len() < 2 {
        let message = agent
            .next(Duration::from_secs(10))
            .expect("answers to the batch");
        let items = message.as_array().cloned().unwrap_or_else(|| vec![message]);
        seen.extend(items);
    }
    let by_id = |id: i64| seen.iter().find(|m| m["id"] == id).unwrap().clone();
    assert_eq!(
        by_id(60)["result"]["structuredContent"]["title"],
        "Ticket T-60"
    );
    assert_eq!(
        by_id(61)["result"]["structuredContent"]["error_code"],
        "UNPINNED_TOOL"
    );
    assert_eq!(actions(&project).len(), 1);
}

#[test]
fn a_message_over_the_size_limit_is_refused_and_the_session_goes_on() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy", "--max-message-bytes", "2048"]);
    agent.initialize();
    agent.list_tools();
    let big = "x".repeat(4096);
    agent.send(&json!({"jsonrpc": "2.0", "id": 70, "method": "tools/call",
        "params": {"name": "search_docs", "arguments": {"query": big}}}));
    let answer = agent.next(Duration::from_secs(10)).unwrap();
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert!(actions(&project).is_empty());
    let ok = agent.call("read_ticket", json!({"id": "T-2"}));
    assert_eq!(ok["result"]["structuredContent"]["title"], "Ticket T-2");
}

#[test]
fn an_empty_batch_gets_one_invalid_request_error() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.send_raw("[]");
    let answer = agent
        .next(Duration::from_secs(10))
        .expect("an empty batch is answered");
    assert!(answer.is_object(), "one error, not a batch: {answer}");
    assert_eq!(answer["error"]["code"], -32600, "{answer}");
    assert_eq!(answer["id"], Value::Null);
    // The session goes on.
    assert_eq!(agent.list_tools().len(), 3);
}
