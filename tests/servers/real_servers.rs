//! The real MCP servers from the npm and PyPI registries, installed by
//! scripts/install-test-servers.sh (which .ci/run calls): pinned, verified converged,
//! and a second update writes the same bytes.

use crate::common;

use std::path::PathBuf;

use common::Project;
use serde_json::{Value, json};

fn servers_dir() -> PathBuf {
    let dir = common::test_servers_dir();
    assert!(
        dir.join("npm/node_modules").is_dir() && dir.join("venv/bin/mcp-server-time").exists(),
        "real MCP servers are not installed in {}; run scripts/install-test-servers.sh (bash .ci/run does)",
        dir.display()
    );
    dir
}

fn npm_entry(dir: &std::path::Path, package: &str, extra: &[&str]) -> Value {
    let main = dir
        .join("npm/node_modules/@modelcontextprotocol")
        .join(package)
        .join("dist/index.js");
    let mut args = vec![main.display().to_string()];
    args.extend(extra.iter().map(|s| s.to_string()));
    json!({"command": "node", "args": args})
}

fn four_servers(project: &std::path::Path) -> Value {
    let dir = servers_dir();
    let mut memory = npm_entry(&dir, "server-memory", &[]);
    memory["env"] = json!({"MEMORY_FILE_PATH": project.join("memory.jsonl").display().to_string()});
    json!({
        "everything": npm_entry(&dir, "server-everything", &["stdio"]),
        "filesystem": npm_entry(&dir, "server-filesystem", &[&project.display().to_string()]),
        "memory": memory,
        "time": {"command": dir.join("venv/bin/mcp-server-time").display().to_string(), "args": ["--local-timezone", "UTC"]},
    })
}

#[test]
fn four_real_servers_are_pinned_verified_converged_and_relocked_byte_identically() {
    let p = Project::new(json!({}));
    p.set_servers(four_servers(p.path()));
    let first = p.run(&["update", "--yes"]);
    first.expect(0);
    let lock = p.lock_text().unwrap();
    // Listed as Claude Code lists them (`.mcp.json`): server-everything offers 16 tools
    // to a client declaring roots and elicitation (form and url).
    for (name, tools) in [
        ("everything", "16 tools, 4 prompts, 2 templates"),
        ("filesystem", "14 tools"),
        ("memory", "9 tools"),
        ("time", "2 tools"),
    ] {
        assert!(
            first
                .stderr()
                .contains(&format!("Pinning {name} [claude-code] ({tools})")),
            "{}",
            first.stderr()
        );
    }
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    let verdicts: Vec<(&str, &str)> = doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .map(|s| (s["name"].as_str().unwrap(), s["verdict"].as_str().unwrap()))
        .collect();
    assert_eq!(
        verdicts,
        [
            ("everything", "converged"),
            ("filesystem", "converged"),
            ("memory", "converged"),
            ("time", "converged")
        ]
    );
    p.run(&["update", "--yes"]).expect(0);
    assert_eq!(
        p.lock_text().unwrap(),
        lock,
        "a second update must write the same bytes"
    );
}

#[test]
fn lock_keeps_protocol_facts_and_fields_no_sdk_models() {
    let p = Project::new(json!({}));
    let dir = servers_dir();
    p.set_servers(json!({"everything": npm_entry(&dir, "server-everything", &["stdio"])}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("protocol_version = \"2025-11-25\""), "{lock}");
    assert!(lock.contains("list_changed = true"));
    assert!(lock.contains("instructions_hash = "));
    assert!(
        lock.contains("\"taskSupport\": \"forbidden\""),
        "execution.taskSupport is kept"
    );
}

/// server-filesystem 2025.7.1 pinned, and the config moved on to 2026.8.31: real
/// drift between two releases.
fn filesystem_upgraded_under_its_pins() -> Project {
    let dir = servers_dir();
    let old = dir.join("npm/node_modules/server-filesystem-2025.7.1/dist/index.js");
    let p = Project::new(json!({}));
    let root = p.path().display().to_string();
    p.set_servers(
        json!({"filesystem": {"command": "node", "args": [old.display().to_string(), root]}}),
    );
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({"filesystem": npm_entry(&dir, "server-filesystem", &[&root])}));
    p
}

