//! A remote server as a byte stream: JSON-RPC lines on stdin go to the server over
//! Streamable HTTP or legacy HTTP+SSE, and everything the server sends (answers,
//! notifications and requests on a POST's stream, on the GET stream, or on the legacy
//! event stream) comes out on stdout, one message a line.
//!
//! `mcp-lock guard` runs this as its server process, so the proxy's decisions are the
//! same for every transport. The configured headers and a login's token stay in here:
//! they never reach stdout or stderr.
//!
//! Streamable HTTP: messages are POSTed in the order they arrive; each answer is read
//! on its own task, so a slow call never holds up the next message. The client's
//! `initialize` is kept: when the server forgets the session (404, or the TypeScript
//! SDK's 400 "No valid session ID provided") it is replayed once, with the client's
//! `notifications/initialized`, and the message sent again. After the handshake a GET
//! stream carries the server's own messages; a dropped one is reopened with
//! `Last-Event-ID`, after the `retry` delay the server asked for.
//!
//! Memory stays within a few times the largest message: bodies and events are read
//! with --max-message-bytes as a running cap, forwarded as the server wrote them (see
//! [`frame`]), and stdout is a byte-budgeted queue (see [`out`]) that makes every
//! reader wait, and so stop reading its socket, while the guard is not taking. A
//! request whose answer cannot be forwarded (too large, the stream broke or ended
//! early, an HTTP error) is answered with a JSON-RPC error, so the client never waits.

mod frame;
mod out;

mod streamable;
use streamable::*;

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Response, StatusCode, Url};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::Mutex;
use tokio::time::Instant;

use super::http::{
    build_client, header_map, parse_url, read_body, read_body_prefix, reqwest_chain,
};
use super::legacy_sse::endpoint_of;
use super::sse::{Parser, TooLarge};
use super::{ClientOptions, RpcError};
use crate::base::protocol::headers::{self as param_headers, Mirrored};
use crate::base::secrets::Secrets;
use crate::servers::auth::{TokenStore, bearer_for};
use crate::servers::config::{RemoteKind, ResolvedRemote};
use out::Out;

/// How often a dropped GET stream is reopened before the bridge gives up on it.
const MAX_RECONNECTS: usize = 20;
/// The wait before reopening when the server set no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);
/// How many times a POST's stream that ended before its answer is resumed.
const MAX_RESUMES: usize = 5;

/// How much of an error body is kept for the client's error message.
const ERROR_BODY_BYTES: usize = 64 * 1024;
/// How long an error answer's body is read for.
const ERROR_BODY_WAIT: Duration = Duration::from_secs(10);

/// The bridge waits as long as the server takes: a call may run for hours.
fn no_deadline() -> Instant {
    Instant::now() + Duration::from_secs(10 * 365 * 24 * 3600)
}

/// Runs the bridge until stdin closes (or the legacy stream ends). `pinned_versions`
/// are the protocol versions the lock's profiles used: a client speaking another is
/// warned about once on stderr (its definitions are enforced all the same).
pub async fn run(
    remote: ResolvedRemote,
    options: ClientOptions,
    pinned_versions: Vec<String>,
) -> Result<(), String> {
    if let Some(error) = remote.headers_helper_error {
        return Err(error);
    }
    let (out, writer) = Out::start();
    let result = match remote.kind {
        RemoteKind::StreamableHttp => streamable(remote, options, out, pinned_versions).await,
        RemoteKind::Sse => legacy(remote, options, out).await,
    };
    let _ = writer.await;
    result
}

