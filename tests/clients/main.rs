//! Every major client's config, read as that client writes it: one sample per shape
//! (tests/data/configs/, written from each client's documented format), pinned and
//! verified against the fixture server, with each variable syntax, type spelling,
//! disabled entry, tool filter and name clash. Each area of client reading has a
//! module of its own beside this file.

mod codex;
#[path = "../common/mod.rs"]
mod common;
mod disabled;
mod entry;
mod envs;
mod goose;
mod helper;
mod launch;
mod places;
mod users2;
mod vars;
mod vscode2;

use std::path::{Path, PathBuf};

use common::{Project, fixture};
use mcp_lock::servers::config::{ConfigError, Host, ProjectConfig, TransportSpec};

/// What SAMPLE_SECRET is set to: under 4 characters, so it is not looked for as a
/// secret and the fixture's "Token: VALUE" description is pinned as the server sent
/// it, showing the variable was expanded in each client's syntax.
const VALUE: &str = "q7z";

/// A sample with the fixture's path (and the project directory) filled in.
fn sample(name: &str, project: &Path) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("tests/data/configs")
        .join(name);
    let canonical = std::fs::canonicalize(project).unwrap();
    std::fs::read_to_string(&path)
        .unwrap()
        .replace("@FIXTURE@", &fixture().display().to_string())
        .replace("@PROJECT@", &canonical.display().to_string())
}

/// An empty project directory (no `.mcp.json`) with `sample` written at `rel`.
fn project_with(rel: &str, name: &str) -> Project {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    place(project.path(), rel, &sample(name, project.path()));
    project
}

fn place(dir: &Path, rel: &str, text: &str) -> PathBuf {
    let path = dir.join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(&path, text).unwrap();
    path
}

/// `update --yes` then `verify`, with SAMPLE_SECRET set (and HOME, when given).
fn pin_and_verify(project: &Project, extra: &[&str], home: Option<&Path>) -> String {
    let home = home.map(|h| h.display().to_string());
    let mut env = vec![("SAMPLE_SECRET", VALUE)];
    if let Some(home) = &home {
        env.push(("HOME", home.as_str()));
        env.push(("XDG_CONFIG_HOME", ""));
    }
    let mut update = extra.to_vec();
    update.extend(["update", "--yes"]);
    project.run_env(&update, &env).expect(0);
    let mut verify = extra.to_vec();
    verify.push("verify");
    project.run_env(&verify, &env).expect(0);
    if extra.contains(&"--user") {
        // Personal servers go in the user's own lock, never the project's mcp.lock.
        assert!(
            project.lock_text().is_none(),
            "a personal server reached mcp.lock"
        );
        return user_lock(home.as_deref().map(Path::new).expect("a home"));
    }
    project.lock_text().expect("a lock was written")
}

/// A temporary directory for HOME and XDG_CONFIG_HOME, and its path as text.
pub(crate) fn temp_home() -> (tempfile::TempDir, String) {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().display().to_string();
    (dir, path)
}

/// The environment of a run: HOME and XDG_CONFIG_HOME at `home`, SAMPLE_SECRET set,
/// and `extra`.
pub(crate) fn env_with<'a>(home: &'a str, extra: &[(&'a str, &'a str)]) -> Vec<(&'a str, &'a str)> {
    let mut env = vec![
        ("HOME", home),
        ("XDG_CONFIG_HOME", home),
        ("SAMPLE_SECRET", VALUE),
    ];
    env.extend_from_slice(extra);
    env
}

/// `update --yes` then `verify` in `project` under `env`; the lock written.
pub(crate) fn pin_under(project: &Project, env: &[(&str, &str)]) -> String {
    project.run_env(&["update", "--yes"], env).expect(0);
    project.run_env(&["verify"], env).expect(0);
    project.lock_text().expect("a lock was written")
}

