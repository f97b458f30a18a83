//! The guard's plumbing: the server as a child process, one thread per direction,
//! and shutdown that leaves nothing running.
//!
//! Plain threads and blocking pipes rather than async: a proxy adds latency at every
//! hop, and a thread blocked in read(2) wakes faster than a task behind a reactor.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::unix::process::CommandExt;
use std::path::PathBuf;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::audit::{AuditLog, Members};
use super::pins::PinWatch;
use super::session::{Contract, Decision, ErrorCode, Pending, Refusal, RequiredAction, Session};
use crate::client::stdio::{live_groups, peek_exit, signal_group, unregister};
use crate::json::Json;
use crate::text::escape_for_terminal;
use crate::validate::Violation;

/// How long the server gets to exit by itself once the client has gone and its stdin
/// is closed: long enough to save state, short enough not to hold up the agent.
const EOF_GRACE: Duration = Duration::from_secs(2);
/// How long after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// The command that starts the real server.
#[derive(Debug, Clone)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    /// Set on top of the guard's own environment.
    pub env: BTreeMap<String, String>,
    pub cwd: PathBuf,
}

/// How a session ended.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Ended {
    /// The client closed its side (or went away); the server was shut down.
    ClientClosed,
    /// The server exited or closed its output first; how, in words.
    ServerExited(String),
}

/// Everything a session needs besides the server.
pub struct GuardSetup {
    pub session: Session,
    pub audit: AuditLog,
    /// Watches the lock the pins came from (made before they were read), so that a
    /// change is re-read at once.
    pub pins: PinWatch,
    /// Largest line accepted from either side.
    pub max_message_bytes: usize,
}

/// What both directions share.
struct Shared {
    session: Session,
    /// Formats the entries queued in common and redacts stderr lines; the file is
    /// written by each thread's own [`Notes`], outside this lock.
    audit: AuditLog,
    /// Entries decided but not yet written: written before what they decided is sent.
    audit_lines: Vec<u8>,
    /// Messages of the guard's own for the client (list_changed after a lock change).
    client_notes: Vec<u8>,
    pins: PinWatch,
}

/// Everything waiting in one direction for the end of a burst of input.
#[derive(Default)]
struct Outbox {
    /// To the other side.
    forward: Vec<u8>,
    /// Back to the client (the client's side only).
    back: Vec<u8>,
}

impl Outbox {
    /// Whether to write now: when no complete line is waiting in the reader's buffer
    /// (reading on could block), or enough has piled up. A lone request goes out at
    /// once, a burst in few writes.
    fn due<R: Read>(&self, reader: &BufReader<R>) -> bool {
        self.forward.len() + self.back.len() > 256 * 1024 || !reader.buffer().contains(&b'\n')
    }

    fn push_forward(&mut self, message: &[u8]) {
        self.forward.extend_from_slice(message);
        self.forward.push(b'\n');
    }

    fn push_back(&mut self, message: &[u8]) {
        self.back.extend_from_slice(message);
        self.back.push(b'\n');
    }
}

enum Event {
    ClientClosed,
    ServerClosed(Option<String>),
}

