//! Hostile and broken servers at the level of bytes, processes and HTTP: floods, a
//! server that never reads, a 100 MB line, a stream or a process that ends mid-answer,
//! redirect loops, and files that are not what they should be. Every row of
//! docs/robustness.md that names this file is one of these tests.

use crate::common;

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use common::{Project, Run, assert_none_left, unique_tag};
use serde_json::{Value, json};

/// The hostile server (examples/hostile_server.rs), built once per test binary.
fn hostile() -> PathBuf {
    static BUILT: std::sync::Once = std::sync::Once::new();
    BUILT.call_once(|| {
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let status = common::command(cargo)
            .args(["build", "--quiet", "--example", "hostile_server"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .expect("cargo runs");
        assert!(status.success(), "building the hostile server failed");
    });
    common::bin()
        .parent()
        .unwrap()
        .join("examples")
        .join("hostile_server")
}

fn hostile_entry(args: &[&str]) -> Value {
    json!({"command": hostile().display().to_string(), "args": args})
}

/// Runs mcp-lock to the end and returns its output with its peak resident memory in
/// KiB (its own or a reaped child's, whichever is larger: wait4's ru_maxrss).
// The child is reaped by wait4, which clippy does not know.
#[allow(clippy::zombie_processes)]
fn run_measured(p: &Project, args: &[&str]) -> (Run, u64) {
    let started = Instant::now();
    let mut child = common::command(common::bin())
        .args(args)
        .current_dir(p.path())
        .env("XDG_CONFIG_HOME", p.path().join(".user-config"))
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let out = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = out.read_to_end(&mut v);
        v
    });
    let err = std::thread::spawn(move || {
        let mut v = Vec::new();
        let _ = err.read_to_end(&mut v);
        v
    });
    let mut status = 0;
    // SAFETY: waits for the child this function started and fills a zeroed rusage.
    let usage = unsafe {
        let mut usage: libc::rusage = std::mem::zeroed();
        let pid = libc::wait4(child.id() as i32, &mut status, 0, &mut usage);
        assert_eq!(pid, child.id() as i32, "wait4 failed");
        usage
    };
    use std::os::unix::process::ExitStatusExt;
    let output = std::process::Output {
        status: std::process::ExitStatus::from_raw(status),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    };
    let run = Run {
        output,
        elapsed: started.elapsed(),
    };
    (run, usage.ru_maxrss as u64)
}

/// The peak memory of a dry-run update of one well-behaved server: the baseline the
/// hostile runs are held to.
fn baseline_kib() -> u64 {
    let p = Project::bare(json!({"calm": hostile_entry(&["--mode", "serve"])}));
    let (run, kib) = run_measured(&p, &["update", "--dry-run"]);
    run.expect(0);
    kib
}

/// The one line of stderr about `server`.
#[track_caller]
fn line_about(run: &Run, server: &str) -> String {
    // Verify reports on stdout, update on stderr.
    let stderr = run.stdout() + &run.stderr();
    stderr
        .lines()
        .find(|l| l.contains(&format!(" {server} [bare]: ")))
        .unwrap_or_else(|| panic!("no line about {server}:\n{stderr}"))
        .to_string()
}

#[test]
fn a_server_flooding_stderr_with_64_mb_is_listed_in_bounded_memory() {
    let base = baseline_kib();
    let p = Project::bare(json!({"noisy": hostile_entry(&["--mode", "flood-stderr"])}));
    let (run, kib) = run_measured(&p, &["update", "--yes"]);
    run.expect(0);
    assert!(p.lock_text().unwrap().contains("name = \"echo\""));
    // 64 MB went through; what is kept is 20 lines of at most 16 KB.
    assert!(
        kib < base + 16 * 1024,
        "peak {kib} KiB against a baseline of {base} KiB"
    );
    let (run, kib) = run_measured(&p, &["verify"]);
    run.expect(0);
    assert!(kib < base + 16 * 1024, "verify peaked at {kib} KiB");
}

