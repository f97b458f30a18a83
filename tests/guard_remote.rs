//! `mcp-lock guard` in front of remote servers: the agent speaks stdio to the guard,
//! the guard Streamable HTTP to a real server on loopback (server-everything's
//! `streamableHttp` mode, and the fixture's HTTP side).

mod common;

use std::path::Path;

use common::{HttpServer, McpPipe, Project};
use serde_json::{Value, json};

fn everything_over_http() -> HttpServer {
    let dir = common::test_servers_dir();
    let main = dir.join("npm/node_modules/@modelcontextprotocol/server-everything/dist/index.js");
    assert!(
        main.exists(),
        "server-everything is not installed: run scripts/install-test-servers.sh"
    );
    let preload = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/loopback-listen.cjs");
    HttpServer::start(
        Path::new("node"),
        &[
            "--require",
            &preload.display().to_string(),
            &main.display().to_string(),
            "streamableHttp",
        ],
        &[],
        None,
    )
}

#[track_caller]
fn refusal(answer: &Value) -> &Value {
    let result = &answer["result"];
    assert_eq!(result["isError"], true, "not refused: {answer}");
    &result["structuredContent"]
}

fn names(tools: &[Value]) -> Vec<&str> {
    tools.iter().map(|t| t["name"].as_str().unwrap()).collect()
}

#[test]
fn the_guard_in_front_of_server_everything_over_http_lists_calls_echo_and_refuses_an_unpinned_tool()
{
    let server = everything_over_http();
    let p = Project::bare(json!({"everything": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    let mut agent = McpPipe::guard(&p, &["everything"]);
    let hello = agent.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}}),
    );
    assert!(hello["result"]["serverInfo"].is_object(), "{hello}");
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    let tools = agent.list_tools();
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));
    let answer = agent.call("echo", json!({"message": "over http"}));
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    assert!(answer.to_string().contains("over http"), "{answer}");
    let answer = agent.call("not-pinned-anywhere", json!({}));
    assert_eq!(refusal(&answer)["error_code"], "UNPINNED_TOOL", "{answer}");
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(audit.contains("UNPINNED_TOOL"), "{audit}");
}

#[test]
fn a_revision_announced_on_the_get_stream_makes_a_prepared_call_stale_and_nothing_runs() {
    let p = Project::bare(json!({}));
    let rev = p.path().join("rev");
    let actions = p.path().join("actions.jsonl");
    let log = p.path().join("requests.log");
    std::fs::write(&rev, "a").unwrap();
    let server = HttpServer::fixture(&[
        "--http",
        "--revision-file",
        rev.to_str().unwrap(),
        "--notify-on-change",
        "--action-log",
        actions.to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"deploy": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    let mut agent = McpPipe::guard(&p, &["deploy"]);
    agent.initialize();
    let tools = agent.list_tools();
    assert!(
        names(&tools).contains(&"deploy_preview"),
        "{:?}",
        names(&tools)
    );
    let planned = json!({"branch": "fix-login"});

    // The guard opens the GET stream on its own time; a revision written before the
    // stream is open is the stream's starting point, and would never be announced.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    while !log_lines(&log)
        .iter()
        .any(|l| l == "stream open revision=a")
    {
        assert!(
            std::time::Instant::now() < deadline,
            "the guard opened no GET stream; stderr:\n{}",
            agent.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    std::fs::write(&rev, "b").unwrap();
    agent.notification("notifications/tools/list_changed");
    agent.list_tools();
    let answer = agent.call("deploy_preview", planned);
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "STALE_TOOL_SCHEMA", "{answer}");
    assert_eq!(r["side_effect_started"], false);
    assert_eq!(
        std::fs::read_to_string(&actions).unwrap_or_default(),
        "",
        "the server did something"
    );
}

#[test]
fn an_elicitation_from_the_server_reaches_the_agent_and_its_answer_returns() {
    let server = everything_over_http();
    let p = Project::new(json!({"everything": {"type": "http", "url": server.url("/mcp")}}));
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"asker\"]\n\n[profile.asker]\nprotocol-version = \"2025-11-25\"\ncapabilities = { elicitation = {} }\nclient-info = { name = \"asker\", version = \"1\" }\n",
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("name = \"trigger-elicitation-request\"")
    );
    let mut agent = McpPipe::guard(&p, &["everything"]);
    agent.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {"elicitation": {}}, "clientInfo": {"name": "asker", "version": "1"}}),
    );
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    agent.list_tools();
    agent.send(&json!({"jsonrpc": "2.0", "id": 900, "method": "tools/call", "params": {"name": "trigger-elicitation-request", "arguments": {}}}));
    let mut others = Vec::new();
    let asked = loop {
        let m = agent
            .next(std::time::Duration::from_secs(20))
            .unwrap_or_else(|| panic!("no elicitation; stderr:\n{}", agent.stderr()));
        if m["method"] == "elicitation/create" {
            break m;
        }
        others.push(m);
    };
    agent.held.extend(others);
    agent.send(&json!({"jsonrpc": "2.0", "id": asked["id"], "result": {"action": "accept", "content": {"name": "Ada Lovelace", "check": true}}}));
    let answer = agent.answer(900);
    assert!(answer.to_string().contains("Ada Lovelace"), "{answer}");
}

