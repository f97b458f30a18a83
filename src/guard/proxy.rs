//! The guard's plumbing: the server as a child process, one thread per direction,
//! and shutdown that leaves nothing running.
//!
//! Plain threads and blocking pipes rather than async: a proxy adds latency at every
//! hop, and a thread blocked in read(2) wakes faster than a task behind a reactor.

use std::collections::BTreeMap;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::os::fd::OwnedFd;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::audit::{AuditLog, Members};
use super::client::ClientHello;
use super::pins::PinWatch;
use super::session::{
    Contract, Decision, ErrorCode, ItemDecision, Notice, Pending, Refusal, RequiredAction,
    ServedAs, Session,
};
use crate::call::{checkable_arguments, read_exactly, strict_reads_exactly};
use crate::client::stdio::{
    Watchdog, peek_exit, prepare_server, signal_group, start_server, unregister,
};
use crate::json::Json;
use crate::surface::Kind;
use crate::text::escape_for_terminal;
use crate::validate::Violation;

#[doc(hidden)]
pub mod seam;

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
    /// list_changed notifications counted but not yet in an entry.
    list_changed: ListChangedRun,
    pins: PinWatch,
}

/// Everything waiting in one direction for the end of a burst of input.
#[derive(Default)]
struct Outbox {
    /// To the other side.
    forward: Vec<u8>,
    /// Back to the client (the client's side only).
    back: Vec<u8>,
    /// Messages in `forward` that may be sent only once the audit entries that
    /// decided them are written.
    held: Vec<Held>,
}

/// A message that waits for its audit entry, and what stands in for it when the
/// entry cannot be written.
struct Held {
    /// Where it is in [`Outbox::forward`].
    at: std::ops::Range<usize>,
    /// Lines sent on in its place (the rest of a batch, an error for a listing).
    forward: Vec<u8>,
    /// Answered to the client instead (refusals of its calls), built only if needed.
    back: Option<StandIn>,
    /// Requests that will not be answered by the server now.
    forget: Vec<String>,
}

/// What stands in for a message from the client when its entries cannot be written.
struct Unlogged {
    /// The part that needs no entry (the other members of a batch).
    forward: Option<Vec<u8>>,
    /// The refusals of its calls.
    answer: StandIn,
    /// The ids of those calls.
    forget: Vec<String>,
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

    /// A message that goes on only if its audit entries are written; otherwise
    /// `instead` lines go on in its place and `back` lines back to the client.
    fn push_held(
        &mut self,
        message: &[u8],
        instead: Option<&[u8]>,
        back: Option<StandIn>,
        forget: Vec<String>,
    ) {
        let start = self.forward.len();
        self.push_forward(message);
        let line = |text: Option<&[u8]>| text.map(|t| [t, b"\n"].concat()).unwrap_or_default();
        self.held.push(Held {
            at: start..self.forward.len(),
            forward: line(instead),
            back,
            forget,
        });
    }

    /// The audit entries were written (`logged`), or not: then every held message is
    /// replaced by what stands in for it, and the requests it carried are forgotten.
    /// Returns how many were replaced.
    fn settle(&mut self, logged: bool, shared: &Mutex<Shared>) -> usize {
        let held = std::mem::take(&mut self.held);
        if logged || held.is_empty() {
            return 0;
        }
        let mut forward = Vec::with_capacity(self.forward.len());
        let mut from = 0;
        let mut state = lock(shared);
        for h in &held {
            forward.extend_from_slice(&self.forward[from..h.at.start]);
            forward.extend_from_slice(&h.forward);
            if let Some(back) = &h.back {
                self.back.extend_from_slice(back.text().as_bytes());
                self.back.push(b'\n');
            }
            for key in &h.forget {
                state.session.answered(key);
            }
            from = h.at.end;
        }
        forward.extend_from_slice(&self.forward[from..]);
        self.forward = forward;
        held.len()
    }
}

enum Event {
    ClientClosed,
    ServerClosed(Option<String>),
}

/// The server a session speaks to, as a pair of byte streams: the guard writes the
/// client's lines for the server to `input` and reads the server's lines from
/// `output`. A server the guard started is also a [`ServerProcess`], stopped when the
/// session ends; one reached another way (an in-process bridge to a remote server,
/// feeding a pipe or socket pair) has none, and ends when its `output` closes.
pub struct Upstream {
    pub input: OwnedFd,
    pub output: OwnedFd,
    pub process: Option<ServerProcess>,
}

/// A server the guard started: its process group, for shutdown.
pub struct ServerProcess {
    child: Child,
    pgid: i32,
    watchdog: Option<Watchdog>,
}

