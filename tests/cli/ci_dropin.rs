//! CI that drops in: `--format markdown` for job summaries (hostile text escaped,
//! tables kept whole), the GitHub Action's script run here as a runner would run it,
//! `verify --no-connect` for the pre-commit hook (no process started), `--quiet`, and
//! the man page.
//!
//! Snapshots are in tests/data/ci_dropin/; after an intended change of the Markdown,
//! regenerate them with `MCP_LOCK_UPDATE_SNAPSHOTS=1 cargo test --test cli ci_dropin::` and
//! review the diff.

use crate::common;

use std::path::{Path, PathBuf};

use common::{Project, fixture, fixture_entry};
use serde_json::{Value, json};

/// A project pinned at revision `a` whose server now serves `revision` (read from a
/// file, so the launch command stays the same).
fn drifted(revision: &str) -> Project {
    let p = Project::new(json!({}));
    let rev = p.path().join("revision");
    std::fs::write(&rev, "a").unwrap();
    p.set_servers(json!({ "fixture": fixture_entry(&["--revision-file", "revision"]) }));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(&rev, revision).unwrap();
    p
}

fn snapshot_path(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/ci_dropin")
        .join(name)
}

#[track_caller]
fn assert_snapshot(name: &str, actual: &str) {
    let path = snapshot_path(name);
    if std::env::var_os("MCP_LOCK_UPDATE_SNAPSHOTS").is_some() {
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(&path, actual).unwrap();
        return;
    }
    let expected = std::fs::read_to_string(&path).unwrap_or_else(|_| {
        panic!("{name}: no snapshot; run with MCP_LOCK_UPDATE_SNAPSHOTS=1 and review it")
    });
    assert_eq!(actual, expected, "{name} differs from its snapshot");
}

/// Pipes that separate cells: those not escaped by a backslash.
fn cell_separators(line: &str) -> usize {
    let mut n = 0;
    let mut backslashes = 0;
    for c in line.chars() {
        match c {
            '\\' => backslashes += 1,
            '|' if backslashes % 2 == 0 => {
                n += 1;
                backslashes = 0
            }
            _ => backslashes = 0,
        }
    }
    n
}

/// Every table has a header, a delimiter row and rows of the header's width, and no
/// line of a table is broken.
#[track_caller]
fn assert_tables_stay_tables(markdown: &str) -> usize {
    let mut tables = 0;
    let mut width = None;
    for line in markdown.lines() {
        if !line.starts_with('|') {
            width = None;
            continue;
        }
        assert!(line.ends_with('|'), "a table line is cut: {line}");
        let n = cell_separators(line);
        match width {
            None => {
                tables += 1;
                width = Some(n);
            }
            Some(w) => assert_eq!(n, w, "a row has another number of cells: {line}"),
        }
    }
    tables
}

/// Characters a hostile description or name uses to take over a terminal, reorder
/// text, or mark up Markdown and HTML.
const RAW: &[(&str, &str)] = &[
    ("\u{1b}", "escape"),
    ("\u{7}", "bell"),
    ("\u{9b}", "C1 CSI"),
    ("\u{202e}", "right-to-left override"),
    ("\u{202c}", "pop directional formatting"),
    ("\u{200b}", "zero-width space"),
    ("<", "HTML tag"),
    ("\r", "carriage return"),
];

#[test]
fn markdown_verify_is_a_heading_an_overview_and_a_table_of_findings_per_server() {
    let p = drifted("b");
    let run = p.run(&["verify", "--format", "markdown"]);
    run.expect(1);
    let out = run.stdout();
    assert_eq!(assert_tables_stay_tables(&out), 2, "{out}");
    assert_snapshot("verify-b.md", &out);
    // diff renders the same reports the same way, under its own exit code.
    let diff = p.run(&["diff", "--format", "markdown"]);
    diff.expect(1);
    assert_eq!(diff.stdout(), out);
}

#[test]
fn markdown_escapes_hostile_descriptions_names_and_errors_and_keeps_tables_whole() {
    let p = drifted("hostile");
    // A name from the config, and the error naming it (the remote entry is not
    // pinned, so it is not contacted: `mcp-lock update NAME`), carry text too.
    let name = "ev|l`<b>*x*</b>\u{202e}_[l](x)\u{1b}[2J\nrow | 1 |";
    p.set_servers(json!({
        "fixture": fixture_entry(&["--revision-file", "revision"]),
        name: {"type": "http", "url": "http://127.0.0.1:9/mcp|`<img src=x>`\u{200b}"},
    }));
    let run = p.run(&["verify", "--format", "markdown", "--timeout", "5"]);
    run.expect(1);
    let out = run.stdout();
    for (raw, what) in RAW {
        assert!(
            !out.contains(raw),
            "raw {what} reached the Markdown:\n{out}"
        );
    }
    assert_eq!(assert_tables_stay_tables(&out), 2, "{out}");
    assert!(
        out.contains(
            "| ev\\|l\\`&lt;b&gt;\\*x\\*&lt;/b&gt;\\\\u{202e}\\_\\[l\\](x)\\\\u{001b}\\[2J row \\| 1 \\| | claude-code | **stale** |"
        ),
        "{out}"
    );
    assert!(
        out.contains("run \\`mcp-lock update ev\\|l\\`&lt;b&gt;"),
        "{out}"
    );
    assert!(out.contains("it now instructs the model"), "{out}");
    assert_snapshot("verify-hostile.md", &out);
}

