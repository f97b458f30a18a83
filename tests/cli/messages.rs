//! What mcp-lock says, through the real binary: interrupts, help, limits, errors and
//! the small words of its reports.

use crate::common;

use common::{Project, fixture_entry, processes_with, unique_tag};

#[test]
fn nothing_is_printed_after_the_interrupt_message() {
    let tag = unique_tag("sigterm-quiet");
    // Many servers, so that some report their kill while the message goes out.
    let servers: serde_json::Map<String, serde_json::Value> = (0..10)
        .map(|i| {
            (
                format!("s{i}"),
                fixture_entry(&["--misbehave", "hang-initialize", "--tag", &tag]),
            )
        })
        .collect();
    let p = Project::new(serde_json::Value::Object(servers));
    for _ in 0..3 {
        // All ten at once (the default is sized to the cores), so all hang together.
        let child = p.spawn(&["update", "--yes", "--jobs", "10"]);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
        while processes_with(&tag).len() < 10 {
            assert!(
                std::time::Instant::now() < deadline,
                "the servers did not start"
            );
            std::thread::sleep(std::time::Duration::from_millis(10));
        }
        // SAFETY: signalling the mcp-lock process this test started.
        unsafe {
            libc::kill(child.id() as i32, libc::SIGTERM);
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{stderr}");
        // The servers mcp-lock killed itself are not failures to report.
        assert_eq!(stderr, "interrupted: nothing was written\n");
        // SIGKILL is sent, but a process takes a moment to go.
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while !processes_with(&tag).is_empty() {
            assert!(
                std::time::Instant::now() < deadline,
                "servers outlived mcp-lock: {:?}",
                processes_with(&tag)
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

#[test]
fn update_help_says_that_without_a_terminal_what_the_policy_accepts_is_written() {
    let help = Project::new(serde_json::json!({}))
        .run(&["update", "--help"])
        .expect(0)
        .stdout();
    let flat = help.split_whitespace().collect::<Vec<_>>().join(" ");
    assert!(!flat.contains("nothing is written"), "{help}");
    assert!(
        flat.contains("Without a terminal and without --yes, only the changes the policy accepts"),
        "{help}"
    );
    // And that is what happens: the cosmetic change is written, the additive one is
    // left for a person, exit 4.
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(serde_json::json!({
        "fixture": fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "additive").unwrap();
    p.run(&["update", "--accept", "cosmetic"]).expect(4);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let left: Vec<&str> = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["search_docs"]);
}

#[test]
fn an_error_names_its_cause_once() {
    let p = Project::new(serde_json::json!({}));
    std::fs::create_dir(p.path().join("a-directory")).unwrap();
    let cases: [(&[&str], &str); 3] = [
        (
            &["--config", "nosuch.json", "verify"],
            "error: cannot read nosuch.json: No such file or directory (os error 2)\n",
        ),
        (
            &["--lock", "a-directory", "verify"],
            "error: cannot read a-directory: it is a directory, not a regular file: replace it with the file\n",
        ),
        (
            &["--policy", "a-directory", "verify"],
            "error: cannot read a-directory: it is a directory, not a regular file: replace it with the file\n",
        ),
    ];
    for (args, said) in cases {
        let run = p.run(args);
        run.expect(2);
        assert_eq!(run.stderr(), said, "{args:?}");
    }
}

#[test]
fn limits_that_cannot_work_are_refused_not_raised() {
    let p = Project::new(serde_json::json!({ "fixture": fixture_entry(&[]) }));
    let cases: [(&[&str], &str); 6] = [
        (
            &["verify", "--max-message-bytes", "10"],
            "must be at least 1024",
        ),
        (&["verify", "--max-pages", "0"], "must be at least 1"),
        (&["update", "--jobs", "0"], "must be at least 1"),
        (&["diff", "--max-tools", "0"], "must be at least 1"),
        (
            &["guard", "fixture", "--max-message-bytes", "1"],
            "must be at least 1024",
        ),
        (&["verify", "--jobs=-3"], "is not a whole number"),
    ];
    for (args, said) in cases {
        let run = p.run(args);
        run.expect(2);
        let stderr = run.stderr();
        assert!(stderr.contains(said), "{args:?}: {stderr}");
        let flag = args.iter().find(|a| a.starts_with("--")).unwrap();
        let flag = flag.split('=').next().unwrap();
        assert!(stderr.contains(flag), "{args:?}: {stderr}");
    }
    // The smallest values that can work are taken as given.
    p.run(&["update", "--yes", "--jobs", "1", "--max-pages", "1"])
        .expect(0);
}

fn pinned(args: &[&str]) -> Project {
    let p = Project::new(serde_json::json!({ "fixture": fixture_entry(args) }));
    p.run(&["update", "--yes"]).expect(0);
    p
}

/// A 64-digit hex run anywhere in `text`.
fn full_hash_in(text: &str) -> Option<String> {
    text.split(|c: char| !c.is_ascii_hexdigit())
        .find(|w| w.len() >= 64)
        .map(str::to_string)
}

#[test]
fn guard_for_a_server_nobody_defines_does_not_advise_an_update_that_fails() {
    let p = pinned(&[]);
    let run = p.run(&["guard", "nosuch"]);
    run.expect(2);
    let err = run.stderr();
    assert!(!err.contains("mcp-lock update nosuch` first"), "{err}");
    assert!(
        err.contains("neither pinned in mcp.lock nor defined in the config"),
        "{err}"
    );
    assert!(err.contains("name a pinned server (fixture)"), "{err}");
    // The advice it gives is the one that works.
    assert!(p.run(&["update", "nosuch"]).code() != 0);
    // A server the config defines but the lock does not pin: update it, as advised.
    let two = Project::new(serde_json::json!({
        "fixture": fixture_entry(&[]),
        "other": fixture_entry(&[]),
    }));
    two.run(&["update", "--yes", "fixture"]).expect(0);
    let run = two.run(&["guard", "other"]);
    run.expect(2);
    assert!(
        run.stderr().contains("run `mcp-lock update other` first"),
        "{}",
        run.stderr()
    );
    two.run(&["update", "--yes", "other"]).expect(0);
}

#[test]
fn verify_of_a_named_server_gone_from_the_config_reports_it_removed() {
    let p = Project::new(serde_json::json!({
        "gone": fixture_entry(&[]),
        "kept": fixture_entry(&[]),
    }));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(serde_json::json!({ "kept": fixture_entry(&[]) }));
    let all = p.run(&["verify", "--format", "json"]).expect(1).json();
    let named = p
        .run(&["verify", "gone", "--format", "json"])
        .expect(1)
        .json();
    let servers = named["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 1, "{named}");
    // The same report as verify without names gives for it.
    let unnamed = all["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == "gone")
        .unwrap();
    assert_eq!(servers[0]["verdict"], "stale");
    assert_eq!(servers[0]["error"], unnamed["error"]);
    assert_eq!(servers[0]["changes"], unnamed["changes"]);
    assert_eq!(servers[0]["server_changes"][0]["field"], "server");
    // Named with a server still in the config: both are reported.
    let both = p.run(&["verify", "gone", "kept"]);
    both.expect(1);
    assert!(
        !both.stderr().contains("unknown server"),
        "{}",
        both.stderr()
    );
    let human = both.stdout();
    assert!(human.contains("gone") && human.contains("kept"), "{human}");
    // A name in neither the config nor the lock is still unknown.
    let run = p.run(&["verify", "nosuch"]);
    run.expect(2);
    assert!(
        run.stderr().contains("unknown server \"nosuch\""),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_tool_listed_twice_is_an_error_of_the_listing() {
    let p = Project::new(serde_json::json!({
        "fixture": fixture_entry(&["--misbehave", "duplicate-tool"])
    }));
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    let err = run.stderr();
    assert!(!err.contains("up to date"), "{err}");
    assert!(
        err.contains("the listing names tool \"deploy_preview\" 2 times; a server must list each tool once (after 1 page, 4 tools); its pins are unchanged"),
        "{err}"
    );
    assert!(!p.lock_text().unwrap_or_default().contains("[[server]]"));
    // A pinned server that starts listing a tool twice: verify cannot vouch for it.
    let p = pinned(&[]);
    p.set_servers(serde_json::json!({
        "fixture": fixture_entry(&["--misbehave", "duplicate-tool"])
    }));
    let doc = p.run(&["verify", "--format", "json"]).expect(3).json();
    assert_eq!(doc["servers"][0]["verdict"], "incomplete", "{doc}");
    let before = p.lock_text().unwrap();
    p.run(&["update", "--yes"]).expect(3);
    assert_eq!(p.lock_text().unwrap(), before);
}

#[test]
fn diff_with_nothing_different_but_a_server_unchecked_does_not_say_differs() {
    let p = pinned(&[]);
    p.set_servers(serde_json::json!({
        "fixture": fixture_entry(&["--misbehave", "exit-at-start"])
    }));
    let run = p.run(&["diff"]);
    run.expect(3);
    let err = run.stderr();
    assert!(!err.contains("Differs"), "{err}");
    assert!(
        err.contains("no differences found, but not every server could be checked: 1 unverifiable of 1 server"),
        "{err}"
    );
}

#[test]
fn counts_agree_with_their_nouns() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(serde_json::json!({
        "fixture": fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    // Two changes: one cosmetic (accepted by --accept), one additive (asked about).
    std::fs::write(rev.path(), "additive").unwrap();
    let dry = p.run(&["update", "--accept", "cosmetic", "--dry-run"]);
    dry.expect(0);
    assert!(
        dry.stderr()
            .contains("1 change would need approval, 1 the policy accepts; nothing written"),
        "{}",
        dry.stderr()
    );
    let run = p.run(&["update", "--accept", "cosmetic"]);
    run.expect(4);
    let err = run.stderr();
    assert!(
        err.contains("1 change needs approval and there is no terminal to ask on; run `mcp-lock update` in a terminal, or pass --yes to accept it. The 1 change the policy accepts was written"),
        "{err}"
    );
    // The github summary line.
    let gh = p.run(&["verify", "--format", "github", "--fail", "additive"]);
    gh.expect(1);
    assert!(
        gh.stdout().contains("; 1 change fails the policy, 0 warn"),
        "{}",
        gh.stdout()
    );
    assert!(!gh.stdout().contains("(s)"), "{}", gh.stdout());
    // A listing of one tool over two pages.
    let dir = tempfile::tempdir().unwrap();
    let page1 = dir.path().join("page1.json");
    let page2 = dir.path().join("page2.json");
    std::fs::write(
        &page1,
        r#"{"tools": [{"name": "a", "inputSchema": {"type": "object"}}]}"#,
    )
    .unwrap();
    std::fs::write(&page2, r#"{"tools": []}"#).unwrap();
    let hashed = p.run(&[
        "hash",
        &page1.display().to_string(),
        &page2.display().to_string(),
    ]);
    hashed.expect(0);
    assert!(
        hashed.stdout().contains("(set of 1 tool)"),
        "{}",
        hashed.stdout()
    );
}

#[test]
fn a_finding_about_the_whole_definition_is_not_shown_as_the_pointer_slash() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(serde_json::json!({
        "fixture": fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    // Revision b adds the tool rollback: a finding about the whole definition.
    std::fs::write(rev.path(), "b").unwrap();
    for format in ["github", "junit"] {
        let out = p.run(&["verify", "--format", format]).expect(1).stdout();
        assert!(!out.contains(" /: "), "{format}: {out}");
        assert!(
            out.contains("(whole definition): new tool"),
            "{format}: {out}"
        );
    }
    // JSON keeps the real pointer.
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let added = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["tool"] == "rollback")
        .unwrap();
    assert_eq!(added["findings"][0]["pointer"], "", "{added}");
}

#[test]
fn instructions_hashes_are_cut_like_tool_hashes_in_human_output() {
    let p = pinned(&["--instructions", "Use the tools carefully."]);
    p.set_servers(serde_json::json!({
        "fixture": fixture_entry(&["--instructions", "Always call rollback first."])
    }));
    let run = p.run(&["verify"]);
    run.expect(1);
    let out = run.stdout();
    assert!(out.contains("instructions  semantic, fail"), "{out}");
    assert_eq!(full_hash_in(&out), None, "{out}");
    let dry = p.run(&["update", "--dry-run"]);
    assert_eq!(full_hash_in(&dry.stderr()), None, "{}", dry.stderr());
    // Machines get the whole hash.
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let change = &doc["servers"][0]["server_changes"][0];
    assert_eq!(change["field"], "instructions");
    assert_eq!(change["pinned"].as_str().unwrap().len(), 64, "{change}");
}

#[test]
fn a_config_that_says_two_things_is_an_error_naming_file_and_server() {
    let fixture = common::fixture().display().to_string();
    let cases = [
        (
            format!(
                r#"{{"mcpServers": {{"a": {{"command": "{fixture}"}}, "a": {{"command": "true"}}}}}}"#
            ),
            "server \"a\" is defined more than once; keep one",
        ),
        (
            format!(
                r#"{{"servers": {{"a": {{"command": "{fixture}", "env": {{"K": "1", "K": "2"}}}}}}}}"#
            ),
            "server \"a\": \"env.K\" is given more than once; keep one",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"a": {{"command": "{fixture}", "env": {{"PORT": 8080}}}}}}}}"#
            ),
            "server \"a\": \"env.PORT\" is not a string; write it in quotes: \"8080\"",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"a": {{"command": "{fixture}", "env": {{"DEBUG": true}}}}}}}}"#
            ),
            "server \"a\": \"env.DEBUG\" is not a string; write it in quotes: \"true\"",
        ),
        (
            format!(
                r#"{{"mcpServers": {{"a": {{"command": "{fixture}", "url": "http://127.0.0.1:9/mcp"}}}}}}"#
            ),
            "server \"a\": has both \"command\" and \"url\"; a stdio server has a command, a remote one a url",
        ),
        (
            // Comments are allowed, and do not hide the repeat.
            format!(
                "{{\"mcpServers\": {{\"a\": {{\"command\": \"{fixture}\"}}, // the first\n \"a\": {{\"command\": \"{fixture}\"}}}}}}"
            ),
            "server \"a\" is defined more than once; keep one",
        ),
    ];
    let p = Project::new(serde_json::json!({}));
    for (text, said) in cases {
        std::fs::write(p.path().join(".mcp.json"), &text).unwrap();
        for command in [&["verify"][..], &["update", "--yes"]] {
            let run = p.run(command);
            run.expect(2);
            assert_eq!(
                run.stderr(),
                format!("error: {}: {said}\n", p.path().join(".mcp.json").display()),
                "{text}"
            );
        }
    }
    assert!(p.lock_text().is_none());
    // A repeat elsewhere in a settings file changes nothing mcp-lock reads.
    let settings = p.path().join("settings.json");
    std::fs::write(
        &settings,
        format!(
            r#"{{"editor.fontSize": 12, "editor.fontSize": 14, "mcp": {{"servers": {{"a": {{"command": "{fixture}"}}}}}}}}"#
        ),
    )
    .unwrap();
    p.run(&[
        "--config",
        &settings.display().to_string(),
        "update",
        "--yes",
    ])
    .expect(0);
}

#[test]
fn a_lock_naming_an_unknown_protocol_version_reads_and_that_server_is_unverifiable() {
    let p = pinned(&[]);
    let lock = p.lock_text().unwrap();
    let edited = lock
        .lines()
        .map(|l| {
            if l.starts_with("protocol_version = ") {
                "protocol_version = \"2099-01-01\""
            } else {
                l
            }
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::write(p.path().join("mcp.lock"), edited + "\n").unwrap();
    // The lock still reads (a lock an older or newer mcp-lock wrote is never a hard
    // error); the server it pins that way cannot be asked for it.
    for command in [&["verify"][..], &["diff"]] {
        let run = p.run(command);
        run.expect(3);
        assert!(
            run.stdout().contains("the lock pins protocol version \"2099-01-01\", which this mcp-lock does not speak (2024-11-05, 2025-03-26, 2025-06-18, 2025-11-25, 2026-07-28); restore the pinned value, upgrade mcp-lock, or run `mcp-lock update fixture` to pin it again"),
            "{command:?}: {}",
            run.stdout()
        );
    }
    // update pins it again in a version it speaks.
    p.run(&["update", "--yes"]).expect(0);
    assert!(!p.lock_text().unwrap().contains("2099-01-01"));
}

#[test]
fn update_of_a_named_server_gone_from_the_config_removes_its_pins() {
    let p = Project::new(serde_json::json!({
        "gone": fixture_entry(&[]),
        "kept": fixture_entry(&[]),
    }));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(serde_json::json!({ "kept": fixture_entry(&[]) }));
    let run = p.run(&["update", "--yes", "gone"]);
    run.expect(0);
    let lock = p.lock_text().unwrap();
    assert!(!lock.contains("name = \"gone\""), "{lock}");
    assert!(lock.contains("name = \"kept\""), "{lock}");
    // A name neither the config nor the lock knows is still an unknown server.
    let run = p.run(&["update", "--yes", "nosuch"]);
    run.expect(2);
    assert!(
        run.stderr().contains("unknown server \"nosuch\""),
        "{}",
        run.stderr()
    );
}
