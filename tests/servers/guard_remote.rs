//! `mcp-lock guard` in front of remote servers: the agent speaks stdio to the guard,
//! the guard Streamable HTTP to a real server on loopback (server-everything's
//! `streamableHttp` mode, and the fixture's HTTP side).

use crate::common;

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

/// A listener on loopback that records every byte sent to it and answers nothing
/// useful: what a host a pull request points an entry at would see.
struct Recorder {
    port: u16,
    seen: std::sync::Arc<std::sync::Mutex<Vec<u8>>>,
    connections: std::sync::Arc<std::sync::atomic::AtomicUsize>,
}

impl Recorder {
    fn start() -> Self {
        use std::io::{Read, Write};
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let port = listener.local_addr().unwrap().port();
        let seen = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
        let connections = std::sync::Arc::new(std::sync::atomic::AtomicUsize::new(0));
        let (sink, count) = (seen.clone(), connections.clone());
        // Ends with the test process; each connection is read for at most 2 s.
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                count.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                let _ = stream.set_read_timeout(Some(std::time::Duration::from_secs(2)));
                let mut buf = [0u8; 8192];
                while let Ok(n) = stream.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    sink.lock().unwrap().extend_from_slice(&buf[..n]);
                    if sink.lock().unwrap().windows(4).any(|w| w == b"\r\n\r\n") {
                        break;
                    }
                }
                let _ = stream.write_all(
                    b"HTTP/1.1 401 Unauthorized\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                );
            }
        });
        Recorder {
            port,
            seen,
            connections,
        }
    }

    fn url(&self, path: &str) -> String {
        format!("http://127.0.0.1:{}{path}", self.port)
    }

    /// Every byte received, and how many connections were made.
    fn received(&self) -> (String, usize) {
        (
            String::from_utf8_lossy(&self.seen.lock().unwrap()).into_owned(),
            self.connections.load(std::sync::atomic::Ordering::SeqCst),
        )
    }
}

#[test]
fn a_remote_entry_moved_to_another_origin_gets_no_request_and_no_secret_until_the_move_is_approved()
{
    let good = HttpServer::fixture(&["--http"]);
    // Another origin (another port on loopback) that records whatever reaches it.
    let other = Recorder::start();
    let entry = |url: String| json!({"remote": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}});
    let p = Project::bare(entry(good.url("/mcp")));
    let secret = "t0ken-for-the-pinned-host";
    let token = [("REMOTE_TOKEN", secret)];
    p.run_env(&["update", "--yes"], &token).expect(0);
    p.run_env(&["verify"], &token).expect(0);
    let pinned_lock = p.lock_text().unwrap();

    p.set_servers(entry(other.url("/mcp")));
    let verify = p.run_env(&["verify", "--format", "json"], &token);
    verify.expect(1);
    let doc = verify.json();
    let server = &doc["servers"][0];
    let launch = server["server_changes"]
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["field"] == "launch")
        .cloned()
        .unwrap_or_else(|| panic!("{doc}"));
    assert_eq!(launch["rule"], "launch-changed", "{launch}");
    assert_eq!(launch["drift"], true);
    assert_eq!(launch["action"], "fail");
    // Not contacted, so nothing about its tools is known.
    assert_eq!(server["verdict"], "unverifiable", "{doc}");
    let error = server["error"].as_str().unwrap();
    assert!(
        error.starts_with("not contacted: the lock pins it at http://127.0.0.1:"),
        "{error}"
    );
    assert!(error.contains("--approve-origin"), "{error}");
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
    // The guard never connects to the new origin.
    let refusal = p.guard_refuses(&["remote"], &token);
    assert!(
        refusal.contains(
            "which may be another server (launch-changed, which `mcp-lock verify` fails); review it and run `mcp-lock update remote --approve-origin`"
        ),
        "{refusal}"
    );
    // update does not contact it without the person's approval: held, pins kept.
    let update = p.run_env(&["update", "--yes"], &token);
    update.expect(3);
    assert!(
        update.stderr().contains("not contacted"),
        "{}",
        update.stderr()
    );
    assert_eq!(p.lock_text().unwrap(), pinned_lock);

    // A policy that only warns of launch-changed still sends nothing there: verify
    // cannot check what it does not contact (exit 3), and the guard refuses.
    std::fs::write(
        p.path().join("mcp-lock.toml"),
        "[profiles]\npin = [\"bare\"]\n[verify]\nlaunch-changed = \"warn\"\n",
    )
    .unwrap();
    p.run_env(&["verify"], &token).expect(3);
    let refusal = p.guard_refuses(&["remote"], &token);
    assert!(
        refusal.contains("an origin the lock does not pin gets no connection"),
        "{refusal}"
    );
    let (seen, connections) = other.received();
    assert!(
        !seen.contains(secret),
        "the secret reached the new origin: {seen}"
    );
    assert_eq!(
        (connections, seen.as_str()),
        (0, ""),
        "nothing reached the new origin"
    );

    // The person approves the move: update contacts the new origin and pins it.
    let mirror_dir = tempfile::tempdir().unwrap();
    let mirror_log = mirror_dir.path().join("requests.log");
    let mirror = HttpServer::fixture(&["--http", "--log-file", &mirror_log.display().to_string()]);
    p.set_servers(entry(mirror.url("/mcp")));
    p.run_env(&["update", "--yes"], &token).expect(3);
    assert_eq!(std::fs::read_to_string(&mirror_log).unwrap_or_default(), "");
    p.run_env(&["update", "remote", "--approve-origin", "--yes"], &token)
        .expect(0);
    assert!(!std::fs::read_to_string(&mirror_log).unwrap().is_empty());
    p.run_env(&["verify"], &token).expect(0);
}

