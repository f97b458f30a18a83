//! `mcp-lock wrap` and `unwrap` through the real binary: text-level edits, backups,
//! byte-exact round trips, and pins that do not move.

use crate::common;

use std::os::unix::fs::PermissionsExt;
use std::path::Path;

use common::{Project, fixture_entry};
use serde_json::{Value, json};

/// Several stdio shapes and a remote entry, formatted the way people write them.
const CLAUDE: &str = r#"{
  "mcpServers": {
    "github": {
      "command": "npx",
      "args": ["-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }
    },
    "memory": {
      "command": "mcp-server-memory"
    },
    "empty": { "command": "srv", "args": [] },
    "odd": {
      "command": "python3",
      "args": [
            "-m",
              "my_server",
        "--port",   "0"
      ]
    },
    "escaped": {
      "env": {"NAME": "caf\u00e9"},
      "command": "\/opt\/caf\u00e9\/bin\/server",
      "args": ["--quote", "say \"hi\""]
    },
    "remote": { "type": "http", "url": "https://example.com/mcp" }
  }
}
"#;

/// A VS Code config: comments, trailing commas, `type: stdio`, inputs.
const VSCODE: &str = r#"// Project MCP servers
{
  "inputs": [
    { "type": "promptString", "id": "token", "password": true, },
  ],
  "servers": {
    /* the file system, read-only */
    "fs": {
      "type": "stdio",
      "command": "npx", // pinned in mcp.lock
      "args": [
        "-y",
        "@modelcontextprotocol/server-filesystem",
        "${workspaceFolder}", // the project
      ],
    },
    "time": {"type": "stdio", "command": "uvx", "args": ["mcp-server-time"],},
  },
}
"#;

/// A project holding `text` at `rel`, and no other config.
fn project_with(rel: &str, text: &str) -> Project {
    let project = Project::empty();
    let path = project.path().join(rel);
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, text).unwrap();
    project
}

fn read(project: &Project, rel: &str) -> String {
    std::fs::read_to_string(project.path().join(rel)).unwrap()
}

fn backup(project: &Project, rel: &str) -> Option<String> {
    std::fs::read_to_string(project.path().join(format!("{rel}.mcp-lock.bak"))).ok()
}

/// The server table of a `.mcp.json`.
fn servers(text: &str) -> Value {
    serde_json::from_str::<Value>(text).unwrap()["mcpServers"].clone()
}

#[test]
fn wrap_then_unwrap_restores_a_claude_config_byte_for_byte() {
    let project = project_with(".mcp.json", CLAUDE);
    let run = project.run(&["wrap"]);
    run.expect(0);
    let wrapped = read(&project, ".mcp.json");
    assert_eq!(backup(&project, ".mcp.json").as_deref(), Some(CLAUDE));

    // Only command and args values changed; the original command token is kept as is.
    for fragment in [
        r#""command": "mcp-lock",
      "args": ["guard", "github", "--", "npx", "-y", "@modelcontextprotocol/server-github"],
      "env": { "GITHUB_TOKEN": "${GITHUB_TOKEN}" }"#,
        r#""command": "mcp-lock", "args": ["guard", "memory", "--", "mcp-server-memory"]
    },"#,
        r#"{ "command": "mcp-lock", "args": ["guard", "empty", "--", "srv"] }"#,
        r#""args": ["guard", "odd", "--", "python3", 
            "-m",
              "my_server",
        "--port",   "0"
      ]"#,
        r#""args": ["guard", "escaped", "--", "\/opt\/caf\u00e9\/bin\/server", "--quote", "say \"hi\""]"#,
        r#""remote": {"command": "mcp-lock", "args": ["guard", "remote", "--lock", ""#,
    ] {
        assert!(wrapped.contains(fragment), "{fragment}\nnot in\n{wrapped}");
    }
    let parsed = servers(&wrapped);
    assert_eq!(parsed["escaped"]["args"][3], "/opt/café/bin/server");
    assert_eq!(parsed["escaped"]["env"]["NAME"], "café");

    let stderr = run.stderr();
    assert!(
        stderr.contains("Wrapping github (npx -y @modelcontextprotocol/server-github)"),
        "{stderr}"
    );
    // The remote entry's URL moved to the sidecar its guard launch names.
    assert!(
        stderr.contains("Wrapping remote (https://example.com/mcp)"),
        "{stderr}"
    );
    assert!(!wrapped.contains("https://example.com/mcp"), "{wrapped}");
    assert!(read(&project, ".mcp.json.mcp-lock.remote.json").contains("https://example.com/mcp"));
    assert!(
        stderr.contains("Wrapped 6 servers in .mcp.json (backup: .mcp.json.mcp-lock.bak)"),
        "{stderr}"
    );

    let run = project.run(&["unwrap"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), CLAUDE);
    assert_eq!(backup(&project, ".mcp.json"), None);
    assert!(run.stderr().contains("byte for byte"), "{}", run.stderr());
}