#[test]
fn a_server_that_floods_stderr_and_dies_shows_its_last_words_and_exits_3() {
    let base = baseline_kib();
    let p = Project::bare(json!({"dying": hostile_entry(&["--mode", "flood-then-die"])}));
    let (run, kib) = run_measured(&p, &["update", "--yes"]);
    run.expect(3);
    let line = line_about(&run, "dying");
    assert!(line.contains("unverifiable"), "{line}");
    assert!(
        run.stderr().contains("fatal: the last words"),
        "{}",
        run.stderr()
    );
    // The tail is bounded: the message is short however much was written.
    assert!(
        run.stderr().len() < 16 * 1024,
        "{} bytes",
        run.stderr().len()
    );
    assert!(kib < base + 16 * 1024, "peak {kib} KiB against {base} KiB");
    assert!(p.lock_text().is_none(), "a lock was written");
}

#[test]
fn a_server_that_never_reads_its_stdin_times_out_instead_of_blocking_the_writer() {
    let tag = unique_tag("never-read");
    // 100,000 pings ask for 100,000 answers, far more than a pipe holds.
    let p = Project::bare(json!({"deaf": hostile_entry(&["--mode", "never-read", "--tag", &tag])}));
    let run = p.run(&[
        "update",
        "--yes",
        "--request-timeout",
        "2",
        "--timeout",
        "20",
    ]);
    run.expect(3);
    let line = line_about(&run, "deaf");
    assert!(line.contains("unverifiable"), "{line}");
    assert!(
        line.contains("the server stopped reading its input"),
        "{line}"
    );
    assert!(
        run.elapsed < Duration::from_secs(15),
        "took {:?}",
        run.elapsed
    );
    assert_none_left(&tag);
}

#[test]
fn a_hundred_megabyte_line_is_refused_at_the_message_limit_without_buffering_it() {
    let base = baseline_kib();
    let tag = unique_tag("long-line");
    let p = Project::bare(json!({"long": hostile_entry(&[
        "--mode", "long-line", "--bytes", "100000000", "--tag", &tag,
    ])}));
    let (run, kib) = run_measured(&p, &["update", "--yes"]);
    run.expect(3);
    let line = line_about(&run, "long");
    assert!(
        line.contains("message larger than 16777216 bytes"),
        "{line}"
    );
    // The reader stops at the 16 MiB limit; its buffer may double once on the way.
    assert!(
        kib < base + 40 * 1024,
        "peak {kib} KiB against a baseline of {base} KiB"
    );
    assert!(p.lock_text().is_none(), "a lock was written");
    assert_none_left(&tag);
}

#[test]
fn a_server_exiting_half_way_through_a_page_is_unverifiable_with_its_exit_status() {
    let p = Project::bare(json!({"halfway": hostile_entry(&["--mode", "exit-mid-page"])}));
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    let line = line_about(&run, "halfway");
    assert!(line.contains("exit status 4"), "{line}");
    assert!(
        run.stderr().contains("exiting half-way through a page"),
        "{}",
        run.stderr()
    );
    assert!(p.lock_text().is_none(), "a lock was written");
}

#[test]
fn a_server_that_closes_its_output_but_lingers_is_unverifiable_and_ended() {
    let tag = unique_tag("close-stdout");
    let p =
        Project::bare(json!({"mute": hostile_entry(&["--mode", "close-stdout", "--tag", &tag])}));
    let run = p.run(&["update", "--yes", "--request-timeout", "5"]);
    run.expect(3);
    let line = line_about(&run, "mute");
    assert!(line.contains("closed its output"), "{line}");
    assert!(
        run.elapsed < Duration::from_secs(5),
        "took {:?}",
        run.elapsed
    );
    assert_none_left(&tag);
}

/// One HTTP request as the loopback server below read it.
struct Request {
    method: String,
    path: String,
    body: Value,
}

type Handler = dyn Fn(&Request, &mut TcpStream) + Send + Sync;

/// A deliberately small HTTP/1.1 server on loopback, in this test process: each
/// connection is read once and answered by `handler`, which writes what it likes
/// (and may stop half-way). It lives as long as the test binary.
fn loopback_http(handler: impl Fn(&Request, &mut TcpStream) + Send + Sync + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    let handler: Arc<Handler> = Arc::new(handler);
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let handler = handler.clone();
            std::thread::spawn(move || {
                let mut stream = stream;
                if let Some(request) = read_request(&stream) {
                    handler(&request, &mut stream);
                }
            });
        }
    });
    url
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let path = parts.next()?.to_string();
    let mut length = 0;
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        body: serde_json::from_slice(&body).unwrap_or(Value::Null),
    })
}