/// The description of the fixture's `search_docs` tool as the server `mcp-lock guard
/// SERVER` starts lists it: what the agent's server sees.
pub(crate) fn guarded_description(project: &Project, server: &str, env: &[(&str, &str)]) -> String {
    let mut guard = common::McpPipe::spawn(&common::bin(), &["guard", server], project.path(), env);
    guard.initialize();
    let tools: Vec<serde_json::Value> = guard.list_tools();
    let description = tools
        .iter()
        .find(|t| t["name"] == "search_docs")
        .and_then(|t| t["description"].as_str())
        .unwrap_or_else(|| panic!("search_docs is listed\n{}", guard.stderr()))
        .to_string();
    guard.close();
    let _ = guard.child.wait();
    description
}

/// The row of the entry `name` in a `servers --format json` document.
pub(crate) fn row_named(doc: &serde_json::Value, name: &str) -> serde_json::Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no row for {name}: {doc}"))
}

/// The one lock under a home's `.config/mcp-lock/locks/`.
fn user_lock(home: &Path) -> String {
    let dir = home.join(".config/mcp-lock/locks");
    let locks: Vec<_> = std::fs::read_dir(&dir)
        .unwrap_or_else(|e| panic!("no user locks in {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "lock"))
        .collect();
    assert_eq!(locks.len(), 1, "{locks:?}");
    std::fs::read_to_string(&locks[0]).unwrap()
}

#[test]
fn each_project_clients_sample_is_pinned_and_verified_with_its_variable_syntax() {
    let cases = [
        (".mcp.json", "claude-code.mcp.json"),
        (".vscode/mcp.json", "vscode.mcp.json"),
        (".cursor/mcp.json", "cursor.mcp.json"),
        (".codex/config.toml", "codex.config.toml"),
        (".gemini/settings.json", "gemini.settings.json"),
        (".zed/settings.json", "zed.settings.json"),
        (".roo/mcp.json", "roo.mcp.json"),
        ("opencode.jsonc", "opencode.jsonc"),
        (".kiro/settings/mcp.json", "kiro.mcp.json"),
        (".amazonq/mcp.json", "amazonq.mcp.json"),
        (".continue/mcpServers/fixture.yaml", "continue.yaml"),
    ];
    for (rel, name) in cases {
        let project = project_with(rel, name);
        let lock = pin_and_verify(&project, &[], None);
        assert!(lock.contains("name = \"fixture\""), "{name}: {lock}");
        // The fixture put the variable's value in a tool description.
        assert!(lock.contains("Token: q7z"), "{name}: {lock}");
    }
}

#[test]
fn a_translated_variable_is_still_a_secret_kept_out_of_the_lock() {
    let long = "sample-secret-value-8841";
    for (rel, name) in [
        (".gemini/settings.json", "gemini.settings.json"),
        ("opencode.jsonc", "opencode.jsonc"),
        (".continue/mcpServers/fixture.yaml", "continue.yaml"),
        (".codex/config.toml", "codex.config.toml"),
    ] {
        let project = project_with(rel, name);
        let run = project.run_env(&["update", "--yes"], &[("SAMPLE_SECRET", long)]);
        run.expect(2);
        assert!(
            run.stderr().contains("sent the value of SAMPLE_SECRET"),
            "{name}: {}",
            run.stderr()
        );
        assert!(!run.stderr().contains(long), "{name}: {}", run.stderr());
    }
}

#[test]
fn each_host_maps_to_its_profile_or_bare() {
    let profile_of = |rel: &str, name: &str| {
        let project = project_with(rel, name);
        let lock = pin_and_verify(&project, &[], None);
        let parsed = mcp_lock::records::lock::parse_lock(&lock, "mcp.lock").unwrap();
        let mut profiles: Vec<String> =
            parsed.servers["fixture"].profiles.keys().cloned().collect();
        profiles.sort();
        profiles
    };
    assert_eq!(
        profile_of(".codex/config.toml", "codex.config.toml"),
        ["codex"]
    );
    assert_eq!(
        profile_of(".gemini/settings.json", "gemini.settings.json"),
        ["gemini-cli"]
    );
    assert_eq!(
        profile_of(".continue/mcpServers/fixture.yaml", "continue.yaml"),
        ["continue"]
    );
    assert_eq!(
        profile_of(".kiro/settings/mcp.json", "kiro.mcp.json"),
        ["bare"]
    );
}

#[test]
fn disabled_entries_are_skipped_and_listed_where_they_are() {
    let project = project_with(".roo/mcp.json", "roo.mcp.json");
    place(
        project.path(),
        ".zed/settings.json",
        &sample("zed.settings.json", project.path()),
    );
    place(
        project.path(),
        "opencode.jsonc",
        &sample("opencode.jsonc", project.path()),
    );
    let config = ProjectConfig::load(project.path(), None).unwrap();
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["fixture", "nested"]);
    let skipped: Vec<(&str, usize, Host, Option<&str>)> = config
        .found
        .iter()
        .filter(|f| f.skipped.is_some())
        .map(|f| (f.name.as_str(), f.line, f.host, f.skipped.as_deref()))
        .collect();
    assert_eq!(
        skipped,
        [
            ("off", 13, Host::Zed, Some("enabled: false")),
            ("parked", 10, Host::RooCode, Some("disabled: true")),
            ("later", 12, Host::OpenCode, Some("enabled: false")),
        ]
    );
    let lines: Vec<(Host, usize)> = config
        .found
        .iter()
        .filter(|f| f.name == "fixture")
        .map(|f| (f.host, f.line))
        .collect();
    assert_eq!(
        lines,
        [(Host::Zed, 5), (Host::RooCode, 3), (Host::OpenCode, 5)]
    );
}

#[test]
fn a_tool_the_host_filters_out_is_neither_pinned_nor_judged() {
    let project = project_with(".gemini/settings.json", "gemini.settings.json");
    let lock = pin_and_verify(&project, &[], None);
    // includeTools search_docs and deploy_preview, excludeTools deploy_preview.
    assert!(lock.contains("name = \"search_docs\""), "{lock}");
    assert!(!lock.contains("name = \"deploy_preview\""), "{lock}");
    assert!(!lock.contains("name = \"read_ticket\""), "{lock}");
    let run = project.run_env(&["verify", "--format", "json"], &[("SAMPLE_SECRET", VALUE)]);
    run.expect(0);
    assert_eq!(
        run.json()["servers"][0]["filtered"],
        serde_json::json!(["deploy_preview", "read_ticket"])
    );
    let human = project.run_env(&["verify"], &[("SAMPLE_SECRET", VALUE)]);
    assert!(
        human.stdout().contains("2 tools filtered by the host's config (not shown to its agent, not pinned): deploy_preview, read_ticket"),
        "{}",
        human.stdout()
    );
}

#[test]
fn tool_filters_are_read_from_each_hosts_keys() {
    let filter_of = |rel: &str, name: &str| {
        let project = project_with(rel, name);
        let config = ProjectConfig::load(project.path(), None).unwrap();
        let filter = config.servers[0].filter.clone();
        (filter.include, filter.exclude)
    };
    let names = |n: &[&str]| n.iter().map(|s| s.to_string()).collect::<Vec<_>>();
    assert_eq!(
        filter_of(".gemini/settings.json", "gemini.settings.json"),
        (
            Some(names(&["search_docs", "deploy_preview"])),
            names(&["deploy_preview"])
        )
    );
    assert_eq!(
        filter_of(".codex/config.toml", "codex.config.toml"),
        (
            Some(names(&["search_docs", "deploy_preview"])),
            names(&["deploy_preview"])
        )
    );
    assert_eq!(
        filter_of(".roo/mcp.json", "roo.mcp.json"),
        (None, names(&["deploy_preview"]))
    );
    assert_eq!(
        filter_of(".kiro/settings/mcp.json", "kiro.mcp.json"),
        (None, names(&["deploy_preview"]))
    );
    // alwaysAllow / autoApprove hide nothing.
    assert_eq!(
        filter_of(".amazonq/mcp.json", "amazonq.mcp.json"),
        (None, vec![])
    );
}

#[test]
fn type_spellings_and_url_members_read_as_their_transports() {
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        ".roo/mcp.json",
        r#"{"mcpServers": {
            "a": {"type": "streamable-http", "url": "http://127.0.0.1:1/a"},
            "b": {"type": "sse", "url": "http://127.0.0.1:1/b"}}}"#,
    );
    place(
        dir.path(),
        "opencode.json",
        r#"{"mcp": {"c": {"type": "remote", "url": "http://127.0.0.1:1/c", "headers": {"Authorization": "Bearer {env:TOKEN}"}}}}"#,
    );
    place(
        dir.path(),
        ".gemini/settings.json",
        r#"{"mcpServers": {"d": {"httpUrl": "http://127.0.0.1:1/d"}, "e": {"url": "http://127.0.0.1:1/e"}}}"#,
    );
    place(
        dir.path(),
        ".codex/config.toml",
        "[mcp_servers.f]\nurl = \"http://127.0.0.1:1/f\"\nbearer_token_env_var = \"TOKEN\"\n",
    );
    let config = ProjectConfig::load(dir.path(), None).unwrap();
    let kinds: Vec<(&str, &str)> = config
        .servers
        .iter()
        .map(|s| (s.name.as_str(), s.transport_name()))
        .collect();
    assert_eq!(
        kinds,
        [
            ("a", "streamable-http"),
            ("b", "sse"),
            ("c", "streamable-http"),
            ("d", "streamable-http"),
            // Streamable HTTP first, legacy SSE as the fallback, as Gemini CLI tries.
            ("e", "streamable-http"),
            ("f", "streamable-http"),
        ]
    );
    for name in ["c", "f"] {
        let spec = config.servers.iter().find(|s| s.name == name).unwrap();
        let TransportSpec::Remote { headers, .. } = &spec.transport else {
            panic!("remote")
        };
        assert_eq!(headers["Authorization"], "Bearer ${TOKEN}", "{name}");
    }
}