/// Runs scripts/action-verify.sh in `p` as the action's step does, with the summary
/// and outputs in temporary files.
fn run_action(p: &Project, env: &[(&str, &str)]) -> (i32, String, String) {
    let summary = p.path().join("summary.md");
    let output = p.path().join("github-output");
    std::fs::write(&summary, "").unwrap();
    std::fs::write(&output, "").unwrap();
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/action-verify.sh");
    let status = common::command("bash")
        .arg(script)
        .current_dir(p.path())
        .env("MCP_LOCK", common::bin())
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_OUTPUT", &output)
        .envs(env.iter().copied())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    (
        status.status.code().unwrap_or(-1),
        std::fs::read_to_string(&summary).unwrap(),
        std::fs::read_to_string(&output).unwrap(),
    )
}

#[test]
fn the_action_script_writes_the_summary_and_sarif_and_exits_with_verifys_code() {
    let p = drifted("b");
    let (code, summary, outputs) = run_action(&p, &[("INPUT_SARIF", "true")]);
    assert_eq!(code, 1, "{summary}");
    let direct = p.run(&["verify", "--format", "markdown"]);
    assert_eq!(summary, direct.stdout());
    assert!(outputs.contains("exit-code=1\n"), "{outputs}");
    assert!(outputs.contains("sarif-file=mcp-lock.sarif\n"), "{outputs}");
    let sarif: Value =
        serde_json::from_str(&std::fs::read_to_string(p.path().join("mcp-lock.sarif")).unwrap())
            .unwrap();
    assert_eq!(sarif["version"], "2.1.0");
    assert!(!sarif["runs"][0]["results"].as_array().unwrap().is_empty());

    // The policy lets the change through: the step passes, the summary still says it.
    let (code, summary, outputs) = run_action(
        &p,
        &[(
            "INPUT_ARGS",
            "--allow authority,breaking,semantic,tool-added",
        )],
    );
    assert_eq!(code, 0, "{summary}");
    assert!(summary.contains("| **stale** |"), "{summary}");
    assert!(outputs.contains("exit-code=0\n"), "{outputs}");

    // Converged after update; a usage error is verify's 2, said in the summary.
    p.run(&["update", "--yes"]).expect(0);
    let (code, summary, _) = run_action(&p, &[]);
    assert_eq!(code, 0, "{summary}");
    assert!(
        summary.starts_with("## mcp-lock: 1 server converged\n"),
        "{summary}"
    );
    let (code, summary, outputs) = run_action(&p, &[("INPUT_ARGS", "no-such-server")]);
    assert_eq!(code, 2, "{summary}");
    assert!(
        summary.contains("verify stopped with exit code 2"),
        "{summary}"
    );
    assert!(outputs.contains("exit-code=2\n"), "{outputs}");
    let (code, _, _) = run_action(&p, &[("INPUT_SARIF", "yes")]);
    assert_eq!(code, 2);
}

fn yaml(path: &str) -> Value {
    let text = std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_norway::from_str(&text).unwrap_or_else(|e| panic!("{path} is not YAML: {e}"))
}

#[test]
fn action_yml_is_a_composite_action_with_its_documented_inputs() {
    let action = yaml("action.yml");
    assert_eq!(action["runs"]["using"], "composite");
    let inputs = action["inputs"].as_object().unwrap();
    for input in [
        "install",
        "args",
        "summary",
        "sarif",
        "sarif-file",
        "working-directory",
    ] {
        let described = inputs[input]["description"].as_str().unwrap_or_default();
        assert!(!described.is_empty(), "input {input} is not documented");
        assert!(
            inputs[input].get("default").is_some(),
            "input {input}: no default"
        );
    }
    let steps = action["runs"]["steps"].as_array().unwrap();
    let text = serde_json::to_string(steps).unwrap();
    assert!(text.contains("scripts/action-verify.sh"), "{text}");
    assert!(text.contains("cargo install --locked --path"), "{text}");
    let upload = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("github/codeql-action/upload-sarif@"))
        })
        .expect("a SARIF upload step");
    assert!(
        upload["if"]
            .as_str()
            .unwrap()
            .contains("inputs.sarif == 'true'")
    );
    // Every input a step uses is declared.
    for used in text.split("inputs.").skip(1) {
        let name: String = used
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(
            inputs.contains_key(&name),
            "steps use undeclared input {name}"
        );
    }
}

