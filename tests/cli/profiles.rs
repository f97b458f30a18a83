//! Client profiles: a lock pins what each agent host actually sees. Servers list
//! different tools to different capabilities; the lock records each profile's listing,
//! verify checks each one, and a version-1 lock keeps verifying as `bare`.

use crate::common;

use std::path::PathBuf;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

fn servers_dir() -> PathBuf {
    let dir = common::test_servers_dir();
    assert!(
        dir.join("npm/node_modules").is_dir(),
        "real MCP servers are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

fn npm_entry(package: &str) -> Value {
    let main = servers_dir()
        .join("npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    json!({"command": "node", "args": [main.display().to_string()]})
}

/// (name, profile, verdict, tools) of each listing in a JSON report.
fn listings(doc: &Value) -> Vec<(String, String, String, u64)> {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| {
            (
                s["name"].as_str().unwrap().to_string(),
                s["profile"].as_str().unwrap().to_string(),
                s["verdict"].as_str().unwrap().to_string(),
                s["tools"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}

/// The tool names a lock pins under one profile of its only server.
fn pinned_names(lock: &str, profile: &str) -> Vec<String> {
    let parsed = mcp_lock::records::lock::parse_lock(lock, "mcp.lock").unwrap();
    let server = parsed.servers.values().next().unwrap();
    server.profiles[profile].tools.keys().cloned().collect()
}

#[test]
fn server_everything_is_pinned_with_what_each_host_profile_is_offered() {
    let p = Project::new(json!({"everything": npm_entry("server-everything")}));
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"bare\", \"claude-code\", \"vscode\"]\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    let bare = pinned_names(&lock, "bare");
    let claude = pinned_names(&lock, "claude-code");
    let vscode = pinned_names(&lock, "vscode");
    assert_eq!((bare.len(), claude.len(), vscode.len()), (13, 16, 19));
    // Claude Code declares roots and both forms of elicitation, no sampling.
    for gated in [
        "get-roots-list",
        "trigger-elicitation-request",
        "trigger-url-elicitation",
    ] {
        assert!(!bare.contains(&gated.to_string()) && claude.contains(&gated.to_string()));
    }
    let sampling = "trigger-sampling-request".to_string();
    assert!(!claude.contains(&sampling) && vscode.contains(&sampling));
    // Each definition is written once however many profiles list it.
    assert_eq!(lock.matches("\n[[server.tool]]\n").count(), 19, "{lock}");
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(
        listings(&doc)
            .into_iter()
            .map(|(_, profile, verdict, tools)| (profile, verdict, tools))
            .collect::<Vec<_>>(),
        [
            ("bare".to_string(), "converged".to_string(), 13),
            ("claude-code".to_string(), "converged".to_string(), 16),
            ("vscode".to_string(), "converged".to_string(), 19),
        ]
    );
}

#[test]
fn a_newly_pinned_profile_counts_its_listing_by_kind() {
    let p = Project::new(json!({"everything": npm_entry("server-everything")}));
    p.run(&["update", "--yes", "--client", "bare"]).expect(0);
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"bare\", \"vscode\"]\n",
    )
    .unwrap();
    // vscode is offered 19 tools; prompts and templates are counted as themselves.
    let run = p.run(&["update"]);
    run.expect(4);
    let err = run.stderr();
    assert!(
        err.contains("everything [vscode]: client profile vscode not pinned yet; pin its listing (13 tools, 4 prompts, 2 templates already approved, 6 new or different)"),
        "{err}"
    );
    let run = p.run(&["update", "--yes"]);
    run.expect(0);
    let err = run.stderr();
    assert!(
        err.contains("Pinning everything [vscode] (19 tools, 4 prompts, 2 templates)"),
        "{err}"
    );
}

#[test]
fn a_tool_gone_under_one_profile_makes_only_that_profile_stale() {
    let p = Project::new(json!({"fixture": fixture_entry(&["--gated"])}));
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"claude-code\", \"vscode\"]\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(pinned_names(&lock, "vscode").contains(&"summarize".to_string()));
    assert!(!pinned_names(&lock, "claude-code").contains(&"summarize".to_string()));
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert!(listings(&doc).iter().all(|l| l.2 == "converged"), "{doc}");

    // `summarize` is offered to sampling clients only: only vscode declares sampling.
    p.set_servers(json!({"fixture": fixture_entry(&["--gated", "--hide-gated", "summarize"])}));
    let run = p.run(&["verify", "--format", "json"]);
    run.expect(1);
    let doc = run.json();
    let verdicts: Vec<(String, String)> = listings(&doc)
        .into_iter()
        .map(|(_, profile, verdict, _)| (profile, verdict))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("claude-code".to_string(), "converged".to_string()),
            ("vscode".to_string(), "stale".to_string())
        ]
    );
    let vscode = &doc["servers"][1];
    assert_eq!(vscode["changes"][0]["tool"], "summarize");
    assert_eq!(vscode["changes"][0]["change"], "removed");
    let human = p.run(&["verify"]);
    assert!(
        human.stdout().contains("fixture [vscode]       stale"),
        "{}",
        human.stdout()
    );
    // Every machine format names the profile of the change.
    let sarif: Value =
        serde_json::from_str(&p.run(&["verify", "--format", "sarif"]).stdout()).unwrap();
    let result = &sarif["runs"][0]["results"][0];
    assert_eq!(result["properties"]["profile"], "vscode", "{result}");
    assert!(
        result["message"]["text"]
            .as_str()
            .unwrap()
            .starts_with("fixture/summarize [vscode] removed"),
        "{result}"
    );
    let github = p.run(&["verify", "--format", "github"]).stdout();
    assert!(
        github.contains("::fixture/summarize [vscode] removed (tool-removed)"),
        "{github}"
    );
    let junit = p.run(&["verify", "--format", "junit"]).stdout();
    assert!(
        junit.contains("<testsuite name=\"fixture [vscode]\""),
        "{junit}"
    );
    assert!(
        junit.contains("<testsuite name=\"fixture [claude-code]\""),
        "{junit}"
    );
}

#[test]
fn the_start_up_api_verifies_what_one_host_profile_sees() {
    let p = Project::new(json!({"fixture": fixture_entry(&["--gated"])}));
    p.run(&["update", "--yes", "--client", "vscode"]).expect(0);
    let verification = mcp_lock::hosts::startup::Verifier::new(p.path())
        .client("vscode")
        .verify_blocking()
        .unwrap();
    assert!(verification.passed(), "{}", verification.summary());
    assert_eq!(verification.reports[0].profile, "vscode");
    assert_eq!(verification.reports[0].tools, Some(6));
    // A host whose profile the lock does not pin sees what it would lose or gain.
    let verification = mcp_lock::hosts::startup::Verifier::new(p.path())
        .client("bare")
        .verify_blocking()
        .unwrap();
    assert!(verification.passed(), "{}", verification.summary());
    assert!(!verification.reports[0].profile_pinned);
}

#[test]
fn a_tool_listed_only_when_roots_name_the_project_is_pinned_identically_from_two_checkout_paths() {
    let entry = json!({"fixture": fixture_entry(&["--gated"])});
    let one = Project::new(entry.clone());
    let two = Project::new(entry);
    one.run(&["update", "--yes"]).expect(0);
    two.run(&["update", "--yes"]).expect(0);
    let (a, b) = (one.lock_text().unwrap(), two.lock_text().unwrap());
    assert_eq!(a, b, "the lock depends on where the project is checked out");
    assert!(pinned_names(&a, "claude-code").contains(&"project_files".to_string()));
    for dir in [one.path(), two.path()] {
        assert!(!a.contains(&dir.display().to_string()), "{a}");
    }
    assert!(a.contains("roots = \"project-dir\""), "{a}");
    // A client with no roots is not offered the tool.
    one.run(&["update", "--yes", "--client", "bare"]).expect(0);
    let lock = one.lock_text().unwrap();
    assert!(!pinned_names(&lock, "bare").contains(&"project_files".to_string()));
}

#[test]
fn sampling_and_elicitation_asked_for_while_listing_are_refused_at_once() {
    for method in ["sampling/createMessage", "elicitation/create"] {
        let p = Project::new(json!({"fixture": fixture_entry(&["--ask", method])}));
        let run = p.run(&["update", "--yes", "--client", "vscode", "--timeout", "20"]);
        run.expect(0);
        assert!(
            run.elapsed < std::time::Duration::from_secs(10),
            "{method} took {:?}",
            run.elapsed
        );
        assert!(p.lock_text().unwrap().contains("name = \"vscode\""));
    }
}

#[test]
fn a_profile_defined_in_mcp_lock_toml_is_pinned_with_its_own_capabilities() {
    let p = Project::new(json!({"fixture": fixture_entry(&["--gated"])}));
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"my-agent\"]\n\n[profile.my-agent]\nprotocol-version = \"2025-06-18\"\ncapabilities = { sampling = {} }\nclient-info = { name = \"my-agent\", version = \"3.1\" }\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(
        pinned_names(&lock, "my-agent"),
        ["deploy_preview", "read_ticket", "search_docs", "summarize"]
    );
    assert!(lock.contains(r#"client_info = '{"name":"my-agent","version":"3.1"}'"#));
    assert!(lock.contains("protocol_version = \"2025-06-18\""), "{lock}");
    p.run(&["verify"]).expect(0);
}

#[test]
fn an_unknown_profile_is_a_usage_error_naming_the_known_ones() {
    let p = Project::new(json!({"fixture": fixture_entry(&[])}));
    let run = p.run(&["update", "--client", "emacs"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("unknown client profile \"emacs\"; the profiles are bare, claude-code, cline, codex, continue, cursor, gemini-cli, kilo-code, opencode, qwen-code, vscode"),
        "{}",
        run.stderr()
    );
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"claude-code\", \"vs-code\"]\n",
    )
    .unwrap();
    let run = p.run(&["update"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("mcp-lock.toml:2: unknown client profile \"vs-code\""),
        "{}",
        run.stderr()
    );
}

#[test]
fn verify_for_a_profile_the_lock_does_not_pin_judges_it_against_every_approved_definition() {
    let p = Project::new(json!({"fixture": fixture_entry(&["--gated"])}));
    p.run(&["update", "--yes"]).expect(0);
    let run = p.run(&["verify", "--client", "vscode", "--format", "json"]);
    run.expect(1);
    let doc = run.json();
    let server = &doc["servers"][0];
    assert_eq!(server["profile"], "vscode");
    assert_eq!(server["profile_pinned"], false);
    // Only what no pinned profile approves is a change: summarize (sampling).
    let changes: Vec<(&str, &str)> = server["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["change"].as_str().unwrap()))
        .collect();
    assert_eq!(changes, [("summarize", "added")]);
    assert!(
        server["error"]
            .as_str()
            .unwrap()
            .contains("`mcp-lock update fixture --client vscode`"),
        "{server}"
    );
}

#[test]
fn a_server_from_a_host_without_a_profile_is_listed_as_bare_with_a_notice() {
    let p = Project::new(json!({}));
    let config = p.path().join("claude_desktop_config.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"fixture": fixture_entry(&["--gated"])}}).to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let run = p.run(&["--config", &config, "update", "--yes"]);
    run.expect(0);
    assert!(
        run.stderr().contains("note: server \"fixture\" comes from Claude Desktop's config, which has no built-in client profile; it is listed as `bare`"),
        "{}",
        run.stderr()
    );
    assert_eq!(
        pinned_names(&p.lock_text().unwrap(), "bare"),
        ["deploy_preview", "read_ticket", "search_docs"]
    );
}

/// A lock written as format version 1 would have written it: one listing on the server
/// itself, tools only (for a lock pinned under `bare` alone).
fn as_version_1(lock: &str) -> String {
    let dropped = |line: &str| {
        line == "[[server.profile]]"
            || line == "name = \"bare\""
            || line.starts_with("profiles = ")
            || line.starts_with("prompts_set_hash = ")
            || line.starts_with("resource_templates_set_hash = ")
    };
    // Version 1 had no package pins: the `[server.package]` table goes, to its blank line.
    let mut in_package = false;
    let mut text: String = lock
        .lines()
        .filter(|line| {
            if *line == "[server.package]" {
                in_package = true;
            } else if line.is_empty() {
                in_package = false;
            }
            !in_package
        })
        .filter(|line| !dropped(line) && !line.starts_with("approved = "))
        .map(|line| {
            if line == "version = 8" {
                "version = 1"
            } else {
                line
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    text.push('\n');
    text
}

#[test]
fn a_version_1_lock_verifies_as_bare_and_update_offers_the_hosts_profile_with_the_tools_it_adds() {
    let p = Project::new(json!({"fixture": fixture_entry(&["--gated"])}));
    p.run(&["update", "--yes", "--client", "bare"]).expect(0);
    let v1 = as_version_1(&p.lock_text().unwrap());
    assert!(
        mcp_lock::records::lock::parse_lock(&v1, "mcp.lock").is_ok(),
        "{v1}"
    );
    assert!(v1.contains("\nversion = 1\n") && !v1.contains("[server.profile"));
    std::fs::write(p.path().join("mcp.lock"), &v1).unwrap();

    // An upgrade never turns a green CI red by itself.
    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(
        run.stdout().contains("fixture [bare]  converged"),
        "{}",
        run.stdout()
    );
    assert!(
        run.stderr()
            .contains("client profile claude-code is not pinned yet (the lock pins bare)"),
        "{}",
        run.stderr()
    );

    // The next update shows the switch and asks about it.
    let run = p.run(&["update"]);
    run.expect(4);
    let err = run.stderr();
    assert!(
        err.contains("fixture [claude-code]: client profile claude-code not pinned yet; pin its listing (3 tools already approved, 2 new or different)"),
        "{err}"
    );
    assert!(err.contains("added    confirm_deploy  tool-added"), "{err}");
    assert!(err.contains("added    project_files  tool-added"), "{err}");
    assert!(
        err.contains("fixture [bare]: client profile bare is no longer selected"),
        "{err}"
    );
    assert_eq!(p.lock_text().unwrap(), v1, "nothing was written");

    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("\nversion = 8\n"));
    let parsed = mcp_lock::records::lock::parse_lock(&lock, "mcp.lock").unwrap();
    assert_eq!(
        parsed.servers["fixture"]
            .profiles
            .keys()
            .collect::<Vec<_>>(),
        ["claude-code"]
    );
    p.run(&["verify"]).expect(0);
}

#[test]
fn the_committed_version_1_example_still_verifies_against_the_real_server_memory() {
    let p = Project::new(json!({}));
    let mut memory = npm_entry("server-memory");
    memory["env"] =
        json!({"MEMORY_FILE_PATH": p.path().join("memory.jsonl").display().to_string()});
    p.set_servers(json!({"memory": memory}));
    std::fs::write(
        p.path().join("mcp.lock"),
        include_str!("../data/mcp.lock.v1"),
    )
    .unwrap();
    let run = p.run(&["verify", "--format", "json"]);
    run.expect(0);
    let doc = run.json();
    assert_eq!(
        listings(&doc),
        [(
            "memory".to_string(),
            "bare".to_string(),
            "converged".to_string(),
            9
        )]
    );
}

/// A stdio server that appends every line it receives to `log` (tests/servers).
fn recording_entry(log: &std::path::Path) -> Value {
    let script =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/servers/recording_server.py");
    json!({"command": "python3", "args": [script.display().to_string(), log.display().to_string()]})
}

/// The messages a recording server received, in order.
fn recorded(log: &std::path::Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|line| serde_json::from_str(line).unwrap())
        .collect()
}

/// The handshakes recorded from each host's own release (docs/profiles.md), for a
/// server named `rec`: the `initialize` params each host sent as its first message.
fn observed_handshakes() -> Vec<(&'static str, Value)> {
    vec![
        (
            "cline",
            json!({"protocolVersion": "2024-11-05", "capabilities": {},
                   "clientInfo": {"name": "@cline/core", "version": "0.0.0"}}),
        ),
        (
            "continue",
            json!({"protocolVersion": "2025-11-25", "capabilities": {},
                   "clientInfo": {"name": "continue-cli-client", "version": "1.0.0"}}),
        ),
        (
            "kilo-code",
            json!({"protocolVersion": "2025-11-25", "capabilities": {"roots": {}},
                   "clientInfo": {"name": "kilo", "version": "7.7.9"}}),
        ),
        (
            "qwen-code",
            json!({"protocolVersion": "2025-11-25",
                   "capabilities": {
                       "extensions": {"io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}},
                       "roots": {}
                   },
                   "clientInfo": {"name": "qwen-cli-mcp-client-rec", "version": "0.0.1"}}),
        ),
    ]
}

#[test]
fn each_host_profile_observed_from_its_cli_sends_exactly_the_recorded_handshake() {
    for (profile, expected) in observed_handshakes() {
        let p = Project::empty();
        let log = p.path().join("received.jsonl");
        p.set_servers(json!({"rec": recording_entry(&log)}));
        p.run(&["update", "--yes", "--client", profile]).expect(0);
        let received = recorded(&log);
        assert_eq!(
            received[0]["method"], "initialize",
            "{profile}: {received:?}"
        );
        assert_eq!(received[0]["params"], expected, "{profile}");
        assert!(
            received.iter().all(|m| m["method"] != "server/discover"),
            "{profile} tried server/discover: {received:?}"
        );
        let lock = p.lock_text().unwrap();
        assert_eq!(pinned_names(&lock, profile), ["echo"], "{lock}");
        let info = serde_json::to_string(&expected["clientInfo"]).unwrap();
        assert!(
            lock.contains(&format!("client_info = '{info}'")),
            "{profile}: {lock}"
        );

        // verify sends the same handshake again, from the lock.
        std::fs::write(&log, "").unwrap();
        p.run(&["verify"]).expect(0);
        assert_eq!(recorded(&log)[0]["params"], expected, "{profile} at verify");
    }
}

#[test]
fn a_server_in_a_continue_or_cline_config_is_pinned_under_that_hosts_profile() {
    // Continue: a block file in the project's `.continue/mcpServers/`.
    let p = Project::empty();
    let log = p.path().join("received.jsonl");
    let entry = recording_entry(&log);
    let dir = p.path().join(".continue/mcpServers");
    std::fs::create_dir_all(&dir).unwrap();
    let block = format!(
        "name: rec\nversion: 0.0.1\nschema: v1\nmcpServers:\n  - name: rec\n    command: python3\n    args: {}\n",
        entry["args"]
    );
    std::fs::write(dir.join("rec.yaml"), block).unwrap();
    let run = p.run(&["update", "--yes"]);
    run.expect(0);
    assert!(
        !run.stderr().contains("no built-in client profile"),
        "{}",
        run.stderr()
    );
    let lock = p.lock_text().unwrap();
    assert_eq!(pinned_names(&lock, "continue"), ["echo"], "{lock}");
    assert_eq!(
        recorded(&log)[0]["params"]["clientInfo"]["name"],
        "continue-cli-client"
    );

    // Cline: its `cline_mcp_settings.json`.
    let p = Project::empty();
    let log = p.path().join("received.jsonl");
    let config = p.path().join("cline_mcp_settings.json");
    std::fs::write(
        &config,
        json!({"mcpServers": {"rec": recording_entry(&log)}}).to_string(),
    )
    .unwrap();
    let config = config.display().to_string();
    let run = p.run(&["--config", &config, "update", "--yes"]);
    run.expect(0);
    assert!(
        !run.stderr().contains("no built-in client profile"),
        "{}",
        run.stderr()
    );
    let lock = p.lock_text().unwrap();
    assert_eq!(pinned_names(&lock, "cline"), ["echo"], "{lock}");
    assert_eq!(recorded(&log)[0]["params"]["protocolVersion"], "2024-11-05");
}

#[test]
fn profiles_prints_each_builtin_and_defined_profile_as_it_is_sent_and_refuses_an_unknown_name() {
    let p = Project::empty();
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profile.my-agent]\nprotocol-version = \"2025-06-18\"\ncapabilities = { sampling = {} }\n",
    )
    .unwrap();
    let run = p.run(&["profiles", "--format", "json"]);
    run.expect(0);
    let doc = run.json();
    let names: Vec<&str> = doc["profiles"]
        .as_array()
        .unwrap()
        .iter()
        .map(|x| x["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        names,
        [
            "bare",
            "claude-code",
            "cline",
            "codex",
            "continue",
            "cursor",
            "gemini-cli",
            "kilo-code",
            "opencode",
            "qwen-code",
            "vscode",
            "my-agent"
        ]
    );
    let claude = &doc["profiles"][1];
    assert_eq!(claude["first_request"], "server/discover");
    assert_eq!(claude["initialize_version"], "2025-11-25");
    assert_eq!(claude["client_info"]["name"], "claude-code");
    let mine = &doc["profiles"][11];
    assert_eq!(mine["source"], "mcp-lock.toml");
    assert_eq!(mine["first_request"], "initialize");
    assert_eq!(mine["initialize_version"], "2025-06-18");
    assert_eq!(mine["capabilities"], json!({"sampling": {}}));

    let one = p.run(&["profiles", "codex"]);
    one.expect(0);
    assert!(
        one.stdout().starts_with("codex (builtin)\n"),
        "{}",
        one.stdout()
    );
    assert!(
        one.stdout().contains("2025-06-18 (initialize)"),
        "{}",
        one.stdout()
    );

    let unknown = p.run(&["profiles", "emacs"]);
    unknown.expect(2);
    assert!(
        unknown
            .stderr()
            .contains("unknown client profile \"emacs\""),
        "{}",
        unknown.stderr()
    );
    assert_eq!(unknown.stderr().lines().count(), 1, "{}", unknown.stderr());
}
