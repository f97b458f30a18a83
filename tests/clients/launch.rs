//! `mcp-lock servers`: what each entry launches, resolved as a connection resolves
//! it, in every client's shape; secrets never shown, an unresolvable entry shown as
//! such while the others still are.

use std::path::Path;

use serde_json::Value;

use super::common::{Project, fixture};
use super::{place, project_with, sample};

/// Long enough to be looked for as a secret.
const SECRET: &str = "sample-secret-value-8841";

/// `servers --format json` and the human table, with SAMPLE_SECRET set and HOME and
/// XDG_CONFIG_HOME in `home`; the document and both outputs.
fn servers(project: &Project, extra: &[&str], home: &Path) -> (Value, String) {
    let home_text = home.display().to_string();
    let config = home.join(".config").display().to_string();
    let env = [
        ("SAMPLE_SECRET", SECRET),
        ("HOME", home_text.as_str()),
        ("XDG_CONFIG_HOME", config.as_str()),
    ];
    let mut json = extra.to_vec();
    json.extend(["servers", "--format", "json"]);
    let run = project.run_env(&json, &env);
    run.expect(0);
    let doc = run.json();
    let mut human = extra.to_vec();
    human.push("servers");
    let table = project.run_env(&human, &env);
    table.expect(0);
    let both = format!("{}{}{}", run.stdout(), table.stdout(), table.stderr());
    (doc, both)
}

fn row<'a>(doc: &'a Value, name: &str) -> &'a Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|r| r["name"] == name)
        .unwrap_or_else(|| panic!("no row {name}: {doc}"))
}

fn strings(value: &Value) -> Vec<String> {
    value
        .as_array()
        .unwrap_or_else(|| panic!("not an array: {value}"))
        .iter()
        .map(|v| v.as_str().unwrap().to_string())
        .collect()
}

fn env_names(launch: &Value) -> Vec<(String, String)> {
    launch["env"]
        .as_array()
        .unwrap()
        .iter()
        .map(|v| {
            (
                v["name"].as_str().unwrap().to_string(),
                v["from"].as_str().unwrap().to_string(),
            )
        })
        .collect()
}

fn same_dir(a: &str, b: &Path) -> bool {
    std::fs::canonicalize(a).ok() == std::fs::canonicalize(b).ok()
}

/// What each sample's `fixture` entry launches: the argument it passes, the env
/// names it sets (and how), and its tool filter.
struct Case {
    rel: &'static str,
    sample: &'static str,
    /// `--user CLIENT` for a user-level file placed under HOME.
    user: Option<&'static str>,
    arg: &'static str,
    env: &'static [(&'static str, &'static str)],
    include: Option<&'static [&'static str]>,
    exclude: &'static [&'static str],
}

