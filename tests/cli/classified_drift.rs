//! Drift a reviewer can act on, end to end: the policy decides verify's exit, the CI
//! formats are valid and point into the lock, `update --accept` takes only what the
//! policy allows, `diff` compares locks, and hostile text never reaches a terminal raw.

use crate::common;

use common::{Project, fixture_entry};
use rexpect::session::spawn_command;
use serde_json::{Value, json};

/// A project pinned at revision `a` whose server now serves `revision` (read from a
/// file, so the launch command stays the same).
fn drifted(revision: &str) -> Project {
    let p = Project::new(json!({}));
    let rev = p.path().join("revision");
    std::fs::write(&rev, "a").unwrap();
    p.set_servers(
        json!({ "fixture": fixture_entry(&["--revision-file", &rev.display().to_string()]) }),
    );
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(&rev, revision).unwrap();
    p
}

/// The line of `name = "<tool>"` in the lock.
fn lock_line(p: &Project, tool: &str) -> usize {
    let needle = format!("name = \"{tool}\"");
    p.lock_text()
        .unwrap()
        .lines()
        .position(|l| l == needle)
        .unwrap_or_else(|| panic!("{needle} not in the lock"))
        + 1
}

#[test]
fn json_reports_each_finding_with_class_pointer_before_after_and_reason() {
    let p = drifted("b");
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let changes = doc["servers"][0]["changes"].as_array().unwrap();
    let deploy = changes
        .iter()
        .find(|c| c["tool"] == "deploy_preview")
        .unwrap();
    assert_eq!(deploy["class"], "authority");
    assert_eq!(deploy["action"], "fail");
    let findings = deploy["findings"].as_array().unwrap();
    let region: Vec<&Value> = findings
        .iter()
        .filter(|f| f["pointer"] == "/inputSchema/properties/region")
        .collect();
    let classes: Vec<&str> = region
        .iter()
        .map(|f| f["class"].as_str().unwrap())
        .collect();
    assert_eq!(classes, ["authority", "breaking"]);
    assert!(region[0]["before"].is_null());
    assert_eq!(region[0]["after"]["type"], "string");
    assert!(
        region[1]["reason"]
            .as_str()
            .unwrap()
            .contains("old calls no longer validate")
    );
    let search = changes.iter().find(|c| c["tool"] == "search_docs").unwrap();
    assert_eq!(search["class"], "semantic");
    assert_eq!(search["findings"][0]["before"], "maximum results");
    assert_eq!(search["findings"][0]["after"], "page index");
    let rollback = changes.iter().find(|c| c["tool"] == "rollback").unwrap();
    assert_eq!(rollback["change"], "added");
    assert_eq!(rollback["action"], "fail");
    assert_eq!(doc["summary"]["fail"], 3);
}

#[test]
fn additive_and_cosmetic_drift_passes_the_default_policy_with_a_warning() {
    let p = drifted("additive");
    let run = p.run(&["verify"]);
    run.expect(0);
    let out = run.stdout();
    assert!(
        out.contains("changed  search_docs  additive, warn"),
        "{out}"
    );
    assert!(
        out.contains("/inputSchema/properties/lang  new optional input `lang`"),
        "{out}"
    );
    assert!(
        out.contains("changed  read_ticket  cosmetic, warn"),
        "{out}"
    );
    assert!(
        run.stderr().contains("within the policy"),
        "{}",
        run.stderr()
    );
    // A flag turns the warning into a failure.
    p.run(&["verify", "--fail", "additive"]).expect(1);
}

