//! A small MCP client of our own: connect, agree on a protocol era, list every tool.
//!
//! It works over `serde_json::Value` for protocol fields and keeps tool definitions as
//! raw [`Json`] so that they hash exactly as sent (see `NOTES-CRATES.md` on SDKs).
//! The client knows nothing of the lock: it reports what the server said.
//!
//! Transports: [`stdio`], Streamable HTTP ([`http`]) and the legacy HTTP+SSE transport
//! ([`legacy_sse`]). Eras: the modern one (2026-07-28: `server/discover` and
//! per-request `_meta`) is tried first and the `initialize` handshake is the fallback,
//! unless the caller asks for one exact version (what a lock pinned).

mod answers;
pub mod bridge;
mod error;
pub mod headers_helper;
pub mod http;
pub mod legacy_sse;
pub mod session;
pub mod sse;
pub mod stdio;

pub(crate) use answers::Answers;
use answers::answer_server_request;
pub use error::{RedirectKind, RpcError};

use std::sync::Arc;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::base::json::Json;
use crate::base::secrets::Secrets;
use crate::contract::hash::HashedTool;
use crate::contract::surface::{Kind, Surface};
use crate::servers::config::{RemoteKind, Resolved, ResolvedRemote, ResolvedStdio};
use session::{Opening, open_and_list};
use stdio::StdioConnection;

pub use crate::base::protocol::{LEGACY_VERSION, MODERN_VERSION, PROTOCOL_VERSIONS, is_modern};

/// The client capabilities mcp-lock declares unless a lock recorded others. Fixed, because
/// declared capabilities change which tools some servers list.
pub fn default_capabilities() -> Value {
    json!({})
}

/// The clientInfo mcp-lock sends.
pub fn default_client_info() -> Value {
    json!({"name": "mcp-lock", "version": env!("CARGO_PKG_VERSION")})
}

/// Which protocol to speak.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ProtocolChoice {
    /// The newest the server speaks: modern first, then the handshake.
    Newest,
    /// The `initialize` handshake only, taking whatever version the server answers.
    HandshakeOnly,
    /// Exactly this version (and so its era), as a lock pinned it; a server that no
    /// longer speaks it is reported as such.
    Exactly(String),
}

/// Receives short state descriptions ("initializing", "listing page 2") for a progress
/// display.
#[derive(Clone, Default)]
pub struct StatusSink(Option<Arc<StatusFn>>);

type StatusFn = dyn Fn(&str) + Send + Sync;

impl StatusSink {
    pub fn new(f: impl Fn(&str) + Send + Sync + 'static) -> Self {
        StatusSink(Some(Arc::new(f)))
    }

    pub fn set(&self, state: &str) {
        if let Some(f) = &self.0 {
            f(state);
        }
    }
}

impl std::fmt::Debug for StatusSink {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "StatusSink(set)"
        } else {
            "StatusSink(none)"
        })
    }
}

/// Limits and identity for one connection.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Longest wait for any one answer.
    pub request_timeout: Duration,
    /// Longest time for a whole server, from spawn to the last page.
    pub server_timeout: Duration,
    /// Longest wait for an answer to the `server/discover` probe before a server is
    /// taken for a handshake-era one (some of those never answer unknown requests).
    pub discover_timeout: Duration,
    /// A listing with more pages than this is a runaway and stops as incomplete.
    pub max_pages: usize,
    /// A listing with more tools than this is a runaway and stops as incomplete.
    pub max_tools: usize,
    /// Largest single message accepted from a server, in bytes.
    pub max_message_bytes: usize,
    pub capabilities: Value,
    pub client_info: Value,
    pub protocol: ProtocolChoice,
    /// The version `initialize` asks for when no exact version is chosen.
    pub handshake_version: String,
    /// The answer to `roots/list` (a profile that declares `roots`: the project
    /// directory); `None` answers that the method is not handled.
    pub roots: Option<Value>,
    /// Which kinds besides tools are listed.
    pub surface: Surface,
    /// Follow HTTP redirects to another origin (scheme, host, port).
    pub allow_cross_origin_redirects: bool,
    /// Where state changes go, for progress display.
    pub status: StatusSink,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(30),
            server_timeout: Duration::from_secs(120),
            discover_timeout: Duration::from_secs(5),
            max_pages: 500,
            max_tools: 10_000,
            max_message_bytes: 16 * 1024 * 1024,
            capabilities: default_capabilities(),
            client_info: default_client_info(),
            protocol: ProtocolChoice::Newest,
            handshake_version: LEGACY_VERSION.to_string(),
            roots: None,
            surface: Surface::default(),
            allow_cross_origin_redirects: false,
            status: StatusSink::default(),
        }
    }
}

