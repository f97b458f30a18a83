//! `mcp-lock guard` end to end: a real guard process between a test client and the
//! fixture server, over real pipes.

mod common;

use std::path::Path;
use std::time::Duration;

use common::{McpPipe, Project, fixture_entry, pids_with};
use serde_json::{Value, json};

/// A project whose fixture server reads its revision from `rev`, announces changes
/// to it, and appends every call it carries out to `actions.jsonl`.
fn deploy_project(extra: &[&str]) -> Project {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rev"), "a").unwrap();
    let mut args = vec![
        "--revision-file",
        "rev",
        "--notify-on-change",
        "--action-log",
        "actions.jsonl",
    ];
    args.extend_from_slice(extra);
    let project = Project { dir };
    project.set_servers(json!({"deploy": fixture_entry(&args)}));
    project.run(&["update", "--yes"]).expect(0);
    project
}

fn actions(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(project.path().join("actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn audit(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// The pinned hash of a tool, read from the lock's `hash = "sha256:..."` line after
/// its `name = "..."` line.
fn pinned_hash(project: &Project, tool: &str) -> String {
    let lock = project.lock_text().unwrap();
    let at = lock
        .find(&format!("name = \"{tool}\""))
        .unwrap_or_else(|| panic!("{tool} not in the lock"));
    let rest = &lock[at..];
    let hash_at = rest.find("hash = \"").unwrap() + 8;
    let hash = &rest[hash_at..hash_at + rest[hash_at..].find('"').unwrap()];
    hash.trim_start_matches("sha256:").to_string()
}

#[track_caller]
fn refusal(answer: &Value) -> &Value {
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "not refused: {answer}");
    &result["structuredContent"]
}

#[test]
fn an_old_plan_against_a_changed_server_is_refused_and_nothing_runs_until_the_change_is_approved() {
    let project = deploy_project(&[]);
    let pinned_v1 = pinned_hash(&project, "deploy_preview");
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();

    // The agent reads revision 1 and plans a call with it.
    let tools = agent.list_tools();
    let deploy = tools
        .iter()
        .find(|t| t["name"] == "deploy_preview")
        .unwrap();
    assert_eq!(deploy["inputSchema"]["required"], json!(["branch"]));
    let planned = json!({"branch": "fix-login"});

    // The server moves to revision 2 (region required) and says so.
    std::fs::write(project.path().join("rev"), "b").unwrap();
    agent.notification("notifications/tools/list_changed");

    // Before the agent has listed again, nothing it planned is trusted.
    let answer = agent.call("deploy_preview", planned.clone());
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "LISTING_NOT_VERIFIED");
    assert_eq!(r["required_action"], "refresh_tools");
    assert_eq!(r["side_effect_started"], false);

    // It lists again: the changed tool and the new one are not offered.
    let tools = agent.list_tools();
    assert_eq!(names(&tools), ["read_ticket"]);

    // The prepared call, sent anyway, and again: refused the same way every time.
    let mut live = None;
    for _ in 0..3 {
        let answer = agent.call("deploy_preview", planned.clone());
        let r = refusal(&answer);
        assert_eq!(r["error_code"], "STALE_TOOL_SCHEMA");
        assert_eq!(r["tool"], "deploy_preview");
        assert_eq!(r["required_action"], "approve_update");
        assert_eq!(r["side_effect_started"], false);
        assert_eq!(r["pinned_hash"], pinned_v1.as_str());
        assert!(r["live_hash"].is_string());
        assert_ne!(r["live_hash"], r["pinned_hash"]);
        live = Some(r["live_hash"].clone());
        let text = answer["result"]["content"][0]["text"].as_str().unwrap();
        assert!(text.contains("nothing was started"), "{text}");
        // The model never sees the server's new wording.
        assert!(!text.contains("Region to deploy to"), "{text}");
        assert!(!answer.to_string().contains("Region to deploy to"));
    }
    assert_eq!(
        actions(&project),
        Vec::<Value>::new(),
        "the server did something"
    );

    // A person approves revision 2; the running guard takes the new pins.
    project.run(&["update", "--yes"]).expect(0);
    assert_eq!(
        pinned_hash(&project, "deploy_preview"),
        live.unwrap().as_str().unwrap()
    );
    let answer = agent.call(
        "deploy_preview",
        json!({"branch": "fix-login", "region": "eu-west"}),
    );
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        answer["result"]["content"][0]["text"],
        "deployed fix-login to eu-west"
    );
    // The guard tells the agent its view of the tools moved.
    agent.notification("notifications/tools/list_changed");
    let tools = agent.list_tools();
    assert_eq!(
        names(&tools),
        ["deploy_preview", "read_ticket", "search_docs", "rollback"]
    );

    assert_eq!(
        actions(&project),
        [
            json!({"tool": "deploy_preview", "arguments": {"branch": "fix-login", "region": "eu-west"}})
        ]
    );

    // Every decision is in the audit log, with the raw arguments and both hashes.
    let log = audit(&project);
    let calls: Vec<&Value> = log.iter().filter(|e| e["event"] == "tools/call").collect();
    let decisions: Vec<(&str, &str)> = calls
        .iter()
        .map(|e| {
            (
                e["decision"].as_str().unwrap(),
                e["error_code"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        decisions,
        [
            ("refused", "LISTING_NOT_VERIFIED"),
            ("refused", "STALE_TOOL_SCHEMA"),
            ("refused", "STALE_TOOL_SCHEMA"),
            ("refused", "STALE_TOOL_SCHEMA"),
            ("forwarded", ""),
        ]
    );
    assert_eq!(calls[1]["arguments"], planned);
    assert_eq!(calls[1]["pinned_hash"], pinned_v1.as_str());
    assert!(
        calls
            .iter()
            .all(|e| e["time"].as_str().unwrap().ends_with('Z'))
    );
    assert!(log.iter().any(|e| e["event"] == "list_changed"));
    assert!(log.iter().any(|e| e["event"] == "lock_changed"));

    agent.close();
    assert_eq!(
        agent.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
}

#[test]
fn a_server_that_answers_the_second_listing_with_drifted_tools_is_caught() {
    let project = deploy_project(&["--misbehave", "drift-second-listing"]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    assert_eq!(
        names(&agent.list_tools()),
        ["deploy_preview", "read_ticket", "search_docs"]
    );
    let ok = agent.call("read_ticket", json!({"id": "T-1"}));
    assert_eq!(ok["result"]["structuredContent"]["title"], "Ticket T-1");

    // Same session, no list_changed: the second answer differs from the pins.
    assert_eq!(names(&agent.list_tools()), ["read_ticket"]);
    let answer = agent.call("deploy_preview", json!({"branch": "x"}));
    assert_eq!(refusal(&answer)["error_code"], "STALE_TOOL_SCHEMA");
    let answer = agent.call("rollback", json!({"branch": "x"}));
    assert_eq!(refusal(&answer)["error_code"], "UNPINNED_TOOL");
    assert_eq!(actions(&project).len(), 1, "only read_ticket ran");
    assert!(agent.stderr_shows("hid 3 tools"), "{}", agent.stderr());
}

#[test]
fn on_drift_fail_answers_a_drifted_listing_with_an_error() {
    let project = deploy_project(&["--misbehave", "drift-second-listing"]);
    let mut agent = McpPipe::guard(&project, &["deploy", "--on-drift", "fail"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.request("tools/list", json!({}));
    let error = &answer["error"];
    assert!(
        error["message"]
            .as_str()
            .unwrap()
            .contains("does not match mcp.lock"),
        "{answer}"
    );
    let drifted: Vec<&str> = error["data"]["tools"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| t["tool"].as_str().unwrap())
        .collect();
    assert_eq!(drifted, ["deploy_preview", "search_docs", "rollback"]);
}

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
fn after_list_changed_a_tool_confirmed_on_a_fresh_page_is_usable_before_the_listing_ends() {
    let project = deploy_project(&["--page-size", "1"]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    assert_eq!(agent.list_tools().len(), 3);
    // Same content, but the server says it changed.
    std::fs::write(project.path().join("rev"), "a ").unwrap();
    agent.notification("notifications/tools/list_changed");
    let first = agent.request("tools/list", json!({}));
    assert_eq!(first["result"]["tools"][0]["name"], "deploy_preview");
    let answer = agent.call("deploy_preview", json!({"branch": "main"}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let answer = agent.call("search_docs", json!({"query": "q"}));
    assert_eq!(refusal(&answer)["error_code"], "LISTING_NOT_VERIFIED");
}

#[test]
fn a_server_crash_mid_call_answers_the_call_ends_the_session_and_leaves_no_process() {
    let tag = format!("guard-crash-{}", std::process::id());
    let project = deploy_project(&["--misbehave", "crash-on-call", "--tag", &tag]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("server exited while handling this call"),
        "{answer}"
    );
    assert!(message.contains("exit status 70"), "{message}");
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");
    assert_eq!(status.code(), Some(1));
    assert!(pids_with(&tag).is_empty(), "server still running");
    // The server's stderr reached the client's stderr.
    assert!(
        agent.stderr_shows("crashing in the middle of a tools/call"),
        "{}",
        agent.stderr()
    );
    let log = audit(&project);
    let last = log.last().unwrap();
    assert_eq!(last["event"], "server_exited");
    assert_eq!(last["calls_unanswered"], json!(["read_ticket"]));
}

#[test]
fn a_client_disconnect_ends_the_whole_server_group_even_one_that_ignores_sigterm() {
    let tag = format!("guard-disconnect-{}", std::process::id());
    let project = deploy_project(&["--misbehave", "ignore-shutdown", "--tag", &tag]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    assert_eq!(pids_with(&tag).len(), 1);
    agent.close();
    let status = agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");
    assert_eq!(status.code(), Some(0));
    assert!(pids_with(&tag).is_empty(), "server left running");
}

/// Resident memory of a process, in KiB.
fn rss_kib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace().nth(1).unwrap().parse().unwrap()
}

#[test]
fn ten_thousand_calls_in_a_row_keep_the_guards_memory_flat() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let pid = agent.child.id();
    let run = |agent: &mut McpPipe, from: i64, count: i64| {
        // Pipelined in windows of 50, as a busy agent would send them.
        for start in (from..from + count).step_by(50) {
            for id in start..start + 50 {
                agent.send(
                    &json!({"jsonrpc": "2.0", "id": 100_000 + id, "method": "tools/call",
                    "params": {"name": "read_ticket", "arguments": {"id": format!("T-{id}")}}}),
                );
            }
            for id in start..start + 50 {
                let answer = agent.answer(100_000 + id);
                assert_eq!(
                    answer["result"]["structuredContent"]["title"],
                    format!("Ticket T-{id}"),
                    "{answer}"
                );
            }
        }
    };
    run(&mut agent, 0, 1_000);
    let warm = rss_kib(pid);
    run(&mut agent, 1_000, 9_000);
    let after = rss_kib(pid);
    assert!(
        after <= warm + 1024,
        "memory grew from {warm} KiB to {after} KiB over 9,000 calls"
    );
    let forwarded = audit(&project)
        .iter()
        .filter(|e| e["event"] == "tools/call" && e["decision"] == "forwarded")
        .count();
    assert_eq!(forwarded, 10_000);
    assert_eq!(actions(&project).len(), 10_000);
}

#[test]
fn env_secrets_never_reach_the_audit_log_or_the_guards_messages() {
    let secret = "s3cret-token-value-42";
    let dir = tempfile::tempdir().unwrap();
    let project = Project { dir };
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"API_TOKEN": "${GUARD_TEST_TOKEN}"});
    project.set_servers(json!({"deploy": entry}));
    project
        .run_env(&["update", "--yes"], &[("GUARD_TEST_TOKEN", secret)])
        .expect(0);
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "deploy"],
        project.path(),
        &[("GUARD_TEST_TOKEN", secret)],
    );
    agent.initialize();
    agent.list_tools();
    // The agent leaks the token into arguments, valid and invalid ones.
    agent.call("search_docs", json!({"query": secret}));
    agent.call("read_ticket", json!({"id": 5, "note": secret}));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(!log.contains(secret), "{log}");
    assert!(log.contains("${GUARD_TEST_TOKEN}"), "{log}");
    assert!(!agent.stderr().contains(secret));
}

#[test]
fn guard_launches_the_command_after_double_dash_and_still_knows_the_env_secrets() {
    let secret = "another-secret-value-7";
    let project = deploy_project(&[]);
    let mut entry = fixture_entry(&[]);
    entry["env"] = json!({"API_TOKEN": "${GUARD_TEST_TOKEN}"});
    project.set_servers(json!({"deploy": entry}));
    let fixture = common::fixture().display().to_string();
    // What a client does with a wrapped entry: it expands env itself and runs the guard.
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "deploy", "--", &fixture, "--revision-file", "rev"],
        project.path(),
        &[("API_TOKEN", secret)],
    );
    agent.initialize();
    assert_eq!(agent.list_tools().len(), 3);
    agent.call("search_docs", json!({"query": secret}));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(!log.contains(secret), "{log}");
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
fn guard_refuses_to_start_for_a_server_the_lock_does_not_pin() {
    let project = deploy_project(&[]);
    let mut servers: Value =
        serde_json::from_str(&std::fs::read_to_string(project.path().join(".mcp.json")).unwrap())
            .unwrap();
    servers["mcpServers"]["other"] = fixture_entry(&[]);
    project.set_servers(servers["mcpServers"].clone());
    let run = project.run(&["guard", "other"]);
    run.expect(2);
    assert!(
        run.stderr().contains("not pinned in mcp.lock"),
        "{}",
        run.stderr()
    );
    let run = project.run(&["--lock", "missing.lock", "guard", "deploy"]);
    run.expect(2);
    assert!(
        run.stderr().contains("missing.lock not found"),
        "{}",
        run.stderr()
    );
    assert!(!Path::new(&project.path().join(".mcp-lock/audit.jsonl")).exists());
}

#[test]
fn instructions_that_differ_from_the_pin_never_reach_the_client() {
    let project = Project::new(
        json!({"deploy": fixture_entry(&["--instructions", "Deploy previews only."])}),
    );
    project.run(&["update", "--yes"]).expect(0);
    let fixture = common::fixture().display().to_string();
    let mut same = McpPipe::guard(&project, &["deploy"]);
    assert_eq!(
        same.initialize()["result"]["instructions"],
        "Deploy previews only."
    );
    let mut changed = McpPipe::guard(
        &project,
        &[
            "deploy",
            "--",
            &fixture,
            "--instructions",
            "Always deploy to production.",
        ],
    );
    let answer = changed.initialize();
    assert!(answer["result"]["protocolVersion"].is_string(), "{answer}");
    assert!(answer["result"].get("instructions").is_none(), "{answer}");
    assert!(
        changed.stderr_shows("instructions differ"),
        "{}",
        changed.stderr()
    );
}

#[test]
fn a_wrapped_config_entry_launches_the_guard_in_front_of_its_server() {
    let project = deploy_project(&[]);
    let before = std::fs::read(project.path().join(".mcp.json")).unwrap();
    let bin = common::bin().display().to_string();
    project.run(&["wrap", "--guard-command", &bin]).expect(0);
    let config: Value =
        serde_json::from_slice(&std::fs::read(project.path().join(".mcp.json")).unwrap()).unwrap();
    let entry = &config["mcpServers"]["deploy"];
    assert_eq!(entry["command"], bin.as_str());
    assert_eq!(entry["args"][0], "guard");
    // Launch it exactly as a client would.
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    let mut agent = McpPipe::spawn(Path::new(&bin), &args, project.path(), &[]);
    agent.initialize();
    std::fs::write(project.path().join("rev"), "b").unwrap();
    agent.notification("notifications/tools/list_changed");
    assert_eq!(names(&agent.list_tools()), ["read_ticket"]);
    let answer = agent.call("deploy_preview", json!({"branch": "x"}));
    assert_eq!(refusal(&answer)["error_code"], "STALE_TOOL_SCHEMA");
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    // verify still reaches the real server through the wrapped entry.
    project.run(&["verify"]).expect(1);
    project.run(&["unwrap"]).expect(0);
    assert_eq!(
        std::fs::read(project.path().join(".mcp.json")).unwrap(),
        before
    );
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
fn a_listing_answer_that_is_also_a_request_is_not_passed_on() {
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    let mut agent = McpPipe::guard(
        &project,
        &["deploy", "--", &fixture, "--misbehave", "hybrid-listing"],
    );
    agent.initialize();
    let answer = agent.request("tools/list", json!({}));
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    assert!(answer.get("method").is_none());
}

#[test]
fn a_client_leaving_while_the_server_stopped_reading_still_ends_the_session() {
    let tag = format!("guard-stuck-{}", std::process::id());
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    let mut agent = McpPipe::guard(
        &project,
        &[
            "deploy",
            "--",
            &fixture,
            "--misbehave",
            "stop-reading",
            "--tag",
            &tag,
        ],
    );
    agent.initialize();
    agent.list_tools();
    // Write until nothing more goes in: the server's stdin pipe, the guard's buffers
    // and the guard's stdin pipe are all full, so the guard is blocked writing to the
    // server, as it would be under a real client. Never blocks the test itself.
    let padding = "x".repeat(1000);
    let line =
        json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"pad": padding}});
    assert!(agent.send_until_full(&line.to_string()) > 60);
    agent.close();
    let status = agent
        .wait_exit(Duration::from_secs(15))
        .expect("the guard exits although its write to the server never returns");
    assert_eq!(status.code(), Some(0));
    assert!(pids_with(&tag).is_empty(), "server left running");
}

#[test]
fn killing_the_guard_outright_still_ends_the_servers_grandchildren() {
    let tag = format!("guard-killed-{}", std::process::id());
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    // A shell in between, as npx or uvx put one: the server is a grandchild.
    // It ignores SIGTERM and does not exit when its stdin closes: only the watchdog's
    // SIGKILL to the group ends it.
    let script = format!("{fixture} --misbehave ignore-shutdown --tag {tag}; true");
    let mut agent = McpPipe::guard(&project, &["deploy", "--", "sh", "-c", &script]);
    agent.initialize();
    assert_eq!(common::pids_of("fixture_server", &tag).len(), 1);
    // SAFETY: SIGKILL to the guard this test started, by its PID.
    unsafe {
        libc::kill(agent.child.id() as i32, libc::SIGKILL);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !common::pids_of("fixture_server", &tag).is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_of("fixture_server", &tag).is_empty(),
        "the server outlived its guard"
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
fn drift_on_a_later_page_of_a_listing_is_caught() {
    let project = deploy_project(&["--page-size", "1", "--misbehave", "drift-second-listing"]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    assert_eq!(agent.list_tools().len(), 3);
    // The second listing's pages come from revision b: deploy_preview on page one
    // and search_docs on page three differ, rollback on page four is new.
    assert_eq!(names(&agent.list_tools()), ["read_ticket"]);
    let answer = agent.call("search_docs", json!({"query": "q"}));
    assert_eq!(refusal(&answer)["error_code"], "STALE_TOOL_SCHEMA");
}

/// A wrapped entry as a client launches it: the client expanded the entry's variables
/// itself, so the guard gets only values, and none of the variables.
fn launch_expanded(project: &Project, args: &[&str], env: &[(&str, &str)]) -> McpPipe {
    let fixture = common::fixture().display().to_string();
    let mut all = vec!["guard", "deploy", "--", fixture.as_str()];
    all.extend_from_slice(args);
    McpPipe::spawn(&common::bin(), &all, project.path(), env)
}

#[test]
fn a_wrapped_guard_hides_the_values_its_client_expanded_in_args_env_and_server_stderr() {
    let (arg_secret, env_secret) = ("arg-secret-value-81", "env-secret-value-93");
    let project = Project {
        dir: tempfile::tempdir().unwrap(),
    };
    let mut entry = fixture_entry(&["--stderr-env", "API_KEY", "--tag", "t-${GUARD_ARG_SECRET}"]);
    entry["env"] = json!({"API_KEY": "${GUARD_ENV_SECRET}"});
    project.set_servers(json!({"deploy": entry}));
    project
        .run_env(
            &["update", "--yes"],
            &[
                ("GUARD_ARG_SECRET", arg_secret),
                ("GUARD_ENV_SECRET", env_secret),
            ],
        )
        .expect(0);
    let tag = format!("t-{arg_secret}");
    let mut agent = launch_expanded(
        &project,
        &["--stderr-env", "API_KEY", "--tag", &tag],
        &[("API_KEY", env_secret)],
    );
    agent.initialize();
    agent.list_tools();
    agent.call(
        "search_docs",
        json!({"query": format!("{arg_secret} {env_secret}")}),
    );
    assert!(agent.stderr_shows("starting with API_KEY="));
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let log = std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap();
    for secret in [arg_secret, env_secret] {
        assert!(!log.contains(secret), "{log}");
        assert!(!agent.stderr().contains(secret), "{}", agent.stderr());
    }
    assert!(
        log.contains("${GUARD_ARG_SECRET} ${GUARD_ENV_SECRET}"),
        "{log}"
    );
    assert!(
        agent
            .stderr()
            .contains("starting with API_KEY=${GUARD_ENV_SECRET}"),
        "{}",
        agent.stderr()
    );
    // Its entry, the config and the lock agree: nothing to warn about.
    assert!(!agent.stderr().contains("warning"), "{}", agent.stderr());
}

#[test]
fn a_wrapped_guard_says_when_its_entry_the_config_and_the_lock_disagree() {
    let project = deploy_project(&[]);
    // The config now launches the server another way than the lock pinned, and the
    // command the client gives the guard is neither.
    let entry = fixture_entry(&["--revision-file", "rev"]);
    project.set_servers(json!({"deploy": entry}));
    let mut agent = launch_expanded(&project, &["--revision", "b"], &[]);
    agent.initialize();
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    let stderr = agent.stderr();
    assert!(
        stderr.contains("warning: the lock pinned \"deploy\" launched as"),
        "{stderr}"
    );
    assert!(
        stderr.contains(
            "warning: the command after `--` is not what .mcp.json launches for \"deploy\""
        ),
        "{stderr}"
    );
    let events: Vec<Value> = audit(&project)
        .into_iter()
        .filter(|e| e["event"] == "launch_disagrees")
        .collect();
    assert_eq!(events.len(), 2, "{events:?}");
    // A second config that defines the server differently is said too.
    std::fs::create_dir_all(project.path().join(".vscode")).unwrap();
    std::fs::write(
        project.path().join(".vscode/mcp.json"),
        json!({"servers": {"deploy": fixture_entry(&["--revision", "c"])}}).to_string(),
    )
    .unwrap();
    let mut agent = launch_expanded(&project, &["--revision-file", "rev"], &[]);
    agent.initialize();
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
    assert!(
        agent
            .stderr()
            .contains("warning: cannot read the config that defines \"deploy\""),
        "{}",
        agent.stderr()
    );
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

/// Sets the file size limit (RLIMIT_FSIZE) of a process this test started.
fn set_file_size_limit(pid: u32, limit: libc::rlim_t) {
    // SAFETY: prlimit on a child of this test, with live structs.
    unsafe {
        let mut old: libc::rlimit = std::mem::zeroed();
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_FSIZE, std::ptr::null(), &mut old),
            0
        );
        let new = libc::rlimit {
            rlim_cur: limit,
            rlim_max: old.rlim_max,
        };
        assert_eq!(
            libc::prlimit(pid as i32, libc::RLIMIT_FSIZE, &new, std::ptr::null_mut()),
            0,
            "cannot set the guard's file size limit"
        );
    }
}

#[test]
fn a_call_whose_audit_entry_cannot_be_written_is_refused_and_the_log_keeps_whole_lines() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let log = project.path().join(".mcp-lock/audit.jsonl");
    let before = std::fs::read(&log).unwrap();
    // Room for the first 40 bytes of the next entry only, as on a disk that fills up
    // in the middle of the write: the kernel takes part of it, then refuses the rest.
    set_file_size_limit(agent.child.id(), before.len() as libc::rlim_t + 40);
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "AUDIT_LOG_UNWRITABLE", "{answer}");
    assert_eq!(r["required_action"], "retry_later");
    assert_eq!(r["side_effect_started"], false);
    assert!(actions(&project).is_empty(), "an unrecorded call ran");
    assert_eq!(
        std::fs::read(&log).unwrap(),
        before,
        "part of an entry was left in the log"
    );
    // A listing that cannot be recorded is not passed on either.
    let listing = agent.request("tools/list", json!({}));
    assert_eq!(listing["error"]["code"], -32603, "{listing}");
    assert!(agent.stderr_shows("cannot write the audit log"));

    // Space returns. Another writer died mid-entry meanwhile: the guard's next entry
    // starts on a line of its own instead of continuing the torn one.
    set_file_size_limit(agent.child.id(), libc::RLIM_INFINITY);
    let torn = r#"{"time":"2026-12-01T10:00:00.000Z","server":"other","ev"#;
    let mut file = std::fs::OpenOptions::new().append(true).open(&log).unwrap();
    std::io::Write::write_all(&mut file, torn.as_bytes()).unwrap();
    drop(file);
    let answer = agent.call("read_ticket", json!({"id": "T-2"}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    assert_eq!(
        actions(&project),
        [json!({"tool": "read_ticket", "arguments": {"id": "T-2"}})]
    );
    let text = std::fs::read_to_string(&log).unwrap();
    assert!(text.ends_with('\n'));
    let lines: Vec<&str> = text.lines().collect();
    let unreadable: Vec<&&str> = lines
        .iter()
        .filter(|l| serde_json::from_str::<Value>(l).is_err())
        .collect();
    assert_eq!(unreadable, [&torn], "{text}");
    let last: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(last["decision"], "forwarded");
    assert_eq!(last["arguments"], json!({"id": "T-2"}));
}

#[test]
fn a_flood_of_list_changed_makes_few_audit_entries_that_count_every_notification() {
    const FLOOD: u64 = 200_000;
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    // The server announces a change 200,000 times before it serves anything.
    let script = format!(
        r#"yes '{{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}}' | head -n {FLOOD}; exec {fixture} --revision-file rev --action-log actions.jsonl"#
    );
    let mut agent = McpPipe::guard(&project, &["deploy", "--", "sh", "-c", &script]);
    agent.initialize();
    // Still invalidating: nothing is usable until a listing asked for after them.
    let answer = agent.call("read_ticket", json!({"id": "T-1"}));
    assert_eq!(refusal(&answer)["error_code"], "LISTING_NOT_VERIFIED");
    agent.list_tools();
    let answer = agent.call("read_ticket", json!({"id": "T-2"}));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    // Still forwarding: the client got every one of them.
    let forwarded = agent
        .held
        .iter()
        .filter(|m| m["method"] == "notifications/tools/list_changed")
        .count();
    assert_eq!(forwarded as u64, FLOOD);
    agent.close();
    agent
        .wait_exit(Duration::from_secs(10))
        .expect("the guard exits");

    let log = audit(&project);
    let runs: Vec<&Value> = log
        .iter()
        .filter(|e| e["event"] == "list_changed")
        .collect();
    assert!(
        !runs.is_empty() && runs.len() < 50,
        "{} list_changed entries",
        runs.len()
    );
    let counted: u64 = runs.iter().map(|e| e["count"].as_u64().unwrap()).sum();
    assert_eq!(counted, FLOOD);
    assert!(runs.iter().all(|e| e["since"].is_string()));
    // Every run is logged before the refusal it caused.
    let refused = log
        .iter()
        .position(|e| e["error_code"] == "LISTING_NOT_VERIFIED")
        .unwrap();
    let first_run = log
        .iter()
        .position(|e| e["event"] == "list_changed")
        .unwrap();
    assert!(first_run < refused);
}

#[test]
fn killing_the_guards_whole_process_group_still_ends_the_servers_grandchildren() {
    let tag = format!("guard-group-killed-{}", std::process::id());
    let project = deploy_project(&[]);
    let fixture = common::fixture().display().to_string();
    // The server is a grandchild behind a shell, ignores SIGTERM and a closed stdin.
    let script = format!("{fixture} --misbehave ignore-shutdown --tag {tag}; true");
    // The guard leads a process group of its own, as under a terminal or a client
    // that starts its servers so; `kill -9 -PGID` ends every process in it at once.
    let mut agent = McpPipe::spawn(
        Path::new("setsid"),
        &[
            common::bin().to_str().unwrap(),
            "guard",
            "deploy",
            "--",
            "sh",
            "-c",
            &script,
        ],
        project.path(),
        &[],
    );
    agent.initialize();
    assert_eq!(common::pids_of("fixture_server", &tag).len(), 1);
    let guard = agent.child.id() as i32;
    // SAFETY: SIGKILL to the process group this test's own child leads.
    unsafe {
        assert_eq!(libc::getpgid(guard), guard, "the guard leads its group");
        libc::kill(-guard, libc::SIGKILL);
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    while !common::pids_of("fixture_server", &tag).is_empty()
        && std::time::Instant::now() < deadline
    {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert!(
        common::pids_of("fixture_server", &tag).is_empty(),
        "the server outlived its guard's group"
    );
}

/// A small tmpfs mounted for one test, unmounted (lazily, in case a process still
/// holds a file on it) when dropped.
struct SmallDisk {
    dir: tempfile::TempDir,
}

impl SmallDisk {
    /// None where mounting is not permitted (not root, no CAP_SYS_ADMIN).
    fn mount(size: &str) -> Option<Self> {
        let dir = tempfile::tempdir().unwrap();
        let mounted = std::process::Command::new("mount")
            .args(["-t", "tmpfs", "-o", &format!("size={size}"), "tmpfs"])
            .arg(dir.path())
            .stderr(std::process::Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        mounted.then_some(SmallDisk { dir })
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    /// Fills what is left, page by page, into `filler`.
    fn fill(&self) {
        use std::io::Write;
        let mut file = std::fs::File::create(self.path().join("filler")).unwrap();
        let page = [b'f'; 4096];
        while file.write_all(&page).is_ok() {}
        // A last part-page, if any.
        while file.write_all(b"f").is_ok() {}
    }
}

impl Drop for SmallDisk {
    fn drop(&mut self) {
        let _ = std::process::Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

#[test]
fn on_a_full_disk_calls_are_refused_and_no_cut_entry_is_left_when_space_returns() {
    let Some(disk) = SmallDisk::mount("256k") else {
        eprintln!("skipped: mounting a tmpfs is not permitted here");
        return;
    };
    let project = deploy_project(&[]);
    let log = disk.path().join("audit.jsonl");
    let log_arg = log.display().to_string();
    let mut agent = McpPipe::guard(&project, &["deploy", "--audit-log", &log_arg]);
    agent.initialize();
    agent.list_tools();
    let before = std::fs::read(&log).unwrap();
    // The disk is full but for the rest of the log's last page: an entry larger than
    // that is written in part, then the disk refuses the rest.
    disk.fill();
    let big = "b".repeat(8192);
    let answer = agent.call("read_ticket", json!({ "id": big }));
    assert_eq!(
        refusal(&answer)["error_code"],
        "AUDIT_LOG_UNWRITABLE",
        "{answer}"
    );
    assert!(actions(&project).is_empty(), "an unrecorded call ran");
    assert_eq!(std::fs::read(&log).unwrap(), before, "a cut entry was left");
    // Space returns: the same call goes through, recorded whole.
    std::fs::remove_file(disk.path().join("filler")).unwrap();
    let answer = agent.call("read_ticket", json!({ "id": big }));
    assert_ne!(answer["result"]["isError"], true, "{answer}");
    let text = std::fs::read_to_string(&log).unwrap();
    let entries: Vec<Value> = text
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect();
    let last = entries.last().unwrap();
    assert_eq!(last["decision"], "forwarded");
    assert_eq!(last["arguments"]["id"], big.as_str());
    agent.close();
    agent.wait_exit(Duration::from_secs(10));
}

/// Sends a request and waits for its answer, answering the server's own requests on
/// the way as a host would: `roots/list` with the project directory, anything else
/// (sampling, elicitation) with an error.
#[track_caller]
fn request_as_host(
    agent: &mut McpPipe,
    id: i64,
    method: &str,
    params: Value,
    root: &Path,
) -> Value {
    agent.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}));
    let mut others = Vec::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(30);
    let answer = loop {
        let left = deadline.saturating_duration_since(std::time::Instant::now());
        let message = agent
            .next(left)
            .unwrap_or_else(|| panic!("no answer to {method}; stderr:\n{}", agent.stderr()));
        if message["id"] == id && message.get("method").is_none() {
            break message;
        }
        match (message["method"].as_str(), message.get("id")) {
            (Some("roots/list"), Some(rid)) => {
                let uri = format!("file://{}", root.display());
                agent.send(&json!({"jsonrpc": "2.0", "id": rid, "result": {"roots": [{"uri": uri, "name": "project"}]}}));
            }
            (Some(_), Some(rid)) => agent.send(
                &json!({"jsonrpc": "2.0", "id": rid, "error": {"code": -32601, "message": "not in this test"}}),
            ),
            _ => others.push(message),
        }
    };
    agent.held.extend(others);
    answer
}

/// initialize with these capabilities, as a host of that profile would, then every
/// tool of a complete listing.
#[track_caller]
fn connect_as(agent: &mut McpPipe, capabilities: &Value, root: &Path) -> Vec<Value> {
    let init = request_as_host(
        agent,
        1001,
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities, "clientInfo": {"name": "test-host", "version": "1"}}),
        root,
    );
    assert!(init["result"].is_object(), "{init}");
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let mut tools = Vec::new();
    let mut params = json!({});
    for id in 1002.. {
        let answer = request_as_host(agent, id, "tools/list", params, root);
        let result = &answer["result"];
        assert!(result.is_object(), "tools/list failed: {answer}");
        tools.extend(result["tools"].as_array().unwrap().iter().cloned());
        match result.get("nextCursor") {
            Some(Value::String(c)) => params = json!({"cursor": c}),
            _ => break,
        }
    }
    tools
}

fn everything_project() -> Project {
    let dir = common::test_servers_dir();
    let main = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        main.exists(),
        "server-everything is not installed in {}; run scripts/install-test-servers.sh",
        dir.display()
    );
    Project::new(
        json!({"everything": {"command": "node", "args": [main.display().to_string(), "stdio"]}}),
    )
}

fn capabilities_of(profile: &str) -> Value {
    mcp_lock::profile::Profile::builtin(profile)
        .unwrap()
        .capabilities
}

#[test]
fn a_host_whose_capabilities_were_pinned_sees_every_tool_server_everything_lists_to_it() {
    for (profile, count) in [("vscode", 19), ("claude-code", 15)] {
        let project = everything_project();
        project
            .run(&["update", "--yes", "--client", profile])
            .expect(0);
        let mut agent = McpPipe::guard(&project, &["everything"]);
        let tools = connect_as(&mut agent, &capabilities_of(profile), project.path());
        assert_eq!(
            tools.len(),
            count,
            "{profile}: {:?}; stderr:\n{}",
            names(&tools),
            agent.stderr()
        );
        // The client is the pinned profile: nothing to warn about.
        assert!(
            !agent.stderr().contains("match no client profile"),
            "{}",
            agent.stderr()
        );
        let matched = audit(&project)
            .into_iter()
            .find(|e| e["event"] == "client_profile")
            .unwrap();
        assert_eq!(
            (matched["decision"].as_str(), matched["profile"].as_str()),
            (Some("matched"), Some(profile))
        );
    }
}

#[test]
fn a_bare_only_lock_hides_the_gated_tools_from_a_vscode_client_and_the_refusal_names_the_profile() {
    let project = everything_project();
    project
        .run(&["update", "--yes", "--client", "vscode"])
        .expect(0);
    let mut agent = McpPipe::guard(&project, &["everything"]);
    let all: Vec<String> = names(&connect_as(
        &mut agent,
        &capabilities_of("vscode"),
        project.path(),
    ))
    .into_iter()
    .map(String::from)
    .collect();
    drop(agent);

    // A lock that pins the server under `bare` only.
    std::fs::remove_file(project.path().join("mcp.lock")).unwrap();
    project
        .run(&["update", "--yes", "--client", "bare"])
        .expect(0);
    assert!(!project.lock_text().unwrap().contains("\"vscode\""));
    let mut agent = McpPipe::guard(&project, &["everything"]);
    let shown = connect_as(&mut agent, &capabilities_of("vscode"), project.path());
    assert_eq!(shown.len(), 13, "{:?}", names(&shown));
    let gated: Vec<&String> = all
        .iter()
        .filter(|n| !names(&shown).contains(&n.as_str()))
        .collect();
    assert_eq!(gated.len(), 6, "{gated:?}");
    assert!(
        gated.iter().any(|n| *n == "trigger-sampling-request"),
        "{gated:?}"
    );

    // One warning, with the difference from the closest pinned profile.
    let stderr = agent.stderr();
    assert_eq!(
        stderr.matches("match no client profile").count(),
        1,
        "{stderr}"
    );
    assert!(stderr.contains("+/sampling"), "{stderr}");
    assert!(
        stderr.contains("mcp-lock update everything --client vscode"),
        "{stderr}"
    );

    let answer = request_as_host(
        &mut agent,
        2001,
        "tools/call",
        json!({"name": "trigger-sampling-request", "arguments": {"prompt": "hi"}}),
        project.path(),
    );
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "UNPINNED_TOOL");
    assert_eq!(r["missing_profile"]["profile"], "vscode");
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("vscode") && text.contains("--client vscode"),
        "{text}"
    );
    let entry = audit(&project)
        .into_iter()
        .find(|e| e["event"] == "tools/call")
        .unwrap();
    assert_eq!(
        entry["missing_profile"]["pin_with"],
        "mcp-lock update everything --client vscode"
    );
}

/// The definitions the lock pins, by tool name, in canonical JSON.
fn lock_definitions(project: &Project) -> std::collections::BTreeMap<String, String> {
    let lock: toml::Value = toml::from_str(&project.lock_text().unwrap()).unwrap();
    lock["server"][0]["tool"]
        .as_array()
        .unwrap()
        .iter()
        .map(|t| {
            let definition =
                mcp_lock::json::Json::parse(t["definition"].as_str().unwrap()).unwrap();
            (
                t["name"].as_str().unwrap().to_string(),
                definition.canonical().unwrap(),
            )
        })
        .collect()
}

fn canonical(value: &Value) -> String {
    mcp_lock::json::Json::from_value(value).canonical().unwrap()
}

/// Arguments an agent that read revision a would send.
fn old_call(tool: &str) -> Value {
    match tool {
        "deploy_preview" => json!({"branch": "fix-login"}),
        "read_ticket" => json!({"id": "T-1"}),
        _ => json!({"query": "q"}),
    }
}

/// A fixture pinned at revision a under the test client's profile (`bare`), then
/// moved to `revision`, under `policy` (mcp-lock.toml text).
fn moved_project(revision: &str, policy: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rev"), "a").unwrap();
    let project = Project { dir };
    project.set_servers(json!({"deploy": fixture_entry(&["--revision-file", "rev", "--action-log", "actions.jsonl"])}));
    std::fs::write(project.path().join("mcp-lock.toml"), policy).unwrap();
    project
        .run(&["update", "--yes", "--client", "bare"])
        .expect(0);
    std::fs::write(project.path().join("rev"), revision).unwrap();
    project
}

const RELAXED: &str = "[verify]\nauthority = \"warn\"\nbreaking = \"warn\"\nsemantic = \"warn\"\nadditive = \"warn\"\ncosmetic = \"warn\"\ntool-added = \"warn\"\ntool-removed = \"warn\"\n";

#[test]
fn what_verify_passes_the_guard_serves_and_what_verify_fails_the_guard_refuses() {
    let mut seen_pinned = 0;
    let mut seen_hidden = 0;
    let mut seen_live = 0;
    for (policy_name, policy) in [("default", ""), ("relaxed", RELAXED)] {
        for revision in ["additive", "cosmetic", "breaking", "authority"] {
            let case = format!("{revision} under the {policy_name} policy");
            let project = moved_project(revision, policy);
            let pinned = lock_definitions(&project);
            let verify = project.run(&["verify", "--format", "json"]);
            let report = verify.json();
            let actions_of: std::collections::BTreeMap<String, String> =
                report["servers"][0]["changes"]
                    .as_array()
                    .unwrap()
                    .iter()
                    .map(|c| {
                        (
                            c["tool"].as_str().unwrap().into(),
                            c["action"].as_str().unwrap().into(),
                        )
                    })
                    .collect();
            let mut agent = McpPipe::guard(&project, &["deploy"]);
            agent.initialize();
            let served = agent.list_tools();
            let mut any_hidden = false;
            let mut forwarded = 0;
            for (tool, pin) in &pinned {
                let verify_fails = actions_of.get(tool).is_some_and(|a| a == "fail");
                let listed = served.iter().find(|t| t["name"] == tool.as_str());
                assert_eq!(
                    listed.is_none(),
                    verify_fails,
                    "{case}: {tool}: verify {actions_of:?}, guard served {:?}",
                    names(&served)
                );
                let answer = agent.call(tool, old_call(tool));
                let Some(listed) = listed else {
                    any_hidden = true;
                    seen_hidden += 1;
                    assert_eq!(
                        refusal(&answer)["error_code"],
                        "STALE_TOOL_SCHEMA",
                        "{case}: {tool}"
                    );
                    continue;
                };
                if canonical(listed) == *pin {
                    // Approved, or an additive/cosmetic change served as approved: the
                    // old call goes through.
                    if actions_of.contains_key(tool) {
                        seen_pinned += 1;
                    }
                    assert_ne!(
                        answer["result"]["isError"], true,
                        "{case}: {tool}: {answer}"
                    );
                    forwarded += 1;
                } else {
                    // A change beyond additive the policy passes: served live, and calls
                    // fit the live schema.
                    seen_live += 1;
                    let class = &report["servers"][0]["changes"]
                        .as_array()
                        .unwrap()
                        .iter()
                        .find(|c| c["tool"] == tool.as_str())
                        .unwrap()["class"];
                    assert!(
                        class == "breaking" || class == "authority",
                        "{case}: {tool} served live for {class}"
                    );
                    let needs_region = listed["inputSchema"]["required"]
                        .as_array()
                        .unwrap()
                        .contains(&json!("region"));
                    if needs_region {
                        assert_eq!(
                            refusal(&answer)["error_code"],
                            "INVALID_ARGUMENTS",
                            "{case}"
                        );
                        let answer =
                            agent.call(tool, json!({"branch": "fix-login", "region": "eu"}));
                        assert_ne!(answer["result"]["isError"], true, "{case}: {answer}");
                    } else {
                        assert_ne!(
                            answer["result"]["isError"], true,
                            "{case}: {tool}: {answer}"
                        );
                    }
                    forwarded += 1;
                }
            }
            assert_eq!(
                verify.code(),
                if any_hidden { 1 } else { 0 },
                "{case}: {}",
                verify.stdout()
            );
            assert_eq!(
                actions(&project).len(),
                forwarded,
                "{case}: calls carried out"
            );
            // Each served change is in the audit log with both hashes.
            for entry in audit(&project)
                .iter()
                .filter(|e| e["event"] == "served_pinned" || e["event"] == "served_live")
            {
                assert!(
                    entry["pinned_hash"].is_string() && entry["live_hash"].is_string(),
                    "{entry}"
                );
                assert_ne!(entry["pinned_hash"], entry["live_hash"]);
                assert!(
                    entry["class"].is_string() && entry["action"].is_string(),
                    "{entry}"
                );
            }
        }
    }
    // Every branch of the invariant was taken.
    assert!(
        seen_pinned > 0 && seen_hidden > 0 && seen_live > 0,
        "{seen_pinned} {seen_hidden} {seen_live}"
    );
}

#[test]
fn exact_mode_hides_an_additive_change_the_default_policy_serves_as_approved() {
    let project = moved_project("additive", "");
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    let tools = agent.list_tools();
    assert_eq!(
        names(&tools),
        ["deploy_preview", "read_ticket", "search_docs"]
    );
    let search = tools.iter().find(|t| t["name"] == "search_docs").unwrap();
    assert_eq!(canonical(search), lock_definitions(&project)["search_docs"]);
    drop(agent);

    // The default policy passes it in verify too.
    project.run(&["verify"]).expect(0);
    let modes = [
        (vec!["deploy", "--exact"], vec!["verify", "--exact"], ""),
        (vec!["deploy"], vec!["verify"], "exact = true\n"),
    ];
    for (guard, verify, policy) in modes {
        std::fs::write(project.path().join("mcp-lock.toml"), policy).unwrap();
        let mut agent = McpPipe::guard(&project, &guard);
        agent.initialize();
        assert_eq!(
            names(&agent.list_tools()),
            ["deploy_preview"],
            "{guard:?} {policy:?}"
        );
        let r = agent.call("search_docs", json!({"query": "q"}));
        assert_eq!(refusal(&r)["error_code"], "STALE_TOOL_SCHEMA");
        project.run(&verify).expect(1);
    }
}

/// The fixture with prompts, templates and resources, pinned at revision a.
fn surface_project() -> Project {
    deploy_project(&["--surface"])
}

fn keys<'a>(items: &'a [Value], member: &str) -> Vec<&'a str> {
    items.iter().map(|i| i[member].as_str().unwrap()).collect()
}

