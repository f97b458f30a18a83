//! Servers and tools turned off from outside their entries: Claude Code's
//! `disabledMcpjsonServers` in its settings files, Gemini CLI's `mcp.excluded`,
//! `mcp.allowed` and `~/.gemini/mcp-server-enablement.json`, opencode's top-level
//! `tools` map. A setting committed with the project turns the server off; a
//! developer's own setting leaves a project server pinned, with a note, and turns off
//! only the developer's own servers. Every test has its own HOME.

use std::path::Path;

use super::common::Project;
use super::{VALUE, place, project_with, sample};

/// HOME and XDG_CONFIG_HOME in `home`, and SAMPLE_SECRET.
fn env(home: &Path) -> Vec<(&'static str, String)> {
    vec![
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
        ("SAMPLE_SECRET", VALUE.to_string()),
    ]
}

fn run(project: &Project, args: &[&str], home: &Path) -> super::common::Run {
    let env = env(home);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    project.run_env(args, &env)
}

/// The `servers --format json` row of `name` read from a file ending in `file`.
fn row(project: &Project, home: &Path, extra: &[&str], name: &str) -> serde_json::Value {
    let mut args = extra.to_vec();
    args.extend(["servers", "--format", "json"]);
    let out = run(project, &args, home);
    out.expect(0);
    let doc = out.json();
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {doc}"))
        .clone()
}

/// The servers a lock pins, by name.
fn pinned(lock: &str) -> Vec<String> {
    let parsed = mcp_lock::records::lock::parse_lock(lock, "mcp.lock").unwrap();
    parsed.servers.keys().cloned().collect()
}

/// `update --yes` then `verify`; the project's lock.
fn pin(project: &Project, home: &Path) -> String {
    run(project, &["update", "--yes"], home).expect(0);
    run(project, &["verify"], home).expect(0);
    project.lock_text().expect("a lock was written")
}

#[test]
fn a_server_disabled_in_the_projects_claude_settings_is_not_pinned_and_servers_says_why() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with(".mcp.json", "claude-code.two.mcp.json");
    place(
        project.path(),
        ".claude/settings.json",
        &sample("claude-code.disabled.settings.json", project.path()),
    );
    assert_eq!(pinned(&pin(&project, home.path())), ["fixture"]);
    let spare = row(&project, home.path(), &[], "spare");
    assert_eq!(
        spare["skipped"], "disabledMcpjsonServers in .claude/settings.json",
        "{spare}"
    );
    let human = run(&project, &["servers"], home.path());
    assert!(
        human
            .stdout()
            .contains("skipped (disabledMcpjsonServers in .claude/settings.json)"),
        "{}",
        human.stdout()
    );
    // It concerns `.mcp.json` servers only: another client's file is left alone.
    let cursor = project_with(".cursor/mcp.json", "claude-code.two.mcp.json");
    place(
        cursor.path(),
        ".claude/settings.json",
        &sample("claude-code.disabled.settings.json", cursor.path()),
    );
    assert_eq!(pinned(&pin(&cursor, home.path())), ["fixture", "spare"]);
}

#[test]
fn a_server_disabled_in_personal_claude_settings_stays_pinned_with_a_note() {
    for (dir, file) in [
        ("project", ".claude/settings.local.json"),
        ("home", ".claude/settings.json"),
    ] {
        let home = tempfile::tempdir().unwrap();
        let project = project_with(".mcp.json", "claude-code.two.mcp.json");
        let base = if dir == "home" {
            home.path()
        } else {
            project.path()
        };
        place(
            base,
            file,
            &sample("claude-code.disabled.settings.json", project.path()),
        );
        assert_eq!(
            pinned(&pin(&project, home.path())),
            ["fixture", "spare"],
            "{file}"
        );
        let spare = row(&project, home.path(), &[], "spare");
        assert!(spare["skipped"].is_null(), "{spare}");
        let note = spare["note"].as_str().unwrap_or_default();
        assert!(
            note.contains(file) && note.contains("still pinned for the project"),
            "{file}: {spare}"
        );
        let human = run(&project, &["servers"], home.path());
        assert!(
            human.stdout().contains("; note: disabledMcpjsonServers in"),
            "{}",
            human.stdout()
        );
    }
}

#[test]
fn an_invalid_claude_settings_file_is_ignored_with_a_warning_as_claude_code_does() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with(".mcp.json", "claude-code.two.mcp.json");
    place(
        project.path(),
        ".claude/settings.json",
        r#"{"disabledMcpjsonServers": "spare"}"#,
    );
    let update = run(&project, &["update", "--yes"], home.path());
    update.expect(0);
    assert!(
        update.stderr().contains(".claude/settings.json")
            && update.stderr().contains("Claude Code ignores"),
        "{}",
        update.stderr()
    );
    assert_eq!(pinned(&project.lock_text().unwrap()), ["fixture", "spare"]);
}

#[test]
fn a_server_in_the_projects_gemini_mcp_excluded_is_skipped() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with(".gemini/settings.json", "gemini.excluded.settings.json");
    assert_eq!(pinned(&pin(&project, home.path())), ["fixture"]);
    assert_eq!(
        row(&project, home.path(), &[], "spare")["skipped"],
        "in mcp.excluded of .gemini/settings.json"
    );
}

#[test]
fn only_the_servers_gemini_mcp_allowed_names_are_pinned() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with(".gemini/settings.json", "gemini.allowed.settings.json");
    assert_eq!(pinned(&pin(&project, home.path())), ["fixture"]);
    for name in ["spare", "extra"] {
        assert_eq!(
            row(&project, home.path(), &[], name)["skipped"],
            "not in mcp.allowed of .gemini/settings.json"
        );
    }
}