#[test]
fn an_identical_server_in_two_clients_files_is_one_server_under_both_hosts() {
    let project = project_with(".mcp.json", "cursor.mcp.json");
    let entry = r#"{"mcpServers": {"fixture": {"command": "@FIXTURE@", "args": ["--describe-env", "SEEN"], "env": {"SEEN": "${env:SAMPLE_SECRET}"}}}}"#
        .replace("@FIXTURE@", &fixture().display().to_string());
    place(project.path(), ".kiro/settings/mcp.json", &entry);
    let config = ProjectConfig::load(project.path(), None).unwrap();
    assert_eq!(config.servers.len(), 1);
    assert_eq!(config.servers[0].hosts, [Host::ClaudeCode, Host::Kiro]);
}

#[test]
fn a_server_defined_differently_in_two_clients_files_is_an_error_naming_both() {
    let project = project_with(".mcp.json", "claude-code.mcp.json");
    place(
        project.path(),
        ".codex/config.toml",
        &sample("codex.config.toml", project.path()),
    );
    let err = ProjectConfig::load(project.path(), None).unwrap_err();
    assert!(matches!(err, ConfigError::Conflict { .. }), "{err}");
    let run = project.run(&["update", "--yes"]);
    run.expect(2);
    assert!(run.stderr().contains(".mcp.json"), "{}", run.stderr());
    assert!(
        run.stderr().contains(".codex/config.toml"),
        "{}",
        run.stderr()
    );
}

