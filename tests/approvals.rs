//! The lock says how each server's last pin change was approved (`approved`, lock
//! version 7): a person at the terminal, `--yes`, the policy's `accept`, and a
//! server no run changed keeps what it had.

mod common;

use common::Project;
use rexpect::session::spawn_command;
use serde_json::json;

/// The `approved` line of `server` in the lock text, if it has one.
fn approval_of(lock: &str, server: &str) -> Option<String> {
    let block = lock
        .split("\n[[server]]\n")
        .find(|b| b.starts_with(&format!("name = \"{server}\"\n")))?;
    let second = block.lines().nth(1)?;
    second
        .strip_prefix("approved = \"")
        .map(|v| v.trim_end_matches('"').to_string())
}

/// A project with two fixture servers, each on its own revision file, set to "a".
fn two_servers() -> (Project, [tempfile::NamedTempFile; 2]) {
    let revs = [(); 2].map(|_| {
        let rev = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(rev.path(), "a").unwrap();
        rev
    });
    let entry = |rev: &tempfile::NamedTempFile| {
        common::fixture_entry(&["--revision-file", &rev.path().display().to_string()])
    };
    let p = Project::new(json!({ "one": entry(&revs[0]), "two": entry(&revs[1]) }));
    (p, revs)
}

#[test]
fn a_first_pin_with_yes_records_yes_and_an_unchanged_run_rewrites_nothing() {
    let (p, _revs) = two_servers();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("\nversion = 7\n"), "{lock}");
    assert_eq!(approval_of(&lock, "one").as_deref(), Some("yes"), "{lock}");
    assert_eq!(approval_of(&lock, "two").as_deref(), Some("yes"), "{lock}");
    // The same servers again: the same bytes, approvals untouched.
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(p.lock_text().unwrap(), lock);
}

#[test]
fn what_the_policy_accepts_unasked_records_policy_and_the_other_server_keeps_its_approval() {
    let (p, revs) = two_servers();
    p.run(&["update", "--yes"]).expect(0);
    // read_ticket's title reworded (cosmetic), search_docs gained an optional input
    // (additive), on `one` only; no terminal: only what the policy accepts is written.
    std::fs::write(revs[0].path(), "additive").unwrap();
    p.run(&["update", "--accept", "additive,cosmetic"])
        .expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(
        approval_of(&lock, "one").as_deref(),
        Some("policy"),
        "{lock}"
    );
    assert_eq!(
        approval_of(&lock, "two").as_deref(),
        Some("yes"),
        "a server whose pins did not move keeps its recorded approval: {lock}"
    );
    p.run(&["verify"]).expect(0);
}

#[test]
fn a_person_answering_at_the_terminal_records_terminal_and_a_mixed_run_records_the_least_looked_at()
{
    let (p, revs) = two_servers();
    // The first pin of `one`, answered at the terminal; `two` is declined, then
    // pinned with --yes.
    let mut cmd = common::command(common::bin());
    cmd.args(["update", "one"])
        .current_dir(p.path())
        .env("NO_COLOR", "1");
    let mut s = spawn_command(cmd, Some(30_000)).expect("spawn in a pty");
    s.exp_string("Pin these tools?").unwrap();
    s.send_line("y").unwrap();
    s.exp_eof().unwrap();
    p.run(&["update", "--yes", "two"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert_eq!(
        approval_of(&lock, "one").as_deref(),
        Some("terminal"),
        "{lock}"
    );
    assert_eq!(approval_of(&lock, "two").as_deref(), Some("yes"), "{lock}");

    // `two`: the cosmetic change taken by the policy, the additive one by a person.
    // The lock never says a person looked at all of it: `policy`.
    std::fs::write(revs[1].path(), "additive").unwrap();
    let mut cmd = common::command(common::bin());
    cmd.args(["update", "--accept", "cosmetic"])
        .current_dir(p.path())
        .env("NO_COLOR", "1");
    let mut s = spawn_command(cmd, Some(30_000)).expect("spawn in a pty");
    s.exp_string("[1/1] Accept this change?").unwrap();
    s.send_line("y").unwrap();
    s.exp_eof().unwrap();
    let lock = p.lock_text().unwrap();
    assert_eq!(
        approval_of(&lock, "two").as_deref(),
        Some("policy"),
        "{lock}"
    );
    assert_eq!(
        approval_of(&lock, "one").as_deref(),
        Some("terminal"),
        "unchanged: {lock}"
    );

    // Only what a person accepted: `terminal`.
    std::fs::write(revs[1].path(), "a").unwrap();
    let mut cmd = common::command(common::bin());
    cmd.args(["update", "two"])
        .current_dir(p.path())
        .env("NO_COLOR", "1");
    let mut s = spawn_command(cmd, Some(30_000)).expect("spawn in a pty");
    s.exp_string("Accept this change?").unwrap();
    s.send_line("a").unwrap();
    s.exp_eof().unwrap();
    let lock = p.lock_text().unwrap();
    assert_eq!(
        approval_of(&lock, "two").as_deref(),
        Some("terminal"),
        "{lock}"
    );
    p.run(&["verify"]).expect(0);
}

#[test]
fn a_version_6_lock_verifies_reads_as_not_recorded_and_only_a_write_makes_it_version_7() {
    let (p, revs) = two_servers();
    p.run(&["update", "--yes"]).expect(0);
    let v7 = p.lock_text().unwrap();
    let v6: String = v7
        .lines()
        .filter(|l| !l.starts_with("approved = "))
        .map(|l| if l == "version = 7" { "version = 6" } else { l })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let lock_path = p.path().join("mcp.lock");
    std::fs::write(&lock_path, &v6).unwrap();
    p.run(&["verify"]).expect(0);
    p.run(&["verify", "--no-connect"]).expect(0);
    // Nothing to change: the lock is left as it is, still version 6.
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(std::fs::read_to_string(&lock_path).unwrap(), v6);
    let doc = p
        .run(&["diff", "--from", "mcp.lock", "--format", "json"])
        .expect(0)
        .json();
    assert!(doc["servers"].is_array(), "{doc}");

    // A change to `one` writes version 7: `one` says how, `two` stays not recorded.
    std::fs::write(revs[0].path(), "additive").unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("\nversion = 7\n"), "{lock}");
    assert_eq!(approval_of(&lock, "one").as_deref(), Some("yes"), "{lock}");
    assert_eq!(approval_of(&lock, "two"), None, "{lock}");
    p.run(&["verify"]).expect(0);
}

#[test]
fn diff_between_two_locks_names_how_the_new_side_was_approved() {
    let (p, revs) = two_servers();
    p.run(&["update", "--yes"]).expect(0);
    let old = p.path().join("old.lock");
    std::fs::copy(p.path().join("mcp.lock"), &old).unwrap();
    std::fs::write(revs[0].path(), "additive").unwrap();
    p.run(&["update", "--accept", "additive,cosmetic"])
        .expect(0);
    let run = p.run(&["diff", "--from", "old.lock"]);
    run.expect(1);
    let out = run.stdout();
    assert!(out.contains("one: approved by policy (was yes)"), "{out}");
    assert!(!out.contains("two: approved"), "{out}");
}