/// Starts the server and proxies stdin/stdout until one side closes.
pub fn run(launch: &Launch, setup: GuardSetup) -> io::Result<Ended> {
    let mut command = Command::new(&launch.command);
    command
        .args(&launch.args)
        .envs(&launch.env)
        .current_dir(&launch.cwd)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .process_group(0);
    // SAFETY: prctl is async-signal-safe and touches no memory of the parent. If the
    // guard is killed outright, the kernel kills the server too. The thread that
    // spawns lives for the whole session, as PR_SET_PDEATHSIG requires.
    unsafe {
        command.pre_exec(|| {
            libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL);
            Ok(())
        });
    }
    let mut groups = live_groups();
    let mut child = command.spawn()?;
    let pgid = child.id() as i32;
    groups
        .get_or_insert_with(std::collections::HashSet::new)
        .insert(pgid);
    drop(groups);
    let mut watchdog = Watchdog::start(pgid);
    let server_in = child.stdin.take().expect("stdin is piped");
    let server_out = child.stdout.take().expect("stdout is piped");

    let max = setup.max_message_bytes;
    let notes = |audit: &AuditLog| -> io::Result<Notes> {
        Ok(Notes {
            log: audit.writer()?,
            lines: Vec::new(),
        })
    };
    let (client_notes, server_notes) = (notes(&setup.audit)?, notes(&setup.audit)?);
    let mut main_notes = notes(&setup.audit)?;
    let shared = Arc::new(Mutex::new(Shared {
        pins: setup.pins,
        session: setup.session,
        audit: setup.audit,
        audit_lines: Vec::new(),
        client_notes: Vec::new(),
    }));
    let (events, first_event) = channel();
    let stuck = Arc::new(Stuck::default());
    {
        let shared = shared.clone();
        let events = events.clone();
        let stuck = stuck.clone();
        std::thread::spawn(move || {
            client_to_server(server_in, &shared, client_notes, &stuck, max, &events)
        });
    }
    {
        let shared = shared.clone();
        std::thread::spawn(move || {
            server_to_client(server_out, &shared, server_notes, max, &events)
        });
    }
    let event = loop {
        match first_event.recv_timeout(Duration::from_millis(250)) {
            Ok(event) => break event,
            Err(std::sync::mpsc::RecvTimeoutError::Disconnected) => break Event::ClientClosed,
            // A server that stops reading blocks the client's side in a write, where
            // it cannot see the client leave: look for that here.
            Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                if stuck.for_longer_than(Duration::from_secs(1)) && client_hung_up() {
                    break Event::ClientClosed;
                }
            }
        }
    };
    let ended = match event {
        Event::ClientClosed => {
            stop(&mut child, pgid, EOF_GRACE, &mut watchdog);
            // What the server wrote before it exited still goes to the client, which
            // may have closed only its writing side.
            let _ = first_event.recv_timeout(Duration::from_secs(1));
            let members: Members = vec![
                ("decision", json!("session_ended")),
                ("reason", json!("the client closed the session")),
            ];
            main_notes.audit("client_closed", members);
            main_notes.flush(&shared);
            Ended::ClientClosed
        }
        Event::ServerClosed(problem) => {
            let description = match problem {
                Some(problem) => {
                    stop(&mut child, pgid, Duration::ZERO, &mut watchdog);
                    problem
                }
                None => {
                    let exit = wait_exit(pgid, Duration::from_millis(500));
                    stop(&mut child, pgid, Duration::ZERO, &mut watchdog);
                    exit.unwrap_or_else(|| "server closed its output".into())
                }
            };
            answer_orphans(&shared, &mut main_notes, &description);
            Ended::ServerExited(description)
        }
    };
    Ok(ended)
}

/// A small process of its own that kills the server's group if the guard dies
/// without ending it (SIGKILL, a crash): the kernel's parent-death signal reaches
/// only the server's leader, not what it started (`npx` runs node as a grandchild).
struct Watchdog {
    pid: libc::pid_t,
    tell: std::os::fd::OwnedFd,
}

impl Watchdog {
    fn start(pgid: i32) -> Option<Self> {
        use std::os::fd::FromRawFd;
        let mut fds = [0i32; 2];
        // SAFETY: after fork the child makes only async-signal-safe calls (close,
        // dup2, signal, read, kill, _exit), as a fork of a threaded process must.
        unsafe {
            if libc::pipe2(fds.as_mut_ptr(), libc::O_CLOEXEC) != 0 {
                return None;
            }
            let pid = libc::fork();
            if pid < 0 {
                libc::close(fds[0]);
                libc::close(fds[1]);
                return None;
            }
            if pid == 0 {
                libc::close(fds[1]);
                // Hold nothing else open: the client's and the server's pipes must
                // close when the guard closes them.
                if fds[0] != 3 {
                    libc::dup2(fds[0], 3);
                }
                if libc::syscall(libc::SYS_close_range, 4u32, u32::MAX, 0u32) != 0 {
                    for fd in 4..4096 {
                        libc::close(fd);
                    }
                }
                for fd in 0..3 {
                    libc::close(fd);
                }
                // The terminal's signals are the guard's to handle.
                for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP, libc::SIGPIPE] {
                    libc::signal(sig, libc::SIG_IGN);
                }
                let mut byte = 0u8;
                loop {
                    let n = libc::read(3, (&mut byte as *mut u8).cast(), 1);
                    if n < 0 && *libc::__errno_location() == libc::EINTR {
                        continue;
                    }
                    if n == 0 && pgid > 1 {
                        // The guard is gone without saying goodbye.
                        libc::kill(-pgid, libc::SIGKILL);
                    }
                    libc::_exit(0);
                }
            }
            libc::close(fds[0]);
            Some(Watchdog {
                pid,
                tell: std::os::fd::OwnedFd::from_raw_fd(fds[1]),
            })
        }
    }

    /// The guard ended the group itself: the watchdog leaves without killing.
    fn dismiss(self) {
        let _ = std::fs::File::from(self.tell).write_all(b"x");
        // SAFETY: waits for this process's own child.
        unsafe {
            libc::waitpid(self.pid, std::ptr::null_mut(), 0);
        }
    }
}

/// When the client's side began a write to the server that has not returned yet.
#[derive(Default)]
struct Stuck {
    /// Milliseconds since `origin`, plus one; 0 when not writing.
    since: std::sync::atomic::AtomicU64,
    origin: std::sync::OnceLock<Instant>,
}