#[test]
fn an_expired_session_is_reopened_by_the_guard_and_the_credential_never_reaches_the_agent() {
    let token = "guard-token-7c1e4b20";
    let p = Project::bare(json!({}));
    let log = p.path().join("requests.log");
    let server = HttpServer::fixture(&[
        "--http",
        "--page-size",
        "1",
        "--http-misbehave",
        "expire-session",
        "--require-token",
        token,
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"remote": {
        "type": "http",
        "url": server.url("/mcp"),
        "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}
    }}));
    p.run_env(&["update", "--yes"], &[("REMOTE_TOKEN", token)])
        .expect(0);
    // A fresh server on the same port: its one expiry falls in the guarded session.
    let port = server.port.to_string();
    drop(server);
    let server = HttpServer::fixture(&[
        "--http",
        "--page-size",
        "1",
        "--http-misbehave",
        "expire-session",
        "--require-token",
        token,
        "--log-file",
        log.to_str().unwrap(),
        "--port",
        &port,
    ]);
    std::fs::write(&log, "").unwrap();
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "remote"],
        p.path(),
        &[("REMOTE_TOKEN", token)],
    );
    agent.initialize();
    let tools = agent.list_tools();
    assert_eq!(tools.len(), 3, "{tools:?}");
    let requests = std::fs::read_to_string(&log).unwrap();
    let initializes = requests
        .lines()
        .filter(|l| l.contains(" initialize "))
        .count();
    assert_eq!(initializes, 2, "{requests}");
    agent.close();
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    let mut seen = audit;
    seen.push_str(&agent.stderr());
    for message in agent.held.iter() {
        seen.push_str(&message.to_string());
    }
    for tool in &tools {
        seen.push_str(&tool.to_string());
    }
    assert!(!seen.contains(token), "{seen}");
    drop(server);
}