fn respond(stream: &mut TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
    let mut head = format!(
        "HTTP/1.1 {status}\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for (name, value) in headers {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(body);
}

/// What a well-behaved handshake-era server answers to `request`: None for a
/// notification (202).
fn mcp_answer(request: &Request) -> Option<Value> {
    let id = request.body.get("id")?.clone();
    Some(match request.body["method"].as_str().unwrap_or("") {
        "initialize" => json!({"jsonrpc": "2.0", "id": id, "result": {
            "protocolVersion": "2025-11-25",
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "loopback", "version": "1.0.0"},
        }}),
        "tools/list" => json!({"jsonrpc": "2.0", "id": id, "result": {"tools": [{
            "name": "echo",
            "inputSchema": {"type": "object"},
        }]}}),
        _ => json!({"jsonrpc": "2.0", "id": id,
                    "error": {"code": -32601, "message": "method not found"}}),
    })
}

/// Answers `request` as a well-behaved server does, in JSON.
fn behave(request: &Request, stream: &mut TcpStream) {
    match (request.method.as_str(), mcp_answer(request)) {
        ("POST", Some(answer)) => respond(
            stream,
            "200 OK",
            &[("Content-Type", "application/json".into())],
            answer.to_string().as_bytes(),
        ),
        ("POST", None) => respond(stream, "202 Accepted", &[], b""),
        _ => respond(stream, "405 Method Not Allowed", &[], b""),
    }
}

fn http_project(entries: &[(&str, &str)]) -> Project {
    let servers: serde_json::Map<String, Value> = entries
        .iter()
        .map(|(name, url)| (name.to_string(), json!({"type": "http", "url": url})))
        .collect();
    Project::bare(Value::Object(servers))
}

#[test]
fn an_sse_answer_dropped_mid_event_in_verify_is_unverifiable_and_the_pins_stay() {
    let dropping = Arc::new(AtomicBool::new(false));
    let drop_now = dropping.clone();
    let url = loopback_http(move |request, stream| {
        if request.body["method"] == "tools/list" && drop_now.load(Ordering::SeqCst) {
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\n",
            );
            let _ = stream.write_all(b"event: message\ndata: {\"jsonrpc\":\"2.0\",\"id\":");
            let _ = stream.flush();
            return; // the connection closes half-way through the event
        }
        behave(request, stream);
    });
    let p = http_project(&[("flaky", &url)]);
    p.run(&["update", "--yes"]).expect(0);
    let pinned = p.lock_text().unwrap();
    dropping.store(true, Ordering::SeqCst);
    let run = p.run(&["verify"]);
    run.expect(3);
    let stdout = run.stdout();
    assert!(stdout.contains("flaky [bare]  unverifiable"), "{stdout}");
    assert!(
        stdout.contains("tools/list page 1: the server ended the SSE stream without answering"),
        "{stdout}"
    );
    // A stream that ended early is not a server whose tools were removed.
    assert!(!stdout.contains("removed"), "{stdout}");
    p.run(&["update", "--yes"]).expect(3);
    assert_eq!(p.lock_text().unwrap(), pinned);
}

#[test]
fn a_redirect_loop_stops_after_ten_hops_and_says_so() {
    let hops = Arc::new(AtomicUsize::new(0));
    let counted = hops.clone();
    // Every request is sent to the same address again, and a second one ping-pongs.
    let to_itself = loopback_http(move |request, stream| {
        counted.fetch_add(1, Ordering::SeqCst);
        respond(
            stream,
            "307 Temporary Redirect",
            &[("Location", request.path.clone())],
            b"",
        );
    });
    let ping_pong = loopback_http(|request, stream| {
        let to = if request.path == "/mcp" {
            "/elsewhere"
        } else {
            "/mcp"
        };
        respond(
            stream,
            "308 Permanent Redirect",
            &[("Location", to.into())],
            b"",
        );
    });
    let p = http_project(&[("looping", &to_itself), ("bouncing", &ping_pong)]);
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    for server in ["looping", "bouncing"] {
        let line = line_about(&run, server);
        assert!(line.contains("more than 10 redirects"), "{line}");
    }
    // The era probe and its redirects, then nothing: the loop is not retried.
    let sent = hops.load(Ordering::SeqCst);
    assert!((10..=11).contains(&sent), "{sent} requests");
    assert!(p.lock_text().is_none());
}