impl Stuck {
    fn now(&self) -> u64 {
        self.origin.get_or_init(Instant::now).elapsed().as_millis() as u64 + 1
    }

    fn start(&self) {
        self.since
            .store(self.now(), std::sync::atomic::Ordering::Relaxed);
    }

    fn stop(&self) {
        self.since.store(0, std::sync::atomic::Ordering::Relaxed);
    }

    fn for_longer_than(&self, limit: Duration) -> bool {
        let since = self.since.load(std::sync::atomic::Ordering::Relaxed);
        since != 0 && self.now().saturating_sub(since) > limit.as_millis() as u64
    }
}

/// Whether the client has closed its end of our stdin.
fn client_hung_up() -> bool {
    let mut fd = libc::pollfd {
        fd: 0,
        events: libc::POLLIN | libc::POLLRDHUP,
        revents: 0,
    };
    // SAFETY: one pollfd, no timeout.
    let ready = unsafe { libc::poll(&mut fd, 1, 0) };
    ready > 0 && fd.revents & (libc::POLLHUP | libc::POLLRDHUP | libc::POLLERR) != 0
}

/// Ends the server's whole group: wait `grace` for the leader to exit by itself, then
/// SIGTERM, then SIGKILL, and reap it.
fn stop(child: &mut Child, pgid: i32, grace: Duration, watchdog: &mut Option<Watchdog>) {
    if wait_exit(pgid, grace).is_none() {
        signal_group(pgid, libc::SIGTERM);
        wait_exit(pgid, TERM_GRACE);
    }
    // Sweep the group even after a clean exit: grandchildren may outlive the leader.
    // The leader is alive or an unreaped zombie here, so the group id is still ours.
    signal_group(pgid, libc::SIGKILL);
    // Dismissed while the group id is still ours, before the leader is reaped.
    if let Some(watchdog) = watchdog.take() {
        watchdog.dismiss();
    }
    let _ = child.wait();
    unregister(pgid);
}

/// Waits up to `limit` for the leader to exit, without reaping it.
fn wait_exit(pgid: i32, limit: Duration) -> Option<String> {
    let until = Instant::now() + limit;
    loop {
        if let Some(description) = peek_exit(pgid) {
            return Some(description);
        }
        if Instant::now() >= until {
            return None;
        }
        std::thread::sleep(Duration::from_millis(5));
    }
}

/// The server is gone: every request it did not answer gets an error, so the client
/// is not left waiting. A call already sent may have started.
fn answer_orphans(shared: &Mutex<Shared>, notes: &mut Notes, description: &str) {
    notes.flush(shared);
    let (pending, server) = {
        let mut state = lock(shared);
        let server = state.session.server().to_string();
        (state.session.drain_pending(), server)
    };
    let mut calls = Vec::new();
    let mut answers = Vec::new();
    for (id, pending) in pending {
        let message = match &pending {
            Pending::Call { tool } => {
                calls.push(tool.clone());
                format!(
                    "mcp-lock guard: the server exited while handling this call ({description}); it was sent, so it may have started"
                )
            }
            _ => format!("mcp-lock guard: the server exited before answering ({description})"),
        };
        let id: Value = serde_json::from_str(&id).unwrap_or(Value::Null);
        let answer =
            json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": message}});
        answers.extend_from_slice(answer.to_string().as_bytes());
        answers.push(b'\n');
    }
    let members: Members = vec![
        ("decision", json!("session_ended")),
        ("reason", json!(description)),
        ("calls_unanswered", json!(calls)),
    ];
    notes.audit("server_exited", members);
    notes.flush(shared);
    let _ = write_client_lines(&answers);
    notes.say(&format!("server {server}: {description}"));
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// One line on the guard's stderr (which the client usually logs), redacted and
/// escaped.
fn say(state: &Shared, message: &str) {
    let line = state.audit.redact(&escape_for_terminal(message));
    let _ = writeln!(io::stderr().lock(), "mcp-lock guard: {line}");
}

/// Writes whole lines to the client in one piece.
fn write_client_lines(lines: &[u8]) -> io::Result<()> {
    if lines.is_empty() {
        return Ok(());
    }
    let mut out = io::stdout().lock();
    out.write_all(lines)?;
    out.flush()
}

enum Line {
    Text,
    TooLong,
    Eof,
}

/// Reads one line (without its newline) of at most `max` bytes into `buf`. A longer
/// line is skipped to its end and reported as `TooLong`.
fn read_line(reader: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if available.is_empty() {
            return Ok(match (too_long, buf.is_empty()) {
                (true, _) => Line::TooLong,
                (false, true) => Line::Eof,
                (false, false) => Line::Text,
            });
        }
        let (chunk, used, end) = match available.iter().position(|&b| b == b'\n') {
            Some(i) => (&available[..i], i + 1, true),
            None => (available, available.len(), false),
        };
        if !too_long {
            if buf.len() + chunk.len() > max {
                too_long = true;
                buf.clear();
            } else {
                buf.extend_from_slice(chunk);
            }
        }
        reader.consume(used);
        if end {
            return Ok(if too_long { Line::TooLong } else { Line::Text });
        }
    }
}