#[test]
fn wrap_turns_a_remote_entry_into_a_guard_launch_that_names_its_original_and_unwrap_restores_it() {
    let token = "wrap-token-93ab01f4";
    let server = HttpServer::fixture(&["--http", "--require-token", token]);
    let p = Project::bare(json!({}));
    let original = format!(
        "{{\n  // a remote server\n  \"mcpServers\": {{\n    \"remote\": {{ \"type\": \"http\",  \"url\": \"{}\",\n      \"headers\": {{\"Authorization\": \"Bearer ${{REMOTE_TOKEN}}\"}} }}\n  }}\n}}\n",
        server.url("/mcp")
    );
    std::fs::write(p.path().join(".mcp.json"), &original).unwrap();
    let env = [("REMOTE_TOKEN", token)];
    p.run_env(&["update", "--yes"], &env).expect(0);

    p.run_env(&["wrap"], &env).expect(0);
    let wrapped = std::fs::read_to_string(p.path().join(".mcp.json")).unwrap();
    assert!(!wrapped.contains("/mcp\""), "the URL was copied: {wrapped}");
    assert!(
        !wrapped.contains("REMOTE_TOKEN"),
        "the header was copied: {wrapped}"
    );
    let config: Value = serde_json::from_str(
        &wrapped
            .lines()
            .filter(|l| !l.trim_start().starts_with("//"))
            .collect::<Vec<_>>()
            .join("\n"),
    )
    .unwrap();
    let entry = &config["mcpServers"]["remote"];
    let args: Vec<String> = entry["args"]
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a.as_str().unwrap().to_string())
        .collect();
    let at = args.iter().position(|a| a == "--config").unwrap();
    let sidecar = std::path::PathBuf::from(&args[at + 1]);
    assert!(sidecar.is_absolute(), "{sidecar:?}");
    let kept = std::fs::read_to_string(&sidecar).unwrap();
    assert!(
        kept.contains("Bearer ${REMOTE_TOKEN}") && kept.contains(&server.url("/mcp")),
        "{kept}"
    );

    // verify still reads the server through the wrapped entry.
    p.run_env(&["verify"], &env).expect(0);
    // And the client's launch runs the guard in front of it.
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &args.iter().map(String::as_str).collect::<Vec<_>>(),
        Path::new("/"),
        &env,
    );
    agent.initialize();
    assert!(names(&agent.list_tools()).contains(&"search_docs"));
    agent.close();

    p.run(&["unwrap"]).expect(0);
    assert_eq!(
        std::fs::read_to_string(p.path().join(".mcp.json")).unwrap(),
        original
    );
    assert!(!sidecar.exists());
}

/// The fixture's request log, one line a request.
fn log_lines(path: &Path) -> Vec<String> {
    std::fs::read_to_string(path)
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A log line's `name=value` field.
fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split(' ')
        .find_map(|f| f.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| panic!("no {name} in {line}"))
}