/// What the server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSession {
    /// The protocol version agreed on: the one the server answered `initialize`
    /// with, or the modern version both sides support.
    pub protocol_version: String,
    /// How the server was reached: `stdio`, `streamable-http` or `sse`.
    pub transport: String,
    /// `serverInfo` as sent.
    pub server_info: Json,
    /// Whether it announced `tools.listChanged`.
    pub list_changed: bool,
    /// The hash of `instructions`, if it sent any.
    pub instructions_hash: Option<String>,
    /// The `instructions` text itself, for a person to read before approving it (the
    /// lock keeps only the hash).
    pub instructions: Option<String>,
    /// The client capabilities and clientInfo this session declared.
    pub client_capabilities: Value,
    pub client_info: Value,
    /// The issuer of the `mcp-lock login` token sent, when one was.
    pub oauth_issuer: Option<String>,
}

/// Every tool a listing returned, in order, over however many pages, and the other
/// kinds the surface covers.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub tools: Vec<HashedTool>,
    /// Pages of the tools listing.
    pub pages: usize,
    /// Each other kind: `None` when not listed (the surface leaves it out), empty when
    /// the server declares no such capability (or has no such list: `not_implemented`).
    pub prompts: Option<Vec<HashedTool>>,
    pub resource_templates: Option<Vec<HashedTool>>,
    pub resources: Option<Vec<HashedTool>>,
    /// Tools left out, with why: over Streamable HTTP in the 2026-07-28 era, a tool
    /// whose `x-mcp-header` marks are invalid is not offered to an agent.
    pub rejected: Vec<(String, String)>,
    /// Kinds the server declares (`prompts`, `resources`) whose list method answered
    /// -32601 (method not found) on its first page: listed as none, with a note.
    pub not_implemented: Vec<Kind>,
}

impl Listing {
    /// The definitions of one kind, when listed.
    pub fn kind(&self, kind: Kind) -> Option<&[HashedTool]> {
        match kind {
            Kind::Tool => Some(&self.tools),
            Kind::Prompt => self.prompts.as_deref(),
            Kind::ResourceTemplate => self.resource_templates.as_deref(),
            Kind::Resource => self.resources.as_deref(),
        }
    }

    /// The slot of a kind other than tools.
    pub fn kind_mut(&mut self, kind: Kind) -> &mut Option<Vec<HashedTool>> {
        match kind {
            Kind::Prompt => &mut self.prompts,
            Kind::ResourceTemplate => &mut self.resource_templates,
            Kind::Resource => &mut self.resources,
            Kind::Tool => unreachable!("tools are always listed"),
        }
    }
}

/// What connecting to one server produced.
#[derive(Debug, Clone)]
pub enum Outcome {
    /// Every page was read.
    Complete {
        session: ServerSession,
        listing: Listing,
    },
    /// The listing started but did not finish; what was read proves nothing.
    Incomplete {
        session: ServerSession,
        listing: Listing,
        error: String,
    },
    /// Nothing could be learned.
    Unverifiable { error: String },
}

/// The outcome with what else was seen on the way.
#[derive(Debug, Clone)]
pub struct Fetched {
    pub outcome: Outcome,
    /// The server's last stderr lines, secrets redacted (stdio only).
    pub stderr_tail: Vec<String>,
    /// Lines or events that were not JSON-RPC messages.
    pub ignored_lines: usize,
    /// Notifications received while listing.
    pub notifications: usize,
    /// From spawn or first request to the last page (or the failure).
    pub elapsed: Duration,
    /// The issuer of the `mcp-lock login` token sent, when one was.
    pub oauth_issuer: Option<String>,
}

impl Fetched {
    /// A server that was not contacted, with why.
    pub fn unverifiable(error: String) -> Self {
        Fetched {
            outcome: Outcome::Unverifiable { error },
            oauth_issuer: None,
            stderr_tail: Vec::new(),
            ignored_lines: 0,
            notifications: 0,
            elapsed: Duration::ZERO,
        }
    }
}