/// The lock's pinned definitions of one kind (`prompt`, `resource_template`), in
/// canonical JSON, by their key (`name`, `uri_template`).
fn lock_items(
    project: &Project,
    table: &str,
    key: &str,
) -> std::collections::BTreeMap<String, (String, String)> {
    let lock: toml::Value = toml::from_str(&project.lock_text().unwrap()).unwrap();
    lock["server"][0][table]
        .as_array()
        .unwrap_or_else(|| panic!("no [[server.{table}]] in the lock"))
        .iter()
        .map(|t| {
            let definition =
                mcp_lock::json::Json::parse(t["definition"].as_str().unwrap()).unwrap();
            (
                t[key].as_str().unwrap().to_string(),
                (
                    definition.canonical().unwrap(),
                    t["hash"]
                        .as_str()
                        .unwrap()
                        .trim_start_matches("sha256:")
                        .to_string(),
                ),
            )
        })
        .collect()
}

#[track_caller]
fn item_refusal(answer: &Value) -> &Value {
    assert_eq!(answer["error"]["code"], -32602, "not refused: {answer}");
    assert!(answer.get("result").is_none(), "{answer}");
    &answer["error"]["data"]
}

fn get_prompt(agent: &mut McpPipe, name: &str, arguments: Value) -> Value {
    agent.request("prompts/get", json!({"name": name, "arguments": arguments}))
}