impl Upstream {
    /// Starts the server of `launch` in a process group of its own. With secrets to
    /// hide, its stderr passes through the guard, line by line, redacted; without, it
    /// goes straight to the client's.
    pub fn spawn(launch: &Launch, secrets: &crate::secrets::Secrets) -> io::Result<Upstream> {
        let mut command = Command::new(&launch.command);
        command
            .args(&launch.args)
            .envs(&launch.env)
            .current_dir(&launch.cwd)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(if secrets.is_empty() {
                Stdio::inherit()
            } else {
                Stdio::piped()
            });
        // The thread that spawns lives for the whole session, as PR_SET_PDEATHSIG needs.
        let watchdog = prepare_server(&mut command);
        let (mut child, pgid, watchdog) =
            start_server(|| command.spawn(), |c| Some(c.id()), watchdog)?;
        let input = OwnedFd::from(child.stdin.take().expect("stdin is piped"));
        let output = OwnedFd::from(child.stdout.take().expect("stdout is piped"));
        if let Some(server_err) = child.stderr.take() {
            let secrets = secrets.clone();
            std::thread::spawn(move || pass_stderr(server_err, &secrets));
        }
        Ok(Upstream {
            input,
            output,
            process: Some(ServerProcess {
                child,
                pgid,
                watchdog,
            }),
        })
    }
}

impl ServerProcess {
    /// Ends the whole group: `grace` for the leader to exit by itself first.
    fn stop(&mut self, grace: Duration) {
        stop(&mut self.child, self.pgid, grace, &mut self.watchdog);
    }

    /// How the leader exited, waiting up to `limit`, without reaping it.
    fn exit_within(&self, limit: Duration) -> Option<String> {
        wait_exit(self.pgid, limit)
    }
}

/// Starts the server and proxies stdin/stdout until one side closes.
pub fn run(launch: &Launch, setup: GuardSetup) -> io::Result<Ended> {
    // Before the spawn, as it always was: the server inherits the disposition.
    ignore_file_size_signal();
    let upstream = Upstream::spawn(launch, setup.audit.secrets())?;
    run_upstream(upstream, setup)
}

/// Proxies stdin/stdout to `upstream` until one side closes; the server's process,
/// if it has one, is stopped as docs/guard.md says.
pub fn run_upstream(upstream: Upstream, setup: GuardSetup) -> io::Result<Ended> {
    let Upstream {
        input,
        output,
        mut process,
    } = upstream;
    ignore_file_size_signal();
    let server_in = std::fs::File::from(input);
    let server_out = std::fs::File::from(output);
    let max = setup.max_message_bytes;
    let (client_notes, server_notes) = (Notes::new(&setup.audit)?, Notes::new(&setup.audit)?);
    let mut main_notes = Notes::new(&setup.audit)?;
    let arrived = setup.pins.input_arrived();
    let shared = Arc::new(Mutex::new(Shared {
        pins: setup.pins,
        session: setup.session,
        audit: setup.audit,
        audit_lines: Vec::new(),
        client_notes: Vec::new(),
        list_changed: ListChangedRun::default(),
    }));
    let (events, first_event) = channel();
    let stuck = Arc::new(Stuck::default());
    {
        let shared = shared.clone();
        let events = events.clone();
        let stuck = stuck.clone();
        let arrived = arrived.clone();
        std::thread::spawn(move || {
            let sides = Sides {
                shared: &shared,
                arrived: &arrived,
                max,
                events: &events,
            };
            client_to_server(server_in, sides, client_notes, &stuck)
        });
    }
    {
        let shared = shared.clone();
        std::thread::spawn(move || {
            let sides = Sides {
                shared: &shared,
                arrived: &arrived,
                max,
                events: &events,
            };
            server_to_client(server_out, sides, server_notes)
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
            if let Some(process) = process.as_mut() {
                process.stop(EOF_GRACE);
            }
            // What the server wrote before it exited still goes to the client, which
            // may have closed only its writing side.
            let _ = first_event.recv_timeout(Duration::from_secs(1));
            let members: Members = vec![
                ("decision", json!("session_ended")),
                ("reason", json!("the client closed the session")),
            ];
            main_notes.audit("client_closed", members);
            let _ = main_notes.flush(&shared);
            Ended::ClientClosed
        }
        Event::ServerClosed(problem) => {
            let description = match (problem, process.as_mut()) {
                (Some(problem), Some(process)) => {
                    process.stop(Duration::ZERO);
                    problem
                }
                (Some(problem), None) => problem,
                (None, Some(process)) => {
                    let exit = process.exit_within(Duration::from_millis(500));
                    process.stop(Duration::ZERO);
                    exit.unwrap_or_else(|| "server closed its output".into())
                }
                (None, None) => "server closed its output".into(),
            };
            answer_orphans(&shared, &mut main_notes, &description);
            Ended::ServerExited(description)
        }
    };
    Ok(ended)
}

/// A file size limit makes an audit write fail (and what it decided be refused)
/// instead of killing the guard mid-session.
fn ignore_file_size_signal() {
    // SAFETY: setting a signal's disposition to ignore shares no memory.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
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
    let _ = notes.flush(shared);
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
    let _ = notes.flush(shared);
    let _ = write_client_lines(&answers);
    notes.say(&format!("server {server}: {description}"));
}

fn lock(shared: &Mutex<Shared>) -> std::sync::MutexGuard<'_, Shared> {
    shared.lock().unwrap_or_else(|e| e.into_inner())
}

