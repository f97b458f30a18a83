//! The chained audit log of real guard sessions: `audit verify` proves an untouched
//! log and finds each kind of tampering at its line; rotation, guards sharing a log,
//! signed checkpoints; `audit show` reads a session back.

use super::*;

/// A finished guard session of the deploy fixture: listed, three calls, closed.
fn finished_session(project: &Project) {
    finished_session_with(project, &[]);
}

/// [`finished_session`] with `env` set on the guard; its stderr.
fn finished_session_with(project: &Project, env: &[(&str, &str)]) -> String {
    let mut agent = McpPipe::spawn(&common::bin(), &["guard", "deploy"], project.path(), env);
    agent.initialize();
    agent.list_tools();
    for id in ["T-1", "T-2", "T-3"] {
        agent.call("read_ticket", json!({"id": id}));
    }
    agent.close();
    assert_eq!(
        agent.wait_exit(Duration::from_secs(10)).unwrap().code(),
        Some(0)
    );
    agent.stderr()
}

fn log_path(project: &Project) -> std::path::PathBuf {
    project.path().join(".mcp-lock/audit.jsonl")
}

fn log_lines(project: &Project) -> Vec<String> {
    std::fs::read_to_string(log_path(project))
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect()
}

/// `audit verify FILE --format json` on these lines: its exit code and report.
fn verify_lines(project: &Project, lines: &[String], extra: &[&str]) -> (i32, Value) {
    let file = project.path().join("tampered.jsonl");
    std::fs::write(
        &file,
        lines.iter().map(|l| format!("{l}\n")).collect::<String>(),
    )
    .unwrap();
    let mut args = vec!["audit", "verify", "tampered.jsonl", "--format", "json"];
    args.extend_from_slice(extra);
    let run = project.run(&args);
    (run.code(), run.json())
}

#[test]
fn an_untouched_session_log_verifies_and_each_tampering_is_found_at_its_line() {
    let project = deploy_project(&[]);
    finished_session(&project);
    let lines = log_lines(&project);
    assert!(lines.len() >= 8, "{lines:#?}");
    let run = project.run(&["audit", "verify"]);
    run.expect(0);
    assert!(run.stdout().contains("intact"), "{}", run.stdout());
    let (code, report) = verify_lines(&project, &lines, &[]);
    assert_eq!(code, 0, "{report}");
    assert_eq!(report["intact"], true);
    assert_eq!(report["entries"], lines.len());

    let calls: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].contains("\"event\":\"tools/call\""))
        .collect();
    let k = calls[1];
    let broken = |tampered: Vec<String>, problem: &str, line: usize| {
        let (code, report) = verify_lines(&project, &tampered, &[]);
        assert_eq!(code, 1, "{problem}: {report}");
        assert_eq!(report["intact"], false, "{problem}: {report}");
        assert_eq!(report["break"]["problem"], problem, "{report}");
        assert_eq!(report["break"]["line"], line, "{problem}: {report}");
    };
    // Edited: the second call's arguments changed afterwards.
    let mut edited = lines.clone();
    edited[k] = edited[k].replace("T-2", "T-9");
    assert_ne!(edited[k], lines[k]);
    broken(edited, "edited", k + 1);
    // Deleted.
    let mut deleted = lines.clone();
    deleted.remove(k);
    broken(deleted, "deleted", k + 1);
    // Inserted: a copy of an earlier entry.
    let mut inserted = lines.clone();
    inserted.insert(k + 1, lines[calls[0]].clone());
    broken(inserted, "inserted", k + 2);
    // Reordered: two calls swapped.
    let mut reordered = lines.clone();
    reordered.swap(k, k + 1);
    broken(reordered, "reordered", k + 1);
    // The beginning cut off.
    broken(lines[2..].to_vec(), "start_missing", 1);
    // The last line cut short.
    let mut cut = lines.clone();
    let last = cut.len() - 1;
    let half = cut[last].len() / 2;
    cut[last].truncate(half);
    broken(cut, "cut_short", lines.len());
}