#[test]
fn mcp_lock_toml_picks_which_file_a_differently_defined_server_comes_from() {
    let project = project_with(".mcp.json", "claude-code.mcp.json");
    place(
        project.path(),
        ".codex/config.toml",
        &sample("codex.config.toml", project.path()),
    );
    std::fs::write(
        project.path().join("mcp-lock.toml"),
        "[config]\nprefer = { fixture = \".codex/config.toml\" }\n",
    )
    .unwrap();
    let run = project.run_env(
        &["servers", "--format", "json"],
        &[("SAMPLE_SECRET", VALUE)],
    );
    run.expect(0);
    let doc = run.json();
    let rows: Vec<(String, Option<String>)> = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .filter(|r| r["name"] == "fixture")
        .map(|r| {
            (
                r["file"].as_str().unwrap().to_string(),
                r["skipped"].as_str().map(String::from),
            )
        })
        .collect();
    assert_eq!(rows.len(), 2, "{doc}");
    assert!(
        rows[0].0.ends_with(".mcp.json")
            && rows[0].1.as_deref().is_some_and(
                |w| w.contains("prefers this one") || w.contains("defined differently")
            ),
        "{rows:?}"
    );
    assert!(
        rows[1].0.ends_with(".codex/config.toml") && rows[1].1.is_none(),
        "{rows:?}"
    );
    let lock = pin_and_verify(&project, &[], None);
    assert!(
        lock.contains("name = \"codex\""),
        "pinned under Codex's profile: {lock}"
    );
}

