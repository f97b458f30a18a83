//! `mcp-lock update` at a real terminal: a pseudo-terminal drives the approval prompt.

use crate::common;

use common::Project;
use rexpect::session::{PtySession, spawn_command};
use serde_json::json;

fn update_in_pty(p: &Project) -> PtySession {
    let mut cmd = common::command(common::bin());
    cmd.arg("update").current_dir(p.path()).env("NO_COLOR", "1");
    spawn_command(cmd, Some(20_000)).expect("spawn in a pty")
}

#[test]
fn accepting_one_change_and_rejecting_others_moves_only_that_pin() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));

    // First pin: one question for the whole server.
    let mut s = update_in_pty(&p);
    s.exp_string("fixture [claude-code]: new server, 3 tools to pin")
        .unwrap();
    s.exp_string("Pin these tools?").unwrap();
    s.send_line("y").unwrap();
    s.exp_string("Pinning fixture [claude-code] (3 tools)")
        .unwrap();
    s.exp_eof().unwrap();
    let pinned_a = p.lock_text().unwrap();

    // Revision B: deploy_preview changed, rollback added, search_docs changed.
    std::fs::write(rev.path(), "b").unwrap();
    let mut s = update_in_pty(&p);
    s.exp_string("changed  fixture/deploy_preview [claude-code]  authority, ")
        .unwrap();
    s.exp_string("/inputSchema/properties/region").unwrap();
    s.exp_string("new required input `region`").unwrap();
    s.exp_string("[1/3] Accept this change?").unwrap();
    s.send_line("maybe").unwrap();
    s.exp_string("answer y, n, a or q").unwrap();
    s.send_line("y").unwrap();
    s.exp_string("added    fixture/rollback [claude-code]  tool-added")
        .unwrap();
    s.exp_string("[2/3] Accept this change?").unwrap();
    s.send_line("n").unwrap();
    s.exp_string("changed  fixture/search_docs [claude-code]  semantic, ")
        .unwrap();
    s.exp_string("[3/3] Accept this change?").unwrap();
    s.send_line("q").unwrap();
    s.exp_string("Updating fixture/deploy_preview").unwrap();
    s.exp_string("Rejected fixture/rollback").unwrap();
    s.exp_string("Rejected fixture/search_docs").unwrap();
    s.exp_eof().unwrap();

    let lock = p.lock_text().unwrap();
    assert_ne!(lock, pinned_a);
    assert!(
        lock.contains("\"region\""),
        "the accepted change moved its pin"
    );
    assert!(
        !lock.contains("name = \"rollback\""),
        "the rejected addition stays out"
    );
    assert!(
        lock.contains("\"maximum results\""),
        "the unanswered change keeps its old pin"
    );

    // What is left is exactly what was rejected.
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let left: Vec<&str> = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["rollback", "search_docs"]);
}

#[test]
fn accept_all_takes_the_remaining_changes() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "b").unwrap();
    let mut s = update_in_pty(&p);
    s.exp_string("[1/3] Accept this change?").unwrap();
    s.send_line("n").unwrap();
    s.exp_string("[2/3] Accept this change?").unwrap();
    s.send_line("a").unwrap();
    s.exp_eof().unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let changes = doc["servers"][0]["changes"].as_array().unwrap();
    assert_eq!(changes.len(), 1);
    assert_eq!(changes[0]["tool"], "deploy_preview");
}

#[test]
fn a_terminal_shows_each_running_server_with_its_state_and_a_pipe_gets_plain_lines() {
    let p = Project::new(json!({
        "slow-one": common::fixture_entry(&["--delay-initialize", "1500"]),
        "quick": common::fixture_entry(&[]),
    }));
    p.run(&["update", "--yes"]).expect(0);
    let mut cmd = common::command(common::bin());
    cmd.arg("verify").current_dir(p.path());
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    // The spinner line names the server and what it is doing while it waits.
    s.exp_string("slow-one").unwrap();
    s.exp_string("initializing").unwrap();
    s.exp_string("Listed").unwrap();
    s.exp_string("Verified").unwrap();
    s.exp_eof().unwrap();
    // Without a terminal: one plain line per finished server, no escape codes.
    let run = p.run(&["verify"]);
    run.expect(0);
    let stderr = run.stderr();
    assert!(!stderr.contains('\u{1b}'), "{stderr:?}");
    assert!(!stderr.contains("initializing"), "{stderr}");
    let listed: Vec<&str> = stderr.lines().filter(|l| l.contains("Listed")).collect();
    assert_eq!(listed.len(), 2, "{stderr}");
    assert!(listed.iter().any(|l| {
        l.trim_start()
            .starts_with("Listed slow-one [claude-code] (3 tools, ")
    }));
}

#[test]
fn at_a_terminal_the_policy_accepts_its_classes_and_only_the_rest_is_asked() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    // read_ticket's title changed (cosmetic), search_docs gained an optional input
    // (additive): only the additive one is asked about.
    std::fs::write(rev.path(), "additive").unwrap();
    let mut cmd = common::command(common::bin());
    cmd.args(["update", "--accept", "cosmetic"])
        .current_dir(p.path())
        .env("NO_COLOR", "1");
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    let shown = s.exp_string("[1/1] Accept this change?").unwrap();
    assert!(
        shown.contains("changed  fixture/search_docs [claude-code]  additive, warn"),
        "{shown}"
    );
    assert!(!shown.contains("read_ticket"), "{shown}");
    s.send_line("y").unwrap();
    s.exp_string("Updating fixture/read_ticket").unwrap();
    s.exp_string("Updating fixture/search_docs").unwrap();
    s.exp_eof().unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    assert_eq!(doc["servers"][0]["verdict"], "converged");
}