#[test]
fn two_guard_sessions_at_once_extend_one_chain_that_verifies_with_both_sessions() {
    let project = deploy_project(&[]);
    let mut a = McpPipe::guard(&project, &["deploy"]);
    let mut b = McpPipe::guard(&project, &["deploy"]);
    a.initialize();
    b.initialize();
    a.list_tools();
    b.list_tools();
    for i in 0..20 {
        a.call("read_ticket", json!({"id": format!("A-{i}")}));
        b.call("read_ticket", json!({"id": format!("B-{i}")}));
    }
    a.close();
    b.close();
    a.wait_exit(Duration::from_secs(10)).unwrap();
    b.wait_exit(Duration::from_secs(10)).unwrap();
    // The helper checks seq and prev line by line.
    let entries = audit(&project);
    let sessions: std::collections::BTreeSet<&str> = entries
        .iter()
        .map(|e| e["session"].as_str().unwrap())
        .collect();
    assert_eq!(sessions.len(), 2);
    project.run(&["audit", "verify"]).expect(0);
    let show = project.run(&["audit", "show", "--format", "json"]);
    show.expect(0);
    assert_eq!(show.json()["sessions"].as_array().unwrap().len(), 2);
}

#[test]
fn a_log_rotated_across_three_files_verifies_and_a_missing_file_is_found() {
    let project = deploy_project(&[]);
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[audit]\nmax-file-bytes = 3000\n",
    )
    .unwrap();
    finished_session(&project);
    finished_session(&project);
    let dir = project.path().join(".mcp-lock");
    let files = mcp_lock::records::audit::format::family(&dir.join("audit.jsonl")).unwrap();
    assert!(files.len() >= 3, "{files:?}");
    project.run(&["audit", "verify"]).expect(0);
    std::fs::remove_file(&files[1]).unwrap();
    let run = project.run(&["audit", "verify", "--format", "json"]);
    run.expect(1);
    assert_eq!(
        run.json()["break"]["problem"],
        "deleted",
        "{}",
        run.stdout()
    );
}

/// An ed25519 key made with ssh-keygen, and its allowed_signers line.
fn ssh_key(project: &Project, name: &str) -> (std::path::PathBuf, String) {
    let key = project.path().join(name);
    let made = project
        .command("ssh-keygen")
        .args(["-q", "-t", "ed25519", "-N", "", "-C", name, "-f"])
        .arg(&key)
        .output()
        .unwrap();
    assert!(made.status.success(), "{made:?}");
    let public = std::fs::read_to_string(key.with_extension("pub")).unwrap();
    let mut parts = public.split_whitespace();
    let line = format!(
        "{name}@example {} {}\n",
        parts.next().unwrap(),
        parts.next().unwrap()
    );
    (key, line)
}

#[test]
fn signed_checkpoints_verify_with_their_key_and_fail_with_another_or_when_edited() {
    let project = deploy_project(&[]);
    let (key, signer) = ssh_key(&project, "audit-key");
    let (_, stranger) = ssh_key(&project, "other-key");
    // The key is the user's own setting.
    let user_config = project.path().join(".user-config");
    write_user_settings(
        &user_config,
        &format!("[audit]\nsigning-key = {:?}\n", key.display().to_string()),
    );
    std::fs::write(project.path().join("signers"), &signer).unwrap();
    std::fs::write(project.path().join("strangers"), &stranger).unwrap();
    finished_session_with(
        &project,
        &[("XDG_CONFIG_HOME", user_config.to_str().unwrap())],
    );
    let lines = log_lines(&project);
    let checkpoint: Value = serde_json::from_str(lines.last().unwrap()).unwrap();
    assert_eq!(checkpoint["event"], "checkpoint");
    assert!(checkpoint["signature"].is_string(), "{checkpoint}");

    let run = project.run(&[
        "audit",
        "verify",
        "--allowed-signers",
        "signers",
        "--format",
        "json",
    ]);
    run.expect(0);
    assert_eq!(run.json()["signed_checkpoints"], 1, "{}", run.stdout());
    let run = project.run(&[
        "audit",
        "verify",
        "--allowed-signers",
        "strangers",
        "--format",
        "json",
    ]);
    run.expect(1);
    assert_eq!(
        run.json()["break"]["problem"],
        "bad_signature",
        "{}",
        run.stdout()
    );
    // The checkpoint's time edited: its signature no longer matches.
    let mut edited = lines.clone();
    let last = edited.len() - 1;
    let time = checkpoint["time"].as_str().unwrap();
    edited[last] = edited[last].replace(time, "2020-01-01T00:00:00.000Z");
    let (code, report) = verify_lines(&project, &edited, &["--allowed-signers", "signers"]);
    assert_eq!(code, 1, "{report}");
    assert_eq!(report["break"]["problem"], "bad_signature", "{report}");
    // The untouched log verifies with the right signers.
    let (code, report) = verify_lines(&project, &lines, &["--allowed-signers", "signers"]);
    assert_eq!(code, 0, "{report}");
}

