//! `mcp-lock login` / `logout` and the cached tokens, against a real OAuth
//! authorization server on loopback: fastmcp's in-memory provider (dynamic
//! registration, auto-approval, refresh-token rotation), installed by
//! scripts/install-test-servers.sh.

use crate::common;

use std::io::{BufRead, Read, Write};
use std::path::{Path, PathBuf};

use common::{HttpServer, Project, bin};
use serde_json::{Value, json};

fn oauth_server(args: &[&str], log: &Path) -> HttpServer {
    let dir = common::test_servers_dir();
    let python = dir.join("venv-oauth/bin/python");
    assert!(
        python.exists(),
        "the OAuth test server is not installed: run scripts/install-test-servers.sh"
    );
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/oauth_server.py");
    let log = log.display().to_string();
    let mut all = vec![script.to_str().unwrap(), "--log", log.as_str()];
    all.extend_from_slice(args);
    HttpServer::start(&python, &all, &[], None)
}

/// The environment every run gets: a private config home, and `CI` so nothing may
/// prompt or open a browser.
fn env(home: &Path) -> Vec<(String, String)> {
    vec![
        ("XDG_CONFIG_HOME".into(), home.display().to_string()),
        ("CI".into(), "1".into()),
    ]
}

fn run(p: &Project, home: &Path, args: &[&str]) -> common::Run {
    let env = env(home);
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
    p.run_env(args, &env)
}

/// A GET on loopback without following redirects: the Location it answers.
fn location_of(address: &str) -> String {
    let url = url::Url::parse(address).unwrap();
    let mut stream =
        std::net::TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).unwrap();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: {}:{}\r\nConnection: close\r\n\r\n",
        url.host_str().unwrap(),
        url.port().unwrap()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
        .lines()
        .find_map(|l| {
            let (name, value) = l.split_once(':')?;
            name.eq_ignore_ascii_case("location")
                .then(|| value.trim().to_string())
        })
        .unwrap_or_else(|| panic!("no redirect from the authorization endpoint:\n{answer}"))
}

/// Runs `mcp-lock login remote --no-browser`, plays the browser (the in-memory
/// provider approves at once) and pastes the callback address back. Returns stderr.
fn login(p: &Project, home: &Path) -> String {
    let (ok, seen) = try_login(p, home);
    assert!(ok, "login failed:\n{seen}");
    seen
}

/// [`login`] that may fail: whether it succeeded, and stderr.
fn try_login(p: &Project, home: &Path) -> (bool, String) {
    let mut child = common::command(bin())
        .args(["login", "remote", "--no-browser", "--timeout", "60"])
        .current_dir(p.path())
        .envs(env(home))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (address, mut seen) = printed_address(&mut stderr);
    let callback = location_of(&address);
    assert!(callback.contains("code="), "{callback}");
    let mut stdin = child.stdin.take().unwrap();
    writeln!(stdin, "{callback}").unwrap();
    drop(stdin);
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    (status.success(), seen)
}

fn token_files(home: &Path) -> Vec<PathBuf> {
    let dir = home.join("mcp-lock/oauth");
    let mut files: Vec<PathBuf> = std::fs::read_dir(&dir)
        .map(|d| d.flatten().map(|e| e.path()).collect())
        .unwrap_or_default();
    files.retain(|p| p.extension().is_some_and(|x| x == "json"));
    files
}

fn token_record(home: &Path) -> Value {
    let files = token_files(home);
    assert_eq!(files.len(), 1, "{files:?}");
    serde_json::from_str(&std::fs::read_to_string(&files[0]).unwrap()).unwrap()
}

fn secrets_of(record: &Value) -> Vec<String> {
    ["access_token", "refresh_token"]
        .iter()
        .filter_map(|k| record[*k].as_str().map(str::to_string))
        .collect()
}