/// What a transport counted while it was used.
#[derive(Debug, Clone, Copy, Default)]
pub struct Counters {
    /// Lines or events that were not JSON-RPC messages.
    pub ignored: usize,
    /// Notifications received.
    pub notifications: usize,
    /// `notifications/tools/list_changed` received.
    pub list_changed: usize,
    /// `notifications/prompts/list_changed` received.
    pub prompts_changed: usize,
    /// `notifications/resources/list_changed` received (templates and resources).
    pub resources_changed: usize,
}

/// One way of exchanging JSON-RPC messages with a server.
pub(crate) trait Transport {
    /// Sends a request and waits for its answer, handling whatever else arrives.
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Json, RpcError>;
    /// Sends a notification.
    async fn notify(
        &mut self,
        method: &str,
        params: Option<Value>,
        deadline: Instant,
    ) -> Result<(), RpcError>;
    fn counters(&self) -> Counters;
    /// `stdio`, `streamable-http` or `sse`.
    fn name(&self) -> &'static str;
}

/// What one incoming message means to a client waiting for answer `id`.
pub(crate) enum Incoming {
    Answer(Result<Json, RpcError>),
    /// A request from the server, with the answer to send back.
    ServerRequest(Value),
    Other,
}

/// Sorts one incoming message, counting notifications and strays.
///
/// Requests go one at a time and ids count up from 1, so an answer naming an earlier
/// id is a late answer to a request given up on (a probe that timed out) and is
/// skipped. An answer naming an id never sent is a broken server: waiting longer
/// cannot bring the answer, so it fails the request at once. An error with a null id
/// is the server saying it could not read a request, and only one is outstanding.
pub(crate) fn classify(
    message: Json,
    id: i64,
    counters: &mut Counters,
    answers: &Answers,
) -> Incoming {
    let method_name = message.get("method").and_then(Json::as_str);
    match (method_name, message.get("id")) {
        (Some(m), Some(server_id)) => {
            Incoming::ServerRequest(answer_server_request(&m, server_id.to_value(), answers))
        }
        (Some(m), None) => {
            counters.notifications += 1;
            match m.as_str() {
                "notifications/tools/list_changed" => counters.list_changed += 1,
                "notifications/prompts/list_changed" => counters.prompts_changed += 1,
                "notifications/resources/list_changed" => counters.resources_changed += 1,
                _ => {}
            }
            Incoming::Other
        }
        (None, Some(Json::Number(n))) if *n == id as f64 => {
            if let Some(error) = message.get("error") {
                return Incoming::Answer(Err(RpcError::from_error_object(&error.to_value())));
            }
            // Taken, not copied: a listing can be megabytes.
            let mut message = message;
            Incoming::Answer(match message.take("result") {
                Some(result) => Ok(result),
                None => Err(RpcError::Protocol(
                    "answer has neither \"result\" nor \"error\"".into(),
                )),
            })
        }
        (None, Some(Json::Null)) if message.get("error").is_some() => {
            let error = message.get("error").map(Json::to_value).unwrap_or_default();
            Incoming::Answer(Err(RpcError::from_error_object(&error)))
        }
        (None, Some(Json::Number(n))) if is_earlier_id(*n, id) => {
            counters.ignored += 1;
            Incoming::Other
        }
        (None, Some(other)) => Incoming::Answer(Err(unknown_id(
            &other.canonical().unwrap_or_else(|_| "?".into()),
        ))),
        _ => {
            counters.ignored += 1;
            Incoming::Other
        }
    }
}

/// Whether `n` is the id of a request sent before request `id`.
fn is_earlier_id(n: f64, id: i64) -> bool {
    n.fract() == 0.0 && n >= 1.0 && n < id as f64
}

fn unknown_id(shown: &str) -> RpcError {
    const SHOWN: usize = 40;
    let mut id: String = shown.chars().take(SHOWN).collect();
    if shown.chars().count() > SHOWN {
        id.push('…');
    }
    RpcError::Protocol(format!(
        "the server sent an answer with id {id} that no request is waiting for"
    ))
}

/// What one line, body or event brought: perhaps the answer, and replies owed to the
/// server's own requests (send them before using the answer).
pub(crate) struct Inbound {
    pub answer: Option<Result<Json, RpcError>>,
    pub replies: Vec<Value>,
}