/// Whether every integer in a JSON text fits 64 bits (the widest the argument check
/// reads exactly). Decimals and exponents are read as doubles, as most servers do.
fn integers_fit(text: &[u8]) -> bool {
    let mut i = 0;
    let mut in_string = false;
    while i < text.len() {
        let c = text[i];
        if in_string {
            match c {
                b'\\' => i += 1,
                b'"' => in_string = false,
                _ => {}
            }
            i += 1;
            continue;
        }
        if c == b'"' {
            in_string = true;
        } else if c == b'-' || c.is_ascii_digit() {
            let start = i;
            while i < text.len()
                && matches!(text[i], b'0'..=b'9' | b'.' | b'e' | b'E' | b'+' | b'-')
            {
                i += 1;
            }
            let token = std::str::from_utf8(&text[start..i]).unwrap_or("");
            let integer = !token.contains(['.', 'e', 'E']);
            if integer && token.parse::<i64>().is_err() && token.parse::<u64>().is_err() {
                return false;
            }
            continue;
        }
        i += 1;
    }
    true
}

/// The canonical text of a JSON-RPC id: the key pending requests are found by, so
/// that 1 and 1.0 are the same request.
fn id_key(id: &Json) -> String {
    id.canonical().unwrap_or_default()
}

/// The client's side: every message is read strictly, calls are decided, and only
/// what passes reaches the server.
fn client_to_server(
    mut server_in: ChildStdin,
    shared: &Mutex<Shared>,
    mut notes: Notes,
    stuck: &Stuck,
    max: usize,
    events: &Sender<Event>,
) {
    let stdin = io::stdin();
    let mut reader = BufReader::with_capacity(64 * 1024, stdin.lock());
    let mut buf = Vec::new();
    let mut out = Outbox::default();
    loop {
        let line = match read_line(&mut reader, &mut buf, max) {
            Ok(Line::Eof) | Err(_) => break,
            Ok(Line::TooLong) => {
                notes.refuse(&format!(
                    "a message from the client larger than {max} bytes"
                ));
                let error = rpc_error(
                    &Value::Null,
                    -32600,
                    &format!("mcp-lock guard: message larger than {max} bytes; not forwarded"),
                );
                out.push_back(error.as_bytes());
                None
            }
            Ok(Line::Text) => Some(&buf),
        };
        if let Some(line) = line
            && !line.iter().all(u8::is_ascii_whitespace)
        {
            let (forward, answer) = from_client(line, shared, &mut notes);
            if let Some(bytes) = forward {
                out.push_forward(&bytes);
            }
            if let Some(answer) = answer {
                out.push_back(answer.as_bytes());
            }
        }
        if out.due(&reader) {
            let client_notes = notes.flush(shared);
            out.back.extend_from_slice(&client_notes);
            if !out.forward.is_empty() {
                stuck.start();
                let written = server_in.write_all(&out.forward);
                stuck.stop();
                if written.is_err() {
                    // The server is gone; its side reports how. Refusals decided in
                    // this burst still reach the client.
                    let _ = write_client_lines(&out.back);
                    break;
                }
                out.forward.clear();
            }
            if write_client_lines(&out.back).is_err() {
                break;
            }
            out.back.clear();
        }
    }
    // Reported before the server's stdin closes: a server that exits at once on EOF
    // must not look like one that exited by itself.
    let _ = events.send(Event::ClientClosed);
    drop(server_in);
}