#[test]
fn wrap_then_unwrap_restores_a_vscode_config_with_comments_and_trailing_commas() {
    let project = project_with(".vscode/mcp.json", VSCODE);
    project.run(&["wrap"]).expect(0);
    let wrapped = read(&project, ".vscode/mcp.json");
    for kept in [
        "// Project MCP servers\n",
        "/* the file system, read-only */",
        r#""command": "mcp-lock", // pinned in mcp.lock"#,
        r#""${workspaceFolder}", // the project"#,
        r#"{"type": "stdio", "command": "mcp-lock", "args": ["guard", "time", "--", "uvx", "mcp-server-time"],},"#,
        "\n  },\n}\n",
    ] {
        assert!(wrapped.contains(kept), "{kept}\nnot in\n{wrapped}");
    }
    assert!(wrapped.contains(r#""args": ["guard", "fs", "--", "npx", "#));

    project.run(&["unwrap"]).expect(0);
    assert_eq!(read(&project, ".vscode/mcp.json"), VSCODE);
}

#[test]
fn unwrap_in_place_without_the_backup_is_the_inverse_of_wrap() {
    // Without `"args": []` right after a command, which reads as the member wrap adds.
    let original = CLAUDE.replace(
        r#"{ "command": "srv", "args": [] }"#,
        r#"{ "args": [], "command": "srv" }"#,
    );
    let project = project_with(".mcp.json", &original);
    project.run(&["wrap"]).expect(0);
    std::fs::remove_file(project.path().join(".mcp.json.mcp-lock.bak")).unwrap();
    let run = project.run(&["unwrap"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), original);
    assert!(run.stderr().contains("(in place)"), "{}", run.stderr());
}

#[test]
fn unwrap_after_the_user_added_a_server_keeps_it_and_restores_the_others() {
    let project = project_with(".mcp.json", CLAUDE);
    project.run(&["wrap"]).expect(0);
    let added = r#"    "notes": { "command": "notes-server", "args": ["--db", "n.db"] },
"#;
    let edited = read(&project, ".mcp.json").replacen(
        "    \"remote\"",
        &format!("{added}    \"remote\""),
        1,
    );
    std::fs::write(project.path().join(".mcp.json"), &edited).unwrap();

    let run = project.run(&["unwrap"]);
    run.expect(0);
    let expected = CLAUDE.replacen("    \"remote\"", &format!("{added}    \"remote\""), 1);
    assert_eq!(read(&project, ".mcp.json"), expected);
    // The backup from before wrap is the only copy of the original; it stays.
    assert_eq!(backup(&project, ".mcp.json").as_deref(), Some(CLAUDE));
    assert!(run.stderr().contains("still holds"), "{}", run.stderr());
}

#[test]
fn wrapping_again_after_adding_a_server_keeps_the_original_backup_and_unwrap_restores_both() {
    let project = project_with(".mcp.json", CLAUDE);
    project.run(&["wrap"]).expect(0);
    let added = r#"    "notes": { "command": "notes-server", "args": ["--db", "n.db"] },
"#;
    let with_notes =
        |text: &str| text.replacen("    \"remote\"", &format!("{added}    \"remote\""), 1);
    std::fs::write(
        project.path().join(".mcp.json"),
        with_notes(&read(&project, ".mcp.json")),
    )
    .unwrap();

    project.run(&["wrap"]).expect(0);
    let parsed = servers(&read(&project, ".mcp.json"));
    assert_eq!(parsed["notes"]["command"], "mcp-lock");
    // The backup is the config before anything was wrapped, the new server included.
    let original = with_notes(CLAUDE);
    assert_eq!(
        backup(&project, ".mcp.json").as_deref(),
        Some(original.as_str())
    );

    let run = project.run(&["unwrap"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), original);
    assert!(run.stderr().contains("byte for byte"), "{}", run.stderr());
    assert_eq!(backup(&project, ".mcp.json"), None);
}

#[test]
fn wrapping_twice_changes_nothing_and_keeps_the_first_backup() {
    let project = project_with(".mcp.json", CLAUDE);
    project.run(&["wrap"]).expect(0);
    let wrapped = read(&project, ".mcp.json");

    let run = project.run(&["wrap"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), wrapped);
    assert_eq!(backup(&project, ".mcp.json").as_deref(), Some(CLAUDE));
    assert!(
        run.stderr().contains(
            ".mcp.json: nothing to do, its 5 stdio servers already launch through the guard"
        ),
        "{}",
        run.stderr()
    );
}

#[test]
fn unwrap_of_a_config_that_is_not_wrapped_has_nothing_to_do() {
    let project = project_with(".mcp.json", CLAUDE);
    let run = project.run(&["unwrap"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), CLAUDE);
    assert!(
        run.stderr()
            .contains(".mcp.json: nothing to do, no wrapped servers"),
        "{}",
        run.stderr()
    );
}

#[test]
fn dry_run_shows_the_changed_lines_and_writes_nothing() {
    let project = project_with(".mcp.json", CLAUDE);
    let run = project.run(&["wrap", "github", "--dry-run"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), CLAUDE);
    assert_eq!(backup(&project, ".mcp.json"), None);
    let stdout = run.stdout();
    assert!(
        stdout.contains("--- .mcp.json\n+++ .mcp.json\n@@ -4,2 +4,2 @@\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n-      \"command\": \"npx\",\n"),
        "{stdout}"
    );
    assert!(
        stdout.contains("\n+      \"args\": [\"guard\", \"github\", \"--\", \"npx\", \"-y\", \"@modelcontextprotocol/server-github\"],\n"),
        "{stdout}"
    );
    assert!(!stdout.contains("memory"), "only github changes: {stdout}");
    assert!(
        run.stderr()
            .contains("Would wrap 1 server in .mcp.json (dry run: nothing written)"),
        "{}",
        run.stderr()
    );

    project.run(&["wrap"]).expect(0);
    let wrapped = read(&project, ".mcp.json");
    let run = project.run(&["unwrap", "--dry-run"]);
    run.expect(0);
    assert_eq!(read(&project, ".mcp.json"), wrapped);
    assert!(backup(&project, ".mcp.json").is_some());
    assert!(run.stdout().contains("+      \"command\": \"npx\",\n"));
}

#[test]
fn wrap_changes_only_the_named_servers() {
    let project = project_with(".mcp.json", CLAUDE);
    project.run(&["wrap", "memory", "odd"]).expect(0);
    let parsed = servers(&read(&project, ".mcp.json"));
    assert_eq!(parsed["memory"]["command"], "mcp-lock");
    assert_eq!(parsed["odd"]["command"], "mcp-lock");
    assert_eq!(parsed["github"]["command"], "npx");

    project.run(&["unwrap", "odd"]).expect(0);
    let parsed = servers(&read(&project, ".mcp.json"));
    assert_eq!(parsed["odd"]["command"], "python3");
    assert_eq!(parsed["memory"]["command"], "mcp-lock");
    project.run(&["unwrap"]).expect(0);
    assert_eq!(read(&project, ".mcp.json"), CLAUDE);
}

#[test]
fn an_unknown_server_is_an_error_naming_the_known_ones() {
    let project = project_with(".mcp.json", CLAUDE);
    let run = project.run(&["wrap", "gihtub"]);
    run.expect(2);
    assert!(
        run.stderr().contains(
            "unknown server \"gihtub\"; the config defines: empty, escaped, github, memory, odd, remote"
        ),
        "{}",
        run.stderr()
    );
    assert_eq!(read(&project, ".mcp.json"), CLAUDE);
    assert_eq!(backup(&project, ".mcp.json"), None);
}

#[test]
fn an_invalid_config_is_an_error_naming_file_and_line_and_is_left_untouched() {
    let broken = "{\n  \"mcpServers\": {\n    \"a\": {\"command\": }\n  }\n}\n";
    let project = project_with(".mcp.json", broken);
    let run = project.run(&["wrap"]);
    run.expect(2);
    assert!(
        run.stderr().contains("error: .mcp.json:3:"),
        "{}",
        run.stderr()
    );
    assert_eq!(run.stderr().lines().count(), 1, "{}", run.stderr());
    assert_eq!(read(&project, ".mcp.json"), broken);
    assert_eq!(backup(&project, ".mcp.json"), None);
}

#[test]
fn without_a_config_wrap_says_where_it_looked() {
    let project = Project::empty();
    let run = project.run(&["wrap"]);
    run.expect(2);
    assert!(
        run.stderr().contains("no MCP client config found"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_config_outside_the_project_names_the_lock_and_itself_by_absolute_path() {
    let project = project_with(".mcp.json", "{\"mcpServers\": {}}\n");
    let desktop = tempfile::tempdir().unwrap();
    let config = desktop.path().join("claude_desktop_config.json");
    std::fs::write(&config, r#"{"mcpServers": {"m": {"command": "srv"}}}"#).unwrap();
    project
        .run(&[
            "--config",
            config.to_str().unwrap(),
            "wrap",
            "--guard-command",
            "/opt/bin/mcp-lock",
        ])
        .expect(0);
    let lock = project.path().join("mcp.lock");
    assert_eq!(
        std::fs::read_to_string(&config).unwrap(),
        format!(
            r#"{{"mcpServers": {{"m": {{"command": "/opt/bin/mcp-lock", "args": ["guard", "m", "--lock", {}, "--config", {}, "--", "srv"]}}}}}}"#,
            json!(lock.to_str().unwrap()),
            json!(config.to_str().unwrap())
        )
    );
}

#[test]
fn a_lock_other_than_the_default_is_written_as_an_absolute_path() {
    let project = project_with(".mcp.json", r#"{"mcpServers": {"m": {"command": "srv"}}}"#);
    project
        .run(&["--lock", "locks/../locks/team.lock", "wrap"])
        .expect(0);
    let lock = project.path().join("locks/team.lock");
    assert_eq!(
        read(&project, ".mcp.json"),
        format!(
            r#"{{"mcpServers": {{"m": {{"command": "mcp-lock", "args": ["guard", "m", "--lock", {}, "--", "srv"]}}}}}}"#,
            json!(lock.to_str().unwrap())
        )
    );
    // unwrap reads the same --lock back from the file and restores the backup.
    let run = project.run(&["unwrap"]);
    run.expect(0);
    assert!(run.stderr().contains("byte for byte"), "{}", run.stderr());
}

/// The issue's layout: wrap run in a home directory that holds both the project and
/// Claude Desktop's config, which starts its servers in `/`.
#[test]
fn a_wrapped_desktop_entry_starts_from_the_root_directory() {
    let home = Project::empty();
    std::fs::create_dir_all(home.path().join("proj")).unwrap();
    std::fs::create_dir_all(home.path().join(".config/Claude")).unwrap();
    std::fs::create_dir_all(home.path().join("bin")).unwrap();
    std::os::unix::fs::symlink(common::bin(), home.path().join("bin/mcp-lock")).unwrap();
    let config = home
        .path()
        .join(".config/Claude/claude_desktop_config.json");
    std::fs::write(
        &config,
        serde_json::to_string_pretty(&json!({"mcpServers": {"fixture": fixture_entry(&[])}}))
            .unwrap(),
    )
    .unwrap();
    let lock = home.path().join("proj/mcp.lock");
    let global = [
        "--config",
        ".config/Claude/claude_desktop_config.json",
        "--lock",
        lock.to_str().unwrap(),
    ];
    home.run(&[&global[..], &["update", "--yes"]].concat())
        .expect(0);
    // As in its --help, with a guard command given by a relative path.
    home.run(&[&global[..], &["wrap", "--guard-command", "bin/mcp-lock"]].concat())
        .expect(0);

    let text = std::fs::read_to_string(&config).unwrap();
    let entry = &servers(&text)["fixture"];
    let command = entry["command"].as_str().unwrap();
    let args: Vec<&str> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap())
        .collect();
    assert_eq!(
        Path::new(command),
        home.path().join("bin/mcp-lock"),
        "{text}"
    );
    assert_eq!(&args[..2], ["guard", "fixture"], "{text}");
    for flag in ["--lock", "--config"] {
        let i = args.iter().position(|a| *a == flag).expect(flag);
        assert!(Path::new(args[i + 1]).is_absolute(), "{flag}: {text}");
    }

    let mut agent = common::McpPipe::spawn(Path::new(command), &args, Path::new("/"), &[]);
    agent.initialize();
    let tools = agent.list_tools();
    assert!(!tools.is_empty(), "stderr: {}", agent.stderr());
    let pinned = std::fs::read_to_string(&lock).unwrap();
    for tool in &tools {
        let name = tool["name"].as_str().unwrap();
        assert!(
            pinned.contains(&format!("name = {}", json!(name))),
            "{name}"
        );
    }
    agent.close();
    let status = agent.wait_exit(std::time::Duration::from_secs(10));
    assert_eq!(status.and_then(|s| s.code()), Some(0), "{}", agent.stderr());
}

#[test]
fn wrap_keeps_the_permissions_of_the_config_and_gives_them_to_the_backup() {
    let project = project_with(".mcp.json", CLAUDE);
    let path = project.path().join(".mcp.json");
    std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600)).unwrap();
    project.run(&["wrap"]).expect(0);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&path), 0o600);
    assert_eq!(mode(&project.path().join(".mcp.json.mcp-lock.bak")), 0o600);
    project.run(&["unwrap"]).expect(0);
    assert_eq!(mode(&path), 0o600);
}

#[test]
fn wrapping_does_not_move_pins_update_and_verify_still_reach_the_fixture() {
    let project = Project::new(json!({ "fixture": fixture_entry(&[]) }));
    project.run(&["update", "--yes"]).expect(0);
    let pinned = project.lock_text().unwrap();

    project.run(&["wrap"]).expect(0);
    let wrapped = servers(&read(&project, ".mcp.json"));
    assert_eq!(wrapped["fixture"]["command"], "mcp-lock");

    project.run(&["verify"]).expect(0);
    project.run(&["update", "--yes"]).expect(0);
    let lock = project.lock_text().unwrap();
    assert_eq!(lock, pinned, "wrapping changed the lock");
    let fixture = common::fixture().display().to_string();
    assert!(
        lock.lines()
            .any(|l| l == format!("command = {}", json!(fixture))),
        "{lock}"
    );
    assert!(lock.lines().any(|l| l == "args = []"), "{lock}");
}

#[test]
fn a_config_the_guard_would_not_discover_is_named_with_config() {
    let project = project_with(".mcp.json", "{\"mcpServers\": {}}\n");
    std::fs::create_dir(project.path().join("sub")).unwrap();
    let config = project.path().join("sub/custom.json");
    std::fs::write(&config, r#"{"mcpServers": {"m": {"command": "srv"}}}"#).unwrap();
    project
        .run(&[
            "--config",
            "sub/custom.json",
            "wrap",
            "--guard-command",
            "/opt/bin/mcp-lock",
        ])
        .expect(0);
    let text = std::fs::read_to_string(&config).unwrap();
    let wrapped: serde_json::Value = serde_json::from_str(&text).unwrap();
    let args = &wrapped["mcpServers"]["m"]["args"];
    // Its client may start the guard anywhere, so the lock is named too.
    assert_eq!(args[2], "--lock", "{text}");
    assert_eq!(
        Path::new(args[3].as_str().unwrap()),
        project.path().join("mcp.lock")
    );
    assert_eq!(args[4], "--config", "{text}");
    assert_eq!(Path::new(args[5].as_str().unwrap()), config);
}

/// The other clients' JSON shapes and Codex's TOML, each with comments and the
/// launch forms that client has.
const SHAPES: [(&str, &str); 6] = [
    (
        ".zed/settings.json",
        r#"// Zed settings
{
  "theme": "One Dark",
  "context_servers": {
    "fs": { "command": "npx", "args": ["-y", "server-fs"] }, // current form
    "old": {
      /* the older nested form */
      "command": { "path": "srv", "args": ["--x"], "env": {} }
    },
    "bare": { "command": "srv2" }
  }
}
"#,
    ),
    (
        "opencode.jsonc",
        r#"{
  "$schema": "https://opencode.ai/config.json",
  "mcp": {
    // an argv array
    "fs": { "type": "local", "command": ["npx", "-y", "server-fs"], "enabled": true },
    "one": {
      "type": "local",
      "command": [
        "srv"
      ]
    },
    "web": { "type": "remote", "url": "https://example.com/mcp" }
  }
}
"#,
    ),
    (
        ".gemini/settings.json",
        r#"{
  // Gemini CLI
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server-fs"], "env": { "T": "$TOKEN" }, "trust": false },
    "web": { "httpUrl": "https://example.com/mcp" }
  }
}
"#,
    ),
    (
        ".roo/mcp.json",
        r#"{"mcpServers": {"fs": {"command": "npx", "args": ["-y", "server-fs"], "disabled": true, "alwaysAllow": []}}}
"#,
    ),
    (
        ".kiro/settings/mcp.json",
        r#"{
  "mcpServers": {
    "fs": { "command": "npx", "args": ["-y", "server-fs"], "disabledTools": ["write"] }
  }
}
"#,
    ),
    (
        ".codex/config.toml",
        r#"# Codex CLI settings
model = "o3"

[mcp_servers]
x = { command = "srv3" }

[mcp_servers.fs]
# the file system
command = "npx"  # from npm
args = ["-y", "server-fs"]
env_vars = ["TOKEN"]

[mcp_servers.literal]
args = [
  '--x',
]
command = 'srv'

[mcp_servers.bare]
command = "srv2"
startup_timeout_sec = 20

[mcp_servers.web]
url = "https://example.com/mcp"
bearer_token_env_var = "TOKEN"
"#,
    ),
];