#[test]
fn a_dropped_get_stream_reopens_with_last_event_id_after_the_retry_delay_and_list_changed_still_arrives()
 {
    let p = Project::bare(json!({}));
    let rev = p.path().join("rev");
    let actions = p.path().join("actions.jsonl");
    let log = p.path().join("requests.log");
    std::fs::write(&rev, "a").unwrap();
    let server = HttpServer::fixture(&[
        "--http",
        "--revision-file",
        rev.to_str().unwrap(),
        "--notify-on-change",
        "--action-log",
        actions.to_str().unwrap(),
        "--http-misbehave",
        "drop-get-stream",
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"deploy": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    let mut agent = McpPipe::guard(&p, &["deploy"]);
    agent.initialize();
    assert!(names(&agent.list_tools()).contains(&"deploy_preview"));
    let planned = json!({"branch": "fix-login"});

    // The first GET stream drops at once; wait for the guard to open the second.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(15);
    let gets = loop {
        let gets: Vec<String> = log_lines(&log)
            .into_iter()
            .filter(|l| l.starts_with("GET /mcp "))
            .collect();
        if gets.len() >= 2 {
            break gets;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "no second GET: {gets:#?}\nstderr:\n{}",
            agent.stderr()
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    assert_eq!(field(&gets[0], "last-event-id"), "-", "{gets:#?}");
    assert_eq!(field(&gets[1], "last-event-id"), "41", "{gets:#?}");
    let gap = field(&gets[1], "t-ms").parse::<u64>().unwrap()
        - field(&gets[0], "t-ms").parse::<u64>().unwrap();
    // The server asked for 1500 ms; the guard's own default is 500 ms.
    assert!(gap >= 1400, "reopened after {gap} ms: {gets:#?}");
    // Give the reopened stream a moment to read the revision it starts from.
    std::thread::sleep(std::time::Duration::from_millis(200));

    std::fs::write(&rev, "b").unwrap();
    agent.notification("notifications/tools/list_changed");
    agent.list_tools();
    let answer = agent.call("deploy_preview", planned);
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "STALE_TOOL_SCHEMA", "{answer}");
    assert_eq!(
        std::fs::read_to_string(&actions).unwrap_or_default(),
        "",
        "the server did something"
    );
}

#[test]
fn the_guard_in_front_of_a_legacy_sse_server_lists_calls_and_refuses_an_unpinned_tool() {
    let p = Project::bare(json!({}));
    let actions = p.path().join("actions.jsonl");
    let log = p.path().join("requests.log");
    let server = HttpServer::fixture(&[
        "--sse",
        "--action-log",
        actions.to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"old": {"type": "sse", "url": server.url("/sse")}}));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(&log, "").unwrap();
    let mut agent = McpPipe::guard(&p, &["old"]);
    let hello = agent.initialize();
    assert_eq!(
        hello["result"]["serverInfo"]["name"], "mcp-lock-fixture",
        "{hello}"
    );
    let tools = agent.list_tools();
    assert!(
        names(&tools).contains(&"search_docs"),
        "{:?}",
        names(&tools)
    );
    let answer = agent.call("search_docs", json!({"query": "over sse"}));
    assert_eq!(answer["result"]["isError"], Value::Null, "{answer}");
    assert!(answer.to_string().contains("search_docs done"), "{answer}");
    let answer = agent.call("not-pinned-anywhere", json!({}));
    assert_eq!(refusal(&answer)["error_code"], "UNPINNED_TOOL", "{answer}");
    agent.close();

    let requests = log_lines(&log);
    assert!(
        requests[0].starts_with("GET /sse "),
        "the guard did not open the event stream: {requests:#?}"
    );
    let calls = requests
        .iter()
        .filter(|l| l.starts_with("POST /message") && l.contains(" tools/call "))
        .count();
    assert_eq!(
        calls, 1,
        "the unpinned call reached the server: {requests:#?}"
    );
    let done = std::fs::read_to_string(&actions).unwrap();
    assert_eq!(done.lines().count(), 1, "{done}");
    assert!(done.contains("\"search_docs\""), "{done}");
}

#[test]
fn the_guard_in_front_of_a_2026_07_28_http_server_forwards_discover_and_meta_and_refuses_stale_calls()
 {
    let p = Project::bare(json!({}));
    let rev = p.path().join("rev");
    let actions = p.path().join("actions.jsonl");
    let log = p.path().join("requests.log");
    std::fs::write(&rev, "a").unwrap();
    let server = HttpServer::fixture(&[
        "--http",
        "--era",
        "modern",
        "--revision-file",
        rev.to_str().unwrap(),
        "--action-log",
        actions.to_str().unwrap(),
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"next": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("protocol_version = \"2026-07-28\"")
    );
    std::fs::write(&log, "").unwrap();
    let meta = json!({"io.modelcontextprotocol/protocolVersion": "2026-07-28"});
    let mut agent = McpPipe::guard(&p, &["next"]);
    let hello = agent.request("server/discover", json!({"_meta": meta}));
    assert_eq!(
        hello["result"]["supportedVersions"],
        json!(["2026-07-28"]),
        "{hello}"
    );
    let listing = agent.request("tools/list", json!({"_meta": meta}));
    let tools = listing["result"]["tools"].as_array().unwrap().clone();
    assert!(names(&tools).contains(&"search_docs"), "{listing}");
    let answer = agent.request(
        "tools/call",
        json!({"name": "search_docs", "arguments": {"query": "q"}, "_meta": meta}),
    );
    assert!(answer.to_string().contains("search_docs done"), "{answer}");
    let answer = agent.request(
        "tools/call",
        json!({"name": "not-pinned-anywhere", "arguments": {}, "_meta": meta}),
    );
    assert_eq!(refusal(&answer)["error_code"], "UNPINNED_TOOL", "{answer}");

    // Revision b changes deploy_preview: the listing asked for again is checked.
    std::fs::write(&rev, "b").unwrap();
    agent.request("tools/list", json!({"_meta": meta}));
    let answer = agent.request(
        "tools/call",
        json!({"name": "deploy_preview", "arguments": {"branch": "fix-login"}, "_meta": meta}),
    );
    assert_eq!(
        refusal(&answer)["error_code"],
        "STALE_TOOL_SCHEMA",
        "{answer}"
    );
    agent.close();
    assert!(
        !agent.stderr().contains("no pinned profile used"),
        "{}",
        agent.stderr()
    );

    let requests = log_lines(&log);
    assert!(!requests.is_empty());
    for line in &requests {
        // Every request, the GET stream's too, names the era's version.
        assert!(line.contains(" session=- "), "{line}");
        assert!(line.contains(" version=2026-07-28 "), "{line}");
        if line.starts_with("POST /mcp ") {
            let method = line.split(' ').nth(2).unwrap();
            assert!(
                line.contains(&format!(" method-header={method} ")),
                "{line}"
            );
        } else {
            assert!(line.starts_with("GET /mcp "), "{line}");
        }
    }
    assert_eq!(requests[0].split(' ').nth(2), Some("server/discover"));
    let done = std::fs::read_to_string(&actions).unwrap();
    assert_eq!(done.lines().count(), 1, "{done}");
}

/// `mcp-lock guard NAME` that must refuse: exit 1, one line, a `launch_refused` entry.
fn guard_refuses(p: &Project, server: &str, env: &[(&str, &str)]) -> String {
    let out = std::process::Command::new(common::bin())
        .args(["guard", server])
        .envs(env.iter().copied())
        .current_dir(p.path())
        .stdin(std::process::Stdio::null())
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("refusing to start: "), "{stderr}");
    assert!(out.stdout.is_empty());
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    assert!(audit.contains("\"launch_refused\""), "{audit}");
    stderr
}

#[test]
fn a_remote_entry_moved_to_another_host_is_launch_changed_in_every_format_and_the_guard_refuses_it()
{
    let good = HttpServer::fixture(&["--http"]);
    let mirror_dir = tempfile::tempdir().unwrap();
    let mirror_log = mirror_dir.path().join("requests.log");
    // The same tools, on another origin (another port on loopback), logging requests.
    let mirror = HttpServer::fixture(&["--http", "--log-file", &mirror_log.display().to_string()]);
    let entry = |url: String| json!({"remote": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}});
    let p = Project::bare(entry(good.url("/mcp")));
    let token = [("REMOTE_TOKEN", "t0ken-for-the-pinned-host")];
    p.run_env(&["update", "--yes"], &token).expect(0);
    p.run_env(&["verify"], &token).expect(0);

    p.set_servers(entry(mirror.url("/mcp")));
    let verify = p.run_env(&["verify", "--format", "json"], &token);
    verify.expect(1);
    let doc = verify.json();
    let launch = doc["servers"][0]["server_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "launch")
        .cloned()
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(launch["rule"], "launch-changed", "{launch}");
    assert_eq!(launch["drift"], true);
    assert_eq!(launch["action"], "fail");
    assert_eq!(doc["servers"][0]["verdict"], "stale");
    assert_eq!(doc["servers"][0]["changes"], json!([]), "the same tools");
    for (format, shows) in [
        ("human", "changed  launch  launch-changed, fail"),
        ("sarif", "\"ruleId\": \"launch-changed\""),
        ("junit", "launch-changed"),
        ("github", "mcp-lock launch-changed"),
        ("markdown", "| launch | launch-changed | **fail** |"),
    ] {
        let out = p.run_env(&["verify", "--format", format], &token);
        out.expect(1);
        assert!(out.stdout().contains(shows), "{format}: {}", out.stdout());
    }
    // The guard never connects to the new host, so the header never goes there.
    std::fs::write(&mirror_log, "").unwrap();
    let refusal = guard_refuses(&p, "remote", &token);
    assert!(
        refusal.contains(
            "which may be another server (launch-changed, which `mcp-lock verify` fails)"
        ),
        "{refusal}"
    );
    assert_eq!(
        std::fs::read_to_string(&mirror_log).unwrap(),
        "",
        "no request reached the mirror"
    );

    // A policy that allows launch-changed: verify passes, the guard serves.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[verify]\nlaunch-changed = \"warn\"\n",
    )
    .unwrap();
    p.run_env(&["verify"], &token).expect(0);
}
