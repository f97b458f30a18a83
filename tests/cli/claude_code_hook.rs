//! `mcp-lock hook claude-code` and the Claude Code plugin: Claude Code's documented
//! SessionStart, PreToolUse and SessionEnd payloads in, its documented hook output
//! out, exactly, on projects pinned against the fixture server.

use crate::common;

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

/// The PreToolUse answer that leaves the call to Claude Code's own permissions.
fn no_decision() -> String {
    format!(
        "{}\n",
        json!({"hookSpecificOutput": {"hookEventName": "PreToolUse"}})
    )
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
fn a_converged_session_is_told_so_and_its_valid_calls_get_no_decision() {
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
        (0, no_decision(), String::new())
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
fn a_drifted_tool_is_refused_while_its_unchanged_sibling_is_served_as_the_guard_serves_it() {
    let project = pinned_project("b");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, _) = hook(&project, cache.path(), &session_start("s-3", &project));
    assert_eq!(code, 0);
    let why = "MCP server fx changed since it was approved in mcp.lock: tool deploy_preview changed (authority); tool rollback added; tool search_docs changed (semantic); these tools are refused and its other pinned tools are served; a person must review with `mcp-lock diff fx` and approve with `mcp-lock update fx`";
    let expected = json!({
        "hookSpecificOutput": {
            "hookEventName": "SessionStart",
            "additionalContext": format!("mcp-lock verified this project's MCP servers against mcp.lock at session start: 0 of 1 match what was approved. {why}. Calls to those changed tools will be refused this session; tell the user rather than working around it. Calls to the other servers' tools are checked against their pinned input schemas, and tools mcp.lock does not pin are refused."),
        },
        "systemMessage": format!("mcp-lock: 1 MCP servers changed some of their tools; those tools are refused this session, the others served:\n  {why}"),
    });
    assert_eq!(out, format!("{expected}\n"));

    // read_ticket itself did not change: the guard serves it, and so does the hook.
    let call = pre_tool_use(
        "s-3",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
    // Its drifted sibling is refused, and so is the tool that was added.
    let call = pre_tool_use(
        "s-3",
        &project,
        "mcp__fx__deploy_preview",
        json!({"branch": "main"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__fx__deploy_preview: MCP server fx has tool deploy_preview changed (authority) since it was approved in mcp.lock; a person must review with `mcp-lock diff fx` and approve with `mcp-lock update fx`. The call was not made; nothing was run. Its other pinned tools may still be used; do not retry this tool in this session until the user has approved the change."
        )
    );
    let call = pre_tool_use(
        "s-3",
        &project,
        "mcp__fx__rollback",
        json!({"branch": "main"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert!(
        out.contains("tool rollback added since it was approved"),
        "{out}"
    );
}

#[test]
fn a_server_that_cannot_be_listed_has_every_tool_refused() {
    let project = Project::new(json!({ "fx": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    project.set_servers(json!({ "fx": {"command": "/nonexistent/fixture-server"} }));
    approve(&project, json!({"enabledMcpjsonServers": ["fx"]}));
    let cache = tempfile::tempdir().unwrap();
    let (_, out, _) = hook(&project, cache.path(), &session_start("s-30", &project));
    assert!(
        out.contains("could not be verified against mcp.lock"),
        "{out}"
    );
    let call = pre_tool_use(
        "s-30",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(decision(&out), "deny", "{out}");
    assert!(out.contains("could not be verified"), "{out}");
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
        (0, no_decision(), String::new())
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
    assert_eq!(hook(&bare, cache.path(), &call).1, no_decision());
}

#[test]
fn a_call_with_no_session_record_is_denied_without_verifying_and_a_new_session_start_picks_up_the_lock()
 {
    let project = pinned_project("b");
    let cache = tempfile::tempdir().unwrap();
    // No SessionStart (the plugin was enabled mid-session): nothing is verified in a
    // PreToolUse, so the call is refused until a session start verifies.
    let call = pre_tool_use(
        "s-6",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert!(
        out.contains("\"deny\"") && out.contains("were not verified when it started"),
        "{out}"
    );
    assert!(
        !cache.path().join("mcp-lock/claude-code").exists(),
        "a PreToolUse verified or kept something"
    );
    hook(&project, cache.path(), &session_start("s-6", &project));
    let drifted = pre_tool_use(
        "s-6",
        &project,
        "mcp__fx__deploy_preview",
        json!({"branch": "main"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &drifted);
    assert!(
        out.contains("changed (authority) since it was approved"),
        "{out}"
    );
    // The person approves the change: the lock differs from the one verified, so calls
    // are refused until the session starts again (/compact, /clear, a restart).
    project.run(&["update", "--yes"]).expect(0);
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert!(
        out.contains("\"deny\"")
            && out.contains("changed since this session's MCP servers were verified"),
        "{out}"
    );
    hook(&project, cache.path(), &session_start("s-6", &project));
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
    let call = pre_tool_use(
        "s-6",
        &project,
        "mcp__fx__rollback",
        json!({"branch": "main"}),
    );
    let (_, out, err) = hook(&project, cache.path(), &call);
    assert_eq!(out, no_decision(), "rollback is pinned now: {err}");
}

#[test]
fn session_end_removes_the_sessions_record() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-7", &project));
    let records = cache.path().join("mcp-lock/claude-code");
    let count = || {
        std::fs::read_dir(&records)
            .unwrap()
            .filter(|e| {
                e.as_ref()
                    .unwrap()
                    .path()
                    .extension()
                    .is_some_and(|x| x == "json")
            })
            .count()
    };
    assert_eq!(count(), 1);
    let end = json!({"session_id": "s-7", "hook_event_name": "SessionEnd", "reason": "exit", "cwd": project.path()});
    assert_eq!(
        hook(&project, cache.path(), &end),
        (0, String::new(), String::new())
    );
    assert_eq!(count(), 0);
}

#[test]
fn input_that_is_not_hook_json_is_denied_as_a_call_that_cannot_be_told_and_says_why_on_stderr() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = hook(&project, cache.path(), &json!("not an object"));
    assert_eq!(code, 0);
    assert!(
        out.contains("\"deny\"") && out.contains("could not tell which tool this call is for"),
        "{out}"
    );
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

    let start_command = hooks["hooks"]["SessionStart"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let bin_dir = common::bin().parent().unwrap().display().to_string();
    let run_as = |command: &str, path: &str, payload: &Value| {
        let out = common::output_with_stdin(
            project
                .command("sh")
                .args(["-c", command])
                .env("CLAUDE_PLUGIN_ROOT", &root)
                .env("CLAUDE_PROJECT_DIR", project.path())
                .env("XDG_CACHE_HOME", cache.path())
                .env("PATH", path),
            payload.to_string().as_bytes(),
        );
        String::from_utf8(out.stdout).unwrap()
    };
    let run = |path: &str, payload: &Value| run_as(&command, path, payload);
    let path = format!("{bin_dir}:/usr/bin:/bin");
    let started = run_as(&start_command, &path, &session_start("s-9", &project));
    assert!(started.contains("1 of 1 match"), "{started}");
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
    let start = run_as(
        &start_command,
        "/usr/bin:/bin",
        &session_start("s-9", &project),
    );
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
/// not started by the hook at session start, nor at its first call (a PreToolUse
/// never verifies): that call is refused, and the server is verified at the first
/// session start after the person approved it.
#[test]
fn a_server_claude_code_has_not_been_told_to_start_is_refused_until_a_session_start_verifies_it() {
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
        out.contains("Not verified yet, as Claude Code has not been told to start them unasked: fx; calls to their tools are refused until a session start at which they are approved."),
        "{out}"
    );
    let call = pre_tool_use(
        "s-10",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert!(
        out.contains("\"deny\"")
            && out.contains(
                "MCP server fx was not verified against mcp.lock when this session started"
            ),
        "{out}"
    );
    assert!(!marker.exists(), "a PreToolUse started the server");
    approve(&project, json!({"enabledMcpjsonServers": ["fx"]}));
    hook(&project, cache.path(), &session_start("s-10", &project));
    assert!(marker.exists(), "verified at the next session start");
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
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

/// The hook's answer to raw bytes on stdin (not necessarily JSON).
fn hook_raw(project: &Project, cache: &Path, payload: &[u8]) -> (i32, String, String) {
    let out = common::output_with_stdin(
        project
            .command(common::bin())
            .args(["hook", "claude-code"])
            .env("XDG_CACHE_HOME", cache)
            .env("CLAUDE_PROJECT_DIR", project.path()),
        payload,
    );
    (
        out.status.code().unwrap_or(-1),
        String::from_utf8(out.stdout).unwrap(),
        String::from_utf8(out.stderr).unwrap(),
    )
}

fn decision(out: &str) -> Value {
    let answer: Value = serde_json::from_str(out).unwrap_or_else(|e| panic!("{e}: {out:?}"));
    answer["hookSpecificOutput"]["permissionDecision"].clone()
}

#[test]
fn hook_denies_an_mcp_call_it_cannot_parse_and_leaves_other_tools_alone() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-20", &project));
    let head = |tool: &str| {
        format!(
            r#"{{"session_id":"s-20","hook_event_name":"PreToolUse","tool_name":"{tool}","tool_input":"#
        )
    };
    // Arguments nested past serde's 128 levels.
    let deep = format!(
        "{}{}{}}}",
        head("mcp__fx__read_ticket"),
        "[".repeat(200),
        "]".repeat(200)
    );
    // A lone surrogate.
    let surrogate = format!(r#"{}{{"id":"\ud800"}}}}"#, head("mcp__fx__read_ticket"));
    // Over the 64 MiB input limit.
    let mut huge = format!(r#"{}{{"id":""#, head("mcp__fx__read_ticket")).into_bytes();
    huge.resize(huge.len() + 65 * 1024 * 1024, b'a');
    huge.extend_from_slice(br#""}}"#);
    for (what, payload) in [
        ("deep", deep.into_bytes()),
        ("surrogate", surrogate.into_bytes()),
        ("huge", huge),
    ] {
        let (code, out, err) = hook_raw(&project, cache.path(), &payload);
        assert_eq!(code, 0, "{what}: {err}");
        assert_eq!(decision(&out), "deny", "{what}: {out}");
        assert!(
            out.contains("mcp-lock could not check mcp__fx__read_ticket against mcp.lock: "),
            "{what}: {out}"
        );
        assert_eq!(err.lines().count(), 1, "{what}: {err}");
    }
    // The same unreadable arguments to a tool that is not an MCP tool: untouched.
    let write = format!(r#"{}{{"content":"\ud800"}}}}"#, head("Write"));
    let (code, out, _) = hook_raw(&project, cache.path(), write.as_bytes());
    assert_eq!((code, out), (0, no_decision()));
    // Bytes from which no tool name can be read: not knowable as a non-MCP tool.
    let (code, out, _) = hook_raw(&project, cache.path(), b"\xff\xfe{");
    assert_eq!((code, decision(&out)), (0, json!("deny")));
}

#[test]
fn hook_denies_a_call_once_the_lock_is_removed_or_made_a_dangling_link_mid_session() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-21", &project));
    let call = pre_tool_use(
        "s-21",
        &project,
        "mcp__fx__rollback",
        json!({"branch": "main"}),
    );
    assert_eq!(decision(&hook(&project, cache.path(), &call).1), "deny");
    let lock = project.path().join("mcp.lock");
    std::fs::remove_file(&lock).unwrap();
    let (code, out, _) = hook(&project, cache.path(), &call);
    assert_eq!((code, decision(&out)), (0, json!("deny")), "{out}");
    assert!(out.contains("was removed during this session"), "{out}");
    std::os::unix::fs::symlink(project.path().join("gone.lock"), &lock).unwrap();
    let (code, out, _) = hook(&project, cache.path(), &call);
    assert_eq!((code, decision(&out)), (0, json!("deny")), "{out}");
    assert!(out.contains("is a link to nothing"), "{out}");
    // A session start on a dangling lock refuses too.
    let (_, out, _) = hook(&project, cache.path(), &session_start("s-21", &project));
    assert!(out.contains("Calls to MCP tools will be refused"), "{out}");
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(decision(&out), "deny", "{out}");
}

#[test]
fn hook_answers_deny_at_its_deadline_when_its_input_never_ends() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let mut child = project
        .command(common::bin())
        .args(["hook", "claude-code"])
        .env("XDG_CACHE_HOME", cache.path())
        .env("CLAUDE_PROJECT_DIR", project.path())
        .env("MCP_LOCK_HOOK_DEADLINE_MS", "1000")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    use std::io::Write;
    stdin
        .write_all(br#"{"session_id":"s-22","hook_event_name":"PreToolUse","tool_name":"mcp__fx__read_ticket","tool_input":{"id":"#)
        .unwrap();
    // Kept open: the writer never finishes.
    let out = wait_or_end(child);
    drop(stdin);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(decision(&text), "deny", "{text}");
    assert!(
        text.contains("the hook input was not read whole within 1 s"),
        "{text}"
    );
}

#[test]
fn a_session_start_that_runs_out_of_time_refuses_calls_and_leaves_no_server_running() {
    let tag = common::unique_tag("hook-deadline");
    let project = pinned_project("a");
    project.set_servers(json!({ "fx": fixture_entry(&["--revision", "a", "--misbehave", "hang-initialize", "--tag", &tag]) }));
    let cache = tempfile::tempdir().unwrap();
    let out = common::output_with_stdin(
        project
            .command(common::bin())
            .args(["hook", "claude-code"])
            .env("XDG_CACHE_HOME", cache.path())
            .env("CLAUDE_PROJECT_DIR", project.path())
            .env("MCP_LOCK_HOOK_DEADLINE_MS", "1500"),
        session_start("s-23", &project).to_string().as_bytes(),
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(
        text.contains("could not verify this project's MCP servers at session start: mcp-lock did not finish within 1.5 s"),
        "{text}"
    );
    // The server it started is ended with it (its watchdog may take a moment).
    let mut left = common::processes_with(&tag);
    for _ in 0..100 {
        if left.is_empty() {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
        left = common::processes_with(&tag);
    }
    assert_eq!(left, Vec::<String>::new());
    // Its record says the verification did not finish: calls are refused.
    let call = pre_tool_use(
        "s-23",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(decision(&out), "deny", "{out}");
    assert!(out.contains("did not finish"), "{out}");
}

/// Servers `a_b` (pinned) and `a.b` (configured, not pinned): Claude Code names both
/// servers' tools `mcp__a_b__...`, so which one a call goes to is not known.
#[test]
fn a_tool_name_two_servers_share_is_denied_whichever_is_pinned() {
    let project = Project::new(json!({ "a_b": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    project.set_servers(json!({
        "a_b": fixture_entry(&["--revision", "a"]),
        "a.b": fixture_entry(&["--revision", "b"]),
    }));
    approve(&project, json!({"enabledMcpjsonServers": ["a_b"]}));
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-24", &project));
    let call = pre_tool_use(
        "s-24",
        &project,
        "mcp__a_b__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__a_b__read_ticket: Claude Code gives this name to the tools of more than one MCP server of this project (a_b, a.b), so which server it would call is not known. The call was not made; nothing was run. Ask the user to rename one of these servers so that their names differ in letters, digits, `-` and `_`, and pin it with `mcp-lock update`."
        )
    );
}

/// A stand-in `mcp-lock` that records that it ran, then prints `prints` (a shell
/// word) and exits with `status`.
fn stand_in(dir: &Path, marker: &Path, prints: &str, status: i32) -> std::path::PathBuf {
    use std::os::unix::fs::PermissionsExt;
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("mcp-lock");
    std::fs::write(
        &path,
        format!(
            "#!/bin/sh\ncat >/dev/null\ntouch '{}'\nprintf '%s' {prints}\nexit {status}\n",
            marker.display()
        ),
    )
    .unwrap();
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o755)).unwrap();
    path
}

#[test]
fn the_plugin_never_runs_an_mcp_lock_inside_the_project_and_denies_when_the_binary_answers_nothing()
{
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("plugins/claude-code");
    let hooks: Value =
        serde_json::from_str(&std::fs::read_to_string(root.join("hooks/hooks.json")).unwrap())
            .unwrap();
    let command = hooks["hooks"]["PreToolUse"][0]["hooks"][0]["command"]
        .as_str()
        .unwrap()
        .to_string();
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    let outside = tempfile::tempdir().unwrap();
    let marker = project.path().join("project-binary-ran");
    let inside = stand_in(&project.path().join("node_modules/.bin"), &marker, "''", 0);
    // Also reached through a link from outside the project, and named by MCP_LOCK_BIN.
    let linked = outside.path().join("linked");
    std::fs::create_dir_all(&linked).unwrap();
    std::os::unix::fs::symlink(&inside, linked.join("mcp-lock")).unwrap();
    let call = pre_tool_use(
        "s-25",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let run = |path: &str, bin: Option<&Path>| {
        let mut command_line = project.command("sh");
        command_line
            .args(["-c", &command])
            .env("CLAUDE_PLUGIN_ROOT", &root)
            .env("CLAUDE_PROJECT_DIR", project.path())
            .env("XDG_CACHE_HOME", cache.path())
            .env("PATH", path);
        if let Some(bin) = bin {
            command_line.env("MCP_LOCK_BIN", bin);
        }
        let out = common::output_with_stdin(&mut command_line, call.to_string().as_bytes());
        assert_eq!(out.status.code(), Some(0));
        String::from_utf8(out.stdout).unwrap()
    };
    let path = format!(
        "{}:node_modules/.bin:{}:/usr/bin:/bin",
        inside.parent().unwrap().display(),
        linked.display()
    );
    let out = run(&path, Some(&inside));
    assert_eq!(decision(&out), "deny", "{out}");
    assert!(out.contains("mcp-lock is not installed"), "{out}");
    assert!(
        !marker.exists(),
        "the plugin ran the project's own mcp-lock"
    );

    // A binary outside the project that answers nothing, something else, or fails.
    let ran = outside.path().join("ran");
    for (prints, status) in [("''", 0), ("'{\"ok\":true}'", 0), ("''", 1)] {
        let bin = stand_in(&outside.path().join("bin"), &ran, prints, status);
        let out = run(
            &format!("{}:/usr/bin:/bin", bin.parent().unwrap().display()),
            None,
        );
        assert!(ran.exists(), "the user's mcp-lock was run");
        std::fs::remove_file(&ran).unwrap();
        assert_eq!(decision(&out), "deny", "{prints} {status}: {out}");
        assert!(out.contains("gave no valid answer"), "{out}");
    }
}

/// A PreToolUse whose work blocks (the project's `.mcp.json` made a FIFO nobody
/// writes: opening it waits for a writer) answers deny at its deadline and exits.
#[test]
fn a_pre_tool_use_facing_a_fifo_for_its_config_denies_at_once_and_exits() {
    let project = pinned_project("a");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-26", &project));
    let config = project.path().join(".mcp.json");
    std::fs::remove_file(&config).unwrap();
    let path = std::ffi::CString::new(config.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid C string; mkfifo only creates the node.
    assert_eq!(unsafe { libc::mkfifo(path.as_ptr(), 0o600) }, 0);
    let call = pre_tool_use(
        "s-26",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let mut child = project
        .command(common::bin())
        .args(["hook", "claude-code"])
        .env("XDG_CACHE_HOME", cache.path())
        .env("CLAUDE_PROJECT_DIR", project.path())
        .env("MCP_LOCK_HOOK_DEADLINE_MS", "1000")
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    {
        use std::io::Write;
        let mut stdin = child.stdin.take().unwrap();
        stdin.write_all(call.to_string().as_bytes()).unwrap();
    }
    let out = wait_or_end(child);
    let text = String::from_utf8(out.stdout).unwrap();
    assert_eq!(out.status.code(), Some(0), "{text}");
    assert_eq!(decision(&text), "deny", "{text}");
    // The config is opened without blocking and refused as what it is, well before
    // the deadline (whose own answer `hook_answers_deny_at_its_deadline_…` checks).
    assert!(text.contains(".mcp.json: it is a FIFO"), "{text}");
}

/// The child's output once it exits; should it hang, it is ended (by its PID, after a
/// minute, while it is still unreaped) so the test fails instead of hanging.
fn wait_or_end(mut child: std::process::Child) -> std::process::Output {
    use std::io::Read;
    fn drain(mut from: impl Read + Send + 'static) -> std::thread::JoinHandle<Vec<u8>> {
        std::thread::spawn(move || {
            let mut text = Vec::new();
            let _ = from.read_to_end(&mut text);
            text
        })
    }
    let stdout = drain(child.stdout.take().unwrap());
    let stderr = drain(child.stderr.take().unwrap());
    let mut status = None;
    for _ in 0..600 {
        if let Some(s) = child.try_wait().unwrap() {
            status = Some(s);
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    let status = match status {
        Some(s) => s,
        None => {
            let _ = child.kill();
            child.wait().unwrap()
        }
    };
    std::process::Output {
        status,
        stdout: stdout.join().unwrap(),
        stderr: stderr.join().unwrap(),
    }
}

/// The same with the second server in the user's own `~/.claude.json` (user scope, or
/// local scope for this project): Claude Code has it too.
#[test]
fn a_tool_name_a_users_own_claude_code_server_shares_is_denied() {
    let project = Project::new(json!({ "a_b": fixture_entry(&["--revision", "a"]) }));
    project.run(&["update", "--yes"]).expect(0);
    approve(&project, json!({"enabledMcpjsonServers": ["a_b"]}));
    let cache = tempfile::tempdir().unwrap();
    let call = pre_tool_use(
        "s-27",
        &project,
        "mcp__a_b__read_ticket",
        json!({"id": "T-1"}),
    );
    let claude_json = project.home().join(".claude.json");
    let other = json!({"command": "/nonexistent/other-server"});
    for user in [
        json!({"mcpServers": {"a.b": other}}),
        json!({"projects": {project.path().display().to_string(): {"mcpServers": {"a b": other}}}}),
    ] {
        std::fs::write(&claude_json, user.to_string()).unwrap();
        hook(&project, cache.path(), &session_start("s-27", &project));
        let (_, out, _) = hook(&project, cache.path(), &call);
        assert_eq!(decision(&out), "deny", "{out}");
        assert!(out.contains("more than one MCP server"), "{out}");
    }
    std::fs::remove_file(&claude_json).unwrap();
    hook(&project, cache.path(), &session_start("s-27", &project));
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
}

/// Writes the user's `~/.claude.json` for the project: `user` at the top level
/// (user scope), `local` under this project's entry (local scope).
fn claude_json(project: &Project, user: Value, local: Value) {
    let key = std::fs::canonicalize(project.path())
        .unwrap()
        .display()
        .to_string();
    let file = json!({
        "mcpServers": user,
        "projects": { key: { "mcpServers": local, "lastCost": 1.5 } },
    });
    std::fs::write(project.home().join(".claude.json"), file.to_string()).unwrap();
}

#[test]
fn a_users_own_server_pinned_with_user_update_is_served_and_its_drift_refused() {
    let project = pinned_project("a");
    let revision = project.path().join("mine-revision");
    std::fs::write(&revision, "a").unwrap();
    let mine = fixture_entry(&["--revision-file", revision.to_str().unwrap()]);
    claude_json(&project, json!({ "mine": mine }), json!({}));
    project
        .run(&["--user", "claude-code", "update", "--yes"])
        .expect(0);
    let cache = tempfile::tempdir().unwrap();
    let (_, out, err) = hook(&project, cache.path(), &session_start("s-40", &project));
    assert!(
        out.contains("against mcp.lock and your own lock of its personal servers at session start: 2 of 2 match"),
        "{out}{err}"
    );
    let call = |tool: &str, args: Value| pre_tool_use("s-40", &project, tool, args);
    assert_eq!(
        hook(
            &project,
            cache.path(),
            &call("mcp__mine__read_ticket", json!({"id": "T-1"}))
        )
        .1,
        no_decision()
    );
    let (_, out, _) = hook(
        &project,
        cache.path(),
        &call("mcp__mine__read_ticket", json!({"id": 1})),
    );
    assert!(out.contains("do not fit the input schema"), "{out}");
    let (_, out, _) = hook(
        &project,
        cache.path(),
        &call("mcp__mine__rollback", json!({})),
    );
    assert!(
        out.contains("no tool rollback pinned in your own lock of this project's personal servers")
            && out.contains("`mcp-lock --user claude-code update mine`"),
        "{out}"
    );

    // The server drifts; the personal server's changed tool is refused, and the way
    // to approve it names the user's lock.
    std::fs::write(&revision, "b").unwrap();
    // A config change: the next start verifies again rather than reusing.
    claude_json(
        &project,
        json!({ "mine": mine, "other": {"command": "/nonexistent/x"} }),
        json!({}),
    );
    let (_, out, _) = hook(&project, cache.path(), &session_start("s-40", &project));
    assert!(
        out.contains("MCP server other is one of your own Claude Code servers"),
        "{out}"
    );
    let (_, out, _) = hook(
        &project,
        cache.path(),
        &call("mcp__mine__deploy_preview", json!({"branch": "main"})),
    );
    assert!(
        out.contains("MCP server mine has tool deploy_preview changed (authority) since it was approved in your own lock")
            && out.contains("`mcp-lock --user claude-code diff mine`"),
        "{out}"
    );
    assert_eq!(
        hook(
            &project,
            cache.path(),
            &call("mcp__mine__read_ticket", json!({"id": "T-1"}))
        )
        .1,
        no_decision()
    );
    let (_, out, _) = hook(&project, cache.path(), &call("mcp__other__x", json!({})));
    assert!(
        out.contains("\"deny\"")
            && out.contains("pin it with `mcp-lock --user claude-code update other`"),
        "{out}"
    );
}

#[test]
fn a_users_own_server_no_lock_pins_is_refused_saying_how_to_pin_it() {
    let project = pinned_project("a");
    claude_json(
        &project,
        json!({ "mine": fixture_entry(&["--revision", "a"]) }),
        json!({}),
    );
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-41", &project));
    let call = pre_tool_use(
        "s-41",
        &project,
        "mcp__mine__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__mine__read_ticket: MCP server mine is one of your own Claude Code servers (user or local scope in ~/.claude.json) and is not pinned in your lock of this project's personal servers; a person must pin it with `mcp-lock --user claude-code update mine`. The call was not made; nothing was run. Do not retry this server's tools in this session until the user has approved the change."
        )
    );
    // The project's own server is served as before.
    let call = pre_tool_use(
        "s-41",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
}

#[test]
fn a_local_scope_server_takes_the_place_of_the_projects_server_of_that_name() {
    // The project pins fx at revision a; the user's local-scope fx (revision b) is
    // what Claude Code starts, so it is judged against the user's lock.
    let project = pinned_project("a");
    claude_json(
        &project,
        json!({}),
        json!({ "fx": fixture_entry(&["--revision", "b"]) }),
    );
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-42", &project));
    let rollback = pre_tool_use(
        "s-42",
        &project,
        "mcp__fx__rollback",
        json!({"branch": "main"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &rollback);
    assert!(
        out.contains("`mcp-lock --user claude-code update fx`"),
        "the local fx is refused as unpinned, not the project's: {out}"
    );
    project
        .run(&["--user", "claude-code", "update", "--yes"])
        .expect(0);
    hook(&project, cache.path(), &session_start("s-42", &project));
    let (_, out, err) = hook(&project, cache.path(), &rollback);
    assert_eq!(
        out,
        no_decision(),
        "revision b's rollback is pinned in the user's lock: {err}"
    );
    // A user-scope fx is shadowed by the project's: revision a's pins apply.
    claude_json(
        &project,
        json!({ "fx": fixture_entry(&["--revision", "b"]) }),
        json!({}),
    );
    hook(&project, cache.path(), &session_start("s-42", &project));
    let (_, out, _) = hook(&project, cache.path(), &rollback);
    assert!(
        out.contains("\"deny\"") && out.contains("pinned in mcp.lock"),
        "{out}"
    );
}

#[test]
fn a_server_run_from_a_path_is_verified_again_at_every_session_start_never_reused() {
    // A binary or script reads what it likes from beside it (here a revision file no
    // key holds), so its verification is never reused: only a registry package at an
    // exact version or an image by digest is (hook::reuse's own tests).
    let project = Project::empty();
    let binary = project.path().join("fixture-copy");
    std::fs::copy(common::fixture(), &binary).unwrap();
    let revision = project.path().join("revision");
    std::fs::write(&revision, "a").unwrap();
    let entry = json!({"command": binary, "args": ["--revision-file", revision]});
    project.set_servers(json!({ "fx": entry }));
    project.run(&["update", "--yes"]).expect(0);
    approve(&project, json!({"enabledMcpjsonServers": ["fx"]}));
    let cache = tempfile::tempdir().unwrap();
    let deploy = |session: &str| {
        pre_tool_use(
            session,
            &project,
            "mcp__fx__deploy_preview",
            json!({"branch": "main"}),
        )
    };
    hook(&project, cache.path(), &session_start("s-50", &project));
    assert_eq!(
        hook(&project, cache.path(), &deploy("s-50")).1,
        no_decision()
    );

    // What the server serves changes, and nothing in its entry does: the next start
    // verifies it again and finds the drift.
    std::fs::write(&revision, "b").unwrap();
    hook(&project, cache.path(), &session_start("s-51", &project));
    let (_, out, _) = hook(&project, cache.path(), &deploy("s-51"));
    assert!(out.contains("deploy_preview changed (authority)"), "{out}");

    // Back as pinned: served again.
    std::fs::write(&revision, "a").unwrap();
    hook(&project, cache.path(), &session_start("s-52", &project));
    assert_eq!(
        hook(&project, cache.path(), &deploy("s-52")).1,
        no_decision()
    );
}

/// Writes the project's `mcp-lock.toml`.
fn rules(project: &Project, text: &str) {
    std::fs::write(project.path().join("mcp-lock.toml"), text).unwrap();
}

/// Writes the user's own settings file, in the project's user-config folder (the
/// `XDG_CONFIG_HOME` every command of the test runs with).
fn user_rules(project: &Project, text: &str) -> std::path::PathBuf {
    let dir = project.path().join(".user-config/mcp-lock");
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("mcp-lock.toml");
    std::fs::write(&path, text).unwrap();
    path
}

fn reason(out: &str) -> String {
    let answer: Value = serde_json::from_str(out).unwrap();
    assert_eq!(
        answer["hookSpecificOutput"]["permissionDecision"], "deny",
        "{out}"
    );
    answer["hookSpecificOutput"]["permissionDecisionReason"]
        .as_str()
        .unwrap()
        .to_string()
}

#[test]
fn a_tool_the_rules_deny_to_claude_code_is_named_at_session_start_and_its_call_denied_naming_the_rule()
 {
    let project = pinned_project("a");
    rules(&project, "[tools]\ndeny = [\"fx/read_ticket\"]\n");
    let cache = tempfile::tempdir().unwrap();
    let (code, out, err) = hook(&project, cache.path(), &session_start("s-r1", &project));
    assert_eq!(code, 0, "{err}");
    assert!(
        out.contains("The project's tool rules do not allow Claude Code to use tool read_ticket of MCP server fx ([tools] deny \\\"fx/read_ticket\\\" in mcp-lock.toml)"),
        "{out}"
    );
    let call = pre_tool_use(
        "s-r1",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let (_, out, _) = hook(&project, cache.path(), &call);
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__fx__read_ticket (TOOL_DENIED): the project's tool rules do not allow Claude Code to use tool read_ticket of MCP server fx ([tools] deny \"fx/read_ticket\" in mcp-lock.toml); only a person changing that rule makes it usable. The call was not made; nothing was run. Do not retry it: use another tool, or ask the user to change the rule if this tool is needed."
        )
    );
    // Its sibling is served.
    let call = pre_tool_use(
        "s-r1",
        &project,
        "mcp__fx__deploy_preview",
        json!({"branch": "main"}),
    );
    assert_eq!(hook(&project, cache.path(), &call).1, no_decision());
}

#[test]
fn a_users_own_deny_stays_denied_in_the_hook_when_the_projects_claude_code_section_allows_the_tool()
{
    let project = pinned_project("a");
    rules(
        &project,
        "[tools]\ndeny = [\"fx/read_ticket\"]\n[profile.claude-code.tools]\nallow = [\"fx/read_ticket\"]\n",
    );
    let cache = tempfile::tempdir().unwrap();
    let call = |session: &str| {
        pre_tool_use(
            session,
            &project,
            "mcp__fx__read_ticket",
            json!({"id": "T-1"}),
        )
    };
    // Claude Code's own section allows what `[tools]` denies: served to Claude Code.
    let (code, _, err) = hook(&project, cache.path(), &session_start("s-r2", &project));
    assert_eq!(code, 0, "{err}");
    assert_eq!(hook(&project, cache.path(), &call("s-r2")).1, no_decision());
    // The user's own file denies it: the project's allow does not widen that.
    let user = user_rules(&project, "[tools]\ndeny = [\"fx/read_ticket\"]\n");
    let (code, _, err) = hook(&project, cache.path(), &session_start("s-r2b", &project));
    assert_eq!(code, 0, "{err}");
    let why = reason(&hook(&project, cache.path(), &call("s-r2b")).1);
    assert!(why.contains("TOOL_DENIED"), "{why}");
    assert!(
        why.contains(&format!(
            "[tools] deny \"fx/read_ticket\" in {}",
            user.display()
        )),
        "{why}"
    );
}

#[test]
fn an_argument_rule_refuses_a_tool_input_with_another_value_and_lets_the_allowed_one_through() {
    let project = pinned_project("a");
    rules(
        &project,
        "[tools.arguments.\"fx/deploy_preview\"]\nbranch = { pattern = \"^main$\" }\n",
    );
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-r3", &project));
    let call = |branch: &str| {
        pre_tool_use(
            "s-r3",
            &project,
            "mcp__fx__deploy_preview",
            json!({ "branch": branch }),
        )
    };
    let (_, out, _) = hook(&project, cache.path(), &call("fix-login"));
    assert_eq!(
        out,
        deny(
            "mcp-lock refused mcp__fx__deploy_preview (ARGUMENT_DENIED): its arguments break the project's argument rule [tools.arguments.\"fx/deploy_preview\"] branch: \"fix-login\" does not match /^main$/ in mcp-lock.toml. The call was not made; nothing was run. Call it again with a value the rule allows, or ask the user to change the rule."
        )
    );
    assert_eq!(hook(&project, cache.path(), &call("main")).1, no_decision());
}

#[test]
fn rules_changed_or_broken_mid_session_refuse_every_mcp_call_until_a_session_start_judges_under_them()
 {
    let project = pinned_project("a");
    rules(&project, "[tools]\ndeny = [\"fx/read_ticket\"]\n");
    let cache = tempfile::tempdir().unwrap();
    hook(&project, cache.path(), &session_start("s-r4", &project));
    let read = pre_tool_use(
        "s-r4",
        &project,
        "mcp__fx__read_ticket",
        json!({"id": "T-1"}),
    );
    let deploy = pre_tool_use(
        "s-r4",
        &project,
        "mcp__fx__deploy_preview",
        json!({"branch": "main"}),
    );
    // Taking the deny out mid-session widens nothing: every call waits for a start.
    rules(&project, "");
    for call in [&read, &deploy] {
        let why = reason(&hook(&project, cache.path(), call).1);
        assert!(why.contains("tool rules"), "{why}");
        assert!(why.contains("changed since"), "{why}");
    }
    // A user file that cannot be read as rules refuses them too, saying where.
    user_rules(&project, "[tools]\ndeny = \"not a list\"\n");
    let why = reason(&hook(&project, cache.path(), &deploy).1);
    assert!(why.contains("mcp-lock/mcp-lock.toml:2"), "{why}");
    // ...also at a session start, which then leaves every call refused.
    let (_, _, err) = hook(&project, cache.path(), &session_start("s-r4", &project));
    assert!(err.contains("mcp-lock/mcp-lock.toml:2"), "{err}");
    let why = reason(&hook(&project, cache.path(), &deploy).1);
    assert!(why.contains("mcp-lock/mcp-lock.toml:2"), "{why}");
    // Fixed, a new start judges under the rules as they are: the deny is gone.
    std::fs::remove_file(project.path().join(".user-config/mcp-lock/mcp-lock.toml")).unwrap();
    hook(&project, cache.path(), &session_start("s-r4", &project));
    assert_eq!(hook(&project, cache.path(), &read).1, no_decision());
}