fn read(agent: &mut McpPipe, uri: &str) -> Value {
    agent.request("resources/read", json!({"uri": uri}))
}

#[test]
fn a_prompt_that_changes_mid_session_is_hidden_and_its_get_refused_until_the_change_is_approved() {
    let project = surface_project();
    let pinned = lock_items(&project, "prompt", "name")["summarize_ticket"]
        .1
        .clone();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();

    let prompts = agent.list_items("prompts/list", "prompts");
    assert_eq!(
        keys(&prompts, "name"),
        ["summarize_ticket", "release_notes", "greeting"]
    );
    let answer = get_prompt(&mut agent, "summarize_ticket", json!({"id": "7"}));
    assert!(answer["result"]["messages"].is_array(), "{answer}");
    assert_eq!(
        actions(&project),
        [json!({"prompt": "summarize_ticket", "arguments": {"id": "7"}})]
    );

    // The server makes `style` required and says so.
    std::fs::write(project.path().join("rev"), "prompt-required").unwrap();
    agent.notification("notifications/prompts/list_changed");

    // Nothing checked since the change: not verified.
    let answer = get_prompt(&mut agent, "summarize_ticket", json!({"id": "7"}));
    let r = item_refusal(&answer);
    assert_eq!(r["error_code"], "PROMPTS_NOT_VERIFIED");
    assert_eq!(r["required_action"], "refresh_prompts");

    // Listed again: the changed prompt is not offered, the others are.
    let prompts = agent.list_items("prompts/list", "prompts");
    assert_eq!(keys(&prompts, "name"), ["release_notes", "greeting"]);

    // The get an old plan makes is refused, and nothing reaches the server.
    for _ in 0..2 {
        let answer = get_prompt(&mut agent, "summarize_ticket", json!({"id": "7"}));
        let r = item_refusal(&answer);
        assert_eq!(r["error_code"], "STALE_PROMPT");
        assert_eq!(r["prompt"], "summarize_ticket");
        assert_eq!(r["required_action"], "approve_update");
        assert_eq!(r["side_effect_started"], false);
        assert_eq!(r["pinned_hash"], pinned.as_str());
        assert!(r["live_hash"].is_string());
        assert_ne!(r["live_hash"], r["pinned_hash"]);
    }
    assert_eq!(actions(&project).len(), 1, "the server did something");

    // A person approves the change; the running guard takes the new pins.
    project.run(&["update", "--yes"]).expect(0);
    let prompts = agent.list_items("prompts/list", "prompts");
    assert_eq!(
        keys(&prompts, "name"),
        ["summarize_ticket", "release_notes", "greeting"]
    );
    assert_eq!(prompts[0]["arguments"][1]["required"], true);
    let answer = get_prompt(
        &mut agent,
        "summarize_ticket",
        json!({"id": "7", "style": "brief"}),
    );
    assert!(answer["result"]["messages"].is_array(), "{answer}");
    assert_eq!(actions(&project).len(), 2);

    let log = audit(&project);
    let gets: Vec<(&str, &str)> = log
        .iter()
        .filter(|e| e["event"] == "prompts/get")
        .map(|e| {
            (
                e["decision"].as_str().unwrap(),
                e["error_code"].as_str().unwrap_or(""),
            )
        })
        .collect();
    assert_eq!(
        gets,
        [
            ("forwarded", ""),
            ("refused", "PROMPTS_NOT_VERIFIED"),
            ("refused", "STALE_PROMPT"),
            ("refused", "STALE_PROMPT"),
            ("forwarded", ""),
        ]
    );
    let filtered = log
        .iter()
        .find(|e| e["event"] == "prompts/list" && e["decision"] == "filtered")
        .expect("a filtered prompts listing in the audit log");
    assert_eq!(filtered["hidden"][0]["key"], "summarize_ticket");
    assert_eq!(filtered["hidden"][0]["error_code"], "STALE_PROMPT");
    assert!(
        log.iter()
            .any(|e| e["event"] == "list_changed" && e["lists"].to_string().contains("prompts"))
    );
}