/// Reads one payload while waiting for answer `id`; a payload that is not JSON-RPC is
/// counted and skipped. One that cannot be read but whose top level says it answers
/// `id` (or names an id never sent) fails the request with what was wrong with it.
pub(crate) fn take_payload(
    bytes: &[u8],
    id: i64,
    counters: &mut Counters,
    answers: &Answers,
) -> Inbound {
    let mut inbound = Inbound {
        answer: None,
        replies: Vec::new(),
    };
    let messages = match messages_in(bytes) {
        Ok(messages) => messages,
        Err(unreadable) => {
            inbound.answer = unreadable_answer(bytes, &unreadable, id);
            if inbound.answer.is_none() {
                counters.ignored += 1;
            }
            return inbound;
        }
    };
    for message in messages {
        match classify(message, id, counters, answers) {
            Incoming::Answer(answer) => inbound.answer = inbound.answer.or(Some(answer)),
            Incoming::ServerRequest(reply) => inbound.replies.push(reply),
            Incoming::Other => {}
        }
    }
    inbound
}

/// The failure an unreadable payload stands for, if its top level is an answer that
/// the request waiting for `id` would otherwise wait for in vain.
fn unreadable_answer(bytes: &[u8], why: &Unreadable, id: i64) -> Option<Result<Json, RpcError>> {
    let envelope = crate::base::json::scan_envelope(bytes)?;
    if envelope.has_method {
        return None;
    }
    let raw = envelope.id?;
    match raw.parse::<f64>() {
        Ok(n) if n == id as f64 => Some(Err(RpcError::Protocol(format!(
            "the answer cannot be read: {why}"
        )))),
        Ok(n) if is_earlier_id(n, id) => None,
        _ if raw == "null" => None,
        _ => Some(Err(unknown_id(&raw))),
    }
}

/// Why a payload is not JSON: the first fault and the byte it is at.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Unreadable(String);

impl std::fmt::Display for Unreadable {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// A JSON-RPC request.
pub(crate) fn request_message(id: i64, method: &str, params: Value) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params})
}

/// A JSON-RPC notification.
pub(crate) fn notification(method: &str, params: Option<Value>) -> Value {
    let mut message = json!({"jsonrpc": "2.0", "method": method});
    if let Some(params) = params {
        message["params"] = params;
    }
    message
}

/// The messages in one line, body or event: one object or a batch (2025-03-26).
pub(crate) fn messages_in(bytes: &[u8]) -> Result<Vec<Json>, Unreadable> {
    let text = std::str::from_utf8(bytes)
        .map_err(|e| Unreadable(format!("it is not valid UTF-8 at byte {}", e.valid_up_to())))?;
    let bom = if text.starts_with('\u{feff}') { 3 } else { 0 };
    let value = Json::parse(&text[bom..])
        .map_err(|e| Unreadable(format!("{} at byte {}", e.message, e.offset + bom)))?;
    match value {
        Json::Array(items) if items.iter().all(Json::is_object) => Ok(items),
        message if message.is_object() => Ok(vec![message]),
        _ => Err(Unreadable("it is not a JSON-RPC message or batch".into())),
    }
}

/// Connects to a server however its entry says, lists all its tools and disconnects.
pub async fn fetch(resolved: &Resolved, options: &ClientOptions) -> Fetched {
    match resolved {
        Resolved::Stdio(stdio) => fetch_stdio(stdio, options).await,
        Resolved::Remote(remote) => fetch_remote(remote, options, None).await,
    }
}

