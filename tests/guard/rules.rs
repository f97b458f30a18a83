//! The tool rules at run time: what `[tools]`, `[prompts]`, `[resource-templates]`,
//! a host's `[profile.NAME.tools]` and the user's own file deny to the session's host
//! is left out of what the client lists and refused before anything is sent, naming
//! the rule; an argument rule refuses a call with another value.

use super::profiles::{capabilities_of, connect_as, everything_project, request_as_host};

/// initialize in `version` with these capabilities, then one listing.
#[track_caller]
fn connect_in(agent: &mut McpPipe, capabilities: &Value, version: &str, root: &Path) -> Vec<Value> {
    let init = request_as_host(
        agent,
        1001,
        "initialize",
        json!({"protocolVersion": version, "capabilities": capabilities, "clientInfo": {"name": "test-host", "version": "1"}}),
        root,
    );
    assert!(init["result"].is_object(), "{init}");
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let listed = request_as_host(agent, 1002, "tools/list", json!({}), root);
    listed["result"]["tools"].as_array().unwrap().clone()
}
use super::*;

/// A call as a host makes it: server-everything announces `list_changed` as it
/// registers the tools a client's capabilities allow, so the host lists again and
/// calls once a listing is checked since (LISTING_NOT_VERIFIED says it is not yet).
#[track_caller]
fn call_as_host(agent: &mut McpPipe, tool: &str, arguments: Value, root: &Path) -> Value {
    for attempt in 0..20 {
        let id = 2000 + attempt * 2;
        let listed = request_as_host(agent, id, "tools/list", json!({}), root);
        assert!(listed["result"].is_object(), "{listed}");
        let answer = request_as_host(
            agent,
            id + 1,
            "tools/call",
            json!({"name": tool, "arguments": arguments}),
            root,
        );
        if answer["result"]["structuredContent"]["error_code"] != "LISTING_NOT_VERIFIED" {
            return answer;
        }
        std::thread::sleep(Duration::from_millis(250));
    }
    panic!(
        "{tool}: no checked listing in 20 tries; stderr:\n{}",
        agent.stderr()
    );
}

/// Appends `text` to the project's `mcp-lock.toml`.
fn add_rules(project: &Project, text: &str) {
    let path = project.path().join("mcp-lock.toml");
    let before = std::fs::read_to_string(&path).unwrap_or_default();
    std::fs::write(&path, format!("{before}\n{text}")).unwrap();
}

