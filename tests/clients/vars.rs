//! Each client's own variable rules: what it expands, and what reaches the server as
//! written (issue #27, items 6 and 11). The fixture puts SEEN's value in a tool
//! description (`Token: ...`), so the lock shows what the server was given.

use std::path::Path;

use mcp_lock::servers::config::ProjectConfig;

use super::common::Project;
use super::{VALUE, pin_and_verify, place, project_with, sample};

/// Pins `project` with HOME set to a temp dir; returns the lock and that home.
fn pin_with_home(project: &Project, extra: &[&str]) -> (String, tempfile::TempDir) {
    let home = tempfile::tempdir().unwrap();
    let lock = pin_and_verify(project, extra, Some(home.path()));
    (lock, home)
}

/// The arguments the entry `fixture` is started with.
fn launched_args(project: &Project, config: Option<&Path>, home: &Path) -> Vec<String> {
    let config = ProjectConfig::load(project.path(), config).unwrap();
    let home = home.display().to_string();
    let lookup = |v: &str| match v {
        "SAMPLE_SECRET" => Some(VALUE.to_string()),
        "HOME" => Some(home.clone()),
        _ => None,
    };
    let spec = config.server("fixture").unwrap();
    spec.resolve_stdio(project.path(), &lookup)
        .unwrap()
        .unwrap()
        .args
}

fn basename(project: &Project) -> String {
    let canonical = std::fs::canonicalize(project.path()).unwrap();
    canonical
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned()
}

#[test]
fn codex_passes_a_dollar_brace_in_env_and_args_to_the_server_as_written() {
    let project = project_with(".codex/config.toml", "codex-literal.config.toml");
    let (lock, home) = pin_with_home(&project, &[]);
    assert!(lock.contains("Token: ${SAMPLE_SECRET}"), "{lock}");
    assert!(!lock.contains("Token: q7z"), "{lock}");
    let args = launched_args(&project, None, home.path());
    assert_eq!(args[3], "${SAMPLE_SECRET}");
}

#[test]
fn roo_code_expands_env_and_workspace_folder_and_keeps_a_plain_variable_literal() {
    let project = project_with(".roo/mcp.json", "roo-variables.mcp.json");
    let (lock, home) = pin_with_home(&project, &[]);
    let root = std::fs::canonicalize(project.path()).unwrap();
    // Roo Code's MCP hub answers only ${env:..} and ${workspaceFolder}.
    let want = format!(
        "Token: q7z ${{SAMPLE_SECRET}} ${{workspaceFolderBasename}} {}",
        root.display()
    );
    assert!(lock.contains(&want), "{want}\n{lock}");
    assert_eq!(
        launched_args(&project, None, home.path())[3],
        "${SAMPLE_SECRET}"
    );
}

#[test]
fn cline_expands_only_env_references() {
    let project = Project::empty();
    let file = place(
        project.path(),
        "cline_mcp_settings.json",
        &sample("cline-variables.json", project.path()),
    );
    let config = file.display().to_string();
    let (lock, home) = pin_with_home(&project, &["--config", &config]);
    assert!(
        lock.contains("Token: q7z ${SAMPLE_SECRET} ${workspaceFolder}"),
        "{lock}"
    );
    assert_eq!(
        launched_args(&project, Some(&file), home.path())[3],
        "${SAMPLE_SECRET}"
    );
}

#[test]
fn vscode_answers_user_home_and_its_own_names_and_keeps_a_plain_variable_literal() {
    let project = project_with(".vscode/mcp.json", "vscode-variables.mcp.json");
    let (lock, home) = pin_with_home(&project, &[]);
    let want = format!(
        "Token: q7z ${{SAMPLE_SECRET}} {}/x {}",
        home.path().display(),
        basename(&project)
    );
    assert!(lock.contains(&want), "{want}\n{lock}");
    assert_eq!(
        launched_args(&project, None, home.path())[3],
        "${SAMPLE_SECRET}"
    );
}

#[test]
fn cursor_user_home_and_workspace_folder_are_cursors_own_not_environment_variables() {
    let project = project_with(".cursor/mcp.json", "cursor-variables.mcp.json");
    // No variable named userHome or workspaceFolder anywhere: the update goes through.
    let (lock, home) = pin_with_home(&project, &[]);
    let want = format!(
        "Token: q7z {}/x {}",
        home.path().display(),
        basename(&project)
    );
    assert!(lock.contains(&want), "{want}\n{lock}");
    let root = std::fs::canonicalize(project.path()).unwrap();
    assert_eq!(
        launched_args(&project, None, home.path())[3],
        root.display().to_string()
    );
}

#[test]
fn amazon_q_expands_env_references_in_env_only_and_passes_args_as_written() {
    let project = project_with(".amazonq/mcp.json", "amazonq-variables.mcp.json");
    let (lock, home) = pin_with_home(&project, &[]);
    assert!(lock.contains("Token: q7z ${SAMPLE_SECRET}"), "{lock}");
    assert_eq!(
        launched_args(&project, None, home.path())[3],
        "${env:SAMPLE_SECRET}"
    );
}

#[test]
fn an_env_reference_in_roo_code_and_a_plain_one_in_claude_code_are_one_server() {
    let project = project_with(".roo/mcp.json", "roo.mcp.json");
    place(
        project.path(),
        ".mcp.json",
        &sample("claude-code.mcp.json", project.path())
            .replace(", \"OTHER\": \"${UNSET_SAMPLE_VAR:-fallback}\"", ""),
    );
    let config = ProjectConfig::load(project.path(), None).unwrap();
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fixture"]);
}

#[test]
fn the_same_plain_variable_in_codex_and_claude_code_is_two_launches() {
    let project = project_with(".codex/config.toml", "codex-literal.config.toml");
    let claude = r#"{"mcpServers": {"fixture": {"command": "@FIXTURE@",
        "args": ["--describe-env", "SEEN", "--tag", "${SAMPLE_SECRET}"],
        "env": {"SEEN": "${SAMPLE_SECRET}"}}}}"#
        .replace("@FIXTURE@", &super::fixture().display().to_string());
    place(project.path(), ".mcp.json", &claude);
    let err = ProjectConfig::load(project.path(), None).unwrap_err();
    assert!(
        matches!(err, mcp_lock::servers::config::ConfigError::Conflict { .. }),
        "{err}"
    );
}
