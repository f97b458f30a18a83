//! Remote servers over Streamable HTTP and legacy HTTP+SSE, in both protocol eras,
//! against the fixture server's HTTP side on loopback: sessions, SSE framing, era
//! negotiation, credentials, redirects, proxies and every way an HTTP server fails.

use crate::common;

use common::{HttpServer, Project, fixture_entry};
use serde_json::{Value, json};

fn http_entry(url: &str) -> Value {
    json!({"type": "http", "url": url})
}

fn log_lines(p: &Project) -> Vec<String> {
    std::fs::read_to_string(p.path().join("requests.log"))
        .unwrap_or_default()
        .lines()
        .map(str::to_string)
        .collect()
}

/// A fixture HTTP server logging into the project folder.
fn logged_fixture(p: &Project, args: &[&str]) -> HttpServer {
    let log = p.path().join("requests.log").display().to_string();
    let mut all = vec!["--log-file", log.as_str()];
    all.extend_from_slice(args);
    HttpServer::fixture(&all)
}

fn server_report(doc: &Value, name: &str) -> Value {
    doc["servers"]
        .as_array()
        .unwrap()
        .iter()
        .find(|s| s["name"] == name)
        .cloned()
        .unwrap_or_else(|| panic!("no report for {name}: {doc}"))
}

#[test]
fn streamable_http_server_is_pinned_and_verified_with_session_and_version_headers() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--http", "--page-size", "2"]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("transport = \"streamable-http\""), "{lock}");
    assert!(lock.contains("protocol_version = \"2025-11-25\""), "{lock}");
    assert!(
        lock.contains(&format!("url = \"{}\"", server.url("/mcp"))),
        "{lock}"
    );
    std::fs::write(p.path().join("requests.log"), "").unwrap();
    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(
        run.stdout()
            .contains("remote [bare]  converged     3 tools"),
        "{}",
        run.stdout()
    );
    // verify asks for the pinned version straight away: no probe, a handshake, two
    // pages in the session with the version header, then the session is ended.
    let log = log_lines(&p);
    let fields: Vec<Vec<&str>> = log.iter().map(|l| l.split(' ').collect()).collect();
    let calls: Vec<String> = fields
        .iter()
        .map(|f| format!("{} {}", f[0], f[2]))
        .collect();
    assert_eq!(
        calls,
        [
            "POST initialize",
            "POST notifications/initialized",
            "POST tools/list",
            "POST tools/list",
            "DELETE -",
        ],
        "{log:#?}"
    );
    assert_eq!(fields[0][3], "session=-");
    let session = fields[1][3];
    assert_ne!(session, "session=-");
    assert!(fields[1..].iter().all(|f| f[3] == session), "{log:#?}");
    assert!(
        log[1..].iter().all(|l| l.contains("version=2025-11-25")),
        "{log:#?}"
    );
}

#[test]
fn sse_answers_with_bom_comments_crlf_empty_events_and_split_data_are_read() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--http", "--respond", "sse", "--page-size", "1"]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes"]).expect(0);
    let json_pinned = {
        let q = Project::bare(json!({}));
        let plain = HttpServer::fixture(&["--http"]);
        q.set_servers(json!({"remote": http_entry(&plain.url("/mcp"))}));
        q.run(&["update", "--yes"]).expect(0);
        q.lock_text().unwrap()
    };
    let tools = |lock: &str| lock[lock.find("[[server.tool]]").unwrap()..].to_string();
    assert_eq!(tools(&p.lock_text().unwrap()), tools(&json_pinned));
    p.run(&["verify"]).expect(0);
}

#[test]
fn http_tools_match_stdio_tools_hash_for_hash() {
    let p = Project::bare(json!({}));
    let server = HttpServer::fixture(&["--http", "--era", "dual"]);
    p.set_servers(json!({
        "over-http": http_entry(&server.url("/mcp")),
        "over-stdio": fixture_entry(&["--era", "dual"]),
    }));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    let hashes: Vec<&str> = lock.lines().filter(|l| l.starts_with("hash = ")).collect();
    assert_eq!(hashes.len(), 6, "{lock}");
    assert_eq!(hashes[..3], hashes[3..], "{lock}");
}