fn rpc_error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What to send the server and what to answer the client, for one line from the
/// client.
fn from_client(
    line: &[u8],
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> (Option<Vec<u8>>, Option<String>) {
    let parsed = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| Json::parse(text).map_err(|e| e.to_string()));
    let message = match parsed {
        Ok(message) => message,
        Err(e) => {
            notes.refuse(&format!("a message from the client that is not JSON: {e}"));
            return (
                None,
                Some(rpc_error(
                    &Value::Null,
                    -32700,
                    &format!("mcp-lock guard: not JSON ({e}); not forwarded"),
                )),
            );
        }
    };
    if message.has_repeated_member() {
        let id = message.get("id").map(Json::to_value).unwrap_or(Value::Null);
        notes.refuse("a message from the client that names a member twice");
        let answer = (!id.is_null()).then(|| {
            rpc_error(&id, -32600, "mcp-lock guard: a member name is repeated, so readers disagree on what the message says; not forwarded")
        });
        return (None, answer);
    }
    // The same text read the way a server reads it, integers exact: what arguments
    // are checked against, so the value checked is the value sent. Integers beyond 64
    // bits cannot be read exactly here, and are refused in calls.
    let is_call =
        |m: &Json| m.get("method").and_then(Json::as_str).as_deref() == Some("tools/call");
    let has_call = match &message {
        Json::Array(items) => items.iter().any(is_call),
        single => is_call(single),
    };
    let exact: Option<Value> = if has_call {
        serde_json::from_slice(line).ok()
    } else {
        None
    };
    let fits = !has_call || integers_fit(line);
    match &message {
        // A batch (2025-03-26): each request on its own, passed on as a batch.
        Json::Array(items) => {
            let mut forward = Vec::new();
            let mut answers = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let exact = exact.as_ref().and_then(|v| v.get(i));
                match decide(item, exact, fits, shared, notes) {
                    Verdict::Forward => forward.push(match exact {
                        Some(v) => v.to_string(),
                        None => item.canonical().unwrap_or_default(),
                    }),
                    Verdict::Answer(answer) => answers.push(answer),
                    Verdict::Drop => {}
                }
            }
            let forward =
                (!forward.is_empty()).then(|| format!("[{}]", forward.join(",")).into_bytes());
            let answer = (!answers.is_empty()).then(|| format!("[{}]", answers.join(",")));
            (forward, answer)
        }
        single => match decide(single, exact.as_ref(), fits, shared, notes) {
            Verdict::Forward => (Some(line.to_vec()), None),
            Verdict::Answer(answer) => (None, Some(answer)),
            Verdict::Drop => (None, None),
        },
    }
}

enum Verdict {
    Forward,
    Answer(String),
    Drop,
}

/// One message from the client: requests are remembered so their answers can be
/// recognised, calls are decided.
fn decide(
    message: &Json,
    exact: Option<&Value>,
    fits: bool,
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Verdict {
    if !message.is_object() {
        // Not a message at all (a nested batch, a bare value): a lenient server could
        // still find a call in it.
        notes.refuse("a message from the client that is not a JSON-RPC object");
        return Verdict::Answer(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: not a JSON-RPC message; not forwarded",
        ));
    }
    let method = message.get("method").and_then(Json::as_str);
    let (Some(method), Some(id)) = (method.clone(), message.get("id")) else {
        if method.as_deref() == Some("tools/call") {
            // A call sent as a notification: some servers run it anyway, unchecked.
            let members: Members = vec![
                ("decision", json!("refused")),
                ("reason", json!("tools/call without an id")),
            ];
            notes.audit("tools/call", members);
            notes.say("dropped a tools/call without an id (it cannot be answered)");
            return Verdict::Drop;
        }
        // A notification, or the client answering a request of the server's.
        return Verdict::Forward;
    };
    let key = id_key(id);
    let params = message.get("params");
    let mut state = lock(shared);
    if state.session.is_pending(&key) {
        // Two requests with one id: the server's answer could be taken for either,
        // a listing for a call's result or the reverse.
        drop(state);
        notes.refuse("a request whose id is already in use");
        // Answered with a null id: the id itself still belongs to the first request.
        return Verdict::Answer(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: a request with this id is still waiting for its answer; not forwarded",
        ));
    }
    let pending = match method.as_str() {
        "tools/list" => Pending::List {
            first_page: matches!(
                params.and_then(|p| p.get("cursor")),
                None | Some(Json::Null)
            ),
            generation: state.session.generation(),
        },
        "initialize" | "server/discover" => Pending::Handshake,
        "tools/call" => {
            reload_pins(&mut state);
            let Some(tool) = params.and_then(|p| p.get("name")).and_then(Json::as_str) else {
                drop(state);
                notes.refuse("a tools/call without a tool name");
                return Verdict::Answer(rpc_error(
                    &id.to_value(),
                    -32602,
                    "mcp-lock guard: tools/call without a tool name; not forwarded",
                ));
            };
            let contract = state.session.contract(&tool);
            // The arguments are checked and the entry written outside the lock, so
            // answers from the server are not held up meanwhile.
            drop(state);
            // No exact reading (a lone surrogate, nesting serde_json refuses): the
            // arguments cannot be checked as the server will read them.
            let arguments = exact.map(|m| m["params"].get("arguments").cloned());
            let fits = fits && arguments.is_some();
            let arguments = arguments.flatten();
            let call = Call {
                id,
                key,
                tool,
                arguments: arguments.unwrap_or_else(|| json!({})),
                fits,
                modern: params
                    .and_then(|p| p.get("_meta"))
                    .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                    .is_some(),
            };
            return decide_call(call, contract, shared, notes);
        }
        _ => Pending::Other,
    };
    state.session.expect(key, pending);
    Verdict::Forward
}