/// The servers mcp-lock reads from a project, with the hosts and transports.
fn read_servers(project: &Project) -> Vec<(String, String, String)> {
    mcp_lock::servers::config::ProjectConfig::load(project.path(), None)
        .unwrap()
        .servers
        .iter()
        .map(|s| {
            (
                s.name.clone(),
                s.transport_name().to_string(),
                format!("{:?}", s.transport),
            )
        })
        .collect()
}

#[test]
fn wrap_then_unwrap_restores_every_json_shape_and_codex_toml_byte_for_byte() {
    for (rel, text) in SHAPES {
        let project = project_with(rel, text);
        let before = read_servers(&project);
        project.run(&["wrap"]).expect(0);
        let wrapped = read(&project, rel);
        assert_ne!(wrapped, text, "{rel}: nothing wrapped");
        assert!(wrapped.contains("\"guard\""), "{rel}:\n{wrapped}");
        // Comments and other settings stay; the entries read as the same servers.
        // (A remote entry's URL moves to the sidecar: its "//" is no comment.)
        for line in text
            .lines()
            .filter(|l| (l.contains("//") || l.contains('#')) && !l.contains("://"))
        {
            let comment = line.split("//").nth(1).or_else(|| line.split('#').nth(1));
            if let Some(comment) = comment {
                assert!(
                    wrapped.contains(comment),
                    "{rel}: lost {comment:?}\n{wrapped}"
                );
            }
        }
        assert_eq!(read_servers(&project), before, "{rel}:\n{wrapped}");

        project.run(&["unwrap"]).expect(0);
        assert_eq!(read(&project, rel), text, "{rel}: unwrap from the backup");

        // Without the backup, the in-place inverse gives the same bytes.
        project.run(&["wrap"]).expect(0);
        std::fs::remove_file(project.path().join(format!("{rel}.mcp-lock.bak"))).unwrap();
        project.run(&["unwrap"]).expect(0);
        assert_eq!(read(&project, rel), text, "{rel}: unwrap in place");
    }
}