#[test]
fn modern_era_over_http_uses_discover_meta_and_headers_and_no_session() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--http", "--era", "modern", "--page-size", "2"]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("protocol_version = \"2026-07-28\""), "{lock}");
    p.run(&["verify"]).expect(0);
    let log = log_lines(&p);
    assert!(!log.is_empty());
    for line in &log {
        assert!(line.starts_with("POST /mcp "), "{line}");
        assert!(line.contains("session=-"), "{line}");
        assert!(line.contains("version=2026-07-28"), "{line}");
    }
    let methods: Vec<&str> = log.iter().map(|l| l.split(' ').nth(2).unwrap()).collect();
    assert_eq!(
        methods,
        [
            "server/discover",
            "tools/list",
            "tools/list",
            "server/discover",
            "tools/list",
            "tools/list"
        ]
    );
    assert!(log[1].contains("method-header=tools/list"), "{}", log[1]);
}

#[test]
fn dual_era_http_server_is_pinned_in_the_modern_era() {
    let p = Project::bare(json!({}));
    let server = HttpServer::fixture(&["--http", "--era", "dual"]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes"]).expect(0);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("protocol_version = \"2026-07-28\"")
    );
}

#[test]
fn stdio_servers_are_pinned_in_the_era_they_speak() {
    for (era, version) in [
        ("legacy", "2025-11-25"),
        ("modern", "2026-07-28"),
        ("dual", "2026-07-28"),
    ] {
        let p = Project::bare(json!({"s": fixture_entry(&["--era", era, "--page-size", "1"])}));
        p.run(&["update", "--yes"]).expect(0);
        let lock = p.lock_text().unwrap();
        assert!(
            lock.contains(&format!("protocol_version = \"{version}\"")),
            "{era}: {lock}"
        );
        p.run(&["verify"]).expect(0);
    }
}

#[test]
fn a_server_that_no_longer_speaks_the_pinned_era_is_unverifiable_not_drifted() {
    // Pinned in the modern era, then the server drops it.
    let p = Project::bare(json!({"s": fixture_entry(&["--era", "dual"])}));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({"s": fixture_entry(&["--era", "legacy"])}));
    let doc = p.run(&["verify", "--format", "json"]).expect(3).json();
    let s = server_report(&doc, "s");
    assert_eq!(s["verdict"], "unverifiable");
    let error = s["error"].as_str().unwrap();
    assert!(
        error.contains("no longer speaks protocol 2026-07-28"),
        "{error}"
    );
    assert!(error.contains("mcp-lock update"), "{error}");
    // Pinned with the handshake, then the server speaks only the modern era.
    let p = Project::bare(json!({"s": fixture_entry(&["--era", "legacy"])}));
    p.run(&["update", "--yes"]).expect(0);
    p.set_servers(json!({"s": fixture_entry(&["--era", "modern"])}));
    let doc = p.run(&["verify", "--format", "json"]).expect(3).json();
    let error = server_report(&doc, "s")["error"]
        .as_str()
        .unwrap()
        .to_string();
    assert!(
        error.contains("no longer speaks protocol 2025-11-25"),
        "{error}"
    );
    // update moves the pin to the era the server speaks now.
    p.run(&["update", "--yes"]).expect(0);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("protocol_version = \"2026-07-28\"")
    );
    p.run(&["verify"]).expect(0);
}