#[test]
fn config_is_read_by_its_shape_whatever_the_file_is_called() {
    let cases = [
        ("codex.config.toml", Host::Codex),
        ("zed.settings.json", Host::Zed),
        ("opencode.jsonc", Host::OpenCode),
        ("goose.config.yaml", Host::Goose),
        ("continue.yaml", Host::Continue),
    ];
    for (name, host) in cases {
        let dir = tempfile::tempdir().unwrap();
        let odd = place(dir.path(), "servers.conf", &sample(name, dir.path()));
        let config = ProjectConfig::load(dir.path(), Some(&odd)).unwrap();
        let fixture = config.servers.iter().find(|s| s.name == "fixture");
        assert_eq!(fixture.map(|s| s.hosts.clone()), Some(vec![host]), "{name}");
        let project = Project::at(dir);
        let lock = pin_and_verify(&project, &["--config", "servers.conf"], None);
        assert!(lock.contains("name = \"fixture\""), "{name}: {lock}");
    }
}

#[test]
fn user_level_files_are_found_under_home_and_are_personal() {
    let cases = [
        (
            "gemini-cli",
            ".gemini/settings.json",
            "gemini.settings.json",
        ),
        (
            "windsurf",
            ".codeium/windsurf/mcp_config.json",
            "windsurf.mcp_config.json",
        ),
        (
            "cline",
            ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
            "cline_mcp_settings.json",
        ),
        ("goose", ".config/goose/config.yaml", "goose.config.yaml"),
        (
            "opencode",
            ".config/opencode/opencode.json",
            "opencode.jsonc",
        ),
        ("codex", ".codex/config.toml", "codex.config.toml"),
    ];
    for (client, rel, name) in cases {
        let home = tempfile::tempdir().unwrap();
        let project = Project::empty();
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
    // Without the file, --user says which file it looked for.
    let home = tempfile::tempdir().unwrap();
    let project = Project::empty();
    let home_text = home.path().display().to_string();
    let run = project.run_env(
        &["--user", "codex", "update", "--yes"],
        &[("HOME", &home_text)],
    );
    run.expect(2);
    assert!(
        run.stderr().contains(".codex/config.toml"),
        "{}",
        run.stderr()
    );
}

#[test]
fn claude_json_gives_user_servers_and_the_local_scope_of_this_project_directory() {
    let home = tempfile::tempdir().unwrap();
    let project = Project::empty();
    let claude = place(
        home.path(),
        ".claude.json",
        &sample("claude.json", project.path()),
    );
    let config = ProjectConfig::load(project.path(), Some(&claude)).unwrap();
    let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
    assert_eq!(names, ["everywhere", "fixture"]);
    assert!(config.servers.iter().all(|s| s.personal));
    assert!(config.servers.iter().all(|s| s.hosts == [Host::ClaudeCode]));
    let fixture = config.servers.iter().find(|s| s.name == "fixture").unwrap();
    let TransportSpec::Stdio { args, .. } = &fixture.transport else {
        panic!("stdio")
    };
    assert_eq!(args, &["--instructions", "local scope"]);
    let shadowed: Vec<(usize, Option<&str>)> = config
        .found
        .iter()
        .filter(|f| f.name == "fixture")
        .map(|f| (f.line, f.skipped.as_deref()))
        .collect();
    assert_eq!(
        shadowed,
        [
            (4, Some("user scope, overridden by the local scope")),
            (11, None)
        ]
    );
    // The same through --user, with HOME pointed at the temporary one.
    let lock = pin_and_verify(&project, &["--user", "claude-code"], Some(home.path()));
    assert!(lock.contains("local scope"), "{lock}");
    assert!(!lock.contains("user scope"), "{lock}");
    assert!(!lock.contains("elsewhere"), "{lock}");
}

#[test]
fn a_settings_file_without_servers_is_no_error() {
    let project = project_with(".mcp.json", "claude-code.mcp.json");
    place(
        project.path(),
        ".gemini/settings.json",
        r#"{"theme": "Default"}"#,
    );
    place(project.path(), ".codex/config.toml", "model = \"o3\"\n");
    let config = ProjectConfig::load(project.path(), None).unwrap();
    assert_eq!(config.servers.len(), 1);
}

#[test]
fn opencode_file_substitution_is_refused_saying_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        "opencode.json",
        r#"{"mcp": {"s": {"type": "local", "command": ["x"], "environment": {"K": "{file:~/.key}"}}}}"#,
    );
    let err = ProjectConfig::load(dir.path(), None)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("{file:~/.key}") && err.contains("{env:NAME}"),
        "{err}"
    );
}

