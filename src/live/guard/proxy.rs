//! The guard's plumbing: the server as a child process ([`process`]), one event loop
//! for both directions ([`pump`]) routing the client's lines ([`from_client`]) and
//! the server's ([`from_server`]), and shutdown that leaves nothing running.
//!
//! A plain thread around poll(2) rather than async: a proxy adds latency at every
//! hop, and the loop needs nothing a reactor gives.

use std::collections::BTreeMap;
use std::io::{self, Write};
use std::os::fd::{AsRawFd, OwnedFd, RawFd};
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
    Contract, Decision, ErrorCode, ItemDecision, MAX_PENDING, Notice, Pending, Refusal,
    RequiredAction, ServedAs, Session,
};
use super::stderr;
use crate::base::json::Json;
use crate::base::text::escape_for_terminal;
use crate::contract::surface::Kind;
use crate::contract::validate::Violation;
use crate::contract::validate::{checkable_arguments, read_exactly, strict_reads_exactly};
use crate::servers::client::stdio::{
    Watchdog, peek_exit, prepare_server, signal_group, start_server, unregister,
};

mod from_client;
mod from_server;
mod lines;
mod process;
mod pump;
mod scan;
#[doc(hidden)]
pub mod seam;
mod spin;

use from_client::*;
use from_server::*;
use process::*;
pub use process::{ServerProcess, Upstream};
use pump::pump;
use spin::Spin;

/// How long the server gets to exit by itself once the client has gone and its stdin
/// is closed: long enough to save state, short enough not to hold up the agent.
const EOF_GRACE: Duration = Duration::from_secs(2);
/// How long the guard's last stderr lines get to be written at the end of a session.
const STDERR_GRACE: Duration = Duration::from_millis(500);
/// How long after SIGTERM before SIGKILL.
const TERM_GRACE: Duration = Duration::from_secs(1);

/// The command that starts the real server.
#[derive(Debug, Clone)]
pub struct Launch {
    pub command: String,
    pub args: Vec<String>,
    /// Set on top of the guard's own environment.
    pub env: BTreeMap<String, String>,
    /// What of the guard's environment the server inherits, when its host passes
    /// only some; `None`: all.
    pub inherit: Option<crate::servers::config::environ::Inherit>,
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
    /// What a `served_pinned`/`served_live` entry last said of each item (kind and
    /// key): written once per item per listing generation, and again only when it
    /// says something else.
    served_logged: std::collections::HashMap<(&'static str, String), (u64, String)>,
}

impl Shared {
    /// True when the entry of `key` served as `how` in `generation` is not written yet.
    fn first_served(
        &mut self,
        kind: &'static str,
        key: &str,
        generation: u64,
        how: String,
    ) -> bool {
        let said = (generation, how);
        match self.served_logged.get_mut(&(kind, key.to_string())) {
            Some(last) if *last == said => false,
            Some(last) => {
                *last = said;
                true
            }
            None => {
                self.served_logged.insert((kind, key.to_string()), said);
                true
            }
        }
    }
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
    fn push_forward(&mut self, message: &[u8]) {
        // The newline too, so a large message is not reallocated for it.
        self.forward.reserve(message.len() + 1);
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
    let max = setup.max_message_bytes;
    let notes = Notes::new(&setup.audit)?;
    let mut main_notes = Notes::new(&setup.audit)?;
    let arrived = setup.pins.input_arrived();
    let shared = Arc::new(Mutex::new(Shared {
        pins: setup.pins,
        session: setup.session,
        audit: setup.audit,
        audit_lines: Vec::new(),
        client_notes: Vec::new(),
        list_changed: ListChangedRun::default(),
        served_logged: Default::default(),
    }));
    let (events, first_event) = channel();
    {
        let shared = shared.clone();
        std::thread::Builder::new()
            .name("mcp-lock-guard".into())
            .spawn(move || pump(input, output, &shared, notes, &arrived, max, &events))?;
    }
    // The loop's thread sends its events and ends with the session; if it is gone
    // without a word, its side is closed.
    let event = first_event.recv().unwrap_or(Event::ClientClosed);
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
    // The chain's head at the end of the session, signed where [audit] says.
    if let Err(e) = main_notes.log.checkpoint("session_end") {
        main_notes.say(&format!("cannot write the audit log's checkpoint: {e}"));
    }
    // The guard's last lines, unless nobody reads its stderr.
    stderr::drain(STDERR_GRACE);
    Ok(ended)
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

/// One stderr line each for the items of a checked page served though not approved,
/// and for those hidden (or the listing refused).
fn say_page<'a>(
    state: &Shared,
    noun: &str,
    served: impl Iterator<Item = (&'a str, ServedAs)>,
    hidden: impl Iterator<Item = (&'a str, bool)>,
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
                crate::base::text::count(served.len(), noun),
                served.join(", ")
            ),
        );
    }
    // Each is (name, whether the tool rules deny it rather than the lock).
    let (denied, hidden): (Vec<_>, Vec<_>) = hidden.partition(|h| h.1);
    let names = |list: &[(&str, bool)]| list.iter().map(|h| h.0).collect::<Vec<_>>().join(", ");
    if !denied.is_empty() && !refused {
        say(
            state,
            &format!(
                "hid {} the tool rules deny to this client: {}",
                crate::base::text::count(denied.len(), noun),
                names(&denied)
            ),
        );
    }
    let hidden: Vec<(&str, bool)> = if refused {
        denied.into_iter().chain(hidden).collect()
    } else {
        hidden
    };
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
                crate::base::text::count(hidden.len(), noun),
                names(&hidden),
                state.session.server()
            ),
        );
    }
}

/// One line on the guard's stderr (which the client usually logs), redacted and
/// escaped; queued, so that a stderr nobody reads does not stall the session.
fn say(state: &Shared, message: &str) {
    let line = state.audit.redact(&escape_for_terminal(message));
    stderr::note(&format!("mcp-lock guard: {line}"));
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

/// The canonical text of a JSON-RPC id: the key pending requests are found by, so
/// that 1 and 1.0 are the same request.
fn id_key(id: &Json) -> String {
    id.canonical().unwrap_or_default()
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
        stderr::note(&format!("mcp-lock guard: {line}"));
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
        let all = if queued.is_empty() {
            &self.lines
        } else {
            let mut all = queued;
            all.extend_from_slice(&self.lines);
            self.lines = all;
            &self.lines
        };
        let logged = match self.log.append(all) {
            Ok(()) => true,
            Err(e) => {
                self.say(&format!(
                    "cannot write the audit log: {e}; what its entries decided is not sent"
                ));
                // Served entries not written are written again at the next listing.
                lock(shared).served_logged.clear();
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