/// One `tools/call` as the client sent it.
struct Call<'a> {
    id: &'a Json,
    key: String,
    tool: String,
    /// Read with integers exact.
    arguments: Value,
    /// Every integer in the message fits 64 bits.
    fits: bool,
    /// The request carried the 2026-07-28 `_meta` protocol version.
    modern: bool,
}

/// A call whose contract was looked up: its arguments checked, the decision logged.
fn decide_call(
    call: Call<'_>,
    contract: Result<Contract, Refusal>,
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Verdict {
    let Call {
        id,
        key,
        tool,
        arguments,
        fits,
        modern,
    } = call;
    let decision = match contract {
        Ok(contract) if !fits => Decision::Refuse(Refusal {
            error_code: ErrorCode::InvalidArguments,
            tool: tool.clone(),
            required_action: RequiredAction::FixArguments,
            side_effect_started: false,
            pinned_hash: Some(contract.pinned_hash.clone()),
            live_hash: Some(contract.pinned_hash),
            violations: vec![Violation {
                path: String::new(),
                message: "the call cannot be read exactly (an integer beyond 64 bits, a lone surrogate, or nesting too deep), so it cannot be checked".into(),
            }],
        }),
        Ok(contract) => contract.judge(&arguments),
        Err(refusal) => Decision::Refuse(refusal),
    };
    let mut members: Members = vec![
        ("request_id", id.to_value()),
        ("tool", json!(tool)),
        ("arguments", arguments),
    ];
    match decision {
        Decision::Forward {
            pinned_hash,
            unvalidated,
        } => {
            members.push(("decision", json!("forwarded")));
            members.push(("pinned_hash", json!(pinned_hash)));
            members.push(("live_hash", json!(pinned_hash)));
            if let Some(reason) = &unvalidated {
                members.push(("arguments_unchecked", json!(reason)));
                notes.say(&format!(
                    "forwarded {tool} without checking its arguments: its pinned input schema cannot be used ({reason})"
                ));
            }
            notes.audit("tools/call", members);
            lock(shared).session.expect(key, Pending::Call { tool });
            Verdict::Forward
        }
        Decision::Refuse(refusal) => {
            members.push(("decision", json!("refused")));
            members.push(("error_code", json!(refusal.error_code)));
            members.push(("pinned_hash", json!(refusal.pinned_hash)));
            members.push(("live_hash", json!(refusal.live_hash)));
            if !refusal.violations.is_empty() {
                members.push(("violations", json!(refusal.violations)));
            }
            notes.audit("tools/call", members);
            notes.say(&format!("refused {tool}: {}", refusal.error_code.as_str()));
            let answer =
                json!({"jsonrpc": "2.0", "id": id.to_value(), "result": refusal.to_result(modern)});
            Verdict::Answer(answer.to_string())
        }
    }
}

/// A thread's own audit entries and stderr lines: formatted without any lock, and
/// written (entries before what they decided) when the thread flushes.
struct Notes {
    log: AuditLog,
    lines: Vec<u8>,
}

impl Notes {
    fn audit(&mut self, event: &str, members: Members) {
        let line = self.log.entry(event, members);
        self.lines.extend_from_slice(line.as_bytes());
    }

    /// A client message not passed on for what it is, not for a tool's contract.
    fn refuse(&mut self, reason: &str) {
        let members: Members = vec![("decision", json!("refused")), ("reason", json!(reason))];
        self.audit("message", members);
        self.say(&format!("refused {reason}"));
    }

    fn say(&self, message: &str) {
        let line = self.log.redact(&escape_for_terminal(message));
        let _ = writeln!(io::stderr().lock(), "mcp-lock guard: {line}");
    }

    /// Writes this thread's entries and those queued in `shared`, then returns the
    /// guard's own notes for the client.
    fn flush(&mut self, shared: &Mutex<Shared>) -> Vec<u8> {
        let (queued, client_notes) = {
            let mut state = lock(shared);
            (
                std::mem::take(&mut state.audit_lines),
                std::mem::take(&mut state.client_notes),
            )
        };
        // What was queued in common (a lock reload) happened before this thread's
        // own decisions that followed it.
        let mut all = queued;
        all.extend_from_slice(&self.lines);
        if let Err(e) = self.log.append(&all) {
            self.say(&format!("cannot write the audit log: {e}"));
        }
        self.lines.clear();
        client_notes
    }
}

/// Queues an entry; it is written before the message it decided is sent.
fn audit(state: &mut Shared, event: &str, members: Members) {
    let line = state.audit.entry(event, members);
    state.audit_lines.extend_from_slice(line.as_bytes());
}

/// The server's side: answers to listings are checked (and filtered) before the
/// client sees them; list_changed makes what was checked stale.
fn server_to_client(
    server_out: impl Read,
    shared: &Mutex<Shared>,
    mut notes: Notes,
    max: usize,
    events: &Sender<Event>,
) {
    let mut reader = BufReader::with_capacity(64 * 1024, server_out);
    let mut buf = Vec::new();
    let mut out = Outbox::default();
    let problem = loop {
        let (line, end) = match read_line(&mut reader, &mut buf, max) {
            Ok(Line::Eof) | Err(_) => (None, Some(None)),
            Ok(Line::TooLong) => (
                None,
                Some(Some(format!(
                    "server sent a message larger than {max} bytes; the session was ended"
                ))),
            ),
            Ok(Line::Text) => (Some(&buf), None),
        };
        if let Some(line) = line
            && !line.iter().all(u8::is_ascii_whitespace)
        {
            match from_server(line, shared, &mut notes) {
                Some(Out::Raw) => out.push_forward(line),
                Some(Out::Text(text)) => out.push_forward(text.as_bytes()),
                None => {}
            }
        }
        if end.is_some() || out.due(&reader) {
            let client_notes = notes.flush(shared);
            out.forward.extend_from_slice(&client_notes);
            if write_client_lines(&out.forward).is_err() {
                let _ = events.send(Event::ClientClosed);
                return;
            }
            out.forward.clear();
        }
        if let Some(problem) = end {
            break problem;
        }
    };
    let _ = events.send(Event::ServerClosed(problem));
}

enum Out {
    Raw,
    Text(String),
}

/// What the server's id and method say, and whether it carries a result or an
/// error, read without building the rest.
#[derive(serde::Deserialize)]
struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a member is there at all, whatever its value (`null` included).
#[derive(Default)]
struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Present(true))
    }
}