/// Like [`fetch`] for a remote server, going straight to the transport a lock recorded.
pub async fn fetch_remote(
    remote: &ResolvedRemote,
    options: &ClientOptions,
    pinned_transport: Option<RemoteKind>,
) -> Fetched {
    if let Some(error) = &remote.headers_helper_error {
        return Fetched::unverifiable(error.clone());
    }
    let started = Instant::now();
    let deadline = started + options.server_timeout;
    // A pinned transport matters only for entries that leave detection to us; an
    // explicit `type: "sse"` is what the user asks for now.
    let kind = match remote.kind {
        RemoteKind::StreamableHttp => pinned_transport.unwrap_or(remote.kind),
        RemoteKind::Sse => RemoteKind::Sse,
    };
    let store = crate::servers::auth::TokenStore::from_env(&|v| std::env::var(v).ok()).ok();
    let mut bearer = None;
    if takes_login_token(remote)
        && let Some(store) = &store
    {
        match crate::servers::auth::bearer_for(
            store,
            &remote.url,
            remote.machine.as_deref(),
            false,
            deadline,
        )
        .await
        {
            Ok(found) => bearer = found,
            Err(e) => {
                let mut fetched = Fetched::unverifiable(format!(
                    "{e}; run `mcp-lock login {}` again",
                    remote.name
                ));
                fetched.elapsed = started.elapsed();
                return fetched;
            }
        }
    }
    let mut result = connect_remote(
        &with_bearer(remote, bearer.as_ref()),
        options,
        kind,
        pinned_transport,
        deadline,
    )
    .await;
    if let (Some(store), Some(used)) = (&store, &bearer)
        && matches!(&result, Err(Opening::Failed(m)) if m.contains(UNAUTHORIZED))
    {
        // Rejected before its expiry (revoked, rotated elsewhere): refresh once.
        match crate::servers::auth::bearer_for(
            store,
            &remote.url,
            remote.machine.as_deref(),
            true,
            deadline,
        )
        .await
        {
            Ok(Some(fresh)) if fresh.access_token != used.access_token => {
                result = connect_remote(
                    &with_bearer(remote, Some(&fresh)),
                    options,
                    kind,
                    pinned_transport,
                    deadline,
                )
                .await;
                bearer = Some(fresh);
            }
            Ok(_) => {}
            Err(e) => {
                result = Err(Opening::Failed(format!(
                    "{e}; run `mcp-lock login {}` again",
                    remote.name
                )))
            }
        }
    }
    let mut secrets = remote.secrets.clone();
    if let Some(b) = &bearer {
        secrets.add_header("Authorization", &format!("Bearer {}", b.access_token));
    }
    let (outcome, counters) = match result {
        Ok(done) => done,
        Err(opening) => (
            Outcome::Unverifiable {
                error: opening.message(),
            },
            Counters::default(),
        ),
    };
    let mut outcome = outcome;
    if let (Some(b), Outcome::Complete { session, .. }) = (&bearer, &mut outcome) {
        session.oauth_issuer = Some(b.issuer.clone());
    }
    Fetched {
        outcome: redact_outcome(outcome, &secrets),
        stderr_tail: Vec::new(),
        ignored_lines: counters.ignored,
        notifications: counters.notifications,
        elapsed: started.elapsed(),
        oauth_issuer: bearer.map(|b| b.issuer),
    }
}

/// Whether a login's token (`mcp-lock login`) is sent to this remote entry: only where
/// the config sets no Authorization of its own, so a static header (CI) always wins.
pub fn takes_login_token(remote: &ResolvedRemote) -> bool {
    // An entry with OAuth turned off (`"oauth": false`) never gets a login's token.
    !remote.oauth_off
        && !remote
            .headers
            .iter()
            .any(|(name, _, _)| name.eq_ignore_ascii_case("authorization"))
}

/// How an authentication error with a 401 starts (see [`RpcError::Auth`]).
const UNAUTHORIZED: &str = "authentication failed (HTTP 401)";

/// The entry with a login's token as its Authorization header, kept secret.
fn with_bearer(
    remote: &ResolvedRemote,
    bearer: Option<&crate::servers::auth::Bearer>,
) -> ResolvedRemote {
    let mut remote = remote.clone();
    if let Some(b) = bearer {
        let value = format!("Bearer {}", b.access_token);
        remote.secrets.add_header("Authorization", &value);
        remote
            .headers
            .push(("Authorization".into(), value, Vec::new()));
        remote.oauth_issuer = Some(b.issuer.clone());
    }
    remote
}

async fn connect_remote(
    remote: &ResolvedRemote,
    options: &ClientOptions,
    kind: RemoteKind,
    pinned_transport: Option<RemoteKind>,
    deadline: Instant,
) -> Result<(Outcome, Counters), Opening> {
    match kind {
        RemoteKind::Sse => legacy_sse::fetch(remote, options, deadline).await,
        RemoteKind::StreamableHttp => {
            match http::fetch(remote, options, deadline).await {
                // Legacy servers refuse the POST: per the spec, try a GET for the
                // old transport's endpoint event.
                Err(Opening::NotStreamable(why)) if pinned_transport.is_none() => {
                    options.status.set("trying legacy HTTP+SSE");
                    legacy_sse::fetch(remote, options, deadline)
                        .await
                        .map_err(|e| match e {
                            Opening::Failed(sse_error) => {
                                Opening::Failed(format!("{why}; as legacy HTTP+SSE: {sse_error}"))
                            }
                            other => other,
                        })
                }
                other => other,
            }
        }
    }
}

