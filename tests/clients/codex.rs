//! Codex CLI's own readings of the fields that name variables (openai/codex
//! `codex-rs/config/src/mcp_types.rs`, `codex-rs/rmcp-client/src/utils.rs`,
//! `codex-rs/core/src/mcp_connection_manager.rs`): `env_vars` tables, names left out
//! when unset, and headers from variables.

use super::common::{HttpServer, Project};
use super::{env_with, guarded_description, place, project_with, sample, temp_home};

#[test]
fn codex_env_vars_tables_are_names_and_an_unset_name_is_left_out_not_an_error() {
    let (_home, home) = temp_home();
    let project = project_with(".codex/config.toml", "codex-env-vars.config.toml");
    let env = env_with(&home, &[]);
    project.run_env(&["update", "--yes"], &env).expect(0);
    project.run_env(&["verify"], &env).expect(0);
    let lock = project.lock_text().expect("a lock was written");
    // `{ name = "SAMPLE_SECRET", source = "local" }` passes the variable.
    assert!(lock.contains("Token: q7z"), "{lock}");
    // The unset name is recorded as written, and the server started without it.
    assert!(lock.contains("\"C27_NEVER_SET\""), "{lock}");
    assert!(lock.contains("Token: \""), "{lock}");

    // The guard starts the agent's server the same way: without the unset name, with
    // the tabled one.
    assert!(guarded_description(&project, "unset", &env).ends_with("Token: "));
    assert!(guarded_description(&project, "tabled", &env).ends_with("Token: q7z"));
}

#[test]
fn a_codex_env_vars_entry_read_on_a_remote_executor_is_not_checked_saying_so_in_one_line() {
    let (_home, home) = temp_home();
    let project = project_with(".codex/config.toml", "codex-env-vars-remote.config.toml");
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[]));
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("remote")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("is not checked"), "{stderr}");
    assert!(lines[0].contains("SAMPLE_SECRET"), "{stderr}");
    assert!(lines[0].contains("source = \"local\""), "{stderr}");
    // Not pinned: the lock, if any, has no such server.
    assert!(
        project
            .lock_text()
            .is_none_or(|lock| !lock.contains("name = \"fixture\"")),
        "{stderr}"
    );
}

/// A Codex project whose remote entry is the fixture server at `server`.
fn headers_project(server: &HttpServer) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let text =
        sample("codex-headers.config.toml", project.path()).replace("@URL@", &server.url("/mcp"));
    place(project.path(), ".codex/config.toml", &text);
    project
}

#[test]
fn a_codex_header_whose_variable_is_unset_or_blank_is_left_out_and_the_server_is_reached() {
    let token = "codex-token-5be02f";
    let server = HttpServer::fixture(&["--http", "--require-token", token]);
    let project = headers_project(&server);
    let (_home, home) = temp_home();
    let env = env_with(&home, &[("C27_TOKEN", token), ("C27_BLANK", "  ")]);
    project.run_env(&["update", "--yes"], &env).expect(0);
    project.run_env(&["verify"], &env).expect(0);
    let lock = project.lock_text().expect("a lock was written");
    assert!(!lock.contains(token), "{lock}");
}

#[test]
fn a_codex_bearer_token_variable_that_is_empty_stops_the_server_in_one_line() {
    let server = HttpServer::fixture(&["--http", "--require-token", "unused-token-91"]);
    let project = headers_project(&server);
    let (_home, home) = temp_home();
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[("C27_TOKEN", "")]));
    assert_ne!(run.code(), 0);
    let stderr = run.stderr();
    let lines: Vec<&str> = stderr.lines().filter(|l| l.contains("C27_TOKEN")).collect();
    assert_eq!(lines.len(), 1, "{stderr}");
    assert!(lines[0].contains("is empty"), "{stderr}");
    // Unset, it is an error too, as in Codex.
    let run = project.run_env(&["update", "--yes"], &env_with(&home, &[]));
    assert!(
        run.stderr().contains("C27_TOKEN is not set"),
        "{}",
        run.stderr()
    );
}