#[test]
fn a_401_without_a_challenge_and_a_500_with_a_megabyte_page_are_one_bounded_line_each() {
    let unauthorized = loopback_http(|_, stream| {
        respond(stream, "401 Unauthorized", &[], b"");
    });
    let failing = loopback_http(|_, stream| {
        let page = format!("<html>{}</html>", "<p>stack frame</p>".repeat(60_000));
        let headers = [("Content-Type", "text/html".to_string())];
        respond(
            stream,
            "500 Internal Server Error",
            &headers,
            page.as_bytes(),
        );
    });
    let p = http_project(&[("locked-out", &unauthorized), ("failing", &failing)]);
    let run = p.run(&["update", "--yes"]);
    run.expect(3);
    let line = line_about(&run, "locked-out");
    assert!(line.contains("authentication failed (HTTP 401)"), "{line}");
    assert!(line.contains("mcp-lock login"), "{line}");
    let line = line_about(&run, "failing");
    assert!(line.contains("HTTP 500"), "{line}");
    assert!(line.contains("<p>stack frame</p>"), "{line}");
    assert!(line.len() < 1000, "{} characters: {line}", line.len());
    assert!(p.lock_text().is_none());
}

#[test]
fn a_hundred_megabyte_sse_event_is_refused_at_the_message_limit() {
    let base = baseline_kib();
    let url = loopback_http(|request, stream| {
        if request.body["method"] != "tools/list" {
            return behave(request, stream);
        }
        let _ = stream.write_all(
            b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\ndata: {\"pad\":\"",
        );
        let piece = vec![b'x'; 64 * 1024];
        for _ in 0..(100_000_000 / piece.len()) {
            if stream.write_all(&piece).is_err() {
                return;
            }
        }
        let _ = stream.write_all(b"\"}\n\n");
    });
    let p = http_project(&[("huge", &url)]);
    let (run, kib) = run_measured(&p, &["update", "--yes"]);
    run.expect(3);
    let line = line_about(&run, "huge");
    assert!(
        line.contains("message larger than 16777216 bytes"),
        "{line}"
    );
    assert!(kib < base + 40 * 1024, "peak {kib} KiB against {base} KiB");
}

/// A project pinned against the well-behaved hostile server, for the file tests.
fn pinned() -> Project {
    let p = Project::bare(json!({"calm": hostile_entry(&["--mode", "serve"])}));
    p.run(&["update", "--yes"]).expect(0);
    p
}

#[test]
fn a_lock_cut_off_mid_file_is_a_usage_error_naming_the_file_and_line() {
    let p = pinned();
    let lock = p.lock_text().unwrap();
    // Cut inside the definition's multi-line string, as a full disk or a killed
    // editor leaves it.
    let cut = lock.find("\"inputSchema\"").unwrap();
    std::fs::write(p.path().join("mcp.lock"), &lock[..cut]).unwrap();
    for command in ["verify", "update"] {
        let run = p.run(&[command, "--yes"][..if command == "verify" { 1 } else { 2 }]);
        run.expect(2);
        let stderr = run.stderr();
        assert!(stderr.contains("mcp.lock:"), "{command}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{command}: {stderr}");
        assert!(!stderr.contains("panicked"), "{command}: {stderr}");
    }
    // Nothing was written over the cut lock.
    assert_eq!(p.lock_text().unwrap(), lock[..cut]);
}

#[test]
fn a_lock_that_is_not_utf8_is_a_usage_error_naming_the_file_line_and_byte() {
    let p = pinned();
    let mut bytes = std::fs::read(p.path().join("mcp.lock")).unwrap();
    let at = bytes.windows(4).position(|w| w == b"echo").unwrap();
    bytes[at] = 0xFF;
    std::fs::write(p.path().join("mcp.lock"), &bytes).unwrap();
    let line = 1 + bytes[..at].iter().filter(|&&b| b == b'\n').count();
    let column = at
        - bytes[..at]
            .iter()
            .rposition(|&b| b == b'\n')
            .map_or(0, |i| i + 1)
        + 1;
    for args in [&["verify"][..], &["update", "--yes"], &["guard", "calm"]] {
        let run = p.run(args);
        run.expect(2);
        let stderr = run.stderr();
        assert!(stderr.contains(&format!("mcp.lock:{line}: not valid UTF-8: byte {} of the file (column {column} of this line) is 0xFF", at + 1)), "{args:?}: {stderr}");
        assert_eq!(stderr.trim().lines().count(), 1, "{stderr}");
    }
    assert_eq!(std::fs::read(p.path().join("mcp.lock")).unwrap(), bytes);
}

#[test]
fn a_lock_or_a_config_that_is_a_directory_is_a_usage_error_naming_it() {
    let p = pinned();
    std::fs::remove_file(p.path().join("mcp.lock")).unwrap();
    std::fs::create_dir(p.path().join("mcp.lock")).unwrap();
    for args in [&["verify"][..], &["update", "--yes"]] {
        let run = p.run(args);
        run.expect(2);
        let stderr = run.stderr();
        assert!(stderr.contains("mcp.lock"), "{args:?}: {stderr}");
        assert!(stderr.contains("directory"), "{args:?}: {stderr}");
    }
    let q = Project::bare(json!({}));
    std::fs::remove_file(q.path().join(".mcp.json")).unwrap();
    std::fs::create_dir(q.path().join(".mcp.json")).unwrap();
    // Named or found, it is reported as what it is, not as no config at all.
    for args in [
        &["update", "--yes", "--config", ".mcp.json"][..],
        &["update", "--yes"],
    ] {
        let run = q.run(args);
        run.expect(2);
        let stderr = run.stderr();
        assert!(
            stderr.contains(".mcp.json: it is a directory"),
            "{args:?}: {stderr}"
        );
        assert!(
            !stderr.contains("no MCP client config found"),
            "{args:?}: {stderr}"
        );
    }
}

/// Runs mcp-lock in `p` and fails the test, ending the run by its PID, when it has
/// not exited within `limit`: a FIFO waited on would otherwise hang the test too.
fn run_within(p: &Project, args: &[&str], limit: Duration) -> Run {
    let out = tempfile::tempdir().unwrap();
    let (stdout, stderr) = (out.path().join("stdout"), out.path().join("stderr"));
    let started = Instant::now();
    let mut child = p
        .command(common::bin())
        .args(args)
        .stdout(std::fs::File::create(&stdout).unwrap())
        .stderr(std::fs::File::create(&stderr).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if started.elapsed() > limit {
            child.kill().unwrap();
            child.wait().unwrap();
            panic!(
                "mcp-lock {args:?} still running after {limit:?}: {}",
                std::fs::read_to_string(&stderr).unwrap()
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    Run {
        output: std::process::Output {
            status,
            stdout: std::fs::read(&stdout).unwrap(),
            stderr: std::fs::read(&stderr).unwrap(),
        },
        elapsed: started.elapsed(),
    }
}

fn make_fifo(path: &std::path::Path) {
    let _ = std::fs::remove_file(path);
    let name = std::ffi::CString::new(path.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: mkfifo on a NUL-terminated path this test owns.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0, "mkfifo");
}

#[test]
fn a_fifo_in_place_of_a_project_file_is_a_usage_error_not_a_hang() {
    let limit = Duration::from_secs(60);
    // (file replaced, runs that read it): each is refused at once with one line
    // naming the file, exit 2, and the FIFO is left as it was (nothing written).
    let cases: [(&str, &[&[&str]]); 6] = [
        (
            "mcp.lock",
            &[
                &["verify", "--no-connect"],
                &["verify"],
                &["update", "--yes"],
                &["guard", "calm"],
            ],
        ),
        (
            "mcp-lock.toml",
            &[&["verify", "--no-connect"], &["update", "--yes"]],
        ),
        (
            ".mcp.json",
            &[&["verify", "--no-connect"], &["update", "--yes"]],
        ),
        (".mcp-lock/upgrade.journal", &[&["upgrade", "--yes"]]),
        // wrap's backup of the config, and the lock's companion as update rewrites it.
        (".mcp.json.mcp-lock.bak", &[&["wrap"], &["unwrap"]]),
        ("mcp.closure.lock", &[&["verify"]]),
    ];
    for (file, runs) in cases {
        let p = pinned();
        let path = p.path().join(file);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        make_fifo(&path);
        for args in runs {
            let run = run_within(&p, args, limit);
            let stderr = run.stderr();
            run.expect(2);
            assert!(stderr.contains(file), "{file} {args:?}: {stderr}");
            assert!(stderr.contains("FIFO"), "{file} {args:?}: {stderr}");
            assert_eq!(
                stderr.trim().lines().count(),
                1,
                "{file} {args:?}: {stderr}"
            );
            use std::os::unix::fs::FileTypeExt;
            assert!(std::fs::metadata(&path).unwrap().file_type().is_fifo());
        }
    }
}

/// A script server in Python: answers initialize and tools/list with one tool.
const SCRIPT_SERVER: &str = r#"import sys, json
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}}, "serverInfo": {"name": "s", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "t", "inputSchema": {"type": "object"}}]}
    else:
        r = {}
    print(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}), flush=True)