#[test]
fn login_caches_a_private_token_that_update_and_verify_use_and_logout_forgets() {
    use std::os::unix::fs::PermissionsExt;
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(&[], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));

    // Without a login, a CI run is unverifiable and says what to do.
    let run_before = run(&p, &home, &["update", "--yes"]);
    run_before.expect(3);
    assert!(
        run_before.stderr().contains("mcp-lock login remote"),
        "{}",
        run_before.stderr()
    );

    let login_output = login(&p, &home);
    assert!(login_output.contains("Logged in"), "{login_output}");
    assert!(login_output.contains("client registered"), "{login_output}");
    let files = token_files(&home);
    assert_eq!(files.len(), 1);
    let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
    assert_eq!(mode(&files[0]), 0o600);
    assert_eq!(mode(&home.join("mcp-lock/oauth")), 0o700);
    let record = token_record(&home);
    assert_eq!(record["resource"], server.url("/mcp"));
    assert_eq!(record["issuer"], server.url("/"));

    let update = run(&p, &home, &["update", "--yes"]);
    update.expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("name = \"whoami\""), "{lock}");
    let verify = run(&p, &home, &["verify", "--format", "json"]);
    verify.expect(0);
    let log = std::fs::read_to_string(p.path().join("server.log")).unwrap();
    let token = record["access_token"].as_str().unwrap();
    assert!(
        log.lines()
            .any(|l| l.starts_with("POST /mcp ") && l.ends_with(&format!("Bearer {token}"))),
        "{log}"
    );

    let mut outputs = vec![login_output, lock];
    for r in [&run_before, &update, &verify] {
        outputs.push(r.stdout());
        outputs.push(r.stderr());
    }
    for secret in secrets_of(&record) {
        for text in &outputs {
            assert!(!text.contains(&secret), "a token leaked:\n{text}");
        }
    }

    // The guard in front of it uses the cached token; the agent never sees it.
    let guard_env = env(&home);
    let guard_env: Vec<(&str, &str)> = guard_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let mut agent = common::McpPipe::spawn(&bin(), &["guard", "remote"], p.path(), &guard_env);
    agent.initialize();
    let tools = agent.list_tools();
    assert!(tools.iter().any(|t| t["name"] == "whoami"), "{tools:?}");
    let answer = agent.call("whoami", json!({}));
    assert!(
        answer.to_string().contains("an authorized client"),
        "{answer}"
    );
    agent.close();
    agent.wait_exit(std::time::Duration::from_secs(10));
    outputs.push(agent.stderr());
    outputs.push(answer.to_string());
    outputs.push(std::fs::read_to_string(p.path().join(".mcp-lock/audit.jsonl")).unwrap());
    for secret in secrets_of(&token_record(&home)) {
        for text in &outputs {
            assert!(!text.contains(&secret), "a token leaked:\n{text}");
        }
    }

    assert!(
        p.lock_text()
            .unwrap()
            .contains(&format!("oauth_issuer = \"{}\"", server.url("/"))),
        "{}",
        p.lock_text().unwrap()
    );
    // A CI run with a static header verifies the lock pinned after login: how the
    // server was authenticated is a note, not drift.
    p.set_servers(json!({"remote": {
        "type": "http",
        "url": server.url("/mcp"),
        "headers": {"Authorization": "Bearer ${REMOTE_TOKEN}"}
    }}));
    let mut static_env = env(&home);
    static_env.push(("REMOTE_TOKEN".into(), token.to_string()));
    let static_env: Vec<(&str, &str)> = static_env
        .iter()
        .map(|(k, v)| (k.as_str(), v.as_str()))
        .collect();
    let with_header = p.run_env(&["verify", "--format", "json"], &static_env);
    with_header.expect(0);
    assert!(
        with_header.stdout().contains("OAuth login, issuer"),
        "{}",
        with_header.stdout()
    );
    assert!(!with_header.stdout().contains(token));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));

    let logout = run(&p, &home, &["logout", "remote"]);
    logout.expect(0);
    assert!(token_files(&home).is_empty());
    let after = run(&p, &home, &["verify"]);
    after.expect(3);
    let said = format!("{}{}", after.stdout(), after.stderr());
    assert!(
        said.contains("authentication failed (HTTP 401)") && said.contains("mcp-lock login remote"),
        "{said}"
    );
}

#[test]
fn an_expiring_token_is_refreshed_and_the_rotated_refresh_token_is_kept() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    // Tokens live 5 s: less than the refresh margin, so every run refreshes first.
    let server = oauth_server(&["--token-lifetime", "5"], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    let first = token_record(&home);
    let update = run(&p, &home, &["update", "--yes"]);
    update.expect(0);
    let second = token_record(&home);
    assert_ne!(first["access_token"], second["access_token"]);
    assert_ne!(first["refresh_token"], second["refresh_token"]);
    // The provider revoked the first refresh token when it rotated it: a second
    // refresh works only if the rotated one was saved.
    let verify = run(&p, &home, &["verify"]);
    verify.expect(0);
    let third = token_record(&home);
    assert_ne!(second["refresh_token"], third["refresh_token"]);
    for secret in secrets_of(&first)
        .into_iter()
        .chain(secrets_of(&second))
        .chain(secrets_of(&third))
    {
        for text in [
            update.stderr(),
            update.stdout(),
            verify.stderr(),
            verify.stdout(),
        ] {
            assert!(!text.contains(&secret), "a token leaked:\n{text}");
        }
        assert!(!p.lock_text().unwrap().contains(&secret));
    }
}

#[test]
fn a_token_the_server_rejects_before_its_expiry_is_refreshed_once_on_401() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(&[], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    // The server no longer knows this access token, though it has not expired.
    let file = token_files(&home).remove(0);
    let mut record = token_record(&home);
    record["access_token"] = json!("revoked-access-token");
    std::fs::write(&file, record.to_string()).unwrap();
    run(&p, &home, &["update", "--yes"]).expect(0);
    let refreshed = token_record(&home);
    assert_ne!(refreshed["access_token"], "revoked-access-token");
    assert_ne!(refreshed["refresh_token"], record["refresh_token"]);
}

#[test]
fn login_without_a_terminal_or_no_browser_refuses_at_once_instead_of_waiting() {
    let p = Project::bare(json!({"remote": {"type": "http", "url": "http://127.0.0.1:9/mcp"}}));
    let home = p.path().join("config-home");
    let run = run(&p, &home, &["login", "remote"]);
    run.expect(2);
    assert!(run.stderr().contains("--no-browser"), "{}", run.stderr());
    assert!(run.elapsed < std::time::Duration::from_secs(5));
}

