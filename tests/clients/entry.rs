//! Entry-level readings, each as its client's source has it: Goose's empty
//! `available_tools` and its refused SSE extensions, Gemini CLI's untyped url,
//! Continue's `apiKey`, opencode's `"oauth": false`, Zed's extension entries and
//! Cline's nested `transport` form.

use std::path::Path;

use super::common::{HttpServer, Project};
use super::{VALUE, pin_and_verify, place, project_with, sample};
use mcp_lock::servers::config::{ProjectConfig, TransportSpec};
use serde_json::Value;

/// `sample` with `@URL@` set to `url`, written at `rel` in a new project.
fn remote_project(rel: &str, name: &str, url: &str) -> Project {
    let project = Project::empty();
    let text = sample(name, project.path()).replace("@URL@", url);
    place(project.path(), rel, &text);
    project
}

/// The `servers --format json` row of `name`.
fn servers_row(project: &Project, extra: &[&str], name: &str) -> Value {
    let mut args = extra.to_vec();
    args.extend(["servers", "--format", "json"]);
    let run = project.run_env(&args, &[("SAMPLE_SECRET", VALUE)]);
    run.expect(0);
    super::row_named(&run.json(), name)
}

#[test]
fn goose_empty_available_tools_pins_every_tool_of_the_extension() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let text = sample("goose-available-tools-empty.config.yaml", project.path());
    place(project.path(), "config.yaml", &text);
    let lock = pin_and_verify(&project, &["--config", "config.yaml"], None);
    for tool in ["search_docs", "deploy_preview", "read_ticket"] {
        assert!(
            lock.contains(&format!("name = \"{tool}\"")),
            "{tool}: {lock}"
        );
    }
}

#[test]
fn a_goose_sse_extension_is_skipped_not_pinned_and_shown_as_skipped() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let text = sample("goose-sse.config.yaml", project.path());
    place(project.path(), "config.yaml", &text);
    let lock = pin_and_verify(&project, &["--config", "config.yaml"], None);
    assert!(!lock.contains("old-remote"), "{lock}");
    let row = servers_row(&project, &["--config", "config.yaml"], "old-remote");
    let why = row["skipped"].as_str().unwrap_or_default();
    assert!(why.contains("SSE is unsupported"), "{row}");
}

#[test]
fn zed_extension_entries_are_skipped_and_the_custom_server_beside_them_is_pinned() {
    let project = project_with(".zed/settings.json", "zed-extension.settings.json");
    let lock = pin_and_verify(&project, &[], None);
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    for name in ["postgres-context-server", "mcp-server-github"] {
        assert!(!lock.contains(name), "{lock}");
        let row = servers_row(&project, &[], name);
        let why = row["skipped"].as_str().unwrap_or_default();
        assert!(why.contains("Zed extension"), "{row}");
    }
}

#[test]
fn a_gemini_url_without_type_is_pinned_as_streamable_http() {
    let server = HttpServer::fixture(&["--http"]);
    let project = remote_project(
        ".gemini/settings.json",
        "gemini-untyped-url.settings.json",
        &server.url("/mcp"),
    );
    let lock = pin_and_verify(&project, &[], None);
    assert!(lock.contains("transport = \"streamable-http\""), "{lock}");
    assert!(lock.contains("name = \"search_docs\""), "{lock}");
}

#[test]
fn a_continue_api_key_reaches_the_server_as_a_bearer_header_and_never_shows() {
    let key = "continue-api-key-5d2e9b17";
    let server = HttpServer::fixture(&["--http", "--require-token", key]);
    let project = remote_project(
        ".continue/mcpServers/remote.yaml",
        "continue-api-key.yaml",
        &server.url("/mcp"),
    );
    let env = [("SAMPLE_KEY", key)];
    project.run_env(&["update", "--yes"], &env).expect(0);
    let lock = project.lock_text().unwrap();
    assert!(lock.contains("headers = [\"Authorization\"]"), "{lock}");
    assert!(!lock.contains(key), "{lock}");
    for args in [
        &["verify", "--format", "json"][..],
        &["verify"],
        &["servers", "--format", "json"],
    ] {
        let run = project.run_env(args, &env);
        run.expect(0);
        assert!(
            !run.stdout().contains(key) && !run.stderr().contains(key),
            "{args:?}: {}",
            run.stdout()
        );
    }
}

#[test]
fn opencode_oauth_false_is_read_and_its_401_offers_no_login() {
    let server = HttpServer::fixture(&["--http", "--require-token", "opencode-token-77a1"]);
    let project = remote_project(
        "opencode.jsonc",
        "opencode-oauth-off.jsonc",
        &server.url("/mcp"),
    );
    let config = ProjectConfig::load(project.path(), None).unwrap();
    let spec = |name: &str| config.servers.iter().find(|s| s.name == name).unwrap();
    assert!(spec("remote").oauth_off);
    let client = spec("registered").oauth_client.clone().expect("a client");
    assert_eq!(client.client_id, "mcp-lock-test");
    assert_eq!(client.client_secret.as_deref(), Some("${CLIENT_SECRET}"));
    let run = project.run_env(&["update", "--yes", "remote"], &[]);
    run.expect(3);
    let stderr = run.stderr();
    assert!(stderr.contains("turns OAuth off"), "{stderr}");
    assert!(!stderr.contains("mcp-lock login"), "{stderr}");
    let login = project.run_env(&["login", "remote", "--no-browser"], &[]);
    assert_ne!(login.code(), 0);
    assert!(
        login.stderr().contains("\"oauth\": false"),
        "{}",
        login.stderr()
    );
}

#[test]
fn cline_nested_transport_entries_are_read_and_pinned() {
    let server = HttpServer::fixture(&["--http"]);
    let project = remote_project(
        "settings/cline_mcp_settings.json",
        "cline-nested.cline_mcp_settings.json",
        &server.url("/mcp"),
    );
    let file = Path::new("settings/cline_mcp_settings.json");
    let config = ProjectConfig::load(project.path(), Some(&project.path().join(file))).unwrap();
    let remote = config.servers.iter().find(|s| s.name == "remote").unwrap();
    let TransportSpec::Remote { kind, headers, .. } = &remote.transport else {
        panic!("remote")
    };
    assert_eq!(kind.as_str(), "streamable-http");
    assert_eq!(headers["X-Team"], "docs");
    let lock = pin_and_verify(
        &project,
        &["--config", "settings/cline_mcp_settings.json"],
        None,
    );
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    assert!(lock.contains("literal-cline-value"), "{lock}");
}