#[test]
fn drift_over_http_names_tool_and_part() {
    let p = Project::bare(json!({}));
    let revision = p.path().join("revision");
    std::fs::write(&revision, "a").unwrap();
    let server =
        HttpServer::fixture(&["--http", "--revision-file", &revision.display().to_string()]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes"]).expect(0);
    std::fs::write(&revision, "b").unwrap();
    let doc = p.run(&["verify", "--format", "json"]).expect(1).json();
    let s = server_report(&doc, "remote");
    assert_eq!(s["verdict"], "stale");
    let changed: Vec<&str> = s["changes"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["tool"].as_str().unwrap())
        .collect();
    assert!(
        changed.contains(&"deploy_preview") && changed.contains(&"rollback"),
        "{changed:?}"
    );
}

#[test]
fn a_legacy_sse_server_behind_an_http_entry_is_detected_and_recorded() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--sse", "--page-size", "2"]);
    p.set_servers(json!({"old": http_entry(&server.url("/sse"))}));
    p.run(&["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("transport = \"sse\""), "{lock}");
    let first_run = log_lines(&p);
    // The spec's detection: a POST that fails with 4xx, then a GET for the endpoint.
    assert!(
        first_run.iter().any(|l| l.starts_with("POST /sse ")),
        "{first_run:#?}"
    );
    assert!(
        first_run.iter().any(|l| l.starts_with("GET /sse ")),
        "{first_run:#?}"
    );
    std::fs::write(p.path().join("requests.log"), "").unwrap();
    let run = p.run(&["verify"]);
    run.expect(0);
    assert!(!run.stdout().contains("launch"), "{}", run.stdout());
    // verify goes straight to the transport the lock recorded.
    let log = log_lines(&p);
    assert!(log[0].starts_with("GET /sse "), "{log:#?}");
    assert!(
        log[1..]
            .iter()
            .all(|l| l.starts_with("POST /message?sessionId=")),
        "{log:#?}"
    );
}

#[test]
fn sse_entries_go_straight_to_the_legacy_transport() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--sse"]);
    p.set_servers(json!({"old": {"type": "sse", "url": server.url("/sse")}}));
    p.run(&["update", "--yes"]).expect(0);
    assert!(log_lines(&p)[0].starts_with("GET /sse "));
    p.run(&["verify"]).expect(0);
}

/// A fixture whose session expires the way `misbehave` says lists completely, with
/// exactly one more initialize.
fn completes_after_one_new_session(misbehave: &str) {
    let p = Project::bare(json!({}));
    let server = logged_fixture(
        &p,
        &["--http", "--page-size", "1", "--http-misbehave", misbehave],
    );
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    p.run(&["update", "--yes", "--probe-timeout", "5"])
        .expect(0);
    assert!(p.lock_text().unwrap().contains("name = \"search_docs\""));
    let initializes = log_lines(&p)
        .iter()
        .filter(|l| l.contains(" initialize "))
        .count();
    assert_eq!(initializes, 2, "{:#?}", log_lines(&p));
}

#[test]
fn an_expired_session_is_opened_again_once_and_the_listing_completes() {
    completes_after_one_new_session("expire-session");
}

#[test]
fn a_session_that_keeps_expiring_leaves_the_listing_incomplete() {
    let p = Project::bare(json!({}));
    let server = HttpServer::fixture(&[
        "--http",
        "--page-size",
        "1",
        "--http-misbehave",
        "expire-always",
    ]);
    p.set_servers(json!({"remote": http_entry(&server.url("/mcp"))}));
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    assert!(run.stderr().contains("incomplete"), "{}", run.stderr());
    assert!(
        run.stderr().contains("Session not found"),
        "{}",
        run.stderr()
    );
    assert!(
        !p.lock_text()
            .unwrap_or_default()
            .contains("name = \"remote\"")
    );
}