#[test]
fn a_written_default_in_a_tool_text_is_pinned_but_the_same_variable_from_the_environment_is_refused()
 {
    let fixture = fixture().display().to_string();
    let project = Project::new(serde_json::json!({
        "fixture": {
            "command": fixture,
            "args": ["--describe-env", "LEVEL"],
            "env": {"LEVEL": "${LOG_LEVEL:-verbose-debug}"}
        }
    }));
    project.run(&["update", "--yes"]).expect(0);
    assert!(
        project
            .lock_text()
            .unwrap()
            .contains("Token: verbose-debug"),
        "{}",
        project.lock_text().unwrap()
    );
    std::fs::remove_file(project.path().join("mcp.lock")).unwrap();
    let from_env = "level-from-the-environment-8841";
    let run = project.run_env(&["update", "--yes"], &[("LOG_LEVEL", from_env)]);
    run.expect(2);
    assert!(
        run.stderr().contains("sent the value of LOG_LEVEL"),
        "{}",
        run.stderr()
    );
    assert!(project.lock_text().is_none());
}

#[test]
fn a_config_starting_with_a_byte_order_mark_is_read_in_every_format() {
    let cases = [
        (".mcp.json", "claude-code.mcp.json"),
        (".vscode/mcp.json", "vscode.mcp.json"),
        (".codex/config.toml", "codex.config.toml"),
        (".continue/mcpServers/fixture.yaml", "continue.yaml"),
    ];
    for (rel, name) in cases {
        let dir = tempfile::tempdir().unwrap();
        let project = Project::at(dir);
        let text = format!("\u{feff}{}", sample(name, project.path()));
        place(project.path(), rel, &text);
        let run = project.run(&["servers", "--format", "json"]);
        run.expect(0);
        let rows = run.json()["servers"].as_array().unwrap().clone();
        assert_eq!(rows[0]["name"], "fixture", "{name}: {rows:?}");
        assert!(rows[0]["line"].as_u64().unwrap() > 1, "{name}: {rows:?}");
    }
    // The strict reader sees past the mark too: a server given twice is still refused.
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    place(
        project.path(),
        ".mcp.json",
        "\u{feff}{\"mcpServers\": {\"a\": {\"command\": \"x\"}, \"a\": {\"command\": \"y\"}}}",
    );
    let run = project.run(&["servers"]);
    run.expect(2);
    assert!(
        run.stderr().contains("defined more than once"),
        "{}",
        run.stderr()
    );
}