"#;

#[test]
fn a_pinned_script_replaced_by_a_fifo_or_a_link_to_a_device_is_refused_by_the_guard_at_once() {
    let p = Project::bare(json!({"s": {"command": "python3", "args": ["srv.py"]}}));
    let script = p.path().join("srv.py");
    std::fs::write(&script, SCRIPT_SERVER).unwrap();
    p.run(&["update", "--yes"]).expect(0);
    // A FIFO nobody writes would hold a blocking read for ever; /dev/zero would
    // fill memory: both are refused before a byte is read, and nothing starts.
    make_fifo(&script);
    let run = run_within(&p, &["guard", "s"], Duration::from_secs(60));
    run.expect(1);
    assert!(
        run.stderr()
            .contains("cannot read the pinned script srv.py: it is a FIFO"),
        "{}",
        run.stderr()
    );
    std::fs::remove_file(&script).unwrap();
    std::os::unix::fs::symlink("/dev/zero", &script).unwrap();
    let run = run_within(&p, &["guard", "s"], Duration::from_secs(60));
    run.expect(1);
    assert!(
        run.stderr()
            .contains("the entry now runs /dev/zero, the lock pins srv.py"),
        "{}",
        run.stderr()
    );
}

#[test]
fn a_hundred_megabyte_line_from_the_server_ends_the_guards_session() {
    let tag = unique_tag("guard-long-line");
    let p = pinned();
    let server = hostile().display().to_string();
    let mut agent = common::McpPipe::guard(
        &p,
        &[
            "calm",
            "--max-message-bytes",
            "1048576",
            "--",
            &server,
            "--mode",
            "long-line",
            "--bytes",
            "100000000",
            "--tag",
            &tag,
        ],
    );
    agent.initialize();
    agent.send(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {}}));
    let answer = agent.answer(9);
    assert_eq!(answer["error"]["code"], -32603, "{answer}");
    let status = agent
        .wait_exit(Duration::from_secs(20))
        .expect("the guard ends the session");
    assert!(
        agent
            .stderr_shows("server sent a message larger than 1048576 bytes; the session was ended"),
        "{}",
        agent.stderr()
    );
    assert_eq!(status.code(), Some(1), "{}", agent.stderr());
    assert_none_left(&tag);
}