fn from_server(line: &[u8], shared: &Mutex<Shared>, notes: &mut Notes) -> Option<Out> {
    if line.first() == Some(&b'[') {
        return from_server_batch(line, shared, notes);
    }
    let envelope: Envelope = match serde_json::from_slice(line) {
        Ok(envelope) => envelope,
        Err(e) => {
            let mut state = lock(shared);
            say(
                &state,
                &format!("dropped a message from the server that is not a JSON-RPC message: {e}"),
            );
            return unreadable_answer(&mut state, line);
        }
    };
    if envelope.method.is_some() && (envelope.result.0 || envelope.error.0) {
        // Request and answer at once: a client could read it as either, and as an
        // answer it would skip the listing check.
        let mut state = lock(shared);
        say(
            &state,
            "dropped a message from the server that is both a request and an answer",
        );
        let id = envelope.id.as_ref()?;
        // If it claims to answer a request, the client still gets an answer.
        state.session.answered(&id_key(&Json::from_value(id)))?;
        return Some(Out::Text(rpc_error(
            id,
            -32603,
            "mcp-lock guard: the server's answer was also a request; nothing was forwarded",
        )));
    }
    match (&envelope.method, &envelope.id) {
        (Some(method), None) if method == "notifications/tools/list_changed" => {
            let mut state = lock(shared);
            state.session.list_changed();
            let members: Members = vec![("decision", json!("listing_stale"))];
            notes.audit("list_changed", members);
            Some(Out::Raw)
        }
        // Other notifications and the server's own requests.
        (Some(_), _) => Some(Out::Raw),
        (None, Some(id)) => {
            let key = id_key(&Json::from_value(id));
            let mut state = lock(shared);
            match state.session.answered(&key) {
                Some(Pending::List {
                    first_page,
                    generation,
                }) => Some(Out::Text(check_listing(
                    &mut state, notes, line, id, first_page, generation,
                ))),
                Some(Pending::Handshake) => {
                    Some(Out::Text(check_handshake(&mut state, notes, line, id)))
                }
                Some(_) => Some(Out::Raw),
                None => {
                    say(
                        &state,
                        "dropped an answer from the server to no request the client made",
                    );
                    None
                }
            }
        }
        (None, None) => Some(Out::Raw),
    }
}

/// A message from the server that could not be read as JSON-RPC: if a strict reading
/// still finds the id of a request the client is waiting on, the client gets an error
/// for it instead of waiting forever.
fn unreadable_answer(state: &mut Shared, line: &[u8]) -> Option<Out> {
    let message = Json::parse(std::str::from_utf8(line).ok()?).ok()?;
    let id = message.get("id")?;
    state.session.answered(&id_key(id))?;
    Some(Out::Text(rpc_error(
        &id.to_value(),
        -32603,
        "mcp-lock guard: the server's answer could not be read; nothing was forwarded",
    )))
}

