//! Where each client keeps its configs: Cline's shared settings before the old VS Code
//! copy, GEMINI_CLI_HOME, opencode's parent and `.opencode/` configs, Amazon Q's agent
//! files, a Continue single-server `.json`, and `--user` for every client that has a
//! user-level file.

use super::common::Project;
use super::{VALUE, pin_and_verify, place, project_with, sample};
use mcp_lock::servers::config::ProjectConfig;

const OLD_CLINE: &str =
    ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json";
const NEW_CLINE: &str = ".cline/data/settings/cline_mcp_settings.json";

fn empty_project() -> Project {
    Project::empty()
}

/// `servers --format json` names (server, file) under `env`.
fn servers_json(project: &Project, extra: &[&str], env: &[(&str, &str)]) -> serde_json::Value {
    let mut args = extra.to_vec();
    args.extend(["servers", "--format", "json"]);
    let run = project.run_env(&args, env);
    run.expect(0);
    run.json()
}

#[test]
fn user_cline_reads_the_shared_settings_and_not_the_stale_vscode_copy() {
    let home = tempfile::tempdir().unwrap();
    let project = empty_project();
    place(
        home.path(),
        OLD_CLINE,
        &sample("cline_mcp_settings.json", project.path()),
    );
    place(
        home.path(),
        NEW_CLINE,
        &sample("cline.shared.cline_mcp_settings.json", project.path()),
    );
    let lock = pin_and_verify(&project, &["--user", "cline"], Some(home.path()));
    assert!(lock.contains("name = \"current\""), "{lock}");
    // The old copy's server is one Cline no longer runs.
    assert!(!lock.contains("name = \"fixture\""), "{lock}");
    let home_text = home.path().display().to_string();
    let run = project.run_env(
        &["--user", "cline", "servers"],
        &[("HOME", &home_text), ("XDG_CONFIG_HOME", "")],
    );
    run.expect(0);
    assert!(run.stderr().contains("is not read"), "{}", run.stderr());
}

#[test]
fn user_cline_works_with_only_the_shared_settings_and_follows_cline_dir() {
    let home = tempfile::tempdir().unwrap();
    let cline_dir = tempfile::tempdir().unwrap();
    let project = empty_project();
    place(
        cline_dir.path(),
        "data/settings/cline_mcp_settings.json",
        &sample("cline.shared.cline_mcp_settings.json", project.path()),
    );
    let home_text = home.path().display().to_string();
    let cline_text = cline_dir.path().display().to_string();
    let env = [
        ("HOME", home_text.as_str()),
        ("XDG_CONFIG_HOME", ""),
        ("CLINE_DIR", cline_text.as_str()),
        ("SAMPLE_SECRET", VALUE),
    ];
    project
        .run_env(&["--user", "cline", "update", "--yes"], &env)
        .expect(0);
    project
        .run_env(&["--user", "cline", "verify"], &env)
        .expect(0);
    let json = servers_json(&project, &["--user", "cline"], &env);
    let file = json["servers"][0]["file"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        file.ends_with("data/settings/cline_mcp_settings.json"),
        "{json}"
    );
    assert_eq!(json["servers"][0]["name"], "current", "{json}");
}

#[test]
fn user_cline_falls_back_to_the_old_vscode_file_saying_so() {
    let home = tempfile::tempdir().unwrap();
    let project = empty_project();
    place(
        home.path(),
        OLD_CLINE,
        &sample("cline_mcp_settings.json", project.path()),
    );
    let home_text = home.path().display().to_string();
    let run = project.run_env(
        &["--user", "cline", "servers"],
        &[("HOME", &home_text), ("XDG_CONFIG_HOME", "")],
    );
    run.expect(0);
    assert!(run.stderr().contains("does not exist"), "{}", run.stderr());
    assert!(run.stdout().contains("fixture"), "{}", run.stdout());
}

#[test]
fn user_gemini_cli_reads_under_gemini_cli_home() {
    let home = tempfile::tempdir().unwrap();
    let gemini_home = tempfile::tempdir().unwrap();
    let project = empty_project();
    place(
        gemini_home.path(),
        ".gemini/settings.json",
        &sample("gemini.settings.json", project.path()),
    );
    let home_text = home.path().display().to_string();
    let gemini_text = gemini_home.path().display().to_string();
    let env = [
        ("HOME", home_text.as_str()),
        ("XDG_CONFIG_HOME", ""),
        ("GEMINI_CLI_HOME", gemini_text.as_str()),
        ("SAMPLE_SECRET", VALUE),
    ];
    project
        .run_env(&["--user", "gemini-cli", "update", "--yes"], &env)
        .expect(0);
    let json = servers_json(&project, &["--user", "gemini-cli"], &env);
    assert_eq!(json["servers"][0]["name"], "fixture", "{json}");
    assert!(
        json["servers"][0]["file"]
            .as_str()
            .is_some_and(|f| f.starts_with(&gemini_text)),
        "{json}"
    );
}