/// What the POSTing side and the answer tasks share.
struct Conn {
    client: Client,
    url: Url,
    headers: std::sync::Mutex<HeaderMap>,
    secrets: Secrets,
    session: std::sync::Mutex<Option<HeaderValue>>,
    version: std::sync::Mutex<Option<String>>,
    /// The client's `initialize`, to open an expired session again.
    initialize: std::sync::Mutex<Option<Value>>,
    /// Held while a session is opened again, so messages wait for the new one.
    reopening: Mutex<()>,
    max: usize,
    out: Out,
    get_started: std::sync::atomic::AtomicBool,
    /// The login token's store and whether one is in use, for a refresh on 401.
    store: Option<TokenStore>,
    bearer: std::sync::atomic::AtomicBool,
    /// How long a refresh of the login token may take (the per-request timeout).
    auth_timeout: std::time::Duration,
    pinned_versions: Vec<String>,
    warned: std::sync::atomic::AtomicBool,
    /// The entry, for the login a step-up needs and a machine login's client.
    remote: ResolvedRemote,
    /// Per tool, the parameters its listed schema mirrors into `Mcp-Param-*`
    /// headers (2026-07-28), from the last listing relayed.
    mirrored: std::sync::Mutex<std::collections::HashMap<String, Vec<Mirrored>>>,
    /// The ids of modern `tools/list` requests whose answers are not relayed yet.
    pending_lists: std::sync::Mutex<std::collections::HashSet<String>>,
    /// The standing GET stream's task, ended when the client goes (it would hold
    /// the bridge open).
    get_task: std::sync::Mutex<Option<tokio::task::AbortHandle>>,
}

impl Conn {
    /// Warns once when the client speaks a version no pinned profile used.
    fn check_version(&self, message: &Value) {
        let params = &message["params"];
        let spoken = params["_meta"]["io.modelcontextprotocol/protocolVersion"]
            .as_str()
            .or_else(|| {
                (message["method"] == "initialize")
                    .then(|| params["protocolVersion"].as_str())
                    .flatten()
            });
        let Some(spoken) = spoken else { return };
        if self.pinned_versions.is_empty() || self.pinned_versions.iter().any(|v| v == spoken) {
            return;
        }
        if !self.warned.swap(true, std::sync::atomic::Ordering::SeqCst) {
            self.say(&format!(
                "warning: the client speaks protocol {spoken}, which no pinned profile used ({}); definitions are enforced as pinned",
                self.pinned_versions.join(", ")
            ));
        }
    }

    fn say(&self, text: &str) {
        eprintln!("mcp-lock guard: {}", self.secrets.redact(text));
    }

    fn headers(&self) -> HeaderMap {
        self.headers.lock().unwrap().clone()
    }