#[test]
fn broken_http_servers_are_unverifiable_with_a_message_that_says_what_happened() {
    let cases = [
        ("status-500", "HTTP 500: database unavailable"),
        (
            "wrong-content-type",
            "unexpected Content-Type \"text/html\"",
        ),
        ("oversized-body", "message larger than 100000 bytes"),
        ("drop-mid-stream", "SSE stream"),
        ("slow-sse", "no answer within the request timeout of 1s"),
        ("redirect-cross-origin", "another origin; not followed"),
    ];
    let servers: Vec<HttpServer> = cases
        .iter()
        .map(|(mode, _)| HttpServer::fixture(&["--http", "--http-misbehave", mode]))
        .collect();
    let entries: serde_json::Map<String, Value> = cases
        .iter()
        .zip(&servers)
        .map(|((mode, _), s)| (mode.to_string(), http_entry(&s.url("/mcp"))))
        .collect();
    let p = Project::bare(Value::Object(entries));
    let run = p.run(&[
        "update",
        "--dry-run",
        "--request-timeout",
        "1",
        "--max-message-bytes",
        "100000",
    ]);
    run.expect(3);
    let stderr = run.stderr();
    for (mode, message) in cases {
        let line = stderr
            .lines()
            .find(|l| l.contains(&format!("{mode} [bare]: unverifiable")))
            .unwrap_or_else(|| panic!("no line for {mode}:\n{stderr}"));
        assert!(line.contains(message), "{mode}: {line}");
    }
}

#[test]
fn redirects_are_followed_within_the_origin_and_elsewhere_only_when_allowed() {
    let same = HttpServer::fixture(&["--http", "--http-misbehave", "redirect-same-origin"]);
    let other = HttpServer::fixture(&["--http", "--http-misbehave", "redirect-cross-origin"]);
    let p = Project::bare(json!({
        "same": http_entry(&same.url("/mcp")),
        "other": http_entry(&other.url("/mcp")),
    }));
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    assert!(
        p.lock_text()
            .unwrap()
            .contains("[[server]]\nname = \"same\"")
    );
    p.run(&["update", "--yes", "--allow-redirects"]).expect(0);
    assert!(p.lock_text().unwrap().contains("name = \"other\""));
}

#[test]
fn a_401_names_the_header_and_variable_used_and_never_the_value() {
    let token = "fixture-token-4f9a2c71";
    let server = HttpServer::fixture(&["--http", "--require-token", token]);
    let p = Project::bare(json!({"remote": {
        "url": server.url("/mcp"),
        "headers": {"Authorization": "Bearer ${FIXTURE_TOKEN}"}
    }}));
    let wrong = "wrong-token-8e1d0b55";
    let run = p.run_env(&["update", "--yes"], &[("FIXTURE_TOKEN", wrong)]);
    run.expect(3);
    let stderr = run.stderr();
    assert!(
        stderr.contains("authentication failed (HTTP 401)"),
        "{stderr}"
    );
    assert!(
        stderr.contains("WWW-Authenticate: Bearer realm=\"fixture\""),
        "{stderr}"
    );
    assert!(
        stderr.contains("header Authorization (from $FIXTURE_TOKEN)"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(wrong) && !run.stdout().contains(wrong),
        "{stderr}"
    );
    let run = p.run_env(&["update", "--yes"], &[("FIXTURE_TOKEN", token)]);
    run.expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("headers = [\"Authorization\"]"), "{lock}");
    assert!(!lock.contains(token) && !lock.contains("Bearer"), "{lock}");
    let run = p.run_env(&["verify", "--format", "json"], &[("FIXTURE_TOKEN", token)]);
    run.expect(0);
    assert!(!run.stdout().contains(token));
}

#[test]
fn proxy_variables_are_honoured_but_never_capture_loopback() {
    let server = logged_fixture_standalone();
    // A loopback URL with a dead proxy configured: the proxy is bypassed.
    let p = Project::bare(json!({"direct": http_entry(&server.0.url("/mcp"))}));
    let dead_proxy = "http://127.0.0.1:9";
    let env = [
        ("HTTP_PROXY", dead_proxy),
        ("HTTPS_PROXY", dead_proxy),
        ("ALL_PROXY", dead_proxy),
    ];
    p.run_env(&["update", "--yes"], &env).expect(0);
    // A remote host name through a proxy (the fixture, on loopback): the request
    // reaches the proxy in absolute form, so the proxy is used.
    let proxy = server.0.url("");
    let q = Project::bare(json!({"far": http_entry("http://mcp.example.invalid/mcp")}));
    q.run_env(
        &["update", "--yes"],
        &[("HTTP_PROXY", proxy.as_str()), ("NO_PROXY", "")],
    )
    .expect(0);
    assert!(
        q.lock_text()
            .unwrap()
            .contains("url = \"http://mcp.example.invalid/mcp\"")
    );
    let log = std::fs::read_to_string(&server.1).unwrap();
    assert!(log.lines().count() >= 4, "{log}");
}

