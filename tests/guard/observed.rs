//! Observed handshakes: what the host really sent, recorded by the guard, shown by
//! verify and servers, pinned by update; another handshake is profile drift, said once.

use super::*;

/// initialize as a host named "Test Host" at `version` would, with these capabilities
/// and protocol version, answering roots/list; then every tool.
#[track_caller]
fn connect(agent: &mut McpPipe, capabilities: &Value, protocol: &str, version: &str) -> Vec<Value> {
    let init = agent.request(
        "initialize",
        json!({"protocolVersion": protocol, "capabilities": capabilities,
               "clientInfo": {"name": "test-host", "title": "Test Host", "version": version}}),
    );
    assert!(
        init["result"].is_object(),
        "{init}; stderr:\n{}",
        agent.stderr()
    );
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    agent.list_tools()
}

fn pinned_profile(project: &Project) -> (String, String, Value) {
    let lock: toml::Value = toml::from_str(&project.lock_text().unwrap()).unwrap();
    let p = &lock["server"][0]["profile"][0];
    (
        p["name"].as_str().unwrap().to_string(),
        p["protocol_version"].as_str().unwrap().to_string(),
        serde_json::from_str(p["client_capabilities"].as_str().unwrap()).unwrap(),
    )
}

fn handshakes(project: &Project) -> Value {
    let text = std::fs::read_to_string(project.path().join(".mcp-lock/handshakes.json"))
        .expect("the guard recorded the handshake");
    serde_json::from_str(&text).unwrap()
}

fn drift_entries(project: &Project) -> Vec<Value> {
    audit(project)
        .into_iter()
        .filter(|e| e["event"] == "client_profile" && e["decision"] == "profile_drift")
        .collect()
}

#[test]
fn a_host_sending_other_capabilities_is_recorded_named_profile_drift_once_shown_by_verify_and_servers_and_pinned_by_update()
 {
    let project = deploy_project(&[]);
    let (profile, _, pinned_caps) = pinned_profile(&project);
    let caps = json!({"sampling": {}, "roots": {"listChanged": true}});
    assert_ne!(caps, pinned_caps);

    let mut agent = McpPipe::guard(&project, &["deploy"]);
    let tools = connect(&mut agent, &caps, "2025-06-18", "7.0");
    assert!(!tools.is_empty());
    // Listing again does not say it again.
    agent.list_tools();
    drop(agent);
    let drift = drift_entries(&project);
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["nearest"], profile.as_str());
    assert!(
        drift[0]["difference"]
            .as_array()
            .unwrap()
            .contains(&json!("+/sampling")),
        "{}",
        drift[0]
    );
    assert!(
        drift[0]["message"]
            .as_str()
            .unwrap()
            .starts_with("profile drift: Test Host 7.0"),
        "{}",
        drift[0]
    );

    // Recorded: who, how, what, and the profile it was judged under.
    let seen = handshakes(&project);
    let entry = &seen["handshakes"][0];
    assert_eq!(entry["server"], "deploy");
    assert_eq!(entry["host"], "test-host");
    assert_eq!(entry["path"], "initialize");
    assert_eq!(entry["requested_version"], "2025-06-18");
    assert_eq!(entry["capabilities"], caps);
    assert_eq!(entry["roots_declared"], true);
    assert_eq!(entry["profile"], profile.as_str());
    assert_eq!(entry["matched"], false);

    // verify says so, and passes: CI judges what the lock pinned.
    let run = project.run(&["verify"]);
    run.expect(0);
    let stderr = run.stderr();
    assert!(
        stderr.contains(&format!(
            "deploy [{profile}]: Test Host 7.0 last sent capabilities"
        )) && stderr.contains("run `mcp-lock update deploy` to pin it"),
        "{stderr}"
    );
    let json = project.run(&["verify", "--format", "json"]);
    json.expect(0);
    let observed = &json.json()["observed_handshakes"][0];
    assert_eq!(observed["server"], "deploy");
    assert_eq!(observed["profile"], profile.as_str());
    assert_eq!(observed["capabilities"], caps);
    assert_eq!(observed["pinned_capabilities"], pinned_caps);
    assert!(
        observed["difference"]
            .as_array()
            .unwrap()
            .contains(&json!("+/sampling"))
    );
    let servers = project.run(&["servers", "--format", "json"]);
    servers.expect(0);
    assert_eq!(
        servers.json()["servers"][0]["observed_handshakes"][0]["capabilities"],
        caps
    );
    let human = project.run(&["servers"]);
    assert!(
        human.stdout().contains("observed") && human.stdout().contains("Test Host 7.0"),
        "{}",
        human.stdout()
    );

    // update shows the handshake as a change and pins it.
    let update = project.run(&["update", "--yes"]);
    update.expect(0);
    assert!(
        update
            .stderr()
            .contains("listed with the handshake Test Host 7.0 last sent"),
        "{}",
        update.stderr()
    );
    let (_, version, now) = pinned_profile(&project);
    assert_eq!(now, caps);
    assert_eq!(version, "2025-06-18");
    let run = project.run(&["verify"]);
    run.expect(0);
    assert!(!run.stderr().contains("last sent"), "{}", run.stderr());

    // The next session matches, and so does a newer host with the same handshake,
    // silently.
    for version in ["7.0", "8.1"] {
        let mut agent = McpPipe::guard(&project, &["deploy"]);
        connect(&mut agent, &caps, "2025-06-18", version);
        drop(agent);
    }
    assert_eq!(drift_entries(&project).len(), 1, "no new drift");
    let matched: Vec<Value> = audit(&project)
        .into_iter()
        .filter(|e| e["event"] == "client_profile" && e["decision"] == "matched")
        .collect();
    assert_eq!(matched.len(), 2, "{matched:?}");
    assert_eq!(
        handshakes(&project)["handshakes"][0]["client_info"]["version"],
        "8.1"
    );
}