#[test]
fn codex_toml_is_wrapped_as_toml_with_the_original_command_token_kept() {
    let (rel, text) = SHAPES[5];
    let project = project_with(rel, text);
    project.run(&["wrap"]).expect(0);
    let wrapped = read(&project, rel);
    for fragment in [
        "command = \"mcp-lock\"  # from npm\nargs = [\"guard\", \"fs\", \"--\", \"npx\", \"-y\", \"server-fs\"]",
        "args = [\"guard\", \"literal\", \"--\", 'srv', \n  '--x',\n]\ncommand = \"mcp-lock\"",
        "command = \"mcp-lock\"\nargs = [\"guard\", \"bare\", \"--\", \"srv2\"]\nstartup_timeout_sec = 20",
        "x = { command = \"mcp-lock\", args = [\"guard\", \"x\", \"--\", \"srv3\"] }",
        "url = \"https://example.com/mcp\"",
    ] {
        assert!(wrapped.contains(fragment), "{fragment}\nnot in\n{wrapped}");
    }
    toml::from_str::<toml::Table>(&wrapped).expect("still TOML");
}

#[test]
fn opencode_argv_commands_get_the_guard_in_front() {
    let (rel, text) = SHAPES[1];
    let project = project_with(rel, text);
    project.run(&["wrap"]).expect(0);
    let wrapped = read(&project, rel);
    assert!(
        wrapped.contains(
            r#""command": ["mcp-lock", "guard", "fs", "--", "npx", "-y", "server-fs"], "enabled": true"#
        ),
        "{wrapped}"
    );
    assert!(
        wrapped.contains(
            "\"command\": [\n        \"mcp-lock\", \"guard\", \"one\", \"--\", \"srv\"\n      ]"
        ),
        "{wrapped}"
    );
}