/// A free port on 127.0.0.1 (bound once, then released).
fn free_port() -> u16 {
    std::net::TcpListener::bind(("127.0.0.1", 0))
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// A plain GET on loopback; the whole answer, head and body.
fn get(address: &str) -> String {
    let url = url::Url::parse(address).unwrap();
    let mut stream =
        std::net::TcpStream::connect((url.host_str().unwrap(), url.port().unwrap())).unwrap();
    let target = match url.query() {
        Some(q) => format!("{}?{q}", url.path()),
        None => url.path().to_string(),
    };
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    answer
}

/// Registers a client with the authorization server's registration endpoint, as an
/// administrator would before putting it in the config: (client_id, client_secret).
fn preregister(server: &HttpServer, redirect_uris: &[String]) -> (String, String) {
    let body = json!({
        "client_name": "pre-registered by the test",
        "redirect_uris": redirect_uris,
        "grant_types": ["authorization_code", "refresh_token"],
        "response_types": ["code"],
        "token_endpoint_auth_method": "client_secret_post",
        "scope": "mcp:read",
    })
    .to_string();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", server.port)).unwrap();
    write!(
        stream,
        "POST /register HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        server.port,
        body.len()
    )
    .unwrap();
    let mut answer = String::new();
    stream.read_to_string(&mut answer).unwrap();
    let (head, json_body) = answer.split_once("\r\n\r\n").unwrap();
    assert!(head.starts_with("HTTP/1.1 201"), "{answer}");
    let client: Value = serde_json::from_str(json_body).unwrap();
    (
        client["client_id"].as_str().unwrap().to_string(),
        client["client_secret"].as_str().unwrap().to_string(),
    )
}

/// Runs `mcp-lock login remote` with `extra` arguments and plays the browser through
/// the loopback listener (nothing is pasted back). Returns the redirect address the
/// login asked for and stderr.
fn login_through_the_listener(
    p: &Project,
    home: &Path,
    extra: &[&str],
    vars: &[(&str, &str)],
) -> (String, String) {
    let mut args = vec!["login", "remote", "--no-browser", "--timeout", "60"];
    args.extend_from_slice(extra);
    let mut child = common::command(bin())
        .args(&args)
        .current_dir(p.path())
        .envs(env(home))
        .envs(vars.iter().copied())
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (address, mut seen) = printed_address(&mut stderr);
    let authorize = url::Url::parse(&address).unwrap();
    let redirect = authorize
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("no redirect_uri in {address}"));
    let callback = location_of(&address);
    assert!(callback.starts_with(&redirect), "{callback} vs {redirect}");
    let page = get(&callback);
    assert!(page.starts_with("HTTP/1.1 200"), "{page}");
    assert!(page.contains("received the login"), "{page}");
    let mut rest = String::new();
    stderr.read_to_string(&mut rest).unwrap();
    seen.push_str(&rest);
    let status = child.wait().unwrap();
    drop(stdin);
    assert!(status.success(), "login failed:\n{seen}");
    (redirect, seen)
}

#[test]
fn a_pre_registered_client_from_the_config_logs_in_on_its_callback_port_without_registering() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = oauth_server(&[], &log);
    let (config_port, flag_port) = (free_port(), free_port());
    let uri = |port: u16| format!("http://127.0.0.1:{port}/callback");
    let (client_id, client_secret) = preregister(&server, &[uri(config_port), uri(flag_port)]);
    let registrations = || {
        std::fs::read_to_string(&log)
            .unwrap()
            .lines()
            .filter(|l| l.starts_with("POST /register "))
            .count()
    };
    assert_eq!(registrations(), 1);
    p.set_servers(json!({"remote": {
        "type": "http",
        "url": server.url("/mcp"),
        "oauth": {
            "clientId": client_id,
            "clientSecret": "${PRE_SECRET}",
            "callbackPort": config_port,
        }
    }}));
    let vars = [("PRE_SECRET", client_secret.as_str())];

    // The config's callbackPort.
    let (redirect, said) = login_through_the_listener(&p, &home, &[], &vars);
    assert_eq!(redirect, uri(config_port));
    assert!(said.contains("Logged in"), "{said}");
    assert!(!said.contains("client registered"), "{said}");
    assert!(!said.contains(&client_secret), "{said}");
    assert_eq!(registrations(), 1, "the login registered a client");
    let record = token_record(&home);
    assert_eq!(record["client_id"], client_id.as_str());
    run(&p, &home, &["update", "--yes"]).expect(0);
    let lock = p.lock_text().unwrap();
    assert!(lock.contains("name = \"whoami\""), "{lock}");
    assert!(!lock.contains(&client_secret), "{lock}");

    // --callback-port wins over the config's.
    run(&p, &home, &["logout", "remote"]).expect(0);
    assert!(token_files(&home).is_empty());
    let flag = flag_port.to_string();
    let (redirect, _) = login_through_the_listener(&p, &home, &["--callback-port", &flag], &vars);
    assert_eq!(redirect, uri(flag_port));
    assert_eq!(registrations(), 1, "the login registered a client");
    assert_eq!(token_record(&home)["client_id"], client_id.as_str());
    run(&p, &home, &["verify"]).expect(0);
}

