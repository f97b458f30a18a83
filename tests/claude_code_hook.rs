//! `mcp-lock hook claude-code` and the Claude Code plugin: Claude Code's documented
//! SessionStart, PreToolUse and SessionEnd payloads in, its documented hook output
//! out, exactly, on projects pinned against the fixture server.

mod common;

use std::path::Path;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

/// The hook's answer to one payload: exit code, stdout (the JSON, when any), stderr.
fn hook(project: &Project, cache: &Path, payload: &Value) -> (i32, String, String) {
    hook_with(
        project,
        cache,
        payload,
        &[
            common::bin().display().to_string().as_str(),
            "hook",
            "claude-code",
        ],
    )
}

fn hook_with(
    project: &Project,
    cache: &Path,
    payload: &Value,
    argv: &[&str],
) -> (i32, String, String) {
    let out = common::output_with_stdin(
        project
            .command(argv[0])
            .args(&argv[1..])
            .env("XDG_CACHE_HOME", cache)
            .env("CLAUDE_PROJECT_DIR", project.path()),
        payload.to_string().as_bytes(),
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn session_start(session: &str, project: &Project) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": project.path(),
        "hook_event_name": "SessionStart",
        "source": "startup",
    })
}

fn pre_tool_use(session: &str, project: &Project, tool: &str, input: Value) -> Value {
    json!({
        "session_id": session,
        "transcript_path": "/nonexistent/transcript.jsonl",
        "cwd": project.path(),
        "permission_mode": "default",
        "hook_event_name": "PreToolUse",
        "tool_name": tool,
        "tool_input": input,
        "tool_use_id": "toolu_01",
    })
}

fn deny(reason: &str) -> String {
    format!(
        "{}\n",
        json!({
            "hookSpecificOutput": {
                "hookEventName": "PreToolUse",
                "permissionDecision": "deny",
                "permissionDecisionReason": reason,
            }
        })
    )
}

/// A project whose server `fx` is pinned at revision a, then served at `live`, and
/// approved in the developer's own Claude Code settings (as answering yes to Claude
/// Code's question records it).
fn pinned_project(live: &str) -> Project {
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    project.set_servers(json!({ "fx": fixture_entry(&["--revision", live]) }));
    approve(&project, json!({"enabledMcpjsonServers": ["fx"]}));
    project
}

fn approve(project: &Project, settings: Value) {
    std::fs::create_dir_all(project.path().join(".claude")).unwrap();
    std::fs::write(
        project.path().join(".claude/settings.local.json"),
        settings.to_string(),
    )
    .unwrap();
}

#[test]
fn a_converged_session_is_told_so_and_its_valid_calls_get_no_answer() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = hook(&project, cache.path(), &session_start("s-1", &project));
    assert_eq!(code, 0, "{err}");
    let expected = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": "mcp-lock verified this project's MCP servers against mcp.lock at session start: 1 of 1 match what was approved. Calls to MCP tools are checked against their pinned input schemas, and tools mcp.lock does not pin are refused.",
        }
    });
    assert_eq!(out, format!("{expected}\n"));

    let call = pre_tool_use(
        "s-1",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    assert_eq!(
        hook(&project, cache.path(), &call),
        (0, String::new(), String::new())
    );
}

#[test]
fn a_call_to_a_tool_the_lock_does_not_pin_is_denied_with_a_reason_the_model_can_act_on() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-2", &project));
    let call = pre_tool_use("s-2", &project, "mcp__fx__rollback", json!({}));
    let (code, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(code, 0);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__fx__rollback: MCP server fx has no tool rollback pinned in mcp.lock, so it was never approved. The call was not made; nothing was run. Use one of its pinned tools, or ask the user to review and approve it with `mcp-lock update fx`."
        )
    );
}

#[test]
fn a_drifted_server_is_reported_at_session_start_and_every_call_to_it_is_denied() {
    let project = pinned_project("b");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, _) = hook(&project, cache.path(), &session_start("s-3", &project));
    assert_eq!(code, 0);
    let why = "MCP server fx changed since it was approved in mcp.lock: tool deploy_preview changed (authority); tool rollback added; tool search_docs changed (semantic); a person must review with `mcp-lock diff fx` and approve with `mcp-lock update fx`";
    let expected = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": format!("mcp-lock verified this project's MCP servers against mcp.lock at session start: 0 of 1 match what was approved. {why}. Calls to the tools of these servers will be refused this session; tell the user rather than working around it. Calls to the other servers' tools are checked against their pinned input schemas, and tools mcp.lock does not pin are refused."),
        },
        "systemMessage": format!("mcp-lock: 1 of 1 MCP servers did not verify against mcp.lock; their tools are refused this session:\n  {why}"),
    });
    assert_eq!(out, format!("{expected}\n"));

    // read_ticket itself did not change: its server did.
    let call = pre_tool_use(
        "s-3",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(&format!(
            "mcp-lock refused mcp__fx__read_ticket: {why}. The call was not made; nothing was run. Do not retry this server's tools in this session until the user has approved the change."
        ))
    );
}