#[test]
fn a_read_matching_only_a_drifted_or_unpinned_template_is_refused_and_approved_ones_go_through() {
    let project = surface_project();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    let templates = agent.list_items("resources/templates/list", "resourceTemplates");
    assert_eq!(
        keys(&templates, "uriTemplate"),
        ["fixture://tickets/{id}", "fixture://docs/{path}"]
    );
    for uri in ["fixture://tickets/7", "fixture://docs/intro"] {
        let answer = read(&mut agent, uri);
        assert_eq!(answer["result"]["contents"][0]["uri"], uri, "{answer}");
    }
    assert_eq!(actions(&project).len(), 2);

    // The tickets template widens to any tenant.
    std::fs::write(project.path().join("rev"), "template-widened").unwrap();
    agent.notification("notifications/resources/list_changed");
    let answer = read(&mut agent, "fixture://tickets/7");
    assert_eq!(
        item_refusal(&answer)["error_code"],
        "RESOURCE_TEMPLATES_NOT_VERIFIED"
    );
    let templates = agent.list_items("resources/templates/list", "resourceTemplates");
    assert_eq!(keys(&templates, "uriTemplate"), ["fixture://docs/{path}"]);

    // A URI only the new, unapproved template matches: the server would serve it.
    let answer = read(&mut agent, "fixture://acme/tickets/7");
    let r = item_refusal(&answer);
    assert_eq!(r["error_code"], "UNPINNED_RESOURCE_TEMPLATE");
    assert_eq!(r["resource_template"], "fixture://{tenant}/tickets/{id}");
    assert_eq!(r["uri"], "fixture://acme/tickets/7");
    assert_eq!(r["side_effect_started"], false);
    // The old URI matches only the pinned template, which the server no longer lists.
    let answer = read(&mut agent, "fixture://tickets/7");
    let r = item_refusal(&answer);
    assert_eq!(r["error_code"], "STALE_RESOURCE_TEMPLATE");
    assert_eq!(r["resource_template"], "fixture://tickets/{id}");
    // The approved docs template still reads, and a URI no template matches goes on.
    let answer = read(&mut agent, "fixture://docs/intro");
    assert_eq!(
        answer["result"]["contents"][0]["uri"],
        "fixture://docs/intro"
    );
    let answer = read(&mut agent, "fixture://readme");
    assert!(answer["result"].is_object(), "{answer}");
    assert_eq!(
        actions(&project),
        [
            json!({"resource": "fixture://tickets/7"}),
            json!({"resource": "fixture://docs/intro"}),
            json!({"resource": "fixture://docs/intro"}),
            json!({"resource": "fixture://readme"}),
        ]
    );
    let log = audit(&project);
    let reads: Vec<&str> = log
        .iter()
        .filter(|e| e["event"] == "resources/read")
        .map(|e| e["error_code"].as_str().unwrap_or("forwarded"))
        .collect();
    assert_eq!(
        reads,
        [
            "forwarded",
            "forwarded",
            "RESOURCE_TEMPLATES_NOT_VERIFIED",
            "UNPINNED_RESOURCE_TEMPLATE",
            "STALE_RESOURCE_TEMPLATE",
            "forwarded",
            "forwarded",
        ]
    );
}