#[test]
fn a_legacy_sse_stream_that_drops_before_the_listing_is_answered_is_unverifiable() {
    let dropping = Arc::new(AtomicBool::new(false));
    let drop_now = dropping.clone();
    let stream_slot: Arc<std::sync::Mutex<Option<TcpStream>>> = Default::default();
    let url = loopback_http(move |request, stream| {
        if request.method == "GET" {
            // In the slot before the endpoint is named, so that the first POST finds
            // it; held open by that copy until the next GET replaces it.
            let mut slot = stream_slot.lock().unwrap();
            *slot = stream.try_clone().ok();
            let _ = stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nevent: endpoint\ndata: /message\n\n",
            );
            return;
        }
        respond(stream, "202 Accepted", &[], b"");
        let Some(answer) = mcp_answer(request) else {
            return;
        };
        let mut slot = stream_slot.lock().unwrap();
        let Some(events) = slot.as_mut() else { return };
        if request.body["method"] == "tools/list" && drop_now.load(Ordering::SeqCst) {
            let _ = events.shutdown(std::net::Shutdown::Both);
            *slot = None;
            return;
        }
        let _ = events.write_all(format!("event: message\ndata: {answer}\n\n").as_bytes());
    });
    let url = url.replace("/mcp", "/sse");
    let p = Project::bare(json!({"legacy": {"type": "sse", "url": url}}));
    p.run(&["update", "--yes"]).expect(0);
    let pinned = p.lock_text().unwrap();
    assert!(pinned.contains("name = \"echo\""), "{pinned}");
    dropping.store(true, Ordering::SeqCst);
    let run = p.run(&["verify", "--request-timeout", "10"]);
    run.expect(3);
    let stdout = run.stdout();
    assert!(stdout.contains("legacy [bare]  unverifiable"), "{stdout}");
    assert!(
        stdout.contains("tools/list page 1: the server ended the SSE stream"),
        "{stdout}"
    );
    assert!(!stdout.contains("removed"), "{stdout}");
    // Dropped, not timed out: the stream's end is noticed at once.
    assert!(
        run.elapsed < Duration::from_secs(8),
        "took {:?}",
        run.elapsed
    );
    p.run(&["update", "--yes"]).expect(3);
    assert_eq!(p.lock_text().unwrap(), pinned);
}