/// The user's own settings file, in the project's user-config folder (the
/// `XDG_CONFIG_HOME` every command of the test runs with).
fn user_rules(project: &Project, text: &str) -> std::path::PathBuf {
    let dir = project.path().join(".user-config/mcp-lock");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-lock.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn everything_bare() -> Project {
    let project = everything_project();
    add_rules(&project, "[profiles]\npin = [\"bare\"]\n");
    project
}

#[test]
fn a_tool_prompt_and_template_the_rules_deny_are_hidden_and_refused_naming_the_rule_over_stdio() {
    let project = everything_bare();
    add_rules(
        &project,
        "[tools]\ndeny = [\"everything/get-sum\"]\n[prompts]\ndeny = [\"everything/simple-prompt\"]\n[resource-templates]\ndeny = [\"everything/Dynamic Blob Resource\"]\n",
    );
    // update still pins what the rules deny, so its drift is seen.
    project.run(&["update", "--yes"]).expect(0);
    assert!(project.lock_text().unwrap().contains("name = \"get-sum\""));
    let mut agent = McpPipe::guard(&project, &["everything"]);
    agent.initialize();
    // A call and a read before any listing are held to the rules too.
    let early = agent.call("get-sum", json!({"a": 1, "b": 2}));
    assert_eq!(refusal(&early)["error_code"], "TOOL_DENIED", "{early}");
    let read = agent.request(
        "resources/read",
        json!({"uri": "demo://resource/dynamic/blob/1"}),
    );
    assert_eq!(
        read["error"]["data"]["error_code"], "RESOURCE_TEMPLATE_DENIED",
        "{read}"
    );
    let tools = agent.list_tools();
    assert!(!names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));

    let answer = call_as_host(
        &mut agent,
        "get-sum",
        json!({"a": 1, "b": 2}),
        project.path(),
    );
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "TOOL_DENIED", "{answer}");
    assert_eq!(r["required_action"], "change_rules");
    assert_eq!(r["side_effect_started"], false);
    assert_eq!(
        r["denied_by"]["rule"],
        "[tools] deny \"everything/get-sum\""
    );
    assert!(
        r["denied_by"]["source"]
            .as_str()
            .unwrap()
            .ends_with("mcp-lock.toml"),
        "{answer}"
    );
    let text = answer["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        text.contains("[tools] deny \"everything/get-sum\""),
        "{text}"
    );
    // Its sibling still runs.
    let echo = call_as_host(
        &mut agent,
        "echo",
        json!({"message": "still served"}),
        project.path(),
    );
    assert_eq!(echo["result"]["isError"], Value::Null, "{echo}");

    let prompts = agent.list_items("prompts/list", "prompts");
    assert!(
        !names(&prompts).contains(&"simple-prompt") && names(&prompts).contains(&"args-prompt"),
        "{:?}",
        names(&prompts)
    );
    let got = agent.request("prompts/get", json!({"name": "simple-prompt"}));
    assert_eq!(got["error"]["data"]["error_code"], "PROMPT_DENIED", "{got}");
    assert_eq!(
        got["error"]["data"]["denied_by"]["rule"],
        "[prompts] deny \"everything/simple-prompt\""
    );
    let templates = agent.list_items("resources/templates/list", "resourceTemplates");
    let keys: Vec<&str> = templates
        .iter()
        .map(|t| t["uriTemplate"].as_str().unwrap())
        .collect();
    assert_eq!(keys, ["demo://resource/dynamic/text/{resourceId}"]);
    let read = agent.request(
        "resources/read",
        json!({"uri": "demo://resource/dynamic/blob/1"}),
    );
    assert_eq!(
        read["error"]["data"]["error_code"], "RESOURCE_TEMPLATE_DENIED",
        "{read}"
    );
    // A URI an allowed template matches is read (once a templates listing stands:
    // server-everything may announce list_changed as it starts).
    let mut read = Value::Null;
    for _ in 0..20 {
        read = agent.request(
            "resources/read",
            json!({"uri": "demo://resource/dynamic/text/1"}),
        );
        if read["error"]["data"]["error_code"] != "RESOURCE_TEMPLATES_NOT_VERIFIED" {
            break;
        }
        agent.list_items("resources/templates/list", "resourceTemplates");
        std::thread::sleep(Duration::from_millis(250));
    }
    assert!(read["result"].is_object(), "{read}");
    drop(agent);

    // Each denial is in the audit log with the rule, as the guard's other refusals are.
    let entries = audit(&project);
    let call = entries
        .iter()
        .find(|e| e["event"] == "tools/call" && e["tool"] == "get-sum")
        .unwrap();
    assert_eq!(call["decision"], "denied", "{call}");
    assert_eq!(call["error_code"], "TOOL_DENIED");
    assert_eq!(call["rule"], "[tools] deny \"everything/get-sum\"");
    let listing = entries.iter().find(|e| e["event"] == "tools/list").unwrap();
    assert_eq!(listing["decision"], "filtered", "{listing}");
    assert_eq!(listing["hidden"][0]["error_code"], "TOOL_DENIED");
    assert_eq!(
        listing["hidden"][0]["denied_by"]["rule"],
        "[tools] deny \"everything/get-sum\""
    );
    let get = entries
        .iter()
        .find(|e| e["event"] == "prompts/get")
        .unwrap();
    assert_eq!(
        (get["decision"].as_str(), get["rule"].as_str()),
        (
            Some("denied"),
            Some("[prompts] deny \"everything/simple-prompt\"")
        )
    );
}