/// Writes the user's own settings file under `config_home`.
fn write_user_settings(config_home: &Path, text: &str) {
    std::fs::create_dir_all(config_home.join("mcp-lock")).unwrap();
    std::fs::write(config_home.join("mcp-lock/mcp-lock.toml"), text).unwrap();
}

/// `[audit] sign-command = ["sh", "-c", ...]`: touches `marker`, prints SIGNED.
fn sign_command(marker: &Path) -> String {
    let script = format!("touch '{}'; printf SIGNED", marker.display());
    format!("[audit]\nsign-command = [\"sh\", \"-c\", {script:?}]\n")
}

#[test]
fn a_projects_sign_command_never_runs_and_the_users_own_settings_sign() {
    let project = deploy_project(&[]);
    let user_config = project.path().join(".user-config");
    let env = [("XDG_CONFIG_HOME", user_config.to_str().unwrap())];
    let cloned = project.path().join("project-signer-ran");
    std::fs::write(project.path().join("mcp-lock.toml"), sign_command(&cloned)).unwrap();
    let ignored = "mcp-lock guard: warning: mcp-lock.toml: [audit] sign-command ignored: a project's file cannot name a command or key for mcp-lock to use; set it in ";
    let last_checkpoint = |project: &Project| {
        log_lines(project)
            .iter()
            .map(|l| serde_json::from_str::<Value>(l).unwrap())
            .rfind(|e| e["event"] == "checkpoint")
            .unwrap()
    };

    // A whole session, and one whose launch the guard refuses: the project's signer
    // runs in neither; each says once that it was ignored.
    let stderr = finished_session_with(&project, &env);
    assert_eq!(stderr.matches(ignored).count(), 1, "{stderr}");
    assert!(
        stderr.lines().any(|l| l.starts_with(ignored)),
        "one whole line: {stderr}"
    );
    assert!(!cloned.exists(), "the project's sign-command ran");
    assert_eq!(last_checkpoint(&project)["signature"], Value::Null);
    let refused = project.run(&["guard", "deploy", "--", "sh", "-c", "exit 0"]);
    refused.expect(1);
    let stderr = refused.stderr();
    assert_eq!(stderr.lines().count(), 2, "{stderr}");
    assert!(stderr.starts_with(ignored), "{stderr}");
    assert!(stderr.contains("refusing to start"), "{stderr}");
    assert!(!cloned.exists(), "the project's sign-command ran");
    assert_eq!(last_checkpoint(&project)["signature"], Value::Null);

    // The same setting in the user's own settings signs.
    let own = project.path().join("user-signer-ran");
    write_user_settings(&user_config, &sign_command(&own));
    finished_session_with(&project, &env);
    assert!(own.exists(), "the user's sign-command did not run");
    assert!(!cloned.exists(), "the project's sign-command ran");
    assert_eq!(last_checkpoint(&project)["signature"], "SIGNED");
    project.run(&["audit", "verify"]).expect(0);
}