#[test]
fn wrapping_claude_json_changes_only_the_user_and_this_projects_entries() {
    let home = tempfile::tempdir().unwrap();
    let project = Project::empty();
    let key = std::fs::canonicalize(project.path()).unwrap();
    let text = format!(
        r#"{{
  "numStartups": 3,
  "mcpServers": {{ "mine": {{ "command": "srv-user" }} }},
  "projects": {{
    {key}: {{ "mcpServers": {{ "here": {{ "command": "srv-local", "args": [] }} }} }},
    "/other/project": {{ "mcpServers": {{ "there": {{ "command": "srv-other" }} }} }}
  }}
}}
"#,
        key = json!(key.display().to_string())
    );
    let claude = home.path().join(".claude.json");
    std::fs::write(&claude, &text).unwrap();
    let home_text = home.path().display().to_string();
    let env = [("HOME", home_text.as_str())];
    project
        .run_env(&["--user", "claude-code", "wrap"], &env)
        .expect(0);
    let wrapped = std::fs::read_to_string(&claude).unwrap();
    let doc: Value = serde_json::from_str(&wrapped).unwrap();
    assert_eq!(doc["mcpServers"]["mine"]["command"], "mcp-lock");
    let here = &doc["projects"][key.display().to_string()]["mcpServers"]["here"];
    assert_eq!(here["command"], "mcp-lock");
    assert_eq!(
        doc["projects"]["/other/project"]["mcpServers"]["there"]["command"],
        "srv-other"
    );
    // The guard is told which file to read.
    assert!(
        here["args"]
            .as_array()
            .unwrap()
            .iter()
            .any(|a| a.as_str() == claude.to_str()),
        "{wrapped}"
    );
    project
        .run_env(&["--user", "claude-code", "unwrap"], &env)
        .expect(0);
    assert_eq!(std::fs::read_to_string(&claude).unwrap(), text);
}