#[test]
fn arguments_the_pinned_schema_refuses_are_denied_before_the_call() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-4", &project));
    let call = pre_tool_use("s-4", &project, "mcp__fx__read_ticket", json!({"id": 5}));
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__fx__read_ticket: the arguments do not fit the input schema of read_ticket as approved in mcp.lock (/id: 5 is not of type \"string\"). The call was not made; nothing was run. Fix the arguments to match the tool's schema and call it again."
        )
    );
}

#[test]
fn a_tool_that_is_not_an_mcp_tool_passes_through_untouched_even_without_a_lock() {
    let project = pinned_project("b");
    let cache = tempfile::tempdir().unwrap();
    let call = pre_tool_use("s-5", &project, "Bash", json!({"command": "ls"}));
    assert_eq!(
        hook(&project, cache.path(), &call),
        (0, String::new(), String::new())
    );
    assert!(
        std::fs::read_dir(cache.path()).unwrap().next().is_none(),
        "nothing verified or written for a non-MCP call"
    );
    // A project with no mcp.lock is left alone entirely.
    let bare = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    let (code, out, _) = hook(&bare, cache.path(), &session_start("s-5", &bare));
    assert_eq!((code, out.as_str()), (0, ""));
    let call = pre_tool_use("s-5", &bare, "mcp__fx__read_ticket", json!({"id": "T-1"}));
    assert_eq!(hook(&bare, cache.path(), &call).1, "");
}

#[test]
fn a_call_with_no_session_record_verifies_its_server_once_and_a_newly_approved_lock_is_picked_up() {
    let project = pinned_project("b");
    let cache = tempfile::tempdir().unwrap();
    // No SessionStart (the plugin was enabled mid-session): the call's server is
    // verified there and then.
    let call = pre_tool_use(
        "s-6",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert!(
        out.contains("\"deny\"") && out.contains("changed since it was approved"),
        "{out}"
    );
    // The person approves the change: the next call sees the new lock.
    project.run(&["update", "--yes"]).expect(0);
    assert_eq!(hook(&project, cache.path(), &call).1, "");
    let call = pre_tool_use(
        "s-6",
        &project,
        "mcp__fx__rollback",
        json!({"branch": "main"}),
    );
    let (_, out, err) = hook(&project, cache.path(), &call);
    assert_eq!(out, "", "rollback is pinned now: {err}");
}

#[test]
fn session_end_removes_the_sessions_record() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-7", &project));
    let records = cache.path().join("mcp-lock/claude-code");
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 1);
    let end = json!({"session_id": "s-7", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": project.path()});
    assert_eq!(
        hook(&project, cache.path(), &end),
        (0, String::new(), String::new())
    );
    assert_eq!(std::fs::read_dir(&records).unwrap().count(), 0);
}

#[test]
fn input_that_is_not_hook_json_fails_closed_for_nothing_and_says_why_on_stderr() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = hook(&project, cache.path(), &json!("not an object"));
    assert_eq!((code, out.as_str()), (0, ""));
    assert!(err.contains("not Claude Code's hook JSON"), "{err}");
}