#[test]
fn a_remote_entry_the_lock_does_not_pin_gets_no_request_from_verify_until_update_pins_it() {
    // A pull request adds a remote entry whose headers carry a CI secret.
    let recorder = Recorder::start();
    let p = Project::bare(json!({}));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({"added": {"type": "http", "url": recorder.url("/mcp"), "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}}}));
    let secret = "t0ken-of-the-ci-run";
    let token = [("REMOTE_TOKEN", secret)];
    let verify = p.run_env(&["verify", "--format", "json"], &token);
    verify.expect(1);
    let doc = verify.json();
    let server = &doc["servers"][0];
    assert_eq!(server["verdict"], "stale", "{doc}");
    let error = server["error"].as_str().unwrap();
    assert!(
        error.starts_with("not pinned yet, and not contacted"),
        "{error}"
    );
    assert!(error.contains("mcp-lock update added"), "{error}");
    p.run_env(&["verify"], &token).expect(1);
    p.run_env(&["check-call", "added", "t", "--args", "{}"], &token);
    let (seen, connections) = recorder.received();
    assert!(
        !seen.contains(secret),
        "the secret reached the new server: {seen}"
    );
    assert_eq!((connections, seen.as_str()), (0, ""), "nothing reached it");
    // update is the person's step that contacts it (the recorder answers nothing an
    // MCP client can pin, so it is unverifiable there: it was contacted).
    p.run_env(&["update", "--yes"], &token).expect(3);
    assert!(
        recorder.received().1 > 0,
        "update contacts the entry it pins"
    );
}

/// An agent that reads the guard's stdout only when asked: a reader thread hands over
/// one line at a time, so lines not asked for stay in the pipe.
struct LazyAgent {
    child: std::process::Child,
    stdin: std::process::ChildStdin,
    lines: std::sync::mpsc::Receiver<String>,
    stderr: std::sync::Arc<std::sync::Mutex<String>>,
}

impl LazyAgent {
    fn guard(p: &Project, args: &[&str]) -> Self {
        use std::io::BufRead;
        let mut child = common::command(common::bin())
            .arg("guard")
            .args(args)
            .current_dir(p.path())
            .stdin(std::process::Stdio::piped())
            .stdout(std::process::Stdio::piped())
            .stderr(std::process::Stdio::piped())
            .spawn()
            .unwrap();
        let stdout = std::io::BufReader::new(child.stdout.take().unwrap());
        let (tx, lines) = std::sync::mpsc::sync_channel(0);
        std::thread::spawn(move || {
            for line in stdout.lines() {
                let Ok(line) = line else { break };
                if tx.send(line).is_err() {
                    break;
                }
            }
        });
        let stderr = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let sink = stderr.clone();
        let pipe = child.stderr.take().unwrap();
        std::thread::spawn(move || {
            for line in std::io::BufReader::new(pipe).lines().map_while(Result::ok) {
                sink.lock().unwrap().push_str(&format!("{line}\n"));
            }
        });
        let stdin = child.stdin.take().unwrap();
        LazyAgent {
            child,
            stdin,
            lines,
            stderr,
        }
    }

    fn send(&mut self, message: &Value) {
        use std::io::Write;
        writeln!(self.stdin, "{message}").unwrap();
        self.stdin.flush().unwrap();
    }

    /// Reads until the answer to `id`; returns it and how many other lines came first.
    #[track_caller]
    fn answer(&mut self, id: i64) -> (Value, usize) {
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
        let mut others = 0;
        loop {
            let left = deadline.saturating_duration_since(std::time::Instant::now());
            let line = self.lines.recv_timeout(left).unwrap_or_else(|_| {
                panic!(
                    "no answer to {id} after {others} other lines; stderr:\n{}",
                    self.stderr.lock().unwrap()
                )
            });
            let message: Value = serde_json::from_str(&line).unwrap();
            if message["id"] == id && message.get("method").is_none() {
                return (message, others);
            }
            others += 1;
        }
    }

    fn initialize(&mut self) {
        self.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}}}));
        let (hello, _) = self.answer(1);
        assert!(hello["result"].is_object(), "{hello}");
        self.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    }

    /// The bridge: the guard's child running `remote-bridge`.
    fn bridge_pid(&self) -> u32 {
        let guard = self.child.id();
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
        loop {
            for entry in std::fs::read_dir("/proc").unwrap().flatten() {
                let Ok(stat) = std::fs::read_to_string(entry.path().join("stat")) else {
                    continue;
                };
                // pid (comm) state ppid ...: comm may hold spaces, so read after ')'.
                let after = &stat[stat.rfind(')').unwrap() + 2..];
                let ppid: u32 = after.split(' ').nth(1).unwrap().parse().unwrap();
                let cmdline = std::fs::read(entry.path().join("cmdline")).unwrap_or_default();
                // The guard has a watchdog child too.
                if ppid == guard && String::from_utf8_lossy(&cmdline).contains("remote-bridge") {
                    return entry.file_name().to_string_lossy().parse().unwrap();
                }
            }
            assert!(
                std::time::Instant::now() < deadline,
                "the guard runs no bridge"
            );
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
}

impl Drop for LazyAgent {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// A process's peak resident memory (VmHWM), in MiB.
fn peak_mib(pid: u32) -> u64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    let kib: u64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))
        .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        .unwrap_or_else(|| panic!("no VmHWM in {status}"));
    kib / 1024
}

