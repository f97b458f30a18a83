//! The environment a stdio server is started with, as its host starts it: VS Code's
//! `envFile` (under `env`), and Codex's short list of inherited variables, for the
//! listing connection and for the guard alike.

use serde_json::Value;

use super::common::{McpPipe, Project, bin};
use super::{env_with, pin_under, place, project_with, sample, temp_home};
use mcp_lock::servers::config::ProjectConfig;

fn write_env_file(project: &Project, text: &str) {
    std::fs::write(project.path().join(".env"), text).unwrap();
}

#[test]
fn a_vscode_env_file_reaches_the_server_and_env_overrides_it() {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-envfile.mcp.json");
    write_env_file(
        &project,
        "# read as VS Code reads it\nexport FROM_FILE=\"q7z\" # a comment\nSHADOWED=bad\n",
    );
    let lock = pin_under(&project, &env_with(&home, &[]));
    assert!(lock.contains("Token: q7z"), "{lock}");
    // `env` wins over the file, as in VS Code.
    assert!(lock.contains("Token: k2v"), "{lock}");
    assert!(!lock.contains("Token: bad"), "{lock}");
    // The file's names are not the entry's `env`: the recorded launch is as written.
    assert!(
        lock.contains("args = [\"--describe-env\", \"FROM_FILE\"]\n\n"),
        "{lock}"
    );
    assert!(lock.contains("env = [\"SHADOWED\"]"), "{lock}");

    // The guard starts the agent's server with the file read too.
    let env = env_with(&home, &[]);
    let mut guard = McpPipe::spawn(&bin(), &["guard", "fixture"], project.path(), &env);
    guard.initialize();
    let description = search_docs(&guard.list_tools());
    assert!(
        description.ends_with("Token: q7z"),
        "{description}\n{}",
        guard.stderr()
    );
    guard.close();
    let _ = guard.child.wait();
}

#[test]
fn a_cursor_env_file_reaches_the_server() {
    let (_home, home) = temp_home();
    let project = project_with(".cursor/mcp.json", "cursor-envfile.mcp.json");
    write_env_file(&project, "FROM_FILE=q7z\n");
    let lock = pin_under(&project, &env_with(&home, &[]));
    assert!(lock.contains("Token: q7z"), "{lock}");
}

#[test]
fn a_value_from_a_vscode_env_file_is_a_secret_kept_out_of_the_lock() {
    let (_home, home) = temp_home();
    let long = "env-file-secret-value-5521";
    let project = project_with(".vscode/mcp.json", "vscode-envfile.mcp.json");
    write_env_file(&project, &format!("FROM_FILE={long}\nSHADOWED=bad\n"));
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[]));
    run.expect(2);
    assert!(
        run.stderr().contains("sent the value of FROM_FILE"),
        "{}",
        run.stderr()
    );
    assert!(!run.stderr().contains(long), "{}", run.stderr());
    assert!(project.lock_text().is_none_or(|l| !l.contains(long)));
}

#[test]
fn a_missing_vscode_env_file_is_one_line_naming_the_server_the_file_and_the_field() {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-envfile-missing.mcp.json");
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[]));
    assert_ne!(run.code(), 0);
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("envFile")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("server \"fixture\""), "{stderr}");
    assert!(lines[0].contains("missing.env"), "{stderr}");
    assert!(lines[0].contains("(in envFile)"), "{stderr}");
}

#[test]
fn a_code_loading_variable_from_a_vscode_env_file_is_refused_for_verify_and_the_guard() {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-envfile.mcp.json");
    write_env_file(&project, "FROM_FILE=q7z\n");
    let env = env_with(&home, &[]);
    project.run_env(&["update", "--yes"], &env).expect(0);
    project.run_env(&["verify"], &env).expect(0);
    // The file is no part of the pinned entry: a preload put there is refused.
    write_env_file(&project, "FROM_FILE=q7z\nNODE_OPTIONS=--require ./x.js\n");
    for args in [vec!["verify"], vec!["guard", "fixture"]] {
        let run = project.run_env(&args, &env);
        assert_eq!(run.code(), 2, "{args:?}: {}", run.stderr());
        assert!(
            run.stderr()
                .contains("sets NODE_OPTIONS, which decides which code the server loads"),
            "{}",
            run.stderr()
        );
    }
}

#[test]
fn a_relative_vscode_env_file_is_refused_with_the_workspace_folder_form() {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-envfile-missing.mcp.json");
    write_env_file(&project, "FROM_FILE=q7z\n");
    let relative = sample("vscode-envfile-missing.mcp.json", project.path())
        .replace("${workspaceFolder}/missing.env", ".env");
    place(project.path(), ".vscode/mcp.json", &relative);
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[]));
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr().contains("${workspaceFolder}/.env"),
        "{}",
        run.stderr()
    );
}

