//! Claude Code's `headersHelper` (code.claude.com/docs/en/mcp, "Use dynamic headers for
//! custom authentication"): a command in a remote entry whose JSON output is sent as
//! headers, run through a shell in the project directory when the server is contacted,
//! never when the config is only read.

use std::path::Path;

use serde_json::json;

use crate::common::{HttpServer, McpPipe, Project, assert_none_left, bin, unique_tag};

/// The bearer token the fixture server requires, which only the helper knows.
const TOKEN: &str = "helper-token-7c41e9d2b8a3f605";

/// HOME and XDG_CONFIG_HOME in a temp dir of the project, never the real ones.
fn home(p: &Project) -> Vec<(&'static str, String)> {
    let home = p.path().join("home");
    std::fs::create_dir_all(home.join(".config")).unwrap();
    vec![
        ("HOME", home.display().to_string()),
        (
            "XDG_CONFIG_HOME",
            home.join(".config").display().to_string(),
        ),
    ]
}

fn run(p: &Project, args: &[&str], extra: &[(&str, &str)]) -> crate::common::Run {
    let env = home(p);
    let mut all: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    all.extend_from_slice(extra);
    p.run_env(args, &all)
}

fn script(dir: &Path, name: &str, text: &str) {
    std::fs::write(dir.join(name), text).unwrap();
}

/// A `.mcp.json` project whose remote entry runs `helper` for its headers.
fn project(server: &HttpServer, helper: &str) -> Project {
    Project::bare(json!({"remote": {
        "type": "http",
        "url": server.url("/mcp"),
        // Written, but the helper's header of the same name (any case) wins.
        "headers": {"authorization": "Bearer written-but-overridden"},
        "headersHelper": helper
    }}))
}

#[test]
fn headers_helper_runs_only_to_contact_and_its_headers_are_sent_but_never_shown_or_pinned() {
    let server = HttpServer::fixture(&["--http", "--require-token", TOKEN]);
    let p = project(&server, "sh ./auth-headers.sh");
    // Run in the project directory, with the server's name and URL in its environment.
    script(
        p.path(),
        "auth-headers.sh",
        &format!(
            "[ \"$CLAUDE_CODE_MCP_SERVER_NAME\" = remote ] || exit 9\n\
             [ \"$CLAUDE_CODE_MCP_SERVER_URL\" = '{}' ] || exit 9\n\
             touch helper-ran\n\
             echo '{{\"Authorization\": \"Bearer {TOKEN}\"}}'\n",
            server.url("/mcp")
        ),
    );
    // Reading the config runs nothing; contacting the server does.
    run(&p, &["servers", "--format", "json"], &[]).expect(0);
    assert!(
        !p.path().join("helper-ran").exists(),
        "servers ran the helper"
    );
    let update = run(&p, &["update", "--yes"], &[]);
    update.expect(0);
    assert!(p.path().join("helper-ran").exists());
    let verify = run(&p, &["verify", "--format", "json"], &[]);
    verify.expect(0);
    let lock = p.lock_text().expect("a lock was written");
    // The lock records header names as written, as before: never a value.
    assert!(lock.contains("headers = [\"authorization\"]"), "{lock}");
    for text in [
        &lock,
        &update.stdout(),
        &update.stderr(),
        &verify.stdout(),
        &verify.stderr(),
    ] {
        assert!(!text.contains(TOKEN), "the helper's token leaked: {text}");
    }
}

