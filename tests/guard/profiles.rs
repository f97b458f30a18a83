//! Client profiles at run time: the host's capabilities matched to a pinned profile, and what verify passes the guard serves.

use super::*;

/// Sends a request and waits for its answer, answering the server's own requests on
/// the way as a host would: `roots/list` with the project directory, anything else
/// (sampling, elicitation) with an error.
#[track_caller]
pub(super) fn request_as_host(
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
pub(super) fn connect_as(agent: &mut McpPipe, capabilities: &Value, root: &Path) -> Vec<Value> {
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

pub(super) fn everything_project() -> Project {
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

pub(super) fn capabilities_of(profile: &str) -> Value {
    mcp_lock::records::profile::Profile::builtin(profile)
        .unwrap()
        .capabilities
}

#[test]
fn a_host_whose_capabilities_were_pinned_sees_every_tool_server_everything_lists_to_it() {
    for (profile, count) in [("vscode", 19), ("claude-code", 16)] {
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
        // Recorded as matched.
        let text =
            std::fs::read_to_string(project.path().join(".mcp-lock/handshakes.json")).unwrap();
        let seen: Value = serde_json::from_str(&text).unwrap();
        let entry = &seen["handshakes"][0];
        assert_eq!(
            (entry["profile"].as_str(), entry["matched"].as_bool()),
            (Some(profile), Some(true)),
            "{entry}"
        );
        // A matched host is no notice for verify.
        let run = project.run(&["verify", "--format", "json"]);
        assert!(run.json().get("observed_handshakes").is_none());
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
                mcp_lock::base::json::Json::parse(t["definition"].as_str().unwrap()).unwrap();
            (
                t["name"].as_str().unwrap().to_string(),
                definition.canonical().unwrap(),
            )
        })
        .collect()
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
    let project = Project::at(dir);
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