/// `audit show` output with times and session ids made stable.
fn stable(text: &str, project: &Project) -> String {
    let mut out = String::new();
    let mut rest = text;
    // Times: 2026-12-02T20:38:23.123Z.
    while let Some(at) = rest.find("T").filter(|_| !rest.is_empty()) {
        let start = at.saturating_sub(10);
        let candidate = rest.get(start..start + 24);
        if let Some(c) = candidate
            && c.ends_with('Z')
            && c.as_bytes()[4] == b'-'
            && c.as_bytes()[13] == b':'
        {
            out.push_str(&rest[..start]);
            out.push_str("TIME");
            rest = &rest[start + 24..];
        } else {
            out.push_str(&rest[..at + 1]);
            rest = &rest[at + 1..];
        }
    }
    out.push_str(rest);
    for entry in audit(project) {
        if let Some(id) = entry["session"].as_str() {
            out = out.replace(id, "SESSION");
        }
    }
    out
}

#[test]
fn audit_show_tells_a_session_with_mid_session_drift_a_refused_call_and_a_hidden_tool() {
    let project = deploy_project(&[]);
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    agent.list_tools();
    agent.call("read_ticket", json!({"id": "T-1"}));
    std::fs::write(project.path().join("rev"), "b").unwrap();
    agent.notification("notifications/tools/list_changed");
    agent.list_tools();
    let answer = agent.call("deploy_preview", json!({"branch": "fix-login"}));
    assert_eq!(refusal(&answer)["error_code"], "STALE_TOOL_SCHEMA");
    agent.close();
    agent.wait_exit(Duration::from_secs(10)).unwrap();

    let text = project.run(&["audit", "show"]);
    text.expect(0);
    let shown = stable(&text.stdout(), &project);
    assert_eq!(shown, SHOW_TEXT, "{shown}");
    let json = project.run(&["audit", "show", "--format", "json"]);
    json.expect(0);
    let shown = stable(&json.stdout(), &project);
    let value: Value = serde_json::from_str(&shown).unwrap();
    assert_eq!(
        value,
        serde_json::from_str::<Value>(SHOW_JSON).unwrap(),
        "{shown}"
    );
    let markdown = project.run(&[
        "audit", "show", "--format", "markdown", "--server", "deploy",
    ]);
    assert!(
        markdown
            .stdout()
            .contains("| `read_ticket` | `1 forwarded` |"),
        "{}",
        markdown.stdout()
    );
    let none = project.run(&["audit", "show", "--server", "other"]);
    assert_eq!(none.stdout(), "no guard session in the audit log\n");
}

#[test]
fn audit_show_escapes_a_refused_tool_name_for_text_markdown_and_json() {
    let project = deploy_project(&[]);
    let name = "evil\nsession 0000000000000000 of forged\u{1b}[2J\u{7}\u{202e}![x](http://127.0.0.1:9/p.png) | `x` | <img src=x>";
    let mut agent = McpPipe::guard(&project, &["deploy"]);
    agent.initialize();
    agent.list_tools();
    let answer = agent.call(name, json!({}));
    assert!(
        answer.get("error").is_some() || answer["result"]["isError"] == true,
        "{answer}"
    );
    agent.close();
    agent.wait_exit(Duration::from_secs(10)).unwrap();
    let logged = audit(&project)
        .into_iter()
        .any(|e| e["event"] == "tools/call" && e["tool"] == name);
    assert!(logged, "the refused call is logged under its name");

    let text = project.run(&["audit", "show"]);
    text.expect(0);
    let text = text.stdout();
    assert!(
        !text
            .lines()
            .any(|l| l.starts_with("session 0000000000000000")),
        "a forged line: {text}"
    );
    assert!(!text.contains(['\u{1b}', '\u{7}', '\u{202e}']), "{text}");
    assert!(
        text.contains("evil\\nsession 0000000000000000 of forged\\u{001b}[2J\\u{0007}\\u{202e}!["),
        "{text}"
    );

    let markdown = project.run(&["audit", "show", "--format", "markdown"]);
    markdown.expect(0);
    let markdown = markdown.stdout();
    assert!(
        !markdown.contains(['\u{1b}', '\u{7}', '\u{202e}']),
        "{markdown}"
    );
    // The name sits whole in one code span of its table row: no image, link or
    // HTML is made of it, and its `|` cannot end the cell.
    let row = markdown
        .lines()
        .find(|l| l.contains("evil\\n"))
        .unwrap_or_else(|| panic!("{markdown}"));
    assert_eq!(
        row,
        "| ``evil\\nsession 0000000000000000 of forged\\u{001b}[2J\\u{0007}\\u{202e}![x](http://127.0.0.1:9/p.png) \\| `x` \\| <img src=x>`` | `1 refused` |",
        "{markdown}"
    );

    let json = project.run(&["audit", "show", "--format", "json"]);
    json.expect(0);
    assert!(!json.stdout().contains(['\u{1b}', '\u{7}', '\u{202e}']));
    let value: Value = serde_json::from_str(&json.stdout()).unwrap();
    assert_eq!(value["sessions"][0]["calls"][name]["refused"], 1, "{value}");
}

