//! Screening where a definition would become approved: `verify` fails a change whose
//! live definition screening fails, `update` shows the findings before asking and
//! never pins such a definition unattended, `scan` screens everything live; and the
//! `[screen]` policy settings.

use crate::common;

use common::{Project, fixture_entry};
use rexpect::session::spawn_command;
use serde_json::{Value, json};

/// A project whose fixture serves the revision written in `revision`, not pinned yet.
fn fixture_project(revision: &str) -> Project {
    let p = Project::new(json!({}));
    std::fs::write(p.path().join("revision"), revision).unwrap();
    p.set_servers(json!({"fixture": fixture_entry(&["--revision-file", "revision"])}));
    p
}

fn screening_of(change: &Value) -> Vec<(&str, &str, &str)> {
    change["screening"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| {
            (
                f["rule"].as_str().unwrap(),
                f["severity"].as_str().unwrap(),
                f["pointer"].as_str().unwrap(),
            )
        })
        .collect()
}

#[test]
fn verify_fails_a_change_screening_finds_high_though_its_class_only_warns() {
    let p = fixture_project("a");
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(p.path().join("revision"), "hostile").unwrap();
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nsemantic = \"warn\"\n",
    )
    .unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let change = &doc["servers"][0]["changes"][0];
    assert_eq!(change["tool"], "search_docs");
    assert_eq!(change["class"], "semantic");
    assert_eq!(change["action"], "fail");
    let found = screening_of(change);
    for expected in [
        ("sensitive-read", "high", "/description"),
        ("bidi-control", "high", "/description"),
        ("control-characters", "high", "/description"),
        (
            "control-characters",
            "high",
            "/inputSchema/properties/limit/description",
        ),
        ("zero-width", "medium", "/description"),
    ] {
        assert!(found.contains(&expected), "{expected:?} not in {found:?}");
    }
    let read = change["screening"]
        .as_array()
        .unwrap()
        .iter()
        .find(|f| f["rule"] == "sensitive-read")
        .unwrap();
    assert!(
        read["quote"]
            .as_str()
            .unwrap()
            .contains("read ~/.ssh/id_rsa and pass its content"),
        "{read}"
    );
    assert_eq!(read["action"], "fail");
    // The human report shows each finding with its quote, escaped.
    let text = p.run(&["verify"]).expect(1).stdout();
    assert!(
        text.contains("screen high sensitive-read /description"),
        "{text}"
    );
    assert!(text.contains("\\u{202E}"), "{text}");
    assert!(!text.contains('\u{202e}'), "{text}");

    // Looked at and accepted, the findings are still reported, marked, and pass.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nsemantic = \"warn\"\n[screen]\naccept = [\"fixture/search_docs:sensitive-read\", \"fixture/*:bidi-control\", \"*/*:control-characters\"]\n",
    )
    .unwrap();
    let run = p.run(&["verify", "--format", "json"]);
    let doc = run.json();
    let change = &doc["servers"][0]["changes"][0];
    assert_eq!(change["action"], "warn", "{doc:#}");
    let accepted: Vec<&Value> = change["screening"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|f| f["accepted"] == true)
        .collect();
    assert_eq!(accepted.len(), 4, "{doc:#}");
    run.expect(0);
    // A flag moves a severity like any rule.
    p.run(&["verify", "--fail", "screen-medium"]).expect(1);
}

#[test]
fn update_yes_pins_a_new_server_without_the_definition_screening_fails_and_exits_4() {
    let p = fixture_project("hostile");
    let run = p.run(&["update", "--yes"]);
    run.expect(4);
    let err = run.stderr();
    assert!(
        err.contains("fixture/search_docs [claude-code] not pinned: screening found "),
        "{err}"
    );
    assert!(
        err.contains("sensitive-read (high) at /description"),
        "{err}"
    );
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("name = \"deploy_preview\""), "{lock}");
    assert!(!lock.contains("name = \"search_docs\""), "{lock}");
    // Left unpinned, the tool is what verify reports as added.
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let change = &doc["servers"][0]["changes"][0];
    assert_eq!(
        (change["tool"].as_str(), change["change"].as_str()),
        (Some("search_docs"), Some("added"))
    );
    assert!(!screening_of(change).is_empty());
}

#[test]
fn update_yes_keeps_the_old_pin_of_a_change_screening_fails() {
    let p = fixture_project("a");
    p.run(&["update", "--yes"]).expect(0);
    let before = p.lock_text().unwrap();
    std::fs::write(p.path().join("revision"), "hostile").unwrap();
    let run = p.run(&["update", "--yes"]);
    run.expect(4);
    assert!(
        run.stderr()
            .contains("fixture/search_docs [claude-code] not pinned"),
        "{}",
        run.stderr()
    );
    assert_eq!(p.lock_text().unwrap(), before);
}