#[test]
fn sigterm_or_sighup_to_verify_with_servers_running_ends_every_one_and_exits_130() {
    let tag = unique_tag("verify-term");
    let serve = hostile_entry(&["--mode", "serve"]);
    let p = Project::bare(json!({"direct": serve, "behind-a-shell": serve}));
    p.run(&["update", "--yes"]).expect(0);
    let before = p.lock_text().unwrap();
    // Both hang without reading; one is a grandchild behind a shell, as with npx.
    let hostile = hostile().display().to_string();
    let script = format!("{hostile} --mode never-read --count 0 --tag {tag}; true");
    p.set_servers(json!({
        "direct": hostile_entry(&["--mode", "never-read", "--count", "0", "--tag", &tag]),
        "behind-a-shell": {"command": "sh", "args": ["-c", script]},
    }));
    for signal in [libc::SIGTERM, libc::SIGHUP] {
        let child = p.spawn(&["verify"]);
        let deadline = Instant::now() + Duration::from_secs(10);
        // The two servers and the shell.
        while common::processes_with(&tag).len() < 3 {
            assert!(
                Instant::now() < deadline,
                "{:?}",
                common::processes_with(&tag)
            );
            std::thread::sleep(Duration::from_millis(10));
        }
        // SAFETY: signalling the mcp-lock process this test started.
        unsafe {
            libc::kill(child.id() as i32, signal);
        }
        let out = child.wait_with_output().unwrap();
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert_eq!(out.status.code(), Some(130), "{signal}: {stderr}");
        assert!(stderr.contains("interrupted"), "{signal}: {stderr}");
        assert_none_left(&tag);
        assert_eq!(p.lock_text().unwrap(), before);
    }
}

