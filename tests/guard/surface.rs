//! Prompts and resource templates at run time: hidden or served as pinned, gets and reads refused until a change is approved.

use super::*;

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
                mcp_lock::base::json::Json::parse(t["definition"].as_str().unwrap()).unwrap();
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
    let project = Project::at(dir);
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
    assert!(
        agent.stderr_shows("does not pin the prompts"),
        "{}",
        agent.stderr()
    );
    let get = log.iter().find(|e| e["event"] == "prompts/get").unwrap();
    assert_eq!(get["decision"], "forwarded");
    assert_eq!(get["reason"], "prompts not pinned yet");
    assert!(
        log.iter()
            .any(|e| e["event"] == "resources/templates/list" && e["decision"] == "passed")
    );
}

#[test]
fn a_prompt_served_as_pinned_is_logged_once_however_often_the_agent_lists_it() {
    let project = surface_project();
    std::fs::write(project.path().join("rev"), "prompt-optional").unwrap();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    for _ in 0..3 {
        let prompts = agent.list_items("prompts/list", "prompts");
        assert_eq!(prompts.len(), 3);
    }
    let log = audit(&project);
    let listings = log.iter().filter(|e| e["event"] == "prompts/list").count();
    let served: Vec<&Value> = log
        .iter()
        .filter(|e| e["event"] == "served_pinned")
        .collect();
    assert_eq!(listings, 3, "{log:#?}");
    assert_eq!(served.len(), 1, "{served:#?}");
    assert_eq!(served[0]["prompt"], "release_notes");
}

#[test]
fn templates_a_server_declares_but_does_not_list_are_served_as_verify_judged_them() {
    // Pinned as none: the server declares resources and answers
    // resources/templates/list with -32601.
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rev"), "templates-unimplemented").unwrap();
    let project = Project::at(dir);
    project.set_servers(json!({"deploy": fixture_entry(&[
        "--surface", "--revision-file", "rev", "--notify-on-change", "--action-log", "actions.jsonl",
    ])}));
    project.run(&["update", "--yes"]).expect(0);
    project.run(&["verify"]).expect(0);

    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    assert_eq!(agent.list_tools().len(), 3);
    // The server's answer goes through as it is: the client sees no templates either.
    let answer = agent.request("resources/templates/list", json!({}));
    assert_eq!(answer["error"]["code"], -32601, "{answer}");
    let prompts = agent.list_items("prompts/list", "prompts");
    assert_eq!(prompts.len(), 3);
    let answer = read(&mut agent, "fixture://tickets/7");
    assert_eq!(
        answer["result"]["contents"][0]["uri"],
        "fixture://tickets/7"
    );

    // The server starts listing templates: additions to the empty pin, which verify
    // fails, so the guard hides them and refuses a read only they match.
    std::fs::write(project.path().join("rev"), "a").unwrap();
    agent.notification("notifications/resources/list_changed");
    let templates = agent.list_items("resources/templates/list", "resourceTemplates");
    assert_eq!(templates, Vec::<Value>::new());
    let answer = read(&mut agent, "fixture://tickets/7");
    let r = item_refusal(&answer);
    assert_eq!(r["error_code"], "UNPINNED_RESOURCE_TEMPLATE");
    assert_eq!(r["side_effect_started"], false);
    assert_eq!(
        actions(&project),
        [json!({"resource": "fixture://tickets/7"})]
    );
    project.run(&["verify"]).expect(1);
}