#[test]
fn yaml_configs_are_refused_saying_what_to_do_by_hand() {
    let goose = "extensions:\n  fs:\n    type: stdio\n    cmd: npx\n    args: [-y, server-fs]\n";
    let project = project_with("goose.yaml", goose);
    let run = project.run(&["--config", "goose.yaml", "wrap"]);
    run.expect(2);
    let stderr = run.stderr();
    assert!(
        stderr.contains("does not rewrite YAML configs (Goose)"),
        "{stderr}"
    );
    assert!(stderr.contains("set cmd to mcp-lock"), "{stderr}");
    assert_eq!(read(&project, "goose.yaml"), goose);

    let cont = "mcpServers:\n  - name: fs\n    command: npx\n";
    let project = project_with(".continue/mcpServers/fs.yaml", cont);
    let run = project.run(&["wrap"]);
    run.expect(2);
    assert!(
        run.stderr()
            .contains("does not rewrite YAML configs (Continue)"),
        "{}",
        run.stderr()
    );
    assert_eq!(read(&project, ".continue/mcpServers/fs.yaml"), cont);
}

#[test]
fn two_wraps_of_one_config_at_once_keep_both_edits() {
    let config = r#"{
  "mcpServers": {
    "alpha": { "command": "srv-alpha", "args": ["--a"] },
    "beta": { "command": "srv-beta", "args": ["--b"] }
  }
}
"#;
    for round in 0..10 {
        let project = project_with(".mcp.json", config);
        let runs = [
            project.spawn(&["wrap", "alpha"]),
            project.spawn(&["wrap", "beta"]),
        ];
        for run in runs {
            let output = run.wait_with_output().unwrap();
            assert!(
                output.status.success(),
                "round {round}: {}",
                String::from_utf8_lossy(&output.stderr)
            );
        }
        let text = read(&project, ".mcp.json");
        let parsed = servers(&text);
        for name in ["alpha", "beta"] {
            assert_eq!(
                parsed[name]["command"], "mcp-lock",
                "round {round}: {name} lost its wrap:\n{text}"
            );
        }
        // The backup is the config from before either wrap.
        assert_eq!(backup(&project, ".mcp.json").as_deref(), Some(config));
        project.run(&["unwrap"]).expect(0);
        assert_eq!(read(&project, ".mcp.json"), config, "round {round}");
    }
}
