//! Start-up verification as a library, and the example agent host built on it.

use crate::common;

use common::{Project, fixture_entry};
use mcp_lock::contract::classify::Class;
use mcp_lock::hosts::startup::Verifier;
use mcp_lock::verdict::exit_codes::ExitCode;
use serde_json::json;

fn pinned_project() -> Project {
    let project = Project::new(json!({"deploy": fixture_entry(&["--revision-file", "rev"])}));
    std::fs::write(project.path().join("rev"), "a").unwrap();
    project.run(&["update", "--yes"]).expect(0);
    project
}

#[test]
fn a_host_verifies_at_start_up_and_gets_typed_findings_on_drift() {
    let project = pinned_project();
    let verification = Verifier::new(project.path()).verify_blocking().unwrap();
    assert!(verification.passed());
    assert!(verification.failures().is_empty());

    std::fs::write(project.path().join("rev"), "b").unwrap();
    let verification = Verifier::new(project.path()).verify_blocking().unwrap();
    assert!(!verification.passed());
    assert_eq!(verification.exit_code(), ExitCode::Drift);
    let failures = verification.failures();
    let deploy = failures
        .iter()
        .find(|f| f.change.tool == "deploy_preview")
        .expect("deploy_preview fails");
    assert_eq!(deploy.server, "deploy");
    assert_eq!(deploy.class(), Some(Class::Authority));
    assert!(
        deploy
            .findings()
            .iter()
            .any(|f| f.pointer == "/inputSchema/properties/region")
    );
    assert!(verification.summary().contains("deploy_preview"));
    assert!(!verification.summary().contains('\u{1b}'));
}

#[test]
fn a_policy_beside_the_lock_and_a_server_subset_are_honoured() {
    let project = pinned_project();
    std::fs::write(project.path().join("rev"), "additive").unwrap();
    // Additive changes only warn by default: the host may start.
    let verification = Verifier::new(project.path()).verify_blocking().unwrap();
    assert!(verification.passed(), "{}", verification.summary());
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[verify]\nadditive = \"fail\"\n",
    )
    .unwrap();
    let verification = Verifier::new(project.path())
        .servers(["deploy"])
        .verify_blocking()
        .unwrap();
    assert!(!verification.passed());
}

#[test]
fn missing_lock_and_unreachable_servers_are_told_apart_from_drift() {
    let project = Project::new(json!({"deploy": fixture_entry(&[])}));
    let err = Verifier::new(project.path()).verify_blocking().unwrap_err();
    assert!(err.to_string().contains("mcp.lock not found"), "{err}");
    project.run(&["update", "--yes"]).expect(0);
    project.set_servers(json!({"deploy": fixture_entry(&["--misbehave", "exit-at-start"])}));
    let verification = Verifier::new(project.path()).verify_blocking().unwrap();
    assert_eq!(verification.exit_code(), ExitCode::Unverified);
    assert_eq!(verification.unverified()[0].0, "deploy");
}

/// examples/agent_startup.rs, built like the fixture server.
fn agent_startup() -> std::path::PathBuf {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = common::command(cargo)
        .args(["build", "--quiet", "--example", "agent_startup"])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .status()
        .unwrap();
    assert!(status.success());
    common::bin()
        .parent()
        .unwrap()
        .join("examples/agent_startup")
}

#[test]
fn the_example_agent_host_starts_on_a_match_and_refuses_on_drift() {
    let project = pinned_project();
    let example = agent_startup();
    let run = common::command(&example)
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&run.stdout).contains("starting"));

    std::fs::write(project.path().join("rev"), "b").unwrap();
    let run = common::command(&example)
        .arg(project.path())
        .output()
        .unwrap();
    assert_eq!(run.status.code(), Some(1));
    let stderr = String::from_utf8_lossy(&run.stderr);
    assert!(stderr.contains("refusing to start"), "{stderr}");
    assert!(
        stderr.contains("deploy/deploy_preview: authority"),
        "{stderr}"
    );
}

#[test]
fn server_level_failures_are_reported_and_secrets_redacted_from_the_summary() {
    let secret = "startup-secret-value-31";
    let project =
        Project::new(json!({"deploy": fixture_entry(&["--instructions", "Deploy previews."])}));
    project.run(&["update", "--yes"]).expect(0);
    let mut entry = fixture_entry(&[
        "--instructions",
        "Deploy anywhere.",
        "--describe-env",
        "STARTUP_TOKEN",
    ]);
    entry["env"] = json!({"STARTUP_TOKEN": secret});
    project.set_servers(json!({"deploy": entry}));
    let verification = Verifier::new(project.path()).verify_blocking().unwrap();
    assert!(!verification.passed());
    let server = verification.server_failures();
    assert_eq!(server.len(), 1, "{}", verification.summary());
    assert_eq!((server[0].0, server[0].1.field), ("deploy", "instructions"));
    let summary = verification.summary();
    assert!(!summary.contains(secret), "{summary}");
    assert!(summary.contains("${STARTUP_TOKEN}"), "{summary}");
}