const SEEN: &[(&str, &str)] = &[("SEEN", "expanded")];
const FORWARDED: &[(&str, &str)] = &[("SAMPLE_SECRET", "expanded")];
const CASES: &[Case] = &[
    Case {
        rel: ".mcp.json",
        sample: "claude-code.mcp.json",
        user: None,
        arg: "SEEN",
        env: &[("OTHER", "expanded"), ("SEEN", "expanded")],
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".vscode/mcp.json",
        sample: "vscode.mcp.json",
        user: None,
        arg: "SEEN",
        env: &[("ROOT", "expanded"), ("SEEN", "expanded")],
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".cursor/mcp.json",
        sample: "cursor.mcp.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".codex/config.toml",
        sample: "codex.config.toml",
        user: None,
        arg: "SAMPLE_SECRET",
        env: FORWARDED,
        include: Some(&["search_docs", "deploy_preview"]),
        exclude: &["deploy_preview"],
    },
    Case {
        rel: ".gemini/settings.json",
        sample: "gemini.settings.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: Some(&["search_docs", "deploy_preview"]),
        exclude: &["deploy_preview"],
    },
    Case {
        rel: ".zed/settings.json",
        sample: "zed.settings.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".roo/mcp.json",
        sample: "roo.mcp.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &["deploy_preview"],
    },
    Case {
        rel: "opencode.jsonc",
        sample: "opencode.jsonc",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".kiro/settings/mcp.json",
        sample: "kiro.mcp.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &["deploy_preview"],
    },
    Case {
        rel: ".amazonq/mcp.json",
        sample: "amazonq.mcp.json",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".continue/mcpServers/fixture.yaml",
        sample: "continue.yaml",
        user: None,
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".config/goose/config.yaml",
        sample: "goose.config.yaml",
        user: Some("goose"),
        arg: "SAMPLE_SECRET",
        env: FORWARDED,
        include: Some(&["search_docs"]),
        exclude: &[],
    },
    Case {
        rel: ".codeium/windsurf/mcp_config.json",
        sample: "windsurf.mcp_config.json",
        user: Some("windsurf"),
        arg: "SEEN",
        env: SEEN,
        include: None,
        exclude: &[],
    },
    Case {
        rel: ".config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        sample: "cline_mcp_settings.json",
        user: Some("cline"),
        arg: "SEEN",
        env: &[("SEEN", "config")],
        include: None,
        exclude: &[],
    },
];

#[test]
fn servers_shows_each_clients_resolved_launch_and_never_a_secret_value() {
    let fixture = fixture().display().to_string();
    for case in CASES {
        let home = tempfile::tempdir().unwrap();
        let project = match case.user {
            None => project_with(case.rel, case.sample),
            Some(_) => {
                let project = Project::empty();
                place(home.path(), case.rel, &sample(case.sample, project.path()));
                project
            }
        };
        let extra: Vec<&str> = case.user.map(|c| vec!["--user", c]).unwrap_or_default();
        let (doc, out) = servers(&project, &extra, home.path());
        let name = case.sample;
        let fixture_row = row(&doc, "fixture");
        let launch = &fixture_row["launch"];
        assert_eq!(launch["command"], fixture.as_str(), "{name}: {fixture_row}");
        assert_eq!(
            strings(&launch["args"]),
            ["--describe-env", case.arg],
            "{name}: {fixture_row}"
        );
        let want: Vec<(String, String)> = case
            .env
            .iter()
            .map(|(n, f)| (n.to_string(), f.to_string()))
            .collect();
        assert_eq!(env_names(launch), want, "{name}: {fixture_row}");
        assert!(
            same_dir(launch["cwd"].as_str().unwrap(), project.path()),
            "{name}: {fixture_row}"
        );
        assert_eq!(fixture_row["launch_error"], Value::Null, "{name}");
        assert_eq!(fixture_row["guarded"], false, "{name}");
        let filter = &fixture_row["filter"];
        match case.include {
            Some(include) => assert_eq!(strings(&filter["include"]), include, "{name}"),
            None => assert_eq!(filter["include"], Value::Null, "{name}"),
        }
        assert_eq!(strings(&filter["exclude"]), case.exclude, "{name}");
        assert!(!out.contains(SECRET), "{name} showed the secret:\n{out}");
        assert!(out.contains("run      "), "{name}: {out}");
    }
}