/// Writes `entries` (event, session, members) as a chained log at the project's
/// default place, as the guard writes one.
fn write_chained_log(project: &Project, entries: &[(String, String, Value)]) {
    use std::io::Write;
    std::fs::create_dir_all(project.path().join(".mcp-lock")).unwrap();
    let file = std::fs::File::create(log_path(project)).unwrap();
    let mut out = std::io::BufWriter::new(file);
    let mut prev = mcp_lock::records::audit::format::GENESIS.to_string();
    for (i, (event, session, members)) in entries.iter().enumerate() {
        let mut line = format!(
            "{{\"seq\":{},\"prev\":\"{prev}\",\"time\":\"2026-12-01T10:00:00.000Z\",\"server\":\"deploy\",\"session\":\"{session}\",\"event\":\"{event}\"",
            i + 1
        );
        for (k, v) in members.as_object().unwrap() {
            line.push_str(&format!(",{}:{v}", Value::from(k.as_str())));
        }
        line.push('}');
        prev = mcp_lock::records::audit::format::line_hash(line.as_bytes());
        writeln!(out, "{line}").unwrap();
    }
    out.flush().unwrap();
}

#[test]
fn audit_verify_and_show_read_a_large_log_right_and_bound_what_they_keep() {
    let project = Project::empty();
    let mut entries = Vec::new();
    let mut add = |event: &str, session: &str, members: Value| {
        entries.push((event.to_string(), session.to_string(), members))
    };
    let ended = |add: &mut dyn FnMut(&str, &str, Value), id: &str| {
        add(
            "client_closed",
            id,
            json!({"reason": "the client closed the session"}),
        );
        add(
            "checkpoint",
            id,
            json!({"decision": "chain_head", "reason": "session_end", "signature": null}),
        );
    };
    // 5,000 whole sessions.
    for n in 0..5000 {
        let id = format!("{n:016x}");
        add("session_started", &id, json!({"decision": "started"}));
        add(
            "tools/call",
            &id,
            json!({"tool": "read_ticket", "decision": "forwarded"}),
        );
        add(
            "tools/call",
            &id,
            json!({"tool": "deploy", "decision": "refused", "error_code": "STALE_TOOL_SCHEMA"}),
        );
        ended(&mut add, &id);
    }
    // 150 sessions whose guard was killed: no end.
    for n in 0..150 {
        let id = format!("{:016x}", 100_000 + n);
        add("session_started", &id, json!({"decision": "started"}));
    }
    // One session refused 3,000 distinct tool names.
    let big = format!("{:016x}", 999_999);
    add("session_started", &big, json!({"decision": "started"}));
    for n in 0..3000 {
        add(
            "tools/call",
            &big,
            json!({"tool": format!("t{n}"), "decision": "refused", "error_code": "UNPINNED_TOOL"}),
        );
    }
    ended(&mut add, &big);
    let total = entries.len();
    write_chained_log(&project, &entries);

    let run = project.run(&["audit", "verify", "--format", "json"]);
    run.expect(0);
    let report = run.json();
    assert_eq!(report["entries"], total);
    assert_eq!(report["checkpoints"], 5001);
    // One warning a session without an end, up to 100, then one line for the rest.
    let warnings = report["warnings"].as_array().unwrap();
    assert_eq!(warnings.len(), 101, "{warnings:?}");
    assert!(warnings[0].as_str().unwrap().contains("has no end"));
    assert_eq!(warnings[100], "50 more warnings not shown");

    let run = project.run(&["audit", "show", "--format", "json"]);
    run.expect(0);
    let sessions = run.json()["sessions"].as_array().unwrap().clone();
    assert_eq!(sessions.len(), 5000 + 150 + 1);
    // Each whole session as it ended, in order; then those without an end.
    assert_eq!(sessions[0]["session"], format!("{:016x}", 0));
    assert_eq!(sessions[0]["calls"]["read_ticket"]["forwarded"], 1);
    assert_eq!(sessions[0]["refusals"]["STALE_TOOL_SCHEMA"], 1);
    assert_eq!(sessions[0]["ended"], "the client closed the session");
    let big_summary = &sessions[5000];
    assert_eq!(big_summary["session"], big.as_str());
    // The session's calls are named up to the limit, the rest counted.
    assert_eq!(big_summary["calls"].as_object().unwrap().len(), 1000);
    assert_eq!(big_summary["not_listed"], 2000);
    assert_eq!(big_summary["refusals"]["UNPINNED_TOOL"], 3000);
    assert_eq!(sessions[5001]["ended"], "no end recorded");
    let text = project.run(&["audit", "show", "--server", "deploy"]);
    text.expect(0);
    assert!(
        text.stdout().contains(
            "  not listed: 2000 entry details past the summary's limit of 1000 items a list\n"
        ),
        "{}",
        &text.stdout()[..2000]
    );
}