#[test]
fn a_token_answered_403_insufficient_scope_at_login_is_stepped_up_to_the_scope_asked_for() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = oauth_server(&["--step-up-scope", "mcp:write"], &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let mut child = common::command(bin())
        .args(["login", "remote", "--no-browser", "--timeout", "60"])
        .current_dir(p.path())
        .envs(env(&home))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let mut seen = String::new();
    let mut asked = Vec::new();
    loop {
        let mut line = String::new();
        if stderr.read_line(&mut line).unwrap() == 0 {
            break;
        }
        seen.push_str(&line);
        if let Some(address) = line.trim().strip_prefix("http") {
            let address = format!("http{address}");
            let url = url::Url::parse(&address).unwrap();
            let scope = url
                .query_pairs()
                .find(|(k, _)| k == "scope")
                .map(|(_, v)| v.into_owned())
                .unwrap_or_default();
            asked.push(scope);
            assert!(asked.len() <= 3, "login kept asking:\n{seen}");
            let callback = location_of(&address);
            writeln!(stdin, "{callback}").unwrap();
        }
    }
    let status = child.wait().unwrap();
    drop(stdin);
    assert!(status.success(), "login failed:\n{seen}");
    assert_eq!(asked, ["mcp:read", "mcp:read mcp:write"], "{seen}");
    assert!(seen.contains("wants more scope"), "{seen}");
    let record = token_record(&home);
    let granted = record["scope"].as_str().unwrap_or_default();
    assert!(granted.split(' ').any(|s| s == "mcp:write"), "{record}");
    // The stepped-up token is one the server accepts.
    run(&p, &home, &["update", "--yes"]).expect(0);
    assert!(p.lock_text().unwrap().contains("name = \"whoami\""));
}

/// The authorization address `login` prints on stderr, read line by line, and what
/// it printed up to there.
fn printed_address(stderr: &mut impl BufRead) -> (String, String) {
    let mut seen = String::new();
    loop {
        let mut line = String::new();
        assert!(
            stderr.read_line(&mut line).unwrap() > 0,
            "login printed no address:\n{seen}"
        );
        seen.push_str(&line);
        if let Some(address) = line.trim().strip_prefix("http") {
            return (format!("http{address}"), seen);
        }
    }
}

/// Runs mcp-lock with the test environment (and `vars`), stdin empty; kills it and
/// fails when it is still running after `limit`. Returns the exit code, stdout and
/// stderr together, and how long it took.
fn run_bounded(
    p: &Project,
    home: &Path,
    args: &[&str],
    vars: &[(&str, &str)],
    limit: std::time::Duration,
) -> (i32, String, std::time::Duration) {
    let started = std::time::Instant::now();
    let child = common::command(bin())
        .args(args)
        .current_dir(p.path())
        .envs(env(home))
        .envs(vars.iter().copied())
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_bounded(child, started, limit, args)
}

fn wait_bounded(
    mut child: std::process::Child,
    started: std::time::Instant,
    limit: std::time::Duration,
    what: &[&str],
) -> (i32, String, std::time::Duration) {
    let mut stdout = child.stdout.take().unwrap();
    let mut stderr = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stdout.read_to_string(&mut text);
        text
    });
    let err = std::thread::spawn(move || {
        let mut text = String::new();
        let _ = stderr.read_to_string(&mut text);
        text
    });
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break Some(status);
        }
        if started.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            break None;
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    };
    let elapsed = started.elapsed();
    let said = format!("{}{}", out.join().unwrap(), err.join().unwrap());
    let Some(status) = status else {
        panic!("mcp-lock {what:?} was still running after {limit:?}:\n{said}");
    };
    (status.code().unwrap_or(-1), said, elapsed)
}

fn lines_starting(log: &Path, prefix: &str) -> usize {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .filter(|l| l.starts_with(prefix))
        .count()
}

/// Rewrites the one cached record.
fn edit_record(home: &Path, change: impl FnOnce(&mut Value)) {
    let file = token_files(home).remove(0);
    let mut record = token_record(home);
    change(&mut record);
    std::fs::write(&file, record.to_string()).unwrap();
}