#[test]
fn the_update_pr_mode_runs_the_update_script_then_create_pull_request_with_its_outputs() {
    let action = yaml("action.yml");
    let inputs = action["inputs"].as_object().unwrap();
    for input in ["mode", "token", "branch"] {
        assert!(
            !inputs[input]["description"]
                .as_str()
                .unwrap_or_default()
                .is_empty(),
            "input {input} is not documented"
        );
    }
    assert_eq!(inputs["mode"]["default"], "verify");
    let steps = action["runs"]["steps"].as_array().unwrap();
    let update = steps
        .iter()
        .find(|s| s["id"] == "update")
        .expect("an update step");
    assert!(
        update["run"]
            .as_str()
            .unwrap()
            .contains("scripts/action-update.sh")
    );
    assert!(update["if"].as_str().unwrap().contains("'update-pr'"));
    let pr = steps
        .iter()
        .find(|s| {
            s["uses"]
                .as_str()
                .is_some_and(|u| u.starts_with("peter-evans/create-pull-request@v"))
        })
        .expect("a create-pull-request step");
    // Every output the step reads is one the script writes.
    let script = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/action-update.sh"),
    )
    .unwrap();
    let with = serde_json::to_string(&pr["with"]).unwrap();
    for used in with.split("steps.update.outputs.").skip(1) {
        let name: String = used
            .chars()
            .take_while(|c| c.is_ascii_alphanumeric() || *c == '-')
            .collect();
        assert!(
            script.contains(&format!("output {name} ")),
            "create-pull-request reads output {name}, which the script never writes"
        );
    }
    assert_eq!(pr["with"]["delete-branch"], true);
    // The ready workflow uses this mode, on a schedule, with the permissions it needs.
    let workflow = yaml("examples/workflows/mcp-lock-update.yml");
    assert!(workflow["on"]["schedule"].is_array());
    assert_eq!(workflow["permissions"]["contents"], "write");
    assert_eq!(workflow["permissions"]["pull-requests"], "write");
    let text = serde_json::to_string(&workflow["jobs"]).unwrap();
    assert!(text.contains("\"mode\":\"update-pr\""), "{text}");
}

#[test]
fn the_pre_commit_hook_runs_verify_no_connect_on_lock_and_config_changes() {
    let hooks = yaml(".pre-commit-hooks.yaml");
    let hook = hooks
        .as_array()
        .unwrap()
        .iter()
        .find(|h| h["id"] == "mcp-lock-verify")
        .expect("a hook mcp-lock-verify");
    assert_eq!(hook["entry"], "mcp-lock verify --no-connect");
    assert_eq!(hook["language"], "system");
    assert_eq!(hook["pass_filenames"], false);
    let files = hook["files"].as_str().unwrap();
    for name in [
        "mcp\\.lock",
        "mcp-lock\\.toml",
        "\\.mcp\\.json",
        "\\.vscode/mcp\\.json",
        "\\.cursor/mcp\\.json",
    ] {
        assert!(files.contains(name), "{name} not in {files}");
    }
}

/// A server whose launch leaves `marker` behind, then runs the fixture.
fn marking_entry(marker: &Path) -> Value {
    json!({
        "command": "/bin/sh",
        "args": ["-c", format!("touch '{}'; exec '{}'", marker.display(), fixture().display())],
    })
}