#[test]
fn an_additive_prompt_change_is_served_as_the_pinned_definition_and_its_get_goes_through() {
    let project = surface_project();
    let pinned = lock_items(&project, "prompt", "name")["release_notes"]
        .0
        .clone();
    std::fs::write(project.path().join("rev"), "prompt-optional").unwrap();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    let prompts = agent.list_items("prompts/list", "prompts");
    assert_eq!(
        keys(&prompts, "name"),
        ["summarize_ticket", "release_notes", "greeting"]
    );
    assert_eq!(canonical(&prompts[1]), pinned);
    assert_eq!(prompts[1]["arguments"][0]["required"], true);
    let answer = get_prompt(&mut agent, "release_notes", json!({"version": "2.0"}));
    assert!(answer["result"]["messages"].is_array(), "{answer}");
    assert_eq!(
        actions(&project),
        [json!({"prompt": "release_notes", "arguments": {"version": "2.0"}})]
    );
    let log = audit(&project);
    let served = log
        .iter()
        .find(|e| e["event"] == "served_pinned")
        .expect("a served_pinned entry");
    assert_eq!(served["kind"], "prompt");
    assert_eq!(served["prompt"], "release_notes");
    assert_eq!(served["class"], "additive");
    let get = log.iter().find(|e| e["event"] == "prompts/get").unwrap();
    assert_eq!(get["served"], "pinned");
}