#[test]
fn opencode_configs_of_parent_directories_and_dot_opencode_are_found_up_to_the_git_root() {
    let top = tempfile::tempdir().unwrap();
    // Above the git root: opencode does not read it, nor do we.
    place(
        top.path(),
        "opencode.json",
        r#"{"mcp": {"beyond": {"type": "local", "command": ["/nonexistent"]}}}"#,
    );
    let repo = top.path().join("repo");
    std::fs::create_dir_all(repo.join(".git")).unwrap();
    let project = Project::at(tempfile::tempdir_in(&repo).unwrap());
    place(
        &repo,
        "opencode.jsonc",
        &sample("opencode.jsonc", project.path()),
    );
    place(
        project.path(),
        ".opencode/opencode.json",
        &sample("opencode.nested.json", project.path()),
    );
    let lock = pin_and_verify(&project, &[], None);
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    assert!(lock.contains("name = \"nested\""), "{lock}");
    assert!(lock.contains("Token: q7z"), "{lock}");
    assert!(!lock.contains("beyond"), "{lock}");
    let config = ProjectConfig::load(project.path(), None).unwrap();
    let file_of = |name: &str| {
        config
            .found
            .iter()
            .find(|f| f.name == name)
            .map(|f| f.file.clone())
            .unwrap()
    };
    assert_eq!(file_of("fixture"), repo.join("opencode.jsonc"));
    assert!(file_of("nested").ends_with(".opencode/opencode.json"));
}

#[test]
fn a_nearer_opencode_config_overrides_a_parents_entry_member_by_member() {
    let repo = tempfile::tempdir().unwrap();
    std::fs::create_dir_all(repo.path().join(".git")).unwrap();
    let project = Project::at(tempfile::tempdir_in(repo.path()).unwrap());
    place(
        repo.path(),
        "opencode.jsonc",
        &sample("opencode.jsonc", project.path()),
    );
    // Only `enabled`: the parent's command and environment stay, as opencode merges.
    place(
        project.path(),
        "opencode.json",
        r#"{"mcp": {"fixture": {"enabled": false}, "later": {"enabled": true}}}"#,
    );
    let config = ProjectConfig::load(project.path(), None).unwrap();
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["later"], "{:?}", config.found);
    let fixture = config.found.iter().find(|f| f.name == "fixture").unwrap();
    assert!(fixture.skipped.is_some());
    assert_eq!(fixture.file, project.path().join("opencode.json"));
}

#[test]
fn an_amazonq_agent_files_tools_allow_list_pins_only_the_allowed_tools() {
    let project = project_with(".amazonq/cli-agents/dev.json", "amazonq.agent.json");
    let lock = pin_and_verify(&project, &[], None);
    assert!(lock.contains("name = \"search_docs\""), "{lock}");
    assert!(lock.contains("name = \"read_ticket\""), "{lock}");
    assert!(!lock.contains("name = \"deploy_preview\""), "{lock}");
    // An agent without servers of its own is no error beside it.
    place(
        project.path(),
        ".amazonq/cli-agents/plain.json",
        r#"{"name": "plain", "tools": ["*"]}"#,
    );
    let config = ProjectConfig::load(project.path(), None).unwrap();
    assert_eq!(config.servers.len(), 1);
    assert_eq!(
        config.servers[0].filter.include,
        Some(vec!["search_docs".to_string(), "read_ticket".to_string()])
    );
}

#[test]
fn a_continue_single_server_json_is_pinned_under_its_file_name() {
    let project = project_with(".continue/mcpServers/fixture.json", "continue.single.json");
    let lock = pin_and_verify(&project, &[], None);
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    assert!(lock.contains("Token: q7z"), "{lock}");
}

#[test]
fn user_level_files_of_kiro_cursor_vscode_zed_roo_continue_and_claude_desktop_are_read() {
    let cases = [
        ("kiro", ".kiro/settings/mcp.json", "kiro.mcp.json"),
        ("cursor", ".cursor/mcp.json", "cursor.mcp.json"),
        ("vscode", ".config/Code/User/mcp.json", "vscode.mcp.json"),
        ("zed", ".config/zed/settings.json", "zed.settings.json"),
        (
            "roo-code",
            ".config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
            "roo.mcp.json",
        ),
        ("continue", ".continue/config.yaml", "continue.yaml"),
        (
            "claude-desktop",
            ".config/Claude/claude_desktop_config.json",
            "claude-code.mcp.json",
        ),
    ];
    for (client, rel, name) in cases {
        let home = tempfile::tempdir().unwrap();
        let project = empty_project();
        let file = place(home.path(), rel, &sample(name, project.path()));
        let home_text = home.path().display().to_string();
        let lookup = |v: &str| (v == "HOME").then(|| home_text.clone());
        assert!(
            mcp_lock::servers::config::is_user_file(&file, &lookup),
            "{client}"
        );
        let lock = pin_and_verify(&project, &["--user", client], Some(home.path()));
        assert!(lock.contains("name = \"fixture\""), "{client}: {lock}");
    }
}