fn logged_fixture_standalone() -> (HttpServer, std::path::PathBuf) {
    let dir = tempfile::tempdir().unwrap().keep();
    let log = dir.join("requests.log");
    let server = HttpServer::fixture(&["--http", "--log-file", &log.display().to_string()]);
    (server, log)
}

#[test]
fn twenty_two_servers_are_verified_in_one_run_and_a_hung_one_delays_only_itself() {
    let mut http = Vec::new();
    let mut entries = serde_json::Map::new();
    for i in 0..16 {
        entries.insert(
            format!("stdio-{i:02}"),
            fixture_entry(&["--page-size", "2"]),
        );
    }
    for (i, args) in [
        vec!["--http"],
        vec!["--http", "--era", "modern"],
        vec!["--http", "--respond", "sse"],
        vec!["--sse"],
        vec!["--http", "--era", "dual", "--page-size", "1"],
    ]
    .into_iter()
    .enumerate()
    {
        let server = HttpServer::fixture(&args);
        let path = if args.contains(&"--sse") {
            "/sse"
        } else {
            "/mcp"
        };
        entries.insert(format!("http-{i}"), http_entry(&server.url(path)));
        http.push(server);
    }
    entries.insert(
        "hung".into(),
        fixture_entry(&["--misbehave", "hang-initialize"]),
    );
    let p = Project::bare(Value::Object(entries));
    let run = p.run(&["update", "--yes", "--timeout", "3", "-j", "4"]);
    run.expect(3);
    let lock = p.lock_text().unwrap();
    assert_eq!(lock.matches("[[server]]").count(), 21, "{lock}");
    let doc = p
        .run(&["verify", "--format", "json", "--timeout", "3", "-j", "4"])
        .expect(3)
        .json();
    let servers = doc["servers"].as_array().unwrap();
    assert_eq!(servers.len(), 22);
    for s in servers {
        if s["name"] == "hung" {
            assert_eq!(s["verdict"], "unverifiable");
            assert!(
                s["error"].as_str().unwrap().contains("no answer within"),
                "{s}"
            );
        } else {
            assert_eq!(s["verdict"], "converged", "{s}");
        }
    }
}

#[test]
fn secrets_in_urls_and_echoed_in_error_pages_never_reach_the_output() {
    // A value that percent-encoding changes, in a URL nothing listens on.
    let key = "key with <spaces> 9f3e";
    let p = Project::bare(json!({"r": {"url": "http://127.0.0.1:9/mcp?key=${API_KEY}"}}));
    let run = p.run_env(&["update", "--dry-run"], &[("API_KEY", key)]);
    run.expect(3);
    let everything = format!("{}{}", run.stdout(), run.stderr());
    assert!(
        everything.contains("cannot connect to http://127.0.0.1:9/mcp?key=${API_KEY}"),
        "{everything}"
    );
    for form in [key, "key%20with%20%3Cspaces%3E%209f3e", "key%20with"] {
        assert!(!everything.contains(form), "{form} in {everything}");
    }
    // A 500 page that quotes the Authorization header near the cut-off point.
    let token = "tok-5b1e9c0d7a";
    let server = HttpServer::fixture(&["--http", "--http-misbehave", "echo-auth-500"]);
    let p = Project::bare(json!({"r": {
        "url": server.url("/mcp"),
        "headers": {"Authorization": "Bearer ${API_TOKEN}"}
    }}));
    let run = p.run_env(&["update", "--dry-run"], &[("API_TOKEN", token)]);
    run.expect(3);
    let stderr = run.stderr();
    assert!(stderr.contains("HTTP 500"), "{stderr}");
    assert!(
        !stderr.contains("tok-5b1e") && !stderr.contains("Bearer tok"),
        "{stderr}"
    );
}