#[test]
fn servers_redacts_secrets_in_args_and_urls_and_shows_header_names_only() {
    let project = project_with(".mcp.json", "claude-code.launch.mcp.json");
    std::fs::create_dir(project.path().join("tools")).unwrap();
    let home = tempfile::tempdir().unwrap();
    let (doc, out) = servers(&project, &[], home.path());
    assert!(!out.contains(SECRET), "{out}");
    let local = &row(&doc, "local")["launch"];
    assert_eq!(
        strings(&local["args"]),
        ["--describe-env", "SEEN", "--token=${SAMPLE_SECRET}"]
    );
    assert_eq!(
        env_names(local),
        [
            ("MODE".to_string(), "config".to_string()),
            ("SEEN".to_string(), "expanded".to_string())
        ]
    );
    assert!(same_dir(
        local["cwd"].as_str().unwrap(),
        &project.path().join("tools")
    ));
    let remote = row(&doc, "remote");
    assert_eq!(remote["transport"], "streamable-http");
    let launch = &remote["launch"];
    assert_eq!(
        launch["url"],
        "https://mcp.example.com/mcp?key=${SAMPLE_SECRET}&region=eu"
    );
    let headers: Vec<(String, Vec<String>)> = launch["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| (h["name"].as_str().unwrap().into(), strings(&h["variables"])))
        .collect();
    assert_eq!(
        headers,
        [
            (
                "Authorization".to_string(),
                vec!["SAMPLE_SECRET".to_string()]
            ),
            ("X-Mode".to_string(), vec![])
        ]
    );
    // A header value is never shown, even one written in the config.
    assert!(!out.contains("plain"), "{out}");
    // A static Authorization header wins over any login.
    assert_eq!(launch["login_token"], false);
    // The human table shows the same, quoted as a shell would need it.
    assert!(
        out.contains("'--token=${SAMPLE_SECRET}'"),
        "the table lacks the redacted argument:\n{out}"
    );
    assert!(out.contains("headers  Authorization, X-Mode"), "{out}");
}

#[test]
fn an_unset_variable_marks_only_its_row_unresolved_and_the_listing_still_succeeds() {
    let project = project_with(".mcp.json", "claude-code.launch.mcp.json");
    let home = tempfile::tempdir().unwrap();
    let (doc, out) = servers(&project, &[], home.path());
    let broken = row(&doc, "needs-unset");
    assert_eq!(broken["launch"], Value::Null, "{broken}");
    let why = broken["launch_error"].as_str().unwrap();
    assert!(
        why.contains("MCP_LOCK_SAMPLE_UNSET is not set (used in args[1])"),
        "{why}"
    );
    assert!(out.contains("unresolved: "), "{out}");
    // The other rows are resolved.
    for name in ["local", "remote", "wrapped"] {
        assert!(row(&doc, name)["launch"].is_object(), "{name}: {doc}");
    }
    // A skipped entry has no launch, only its reason.
    let parked = row(&doc, "parked");
    assert_eq!(parked["launch"], Value::Null);
    assert_eq!(parked["launch_error"], Value::Null);
    assert!(parked["skipped"].is_string(), "{parked}");
}

#[test]
fn a_wrapped_entry_shows_the_server_the_guard_starts_and_that_it_is_guarded() {
    let project = project_with(".mcp.json", "claude-code.launch.mcp.json");
    let home = tempfile::tempdir().unwrap();
    let (doc, out) = servers(&project, &[], home.path());
    let wrapped = row(&doc, "wrapped");
    assert_eq!(wrapped["guarded"], true, "{wrapped}");
    assert_eq!(
        wrapped["launch"]["command"],
        fixture().display().to_string().as_str()
    );
    assert_eq!(
        strings(&wrapped["launch"]["args"]),
        ["--instructions", "guarded"]
    );
    assert!(out.contains("launched through `mcp-lock guard`"), "{out}");
    assert_eq!(row(&doc, "local")["guarded"], false);
}

#[test]
fn a_remote_entry_shows_header_names_and_whether_a_login_token_would_be_sent() {
    let project = project_with(".vscode/mcp.json", "vscode.remote.mcp.json");
    let home = tempfile::tempdir().unwrap();
    let token = "sample-access-token-5521";
    let record = serde_json::json!({
        "resource": "https://login.example.com/mcp",
        "issuer": "https://auth.example.com/",
        "token_endpoint": "https://auth.example.com/token",
        "client_id": "c1",
        "access_token": token,
        "refresh_token": "sample-refresh-token-7731",
    });
    place(
        home.path(),
        ".config/mcp-lock/oauth/login.json",
        &record.to_string(),
    );
    let (doc, out) = servers(&project, &[], home.path());
    assert!(!out.contains(SECRET) && !out.contains(token), "{out}");
    assert!(!out.contains("sample-refresh-token"), "{out}");
    let remote = &row(&doc, "remote")["launch"];
    assert_eq!(remote["url"], "https://mcp.example.com/mcp");
    assert_eq!(remote["headers"][0]["name"], "Authorization");
    assert_eq!(
        strings(&remote["headers"][0]["variables"]),
        ["SAMPLE_SECRET"]
    );
    assert_eq!(remote["login_token"], false);
    let login = &row(&doc, "login")["launch"];
    assert_eq!(login["headers"], serde_json::json!([]));
    assert_eq!(login["login_token"], true, "{login}");
    assert_eq!(
        strings(&login["login_issuers"]),
        ["https://auth.example.com/"]
    );
    assert!(
        out.contains("token from `mcp-lock login` (https://auth.example.com/)"),
        "{out}"
    );
    // A Claude Code entry of that URL with a headersHelper: the token is sent unless
    // the helper prints an Authorization of its own, which only running it can tell.
    let claude = Project::new(serde_json::json!({
        "login": {"type": "http", "url": "https://login.example.com/mcp",
                  "headersHelper": "echo '{}'"}
    }));
    let (doc, out) = servers(&claude, &[], home.path());
    assert_eq!(row(&doc, "login")["launch"]["login_token"], true);
    assert!(
        out.contains("unless its headersHelper prints an Authorization header"),
        "{out}"
    );
}

#[test]
fn a_codex_remote_entry_shows_the_headers_its_variables_fill() {
    let project = project_with(".codex/config.toml", "codex.remote.config.toml");
    let home = tempfile::tempdir().unwrap();
    let (doc, out) = servers(&project, &[], home.path());
    assert!(!out.contains(SECRET), "{out}");
    let launch = &row(&doc, "remote")["launch"];
    let mut names: Vec<String> = launch["headers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|h| h["name"].as_str().unwrap().to_string())
        .collect();
    names.sort();
    assert_eq!(
        names,
        ["Authorization", "X-Api-Key", "X-Region"],
        "{launch}"
    );
    assert_eq!(launch["login_token"], false);
}

#[test]
fn a_wrapped_entry_shows_the_pinned_version_the_guard_starts_and_a_wrapped_remote_is_guarded() {
    let dir = tempfile::tempdir().unwrap();
    let project = Project::at(dir);
    let home = tempfile::tempdir().unwrap();
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("mcp.lock.example"),
        project.path().join("mcp.lock"),
    )
    .unwrap();
    place(
        project.path(),
        ".mcp.json",
        r#"{"mcpServers": {
  "memory": {"command": "npx", "args": ["-y", "@modelcontextprotocol/server-memory"]},
  "docs": {"type": "http", "url": "https://docs.example.com/mcp"}
}}"#,
    );
    let home_text = home.path().display().to_string();
    let config = home.path().join(".config").display().to_string();
    project
        .run_env(
            &["wrap"],
            &[("HOME", &home_text), ("XDG_CONFIG_HOME", &config)],
        )
        .expect(0);
    let (doc, out) = servers(&project, &[], home.path());
    let memory = row(&doc, "memory");
    assert_eq!(memory["guarded"], true, "{memory}");
    // The guard starts the version the lock pins, not the floating spec.
    assert_eq!(
        strings(&memory["launch"]["args"]),
        ["-y", "@modelcontextprotocol/server-memory@2026.8.31"],
        "{memory}"
    );
    assert!(
        out.contains("run      npx -y @modelcontextprotocol/server-memory@2026.8.31"),
        "{out}"
    );
    let docs = row(&doc, "docs");
    assert_eq!(docs["guarded"], true, "{docs}");
    assert_eq!(docs["launch"]["url"], "https://docs.example.com/mcp");
}