#[test]
fn upgrading_a_real_server_release_is_reported_as_drift() {
    let p = filesystem_upgraded_under_its_pins();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let server = &doc["servers"][0];
    assert_eq!(server["verdict"], "stale");
    let changes = server["changes"].as_array().unwrap();
    let find = |tool: &str| {
        changes
            .iter()
            .find(|c| c["tool"] == tool)
            .cloned()
            .unwrap_or_default()
    };
    // 2026.8.31 added two readers and annotated every tool.
    assert_eq!(find("read_text_file")["change"], "added");
    assert_eq!(find("read_media_file")["change"], "added");
    let read_file = find("read_file");
    assert_eq!(read_file["change"], "changed");
    assert_eq!(
        read_file["parts"],
        json!([
            "description",
            "inputSchema",
            "outputSchema",
            "annotations",
            "other"
        ])
    );
    assert_eq!(changes.len(), 14, "{changes:#?}");
    // 2025.7.1 sent empty input schemas (accepting anything), so each tool now
    // requiring a `path` is a new target-selecting input: authority. The one tool
    // without inputs only reworded its description and named its schema dialect
    // (draft-07, using no keyword that draft-07 and the default 2020-12 read
    // differently): semantic.
    assert_eq!(find("create_directory")["class"], "authority");
    let list_allowed = find("list_allowed_directories");
    assert_eq!(list_allowed["class"], "semantic");
    let classes: Vec<&str> = list_allowed["findings"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["class"].as_str().unwrap())
        .collect();
    assert!(classes.contains(&"semantic"), "{classes:?}");
    assert!(
        changes.iter().all(|c| c["action"] == "fail"),
        "{changes:#?}"
    );
    let notes: Vec<&str> = server["server_changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["field"].as_str().unwrap())
        .collect();
    assert!(
        notes.contains(&"list_changed") && notes.contains(&"launch"),
        "{notes:?}"
    );
}

/// server-everything in one of its HTTP modes, kept on loopback by the preload.
fn everything_over_http(mode: &str) -> common::HttpServer {
    let dir = servers_dir();
    let main = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    let preload =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/loopback-listen.cjs");
    let node = which("node");
    common::HttpServer::start(
        &node,
        &[
            "--require",
            &preload.display().to_string(),
            &main.display().to_string(),
            mode,
        ],
        &[],
        None,
    )
}

fn which(program: &str) -> PathBuf {
    std::env::var_os("PATH")
        .and_then(|paths| {
            std::env::split_paths(&paths)
                .map(|p| p.join(program))
                .find(|p| p.is_file())
        })
        .unwrap_or_else(|| panic!("{program} is not on PATH"))
}

fn tool_hashes(lock: &str) -> Vec<String> {
    lock.lines()
        .filter(|l| l.starts_with("hash = "))
        .map(str::to_string)
        .collect()
}

#[test]
fn server_everything_over_streamable_http_and_legacy_sse_pins_the_same_hashes_as_over_stdio() {
    let dir = servers_dir();
    let http = everything_over_http("streamableHttp");
    let sse = everything_over_http("sse");
    let p = Project::new(json!({
        "everything-http": {"type": "http", "url": http.url("/mcp")},
        // An http entry: the legacy transport is found by the spec's detection.
        "everything-sse": {"type": "http", "url": sse.url("/sse")},
        "everything-stdio": npm_entry(&dir, "server-everything", &["stdio"]),
    }));
    let run = p.run(&["update", "--yes"]);
    run.expect(0);
    let lock = p.lock_text().unwrap();
    for name in ["everything-http", "everything-sse", "everything-stdio"] {
        assert!(
            run.stderr().contains(&format!(
                "Pinning {name} [claude-code] (16 tools, 4 prompts, 2 templates)"
            )),
            "{}",
            run.stderr()
        );
    }
    assert!(lock.contains("transport = \"streamable-http\""), "{lock}");
    assert!(lock.contains("transport = \"sse\""), "{lock}");
    // Same client capabilities, same definitions, whatever the transport.
    let hashes = tool_hashes(&lock);
    // 16 tools, 4 prompts and 2 templates each.
    assert_eq!(hashes.len(), 66);
    assert_eq!(hashes[0..22], hashes[22..44]);
    assert_eq!(hashes[22..44], hashes[44..66]);
    let doc = p.run(&["verify", "--format", "json"]).expect(0).json();
    for server in doc["servers"].as_array().unwrap() {
        assert_eq!(server["verdict"], "converged", "{server}");
        assert_eq!(server["tools"], 16, "{server}");
    }
}

/// The Python SDK (mcp 2.3.0) fixture in tests/servers, run by the test venv.
fn python_sdk_server(extra: &[&str]) -> common::HttpServer {
    let python = servers_dir().join("venv/bin/python");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/py_sdk_server.py");
    let mut args = vec![script.display().to_string()];
    args.extend(["--transport", "http"].map(String::from));
    args.extend(extra.iter().map(|s| s.to_string()));
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    common::HttpServer::start(&python, &args, &[], Some("--port-file"))
}

#[test]
fn python_sdk_server_over_http_is_pinned_in_each_era_with_the_same_hashes() {
    let dual = python_sdk_server(&[]);
    let legacy_only = python_sdk_server(&["--legacy-only"]);
    // The newest era a dual-era server speaks: 2026-07-28, over two pages.
    let modern = Project::bare(json!({"py": {"type": "http", "url": dual.url("/mcp")}}));
    modern.run(&["update", "--yes"]).expect(0);
    let modern_lock = modern.lock_text().unwrap();
    assert!(
        modern_lock.contains("protocol_version = \"2026-07-28\""),
        "{modern_lock}"
    );
    assert!(modern_lock.contains("py-sdk-fixture"), "{modern_lock}");
    modern.run(&["verify"]).expect(0);
    // The same server pinned with the handshake, as an agent on 2025-11-25 sees it.
    let handshake = Project::new(json!({"py": {"type": "http", "url": dual.url("/mcp")}}));
    handshake
        .run(&["update", "--yes", "--protocol", "2025-11-25"])
        .expect(0);
    let handshake_lock = handshake.lock_text().unwrap();
    assert!(
        handshake_lock.contains("protocol_version = \"2025-11-25\""),
        "{handshake_lock}"
    );
    handshake.run(&["verify"]).expect(0);
    // A server that knows only the handshake era is found by the fallback.
    let old = Project::new(json!({"py": {"type": "http", "url": legacy_only.url("/mcp")}}));
    old.run(&["update", "--yes"]).expect(0);
    let old_lock = old.lock_text().unwrap();
    assert!(
        old_lock.contains("protocol_version = \"2025-11-25\""),
        "{old_lock}"
    );
    old.run(&["verify"]).expect(0);
    // The SDK orders schema members differently per era; canonical hashes agree.
    let hashes = tool_hashes(&modern_lock);
    assert_eq!(hashes.len(), 3);
    assert_eq!(hashes, tool_hashes(&handshake_lock));
    assert_eq!(hashes, tool_hashes(&old_lock));
    // The dual-era server now refuses the modern era: reported as such, not as drift.
    // (The same origin: an entry moved to another one is not contacted at all.)
    let port = dual.port.to_string();
    drop(dual);
    let _legacy_now = python_sdk_server(&["--legacy-only", "--port", &port]);
    let doc = modern.run(&["verify", "--format", "json"]).expect(3).json();
    let error = doc["servers"][0]["error"].as_str().unwrap().to_string();
    assert!(
        error.contains("no longer speaks protocol 2026-07-28"),
        "{error}"
    );
}

#[test]
fn python_sdk_server_over_stdio_speaks_the_modern_era() {
    let python = servers_dir().join("venv/bin/python");
    let script =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/py_sdk_server.py");
    let entry = |extra: &[&str]| {
        let mut args = vec![
            script.display().to_string(),
            "--transport".into(),
            "stdio".into(),
        ];
        args.extend(extra.iter().map(|s| s.to_string()));
        json!({"command": python.display().to_string(), "args": args})
    };
    let p = Project::bare(json!({"dual": entry(&[]), "old": entry(&["--legacy-only"])}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    let dual = &lock[lock.find("name = \"dual\"").unwrap()..lock.find("name = \"old\"").unwrap()];
    assert!(dual.contains("protocol_version = \"2026-07-28\""), "{lock}");
    let old = &lock[lock.find("name = \"old\"").unwrap()..];
    assert!(old.contains("protocol_version = \"2025-11-25\""), "{lock}");
    p.run(&["verify"]).expect(0);
}

#[test]
fn a_real_server_runs_behind_the_guard_with_valid_calls_passed_and_bad_ones_refused() {
    let dir = servers_dir();
    let project = Project::new(json!({}));
    let name = format!("everything-{}", std::process::id());
    project.set_servers(json!({ &name: npm_entry(&dir, "server-everything", &["stdio"]) }));
    project.run(&["update", "--yes"]).expect(0);
    let mut agent = common::McpPipe::guard(&project, &[&name]);
    agent.initialize();
    // server-everything announces list_changed right after initialized; a client
    // lists (again) after it.
    agent.notification("notifications/tools/list_changed");
    let tools = agent.list_tools();
    assert_eq!(tools.len(), 13, "{tools:?}");
    let echo = agent.call("echo", json!({"message": "through the guard"}));
    assert_eq!(
        echo["result"]["content"][0]["text"], "Echo: through the guard",
        "{echo}"
    );
    let bad = agent.call("echo", json!({"message": 5}));
    assert_eq!(
        bad["result"]["structuredContent"]["error_code"],
        "INVALID_ARGUMENTS"
    );
    let unknown = agent.call("not_a_tool", json!({}));
    assert_eq!(
        unknown["result"]["structuredContent"]["error_code"],
        "UNPINNED_TOOL"
    );

    let guarded = format!("MCP_LOCK_GUARDED={name}");
    assert!(!common::pids_with_env(&guarded).is_empty());
    agent.close();
    let status = agent.wait_exit(std::time::Duration::from_secs(10)).unwrap();
    assert_eq!(status.code(), Some(0));
    assert!(
        common::pids_with_env(&guarded).is_empty(),
        "server left running"
    );
}

#[test]
fn a_real_server_upgraded_under_its_pins_is_not_started_by_the_guard_as_verify_fails_it() {
    let p = filesystem_upgraded_under_its_pins();
    let stderr = p.guard_refuses(&["filesystem"], &[]);
    assert!(stderr.contains("package-changed"), "{stderr}");
}

#[test]
fn a_real_server_upgraded_under_its_pins_has_its_changed_tools_refused_by_the_guard() {
    let p = filesystem_upgraded_under_its_pins();
    // A policy that lets the new release start (as verify would, with a warning) still
    // leaves every changed tool refused.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\npackage-changed = \"warn\"\n",
    )
    .unwrap();
    let mut agent = common::McpPipe::guard(&p, &["filesystem"]);
    agent.initialize();
    assert_eq!(
        agent.list_tools(),
        Vec::<Value>::new(),
        "every tool changed"
    );
    let target = p.path().join("made-by-the-agent");
    let answer = agent.call(
        "create_directory",
        json!({"path": target.display().to_string()}),
    );
    let refusal = &answer["result"]["structuredContent"];
    assert_eq!(refusal["error_code"], "STALE_TOOL_SCHEMA", "{answer}");
    assert_eq!(refusal["side_effect_started"], false);
    assert!(!target.exists(), "the server created the directory");
    assert!(agent.stderr_shows("hid 14 tools"), "{}", agent.stderr());
}