#[test]
fn a_tool_claude_codes_section_allows_is_served_to_claude_code_and_refused_to_codex_and_to_an_unknown_host()
 {
    let project = everything_project();
    add_rules(
        &project,
        "[profiles]\npin = [\"claude-code\", \"codex\"]\n[tools]\ndeny = [\"everything/get-sum\"]\n[profile.claude-code.tools]\nallow = [\"everything/get-sum\"]\n",
    );
    project.run(&["update", "--yes"]).expect(0);

    let mut claude = McpPipe::guard(&project, &["everything"]);
    let tools = connect_as(&mut claude, &capabilities_of("claude-code"), project.path());
    assert!(names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    let answer = call_as_host(
        &mut claude,
        "get-sum",
        json!({"a": 1, "b": 2}),
        project.path(),
    );
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    assert!(answer.to_string().contains('3'), "{answer}");
    drop(claude);

    let mut codex = McpPipe::guard(&project, &["everything"]);
    let tools = connect_in(
        &mut codex,
        &capabilities_of("codex"),
        "2025-06-18",
        project.path(),
    );
    assert!(!names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));
    let answer = call_as_host(
        &mut codex,
        "get-sum",
        json!({"a": 1, "b": 2}),
        project.path(),
    );
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "TOOL_DENIED", "{answer}");
    assert_eq!(
        r["denied_by"]["rule"],
        "[tools] deny \"everything/get-sum\""
    );
    drop(codex);

    // A client whose handshake matches no pinned profile is not given what one host's
    // section allows.
    let mut stranger = McpPipe::guard(&project, &["everything"]);
    let tools = connect_as(
        &mut stranger,
        &json!({"experimental": {"stranger": {}}}),
        project.path(),
    );
    assert!(!names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    let answer = call_as_host(
        &mut stranger,
        "get-sum",
        json!({"a": 1, "b": 2}),
        project.path(),
    );
    assert_eq!(refusal(&answer)["error_code"], "TOOL_DENIED", "{answer}");
    drop(stranger);

    let profiles: Vec<String> = audit(&project)
        .into_iter()
        .filter(|e| e["event"] == "client_profile" && e["decision"] == "matched")
        .map(|e| e["profile"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(profiles, ["claude-code", "codex"]);
}

#[test]
fn a_deny_in_the_users_own_file_stays_denied_when_the_projects_file_allows_the_tool() {
    let project = everything_bare();
    add_rules(
        &project,
        "[tools]\nallow = [\"everything/*\"]\n[profile.bare.tools]\nallow = [\"everything/get-sum\"]\n",
    );
    let user = user_rules(&project, "[tools]\ndeny = [\"everything/get-sum\"]\n");
    let user_config = project.path().join(".user-config");
    let user_config = user_config.to_str().unwrap();
    project
        .run_env(&["update", "--yes"], &[("XDG_CONFIG_HOME", user_config)])
        .expect(0);
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "everything"],
        project.path(),
        &[("XDG_CONFIG_HOME", user_config)],
    );
    agent.initialize();
    let tools = agent.list_tools();
    assert!(!names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));
    let answer = call_as_host(
        &mut agent,
        "get-sum",
        json!({"a": 1, "b": 2}),
        project.path(),
    );
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "TOOL_DENIED", "{answer}");
    assert_eq!(
        r["denied_by"]["rule"],
        "[tools] deny \"everything/get-sum\""
    );
    assert_eq!(
        r["denied_by"]["source"].as_str(),
        Some(user.display().to_string().as_str())
    );
}

#[test]
fn an_argument_rule_refuses_a_call_with_another_value_before_anything_is_sent_and_lets_the_allowed_one_through()
 {
    let project = deploy_project(&[]);
    add_rules(
        &project,
        "[tools.arguments.\"deploy/deploy_preview\"]\nbranch = { pattern = \"^main$\" }\n",
    );
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.call("deploy_preview", json!({"branch": "fix-login"}));
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "ARGUMENT_DENIED", "{answer}");
    assert_eq!(r["side_effect_started"], false);
    assert_eq!(
        r["denied_by"]["rule"],
        "[tools.arguments.\"deploy/deploy_preview\"] branch: \"fix-login\" does not match /^main$/"
    );
    assert!(actions(&project).is_empty(), "{:?}", actions(&project));
    let answer = agent.call("deploy_preview", json!({"branch": "main"}));
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    let ran = actions(&project);
    assert_eq!(ran.len(), 1, "{ran:?}");
    assert_eq!(ran[0]["arguments"]["branch"], "main", "{ran:?}");
    drop(agent);
    let refused = audit(&project)
        .into_iter()
        .find(|e| e["event"] == "tools/call" && e["decision"] == "denied")
        .unwrap();
    assert_eq!(refused["error_code"], "ARGUMENT_DENIED");
    assert_eq!(refused["arguments"]["branch"], "fix-login");
}

#[test]
fn a_prompt_the_rules_deny_is_hidden_and_refused_even_where_the_lock_does_not_pin_prompts() {
    let project = everything_bare();
    add_rules(
        &project,
        "[surface]\nprompts = false\n[prompts]\ndeny = [\"everything/simple-prompt\"]\n",
    );
    project.run(&["update", "--yes"]).expect(0);
    assert!(!project.lock_text().unwrap().contains("simple-prompt"));
    let mut agent = McpPipe::guard(&project, &["everything"]);
    agent.initialize();
    // Asked for by name before any listing, it is refused all the same.
    let got = agent.request("prompts/get", json!({"name": "simple-prompt"}));
    assert_eq!(got["error"]["data"]["error_code"], "PROMPT_DENIED", "{got}");
    let prompts = agent.list_items("prompts/list", "prompts");
    assert!(
        !names(&prompts).contains(&"simple-prompt") && names(&prompts).contains(&"args-prompt"),
        "{:?}",
        names(&prompts)
    );
    let got = agent.request(
        "prompts/get",
        json!({"name": "args-prompt", "arguments": {"city": "Oslo"}}),
    );
    assert!(got["result"].is_object(), "{got}");
    drop(agent);
    let listing = audit(&project)
        .into_iter()
        .find(|e| e["event"] == "prompts/list" && e["decision"] == "filtered")
        .unwrap();
    assert_eq!(
        listing["hidden"][0]["error_code"], "PROMPT_DENIED",
        "{listing}"
    );
}