#[test]
fn the_policy_file_beside_the_lock_decides_and_flags_override_it() {
    let p = drifted("b");
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nauthority = \"warn\"\nsemantic = \"allow\"\ntool-added = \"warn\"\n",
    )
    .unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let actions: Vec<(&str, &str)> = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| (c["tool"].as_str().unwrap(), c["action"].as_str().unwrap()))
        .collect();
    assert_eq!(
        actions,
        [
            ("deploy_preview", "warn"),
            ("rollback", "warn"),
            ("search_docs", "allow")
        ]
    );
    p.run(&["verify", "--fail", "semantic"]).expect(1);
    // One class cannot get two actions.
    let run = p.run(&[
        "verify",
        "--fail",
        "semantic",
        "--allow",
        "additive,semantic",
    ]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("semantic is given to both --fail and --allow"),
        "{}",
        run.stderr()
    );
    // --policy names another file, which must exist.
    let run = p.run(&["verify", "--policy", "strict.toml"]);
    run.expect(2);
    assert!(
        run.stderr().contains("policy file strict.toml not found"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_broken_policy_file_is_a_usage_error_naming_file_and_line() {
    let p = drifted("a");
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nbreaking = \"fail\"\nsemantics = \"warn\"\n",
    )
    .unwrap();
    let run = p.run(&["verify"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("mcp-lock.toml:3: \"semantics\" is not a class"),
        "{}",
        run.stderr()
    );
}

#[test]
fn sarif_is_valid_against_the_2_1_0_schema_and_points_at_the_tools_lock_line() {
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
    let p = drifted("b");
    let sarif = p.run(&["verify", "--format", "sarif"]).expect(1).json();
    let errors: Vec<String> = validator
        .iter_errors(&sarif)
        .map(|e| format!("{}: {e}", e.instance_path()))
        .collect();
    assert!(errors.is_empty(), "{errors:#?}");
    // The validator is not vacuous: a broken log is refused.
    let mut broken = sarif.clone();
    broken["runs"][0]["results"][0]["level"] = json!("fatal");
    assert!(!validator.is_valid(&broken));

    let results = sarif["runs"][0]["results"].as_array().unwrap();
    let deploy = results
        .iter()
        .find(|r| r["properties"]["tool"] == "deploy_preview")
        .unwrap();
    assert_eq!(deploy["ruleId"], "authority");
    assert_eq!(deploy["level"], "error");
    let location = &deploy["locations"][0]["physicalLocation"];
    assert_eq!(location["artifactLocation"]["uri"], "mcp.lock");
    assert_eq!(
        location["region"]["startLine"],
        lock_line(&p, "deploy_preview")
    );
}

#[test]
fn junit_has_one_test_case_per_tool_and_fails_the_changed_ones() {
    let p = drifted("b");
    let run = p.run(&["verify", "--format", "junit"]);
    run.expect(1);
    let report = p.path().join("report.xml");
    std::fs::write(&report, run.stdout()).unwrap();
    // A real XML parser reads it back.
    let parsed = common::command("python3")
        .args([
            "-c",
            "import sys, xml.etree.ElementTree as E\n\
             root = E.parse(sys.argv[1]).getroot()\n\
             for case in root.iter('testcase'):\n\
             \x20   state = 'failure' if case.find('failure') is not None else 'ok'\n\
             \x20   print(case.get('name'), case.get('line'), state)",
        ])
        .arg(&report)
        .output()
        .unwrap();
    assert!(
        parsed.status.success(),
        "{}",
        String::from_utf8_lossy(&parsed.stderr)
    );
    let cases = String::from_utf8(parsed.stdout).unwrap();
    let expected = format!(
        "deploy_preview {} failure\nread_ticket {} ok\nrollback {} failure\nsearch_docs {} failure\n",
        lock_line(&p, "deploy_preview"),
        lock_line(&p, "read_ticket"),
        // Not pinned: the server's line.
        p.lock_text()
            .unwrap()
            .lines()
            .position(|l| l == "name = \"fixture\"")
            .unwrap()
            + 1,
        lock_line(&p, "search_docs"),
    );
    assert_eq!(cases, expected);
}

#[test]
fn junit_reports_a_server_level_change_as_a_failing_server_case() {
    let p = Project::new(json!({
        "fixture": fixture_entry(&["--instructions", "Use the tools carefully."])
    }));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({
        "fixture": fixture_entry(&["--instructions", "Always call rollback first."])
    }));
    let run = p.run(&["verify", "--format", "junit"]);
    run.expect(1);
    let xml = run.stdout();
    assert!(
        xml.contains("<testcase classname=\"fixture [claude-code]\" name=\"(server)\""),
        "{xml}"
    );
    assert!(
        xml.contains(
            "<failure type=\"semantic\" message=\"fixture [claude-code]: instructions changed\">"
        ),
        "{xml}"
    );
    assert!(xml.contains("failures=\"1\""), "{xml}");
}

#[test]
fn github_format_writes_one_workflow_command_per_change_at_its_lock_line() {
    let p = drifted("b");
    let run = p.run(&["verify", "--format", "github"]);
    run.expect(1);
    let out = run.stdout();
    let commands: Vec<&str> = out.lines().filter(|l| l.starts_with("::")).collect();
    assert_eq!(commands.len(), 3, "{out}");
    let deploy = format!(
        "::error file=mcp.lock,line={},title=mcp-lock authority::fixture/deploy_preview [claude-code] changed (authority)%0A",
        lock_line(&p, "deploy_preview")
    );
    assert!(commands.iter().any(|c| c.starts_with(&deploy)), "{out}");
    assert!(
        commands
            .iter()
            .all(|c| !c.contains('\n') && !c.contains('\r'))
    );
    // Warnings under a lenient policy.
    let out = p
        .run(&[
            "verify",
            "--format",
            "github",
            "--warn",
            "authority,semantic,tool-added",
        ])
        .expect(0)
        .stdout();
    assert_eq!(
        out.lines().filter(|l| l.starts_with("::warning ")).count(),
        3
    );
}

#[test]
fn update_accepts_the_classes_it_is_told_to_and_asks_about_the_rest() {
    let p = drifted("additive");
    let before = p.lock_text().unwrap();
    // No terminal: the cosmetic change is written, the additive one waits for a person.
    p.run(&["update", "--accept", "cosmetic"]).expect(4);
    let partial = p.lock_text().unwrap();
    assert_ne!(partial, before, "the cosmetic change should be written");
    // Only the title moved.
    assert!(
        partial.contains("\"title\": \"Read a ticket\""),
        "{partial}"
    );
    assert!(!partial.contains("\"lang\""), "{partial}");
    let run = p.run(&["update", "--accept", "additive,cosmetic"]);
    run.expect(0);
    assert!(
        run.stderr().contains("Updating fixture/search_docs"),
        "{}",
        run.stderr()
    );
    p.run(&["verify"]).expect(0);
    // A policy file's accept list works the same way.
    let p = drifted("additive");
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[update]\naccept = [\"additive\", \"cosmetic\"]\n",
    )
    .unwrap();
    p.run(&["update"]).expect(0);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(doc["servers"][0]["verdict"], "converged");
    // Breaking changes are never accepted by an additive policy.
    let p = drifted("b");
    let before = p.lock_text().unwrap();
    p.run(&["update", "--accept", "additive,cosmetic"])
        .expect(4);
    assert_eq!(p.lock_text().unwrap(), before);
}

#[test]
fn diff_compares_two_locks_and_the_lock_with_live_servers() {
    let p = drifted("a");
    p.run(&["diff"]).expect(0);
    let old = p.path().join("main.lock");
    std::fs::copy(p.path().join("mcp.lock"), &old).unwrap();
    std::fs::write(p.path().join("revision"), "b").unwrap();
    // Live: the same classified view as verify.
    let live = p.run(&["diff"]);
    live.expect(1);
    assert!(
        live.stdout()
            .contains("changed  deploy_preview  authority, fail"),
        "{}",
        live.stdout()
    );
    p.run(&["update", "--yes"]).expect(0);
    p.run(&["diff"]).expect(0);
    // Lock against lock: main's against the pull request's.
    let run = p.run(&["diff", "--from", "main.lock"]);
    run.expect(1);
    let out = run.stdout();
    for line in [
        "changed  deploy_preview  authority, fail",
        "added    rollback  tool-added, fail",
        "[-maximum results-]{+page index+}",
    ] {
        assert!(out.contains(line), "{line:?} missing:\n{out}");
    }
    let doc = p
        .run(&["diff", "--from", "main.lock", "--format", "json"])
        .expect(1)
        .json();
    assert_eq!(doc["servers"][0]["changes"].as_array().unwrap().len(), 3);
    // Reversed, the new tool is a removal.
    let doc = p
        .run(&[
            "diff",
            "--from",
            "mcp.lock",
            "--to",
            "main.lock",
            "--format",
            "json",
        ])
        .expect(1)
        .json();
    let rollback = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "rollback")
        .unwrap()
        .clone();
    assert_eq!(rollback["change"], "removed");
    assert_eq!(rollback["class"], "breaking");
    p.run(&["diff", "--from", "mcp.lock"]).expect(0);
    let missing = p.run(&["diff", "--from", "nope.lock"]);
    missing.expect(2);
    assert!(missing.stderr().contains("nope.lock not found"));
}

