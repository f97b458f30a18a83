//! Listings the guard checks against the lock: drift caught on any page or after list_changed, refused or answered as the policy says, instructions kept to the pin.

use super::*;

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