    fn request(&self, method: reqwest::Method, body: Option<&Value>) -> reqwest::RequestBuilder {
        let mut request = self
            .client
            .request(method, self.url.clone())
            .headers(self.headers());
        if let Some(body) = body {
            request = request
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(body).expect("a Value serializes"));
            let meta = &body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"];
            if let Some(version) = meta.as_str() {
                let method = body["method"].as_str().unwrap_or("");
                request = request
                    .header("MCP-Protocol-Version", version)
                    .header("Mcp-Method", method);
                return self.mirror(request, method, &body["params"]);
            }
        }
        if let Some(session) = self.session.lock().unwrap().clone() {
            request = request.header("Mcp-Session-Id", session);
        }
        if let Some(version) = self.version.lock().unwrap().clone() {
            request = request.header("MCP-Protocol-Version", version);
        }
        request
    }

    /// The 2026-07-28 headers mirrored from a request's body: `Mcp-Name`, and for a
    /// `tools/call` each `Mcp-Param-*` its tool's listed schema marks.
    fn mirror(
        &self,
        mut request: reqwest::RequestBuilder,
        method: &str,
        params: &Value,
    ) -> reqwest::RequestBuilder {
        if let Some(name) = param_headers::name_header(method, params) {
            request = request.header("Mcp-Name", name);
        }
        if method == "tools/call"
            && let Some(tool) = params["name"].as_str()
            && let Some(marks) = self.mirrored.lock().unwrap().get(tool)
        {
            for (name, value) in param_headers::param_headers(marks, &params["arguments"]) {
                request = request.header(name, value);
            }
        }
        request
    }

    /// A modern `tools/list` answer: the tools whose `x-mcp-header` marks are
    /// invalid are left out (as every 2026-07-28 Streamable HTTP client must, so
    /// the guard judges what verify judged), and the others' marks are kept for
    /// their calls. `None` when the line is not such an answer or needs no change.
    fn listed(&self, line: &[u8]) -> Option<Vec<u8>> {
        // Only the id is read first: any other message (a 40 MB tools/call answer
        // arriving while a listing is asked for) goes on without being decoded.
        let id = frame::id_of(line)?.to_string();
        if !self.pending_lists.lock().unwrap().remove(&id) {
            return None;
        }
        let mut answer: Value = serde_json::from_slice(line).ok()?;
        let tools = answer.get_mut("result")?.get_mut("tools")?.as_array_mut()?;
        let mut left_out = false;
        let mut mirrored = self.mirrored.lock().unwrap();
        tools.retain(|tool| {
            let name = tool["name"].as_str().unwrap_or("").to_string();
            match param_headers::mirrored(tool) {
                Ok(marks) => {
                    mirrored.insert(name, marks);
                    true
                }
                Err(why) => {
                    self.say(&format!(
                        "left out tool {}: {why}",
                        crate::base::text::escape_cut(&name, 100)
                    ));
                    left_out = true;
                    false
                }
            }
        });
        left_out.then(|| answer.to_string().into_bytes())
    }

    /// One POST, with a login token refreshed once on a 401.
    async fn post(&self, body: &Value) -> Result<Response, String> {
        let send = || async {
            self.request(reqwest::Method::POST, Some(body))
                .send()
                .await
                .map_err(|e| format!("cannot reach {}: {}", self.url, reqwest_chain(e)))
        };
        let response = send().await?;
        if response.status() == StatusCode::UNAUTHORIZED && self.refresh_bearer().await {
            return send().await;
        }
        Ok(response)
    }

    /// After a 403 `insufficient_scope` to a request made with the login's token: the
    /// guard cannot send a person to a browser mid-session, so it notes the scope in
    /// the token cache (the next `mcp-lock login` asks for it) and says so.
    async fn step_up(&self, response: &Response) -> Option<String> {
        if response.status() != StatusCode::FORBIDDEN {
            return None;
        }
        let challenge = response.headers().get("www-authenticate").map(|v| {
            crate::servers::auth::discovery::parse_challenge(&String::from_utf8_lossy(v.as_bytes()))
        })?;
        if challenge.error.as_deref() != Some("insufficient_scope") {
            return None;
        }
        let scope = challenge.scope.unwrap_or_default();
        let shown = crate::base::text::escape_cut(&scope, 200);
        if self.remote.machine.is_some() {
            return Some(format!(
                "the server needs more scope for this request (HTTP 403 insufficient_scope, scope {shown:?}); add it to \"scope\" under the entry's \"oauth\""
            ));
        }
        let token = self
            .headers()
            .get(AUTHORIZATION)
            .and_then(|v| v.to_str().ok())
            .and_then(|v| v.strip_prefix("Bearer "))
            .map(str::to_string);
        if let (Some(store), Some(token), true) = (
            &self.store,
            token,
            self.bearer.load(std::sync::atomic::Ordering::SeqCst),
        ) {
            let deadline = tokio::time::Instant::now() + self.auth_timeout;
            if let Err(e) =
                crate::servers::auth::want_scope(store, self.url.as_str(), &token, &scope, deadline)
                    .await
            {
                self.say(&e);
            }
            return Some(format!(
                "the server needs more scope for this request (HTTP 403 insufficient_scope, scope {shown:?}); run `mcp-lock login {}` (it asks for that scope too), then try again",
                self.remote.name
            ));
        }
        Some(format!(
            "the server needs more scope for this request (HTTP 403 insufficient_scope, scope {shown:?}); the credentials in the config do not carry it"
        ))
    }

    /// After a 401: a fresh login token, if one is in use and can be had.
    async fn refresh_bearer(&self) -> bool {
        let Some(store) = &self.store else {
            return false;
        };
        if !self.bearer.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let deadline = tokio::time::Instant::now() + self.auth_timeout;
        match bearer_for(
            store,
            &self.remote.url,
            self.remote.machine.as_deref(),
            true,
            deadline,
        )
        .await
        {
            Ok(Some(b)) => {
                if let Ok(mut value) = HeaderValue::from_str(&format!("Bearer {}", b.access_token))
                {
                    value.set_sensitive(true);
                    self.headers.lock().unwrap().insert(AUTHORIZATION, value);
                    return true;
                }
                false
            }
            Ok(None) => false,
            Err(e) => {
                self.say(&e);
                false
            }
        }
    }

    /// Relays a POST's answer, a JSON body or an SSE stream, to stdout. When `request`
    /// is a request and no answer to it came through, the client gets an error for it
    /// instead. For `initialize`, the agreed version is noted and reading stops at the
    /// answer.
    async fn relay(&self, response: Response, request: &Value) {
        let id = request.get("method").and(request.get("id"));
        let initialize = request["method"] == "initialize";
        let mut answered = false;
        // What broke, if anything, and what to say when nothing answered the request.
        let (broke, unanswered) = if is_event_stream(&response) {
            let mut parser = Parser::new(self.max);
            let mut broke = match self
                .relay_stream(
                    response,
                    &mut parser,
                    id,
                    initialize,
                    initialize,
                    &mut answered,
                )
                .await
            {
                Ok(()) => None,
                Err(Broke::TooLarge) => Some(self.too_large()),
                Err(Broke::Io(e)) => Some(format!(
                    "the server's SSE stream broke before the answer arrived: {e}"
                )),
            };
            // A stream whose events carry IDs can be resumed (2025-11-25, SEP-1699).
            if !answered && id.is_some() && parser.last_event_id().is_some() {
                broke = match broke {
                    Some(why) if why == self.too_large() => Some(why),
                    _ => self.resume(&mut parser, id, &mut answered).await,
                };
            }
            (broke, "the server ended the SSE stream without answering")
        } else {
            let broke = match read_body(response, self.max, no_deadline()).await {
                Ok(body) => match frame::lines(body) {
                    Ok(lines) => {
                        for line in lines {
                            answered |= self.emit(line, id, initialize).await;
                        }
                        None
                    }
                    Err(frame::NotJson) => Some("the server's answer is not JSON".into()),
                },
                Err(RpcError::TooLarge(_)) => Some(self.too_large()),
                Err(e) => Some(format!("the answer broke off: {e}")),
            };
            (broke, "the server's answer holds no answer to the request")
        };
        if answered {
            return;
        }
        match (broke, id) {
            (why, Some(_)) => {
                self.fail(request, why.as_deref().unwrap_or(unanswered))
                    .await
            }
            (Some(why), None) => self.say(&why),
            (None, None) => {}
        }
    }

    fn too_large(&self) -> String {
        format!(
            "the server's answer is larger than {} bytes (--max-message-bytes); not forwarded",
            self.max
        )
    }

    /// Resumes a POST's event stream that ended before the answer to `id`: after the
    /// stream's `retry` delay, a GET with `Last-Event-ID`, read until the answer
    /// comes (a bounded number of times). `None` once answered, else why not.
    async fn resume(
        &self,
        parser: &mut Parser,
        id: Option<&Value>,
        answered: &mut bool,
    ) -> Option<String> {
        let mut why = None;
        for _ in 0..MAX_RESUMES {
            let wait = parser
                .retry_ms()
                .map_or(DEFAULT_RETRY, Duration::from_millis);
            tokio::time::sleep(wait).await;
            *parser = parser.reconnected();
            let mut request = self
                .request(reqwest::Method::GET, None)
                .header(ACCEPT, "text/event-stream");
            if let Some(last) = parser.last_event_id() {
                request = request.header("Last-Event-ID", last);
            }
            let response = match request.send().await {
                Ok(r) => r,
                Err(e) => {
                    why = Some(format!(
                        "the server ended the SSE stream before answering, and resuming it failed: {}",
                        reqwest_chain(e)
                    ));
                    continue;
                }
            };
            let status = response.status();
            if !status.is_success() || !is_event_stream(&response) {
                return Some(format!(
                    "the server ended the SSE stream before answering and did not resume it (GET with Last-Event-ID: HTTP {})",
                    status.as_u16()
                ));
            }
            match self
                .relay_stream(response, parser, id, false, true, answered)
                .await
            {
                Ok(()) => {}
                Err(Broke::TooLarge) => return Some(self.too_large()),
                Err(Broke::Io(e)) => {
                    why = Some(format!(
                        "the server's resumed SSE stream broke before the answer arrived: {e}"
                    ));
                }
            }
            if *answered {
                return None;
            }
        }
        why.or_else(|| {
            Some(format!(
                "the server ended the SSE stream without answering, {MAX_RESUMES} times"
            ))
        })
    }

    /// The JSON messages of the `message` events in `chunk`.
    fn messages(&self, parser: &mut Parser, chunk: &[u8]) -> Result<Vec<Vec<u8>>, Broke> {
        let events = parser.feed(chunk).map_err(|TooLarge(_)| Broke::TooLarge)?;
        let mut out = Vec::new();
        for event in events {
            if event.name != "message" {
                continue;
            }
            match frame::lines(event.data.into_bytes()) {
                Ok(lines) => out.extend(lines),
                Err(frame::NotJson) => {
                    self.say("the server sent an event that is not JSON; dropped")
                }
            }
        }
        Ok(out)
    }

    /// Relays SSE events until the stream ends (or, with `until_answered`, until the
    /// answer to `id` came: for `initialize`, and on a resumed stream the server may
    /// hold open after it); `answered` says whether it did.
    async fn relay_stream(
        &self,
        mut response: Response,
        parser: &mut Parser,
        id: Option<&Value>,
        initialize: bool,
        until_answered: bool,
        answered: &mut bool,
    ) -> Result<(), Broke> {
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return Ok(()),
                Err(e) => return Err(Broke::Io(reqwest_chain(e))),
            };
            for line in self.messages(parser, &chunk)? {
                *answered |= self.emit(line, id, initialize).await;
            }
            if until_answered && *answered {
                return Ok(());
            }
        }
    }

    /// Writes one message to stdout; true when it answers `id`. The answer to
    /// `initialize` sets the version later requests carry.
    async fn emit(&self, mut line: Vec<u8>, id: Option<&Value>, initialize: bool) -> bool {
        let answers = id.is_some_and(|id| frame::answers(&line, id));
        if !self.pending_lists.lock().unwrap().is_empty()
            && let Some(changed) = self.listed(&line)
        {
            line = changed;
        }
        if answers && initialize {
            let answer: Value = serde_json::from_slice(&line).unwrap_or(Value::Null);
            if let Some(version) = answer["result"]["protocolVersion"].as_str() {
                *self.version.lock().unwrap() = Some(version.to_string());
            }
        }
        self.out.line(line).await;
        answers
    }

    /// A JSON-RPC error for a request that got no answer, so the client never waits.
    async fn fail(&self, message: &Value, why: &str) {
        let why = self.secrets.redact(why);
        if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("mcp-lock guard: {why}")}});
            self.out.line(error.to_string().into_bytes()).await;
        } else {
            self.say(&why);
        }
    }
}