#[test]
fn the_same_capabilities_in_another_protocol_version_is_profile_drift_judged_as_that_profile() {
    let project = deploy_project(&[]);
    let (profile, version, caps) = pinned_profile(&project);
    let other = if version == "2025-06-18" {
        "2025-03-26"
    } else {
        "2025-06-18"
    };
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    connect(&mut agent, &caps, other, "1");
    drop(agent);
    let drift = drift_entries(&project);
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["era_changed"], true);
    assert_eq!(drift[0]["judged_as"], profile.as_str());
    assert_eq!(drift[0]["difference"], json!([]));
    let run = project.run(&["verify", "--format", "json"]);
    run.expect(0);
    assert_eq!(run.json()["observed_handshakes"][0]["era_changed"], true);
}

#[test]
fn a_corrupt_oversized_or_symlinked_state_file_is_one_note_and_never_written_through() {
    let project = deploy_project(&[]);
    let state = project.path().join(".mcp-lock/handshakes.json");
    std::fs::create_dir_all(state.parent().unwrap()).unwrap();
    for (bytes, said) in [
        (
            b"{\"version\": 1, \"handshakes\": [".to_vec(),
            "does not read",
        ),
        (vec![b' '; 2 * 1024 * 1024], "larger than"),
    ] {
        std::fs::write(&state, bytes).unwrap();
        let run = project.run(&["verify"]);
        run.expect(0);
        assert_eq!(
            run.stderr().matches("handshakes.json is ignored").count(),
            1,
            "{}",
            run.stderr()
        );
        assert!(run.stderr().contains(said), "{}", run.stderr());
    }
    // A symlink out of the project: read as nothing, never written through.
    let outside = tempfile::tempdir().unwrap();
    let victim = outside.path().join("victim");
    std::fs::write(&victim, "keep").unwrap();
    std::fs::remove_file(&state).unwrap();
    std::os::unix::fs::symlink(&victim, &state).unwrap();
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    connect(&mut agent, &json!({"sampling": {}}), "2025-11-25", "1");
    // The note follows the handshake's answer: wait for it.
    let noted = agent.stderr_shows("not recorded");
    let stderr = agent.stderr();
    drop(agent);
    assert_eq!(std::fs::read_to_string(&victim).unwrap(), "keep");
    assert!(noted, "{stderr}");
    let run = project.run(&["verify"]);
    run.expect(0);
    assert!(run.stderr().contains("symlink"), "{}", run.stderr());
}