/// One line on the guard's stderr (which the client usually logs), redacted and
/// escaped.
/// One stderr line each for the items of a checked page served though not approved,
/// and for those hidden (or the listing refused).
fn say_page<'a>(
    state: &Shared,
    noun: &str,
    served: impl Iterator<Item = (&'a str, ServedAs)>,
    hidden: impl Iterator<Item = &'a str>,
    refused: bool,
) {
    let served: Vec<String> = served
        .map(|(name, how)| match how {
            ServedAs::Live => format!("{name} (live)"),
            _ => format!("{name} (as approved)"),
        })
        .collect();
    if !served.is_empty() {
        say(
            state,
            &format!(
                "served {} whose live definition is not approved but which the policy passes: {}",
                crate::text::count(served.len(), noun),
                served.join(", ")
            ),
        );
    }
    let hidden: Vec<&str> = hidden.collect();
    if !hidden.is_empty() {
        let verb = if refused {
            "refused a listing with"
        } else {
            "hid"
        };
        say(
            state,
            &format!(
                "{verb} {} that differ from mcp.lock or are not pinned: {}; run `mcp-lock verify {}`",
                crate::text::count(hidden.len(), noun),
                hidden.join(", "),
                state.session.server()
            ),
        );
    }
}

fn say(state: &Shared, message: &str) {
    let line = state.audit.redact(&escape_for_terminal(message));
    let _ = writeln!(io::stderr().lock(), "mcp-lock guard: {line}");
}