#[test]
fn a_token_endpoint_that_never_answers_fails_verify_within_its_timeout_without_holding_the_cache_lock()
 {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let hang = p.path().join("hang");
    let hang_arg = hang.display().to_string();
    let server = oauth_server(&["--hang-file", &hang_arg], &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    run(&p, &home, &["update", "--yes"]).expect(0);
    edit_record(&home, |r| r["expires_at"] = json!(1));
    std::fs::write(&hang, "/token\n").unwrap();
    let before = lines_starting(&log, "POST /token ");

    let started = std::time::Instant::now();
    let verify = common::command(bin())
        .args(["verify", "--timeout", "4"])
        .current_dir(p.path())
        .envs(env(&home))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    while lines_starting(&log, "POST /token ") == before {
        assert!(
            started.elapsed() < std::time::Duration::from_secs(10),
            "verify never asked for a refresh"
        );
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    // While verify waits on the token endpoint, another run takes the cache's lock.
    let (code, said, took) = run_bounded(
        &p,
        &home,
        &["logout", "remote"],
        &[],
        std::time::Duration::from_secs(5),
    );
    assert_eq!(code, 0, "{said}");
    assert!(
        took < std::time::Duration::from_secs(3),
        "logout took {took:?}"
    );

    let (code, said, took) = wait_bounded(
        verify,
        started,
        std::time::Duration::from_secs(15),
        &["verify"],
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("did not answer in time"), "{said}");
    assert!(
        took < std::time::Duration::from_secs(9),
        "verify took {took:?}"
    );
    // The logout in between is not undone by the refresh that failed.
    assert!(token_files(&home).is_empty());
}

#[test]
fn a_metadata_endpoint_that_never_answers_fails_login_within_its_timeout() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let hang = p.path().join("hang");
    std::fs::write(&hang, "/.well-known/oauth-authorization-server\n").unwrap();
    let hang_arg = hang.display().to_string();
    let server = oauth_server(&["--hang-file", &hang_arg], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (code, said, took) = run_bounded(
        &p,
        &home,
        &["login", "remote", "--no-browser", "--timeout", "3"],
        &[],
        std::time::Duration::from_secs(15),
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("did not answer in time"), "{said}");
    assert!(
        took < std::time::Duration::from_secs(8),
        "login took {took:?}"
    );
}

#[test]
fn after_the_authorization_server_changes_the_record_for_the_issuer_the_server_names_is_used() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = oauth_server(&[], &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    run(&p, &home, &["update", "--yes"]).expect(0);
    let fresh = token_record(&home);
    // What a login with the server's former authorization server left: listed
    // first, expired, and (to show the issuer decides, not recency) newer.
    let stale = json!({
        "resource": server.url("/mcp"),
        "issuer": "http://127.0.0.1:9/former/",
        "token_endpoint": "http://127.0.0.1:9/former/token",
        "client_id": "former-client",
        "access_token": "former-access-token",
        "refresh_token": "former-refresh-token",
        "expires_at": 1,
        "obtained_at": 99_999_999_999u64,
    });
    let stale_file = home.join("mcp-lock/oauth/0000.json");
    std::fs::write(&stale_file, stale.to_string()).unwrap();

    let (code, said, _) = run_bounded(
        &p,
        &home,
        &["verify"],
        &[],
        std::time::Duration::from_secs(60),
    );
    assert_eq!(code, 0, "{said}");
    let token = fresh["access_token"].as_str().unwrap();
    let server_log = std::fs::read_to_string(&log).unwrap();
    assert!(
        server_log
            .lines()
            .last()
            .is_some_and(|l| l.ends_with(&format!("Bearer {token}"))),
        "{server_log}"
    );
    let left: Value = serde_json::from_str(&std::fs::read_to_string(&stale_file).unwrap()).unwrap();
    assert_eq!(left, stale);
}

/// A GET on loopback that gives up after 10 s: the answer's status line, or `None`.
fn status_of(address: &str) -> Option<String> {
    let url = url::Url::parse(address).unwrap();
    let mut stream = std::net::TcpStream::connect(("127.0.0.1", url.port().unwrap())).unwrap();
    stream
        .set_read_timeout(Some(std::time::Duration::from_secs(10)))
        .unwrap();
    let target = format!("{}?{}", url.path(), url.query().unwrap_or(""));
    write!(
        stream,
        "GET {target} HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
    )
    .unwrap();
    let mut answer = String::new();
    let _ = stream.read_to_string(&mut answer);
    answer.lines().next().map(str::to_string)
}

#[test]
fn a_forged_callback_or_an_idle_connection_neither_ends_nor_blocks_the_login() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(&[], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let started = std::time::Instant::now();
    let mut child = common::command(bin())
        .args(["login", "remote", "--no-browser", "--timeout", "30"])
        .current_dir(p.path())
        .envs(env(&home))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let stdin = child.stdin.take().unwrap();
    let mut stderr = std::io::BufReader::new(child.stderr.take().unwrap());
    let (address, seen) = printed_address(&mut stderr);
    let redirect = url::Url::parse(&address)
        .unwrap()
        .query_pairs()
        .find(|(k, _)| k == "redirect_uri")
        .map(|(_, v)| v.into_owned())
        .unwrap_or_else(|| panic!("no redirect_uri in {address}"));

    // Any local process can reach the port: its requests are answered and ignored.
    let forged = status_of(&format!(
        "{redirect}?error=access_denied&error_description=%1B%5B2Jforged&state=wrong"
    ));
    assert_eq!(
        forged.as_deref(),
        Some("HTTP/1.1 400 Bad Request"),
        "{seen}"
    );
    let wrong = status_of(&format!("{redirect}?code=forged&state=wrong"));
    assert_eq!(wrong.as_deref(), Some("HTTP/1.1 400 Bad Request"), "{seen}");
    let port = url::Url::parse(&redirect).unwrap().port().unwrap();
    let idle = std::net::TcpStream::connect(("127.0.0.1", port)).unwrap();

    let callback = location_of(&address);
    assert_eq!(
        status_of(&callback).as_deref(),
        Some("HTTP/1.1 200 OK"),
        "{seen}"
    );
    child.stderr = Some(stderr.into_inner());
    let (code, said, _) = wait_bounded(
        child,
        started,
        std::time::Duration::from_secs(40),
        &["login"],
    );
    drop((stdin, idle));
    assert_eq!(code, 0, "{seen}{said}");
    assert!(said.contains("Logged in"), "{said}");
    assert!(!said.contains("forged"), "{said}");
    run(&p, &home, &["update", "--yes"]).expect(0);
}

#[test]
fn a_token_lifetime_of_2_to_the_64_never_expires_and_the_granted_scope_is_shown_escaped() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = oauth_server(&["--mode", "huge-expiry", "--mode", "odd-scope"], &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (ok, said) = try_login(&p, &home);
    assert!(ok, "{said}");
    assert!(
        !said.contains('\u{1b}') && !said.contains('\u{202e}'),
        "{said:?}"
    );
    assert!(said.contains("\\u{001b}[2J\\u{202e}evil"), "{said}");
    assert_eq!(token_record(&home)["expires_at"], json!(u64::MAX));
    let refreshes = lines_starting(&log, "POST /token ");
    run(&p, &home, &["update", "--yes"]).expect(0);
    assert_eq!(lines_starting(&log, "POST /token "), refreshes, "refreshed");
}

#[test]
fn an_authorization_endpoint_that_is_not_https_or_loopback_http_is_never_shown_or_opened() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(&["--mode", "bad-scheme"], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (code, said, _) = run_bounded(
        &p,
        &home,
        &["login", "remote", "--no-browser", "--timeout", "20"],
        &[],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code, 3, "{said}");
    assert!(
        said.contains("neither https nor http on loopback"),
        "{said}"
    );
    assert!(!said.contains("Open this address"), "{said}");
}

#[test]
fn protected_resource_metadata_without_a_resource_is_refused() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(&["--mode", "no-resource"], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (code, said, _) = run_bounded(
        &p,
        &home,
        &["login", "remote", "--no-browser", "--timeout", "20"],
        &[],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("names no resource"), "{said}");
    assert!(!said.contains("Open this address"), "{said}");
}

#[test]
fn a_token_response_over_a_mebibyte_is_refused_and_nothing_is_cached() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let server = oauth_server(
        &["--token-padding", "4000000"],
        &p.path().join("server.log"),
    );
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (ok, said) = try_login(&p, &home);
    assert!(!ok, "{said}");
    assert!(said.contains("more than 1024 KiB"), "{said}");
    assert!(token_files(&home).is_empty());
}

#[test]
fn an_unwritable_token_cache_fails_the_login_before_anyone_is_sent_to_a_browser() {
    let p = Project::bare(json!({}));
    // The config home is a file: nothing can be created under it, even by root.
    let home = p.path().join("config-home");
    std::fs::write(&home, "").unwrap();
    let server = oauth_server(&[], &p.path().join("server.log"));
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let (code, said, _) = run_bounded(
        &p,
        &home,
        &["login", "remote", "--no-browser", "--timeout", "20"],
        &[],
        std::time::Duration::from_secs(30),
    );
    assert_eq!(code, 3, "{said}");
    assert!(said.contains("cannot create"), "{said}");
    assert!(!said.contains("Open this address"), "{said}");
}

// Shapes of real servers that the MCP conformance suite found mcp-lock getting wrong
// (tests/conformance.rs runs the suite itself), each against our own loopback
// fixture: tests/servers/auth_variants.py.

/// The fixture in `mode`, logging its requests as JSON lines to `log`.
fn variant_server(mode: &str, log: &Path) -> HttpServer {
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/servers/auth_variants.py");
    let log = log.display().to_string();
    HttpServer::start(
        Path::new("python3"),
        &[script.to_str().unwrap(), "--mode", mode, "--log", &log],
        &[],
        None,
    )
}

/// The fixture's log entries.
fn requests(log: &Path) -> Vec<Value> {
    std::fs::read_to_string(log)
        .unwrap_or_default()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

fn requests_to(log: &Path, path: &str) -> Vec<Value> {
    requests(log)
        .into_iter()
        .filter(|r| r["path"] == path)
        .collect()
}

/// An agent session through `mcp-lock guard remote` in the handshake era: the
/// answer to each of `calls` (tools/call params), after initialize and tools/list.
fn guard_calls(p: &Project, home: &Path, calls: &[Value]) -> Vec<Value> {
    let mut child = common::command(bin())
        .args(["guard", "remote"])
        .current_dir(p.path())
        .envs(env(home))
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = vec![
        json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {},
            "clientInfo": {"name": "test-agent", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 2, "method": "tools/list", "params": {}}),
    ];
    for (i, call) in calls.iter().enumerate() {
        lines.push(json!({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": call}));
    }
    let (tx, rx) = std::sync::mpsc::channel();
    let stdout = child.stdout.take().unwrap();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .lines()
            .map_while(Result::ok)
        {
            if let Ok(v) = serde_json::from_str::<Value>(&line) {
                let _ = tx.send(v);
            }
        }
    });
    let mut answers = std::collections::BTreeMap::new();
    for line in lines {
        let id = line.get("id").cloned();
        writeln!(stdin, "{line}").unwrap();
        let Some(id) = id else { continue };
        while !answers.contains_key(&id.to_string()) {
            let got = rx
                .recv_timeout(std::time::Duration::from_secs(20))
                .expect("the guard answers within 20 s");
            if let Some(got_id) = got.get("id") {
                answers.insert(got_id.to_string(), got);
            }
        }
    }
    drop(stdin);
    let _ = child.wait();
    (0..calls.len())
        .map(|i| answers[&(10 + i).to_string()].clone())
        .collect()
}

#[test]
fn a_registration_that_names_client_secret_basic_gets_basic_at_the_token_endpoint_for_the_code_and_the_refresh()
 {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("basic", &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    let record = token_record(&home);
    assert_eq!(record["token_endpoint_auth"], "client_secret_basic");
    // Expired: verify refreshes it, the same way.
    edit_record(&home, |r| r["expires_at"] = json!(1));
    run(&p, &home, &["update", "--yes"]).expect(0);
    let tokens = requests_to(&log, "/token");
    let grants: Vec<(&str, &str)> = tokens
        .iter()
        .map(|t| {
            (
                t["form"]["grant_type"].as_str().unwrap(),
                t["auth"].as_str().unwrap_or("none"),
            )
        })
        .collect();
    assert_eq!(
        grants,
        [("authorization_code", "Basic"), ("refresh_token", "Basic")],
        "{tokens:?}"
    );
    // The secret went in the header, never in the form.
    assert!(
        tokens.iter().all(|t| t["form"].get("client_id").is_none()),
        "{tokens:?}"
    );
}

#[test]
fn a_server_that_asks_only_when_tools_are_listed_gets_a_login_and_a_call_needing_more_scope_is_stepped_up_at_the_next_login()
 {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("list-401", &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    let before = run(&p, &home, &["update", "--yes"]);
    assert!(
        before.stderr().contains("mcp-lock login remote"),
        "{}",
        before.stderr()
    );
    // initialize alone is let through: login must still see the challenge.
    let seen = login(&p, &home);
    assert!(!seen.contains("no login is needed"), "{seen}");
    run(&p, &home, &["update", "--yes"]).expect(0);
    run(&p, &home, &["verify"]).expect(0);

    // The call needs mcp:write: the guard cannot open a browser, so it says what
    // to do and notes the scope for the next login.
    let call = json!({"name": "whoami", "arguments": {}});
    let refused = guard_calls(&p, &home, std::slice::from_ref(&call)).remove(0);
    let message = refused["error"]["message"]
        .as_str()
        .unwrap_or_default()
        .to_string();
    assert!(
        message.contains("insufficient_scope") && message.contains("mcp-lock login remote"),
        "{refused}"
    );
    assert_eq!(token_record(&home)["wanted_scope"], "mcp:read mcp:write");
    login(&p, &home);
    let asked: Vec<String> = requests_to(&log, "/authorize")
        .iter()
        .map(|r| r["query"]["scope"].as_str().unwrap_or("").to_string())
        .collect();
    assert_eq!(asked, ["mcp:read", "mcp:read mcp:write"]);
    let answered = guard_calls(&p, &home, &[call]).remove(0);
    assert_eq!(
        answered["result"]["content"][0]["text"], "an authorized client",
        "{answered}"
    );
}

#[test]
fn resource_metadata_at_the_root_naming_the_origin_is_taken_and_its_resource_sent_exactly_as_published()
 {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("root-prm", &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    login(&p, &home);
    let origin = server.url("/").trim_end_matches('/').to_string();
    let authorize = requests_to(&log, "/authorize");
    assert_eq!(authorize[0]["query"]["resource"], origin.as_str());
    let token = requests_to(&log, "/token");
    assert_eq!(token[0]["form"]["resource"], origin.as_str());
    run(&p, &home, &["update", "--yes"]).expect(0);
}

#[test]
fn a_2025_03_26_server_without_resource_metadata_logs_in_at_its_origin_with_or_without_metadata_there()
 {
    for mode in ["legacy-meta", "legacy-none"] {
        let p = Project::bare(json!({}));
        let home = p.path().join("config-home");
        let log = p.path().join("server.log");
        let server = variant_server(mode, &log);
        p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
        let seen = login(&p, &home);
        assert!(seen.contains("Logged in"), "{mode}: {seen}");
        let origin = server.url("/").trim_end_matches('/').to_string();
        let issuer = if mode == "legacy-meta" {
            format!("{origin}/oauth")
        } else {
            origin
        };
        assert_eq!(token_record(&home)["issuer"], issuer.as_str(), "{mode}");
        assert_eq!(requests_to(&log, "/register").len(), 1, "{mode}");
        run(&p, &home, &["update", "--yes"]).expect(0);
    }
}

#[test]
fn a_client_metadata_document_is_the_client_id_where_the_authorization_server_supports_them() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("cimd", &log);
    let document = "https://agents.example/mcp-lock/client.json";
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp"),
        "oauth": {"clientMetadataUrl": document}}}));
    let seen = login(&p, &home);
    assert!(!seen.contains("client registered"), "{seen}");
    assert_eq!(
        requests_to(&log, "/authorize")[0]["query"]["client_id"],
        document
    );
    assert!(requests_to(&log, "/register").is_empty());
    assert_eq!(token_record(&home)["client_id"], document);

    // Not https with a path: refused where it is written.
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp"),
        "oauth": {"clientMetadataUrl": "http://agents.example/"}}}));
    let bad = run(&p, &home, &["update", "--yes"]);
    assert_ne!(bad.code(), 0);
    assert!(
        bad.stderr().contains("clientMetadataUrl"),
        "{}",
        bad.stderr()
    );
}

