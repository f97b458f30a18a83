//! `--user CLIENT` reading several files of one client: Amazon Q's global `mcp.json`
//! and its global agents, Continue's `config.yaml` and its `mcpServers` folder; and
//! what `~/.claude.json` keeps for a project (`disabledMcpServers` from `/mcp`,
//! `disabledMcpjsonServers`). Every test has its own HOME and XDG_CONFIG_HOME.

use std::path::Path;

use super::common::Project;
use super::{VALUE, place, project_with, sample};

fn run(
    project: &Project,
    args: &[&str],
    home: &Path,
    more: &[(&str, String)],
) -> super::common::Run {
    let mut env = vec![
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
        ("SAMPLE_SECRET", VALUE.to_string()),
    ];
    env.extend(more.iter().cloned());
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    project.run_env(args, &env)
}

/// `servers --format json` rows, by name.
fn rows(
    project: &Project,
    home: &Path,
    extra: &[&str],
    more: &[(&str, String)],
) -> Vec<serde_json::Value> {
    let mut args = extra.to_vec();
    args.extend(["servers", "--format", "json"]);
    let out = run(project, &args, home, more);
    out.expect(0);
    out.json()["servers"].as_array().unwrap().clone()
}

fn row<'a>(rows: &'a [serde_json::Value], name: &str) -> &'a serde_json::Value {
    rows.iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {rows:?}"))
}

fn empty_project() -> Project {
    Project::empty()
}

#[test]
fn user_amazon_q_reads_the_global_mcp_json_and_every_global_agent() {
    let home = tempfile::tempdir().unwrap();
    let project = empty_project();
    let h = home.path();
    place(
        h,
        ".aws/amazonq/mcp.json",
        &sample("amazonq.mcp.json", project.path()),
    );
    place(
        h,
        ".aws/amazonq/cli-agents/helper.json",
        &sample("amazonq.user-agent.json", project.path()),
    );
    let found = rows(&project, h, &["--user", "amazon-q"], &[]);
    let fixture = row(&found, "fixture");
    assert!(
        fixture["file"]
            .as_str()
            .unwrap()
            .ends_with("amazonq/mcp.json"),
        "{fixture}"
    );
    let helper = row(&found, "helper");
    assert!(
        helper["file"]
            .as_str()
            .unwrap()
            .ends_with("cli-agents/helper.json"),
        "{helper}"
    );
    assert_eq!(helper["host"], "Amazon Q", "{helper}");
    run(&project, &["--user", "amazon-q", "update", "--yes"], h, &[]).expect(0);
    let verify = run(&project, &["--user", "amazon-q", "verify"], h, &[]);
    verify.expect(0);
    assert!(
        verify.stderr().contains("cli-agents/helper.json"),
        "{}",
        verify.stderr()
    );
    // Personal: the project's mcp.lock is not written.
    assert!(project.lock_text().is_none());
    // Only the agents, no global mcp.json: still read.
    std::fs::remove_file(h.join(".aws/amazonq/mcp.json")).unwrap();
    let found = rows(&project, h, &["--user", "amazon-q"], &[]);
    assert_eq!(found.len(), 1, "{found:?}");
    assert_eq!(found[0]["name"], "helper");
}

#[test]
fn a_global_amazon_q_agent_named_as_a_project_agent_is_not_read_as_amazon_q_uses_the_workspaces() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let project = project_with(".amazonq/cli-agents/dev.json", "amazonq.agent.json");
    // A global agent named "dev" in a file of another name: names come from "name".
    place(
        h,
        ".aws/amazonq/cli-agents/mine.json",
        &sample("amazonq.user-dev-agent.json", project.path()),
    );
    place(
        h,
        ".aws/amazonq/cli-agents/helper.json",
        &sample("amazonq.user-agent.json", project.path()),
    );
    let out = run(
        &project,
        &["--user", "amazon-q", "servers", "--format", "json"],
        h,
        &[],
    );
    out.expect(0);
    let names: Vec<String> = out.json()["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["name"].as_str().unwrap().to_string())
        .collect();
    assert_eq!(names, ["helper"], "{}", out.stderr());
    assert!(
        out.stderr().contains("agent \"dev\"") && out.stderr().contains("same name"),
        "{}",
        out.stderr()
    );
}