#[test]
fn a_failing_headers_helper_leaves_the_server_unverifiable_in_one_line_and_writes_nothing() {
    let server = HttpServer::fixture(&["--http", "--require-token", TOKEN]);
    let p = project(&server, "sh ./auth-headers.sh");
    let failing = "echo 'kinit: ticket expired' >&2; echo 'more detail' >&2; exit 1\n";
    script(p.path(), "auth-headers.sh", failing);
    let one_line = |stderr: &str| {
        let lines: Vec<&str> = stderr
            .lines()
            .filter(|l| l.contains("headersHelper"))
            .collect();
        assert_eq!(lines.len(), 1, "{stderr}");
        assert!(
            stderr.contains("remote [bare]"),
            "names the server: {stderr}"
        );
        assert!(
            lines[0].contains("headersHelper failed (exit status 1): kinit: ticket expired;"),
            "{stderr}"
        );
        assert!(!stderr.contains("more detail"), "{stderr}");
    };
    let update = run(&p, &["update", "--yes"], &[]);
    // As for a server that refuses authentication: unverifiable, exit 3.
    update.expect(3);
    one_line(&update.stderr());
    assert!(p.lock_text().is_none(), "nothing is written");
    // Pinned while it works; then verify and update find it failing.
    let working = format!("echo '{{\"Authorization\": \"Bearer {TOKEN}\"}}'\n");
    script(p.path(), "auth-headers.sh", &working);
    run(&p, &["update", "--yes"], &[]).expect(0);
    let lock = p.lock_text().unwrap();
    script(p.path(), "auth-headers.sh", failing);
    let verify = run(&p, &["verify"], &[]);
    verify.expect(3);
    one_line(&format!("{}{}", verify.stdout(), verify.stderr()));
    run(&p, &["update", "--yes"], &[]).expect(3);
    assert_eq!(
        p.lock_text().unwrap(),
        lock,
        "the pins are left as they were"
    );
}

#[test]
fn a_headers_helper_past_its_timeout_is_stopped_with_everything_it_started() {
    let server = HttpServer::fixture(&["--http", "--require-token", TOKEN]);
    let tag = unique_tag("headers-helper");
    let p = project(&server, &format!("./{tag} 30 & ./{tag} 30"));
    std::os::unix::fs::symlink("/bin/sleep", p.path().join(&tag)).unwrap();
    let update = run(
        &p,
        &["update", "--yes"],
        &[("MCP_LOCK_HEADERS_HELPER_TIMEOUT_MS", "500")],
    );
    update.expect(3);
    assert!(
        update.elapsed < std::time::Duration::from_secs(8),
        "took {:?}",
        update.elapsed
    );
    assert!(
        update
            .stderr()
            .contains("headersHelper did not finish within 0.5 s"),
        "{}",
        update.stderr()
    );
    assert_none_left(&tag);
    assert!(p.lock_text().is_none(), "nothing is written");
}

#[test]
fn the_guards_remote_bridge_sends_the_headers_helpers_headers() {
    let server = HttpServer::fixture(&["--http", "--require-token", TOKEN]);
    let p = project(&server, "sh ./auth-headers.sh");
    let working = format!("echo '{{\"Authorization\": \"Bearer {TOKEN}\"}}'\n");
    script(p.path(), "auth-headers.sh", &working);
    run(&p, &["update", "--yes"], &[]).expect(0);
    let env = home(&p);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    let mut agent = McpPipe::spawn(&bin(), &["guard", "remote"], p.path(), &env);
    let hello = agent.request(
        "initialize",
        json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "test-agent", "version": "1"}}),
    );
    assert!(
        hello["result"]["serverInfo"].is_object(),
        "{hello} {}",
        agent.stderr()
    );
    agent.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}));
    assert!(!agent.list_tools().is_empty(), "{}", agent.stderr());
    agent.close();
    assert!(!agent.stderr().contains(TOKEN), "{}", agent.stderr());
}

#[test]
fn a_claude_code_entry_with_a_headers_helper_and_another_clients_alike_entry_are_two_definitions_and_nothing_runs()
 {
    let p = Project::new(json!({"remote": {
        "type": "http",
        "url": "http://127.0.0.1:9/mcp",
        "headersHelper": "touch helper-ran; echo '{}'"
    }}));
    std::fs::create_dir_all(p.path().join(".vscode")).unwrap();
    std::fs::write(
        p.path().join(".vscode/mcp.json"),
        r#"{"servers": {"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}}"#,
    )
    .unwrap();
    // VS Code's agent never gets the helper's headers: one server the lock pins for
    // both would send them under VS Code's profile too.
    let update = run(&p, &["update", "--yes", "--client", "vscode"], &[]);
    update.expect(2);
    assert!(
        update.stderr().contains("defined differently in"),
        "{}",
        update.stderr()
    );
    assert!(!p.path().join("helper-ran").exists());
}