const SHOW_TEXT: &str = "\
session SESSION of deploy
  from TIME to TIME (the client closed the session)
  client profile: none matched (closest: claude-code; pin with: mcp-lock update deploy --client bare)
  shown: 1 tool (in the last whole listing)
  hidden: deploy_preview (STALE_TOOL_SCHEMA, authority)
  hidden: search_docs (STALE_TOOL_SCHEMA, semantic)
  hidden: rollback (UNPINNED_TOOL, additive)
  calls:
    deploy_preview  1 refused
    read_ticket     1 forwarded
  refusals: STALE_TOOL_SCHEMA 1
  list_changed: 1 notification (tools)
  drift mid-session at TIME: deploy_preview hidden: STALE_TOOL_SCHEMA, authority
  drift mid-session at TIME: search_docs hidden: STALE_TOOL_SCHEMA, semantic
  drift mid-session at TIME: rollback hidden: UNPINNED_TOOL, additive

";
const SHOW_JSON: &str = r#"{
  "sessions": [
    {
      "session": "SESSION",
      "server": "deploy",
      "start": "TIME",
      "end": "TIME",
      "ended": "the client closed the session",
      "profile": null,
      "unmatched": {
        "closest": "claude-code",
        "pin_with": "mcp-lock update deploy --client bare"
      },
      "shown": {
        "tool": 1
      },
      "served_pinned": [],
      "served_live": [],
      "hidden": [
        {
          "item": "deploy_preview",
          "error_code": "STALE_TOOL_SCHEMA",
          "class": "authority"
        },
        {
          "item": "search_docs",
          "error_code": "STALE_TOOL_SCHEMA",
          "class": "semantic"
        },
        {
          "item": "rollback",
          "error_code": "UNPINNED_TOOL",
          "class": "additive"
        }
      ],
      "calls": {
        "deploy_preview": {
          "refused": 1
        },
        "read_ticket": {
          "forwarded": 1
        }
      },
      "refusals": {
        "STALE_TOOL_SCHEMA": 1
      },
      "list_changed": 1,
      "list_changed_lists": [
        "tools"
      ],
      "drift": [
        {
          "time": "TIME",
          "item": "deploy_preview",
          "what": "hidden: STALE_TOOL_SCHEMA, authority"
        },
        {
          "time": "TIME",
          "item": "search_docs",
          "what": "hidden: STALE_TOOL_SCHEMA, semantic"
        },
        {
          "time": "TIME",
          "item": "rollback",
          "what": "hidden: UNPINNED_TOOL, additive"
        }
      ],
      "warnings": []
    }
  ]
}"#;
