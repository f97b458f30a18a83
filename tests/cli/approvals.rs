//! The lock says how each server's last pin change was approved (`approved`, lock
//! version 7): a person at the terminal, `--yes`, the policy's `accept`, and a
//! server no run changed keeps what it had.

use crate::common;

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
    assert!(lock.contains("\nversion = 8\n"), "{lock}");
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
fn a_version_6_lock_verifies_reads_as_not_recorded_and_only_a_write_makes_it_the_current_version() {
    let (p, revs) = two_servers();
    p.run(&["update", "--yes"]).expect(0);
    let v7 = p.lock_text().unwrap();
    let v6: String = v7
        .lines()
        .filter(|l| !l.starts_with("approved = "))
        .map(|l| if l == "version = 8" { "version = 6" } else { l })
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
    assert!(lock.contains("\nversion = 8\n"), "{lock}");
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

mod pull_requests {
    //! `update --pull-request` through the Action's update-pr step, on a real git
    //! repository: what the branch commits, the body, title and labels for a given
    //! drift, and a run with nothing new making no commit.

    use super::*;
    use common::pull_request::{commit_all, commit_as_the_action_would, git, run_step};
    use common::registries::data;

    /// A fixture server on a revision file and a local script server, pinned and
    /// committed on `main`.
    fn project() -> (Project, tempfile::NamedTempFile) {
        let rev = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(rev.path(), "a").unwrap();
        let p = Project::new(json!({
            "fixture": common::fixture_entry(&["--revision-file", &rev.path().display().to_string()]),
            "script": {"command": "node", "args": ["server.js"]},
        }));
        std::fs::copy(data("tiny-mcp/server.js"), p.path().join("server.js")).unwrap();
        std::fs::copy(data("tiny-mcp/package.json"), p.path().join("package.json")).unwrap();
        p.run(&["update", "--yes"]).expect(0);
        commit_all(&p);
        (p, rev)
    }

    /// The row number of the summary table row that holds `needle`.
    fn row_of(body: &str, needle: &str) -> usize {
        body.lines()
            .filter(|l| l.starts_with("| ") && !l.starts_with("| #") && !l.starts_with("| ---"))
            .position(|l| l.contains(needle))
            .unwrap_or_else(|| panic!("no row with {needle:?} in\n{body}"))
    }

    #[test]
    fn a_scheduled_update_commits_only_the_lock_with_a_review_worst_first_and_titled_by_the_worst()
    {
        let (p, rev) = project();
        std::fs::write(rev.path(), "b").unwrap();
        let source = std::fs::read_to_string(p.path().join("server.js")).unwrap();
        std::fs::write(
            p.path().join("server.js"),
            source.replacen("tiny stdio", "tiny_stdio", 1),
        )
        .unwrap();
        git(&p, &["commit", "-q", "-am", "the script moves"]);

        let step = run_step(&p, &[]);
        assert_eq!(step.status, 0, "{}", step.stderr);
        assert_eq!(step.output("changed"), "true");
        assert_eq!(step.output("exit-code"), "0");
        assert_eq!(
            step.output("title"),
            "mcp.lock: 4 changes to script and fixture, worst package-changed"
        );
        assert_eq!(step.output("labels"), "mcp-lock,mcp-lock: package-changed");
        assert_eq!(step.output("add-paths"), "mcp.lock");

        let body = step.body();
        // Worst first: what runs, then what a call may do, then what the model reads,
        // then what is only new.
        let rows = [
            row_of(&body, "package (script)"),
            row_of(&body, "changed tool deploy\\_preview"),
            row_of(&body, "changed tool search\\_docs"),
            row_of(&body, "added tool rollback"),
        ];
        assert_eq!(rows, [0, 1, 2, 3], "{body}");
        for shown in [
            "## mcp-lock: 4 changes to approve, worst **package-changed** (fail)",
            "| 2 | **fixture** \\[claude-code\\] | changed tool deploy\\_preview | authority | **fail** |",
            // The word diff of the reworded parameter.
            "> <del>maximum results</del><ins>page index</ins>",
            "new required input \\`region\\`: old calls no longer validate",
            // The new tool's whole definition.
            "\"name\": \"rollback\",",
            "- was script server.js (sha256 ",
        ] {
            assert!(body.contains(shown), "{shown:?} in\n{body}");
        }
        assert!(
            !body.contains('\u{1b}'),
            "no terminal escapes in a body: {body}"
        );

        // The branch holds the new lock and nothing else, approved by the pull request,
        // and it verifies against the live servers as the pull request's CI would.
        let files = commit_as_the_action_would(&p, &step, "mcp-lock/update");
        assert_eq!(files, Some(vec!["mcp.lock".to_string()]));
        let lock = p.lock_text().unwrap();
        for server in ["fixture", "script"] {
            assert_eq!(
                approval_of(&lock, server).as_deref(),
                Some("pull-request"),
                "{lock}"
            );
        }
        p.run(&["verify"]).expect(0);
        let status = git(&p, &["status", "--porcelain"]);
        assert!(
            !status.contains(".md") && !status.contains("title.txt"),
            "the review stays out of the repository: {status}"
        );

        // Run again on the branch: nothing moved, so no commit and no pull request.
        let again = run_step(&p, &[]);
        assert_eq!(again.output("changed"), "false", "{}", again.stderr);
        assert!(!again.outputs.contains_key("body-path"));
        assert_eq!(
            commit_as_the_action_would(&p, &again, "mcp-lock/update"),
            None
        );
    }

    #[test]
    fn the_same_drift_gives_the_same_branch_and_body_so_one_pull_request_is_updated_in_place() {
        let (p, rev) = project();
        std::fs::write(rev.path(), "b").unwrap();
        let first = run_step(&p, &[]);
        let lock = p.lock_text().unwrap();
        git(&p, &["checkout", "-q", "--", "mcp.lock"]);
        let second = run_step(&p, &[]);
        assert_eq!(second.body(), first.body());
        assert_eq!(second.output("title"), first.output("title"));
        assert_eq!(p.lock_text().unwrap(), lock, "the same bytes to commit");
        assert_eq!(
            first.output("title"),
            "mcp.lock: 3 changes to fixture, worst authority"
        );
        assert_eq!(first.output("labels"), "mcp-lock,mcp-lock: authority");
    }

    #[test]
    fn a_change_screening_fails_stays_out_of_the_pull_request_and_the_step_reports_exit_4() {
        let (p, rev) = project();
        // search_docs now tells the model to read ~/.ssh/id_rsa; nothing else moves
        // on the fixture, and the script moves.
        std::fs::write(rev.path(), "hostile").unwrap();
        let source = std::fs::read_to_string(p.path().join("server.js")).unwrap();
        std::fs::write(
            p.path().join("server.js"),
            source.replacen("tiny stdio", "tiny_stdio", 1),
        )
        .unwrap();
        git(&p, &["commit", "-q", "-am", "the script moves"]);
        let step = run_step(&p, &[]);
        assert_eq!(
            step.status, 0,
            "the pull request step still runs: {}",
            step.stderr
        );
        assert_eq!(step.output("exit-code"), "4");
        assert_eq!(step.output("changed"), "true");
        assert_eq!(
            step.output("title"),
            "mcp.lock: 1 change to script, worst package-changed"
        );
        let body = step.body();
        assert!(body.contains("### Not in this pull request"), "{body}");
        assert!(
            body.contains("- tool fixture/search\\_docs \\[claude-code\\]: not pinned, screening found bidi-control (high) at /description"),
            "{body}"
        );
        commit_as_the_action_would(&p, &step, "mcp-lock/update");
        let lock = p.lock_text().unwrap();
        assert_eq!(
            approval_of(&lock, "script").as_deref(),
            Some("pull-request")
        );
        assert_eq!(
            approval_of(&lock, "fixture").as_deref(),
            Some("yes"),
            "{lock}"
        );
        // What the branch does not pin, verify still fails.
        p.run(&["verify"]).expect(1);
    }

    #[test]
    fn a_review_directory_inside_the_repository_is_refused_before_anything_runs() {
        let (p, rev) = project();
        std::fs::write(rev.path(), "b").unwrap();
        let inside = p.path().join("review");
        let step = run_step(&p, &[("INPUT_REVIEW_DIR", inside.to_str().unwrap())]);
        assert_eq!(step.status, 2);
        assert!(
            step.stderr.contains("is inside the repository"),
            "{}",
            step.stderr
        );
        assert!(!inside.exists());
        assert_eq!(git(&p, &["status", "--porcelain"]), "");
    }
}