#[test]
fn user_continue_reads_config_yaml_and_every_file_of_its_mcp_servers_folder_under_continue_global_dir()
 {
    let home = tempfile::tempdir().unwrap();
    let global = tempfile::tempdir().unwrap();
    let project = empty_project();
    let g = global.path();
    place(g, "config.yaml", &sample("continue.yaml", project.path()));
    place(
        g,
        "mcpServers/single.json",
        &sample("continue.single.json", project.path()),
    );
    // The default place, ignored once CONTINUE_GLOBAL_DIR moves it.
    place(
        home.path(),
        ".continue/mcpServers/stale.json",
        &sample("continue.single.json", project.path()),
    );
    let more = [("CONTINUE_GLOBAL_DIR", g.display().to_string())];
    let found = rows(&project, home.path(), &["--user", "continue"], &more);
    let names: Vec<&str> = found.iter().map(|r| r["name"].as_str().unwrap()).collect();
    assert_eq!(names, ["fixture", "single"], "{found:?}");
    let single = row(&found, "single");
    assert_eq!(single["host"], "Continue", "{single}");
    assert!(
        single["file"]
            .as_str()
            .unwrap()
            .ends_with("mcpServers/single.json"),
        "{single}"
    );
    run(
        &project,
        &["--user", "continue", "update", "--yes"],
        home.path(),
        &more,
    )
    .expect(0);
    run(
        &project,
        &["--user", "continue", "verify"],
        home.path(),
        &more,
    )
    .expect(0);
    assert!(project.lock_text().is_none());
}

#[test]
fn claude_json_disabled_servers_of_this_project_note_a_project_server_and_skip_the_users_own() {
    let home = tempfile::tempdir().unwrap();
    let h = home.path();
    let project = project_with(".mcp.json", "claude-code.two.mcp.json");
    place(
        h,
        ".claude.json",
        &sample("claude.disabled.json", project.path()),
    );
    // The project's servers: still pinned, each with a note naming ~/.claude.json.
    let found = rows(&project, h, &[], &[]);
    for (name, key) in [
        ("spare", "disabledMcpServers"),
        ("fixture", "disabledMcpjsonServers"),
    ] {
        let r = row(&found, name);
        assert!(r["skipped"].is_null(), "{r}");
        let note = r["note"].as_str().unwrap_or_default();
        assert!(
            note.contains(key) && note.contains("~/.claude.json") && note.contains("still pinned"),
            "{r}"
        );
    }
    run(&project, &["update", "--yes"], h, &[]).expect(0);
    let lock = project.lock_text().unwrap();
    assert!(
        lock.contains("name = \"spare\"") && lock.contains("name = \"fixture\""),
        "{lock}"
    );
    // The user's own servers of ~/.claude.json: the one /mcp turned off is skipped.
    let found = rows(&project, h, &["--user", "claude-code"], &[]);
    let everywhere = row(&found, "everywhere");
    assert!(
        everywhere["skipped"]
            .as_str()
            .unwrap_or_default()
            .contains("disabledMcpServers"),
        "{everywhere}"
    );
    // Another project's list is not this one's.
    assert!(row(&found, "mine")["skipped"].is_null());

    // A ~/.claude.json that is not JSON: ignored with a warning, the server pinned.
    std::fs::write(h.join(".claude.json"), "{ not json").unwrap();
    let out = run(&project, &["servers"], h, &[]);
    out.expect(0);
    assert!(
        out.stderr()
            .contains("the servers it turns off for this project are not known"),
        "{}",
        out.stderr()
    );
    // A project without Claude Code entries never reads it.
    let other = project_with(".cursor/mcp.json", "cursor.mcp.json");
    let out = run(&other, &["servers"], h, &[]);
    out.expect(0);
    assert!(!out.stderr().contains(".claude.json"), "{}", out.stderr());
}

#[test]
fn in_the_home_directory_amazon_q_reads_its_global_agents_and_none_is_shadowed() {
    // The project is the home directory: its `.amazonq/cli-agents/` is not a workspace's.
    let project = project_with(".amazonq/cli-agents/dev.json", "amazonq.agent.json");
    let h = project.path().to_path_buf();
    place(
        &h,
        ".aws/amazonq/cli-agents/mine.json",
        &sample("amazonq.user-dev-agent.json", &h),
    );
    let out = run(&project, &["--user", "amazon-q", "servers"], &h, &[]);
    out.expect(0);
    assert!(!out.stderr().contains("same name"), "{}", out.stderr());
}