#[test]
fn each_clients_own_disabled_flag_skips_its_entry() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture().display().to_string();
    let json_pair = |off: &str| {
        format!(
            r#"{{"mcpServers": {{"on": {{"command": "{fixture}"}}, "off": {{"command": "{fixture}", {off}}}}}}}"#
        )
    };
    let cases = [
        (
            "cline/cline_mcp_settings.json",
            json_pair(r#""disabled": true"#),
            Host::Cline,
            "disabled: true",
        ),
        (
            ".kiro/settings/mcp.json",
            json_pair(r#""disabled": true"#),
            Host::Kiro,
            "disabled: true",
        ),
        (
            ".amazonq/mcp.json",
            json_pair(r#""disabled": true"#),
            Host::AmazonQ,
            "disabled: true",
        ),
        (
            "windsurf/mcp_config.json",
            json_pair(r#""disabled": true"#),
            Host::Windsurf,
            "disabled: true",
        ),
        (
            ".codex/config.toml",
            format!(
                "[mcp_servers.on]\ncommand = \"{fixture}\"\n\n[mcp_servers.off]\ncommand = \"{fixture}\"\nenabled = false\n"
            ),
            Host::Codex,
            "enabled: false",
        ),
        (
            "goose/config.yaml",
            format!(
                "extensions:\n  on:\n    type: stdio\n    name: \"on\"\n    cmd: {fixture}\n    args: []\n    enabled: true\n  off:\n    type: stdio\n    name: \"off\"\n    cmd: {fixture}\n    args: []\n    enabled: false\n"
            ),
            Host::Goose,
            "enabled: false",
        ),
    ];
    for (rel, text, host, why) in cases {
        let path = place(dir.path(), rel, &text);
        let config = ProjectConfig::load(dir.path(), Some(&path)).unwrap();
        let names: Vec<&str> = config.servers.iter().map(|s| s.name.as_str()).collect();
        assert_eq!(names, ["on"], "{rel}");
        let off = config.found.iter().find(|f| f.name == "off").unwrap();
        assert_eq!(
            (off.host, off.skipped.as_deref()),
            (host, Some(why)),
            "{rel}"
        );
    }
}

#[test]
fn what_two_hosts_read_differently_is_never_merged_into_the_looser_reading() {
    let dir = tempfile::tempdir().unwrap();
    let fixture = fixture().display().to_string();
    // Gemini CLI's Google authentication beside a plain Claude Code entry: two
    // definitions, so the plain one is never pinned as what Gemini's agent sees.
    place(
        dir.path(),
        ".gemini/settings.json",
        r#"{"mcpServers": {"s": {"httpUrl": "http://127.0.0.1:9/mcp", "authProviderType": "google_credentials"}}}"#,
    );
    place(
        dir.path(),
        ".mcp.json",
        r#"{"mcpServers": {"s": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
    );
    let err = ProjectConfig::load(dir.path(), None).unwrap_err();
    assert!(matches!(err, ConfigError::Conflict { .. }), "{err}");
    // Codex leaves an unset env_vars name out; Gemini CLI requires it: the one server
    // requires it, so an unset variable is an error naming it, never quietly dropped.
    let dir = tempfile::tempdir().unwrap();
    place(
        dir.path(),
        ".codex/config.toml",
        &format!("[mcp_servers.s]\ncommand = \"{fixture}\"\nenv_vars = [\"AAA_TOKEN\"]\n"),
    );
    place(
        dir.path(),
        ".gemini/settings.json",
        &format!(
            r#"{{"mcpServers": {{"s": {{"command": "{fixture}", "env": {{"AAA_TOKEN": "${{AAA_TOKEN}}"}}}}}}}}"#
        ),
    );
    let config = ProjectConfig::load(dir.path(), None).unwrap();
    let server = config.server("s").unwrap();
    assert_eq!(server.hosts.len(), 2);
    assert!(
        server.vars.optional.is_empty(),
        "{:?}",
        server.vars.optional
    );
}

#[test]
fn an_entry_its_host_runs_but_mcp_lock_cannot_is_warned_of_and_the_rest_are_pinned() {
    let project = project_with(".codex/config.toml", "codex.config.toml");
    let path = project.path().join(".codex/config.toml");
    let mut text = std::fs::read_to_string(&path).unwrap();
    text.push_str(&format!(
        "\n[mcp_servers.remote_box]\ncommand = \"{}\"\nenvironment_id = \"devbox\"\n",
        fixture().display()
    ));
    std::fs::write(&path, text).unwrap();
    let run = project.run_env(&["update", "--yes"], &[("SAMPLE_SECRET", VALUE)]);
    run.expect(0);
    assert!(
        run.stderr()
            .contains("server \"remote_box\" is not checked: environment_id = \"devbox\""),
        "{}",
        run.stderr()
    );
    let lock = project.lock_text().unwrap();
    assert!(lock.contains("name = \"fixture\""), "{lock}");
    assert!(!lock.contains("remote_box"), "{lock}");
}