/// A batch from the server: each member handled on its own, checked listings
/// re-written, passed on as a batch.
fn from_server_batch(line: &[u8], shared: &Mutex<Shared>, notes: &mut Notes) -> Option<Out> {
    let items = std::str::from_utf8(line)
        .ok()
        .and_then(|t| Json::parse(t).ok());
    let Some(Json::Array(items)) = items else {
        let state = lock(shared);
        say(&state, "dropped a batch from the server that is not JSON");
        return None;
    };
    let mut out = Vec::new();
    for item in items {
        let Ok(text) = item.canonical() else {
            // A repeated member: this item is not passed on, the others are.
            let mut state = lock(shared);
            say(
                &state,
                "dropped a message from the server that names a member twice",
            );
            if let Some(id) = item.get("id")
                && state.session.answered(&id_key(id)).is_some()
            {
                out.push(rpc_error(
                    &id.to_value(),
                    -32603,
                    "mcp-lock guard: the server's answer was ambiguous; nothing was forwarded",
                ));
            }
            continue;
        };
        match from_server(text.as_bytes(), shared, notes) {
            Some(Out::Raw) => out.push(text),
            Some(Out::Text(t)) => out.push(t),
            None => {}
        }
    }
    (!out.is_empty()).then(|| Out::Text(format!("[{}]", out.join(","))))
}

/// Reads an answer the guard has to look inside, strictly; an error answer for the
/// client when it cannot be read.
fn read_strictly(state: &Shared, line: &[u8], id: &Value, what: &str) -> Result<Json, String> {
    let parsed = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| Json::parse(text).map_err(|e| e.to_string()));
    parsed.map_err(|e| {
        say(
            state,
            &format!("refused a {what} answer that is not JSON: {e}"),
        );
        rpc_error(
            id,
            -32603,
            &format!(
                "mcp-lock guard: the server's {what} answer is not JSON; nothing was forwarded"
            ),
        )
    })
}

/// Checks an initialize or server/discover answer: changed instructions are removed.
fn check_handshake(state: &mut Shared, notes: &mut Notes, line: &[u8], id: &Value) -> String {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "initialize") {
        Ok(message) => message,
        Err(error) => return error,
    };
    let (text, removed) = state.session.check_handshake(&message);
    if removed {
        let members: Members = vec![("decision", json!("instructions_removed"))];
        notes.audit("instructions", members);
        say(
            state,
            "the server's instructions differ from mcp.lock; they were removed from what the client sees",
        );
    }
    text
}

/// Checks a tools/list answer and returns what the client gets instead.
fn check_listing(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    first_page: bool,
    generation: u64,
) -> String {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "tools/list") {
        Ok(message) => message,
        Err(error) => return error,
    };
    let page = state.session.check_page(message, first_page, generation);
    let decision = match (page.refused, page.hidden.is_empty()) {
        (true, _) => "refused",
        (false, true) => "passed",
        (false, false) => "filtered",
    };
    let members: Members = vec![
        ("decision", json!(decision)),
        ("first_page", json!(first_page)),
        ("complete", json!(page.complete)),
        ("shown", json!(page.shown)),
        ("hidden", json!(page.hidden)),
    ];
    notes.audit("tools/list", members);
    if !page.hidden.is_empty() {
        let names: Vec<&str> = page.hidden.iter().map(|h| h.tool.as_str()).collect();
        let verb = if page.refused {
            "refused a listing with"
        } else {
            "hid"
        };
        say(
            state,
            &format!(
                "{verb} {} tool(s) that differ from mcp.lock or are not pinned: {}; run `mcp-lock verify {}`",
                names.len(),
                names.join(", "),
                state.session.server()
            ),
        );
    }
    page.message
}

/// Re-reads the lock when it changed on disk, so `mcp-lock update` takes effect in a
/// running session; tells the client to list again when that changes what it may use.
fn reload_pins(state: &mut Shared) {
    let server = state.session.server().to_string();
    let Some(result) = state.pins.changed(&server) else {
        return;
    };
    match result {
        Ok(pins) => {
            let count = pins.tools.len();
            let relist = state.session.set_pins(pins);
            let members: Members = vec![
                ("decision", json!("pins_reloaded")),
                ("pinned_tools", json!(count)),
            ];
            audit(state, "lock_changed", members);
            say(
                state,
                &format!("mcp.lock changed: now enforcing {count} pinned tool(s)"),
            );
            if relist {
                let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                state
                    .client_notes
                    .extend_from_slice(note.to_string().as_bytes());
                state.client_notes.push(b'\n');
            }
        }
        Err(e) => say(state, &format!("{e}; keeping the pins read before")),
    }
}