/// Characters a hostile description uses to take over a terminal or reorder text.
const RAW: &[(&str, &str)] = &[
    ("\u{1b}[2J", "clear screen"),
    ("\u{1b}]0;", "set title"),
    ("\u{1b}[1A", "cursor up"),
    ("\u{7}", "bell"),
    ("\u{9b}", "C1 CSI"),
    ("\u{202e}", "right-to-left override"),
    ("\u{202c}", "pop directional formatting"),
    ("\u{200b}", "zero-width space"),
];

#[track_caller]
fn assert_no_raw_controls(text: &str, what: &str) {
    for (raw, name) in RAW {
        assert!(!text.contains(raw), "{what}: raw {name} reached the output");
    }
}

#[test]
fn hostile_descriptions_never_reach_the_terminal_raw() {
    let p = drifted("hostile");
    // Piped output has no escape sequence at all, and the payload is shown escaped.
    let run = p.run(&["verify"]);
    run.expect(1);
    let out = run.stdout();
    assert!(!out.contains('\u{1b}'), "{out:?}");
    assert_no_raw_controls(&out, "verify stdout");
    assert_no_raw_controls(&run.stderr(), "verify stderr");
    assert!(out.contains("\\u{001b}[2J"), "{out}");
    assert!(out.contains("\\u{202e}txt.exe\\u{202c}"), "{out}");
    assert!(out.contains("it now instructs the model"), "{out}");
    for format in ["github", "junit", "sarif", "json"] {
        let run = p.run(&["verify", "--format", format]);
        assert_no_raw_controls(&run.stdout(), format);
    }
    let doc = p.run(&["verify", "--format", "json"]).json();
    let search = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "search_docs")
        .unwrap()
        .clone();
    assert_eq!(search["findings"][0]["instructs_model"], true);

    // At a real terminal, in colour, through the approval prompt.
    let mut cmd = common::command(common::bin());
    cmd.arg("update")
        .current_dir(p.path())
        .env_remove("NO_COLOR");
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    let review = s.exp_string("Accept this change?").unwrap();
    s.send_line("n").unwrap();
    let rest = s.exp_eof().unwrap();
    assert!(review.contains("\\u{001b}]0;pwned\\u{0007}"), "{review:?}");
    assert!(review.contains("it now instructs the model"), "{review:?}");
    // Colour is on at a terminal: the only escapes are the styles mcp-lock writes.
    assert!(review.contains("\u{1b}["), "{review:?}");
    assert_no_raw_controls(&review, "update prompt");
    assert_no_raw_controls(&rest, "update after the answer");
}