#[test]
fn https_goes_through_rustls_and_a_failed_handshake_is_unverifiable() {
    // A plain-HTTP server behind an https URL: the TLS stack starts (no crypto
    // provider panic) and the failed handshake is reported as such.
    let server = HttpServer::fixture(&["--http"]);
    let url = server.url("/mcp").replace("http://", "https://");
    let p = Project::bare(json!({"tls": {"url": url}}));
    let run = p.run(&["update", "--dry-run"]);
    run.expect(3);
    let stderr = run.stderr();
    assert!(
        stderr.contains(&format!("cannot connect to {url}")),
        "{stderr}"
    );
    assert!(stderr.to_lowercase().contains("tls"), "{stderr}");
}

#[test]
fn no_configured_header_follows_a_redirect_to_another_origin() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--http", "--http-misbehave", "redirect-cross-origin"]);
    let key = "api-key-5d2e91c3";
    p.set_servers(json!({"other": {
        "url": server.url("/mcp"),
        "headers": {"X-Api-Key": "${FIXTURE_KEY}"}
    }}));
    p.run_env(
        &["update", "--yes", "--allow-redirects"],
        &[("FIXTURE_KEY", key)],
    )
    .expect(0);
    let log = log_lines(&p);
    let moved: Vec<&String> = log.iter().filter(|l| l.contains("/mcp-moved")).collect();
    let first: Vec<&String> = log.iter().filter(|l| l.contains(" /mcp ")).collect();
    assert!(!moved.is_empty() && !first.is_empty(), "{log:#?}");
    assert!(
        first
            .iter()
            .all(|l| l.contains(&format!(" api-key={key} "))),
        "{log:#?}"
    );
    assert!(moved.iter().all(|l| l.contains(" api-key=- ")), "{log:#?}");
}

#[test]
fn the_typescript_sdks_no_valid_session_id_is_an_expired_session_opened_again_once() {
    completes_after_one_new_session("expire-session-ts");
}

#[test]
fn a_302_answer_to_a_post_is_reported_as_a_redirect() {
    let server = HttpServer::fixture(&["--http", "--http-misbehave", "redirect-post-302"]);
    let p = Project::bare(json!({"moved": http_entry(&server.url("/mcp"))}));
    let run = p.run(&["update", "--yes", "--probe-timeout", "5"]);
    run.expect(3);
    let stderr = run.stderr();
    assert!(
        stderr.contains("HTTP 302 redirect to /mcp-moved, which turns a POST into a GET"),
        "{stderr}"
    );
    assert!(!stderr.contains("405"), "{stderr}");
}

#[test]
fn a_variable_in_the_url_query_is_percent_encoded_and_one_that_moves_the_host_is_refused() {
    let p = Project::bare(json!({}));
    let server = logged_fixture(&p, &["--http"]);
    p.set_servers(json!({"remote": http_entry(&format!("{}?key=${{KEY}}", server.url("/mcp")))}));
    p.run_env(&["update", "--yes"], &[("KEY", "a&b c#d")])
        .expect(0);
    let log = log_lines(&p);
    assert!(
        log.iter()
            .all(|l| l.starts_with("POST /mcp?key=a%26b%20c%23d ") || l.starts_with("DELETE")),
        "{log:#?}"
    );
    let port = server
        .url("/")
        .split(':')
        .nth(2)
        .unwrap()
        .trim_end_matches('/')
        .to_string();
    p.set_servers(
        json!({"remote": http_entry(&format!("http://${{TENANT}}.localhost:{port}/mcp"))}),
    );
    let run = p.run_env(&["update", "--yes"], &[("TENANT", "evil.com/x?")]);
    assert_ne!(run.code(), 0);
    assert!(
        run.stderr()
            .contains("the value of ${TENANT} would change the URL's host"),
        "{}",
        run.stderr()
    );
}