#[test]
fn a_get_stream_flood_the_agent_does_not_read_waits_in_the_socket_and_the_bridge_stays_small() {
    let p = Project::bare(json!({}));
    let log = p.path().join("requests.log");
    let server = HttpServer::fixture(&[
        "--http",
        "--http-misbehave",
        "flood-get-stream",
        "--log-file",
        log.to_str().unwrap(),
    ]);
    p.set_servers(json!({"flood": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    let mut agent = LazyAgent::guard(&p, &["flood"]);
    agent.initialize();
    let bridge = agent.bridge_pid();

    // The agent reads nothing now: wait until the server's writes stall (or it is done).
    let progress = flood_progress(&log);
    let (bridge_peak, guard_peak) = (peak_mib(bridge), peak_mib(agent.child.id()));
    assert!(
        bridge_peak < 150 && guard_peak < 150,
        "bridge peak {bridge_peak} MiB, guard peak {guard_peak} MiB at {progress:?}"
    );
    eprintln!("bridge peak {bridge_peak} MiB, guard peak {guard_peak} MiB at {progress:?}");
    assert_ne!(
        progress, "flood done",
        "all 160 MB were taken from the server (bridge peak {bridge_peak} MiB)"
    );

    // Once the agent reads, the session still works.
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let (answer, _) = agent.answer(2);
    assert!(answer["result"]["tools"].is_array(), "{answer}");
}

#[test]
fn a_legacy_sse_stream_flood_the_agent_does_not_read_waits_in_the_socket_and_the_bridge_stays_small()
 {
    let p = Project::bare(json!({}));
    let log = p.path().join("requests.log");
    let server = HttpServer::fixture(&["--sse"]);
    p.set_servers(json!({"old": {"type": "sse", "url": server.url("/sse")}}));
    p.run(&["update", "--yes"]).expect(0);
    // The same port, now flooding its event stream right after the endpoint event.
    let port = server.port.to_string();
    drop(server);
    let _server = HttpServer::fixture(&[
        "--sse",
        "--http-misbehave",
        "flood-get-stream",
        "--log-file",
        log.to_str().unwrap(),
        "--port",
        &port,
    ]);
    let agent = LazyAgent::guard(&p, &["old"]);
    let bridge = agent.bridge_pid();
    let progress = flood_progress(&log);
    let peak = peak_mib(bridge);
    eprintln!("bridge peak {peak} MiB at {progress:?}");
    assert!(peak < 150, "bridge peak {peak} MiB at {progress:?}");
    assert_ne!(
        progress, "flood done",
        "all 160 MB were taken (bridge peak {peak} MiB)"
    );
}

/// The fixture's last flood line once its writes stall for 1.5 s, or "flood done".
fn flood_progress(log: &Path) -> String {
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(60);
    let (mut last, mut since) = (String::new(), std::time::Instant::now());
    loop {
        let now = log_lines(log)
            .into_iter()
            .rev()
            .find(|l| l.starts_with("flood "))
            .unwrap_or_default();
        if now == "flood done" {
            return now;
        }
        if now != last {
            (last, since) = (now, std::time::Instant::now());
        } else if !last.is_empty() && since.elapsed() > std::time::Duration::from_millis(1500) {
            return last;
        }
        assert!(
            std::time::Instant::now() < deadline,
            "the flood never started"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

#[test]
fn an_answer_over_max_message_bytes_is_answered_with_an_error_naming_the_limit_and_the_session_goes_on()
 {
    for respond in ["json", "sse"] {
        let p = Project::bare(json!({}));
        let server = HttpServer::fixture(&[
            "--http",
            "--respond",
            respond,
            "--http-misbehave",
            "huge-call-answer",
        ]);
        p.set_servers(json!({"big": {"type": "http", "url": server.url("/mcp")}}));
        p.run(&["update", "--yes"]).expect(0);
        let mut agent = LazyAgent::guard(&p, &["big", "--max-message-bytes", "4000000"]);
        agent.initialize();
        let bridge = agent.bridge_pid();
        agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
        agent.answer(2);
        agent.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": "q"}}}));
        let (answer, _) = agent.answer(3);
        assert_eq!(answer["error"]["code"], -32603, "{respond}: {answer}");
        let message = answer["error"]["message"].as_str().unwrap();
        assert!(
            message.contains("larger than 4000000 bytes"),
            "{respond}: {message}"
        );
        agent.send(&json!({"jsonrpc": "2.0", "id": 4, "method": "tools/list", "params": {}}));
        let (listing, _) = agent.answer(4);
        assert!(
            listing["result"]["tools"].is_array(),
            "{respond}: {listing}"
        );
        let peak = peak_mib(bridge);
        assert!(peak < 150, "{respond}: bridge peak {peak} MiB");
    }
}

#[test]
fn a_stream_broken_mid_answer_is_answered_with_an_error() {
    let p = Project::bare(json!({}));
    let server = HttpServer::fixture(&["--http"]);
    p.set_servers(json!({"broken": {"type": "http", "url": server.url("/mcp")}}));
    p.run(&["update", "--yes"]).expect(0);
    // The same port, now dropping its tools/list answers half-sent.
    let port = server.port.to_string();
    drop(server);
    let _server = HttpServer::fixture(&[
        "--http",
        "--http-misbehave",
        "drop-mid-stream",
        "--port",
        &port,
    ]);
    let mut agent = LazyAgent::guard(&p, &["broken"]);
    agent.initialize();
    agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
    let (answer, _) = agent.answer(2);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let message = answer["error"]["message"].as_str().unwrap();
    assert!(message.contains("SSE stream"), "{message}");
}

#[test]
fn a_legacy_sse_endpoint_on_another_origin_is_refused_in_one_line_and_nothing_is_posted() {
    let p = Project::bare(json!({}));
    let log = p.path().join("requests.log");
    let server = HttpServer::fixture(&["--sse"]);
    p.set_servers(json!({"old": {"type": "sse", "url": server.url("/sse")}}));
    p.run(&["update", "--yes"]).expect(0);
    let port = server.port.to_string();
    drop(server);
    let _server = HttpServer::fixture(&[
        "--sse",
        "--http-misbehave",
        "endpoint-cross-origin",
        "--log-file",
        log.to_str().unwrap(),
        "--port",
        &port,
    ]);
    let mut agent = McpPipe::guard(&p, &["old"]);
    agent.send(&json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}}}));
    let refusal = format!(
        "GET (HTTP+SSE): the endpoint http://localhost:{port}/message?sessionId=s-1 is on another origin; not used"
    );
    assert!(agent.stderr_shows(&refusal), "{}", agent.stderr());
    let lines: Vec<String> = agent
        .stderr()
        .lines()
        .filter(|l| l.contains("another origin"))
        .map(str::to_string)
        .collect();
    assert_eq!(lines.len(), 1, "{lines:#?}");
    agent.close();
    agent.wait_exit(std::time::Duration::from_secs(10));
    let posts: Vec<String> = log_lines(&log)
        .into_iter()
        .filter(|l| l.starts_with("POST"))
        .collect();
    assert!(posts.is_empty(), "{posts:#?}");
}

#[test]
fn a_legacy_sse_server_gets_the_cached_login_token_from_the_guard_as_from_verify() {
    let token = "login-token-5be21c07";
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = HttpServer::fixture(&["--sse", "--require-token", token]);
    let url = server.url("/sse");
    p.set_servers(json!({"old": {"type": "sse", "url": url}}));
    // What `mcp-lock login` leaves behind, for this server's URL.
    let dir = home.join("mcp-lock/oauth");
    std::fs::create_dir_all(&dir).unwrap();
    let record = json!({"resource": url, "issuer": "http://127.0.0.1:9/", "token_endpoint": "http://127.0.0.1:9/token", "client_id": "c", "access_token": token});
    std::fs::write(dir.join("old.json"), record.to_string()).unwrap();
    let home = home.to_str().unwrap();
    p.run_env(&["update", "--yes"], &[("XDG_CONFIG_HOME", home)])
        .expect(0);
    let mut agent = McpPipe::spawn(
        &common::bin(),
        &["guard", "old"],
        p.path(),
        &[("XDG_CONFIG_HOME", home)],
    );
    agent.initialize();
    let tools = agent.list_tools();
    assert!(names(&tools).contains(&"search_docs"), "{tools:?}");
    agent.close();
    let mut seen = agent.stderr();
    for message in agent.held.iter().chain(&tools) {
        seen.push_str(&message.to_string());
    }
    assert!(!seen.contains(token), "{seen}");
}

#[test]
fn a_40_mb_answer_reaches_the_agent_whole_with_the_guard_and_the_bridge_each_under_three_times_its_size()
 {
    // As a JSON body and as one SSE event.
    for respond in ["json", "sse"] {
        let p = Project::bare(json!({}));
        let server = HttpServer::fixture(&[
            "--http",
            "--respond",
            respond,
            "--http-misbehave",
            "huge-call-answer",
        ]);
        p.set_servers(json!({"big": {"type": "http", "url": server.url("/mcp")}}));
        p.run(&["update", "--yes"]).expect(0);
        let mut agent = LazyAgent::guard(&p, &["big"]);
        agent.initialize();
        let bridge = agent.bridge_pid();
        agent.send(&json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}));
        agent.answer(2);
        agent.send(&json!({"jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {"name": "search_docs", "arguments": {"query": "q"}}}));
        let (answer, _) = agent.answer(3);
        let text = answer["result"]["content"][0]["text"]
            .as_str()
            .unwrap_or_default();
        assert_eq!(text.len(), 40_000_000, "{}", start_of(&answer));
        // Three times the message, its own baseline included.
        let bound = 3 * 40_000_000 / (1024 * 1024);
        let (guard, bridge) = (peak_mib(agent.child.id()), peak_mib(bridge));
        eprintln!("{respond}: guard peak {guard} MiB, bridge peak {bridge} MiB for a 40 MB answer");
        assert!(guard <= bound, "{respond}: guard peak {guard} MiB");
        assert!(bridge <= bound, "{respond}: bridge peak {bridge} MiB");
    }
}

/// The start of a message, for an assertion's text.
fn start_of(message: &Value) -> String {
    message.to_string().chars().take(500).collect()
}

#[test]
fn a_tool_the_rules_deny_is_hidden_and_its_call_refused_with_tool_denied_in_front_of_a_remote_server()
 {
    let server = everything_over_http();
    let p = Project::bare(json!({"everything": {"type": "http", "url": server.url("/mcp")}}));
    let policy = p.path().join("mcp-lock.toml");
    let before = std::fs::read_to_string(&policy).unwrap();
    std::fs::write(
        &policy,
        format!("{before}[tools]\ndeny = [\"everything/get-sum\"]\n"),
    )
    .unwrap();
    p.run(&["update", "--yes"]).expect(0);
    let mut agent = McpPipe::guard(&p, &["everything"]);
    agent.initialize();
    let tools = agent.list_tools();
    assert!(!names(&tools).contains(&"get-sum"), "{:?}", names(&tools));
    assert!(names(&tools).contains(&"echo"), "{:?}", names(&tools));
    // server-everything announces list_changed as it registers tools: list again
    // until a checked listing stands.
    let mut answer = Value::Null;
    for _ in 0..20 {
        agent.list_tools();
        answer = agent.call("get-sum", json!({"a": 1, "b": 2}));
        if answer["result"]["structuredContent"]["error_code"] != "LISTING_NOT_VERIFIED" {
            break;
        }
        std::thread::sleep(std::time::Duration::from_millis(250));
    }
    let r = refusal(&answer);
    assert_eq!(r["error_code"], "TOOL_DENIED", "{answer}");
    assert_eq!(r["required_action"], "change_rules");
    assert_eq!(
        r["denied_by"]["rule"],
        "[tools] deny \"everything/get-sum\""
    );
    let audit = std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap();
    let denied = audit
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap())
        .find(|e| e["event"] == "tools/call" && e["tool"] == "get-sum")
        .unwrap();
    assert_eq!(denied["decision"], "denied", "{denied}");
    assert_eq!(denied["rule"], "[tools] deny \"everything/get-sum\"");
}
