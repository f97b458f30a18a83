//! VS Code's `env` values (`null` unsets a variable, a number is its text, PATH is
//! appended to) and Gemini CLI's `includeTools` "name(...)" entries, `httpUrl` and
//! `authProviderType`, read as each client reads them.

use serde_json::Value;

use super::common::{HttpServer, Project};
use super::{VALUE, env_with, guarded_description, pin_under, place, project_with, temp_home};

#[test]
fn a_vscode_env_null_unsets_the_variable_and_a_number_is_its_text_for_verify_and_the_guard() {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-env-null-number.mcp.json");
    std::fs::write(project.path().join(".env"), "FROM_FILE=k2v\n").unwrap();
    let env = env_with(&home, &[]);
    let lock = pin_under(&project, &env);
    // SAMPLE_SECRET is set for mcp-lock, but `null` keeps it from the server; the
    // envFile's FROM_FILE is removed too.
    assert!(!lock.contains(&format!("Token: {VALUE}")), "{lock}");
    assert!(!lock.contains("Token: k2v"), "{lock}");
    assert!(lock.contains("Token: 8080"), "{lock}");
    // The recorded launch names only what is set.
    assert!(!lock.contains("env = [\"SAMPLE_SECRET\""), "{lock}");
    assert!(!lock.contains("env = [\"FROM_FILE\""), "{lock}");
    assert!(lock.contains("env = [\"PORT\", \"RATIO\"]"), "{lock}");

    // The guard starts the agent's server the same way.
    assert!(guarded_description(&project, "fixture", &env).ends_with("Token: "));
    assert!(guarded_description(&project, "filed", &env).ends_with("Token: "));
    assert!(guarded_description(&project, "number", &env).ends_with("Token: 8080"));

    // `servers` says what is not inherited.
    let servers = project.run_env(&["servers"], &env);
    servers.expect(0);
    assert!(
        servers
            .stdout()
            .contains("all but SAMPLE_SECRET (env: null)"),
        "{}",
        servers.stdout()
    );
}

#[test]
fn a_vscode_env_path_is_appended_to_the_inherited_path_for_verify_and_the_guard_and_claude_codes_replaces_it()
 {
    let (_home, home) = temp_home();
    let project = project_with(".vscode/mcp.json", "vscode-env-path.mcp.json");
    let env = env_with(&home, &[("PATH", "/usr/bin:/bin")]);
    let lock = pin_under(&project, &env);
    assert!(
        lock.contains("Token: /usr/bin:/bin:/opt/extra-q7z/bin"),
        "{lock}"
    );
    assert!(
        guarded_description(&project, "fixture", &env)
            .ends_with("Token: /usr/bin:/bin:/opt/extra-q7z/bin")
    );
    // Claude Code's env PATH still replaces it.
    let claude = Project::new(serde_json::json!({"fixture": {
        "command": super::common::fixture().display().to_string(),
        "args": ["--describe-env", "PATH"],
        "env": {"PATH": "/opt/extra-q7z/bin"}
    }}));
    let claude_lock = pin_under(&claude, &env);
    assert!(
        claude_lock.contains("Token: /opt/extra-q7z/bin\""),
        "{claude_lock}"
    );
}

#[test]
fn a_gemini_include_tools_entry_with_arguments_shows_the_tool_and_exclude_tools_is_exact() {
    let (_home, home) = temp_home();
    let project = project_with(
        ".gemini/settings.json",
        "gemini-include-tool-args.settings.json",
    );
    let lock = pin_under(&project, &env_with(&home, &[]));
    assert!(lock.contains("name = \"search_docs\""), "{lock}");
    // Excluded by its exact name; read_ticket is not included.
    assert!(!lock.contains("name = \"deploy_preview\""), "{lock}");
    assert!(!lock.contains("name = \"read_ticket\""), "{lock}");
}

/// A Gemini CLI project whose one server `remote` is `entry`.
fn gemini_project(entry: Value) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let settings = serde_json::json!({"mcpServers": {"remote": entry}});
    place(
        project.path(),
        ".gemini/settings.json",
        &serde_json::to_string_pretty(&settings).unwrap(),
    );
    project
}

#[test]
fn a_gemini_http_url_is_used_over_url_as_streamable_http() {
    let (_home, home) = temp_home();
    let server = HttpServer::fixture(&["--http"]);
    // Gemini CLI connects to httpUrl and warns that url is ignored.
    let project = gemini_project(serde_json::json!({
        "httpUrl": server.url("/mcp"),
        "url": "http://127.0.0.1:9/nothing-here",
        "type": "sse"
    }));
    let lock = pin_under(&project, &env_with(&home, &[]));
    assert!(lock.contains("transport = \"streamable-http\""), "{lock}");
    assert!(lock.contains(&server.url("/mcp")), "{lock}");
    assert!(!lock.contains("nothing-here"), "{lock}");
}

#[test]
fn a_gemini_google_auth_provider_is_one_line_and_the_server_is_not_contacted() {
    let (_home, home) = temp_home();
    let server = HttpServer::fixture(&["--http"]);
    let project = gemini_project(serde_json::json!({
        "httpUrl": server.url("/mcp"),
        "authProviderType": "google_credentials"
    }));
    let env = env_with(&home, &[]);
    let update = project.run_env(&["update", "--yes"], &env);
    // Unverifiable, as a server refusing authentication is: nothing is pinned.
    update.expect(3);
    let stderr = update.stderr();
    let lines: Vec<&str> = stderr
        .lines()
        .filter(|l| l.contains("authProviderType"))
        .collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("google_credentials"), "{stderr}");
    assert!(lines[0].contains("headers"), "{stderr}");
    assert!(project.lock_text().is_none(), "{stderr}");
}
