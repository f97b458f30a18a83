//! Tool rules (`[tools]`, `[profile.NAME.tools]`, argument rules, the user's own
//! file) as verify, update, servers, check-call and check-listing apply them: one
//! decision everywhere.

use crate::common;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

/// The fixture server pinned under `policy`, at revision a.
fn pinned_under(policy: &str) -> Project {
    let project = Project::new(json!({"deploy": fixture_entry(&[])}));
    std::fs::write(project.path().join("mcp-lock.toml"), policy).unwrap();
    project
}

fn denied_names(report: &Value, server: &str, profile: &str) -> Vec<String> {
    report["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|s| s["name"] == server && s["profile"] == profile)
        .flat_map(|s| s["denied"].as_array().cloned().unwrap_or_default())
        .map(|d| d["name"].as_str().unwrap().to_string())
        .collect()
}

#[test]
fn a_denied_tool_is_pinned_marked_by_update_listed_by_verify_and_refused_by_check_call() {
    let project = pinned_under("[tools]\ndeny = [\"deploy/deploy_*\"]\n");
    let update = project.run(&["update", "--yes"]);
    update.expect(0);
    assert!(
        update.stderr().contains(
            "tool deploy_preview is pinned but denied to claude-code: [tools] deny \"deploy/deploy_*\" in mcp-lock.toml"
        ),
        "{}",
        update.stderr()
    );
    assert!(project.lock_text().unwrap().contains("deploy_preview"));

    let verify = project.run(&["verify", "--format", "json"]);
    verify.expect(0);
    let report = verify.json();
    let denied = &report["servers"][0]["denied"][0];
    assert_eq!(denied["kind"], "tool");
    assert_eq!(denied["name"], "deploy_preview");
    assert_eq!(denied["rule"], "[tools] deny \"deploy/deploy_*\"");
    assert_eq!(denied["source"], "mcp-lock.toml");
    assert_eq!(denied["action"], "allow");
    let text = project.run(&["verify"]);
    text.expect(0);
    assert!(
        text.stdout()
            .contains("note: denied: tool deploy_preview to claude-code: [tools] deny \"deploy/deploy_*\" in mcp-lock.toml (pinned, never served)"),
        "{}",
        text.stdout()
    );

    let call = project.run(&[
        "check-call",
        "deploy",
        "deploy_preview",
        "--args",
        r#"{"branch": "main"}"#,
        "--format",
        "json",
    ]);
    call.expect(6);
    let call = call.json();
    assert_eq!(call["verdict"], "denied");
    assert_eq!(call["denied"]["rule"], "[tools] deny \"deploy/deploy_*\"");
    let other = project.run(&[
        "check-call",
        "deploy",
        "read_ticket",
        "--args",
        r#"{"id": "7"}"#,
    ]);
    other.expect(0);
}

#[test]
fn the_policy_can_make_a_denied_tool_fail_verify() {
    let project = pinned_under(
        "[tools]\ndeny = [\"deploy/search_docs\"]\n[verify]\ntool-denied = \"fail\"\n",
    );
    project.run(&["update", "--yes"]).expect(0);
    let verify = project.run(&["verify"]);
    verify.expect(1);
    assert!(
        verify
            .stdout()
            .contains("denied: tool search_docs to claude-code"),
        "{}",
        verify.stdout()
    );
    // And from the command line, as every rule can be.
    let project = pinned_under("[tools]\ndeny = [\"deploy/search_docs\"]\n");
    project.run(&["update", "--yes"]).expect(0);
    project.run(&["verify", "--fail", "tool-denied"]).expect(1);
}

#[test]
fn deny_when_judges_effective_annotations_and_except_names_a_tool_back_in() {
    // search_docs says nothing of its effects: in effect destructive. deploy_preview
    // says destructiveHint false; read_ticket is read-only.
    let project = pinned_under("[tools]\ndeny-when = [\"destructive\"]\n");
    project.run(&["update", "--yes"]).expect(0);
    let report = project.run(&["verify", "--format", "json"]);
    assert_eq!(
        denied_names(&report.json(), "deploy", "claude-code"),
        ["search_docs"]
    );
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[tools]\ndeny-when = [\"not-read-only\"]\nexcept = [\"deploy/search_docs\"]\n",
    )
    .unwrap();
    let report = project.run(&["verify", "--format", "json"]);
    assert_eq!(
        denied_names(&report.json(), "deploy", "claude-code"),
        ["deploy_preview"]
    );
}

#[test]
fn a_tool_a_host_section_allows_is_served_to_that_host_only() {
    let project = pinned_under(concat!(
        "[profiles]\npin = [\"claude-code\", \"codex\"]\n",
        "[tools]\ndeny = [\"deploy/deploy_preview\"]\n",
        "[profile.claude-code.tools]\nallow = [\"deploy/deploy_preview\"]\n",
    ));
    project.run(&["update", "--yes"]).expect(0);
    let report = project.run(&["verify", "--format", "json"]).json();
    assert!(denied_names(&report, "deploy", "claude-code").is_empty());
    assert_eq!(denied_names(&report, "deploy", "codex"), ["deploy_preview"]);
    let args = [
        "check-call",
        "deploy",
        "deploy_preview",
        "--args",
        r#"{"branch": "main"}"#,
    ];
    let with = |client: &str| {
        let mut a = args.to_vec();
        a.extend(["--client", client]);
        project.run(&a)
    };
    with("claude-code").expect(0);
    with("codex").expect(6);
    let servers = project.run(&["servers"]);
    servers.expect(0);
    let out = servers.stdout();
    assert!(
        out.contains("rules    for claude-code: 3 of 3 served"),
        "{out}"
    );
    assert!(
        out.contains("rules    for codex: 2 of 3 served; denied: deploy_preview ([tools] deny \"deploy/deploy_preview\")"),
        "{out}"
    );
    let json = project.run(&["servers", "--format", "json"]).json();
    let effective = &json["servers"][0]["effective"];
    assert_eq!(effective[1]["profile"], "codex");
    assert_eq!(effective[1]["tools"], json!(["read_ticket", "search_docs"]));
}

#[test]
fn a_users_deny_stays_denied_when_the_project_allows_the_tool() {
    let project = pinned_under(concat!(
        "[tools]\nallow = [\"deploy/*\"]\n",
        "[profile.claude-code.tools]\nallow = [\"deploy/deploy_preview\"]\n",
    ));
    let user_dir = project.path().join(".user-config/mcp-lock");
    std::fs::create_dir_all(&user_dir).unwrap();
    std::fs::write(
        user_dir.join("mcp-lock.toml"),
        "# the organisation's rules\n[tools]\ndeny = [\"*/deploy_*\"]\n",
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let call = project.run(&[
        "check-call",
        "deploy",
        "deploy_preview",
        "--args",
        r#"{"branch": "main"}"#,
        "--format",
        "json",
    ]);
    call.expect(6);
    let call = call.json();
    assert_eq!(call["denied"]["rule"], "[tools] deny \"*/deploy_*\"");
    assert!(
        call["denied"]["source"]
            .as_str()
            .unwrap()
            .ends_with(".user-config/mcp-lock/mcp-lock.toml"),
        "{call}"
    );
    // A user's file that cannot be understood stops the run: its rules are never
    // silently dropped.
    std::fs::write(
        user_dir.join("mcp-lock.toml"),
        "[tools]\ndeny = [\"no-server\"]\n",
    )
    .unwrap();
    let run = project.run(&["verify"]);
    run.expect(2);
    assert!(
        run.stderr().contains("mcp-lock.toml:2: "),
        "{}",
        run.stderr()
    );
}

#[test]
fn an_argument_rule_refuses_another_value_and_lets_the_allowed_one_through() {
    let project = pinned_under(
        "[tools.arguments.\"deploy/deploy_preview\"]\nbranch = { pattern = \"^main$\" }\n",
    );
    project.run(&["update", "--yes"]).expect(0);
    let call = |branch: &str| {
        project.run(&[
            "check-call",
            "deploy",
            "deploy_preview",
            "--args",
            &json!({ "branch": branch }).to_string(),
        ])
    };
    call("main").expect(0);
    let refused = call("release");
    refused.expect(6);
    assert!(
        refused.stderr().contains(
            "[tools.arguments.\"deploy/deploy_preview\"] branch: \"release\" does not match /^main$/ in mcp-lock.toml"
        ),
        "{}",
        refused.stderr()
    );
}

#[test]
fn a_real_servers_tools_that_are_not_read_only_are_denied_by_annotation() {
    let dir = common::test_servers_dir();
    let main = dir.join("npm/node_modules/@modelcontextprotocol/server-filesystem/dist/index.js");
    assert!(
        main.exists(),
        "{} missing; run scripts/install-test-servers.sh",
        main.display()
    );
    let root = tempfile::tempdir().unwrap();
    let project = Project::new(json!({"filesystem": {
        "command": "node",
        "args": [main.display().to_string(), root.path().display().to_string()],
    }}));
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[tools]\ndeny-when = [\"not-read-only\"]\n",
    )
    .unwrap();
    project.run(&["update", "--yes"]).expect(0);
    let report = project.run(&["verify", "--format", "json"]);
    report.expect(0);
    let denied = denied_names(&report.json(), "filesystem", "claude-code");
    for writer in ["write_file", "edit_file", "create_directory", "move_file"] {
        assert!(
            denied.iter().any(|d| d == writer),
            "{writer} not denied: {denied:?}"
        );
    }
    for reader in ["read_text_file", "list_directory", "search_files"] {
        assert!(
            !denied.iter().any(|d| d == reader),
            "{reader} denied: {denied:?}"
        );
    }
}