/// How an SSE stream failed.
enum Broke {
    /// An event grew past --max-message-bytes.
    TooLarge,
    Io(String),
}

fn is_event_stream(response: &Response) -> bool {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .is_some_and(|kind| kind.starts_with("text/event-stream"))
}

/// The start of an error answer's body, for the client's error message: it is only a
/// message, so it is not waited for past `ERROR_BODY_WAIT`.
async fn error_text(response: Response) -> String {
    let body = read_body_prefix(response, ERROR_BODY_BYTES, Instant::now() + ERROR_BODY_WAIT).await;
    String::from_utf8_lossy(&body).into_owned()
}

/// Whether an error answer means the server forgot the session.
fn expired(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND
        || status == StatusCode::BAD_REQUEST
            && body
                .to_ascii_lowercase()
                .contains("no valid session id provided")
}

/// Legacy HTTP+SSE: one event stream, messages POSTed to its endpoint.
async fn legacy(remote: ResolvedRemote, options: ClientOptions, out: Out) -> Result<(), String> {
    let url = parse_url(&remote.url)?;
    let client = build_client(&url, &options)?;
    let mut headers = header_map(&remote)?;
    let store = TokenStore::from_env(&|v| std::env::var(v).ok()).ok();
    let deadline = tokio::time::Instant::now() + options.request_timeout;
    let mut secrets = remote.secrets.clone();
    add_login(
        &remote,
        &mut headers,
        &mut secrets,
        store.as_ref(),
        deadline,
    )
    .await?;
    let get = client
        .get(url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send();
    let response = tokio::time::timeout_at(deadline, get)
        .await
        .map_err(|_| {
            format!(
                "GET (HTTP+SSE): {} did not answer within the request timeout",
                remote.written_url
            )
        })?
        .map_err(|e| format!("cannot reach {}: {}", remote.written_url, reqwest_chain(e)))?;
    if !response.status().is_success() {
        return Err(format!(
            "GET (HTTP+SSE): the server answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel::<String>();
    let max = options.max_message_bytes;
    let events_out = out.clone();
    // Reads the stream until it ends; its result says how.
    let mut reader = tokio::spawn(async move {
        let mut response = response;
        let mut parser = Parser::new(max);
        let mut endpoint_tx = Some(endpoint_tx);
        loop {
            let chunk = match response.chunk().await {
                Ok(Some(chunk)) => chunk,
                Ok(None) => return "the server's event stream ended".to_string(),
                Err(e) => return format!("the server's event stream broke: {}", reqwest_chain(e)),
            };
            let Ok(events) = parser.feed(&chunk) else {
                return format!(
                    "the server's event stream sent a message larger than {max} bytes (--max-message-bytes)"
                );
            };
            for event in events {
                match event.name.as_str() {
                    "endpoint" => {
                        if let Some(tx) = endpoint_tx.take() {
                            let _ = tx.send(event.data);
                        }
                    }
                    "message" => match frame::lines(event.data.into_bytes()) {
                        Ok(lines) => {
                            for line in lines {
                                events_out.line(line).await;
                            }
                        }
                        Err(frame::NotJson) => eprintln!(
                            "mcp-lock guard: the server sent an event that is not JSON; dropped"
                        ),
                    },
                    _ => {}
                }
            }
        }
    });
    let Ok(Ok(endpoint)) = tokio::time::timeout_at(deadline, endpoint_rx).await else {
        reader.abort();
        return Err(
            "GET (HTTP+SSE): the stream sent no endpoint event within the request timeout".into(),
        );
    };
    // As verify: another origin is refused (it would get none of the headers).
    let endpoint = endpoint_of(
        &url,
        &endpoint,
        Err("the guard never POSTs to another origin"),
    )
    .inspect_err(|_| reader.abort())?;
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = stdin.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            ended = &mut reader => {
                return Err(ended.unwrap_or_else(|_| "the server's event stream ended".into()));
            }
        }
        if line.iter().all(u8::is_ascii_whitespace) {
            continue;
        }
        let sent = client
            .post(endpoint.clone())
            .headers(headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(line.clone())
            .send()
            .await;
        let failure = match sent {
            Ok(r) if r.status().is_success() => None,
            Ok(r) => Some(format!("the server answered HTTP {}", r.status().as_u16())),
            Err(e) => Some(format!("cannot reach the endpoint: {}", reqwest_chain(e))),
        };
        if let Some(why) = failure
            && let Ok(message) = serde_json::from_slice::<Value>(&line)
            && let (Some(id), Some(_)) = (message.get("id"), message.get("method"))
        {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("mcp-lock guard: {}", secrets.redact(&why))}});
            out.line(error.to_string().into_bytes()).await;
        }
    }
    reader.abort();
    Ok(())
}