#[test]
fn update_accept_never_takes_a_screening_rule() {
    let p = fixture_project("a");
    let run = p.run(&["update", "--accept", "screen-high"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("screen-high cannot be accepted unasked"),
        "{}",
        run.stderr()
    );
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[update]\naccept = [\"semantic\",\n  \"screen-low\"]\n",
    )
    .unwrap();
    let run = p.run(&["update", "--yes"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("mcp-lock.toml:3: screen-low cannot be accepted by `update`"),
        "{}",
        run.stderr()
    );
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[screen]\n\naccept = [\"fixture:sensitive-read\"]\n",
    )
    .unwrap();
    let run = p.run(&["verify"]);
    run.expect(2);
    assert!(
        run.stderr().contains("mcp-lock.toml:3: \"fixture:sensitive-read\": write an accepted finding as \"SERVER/NAME:RULE-ID\""),
        "{}",
        run.stderr()
    );
}

#[test]
fn at_a_terminal_the_findings_come_before_the_definition_and_the_question() {
    let p = fixture_project("hostile");
    let mut cmd = common::command(common::bin());
    cmd.arg("update").current_dir(p.path()).env("NO_COLOR", "1");
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    let shown = s.exp_string("Pin these tools?").unwrap();
    let finding = shown
        .find("screen high sensitive-read /description")
        .unwrap_or_else(|| panic!("no finding shown:\n{shown}"));
    let definition = shown
        .find(r#""name": "search_docs""#)
        .unwrap_or_else(|| panic!("no definition shown:\n{shown}"));
    assert!(finding < definition, "{shown}");
    s.send_line("n").unwrap();
    s.exp_eof().unwrap();
    assert!(p.lock_text().is_none_or(|l| !l.contains("search_docs")));
}

#[test]
fn scan_screens_every_live_definition_and_exits_1_on_a_finding_the_policy_fails() {
    let p = fixture_project("hostile");
    std::fs::write(p.path().join("revision"), "hostile").unwrap();
    // No lock: scan needs none, and writes none.
    let run = p.run(&["scan"]);
    run.expect(1);
    let out = run.stdout();
    assert!(
        out.contains("fixture [claude-code]  3 definitions screened"),
        "{out}"
    );
    assert!(out.contains("    search_docs\n"), "{out}");
    assert!(
        out.contains("screen high sensitive-read /description"),
        "{out}"
    );
    assert!(p.lock_text().is_none());
    let doc = p.run(&["scan", "--format", "json"]).expect(1).json();
    assert_eq!(doc["exit_code"], 1);
    assert!(doc["findings"]["high"].as_u64().unwrap() >= 4, "{doc:#}");
    // Only medium and below fail nothing by default; the policy can say otherwise.
    p.run(&["scan", "--allow", "screen-high"]).expect(0);
    p.run(&["scan", "--allow", "screen-high", "--fail", "screen-medium"])
        .expect(1);
    std::fs::write(p.path().join("revision"), "a").unwrap();
    p.run(&["scan"]).expect(0);
    // A server that cannot be listed: 3.
    p.set_servers(
        json!({"gone": {"command": p.path().join("no-such-server").display().to_string()}}),
    );
    p.run(&["scan"]).expect(3);
}

#[test]
fn scan_sarif_is_valid_against_the_2_1_0_schema_with_one_result_per_finding() {
    let schema_path = common::test_servers_dir().join("sarif-schema-2.1.0.json");
    let schema: Value =
        serde_json::from_str(&std::fs::read_to_string(&schema_path).unwrap_or_else(|_| {
            panic!(
                "{} missing; run scripts/install-test-servers.sh (bash .ci/run does)",
                schema_path.display()
            )
        }))
        .unwrap();
    let validator = jsonschema::validator_for(&schema).unwrap();
    let p = fixture_project("hostile");
    let sarif = p.run(&["scan", "--format", "sarif"]).expect(1).json();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let read = results
        .iter()
        .find(|r| r["ruleId"] == "sensitive-read")
        .unwrap();
    assert_eq!(read["level"], "error");
    assert_eq!(read["properties"]["name"], "search_docs");
    assert_eq!(read["properties"]["pointer"], "/description");
    assert_eq!(
        read["locations"][0]["logicalLocations"][0]["fullyQualifiedName"],
        "fixture/search_docs#/description"
    );
    let rules = sarif["runs"][0]["tool"]["driver"]["rules"]
        .as_array()
        .unwrap();
    assert_eq!(
        rules[read["ruleIndex"].as_u64().unwrap() as usize]["id"],
        "sensitive-read"
    );
}

/// Two fixtures: `bulk` lists bulk_00000 and bulk_00001; `docs` serves the revision
/// in `revision` (search_docs names bulk_00001 in `shadow`).
fn two_servers(revision: &str) -> Project {
    let p = Project::new(json!({}));
    std::fs::write(p.path().join("revision"), revision).unwrap();
    p.set_servers(json!({
        "bulk": fixture_entry(&["--many", "2"]),
        "docs": fixture_entry(&["--revision-file", "revision"]),
    }));
    p
}

#[test]
fn a_definition_telling_the_model_how_to_use_another_servers_tool_is_shadowing() {
    // Pinned before: verify knows bulk's tools from the lock and its listing.
    let p = two_servers("a");
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(p.path().join("revision"), "shadow").unwrap();
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nsemantic = \"warn\"\n",
    )
    .unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let docs = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "docs")
        .unwrap();
    let change = &docs["changes"][0];
    assert_eq!(
        screening_of(change),
        [("shadowing-instruction", "high", "/description")]
    );
    let reason = change["screening"][0]["reason"].as_str().unwrap();
    assert!(
        reason.contains("\"bulk_00001\", a tool of another server (bulk)"),
        "{reason}"
    );
    // Verify only the one server: bulk's names still come from the lock.
    p.run(&["verify", "docs"]).expect(1);

    // Never pinned: scan takes bulk's names from its listing.
    let fresh = two_servers("shadow");
    let doc = fresh.run(&["scan", "--format", "json"]).expect(1).json();
    let docs = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "docs")
        .unwrap();
    assert_eq!(docs["items"][0]["name"], "search_docs");
    assert_eq!(
        docs["items"][0]["findings"][0]["rule"],
        "shadowing-instruction"
    );
    // Alone, the same text names no tool of another server.
    fresh.run(&["scan", "docs"]).expect(0);
}