/// The exit code of a finished session.
fn exit_code(s: &PtySession) -> i32 {
    match s.process.wait().expect("waitpid") {
        rexpect::process::WaitStatus::Exited(_, code) => code,
        other => panic!("did not exit normally: {other:?}"),
    }
}

#[test]
fn ctrl_c_at_any_prompt_exits_130_and_writes_nothing() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    let before = p.lock_text().unwrap();
    std::fs::write(rev.path(), "b").unwrap();
    // The answer to an earlier prompt and the interrupt race each other inside mcp-lock;
    // it lost about one time in three, so try often.
    for (round, prompt) in ["[1/3]", "[2/3]", "[3/3]"]
        .iter()
        .cycle()
        .take(9)
        .enumerate()
    {
        let mut s = update_in_pty(&p);
        for earlier in ["[1/3]", "[2/3]"].iter().take_while(|e| *e != prompt) {
            s.exp_string(earlier).unwrap();
            s.send_line("y").unwrap();
        }
        s.exp_string(prompt).unwrap();
        s.send_control('c').unwrap();
        let rest = s.exp_eof().unwrap();
        assert_eq!(exit_code(&s), 130, "round {round}, at {prompt}: {rest}");
        assert!(rest.contains("interrupted: nothing was written"), "{rest}");
        assert!(!rest.contains("error"), "{rest}");
        assert_eq!(p.lock_text().unwrap(), before);
    }
}

#[test]
fn color_never_draws_spinners_without_colour() {
    let p = Project::new(json!({
        "slow": common::fixture_entry(&["--delay-initialize", "1500"]),
    }));
    p.run(&["update", "--yes"]).expect(0);
    let mut cmd = common::command(common::bin());
    cmd.args(["--color", "never", "verify"])
        .current_dir(p.path())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env("TERM", "xterm-256color");
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    let shown = s.exp_string("initializing").unwrap();
    let rest = s.exp_eof().unwrap();
    let all = format!("{shown}{rest}");
    assert!(all.contains("slow"), "{all:?}");
    // Cursor movement is fine; an SGR sequence (ESC [ ... m) is colour or weight.
    let sgr = all.split('\u{1b}').skip(1).find(|seq| {
        seq.strip_prefix('[').is_some_and(|rest| {
            let end = rest.find(|c: char| !c.is_ascii_digit() && c != ';');
            end.is_some_and(|i| rest[i..].starts_with('m'))
        })
    });
    assert_eq!(sgr, None, "{all:?}");
}

#[test]
fn rejecting_the_only_first_pin_writes_no_lock() {
    let p = Project::new(json!({ "fixture": common::fixture_entry(&[]) }));
    for answer in ["n", "q"] {
        let mut s = update_in_pty(&p);
        s.exp_string("[1/1] Pin these tools?").unwrap();
        s.send_line(answer).unwrap();
        s.exp_string("Rejected fixture [claude-code] (not pinned)")
            .unwrap();
        s.exp_eof().unwrap();
        assert_eq!(exit_code(&s), 0);
        assert_eq!(p.lock_text(), None, "after {answer}");
    }
}

#[test]
fn ctrl_d_at_the_prompt_quits_as_q_does_and_keeps_what_was_accepted() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "b").unwrap();
    let mut s = update_in_pty(&p);
    s.exp_string("[1/3] Accept this change?").unwrap();
    s.send_line("y").unwrap();
    s.exp_string("[2/3] Accept this change?").unwrap();
    s.send_control('d').unwrap();
    let between = s.exp_string("Updating fixture/deploy_preview").unwrap();
    assert!(
        !between.contains("[3/3]"),
        "nothing more is asked: {between}"
    );
    s.exp_string("Rejected fixture/rollback").unwrap();
    s.exp_string("Rejected fixture/search_docs").unwrap();
    s.exp_eof().unwrap();
    assert_eq!(exit_code(&s), 0);
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let left: Vec<&str> = doc["servers"][0]["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert_eq!(left, ["rollback", "search_docs"]);
}

#[test]
fn a_stale_server_is_listed_in_a_warning_s_yellow_not_an_error_s_red() {
    let rev = tempfile::NamedTempFile::new().unwrap();
    std::fs::write(rev.path(), "a").unwrap();
    let p = Project::new(json!({
        "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(rev.path(), "b").unwrap();
    let mut cmd = common::command(common::bin());
    cmd.arg("verify")
        .current_dir(p.path())
        .env_remove("NO_COLOR")
        .env_remove("CLICOLOR")
        .env("TERM", "xterm-256color");
    let mut s = spawn_command(cmd, Some(20_000)).expect("spawn in a pty");
    let before = s.exp_string("Listed").unwrap();
    s.exp_string("stale").unwrap();
    s.exp_eof().unwrap();
    assert_eq!(exit_code(&s), 1);
    // The status word's colour is the last SGR sequence before it.
    let last = before.rsplit('\u{1b}').next().unwrap_or_default();
    assert!(last.starts_with("[33m"), "{before:?}");
}