#[test]
fn no_connect_passes_on_a_matching_lock_and_fails_in_one_line_without_starting_anything() {
    let p = Project::new(json!({}));
    let marker = p.path().join("started");
    p.set_servers(json!({ "marked": marking_entry(&marker) }));
    p.run(&["update", "--yes"]).expect(0);
    assert!(marker.exists(), "update starts the server");
    std::fs::remove_file(&marker).unwrap();

    let ok = p.run(&["verify", "--no-connect"]);
    ok.expect(0);
    assert!(
        ok.stdout().contains("marked  pinned (claude-code)"),
        "{}",
        ok.stdout()
    );
    assert!(ok.stdout().contains("skipped: listings"), "{}", ok.stdout());
    assert!(
        ok.elapsed < std::time::Duration::from_secs(2),
        "{:?}",
        ok.elapsed
    );
    let doc = p
        .run(&["verify", "--no-connect", "--format", "json"])
        .expect(0)
        .json();
    assert_eq!(doc["check"], "no-connect");
    assert_eq!(doc["exit_code"], 0);
    assert_eq!(doc["servers"][0]["status"], "pinned");
    assert!(!doc["skipped"].as_array().unwrap().is_empty());

    // A server the lock does not pin.
    p.set_servers(json!({ "marked": marking_entry(&marker), "other": marking_entry(&marker) }));
    let missing = p.run(&["verify", "--no-connect"]);
    missing.expect(1);
    let problems: Vec<String> = missing
        .stdout()
        .lines()
        .filter(|l| l.starts_with("other"))
        .map(String::from)
        .collect();
    assert_eq!(
        problems,
        ["other: in the config but not pinned in the lock; run `mcp-lock update other`"]
    );
    let md = p.run(&["verify", "--no-connect", "--format", "markdown"]);
    md.expect(1);
    assert_eq!(assert_tables_stay_tables(&md.stdout()), 1);
    assert!(
        md.stdout().contains("| other |  | **not pinned** |"),
        "{}",
        md.stdout()
    );

    // The same name, launched otherwise.
    let moved =
        json!({"command": "/bin/sh", "args": ["-c", format!("touch '{}'", marker.display())]});
    p.set_servers(json!({ "marked": moved }));
    let changed = p.run(&["verify", "--no-connect"]);
    changed.expect(1);
    let line = changed.stdout().lines().next().unwrap().to_string();
    assert!(
        line.starts_with("marked [claude-code]: the config launches `/bin/sh -c touch ")
            && line.ends_with("; run `mcp-lock update marked`"),
        "{line}"
    );
    let doc = p
        .run(&["verify", "--no-connect", "--format", "json"])
        .expect(1)
        .json();
    assert_eq!(doc["servers"][0]["status"], "launch_changed");

    // A server the config dropped.
    p.set_servers(json!({}));
    let gone = p.run(&["verify", "--no-connect"]);
    gone.expect(1);
    assert!(
        gone.stdout().starts_with(
            "marked: pinned in the lock but no longer in the config; run `mcp-lock update` to drop it\n"
        ),
        "{}",
        gone.stdout()
    );

    // A corrupt lock is a lock error, in one line.
    p.set_servers(json!({ "marked": marking_entry(&marker) }));
    let lock = p.path().join("mcp.lock");
    let text = std::fs::read_to_string(&lock).unwrap();
    std::fs::write(&lock, text.replacen("[[server]]", "[[server]\n", 1)).unwrap();
    let corrupt = p.run(&["verify", "--no-connect"]);
    corrupt.expect(2);
    let err = corrupt.stderr();
    assert_eq!(err.lines().count(), 1, "{err}");
    assert!(
        err.starts_with("error: ") && err.contains("mcp.lock"),
        "{err}"
    );
    std::fs::remove_file(&lock).unwrap();
    p.run(&["verify", "--no-connect"]).expect(2);

    assert!(!marker.exists(), "--no-connect started a server");
    // The same check run live does start it: the marker would have shown.
    std::fs::write(&lock, text).unwrap();
    p.run(&["verify"]).expect(0);
    assert!(marker.exists());
}

#[test]
fn no_connect_refuses_formats_that_need_listings() {
    let p = drifted("a");
    let run = p.run(&["verify", "--no-connect", "--format", "sarif"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("--no-connect prints human, json or markdown")
    );
}

#[test]
fn quiet_prints_nothing_on_stderr_for_a_converged_verify() {
    let p = drifted("a");
    let loud = p.run(&["verify"]);
    loud.expect(0);
    assert!(!loud.stderr().is_empty());
    for args in [
        &["-q", "verify"][..],
        &["verify", "--quiet"],
        &["-q", "verify", "--no-connect"],
    ] {
        let run = p.run(args);
        run.expect(0);
        assert_eq!(run.stderr(), "", "{args:?}");
        assert!(
            run.stdout().contains("fixture"),
            "{args:?}: the report is still printed"
        );
    }
    // Errors still are.
    let run = p.run(&["-q", "verify", "nope"]);
    run.expect(2);
    assert!(run.stderr().starts_with("error: "), "{}", run.stderr());
}

#[test]
fn man_prints_a_roff_page_naming_every_subcommand() {
    let p = Project::new(json!({}));
    let run = p.run(&["man"]);
    run.expect(0);
    let page = run.stdout();
    assert!(
        page.contains(".TH mcp-lock 1"),
        "{}",
        &page[..page.len().min(300)]
    );
    for sub in [
        "update",
        "verify",
        "diff",
        "guard",
        "wrap",
        "unwrap",
        "check\\-call",
        "hash",
        "completions",
        "man",
    ] {
        // Each points to its own page, `mcp-lock man SUBCOMMAND`.
        assert!(
            page.contains(&format!("mcp\\-lock\\-{sub}(1)")),
            "{sub} not named"
        );
    }
    let verify = p.run(&["man", "verify"]);
    verify.expect(0);
    assert!(verify.stdout().contains(".TH mcp-lock-verify 1"));
    assert!(verify.stdout().contains("no\\-connect"));
    p.run(&["man", "nope"]).expect(2);
}