/// A P-256 key as PKCS#8 PEM, for `private_key_jwt`.
fn p256_pem() -> String {
    use base64::Engine;
    let rng = ring::rand::SystemRandom::new();
    let doc = ring::signature::EcdsaKeyPair::generate_pkcs8(
        &ring::signature::ECDSA_P256_SHA256_FIXED_SIGNING,
        &rng,
    )
    .unwrap();
    format!(
        "-----BEGIN PRIVATE KEY-----\n{}\n-----END PRIVATE KEY-----\n",
        base64::engine::general_purpose::STANDARD.encode(doc.as_ref())
    )
}

#[test]
fn client_credentials_get_a_token_with_no_person_by_secret_or_signed_assertion_and_the_secret_is_never_kept()
 {
    let key = p256_pem();
    for (oauth, auth) in [
        (
            json!({"grant": "client_credentials", "clientId": "ci-bot", "clientSecret": "${CC_SECRET}"}),
            "Basic",
        ),
        (
            json!({"grant": "client_credentials", "clientId": "ci-bot", "privateKey": "${CC_KEY}"}),
            "none",
        ),
    ] {
        let p = Project::bare(json!({}));
        let home = p.path().join("config-home");
        let log = p.path().join("server.log");
        let server = variant_server("cc", &log);
        p.set_servers(
            json!({"remote": {"type": "http", "url": server.url("/mcp"), "oauth": oauth}}),
        );
        let mut vars = env(&home);
        vars.push(("CC_SECRET".into(), "s3cret".into()));
        vars.push(("CC_KEY".into(), key.clone()));
        let vars: Vec<(&str, &str)> = vars.iter().map(|(k, v)| (k.as_str(), v.as_str())).collect();
        let update = p.run_env(&["update", "--yes"], &vars);
        update.expect(0);
        let verify = p.run_env(&["verify", "--format", "json"], &vars);
        verify.expect(0);
        let tokens = requests_to(&log, "/token");
        // One grant: verify used the cached token.
        assert_eq!(tokens.len(), 1, "{tokens:?}");
        assert_eq!(tokens[0]["form"]["grant_type"], "client_credentials");
        assert_eq!(tokens[0]["auth"].as_str().unwrap_or("none"), auth);
        assert_eq!(tokens[0]["assertion"], auth == "none");
        let cached = std::fs::read_to_string(&token_files(&home)[0]).unwrap();
        let lock = p.lock_text().unwrap();
        for text in [
            &cached,
            &lock,
            &update.stdout(),
            &update.stderr(),
            &verify.stdout(),
        ] {
            assert!(
                !text.contains("s3cret") && !text.contains("PRIVATE KEY"),
                "{text}"
            );
        }
    }
}