/// The description of the fixture's `search_docs` tool in a listing.
fn search_docs(tools: &[Value]) -> String {
    tools
        .iter()
        .find(|t| t["name"] == "search_docs")
        .and_then(|t| t["description"].as_str())
        .expect("search_docs is listed")
        .to_string()
}

#[test]
fn a_codex_server_inherits_only_codexs_defaults_its_env_vars_and_its_env() {
    let (_home, home) = temp_home();
    let project = project_with(".codex/config.toml", "codex-inherit.config.toml");
    let env = env_with(&home, &[("NOT_ALLOWED", "k9w")]);
    let lock = pin_under(&project, &env);
    // Set in mcp-lock's environment, but Codex would not pass it on.
    assert!(!lock.contains("k9w"), "{lock}");
    // `env_vars` and `env` do reach it.
    assert!(lock.contains("Token: q7z"), "{lock}");
    assert!(lock.contains("Token: k2v"), "{lock}");

    // The guard starts the server the agent gets the same way.
    let mut guard = McpPipe::spawn(&bin(), &["guard", "fixture"], project.path(), &env);
    guard.initialize();
    let description = search_docs(&guard.list_tools());
    assert!(
        description.ends_with("Token: "),
        "{description}\n{}",
        guard.stderr()
    );
    guard.close();
    let _ = guard.child.wait();
    let mut guard = McpPipe::spawn(&bin(), &["guard", "forwarded"], project.path(), &env);
    guard.initialize();
    let description = search_docs(&guard.list_tools());
    assert!(description.ends_with("Token: q7z"), "{description}");
    guard.close();
    let _ = guard.child.wait();
}

#[test]
fn a_server_codex_and_claude_code_define_alike_is_listed_under_each_with_that_hosts_environment() {
    let (_home, home) = temp_home();
    let project = project_with(".codex/config.toml", "codex-inherit.config.toml");
    let fixture = super::common::fixture().display().to_string();
    let entry = format!(
        r#"{{"mcpServers": {{"fixture": {{"command": "{fixture}", "args": ["--describe-env", "NOT_ALLOWED"]}}}}}}"#
    );
    place(project.path(), ".mcp.json", &entry);
    let config = ProjectConfig::load(project.path(), None).unwrap();
    assert_eq!(config.server("fixture").unwrap().hosts.len(), 2);
    let env = env_with(&home, &[("NOT_ALLOWED", "k9w")]);
    let lock = pin_under(&project, &env);
    let parsed = mcp_lock::records::lock::parse_lock(&lock, "mcp.lock").unwrap();
    let described = |profile: &str| {
        let pin = &parsed.servers["fixture"].profiles[profile];
        let tool = pin
            .tools
            .values()
            .find(|t| format!("{:?}", t.definition).contains("Token:"))
            .expect("a tool shows the variable");
        format!("{:?}", tool.definition)
    };
    // Claude Code passes its whole environment; Codex does not pass NOT_ALLOWED.
    assert!(described("claude-code").contains("Token: k9w"), "{lock}");
    assert!(!described("codex").contains("k9w"), "{lock}");
}

#[test]
fn a_server_gemini_cli_and_claude_code_define_alike_is_one_server_each_with_its_environment() {
    let (_home, home) = temp_home();
    let project = Project::new(serde_json::json!({
        "fixture": {"command": super::common::fixture().display().to_string(),
                    "args": ["--describe-env", "MY_TOKEN"]}
    }));
    let text = std::fs::read_to_string(project.path().join(".mcp.json")).unwrap();
    place(project.path(), ".gemini/settings.json", &text);
    let env = env_with(&home, &[("MY_TOKEN", "k9w")]);
    let lock = pin_under(&project, &env);
    let parsed = mcp_lock::records::lock::parse_lock(&lock, "mcp.lock").unwrap();
    let profiles: Vec<&String> = parsed.servers["fixture"].profiles.keys().collect();
    assert_eq!(profiles, ["claude-code", "gemini-cli"]);
    let shows = |profile: &str| {
        parsed.servers["fixture"].profiles[profile]
            .tools
            .values()
            .any(|t| format!("{:?}", t.definition).contains("Token: k9w"))
    };
    assert!(shows("claude-code"), "{lock}");
    assert!(!shows("gemini-cli"), "Gemini CLI strips MY_TOKEN: {lock}");
}

#[test]
fn a_gemini_server_is_not_given_variables_that_look_like_secrets_unless_settings_allow_them() {
    let (_home, home) = temp_home();
    let project = project_with(".gemini/settings.json", "gemini-redacted.settings.json");
    let env = env_with(&home, &[("MY_TOKEN", "k9w"), ("ALLOWED_TOKEN", "a4b")]);
    let lock = pin_under(&project, &env);
    // A name with TOKEN in it is stripped by Gemini CLI.
    assert!(!lock.contains("k9w"), "{lock}");
    // The settings' `allowed` list and the entry's own `env` pass.
    assert!(lock.contains("Token: a4b"), "{lock}");
    assert!(lock.contains("Token: q7z"), "{lock}");
}