#[test]
fn the_users_gemini_settings_turn_off_their_own_servers_and_only_note_the_projects() {
    let home = tempfile::tempdir().unwrap();
    place(
        home.path(),
        ".gemini/mcp-server-enablement.json",
        &sample("gemini.mcp-server-enablement.json", home.path()),
    );
    place(
        home.path(),
        ".gemini/settings.json",
        &sample("gemini.two.settings.json", home.path()),
    );
    let project = project_with(".gemini/settings.json", "gemini.two.settings.json");
    // The user's own servers: `gemini mcp disable spare` is applied.
    run(
        &project,
        &["--user", "gemini-cli", "update", "--yes"],
        home.path(),
    )
    .expect(0);
    let user = super::user_lock(home.path());
    assert_eq!(pinned(&user), ["fixture"]);
    let spare = row(&project, home.path(), &["--user", "gemini-cli"], "spare");
    assert_eq!(
        spare["skipped"], "disabled in ~/.gemini/mcp-server-enablement.json (gemini mcp disable)",
        "{spare}"
    );
    // The project's servers: still pinned, with a note.
    assert_eq!(pinned(&pin(&project, home.path())), ["fixture", "spare"]);
    let spare = row(&project, home.path(), &[], "spare");
    assert!(spare["skipped"].is_null(), "{spare}");
    assert!(
        spare["note"]
            .as_str()
            .is_some_and(|n| n.contains("mcp-server-enablement.json")
                && n.contains("still pinned for the project")),
        "{spare}"
    );
}

#[test]
fn the_users_gemini_mcp_excluded_only_notes_a_project_server() {
    let home = tempfile::tempdir().unwrap();
    place(
        home.path(),
        ".gemini/settings.json",
        r#"{"mcp": {"excluded": ["spare"]}}"#,
    );
    let project = project_with(".gemini/settings.json", "gemini.two.settings.json");
    assert_eq!(pinned(&pin(&project, home.path())), ["fixture", "spare"]);
    let note = row(&project, home.path(), &[], "spare")["note"].clone();
    assert!(
        note.as_str()
            .is_some_and(|n| n.starts_with("in mcp.excluded of ~/.gemini/settings.json")),
        "{note}"
    );
}

#[test]
fn a_gemini_settings_file_that_is_not_json_is_an_error_naming_it() {
    let home = tempfile::tempdir().unwrap();
    place(home.path(), ".gemini/settings.json", "{\"mcp\": {");
    let project = project_with(".gemini/settings.json", "gemini.two.settings.json");
    let update = run(&project, &["update", "--yes"], home.path());
    update.expect(2);
    assert!(
        update.stderr().contains("~/.gemini/settings.json:1:"),
        "{}",
        update.stderr()
    );
}

#[test]
fn a_tool_opencodes_tools_map_hides_is_not_pinned() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with("opencode.jsonc", "opencode.tools.jsonc");
    let lock = pin(&project, home.path());
    // "fixture_deploy*": false hides deploy_preview; read_ticket is allowed again by
    // permission, which wins over tools for the same key.
    assert!(!lock.contains("name = \"deploy_preview\""), "{lock}");
    assert!(lock.contains("name = \"read_ticket\""), "{lock}");
    assert!(lock.contains("name = \"search_docs\""), "{lock}");
    let verify = run(&project, &["verify", "--format", "json"], home.path());
    verify.expect(0);
    assert_eq!(
        verify.json()["servers"][0]["filtered"],
        serde_json::json!(["deploy_preview"])
    );
}

#[test]
fn servers_shows_the_rules_of_opencodes_tools_map_in_its_order() {
    // Permission wins over tools for the same key, so read_ticket's one rule shows it.
    let home = tempfile::tempdir().unwrap();
    let project = project_with("opencode.jsonc", "opencode.tools.jsonc");
    let human = run(&project, &["servers"], home.path());
    human.expect(0);
    assert!(
        human
            .stdout()
            .contains("tools    hides fixture_deploy*, then shows fixture_read_ticket"),
        "{}",
        human.stdout()
    );
    let json = run(&project, &["servers", "--format", "json"], home.path());
    json.expect(0);
    assert_eq!(
        json.json()["servers"][0]["filter"]["rules"],
        serde_json::json!([
            {"pattern": "fixture_deploy*", "hides": true},
            {"pattern": "fixture_read_ticket", "hides": false}
        ])
    );
}

#[test]
fn gemini_cli_home_moves_the_enablement_file_as_it_moves_the_settings() {
    let home = tempfile::tempdir().unwrap();
    let moved = tempfile::tempdir().unwrap();
    place(
        moved.path(),
        ".gemini/mcp-server-enablement.json",
        &sample("gemini.mcp-server-enablement.json", moved.path()),
    );
    let project = project_with(".gemini/settings.json", "gemini.two.settings.json");
    let gemini_home = moved.path().display().to_string();
    let mut env = env(home.path());
    env.push(("GEMINI_CLI_HOME", gemini_home));
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let out = project.run_env(&["servers", "--format", "json"], &env);
    out.expect(0);
    let doc = out.json();
    let spare = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == "spare")
        .unwrap()
        .clone();
    assert!(
        spare["note"]
            .as_str()
            .is_some_and(|n| n.contains("mcp-server-enablement.json")),
        "{spare}"
    );
}