/// Copies the server's stderr to the guard's, each line with the server's secrets
/// redacted. A line longer than [`STDERR_LINE_BYTES`] is passed on in pieces of that
/// size, each redacted on its own.
fn pass_stderr(server_err: std::process::ChildStderr, secrets: &crate::secrets::Secrets) {
    use std::io::BufRead;
    let mut reader = io::BufReader::new(server_err);
    let mut line = Vec::new();
    loop {
        line.clear();
        match (&mut reader)
            .take(STDERR_LINE_BYTES as u64)
            .read_until(b'\n', &mut line)
        {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
        let text = String::from_utf8_lossy(&line);
        let clean = secrets.redact_str(&text);
        if io::stderr().lock().write_all(clean.as_bytes()).is_err() {
            return;
        }
    }
}

/// The longest piece of a server's stderr line redacted at once.
const STDERR_LINE_BYTES: usize = 64 * 1024;

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
/// line is skipped to its end and reported as `TooLong`. `arrived` is set after each
/// read from the file that returned bytes (see [`PinWatch::input_arrived`]).
fn read_line<R: Read>(
    reader: &mut BufReader<R>,
    buf: &mut Vec<u8>,
    max: usize,
    arrived: &AtomicBool,
) -> io::Result<Line> {
    buf.clear();
    let mut too_long = false;
    loop {
        let refill = reader.buffer().is_empty();
        let available = match reader.fill_buf() {
            Ok(bytes) => bytes,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if refill && !available.is_empty() {
            arrived.store(true, Ordering::Release);
        }
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

/// The canonical text of a JSON-RPC id: the key pending requests are found by, so
/// that 1 and 1.0 are the same request.
fn id_key(id: &Json) -> String {
    id.canonical().unwrap_or_default()
}

/// What both directions' loops are given.
struct Sides<'a> {
    shared: &'a Mutex<Shared>,
    /// Set after each read that returned bytes: the lock watch looks only then.
    arrived: &'a AtomicBool,
    /// Largest line accepted.
    max: usize,
    events: &'a Sender<Event>,
}

/// The client's side: every message is read strictly, calls are decided, and only
/// what passes reaches the server.
fn client_to_server(mut server_in: impl Write, sides: Sides<'_>, mut notes: Notes, stuck: &Stuck) {
    let Sides {
        shared,
        arrived,
        max,
        events,
    } = sides;
    let stdin = io::stdin();
    let mut reader = BufReader::with_capacity(64 * 1024, stdin.lock());
    let mut buf = Vec::new();
    let mut out = Outbox::default();
    loop {
        let line = match read_line(&mut reader, &mut buf, max, arrived) {
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
            let routed = from_client(line, shared, &mut notes);
            match (routed.forward, routed.unlogged) {
                (Some(bytes), Some(instead)) => out.push_held(
                    &bytes,
                    instead.forward.as_deref(),
                    Some(instead.answer),
                    instead.forget,
                ),
                (Some(bytes), None) => out.push_forward(&bytes),
                (None, _) => {}
            }
            if let Some(answer) = routed.answer {
                out.push_back(answer.as_bytes());
            }
        }
        if out.due(&reader) {
            let (client_notes, logged) = notes.flush(shared);
            let refused = out.settle(logged, shared);
            if refused > 0 {
                notes.say(&format!(
                    "refused {} with calls: their audit entries could not be written",
                    crate::text::count(refused, "message")
                ));
            }
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

/// What one line from the client becomes.
#[derive(Default)]
struct Routed {
    /// For the server.
    forward: Option<Vec<u8>>,
    /// For the client.
    answer: Option<String>,
    /// When `forward` holds calls: what stands in for it if their audit entries
    /// cannot be written.
    unlogged: Option<Unlogged>,
}

impl Routed {
    fn answer(answer: Option<String>) -> Self {
        Routed {
            answer,
            ..Routed::default()
        }
    }
}

/// What to send the server and what to answer the client, for one line from the
/// client.
fn from_client(line: &[u8], shared: &Mutex<Shared>, notes: &mut Notes) -> Routed {
    let parsed = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| Json::parse(text).map_err(|e| e.to_string()));
    let message = match parsed {
        Ok(message) => message,
        Err(e) => {
            notes.refuse(&format!("a message from the client that is not JSON: {e}"));
            return Routed::answer(Some(rpc_error(
                &Value::Null,
                -32700,
                &format!("mcp-lock guard: not JSON ({e}); not forwarded"),
            )));
        }
    };
    if message.has_repeated_member() {
        let id = message.get("id").map(Json::to_value).unwrap_or(Value::Null);
        notes.refuse("a message from the client that names a member twice");
        let answer = (!id.is_null()).then(|| {
            rpc_error(&id, -32600, "mcp-lock guard: a member name is repeated, so readers disagree on what the message says; not forwarded")
        });
        return Routed::answer(answer);
    }
    if matches!(&message, Json::Array(items) if items.is_empty()) {
        // JSON-RPC 2.0: an empty batch is answered with one error, not a batch.
        notes.refuse("an empty batch from the client");
        return Routed::answer(Some(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: an empty batch is not a valid request; not forwarded",
        )));
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
    // A single call whose numbers and strings the strict reading already gives
    // exactly (the common case) is not read again.
    let strict_is_exact =
        has_call && !matches!(message, Json::Array(_)) && strict_reads_exactly(line);
    let exact: Option<Value> = if has_call && !strict_is_exact {
        read_exactly(line)
    } else {
        None
    };
    let batch = |items: Vec<String>| (!items.is_empty()).then(|| format!("[{}]", items.join(",")));
    match &message {
        // A batch (2025-03-26): each request on its own, passed on as a batch.
        Json::Array(items) => {
            let mut forward = Vec::new();
            // What goes on if the calls' entries cannot be written: the rest.
            let mut plain = Vec::new();
            let mut answers = Vec::new();
            let mut refusals = Vec::new();
            let mut forget = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let exact = exact.as_ref().and_then(|v| v.get(i));
                let text = || match exact {
                    Some(v) => v.to_string(),
                    None => item.canonical().unwrap_or_default(),
                };
                match decide(item, exact, false, shared, notes) {
                    Verdict::Forward => {
                        forward.push(text());
                        plain.push(text());
                    }
                    Verdict::ForwardCall { key, unsent } => {
                        forward.push(text());
                        refusals.push(unsent);
                        forget.push(key);
                    }
                    Verdict::Answer(answer) => answers.push(answer),
                    Verdict::Drop => {}
                }
            }
            let unlogged = (!forget.is_empty()).then(|| Unlogged {
                forward: batch(plain).map(String::into_bytes),
                answer: StandIn::Batch(refusals),
                forget,
            });
            Routed {
                forward: batch(forward).map(String::into_bytes),
                answer: batch(answers),
                unlogged,
            }
        }
        single => match decide(single, exact.as_ref(), strict_is_exact, shared, notes) {
            Verdict::Forward => Routed {
                forward: Some(line.to_vec()),
                ..Routed::default()
            },
            Verdict::ForwardCall { key, unsent } => Routed {
                forward: Some(line.to_vec()),
                answer: None,
                unlogged: Some(Unlogged {
                    forward: None,
                    answer: StandIn::Single(unsent),
                    forget: vec![key],
                }),
            },
            Verdict::Answer(answer) => Routed::answer(Some(answer)),
            Verdict::Drop => Routed::default(),
        },
    }
}

enum Verdict {
    Forward,
    /// A call that goes on once its audit entry is written; if it cannot be,
    /// `refusal` answers it and the request `key` is forgotten.
    ForwardCall {
        key: String,
        /// What answers it instead if its audit entry cannot be written.
        unsent: Unsent,
    },
    Answer(String),
    Drop,
}

/// A forwarded call, as far as its refusal needs it should its audit entry not be
/// written: that refusal is built only then, not for every call.
struct Unsent {
    id: Value,
    tool: String,
    pinned_hash: Option<String>,
    live_hash: Option<String>,
    modern: bool,
}

impl Unsent {
    fn answer(&self) -> Value {
        let refusal = Refusal {
            error_code: ErrorCode::AuditLogUnwritable,
            tool: self.tool.clone(),
            required_action: RequiredAction::RetryLater,
            side_effect_started: false,
            pinned_hash: self.pinned_hash.clone(),
            live_hash: self.live_hash.clone(),
            violations: Vec::new(),
            missing_profile: None,
        };
        json!({"jsonrpc": "2.0", "id": self.id, "result": refusal.to_result(self.modern)})
    }
}

/// What is answered to the client in place of held calls.
enum StandIn {
    Single(Unsent),
    Batch(Vec<Unsent>),
}

impl StandIn {
    fn text(&self) -> String {
        match self {
            StandIn::Single(call) => call.answer().to_string(),
            StandIn::Batch(calls) => {
                Value::Array(calls.iter().map(Unsent::answer).collect()).to_string()
            }
        }
    }
}

/// One message from the client: requests are remembered so their answers can be
/// recognised, calls are decided.
/// `exact` is the message as [`read_exactly`] read it, unless `strict_is_exact`: then
/// the strict reading of `message` is that reading.
fn decide(
    message: &Json,
    exact: Option<&Value>,
    strict_is_exact: bool,
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
        "initialize" | "server/discover" => {
            Pending::Handshake(ClientHello::from_request(&method, params))
        }
        "prompts/list" | "resources/templates/list" | "resources/list" => {
            let kind = match method.as_str() {
                "prompts/list" => Kind::Prompt,
                "resources/templates/list" => Kind::ResourceTemplate,
                _ => Kind::Resource,
            };
            Pending::ItemList {
                kind,
                first_page: matches!(
                    params.and_then(|p| p.get("cursor")),
                    None | Some(Json::Null)
                ),
                generation: state.session.item_generation(kind),
            }
        }
        "prompts/get" | "resources/read" => {
            reload_pins(&mut state);
            let member = if method == "prompts/get" {
                "name"
            } else {
                "uri"
            };
            let Some(item) = params.and_then(|p| p.get(member)).and_then(Json::as_str) else {
                drop(state);
                notes.refuse(&format!("a {method} without a {member}"));
                return Verdict::Answer(rpc_error(
                    &id.to_value(),
                    -32602,
                    &format!("mcp-lock guard: {method} without a {member}; not forwarded"),
                ));
            };
            let decision = if method == "prompts/get" {
                state.session.decide_prompt(&item)
            } else {
                state.session.decide_read(&item)
            };
            if matches!(decision, ItemDecision::Forward { .. }) {
                state.session.expect(key, Pending::Other);
            }
            drop(state);
            return decide_item_use(&method, id, member, &item, decision, notes);
        }
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
            // The arguments as the server will read them, or why they cannot be
            // checked: the same decision check-call makes.
            let empty = Json::Object(Vec::new());
            let strict = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
            let read = if strict_is_exact {
                Some(strict.to_value())
            } else {
                exact.map(|m| {
                    m["params"]
                        .get("arguments")
                        .cloned()
                        .unwrap_or_else(|| json!({}))
                })
            };
            let call = Call {
                id,
                key,
                tool,
                arguments: checkable_arguments(strict, read),
                raw: strict,
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

/// A `prompts/get` or `resources/read` decided: its audit entry, and the refusal
/// the client gets when it is not forwarded.
fn decide_item_use(
    method: &str,
    id: &Json,
    member: &str,
    key: &str,
    decision: ItemDecision,
    notes: &mut Notes,
) -> Verdict {
    let subject = if member == "name" { "prompt" } else { "uri" };
    let mut members: Members = vec![("request_id", id.to_value()), (subject, json!(key))];
    match decision {
        ItemDecision::Forward {
            kind,
            key: item,
            pinned_hash,
            live_hash,
            served,
            unenforced,
        } => {
            members.push(("decision", json!("forwarded")));
            if unenforced {
                members.push(("reason", json!(format!("{} not pinned yet", kind.plural()))));
            } else {
                if subject == "uri" {
                    members.push(("kind", json!(kind)));
                    members.push((kind.as_str(), json!(item)));
                }
                members.push(("pinned_hash", json!(pinned_hash)));
                members.push(("live_hash", json!(live_hash)));
                if item.is_some() && served != ServedAs::Approved {
                    members.push(("served", json!(served)));
                }
            }
            notes.audit(method, members);
            Verdict::Forward
        }
        ItemDecision::Refuse(refusal) => {
            members.push(("decision", json!("refused")));
            members.push(("error_code", json!(refusal.error_code)));
            if subject == "uri" {
                members.push(("kind", json!(refusal.kind)));
                members.push((refusal.kind.as_str(), json!(refusal.key)));
            }
            members.push(("pinned_hash", json!(refusal.pinned_hash)));
            members.push(("live_hash", json!(refusal.live_hash)));
            notes.audit(method, members);
            notes.say(&format!(
                "refused {method} {key}: {}",
                refusal.error_code.as_str()
            ));
            Verdict::Answer(refusal.to_error(&id.to_value()).to_string())
        }
    }
}

/// One `tools/call` as the client sent it.
struct Call<'a> {
    id: &'a Json,
    key: String,
    tool: String,
    /// Read with integers exact, or why they cannot be checked.
    arguments: Result<Value, Violation>,
    /// As read strictly, for the audit entry of arguments that cannot be checked.
    raw: &'a Json,
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
        raw,
        modern,
    } = call;
    let decision = match (contract, &arguments) {
        (Ok(contract), Err(violation)) => Decision::Refuse(Refusal {
            error_code: ErrorCode::InvalidArguments,
            tool: tool.clone(),
            required_action: RequiredAction::FixArguments,
            side_effect_started: false,
            pinned_hash: contract.pinned_hash,
            live_hash: contract.live_hash,
            violations: vec![violation.clone()],
            missing_profile: None,
        }),
        (Ok(contract), Ok(arguments)) => contract.judge(arguments),
        (Err(refusal), _) => Decision::Refuse(refusal),
    };
    let arguments = arguments.unwrap_or_else(|_| raw.to_value());
    let mut members: Members = vec![
        ("request_id", id.to_value()),
        ("tool", json!(tool)),
        ("arguments", arguments),
    ];
    match decision {
        Decision::Forward {
            pinned_hash,
            live_hash,
            served,
            unvalidated,
        } => {
            members.push(("decision", json!("forwarded")));
            members.push(("pinned_hash", json!(pinned_hash)));
            members.push(("live_hash", json!(live_hash)));
            if served != ServedAs::Approved {
                members.push(("served", json!(served)));
            }
            if let Some(reason) = &unvalidated {
                members.push(("arguments_unchecked", json!(reason)));
                notes.say(&format!(
                    "forwarded {tool} without checking its arguments: its pinned input schema cannot be used ({reason})"
                ));
            }
            notes.audit("tools/call", members);
            // The refusal that stands in for it is built only if the entry fails.
            let unsent = Unsent {
                id: id.to_value(),
                tool: tool.clone(),
                pinned_hash,
                live_hash,
                modern,
            };
            lock(shared)
                .session
                .expect(key.clone(), Pending::Call { tool });
            Verdict::ForwardCall { key, unsent }
        }
        Decision::Refuse(refusal) => {
            members.push(("decision", json!("refused")));
            members.push(("error_code", json!(refusal.error_code)));
            members.push(("pinned_hash", json!(refusal.pinned_hash)));
            members.push(("live_hash", json!(refusal.live_hash)));
            if !refusal.violations.is_empty() {
                members.push(("violations", json!(refusal.violations)));
            }
            if let Some(missing) = &refusal.missing_profile {
                members.push(("missing_profile", json!(missing)));
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

/// How long a run of `list_changed` notifications is counted before its entry is
/// written anyway (it always is before the next other entry).
const LIST_CHANGED_RUN: Duration = Duration::from_secs(1);

impl Notes {
    fn new(audit: &AuditLog) -> io::Result<Self> {
        Ok(Notes {
            log: audit.writer()?,
            lines: Vec::new(),
        })
    }

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
    /// guard's own notes for the client, and whether the entries were written whole
    /// (when not, none of them is in the log).
    fn flush(&mut self, shared: &Mutex<Shared>) -> (Vec<u8>, bool) {
        self.flush_run(shared, false)
    }

    /// [`Notes::flush`], with a run of list_changed notifications still being counted
    /// written too (the session is ending).
    fn flush_run(&mut self, shared: &Mutex<Shared>, end: bool) -> (Vec<u8>, bool) {
        let (queued, client_notes) = {
            let mut state = lock(shared);
            // A run still counting is written before this thread's entries, which may
            // follow from it, or once it is old enough.
            let due = end
                || !self.lines.is_empty()
                || state
                    .list_changed
                    .since
                    .as_ref()
                    .is_some_and(|(at, _)| at.elapsed() >= LIST_CHANGED_RUN);
            if due {
                end_list_changed(&mut state);
            }
            (
                std::mem::take(&mut state.audit_lines),
                std::mem::take(&mut state.client_notes),
            )
        };
        // What was queued in common (a lock reload, list_changed) happened before
        // this thread's own decisions that followed it.
        let mut all = queued;
        all.extend_from_slice(&self.lines);
        let logged = match self.log.append(&all) {
            Ok(()) => true,
            Err(e) => {
                self.say(&format!(
                    "cannot write the audit log: {e}; what its entries decided is not sent"
                ));
                false
            }
        };
        self.lines.clear();
        (client_notes, logged)
    }
}

/// Queues an entry; it is written before the message it decided is sent.
fn audit(state: &mut Shared, event: &str, members: Members) {
    end_list_changed(state);
    let line = state.audit.entry(event, members);
    state.audit_lines.extend_from_slice(line.as_bytes());
}

/// list_changed notifications from the server not in an entry yet: a run of them
/// makes one entry with their count, not one line each.
#[derive(Default)]
struct ListChangedRun {
    count: u64,
    /// Which lists they were about: `tools`, `prompts`, `resources`.
    lists: std::collections::BTreeSet<&'static str>,
    /// When the first of them came, and its time for the entry.
    since: Option<(Instant, String)>,
}

/// One more list_changed in the current run.
fn count_list_changed(state: &mut Shared, list: &'static str) {
    let run = &mut state.list_changed;
    run.lists.insert(list);
    if run.count == 0 {
        run.since = Some((Instant::now(), super::audit::now_rfc3339()));
    }
    run.count += 1;
}

/// Queues the entry of the run of list_changed notifications counted so far.
fn end_list_changed(state: &mut Shared) {
    let run = std::mem::take(&mut state.list_changed);
    if run.count > 0 {
        let members: Members = vec![
            ("decision", json!("listing_stale")),
            ("count", json!(run.count)),
            ("lists", json!(run.lists)),
            ("since", json!(run.since.map(|(_, time)| time))),
        ];
        let line = state.audit.entry("list_changed", members);
        state.audit_lines.extend_from_slice(line.as_bytes());
    }
}

/// The server's side: answers to listings are checked (and filtered) before the
/// client sees them; list_changed makes what was checked stale.
fn server_to_client(server_out: impl Read, sides: Sides<'_>, mut notes: Notes) {
    let Sides {
        shared,
        arrived,
        max,
        events,
    } = sides;
    let mut reader = BufReader::with_capacity(64 * 1024, server_out);
    let mut buf = Vec::new();
    let mut out = Outbox::default();
    let problem = loop {
        let (line, end) = match read_line(&mut reader, &mut buf, max, arrived) {
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
                Some(Out::Checked { text, instead }) => {
                    out.push_held(text.as_bytes(), Some(instead.as_bytes()), None, Vec::new())
                }
                None => {}
            }
        }
        if end.is_some() || out.due(&reader) {
            let (client_notes, logged) = notes.flush_run(shared, end.is_some());
            out.settle(logged, shared);
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
    /// A listing checked: `text` goes to the client once its audit entry is written,
    /// `instead` (an error answer) if it cannot be.
    Checked {
        text: String,
        instead: String,
    },
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
            count_list_changed(&mut state, "tools");
            Some(Out::Raw)
        }
        (Some(method), None)
            if method == "notifications/prompts/list_changed"
                || method == "notifications/resources/list_changed" =>
        {
            let mut state = lock(shared);
            state.session.items_list_changed(method);
            let list = if method.contains("prompts") {
                "prompts"
            } else {
                "resources"
            };
            count_list_changed(&mut state, list);
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
                }) => Some(check_listing(
                    &mut state, notes, line, id, first_page, generation,
                )),
                Some(Pending::ItemList {
                    kind,
                    first_page,
                    generation,
                }) => Some(check_item_listing(
                    &mut state, notes, line, id, kind, first_page, generation,
                )),
                Some(Pending::Handshake(hello)) => Some(Out::Text(check_handshake(
                    &mut state, notes, line, id, hello,
                ))),
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
    // The batch as sent if a listing in it cannot be logged.
    let mut instead = Vec::new();
    let mut held = false;
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
                let error = rpc_error(
                    &id.to_value(),
                    -32603,
                    "mcp-lock guard: the server's answer was ambiguous; nothing was forwarded",
                );
                out.push(error.clone());
                instead.push(error);
            }
            continue;
        };
        let (sent, otherwise) = match from_server(text.as_bytes(), shared, notes) {
            Some(Out::Raw) => (text.clone(), text),
            Some(Out::Text(t)) => (t.clone(), t),
            Some(Out::Checked { text, instead }) => {
                held = true;
                (text, instead)
            }
            None => continue,
        };
        out.push(sent);
        instead.push(otherwise);
    }
    if out.is_empty() {
        return None;
    }
    let text = format!("[{}]", out.join(","));
    Some(if held {
        Out::Checked {
            text,
            instead: format!("[{}]", instead.join(",")),
        }
    } else {
        Out::Text(text)
    })
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

/// Checks an initialize or server/discover answer: the client's profile is picked
/// from its request, the server's identity and instructions judged.
fn check_handshake(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    hello: Option<ClientHello>,
) -> String {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "initialize") {
        Ok(message) => message,
        Err(error) => return error,
    };
    let (text, notices) = state.session.check_handshake(&message, hello);
    for notice in notices {
        tell(state, notes, notice);
    }
    text
}

/// A notice of the session's: its audit entry, and its line on stderr.
fn tell(state: &Shared, notes: &mut Notes, notice: Notice) {
    let Notice {
        event,
        mut members,
        message,
    } = notice;
    if let Some(line) = &message {
        members.push(("message", json!(line)));
        say(state, line);
    }
    notes.audit(event, members);
}

/// Checks a tools/list answer and returns what the client gets instead.
fn check_listing(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    first_page: bool,
    generation: u64,
) -> Out {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "tools/list") {
        Ok(message) => message,
        Err(error) => return Out::Text(error),
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
    for served in &page.served {
        let event = match served.served {
            ServedAs::Live => "served_live",
            _ => "served_pinned",
        };
        let members: Members = vec![
            ("decision", json!(served.served)),
            ("tool", json!(served.tool)),
            ("change", json!(served.change)),
            ("pinned_hash", json!(served.pinned_hash)),
            ("live_hash", json!(served.live_hash)),
            ("class", json!(served.class)),
            ("action", json!(served.action)),
        ];
        notes.audit(event, members);
    }
    let served = page.served.iter().map(|s| (s.tool.as_str(), s.served));
    let hidden = page.hidden.iter().map(|h| h.tool.as_str());
    say_page(state, "tool", served, hidden, page.refused);
    Out::Checked {
        text: page.message,
        instead: rpc_error(
            id,
            -32603,
            "mcp-lock guard: the check of this tools/list answer could not be written to the audit log; nothing was forwarded",
        ),
    }
}

/// Checks a prompts/list, resources/templates/list or resources/list answer and
/// returns what the client gets instead.
fn check_item_listing(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    kind: Kind,
    first_page: bool,
    generation: u64,
) -> Out {
    reload_pins(state);
    let (method, _) = kind.list_method();
    let message = match read_strictly(state, line, id, method) {
        Ok(message) => message,
        Err(error) => return Out::Text(error),
    };
    let page = state
        .session
        .check_item_page(kind, message, first_page, generation);
    if page.unenforced {
        if state.session.first_unenforced(kind) {
            let line = format!(
                "mcp.lock does not pin the {} of {} yet: passed on unenforced until `mcp-lock update` pins them",
                kind.plural(),
                state.session.server()
            );
            say(state, &line);
            let members: Members = vec![
                ("decision", json!("not_pinned_yet")),
                ("kind", json!(kind)),
                ("message", json!(line)),
            ];
            notes.audit(method, members);
        }
        return Out::Text(page.message);
    }
    let decision = match (page.refused, page.hidden.is_empty()) {
        (true, _) => "refused",
        (false, true) => "passed",
        (false, false) => "filtered",
    };
    let members: Members = vec![
        ("decision", json!(decision)),
        ("kind", json!(kind)),
        ("first_page", json!(first_page)),
        ("complete", json!(page.complete)),
        ("shown", json!(page.shown)),
        ("hidden", json!(page.hidden)),
    ];
    notes.audit(method, members);
    for served in &page.served {
        let event = match served.served {
            ServedAs::Live => "served_live",
            _ => "served_pinned",
        };
        let mut members: Members = vec![
            ("decision", json!(served.served)),
            ("kind", json!(kind)),
            (kind.as_str(), json!(served.key)),
            ("change", json!(served.change)),
        ];
        if let Some(from) = &served.renamed_from {
            members.push(("renamed_from", json!(from)));
        }
        members.extend([
            ("pinned_hash", json!(served.pinned_hash)),
            ("live_hash", json!(served.live_hash)),
            ("class", json!(served.class)),
            ("action", json!(served.action)),
        ]);
        notes.audit(event, members);
    }
    let served = page.served.iter().map(|s| (s.key.as_str(), s.served));
    let hidden = page.hidden.iter().map(|h| h.key.as_str());
    say_page(state, kind.noun(), served, hidden, page.refused);
    Out::Checked {
        text: page.message,
        instead: rpc_error(
            id,
            -32603,
            &format!(
                "mcp-lock guard: the check of this {method} answer could not be written to the audit log; nothing was forwarded"
            ),
        ),
    }
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
            let moved = state.session.set_pins_of_every_kind(pins);
            let count = state.session.pinned_count();
            let members: Members = vec![
                ("decision", json!("pins_reloaded")),
                ("pinned_tools", json!(count)),
            ];
            audit(state, "lock_changed", members);
            say(
                state,
                &format!(
                    "mcp.lock changed: now enforcing {}",
                    crate::text::count(count, "pinned tool")
                ),
            );
            let mut told = Vec::new();
            for kind in moved {
                let method = kind.list_changed_notification();
                if told.contains(&method) {
                    continue;
                }
                told.push(method);
                let note = json!({"jsonrpc": "2.0", "method": method});
                state
                    .client_notes
                    .extend_from_slice(note.to_string().as_bytes());
                state.client_notes.push(b'\n');
            }
        }
        Err(e) => say(state, &format!("{e}; keeping the pins read before")),
    }
}