#[test]
fn an_http_server_that_never_answers_or_trickles_its_headers_times_out() {
    let silent = loopback_http(|_, _| std::thread::sleep(Duration::from_secs(30)));
    let trickling = loopback_http(|_, stream| {
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\n");
        // One byte of a header every 100 ms, never ending the headers.
        for _ in 0..300 {
            if stream.write_all(b"X").is_err() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    let p = http_project(&[("silent", &silent), ("trickling", &trickling)]);
    let run = p.run(&[
        "update",
        "--yes",
        "--request-timeout",
        "1",
        "--timeout",
        "10",
    ]);
    run.expect(3);
    for server in ["silent", "trickling"] {
        let line = line_about(&run, server);
        assert!(line.contains("unverifiable"), "{line}");
        assert!(
            line.contains("initialize: no answer within the request timeout of 1s"),
            "{line}"
        );
    }
    // The probe and the handshake each wait out the request timeout, no longer.
    assert!(
        run.elapsed < Duration::from_secs(8),
        "took {:?}",
        run.elapsed
    );
}

#[test]
fn a_yaml_config_nested_100000_deep_is_refused_at_once_naming_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let p = Project::at(dir);
    let continued = p.path().join(".continue/mcpServers");
    std::fs::create_dir_all(&continued).unwrap();
    let deep = format!(
        "mcpServers:\n  - name: deep\n    args: {}{}\n",
        "[".repeat(100_000),
        "]".repeat(100_000)
    );
    std::fs::write(continued.join("deep.yaml"), deep).unwrap();
    let run = p.run(&["servers"]);
    run.expect(2);
    assert!(
        run.stderr().contains(
            ".continue/mcpServers/deep.yaml:3:264: not valid YAML: nested more than 256 deep"
        ),
        "{}",
        run.stderr()
    );
    assert_eq!(run.stderr().lines().count(), 1, "{}", run.stderr());
    // The parser alone took over a minute; the depth is told before it runs.
    assert!(run.elapsed < Duration::from_secs(5), "{:?}", run.elapsed);
}

#[test]
fn a_config_of_20000_servers_is_read_with_every_entry_on_its_line() {
    let servers: serde_json::Map<String, Value> = (0..20_000)
        .map(|i| {
            (
                format!("s{i:05}"),
                json!({"command": "x", "args": [i.to_string()]}),
            )
        })
        .collect();
    let p = Project::new(Value::Object(servers));
    let run = p.run(&["servers", "--format", "json"]);
    run.expect(0);
    let rows = run.json()["servers"].as_array().unwrap().clone();
    assert_eq!(rows.len(), 20_000);
    // Pretty-printed: the table opens on line 2, each entry takes 6 lines.
    for (i, row) in rows.iter().enumerate().step_by(997) {
        assert_eq!(row["name"], format!("s{i:05}"));
        assert_eq!(row["line"], 3 + 6 * i, "{row}");
    }
    // Quadratic reading took minutes at this size; linear takes seconds even in a
    // debug build on a loaded machine.
    assert!(run.elapsed < Duration::from_secs(60), "{:?}", run.elapsed);
}

#[test]
fn sigterm_while_waiting_for_the_file_lock_exits_130() {
    let p = Project::bare(json!({"calm": hostile_entry(&["--mode", "serve"])}));
    // Another writer holds the lock on the project directory: update blocks in
    // flock(2), a wait no async task can be cancelled out of.
    let held = std::fs::File::open(p.path()).unwrap();
    held.lock().unwrap();
    let mut child = p.spawn(&["update", "--yes"]);
    let mut stderr = child.stderr.take().unwrap();
    let (seen, waiting) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        let mut text = Vec::new();
        let mut chunk = [0u8; 4096];
        let mut told = false;
        while let Ok(n @ 1..) = stderr.read(&mut chunk) {
            text.extend_from_slice(&chunk[..n]);
            if !told && String::from_utf8_lossy(&text).contains("Blocking") {
                told = seen.send(()).is_ok();
            }
        }
        String::from_utf8_lossy(&text).into_owned()
    });
    if waiting.recv_timeout(Duration::from_secs(60)).is_err() {
        let _ = child.kill();
        let _ = child.wait();
        panic!(
            "update never waited for the file lock: {}",
            reader.join().unwrap()
        );
    }
    // SAFETY: signalling the mcp-lock process this test started.
    unsafe {
        libc::kill(child.id() as i32, libc::SIGTERM);
    }
    let deadline = Instant::now() + Duration::from_secs(10);
    let status = loop {
        if let Some(status) = child.try_wait().unwrap() {
            break status;
        }
        if Instant::now() > deadline {
            let _ = child.kill();
            let _ = child.wait();
            panic!("SIGTERM was not honoured while waiting for the file lock");
        }
        std::thread::sleep(Duration::from_millis(10));
    };
    drop(held);
    let stderr = reader.join().unwrap();
    assert!(p.lock_text().is_none(), "nothing was written");
    assert_eq!(status.code(), Some(130), "{stderr}");
    assert!(stderr.contains("interrupted"), "{stderr}");
}
