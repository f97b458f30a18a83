//! `mcp-lock guard` end to end: a real guard process between a test client and the
//! fixture server, over real pipes.

mod audit;
mod bounds;
mod calls;
mod chain;
#[path = "../common/mod.rs"]
mod common;
mod drift;
mod launch;
mod lifecycle;
mod observed;
mod profiles;
mod rules;
mod screening;
mod surface;

use std::path::Path;
use std::time::Duration;

use common::{McpPipe, Project, fixture_entry, pids_with};
use serde_json::{Value, json};

/// A project whose fixture server reads its revision from `rev`, announces changes
/// to it, and appends every call it carries out to `actions.jsonl`.
fn deploy_project(extra: &[&str]) -> Project {
    let dir = tempfile::tempdir().unwrap();
    std::fs::write(dir.path().join("rev"), "a").unwrap();
    let mut args = vec![
        "--revision-file",
        "rev",
        "--notify-on-change",
        "--action-log",
        "actions.jsonl",
    ];
    args.extend_from_slice(extra);
    let project = Project::at(dir);
    project.set_servers(json!({"deploy": fixture_entry(&args)}));
    project.run(&["update", "--yes"]).expect(0);
    project
}

fn actions(project: &Project) -> Vec<Value> {
    std::fs::read_to_string(project.path().join("actions.jsonl"))
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// A project whose `deploy` is pinned as launched by `sh -c SCRIPT`, what its test
/// then gives the guard after `--`: the guard refuses a launch verify would fail, and
/// another command than the pinned one is such a launch.
fn shell_project(script: &str) -> Project {
    let project = Project::empty();
    std::fs::write(project.path().join("rev"), "a").unwrap();
    project.set_servers(json!({"deploy": {"command": "sh", "args": ["-c", script]}}));
    project.run(&["update", "--yes"]).expect(0);
    project
}

/// The decisions in the project's audit log (without the chain's own
/// `session_started` and `checkpoint` entries), after checking that every line is
/// chained to the one before it.
fn audit(project: &Project) -> Vec<Value> {
    let text =
        std::fs::read_to_string(project.path().join(".mcp-lock/audit.jsonl")).unwrap_or_default();
    let mut prev = mcp_lock::records::audit::format::GENESIS.to_string();
    let mut entries = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let entry: Value = serde_json::from_str(line).unwrap();
        assert_eq!(entry["seq"], i + 1, "line {}: {line}", i + 1);
        assert_eq!(entry["prev"], prev.as_str(), "line {}: {line}", i + 1);
        prev = mcp_lock::records::audit::format::line_hash(line.as_bytes());
        if !matches!(
            entry["event"].as_str(),
            Some("session_started" | "checkpoint")
        ) {
            entries.push(entry);
        }
    }
    entries
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

/// The pinned hash of a tool, read from the lock's `hash = "sha256:..."` line after
/// its `name = "..."` line.
fn pinned_hash(project: &Project, tool: &str) -> String {
    let lock = project.lock_text().unwrap();
    let at = lock
        .find(&format!("name = \"{tool}\""))
        .unwrap_or_else(|| panic!("{tool} not in the lock"));
    let rest = &lock[at..];
    let hash_at = rest.find("hash = \"").unwrap() + 8;
    let hash = &rest[hash_at..hash_at + rest[hash_at..].find('"').unwrap()];
    hash.trim_start_matches("sha256:").to_string()
}

#[track_caller]
fn refusal(answer: &Value) -> &Value {
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "not refused: {answer}");
    &result["structuredContent"]
}

fn canonical(value: &Value) -> String {
    mcp_lock::base::json::Json::from_value(value)
        .canonical()
        .unwrap()
}