/// Starts a stdio server, lists all its tools and shuts it down.
pub async fn fetch_stdio(resolved: &ResolvedStdio, options: &ClientOptions) -> Fetched {
    let started = Instant::now();
    let deadline = started + options.server_timeout;
    let secrets = &resolved.secrets;
    let mut options = options.clone();
    let mut stderr_tail = Vec::new();
    let mut counters = Counters::default();
    let outcome = loop {
        options.status.set("starting");
        let mut conn = match StdioConnection::spawn(resolved, options.max_message_bytes) {
            Ok(conn) => conn,
            Err(e) => {
                // The command as written: its variables stay unexpanded, so nothing
                // in this message needs redacting.
                break Outcome::Unverifiable {
                    error: format!("could not start {:?}: {e}", resolved.written_command),
                };
            }
        };
        conn.answers = Answers::of(&options);
        let result = open_and_list(&mut conn, &options, deadline).await;
        let seen = conn.counters();
        let stderr_holder = conn.stderr_tail_handle();
        options.status.set("stopping");
        conn.shutdown().await;
        stderr_tail = stderr_holder
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .iter()
            .cloned()
            .collect();
        counters.ignored += seen.ignored;
        counters.notifications += seen.notifications;
        match result {
            Ok(outcome) => break redact_outcome(outcome, secrets),
            // The probe ended the process (some handshake-era servers exit on an
            // unknown first request): start it again and go straight to initialize.
            Err(Opening::Restart) if options.protocol == ProtocolChoice::Newest => {
                options.protocol = ProtocolChoice::HandshakeOnly;
            }
            // The probe timed out on a modern server slow to start: start it again and
            // speak the modern era with the whole request timeout.
            Err(Opening::SlowModern(_)) if options.protocol == ProtocolChoice::Newest => {
                options.protocol = ProtocolChoice::Exactly(MODERN_VERSION.into());
            }
            Err(opening) => {
                break Outcome::Unverifiable {
                    error: secrets.redact(&opening.message()),
                };
            }
        }
    };
    Fetched {
        outcome,
        stderr_tail,
        ignored_lines: counters.ignored,
        notifications: counters.notifications,
        elapsed: started.elapsed(),
        oauth_issuer: None,
    }
}

fn redact_outcome(outcome: Outcome, secrets: &Secrets) -> Outcome {
    match outcome {
        Outcome::Incomplete {
            session,
            listing,
            error,
        } => Outcome::Incomplete {
            session,
            listing,
            error: secrets.redact(&error),
        },
        Outcome::Unverifiable { error } => Outcome::Unverifiable {
            error: secrets.redact(&error),
        },
        complete => complete,
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn take(payload: &str, id: i64) -> (Option<Result<Json, RpcError>>, Counters) {
        let mut counters = Counters::default();
        let inbound = take_payload(payload.as_bytes(), id, &mut counters, &Answers::default());
        (inbound.answer, counters)
    }

    #[test]
    fn a_late_answer_to_an_earlier_request_is_skipped_not_taken_for_a_broken_server() {
        // The discover probe (id 1) timed out and initialize (id 2) is waiting.
        let (answer, counters) = take(r#"{"jsonrpc":"2.0","id":1,"result":{}}"#, 2);
        assert!(answer.is_none());
        assert_eq!(counters.ignored, 1);
        let deep = format!(
            r#"{{"jsonrpc":"2.0","id":1,"result":{}}}"#,
            "[".repeat(300) + &"]".repeat(300)
        );
        assert!(take(&deep, 2).0.is_none());
    }

    #[test]
    fn an_error_with_a_null_id_answers_the_one_waiting_request() {
        let (answer, _) = take(
            r#"{"jsonrpc":"2.0","id":null,"error":{"code":-32700,"message":"Parse error"}}"#,
            3,
        );
        assert!(matches!(
            answer,
            Some(Err(RpcError::Remote { code: -32700, .. }))
        ));
    }

    #[test]
    fn an_unreadable_request_from_the_server_is_skipped() {
        let payload = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"x","params":{}}}"#,
            "[".repeat(300) + &"]".repeat(300)
        );
        let (answer, counters) = take(&payload, 3);
        assert!(answer.is_none());
        assert_eq!(counters.ignored, 1);
    }

    #[test]
    fn an_answer_with_a_string_id_never_sent_fails_the_request() {
        let (answer, _) = take(r#"{"jsonrpc":"2.0","id":"x","result":{}}"#, 1);
        let Some(Err(RpcError::Protocol(message))) = answer else {
            panic!("expected a protocol error");
        };
        assert!(message.contains(r#"id "x" that no request"#), "{message}");
    }
}