#[test]
fn a_post_stream_the_server_closes_before_the_answer_is_resumed_with_last_event_id_after_its_retry()
{
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("sse-resume", &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    run(&p, &home, &["update", "--yes"]).expect(0);
    let answer = guard_calls(&p, &home, &[json!({"name": "whoami", "arguments": {}})]).remove(0);
    assert_eq!(
        answer["result"]["content"][0]["text"], "resumed",
        "{answer}"
    );
    let all = requests(&log);
    let closed = all.iter().find(|r| r["closed_stream"] == true).unwrap();
    let resumed = all
        .iter()
        .find(|r| r["method"] == "GET" && r["last_event_id"] == "e-1")
        .unwrap_or_else(|| panic!("no GET with Last-Event-ID: {all:?}"));
    let waited = resumed["ms"].as_i64().unwrap() - closed["ms"].as_i64().unwrap();
    assert!(
        waited >= 290,
        "resumed after {waited} ms, before the 300 ms retry"
    );
}

#[test]
fn a_first_refusal_with_32022_naming_the_version_asked_for_is_retried_once() {
    let p = Project::bare(json!({}));
    let home = p.path().join("config-home");
    let log = p.path().join("server.log");
    let server = variant_server("version-retry", &log);
    p.set_servers(json!({"remote": {"type": "http", "url": server.url("/mcp")}}));
    run(&p, &home, &["update", "--yes", "--client", "bare"]).expect(0);
    let discovers = requests(&log)
        .into_iter()
        .filter(|r| r["rpc"] == "server/discover")
        .count();
    assert_eq!(discovers, 2);
    assert!(p.lock_text().unwrap().contains("name = \"whoami\""));
}