#[test]
fn servers_counts_an_env_files_variables_shows_what_a_host_lets_the_server_inherit_and_a_headers_helper()
 {
    let home = tempfile::tempdir().unwrap();
    // VS Code: the envFile counted, never its names or values; a name the entry's env
    // sets too is the entry's.
    let vscode = project_with(".vscode/mcp.json", "vscode-envfile.mcp.json");
    std::fs::write(
        vscode.path().join(".env"),
        format!("FROM_FILE={SECRET}\nSHADOWED=file\n"),
    )
    .unwrap();
    let (doc, both) = servers(&vscode, &[], home.path());
    let launch = &row(&doc, "fixture")["launch"];
    assert!(env_names(launch).is_empty(), "{launch}");
    assert_eq!(launch["env_file_variables"], 2);
    assert!(
        launch["env_file"]
            .as_str()
            .is_some_and(|f| f.ends_with("/.env")),
        "{launch}"
    );
    assert_eq!(launch["inherit"], "all");
    let overridden = &row(&doc, "overridden")["launch"];
    assert_eq!(
        env_names(overridden),
        [("SHADOWED".to_string(), "config".to_string())]
    );
    assert_eq!(overridden["env_file_variables"], 1);
    assert!(both.contains("(2 more variables when it starts)"), "{both}");
    assert!(!both.contains("FROM_FILE (envFile)"), "{both}");
    assert!(!both.contains(SECRET), "{both}");
    // Codex: only its defaults and env_vars are inherited, and they are listed.
    let codex = project_with(".codex/config.toml", "codex-inherit.config.toml");
    let (doc, both) = servers(&codex, &[], home.path());
    let launch = &row(&doc, "forwarded")["launch"];
    assert_eq!(launch["inherit"], "listed");
    let inherited = strings(&launch["inherited"]);
    assert!(
        inherited.iter().any(|n| n == "PATH") && inherited.iter().any(|n| n == "SAMPLE_SECRET"),
        "{inherited:?}"
    );
    assert!(both.contains("inherits only "), "{both}");
    // Gemini CLI: all but what looks like a secret.
    let gemini = project_with(".gemini/settings.json", "gemini-redacted.settings.json");
    let (doc, _) = servers(&gemini, &[], home.path());
    assert_eq!(row(&doc, "fixture")["launch"]["inherit"], "redacted");
    // Claude Code: a headersHelper is shown as there, never run to show it.
    let claude = Project::new(serde_json::json!({
        "remote": {"type": "http", "url": "http://127.0.0.1:9/mcp",
                   "headersHelper": "touch ran-the-helper; echo '{}'"}
    }));
    let (doc, both) = servers(&claude, &[], home.path());
    assert_eq!(row(&doc, "remote")["launch"]["headers_helper"], true);
    assert!(both.contains("headersHelper"), "{both}");
    assert!(!claude.path().join("ran-the-helper").exists());
}

#[test]
fn servers_never_shows_the_lines_of_the_file_an_env_file_points_at() {
    let home = tempfile::tempdir().unwrap();
    let project = project_with(".vscode/mcp.json", "vscode-envfile.mcp.json");
    // An envFile that is a private key: its base64 lines end in `=`, which VS Code's
    // parser reads as names.
    let line = "b3BlbnNzaC1rZXktdjEAAAAABG5vbmUAAAAEbm9uZQAAAAAAAAABAAAAMwAAAAtz";
    std::fs::write(
        project.path().join(".env"),
        format!("-----BEGIN OPENSSH PRIVATE KEY-----\n{line}==\nFROM_FILE=v\n-----END OPENSSH PRIVATE KEY-----\n"),
    )
    .unwrap();
    let (doc, both) = servers(&project, &[], home.path());
    assert!(!both.contains(line), "{both}");
    assert!(env_names(&row(&doc, "fixture")["launch"]).is_empty());
}