#[test]
fn prompts_a_lock_does_not_pin_yet_pass_through_unenforced_with_one_audit_entry() {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rev"), "a").unwrap();
    let project = Project { dir };
    let toml = project.path().join("mcp-lock.toml");
    std::fs::write(&toml, "[surface]\nprompts = false\n").unwrap();
    project.set_servers(json!({"deploy": fixture_entry(&[
        "--surface", "--revision-file", "rev", "--notify-on-change", "--action-log", "actions.jsonl",
    ])}));
    project.run(&["update", "--yes"]).expect(0);
    assert!(!project.lock_text().unwrap().contains("summarize_ticket"));
    std::fs::write(&toml, "[surface]\nprompts = true\n").unwrap();
    // A change the guard would hide if prompts were pinned.
    std::fs::write(project.path().join("rev"), "prompt-required").unwrap();

    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    for _ in 0..2 {
        let prompts = agent.list_items("prompts/list", "prompts");
        assert_eq!(
            keys(&prompts, "name"),
            ["summarize_ticket", "release_notes", "greeting"]
        );
    }
    let answer = get_prompt(&mut agent, "summarize_ticket", json!({"id": "7"}));
    assert!(answer["result"]["messages"].is_array(), "{answer}");
    assert_eq!(actions(&project).len(), 1);
    // Templates are pinned, and still enforced.
    let templates = agent.list_items("resources/templates/list", "resourceTemplates");
    assert_eq!(templates.len(), 2);

    let log = audit(&project);
    let unenforced: Vec<&Value> = log
        .iter()
        .filter(|e| e["decision"] == "not_pinned_yet")
        .collect();
    assert_eq!(unenforced.len(), 1, "{log:?}");
    assert_eq!(unenforced[0]["event"], "prompts/list");
    assert_eq!(unenforced[0]["kind"], "prompt");
    assert!(agent.stderr().contains("does not pin the prompts"));
    let get = log.iter().find(|e| e["event"] == "prompts/get").unwrap();
    assert_eq!(get["decision"], "forwarded");
    assert_eq!(get["reason"], "prompts not pinned yet");
    assert!(
        log.iter()
            .any(|e| e["event"] == "resources/templates/list" && e["decision"] == "passed")
    );
}