#[test]
fn the_shape_of_the_hosts_roots_answer_is_recorded_without_its_paths() {
    let project = deploy_project(&["--gated"]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
               "clientInfo": {"name": "rooted", "version": "1"}}),
    );
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    agent.send(&json!({"jsonrpc": "2.0", "id": 50, "method": "tools/list"}));
    let secret_path = "file:///home/someone/private-project";
    loop {
        let message = agent
            .next(Duration::from_secs(30))
            .unwrap_or_else(|| panic!("no listing; stderr:\n{}", agent.stderr()));
        if message["method"] == "roots/list" {
            agent.send(&json!({"jsonrpc": "2.0", "id": message["id"],
                "result": {"roots": [{"uri": secret_path}]}}));
        } else if message["id"] == 50 {
            break;
        }
    }
    drop(agent);
    let seen = handshakes(&project);
    let entry = &seen["handshakes"][0];
    assert_eq!(entry["host"], "rooted");
    assert_eq!(
        entry["roots_answer"],
        json!({"count": 1, "named": false, "schemes": ["file"]}),
        "{entry}"
    );
    assert!(!seen.to_string().contains("private-project"));
}

fn client_profile_decisions(project: &Project) -> Vec<(String, Value)> {
    audit(project)
        .into_iter()
        .filter(|e| e["event"] == "client_profile")
        .map(|e| (e["decision"].as_str().unwrap().to_string(), e))
        .collect()
}

/// Claude Code: `server/discover` first, `initialize` 2025-11-25 on -32601.
#[track_caller]
fn hello_as_claude_code(agent: &mut McpPipe, capabilities: &Value) -> &'static str {
    let meta = json!({
        "io.modelcontextprotocol/protocolVersion": "2026-07-28",
        "io.modelcontextprotocol/clientCapabilities": capabilities,
        "io.modelcontextprotocol/clientInfo": {"name": "claude-code", "version": "2.1.340"},
    });
    let discover = agent.request("server/discover", json!({"_meta": meta}));
    if discover["result"].is_object() {
        return "server/discover";
    }
    assert_eq!(discover["error"]["code"], -32601, "{discover}");
    let init = agent.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": capabilities,
               "clientInfo": {"name": "claude-code", "version": "2.1.340"}}),
    );
    assert!(init["result"].is_object(), "{init}");
    "initialize"
}

#[test]
fn claude_codes_discover_matches_a_modern_pin_and_its_fallback_initialize_matches_a_fallback_pin() {
    for (era, pinned, path) in [
        ("modern", "2026-07-28", "server/discover"),
        ("legacy", "2025-11-25", "initialize"),
    ] {
        let project = deploy_project(&["--era", era]);
        let (profile, version, caps) = pinned_profile(&project);
        assert_eq!(
            (profile.as_str(), version.as_str()),
            ("claude-code", pinned)
        );
        let mut agent = McpPipe::guard(&project, &["deploy"]);
        assert_eq!(hello_as_claude_code(&mut agent, &caps), path);
        drop(agent);
        let decisions = client_profile_decisions(&project);
        assert_eq!(decisions.len(), 1, "{era}: {decisions:?}");
        assert_eq!(decisions[0].0, "matched", "{era}: {decisions:?}");
        let seen = handshakes(&project);
        assert_eq!(seen["handshakes"][0]["path"], path);
        assert_eq!(seen["handshakes"][0]["matched"], true);
    }
}

#[test]
fn an_initialize_to_a_profile_pinned_over_server_discover_is_era_drift() {
    let project = deploy_project(&["--era", "dual"]);
    let (profile, version, caps) = pinned_profile(&project);
    assert_eq!(version, "2026-07-28");
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    connect(&mut agent, &caps, "2025-11-25", "2.1.340");
    drop(agent);
    let drift = drift_entries(&project);
    assert_eq!(drift.len(), 1, "{drift:?}");
    assert_eq!(drift[0]["era_changed"], true);
    assert_eq!(drift[0]["path"], "initialize");
    assert_eq!(drift[0]["pinned_protocol_version"], "2026-07-28");
    // One line says it: no second one about the unpinned version.
    assert!(
        !audit(&project)
            .iter()
            .any(|e| e["event"] == "protocol_unpinned")
    );
    assert_eq!(drift[0]["judged_as"], profile.as_str());
    let run = project.run(&["verify"]);
    run.expect(0);
    assert!(
        run.stderr().contains(
            "over initialize 2025-11-25 where the lock pinned server/discover 2026-07-28"
        ),
        "{}",
        run.stderr()
    );
    // update pins the era the host speaks; its next session matches.
    project.run(&["update", "--yes"]).expect(0);
    assert_eq!(pinned_profile(&project).1, "2025-11-25");
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    connect(&mut agent, &caps, "2025-11-25", "2.1.341");
    drop(agent);
    assert_eq!(drift_entries(&project).len(), 1, "no new drift");
    let last = client_profile_decisions(&project).pop().unwrap();
    assert_eq!(last.0, "matched", "{last:?}");
}
