//! `mcp-lock check-call`: a planned call judged against the pinned and the live
//! contract, with the exit code saying which problem it has.

use crate::common;

use common::{Project, fixture_entry};
use serde_json::json;

/// A project pinned at revision a whose server now serves `serving`.
fn project_serving(serving: &str) -> Project {
    let project = Project::new(json!({"deploy": fixture_entry(&["--revision-file", "rev"])}));
    std::fs::write(project.path().join("rev"), "a").unwrap();
    project.run(&["update", "--yes"]).expect(0);
    std::fs::write(project.path().join("rev"), serving).unwrap();
    project
}

#[test]
fn a_call_that_fits_an_unchanged_contract_exits_0() {
    let project = project_serving("a");
    let run = project.run(&[
        "check-call",
        "deploy",
        "deploy_preview",
        "--args",
        r#"{"branch": "main"}"#,
    ]);
    run.expect(0);
    assert!(
        run.stdout()
            .contains("contract:       unchanged since the pin"),
        "{}",
        run.stdout()
    );
}

#[test]
fn a_planned_call_after_a_breaking_change_exits_1_with_the_class_and_both_checks() {
    let project = project_serving("b");
    let run = project.run(&[
        "check-call",
        "deploy",
        "deploy_preview",
        "--args",
        r#"{"branch": "fix-login"}"#,
        "--format",
        "json",
    ]);
    run.expect(1);
    let report = run.json();
    assert_eq!(report["verdict"], "contract_changed");
    assert_eq!(report["pinned"]["valid"], true);
    assert_eq!(report["live"]["valid"], false);
    assert_eq!(report["live"]["violations"][0]["path"], "");
    assert_eq!(report["change"]["class"], "authority");
    assert_eq!(report["change"]["action"], "fail");
    assert_ne!(report["pinned"]["hash"], report["live"]["hash"]);
}

#[test]
fn arguments_that_do_not_fit_an_unchanged_contract_exit_5_naming_the_path() {
    let project = project_serving("a");
    let run = project.run(&[
        "check-call",
        "deploy",
        "read_ticket",
        "--args",
        r#"{"id": 7}"#,
    ]);
    run.expect(5);
    assert!(run.stdout().contains("at /id:"), "{}", run.stdout());
}

#[test]
fn a_change_the_policy_allows_still_checks_the_arguments() {
    // search_docs's limit description was reworded in b: semantic.
    let project = project_serving("b");
    let args = [
        "check-call",
        "deploy",
        "search_docs",
        "--args",
        r#"{"query": "x"}"#,
    ];
    project.run(&args).expect(1);
    let mut lenient = args.to_vec();
    lenient.extend(["--allow", "semantic"]);
    project.run(&lenient).expect(0);
}

#[test]
fn a_tool_the_lock_never_pinned_is_a_changed_contract() {
    let project = project_serving("b");
    let run = project.run(&[
        "check-call",
        "deploy",
        "rollback",
        "--args",
        r#"{"branch": "x"}"#,
        "--format",
        "json",
    ]);
    run.expect(1);
    assert_eq!(run.json()["pinned"]["present"], false);
    assert_eq!(run.json()["change"]["change"], "added");
}

#[test]
fn an_unreachable_server_exits_3_and_bad_arguments_text_exits_2() {
    let project = Project::new(json!({"deploy": fixture_entry(&[])}));
    project.run(&["update", "--yes"]).expect(0);
    project.set_servers(json!({"deploy": fixture_entry(&["--misbehave", "exit-at-start"])}));
    project
        .run(&[
            "check-call",
            "deploy",
            "read_ticket",
            "--args",
            r#"{"id": "1"}"#,
        ])
        .expect(3);
    let run = project.run(&[
        "check-call",
        "deploy",
        "read_ticket",
        "--args",
        r#"{"id": "1", "id": "2"}"#,
    ]);
    run.expect(2);
    assert!(run.stderr().contains("repeated"), "{}", run.stderr());
    project
        .run(&["check-call", "deploy", "read_ticket", "--args", "[1]"])
        .expect(2);
}

#[test]
fn arguments_can_come_from_a_file() {
    let project = project_serving("a");
    std::fs::write(project.path().join("call.json"), r#"{"id": "T-9"}"#).unwrap();
    project
        .run(&[
            "check-call",
            "deploy",
            "read_ticket",
            "--args",
            "@call.json",
        ])
        .expect(0);
}

#[test]
fn check_call_and_the_guard_refuse_the_same_deeply_nested_arguments() {
    let project = project_serving("a");
    let levels = 200;
    let deep = format!("{}1{}", "[".repeat(levels), "]".repeat(levels));
    let arguments = format!(r#"{{"id": "T-1", "extra": {deep}}}"#);
    let run = project.run(&[
        "check-call",
        "deploy",
        "read_ticket",
        "--args",
        &arguments,
        "--format",
        "json",
    ]);
    run.expect(5);
    let report = run.json();
    assert_eq!(report["verdict"], "invalid_arguments");
    let said = report["pinned"]["violations"][0].clone();
    assert_eq!(report["live"]["violations"][0], said);

    // The guard, in front of the same server, refuses the same call the same way.
    let mut agent = common::McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    agent.send_raw(&format!(
        r#"{{"jsonrpc":"2.0","id":9,"method":"tools/call","params":{{"name":"read_ticket","arguments":{arguments}}}}}"#
    ));
    let answer = agent.answer(9);
    let refusal = &answer["result"]["structuredContent"];
    assert_eq!(refusal["error_code"], "INVALID_ARGUMENTS", "{answer}");
    assert_eq!(refusal["violations"][0], said);

    // Just within the limit, both check the arguments against the schema.
    let within = format!(
        r#"{{"id": "T-1", "extra": {}1{}}}"#,
        "[".repeat(98),
        "]".repeat(98)
    );
    let run = project.run(&[
        "check-call",
        "deploy",
        "read_ticket",
        "--args",
        &within,
        "--format",
        "json",
    ]);
    assert_ne!(
        run.json()["pinned"]["violations"][0]["message"],
        said["message"]
    );
}

#[test]
fn a_tool_neither_pinned_nor_listed_is_reported_as_such_not_as_changed() {
    let project = project_serving("a");
    let run = project.run(&["check-call", "deploy", "nosuchtool", "--args", "{}"]);
    run.expect(1);
    assert!(
        run.stderr()
            .contains("nosuchtool is not pinned in the lock and server deploy does not list it"),
        "{}",
        run.stderr()
    );
    assert!(!run.stderr().contains("changed"), "{}", run.stderr());
    let run = project.run(&[
        "check-call",
        "deploy",
        "nosuchtool",
        "--args",
        "{}",
        "--format",
        "json",
    ]);
    run.expect(1);
    let report = run.json();
    assert!(report.get("change").is_none(), "{report}");
    assert_eq!(report["pinned"]["present"], false);
    assert_eq!(report["live"]["present"], false);
}