#[test]
fn a_broken_lock_refuses_mcp_calls_with_the_error_rather_than_letting_them_through() {
    let project = pinned_project("a");
    std::fs::write(project.path().join("mcp.lock"), "version = [").unwrap();
    let cache = tempfile::tempdir().unwrap();
    let call = pre_tool_use(
        "s-8",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (code, out, err) = hook(&project, cache.path(), &call);
    assert_eq!(code, 0);
    let answer: Value = serde_json::from_str(&out).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    let reason = answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap();
    assert!(
        reason.starts_with("mcp-lock could not check mcp__fx__read_ticket against mcp.lock: "),
        "{reason}"
    );
    assert_eq!(err.lines().count(), 1, "{err}");
}

/// The plugin as Claude Code loads it: its manifest and hooks read, and the hook
/// command it names run the way Claude Code runs it (through a shell, with
/// CLAUDE_PLUGIN_ROOT set).
#[test]
fn the_plugin_runs_the_hook_through_its_script_and_refuses_mcp_calls_when_mcp_lock_is_missing() {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/claude-code");
    let manifest: Value = serde_json::from_str(
        &std::fs::read_to_string(root.join(".claude-plugin/plugin.json")).unwrap(),
    )
    .unwrap();
    assert_eq!(manifest["name"], "mcp-lock");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("hooks/hooks.json")).unwrap())
            .unwrap();
    assert_eq!(hooks["hooks"]["PreToolUse"][0]["matcher"], "mcp__.*");
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let marketplace: Value = serde_json::from_str(
        &std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join(".claude-plugin/marketplace.json"),
        )
        .unwrap(),
    )
    .unwrap();
    assert!(
        root.ends_with(
            marketplace["plugins"][0]["source"]
                .as_str()
                .unwrap()
                .trim_start_matches("./")
        )
    );

    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let bin_dir = common::bin().parent().unwrap().display().to_string();
    let run = |path: &str, payload: &Value| {
        let out = common::output_with_stdin(
            project
                .command("sh")
                .args(["-c", &command])
                .env("CLAUDE_PLUGIN_ROOT", &root)
                .env("CLAUDE_PROJECT_DIR", project.path())
                .env("XDG_CACHE_HOME", cache.path())
                .env("PATH", path),
            payload.to_string().as_bytes(),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let path = format!("{bin_dir}:/usr/bin:/bin");
    let call = pre_tool_use("s-9", &project, "mcp__fx__read_ticket", json!({"id": 5}));
    let direct = hook(&project, cache.path(), &call).1;
    assert!(direct.contains("do not fit"), "{direct}");
    assert_eq!(run(&path, &call), direct);

    let missing = run("/usr/bin:/bin", &call);
    let answer: Value = serde_json::from_str(&missing).unwrap();
    assert_eq!(answer["hookSpecificOutput"]["permissionDecision"], "deny");
    assert!(
        answer["hookSpecificOutput"]["permissionDecisionReason"]
            .as_str()
            .unwrap()
            .starts_with("mcp-lock is not installed"),
        "{missing}"
    );
    let start = run("/usr/bin:/bin", &session_start("s-9", &project));
    assert!(
        start.contains("systemMessage") && start.contains("not found"),
        "{start}"
    );
}

#[test]
fn a_host_mcp_lock_has_no_hook_for_is_a_usage_error() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let bin = common::bin().display().to_string();
    let (code, _, err) = hook_with(
        &project,
        cache.path(),
        &json!({}),
        &[&bin, "hook", "cursor"],
    );
    assert_eq!(code, 2, "{err}");
}

/// A cloned repository's `.mcp.json` server that Claude Code would ask about first is
/// not started by the hook at session start: only at its first call, which Claude
/// Code makes only after the person approved it.
#[test]
fn a_server_claude_code_has_not_been_told_to_start_is_verified_only_at_its_first_call() {
    let project = pinned_project("a");
    approve(&project, json!({}));
    let marker = project.path().join("started");
    let launcher = format!(
        "touch '{}' && exec '{}' --revision a",
        marker.display(),
        common::fixture().display()
    );
    project.set_servers(json!({ "fx": {"command": "sh", "args": ["-c", launcher]} }));
    project.run(&["update", "--yes"]).expect(0);
    std::fs::remove_file(&marker).unwrap();
    let cache = tempfile::tempdir().unwrap();
    let (_, out, _) = hook(&project, cache.path(), &session_start("s-10", &project));
    assert!(!marker.exists(), "the hook started an unapproved server");
    assert!(
        out.contains("Not verified yet, as Claude Code has not been told to start them unasked: fx; each is verified at its first tool call."),
        "{out}"
    );
    let call = pre_tool_use(
        "s-10",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    assert_eq!(hook(&project, cache.path(), &call).1, "");
    assert!(marker.exists(), "verified at the first call");
    // enableAllProjectMcpServers approves every server of .mcp.json; a server named
    // in disabledMcpjsonServers is never started by the hook.
    std::fs::remove_file(&marker).unwrap();
    approve(&project, json!({"enableAllProjectMcpServers": true}));
    hook(&project, cache.path(), &session_start("s-11", &project));
    assert!(marker.exists());
    std::fs::remove_file(&marker).unwrap();
    approve(
        &project,
        json!({"enableAllProjectMcpServers": true, "disabledMcpjsonServers": ["fx"]}),
    );
    hook(&project, cache.path(), &session_start("s-12", &project));
    assert!(!marker.exists());
}
