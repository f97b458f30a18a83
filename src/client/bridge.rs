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

use std::sync::Arc;
use std::time::Duration;

use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use reqwest::{Client, Response, StatusCode, Url};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::sync::{Mutex, mpsc};

use super::ClientOptions;
use super::http::{build_client, header_map, parse_url, reqwest_chain};
use super::sse::Parser;
use crate::auth::{TokenStore, cached_bearer};
use crate::config::{RemoteKind, ResolvedRemote};
use crate::secrets::Secrets;

/// How often a dropped GET stream is reopened before the bridge gives up on it.
const MAX_RECONNECTS: usize = 20;
/// The wait before reopening when the server set no `retry`.
const DEFAULT_RETRY: Duration = Duration::from_millis(500);

/// Lines for stdout, written by one task so messages never interleave.
type Out = mpsc::UnboundedSender<Vec<u8>>;

/// Runs the bridge until stdin closes (or the legacy stream ends). `pinned_versions`
/// are the protocol versions the lock's profiles used: a client speaking another is
/// warned about once on stderr (its definitions are enforced all the same).
pub async fn run(
    remote: ResolvedRemote,
    options: ClientOptions,
    pinned_versions: Vec<String>,
) -> Result<(), String> {
    let (out, mut lines) = mpsc::unbounded_channel::<Vec<u8>>();
    let writer = tokio::spawn(async move {
        let mut stdout = tokio::io::stdout();
        while let Some(mut line) = lines.recv().await {
            line.push(b'\n');
            if stdout.write_all(&line).await.is_err() || stdout.flush().await.is_err() {
                break;
            }
        }
    });
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
                return request
                    .header("MCP-Protocol-Version", version)
                    .header("Mcp-Method", method);
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

    /// After a 401: a fresh login token, if one is in use and can be had.
    async fn refresh_bearer(&self) -> bool {
        let Some(store) = &self.store else {
            return false;
        };
        if !self.bearer.load(std::sync::atomic::Ordering::SeqCst) {
            return false;
        }
        let deadline = tokio::time::Instant::now() + self.auth_timeout;
        match cached_bearer(store, self.url.as_str(), true, deadline).await {
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

    /// Writes every message of a JSON body or an SSE stream to stdout.
    async fn relay(&self, response: Response) {
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
            .unwrap_or_default();
        if kind.starts_with("text/event-stream") {
            let mut parser = Parser::new(self.max);
            let _ = self.relay_stream(response, &mut parser).await;
            return;
        }
        match response.bytes().await {
            Ok(body) if !body.iter().all(u8::is_ascii_whitespace) => self.emit_json(&body),
            Ok(_) => {}
            Err(e) => self.say(&format!("an answer broke off: {}", reqwest_chain(e))),
        }
    }

    /// Relays SSE events until the stream ends; `Err` when it broke.
    async fn relay_stream(
        &self,
        mut response: Response,
        parser: &mut Parser,
    ) -> Result<(), String> {
        loop {
            match response.chunk().await {
                Ok(Some(chunk)) => match parser.feed(&chunk) {
                    Ok(events) => {
                        for event in events {
                            if event.name == "message" {
                                self.emit_json(event.data.as_bytes());
                            }
                        }
                    }
                    Err(e) => return Err(e.to_string()),
                },
                Ok(None) => return Ok(()),
                Err(e) => return Err(reqwest_chain(e)),
            }
        }
    }

    /// A body's message, or each member of a batch, as its own line.
    fn emit_json(&self, body: &[u8]) {
        match serde_json::from_slice::<Value>(body) {
            Ok(Value::Array(items)) => {
                for item in items {
                    let _ = self.out.send(item.to_string().into_bytes());
                }
            }
            Ok(message) => {
                let _ = self.out.send(message.to_string().into_bytes());
            }
            Err(_) => self.say("the server sent something that is not JSON; dropped"),
        }
    }

    /// A JSON-RPC error for a request that got no answer, so the client never waits.
    fn fail(&self, message: &Value, why: &str) {
        let why = self.secrets.redact(why);
        if let (Some(id), Some(_)) = (message.get("id"), message.get("method")) {
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("mcp-lock guard: {why}")}});
            let _ = self.out.send(error.to_string().into_bytes());
        } else {
            self.say(&why);
        }
    }
}

/// Whether an error answer means the server forgot the session.
fn expired(status: StatusCode, body: &str) -> bool {
    status == StatusCode::NOT_FOUND
        || status == StatusCode::BAD_REQUEST
            && body
                .to_ascii_lowercase()
                .contains("no valid session id provided")
}

async fn streamable(
    remote: ResolvedRemote,
    options: ClientOptions,
    out: Out,
    pinned_versions: Vec<String>,
) -> Result<(), String> {
    let url = parse_url(&remote.url)?;
    let mut headers = header_map(&remote)?;
    let store = TokenStore::from_env(&|v| std::env::var(v).ok()).ok();
    let mut bearer = false;
    if !headers.contains_key(AUTHORIZATION)
        && let Some(store) = &store
    {
        let deadline = tokio::time::Instant::now() + options.request_timeout;
        match cached_bearer(store, &remote.url, false, deadline).await {
            Ok(Some(b)) => {
                let mut value = HeaderValue::from_str(&format!("Bearer {}", b.access_token))
                    .map_err(|_| {
                        "the cached login token is not a valid header value".to_string()
                    })?;
                value.set_sensitive(true);
                headers.insert(AUTHORIZATION, value);
                bearer = true;
            }
            Ok(None) => {}
            Err(e) => return Err(format!("{e}; run `mcp-lock login {}` again", remote.name)),
        }
    }
    let conn = Arc::new(Conn {
        client: build_client(&url, &options)?,
        url,
        headers: std::sync::Mutex::new(headers),
        secrets: remote.secrets.clone(),
        session: std::sync::Mutex::new(None),
        version: std::sync::Mutex::new(None),
        initialize: std::sync::Mutex::new(None),
        reopening: Mutex::new(()),
        max: options.max_message_bytes,
        out,
        get_started: std::sync::atomic::AtomicBool::new(false),
        store,
        bearer: std::sync::atomic::AtomicBool::new(bearer),
        auth_timeout: options.request_timeout,
        pinned_versions,
        warned: std::sync::atomic::AtomicBool::new(false),
    });
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        match stdin.read_until(b'\n', &mut line).await {
            Ok(0) | Err(_) => break,
            Ok(_) => {}
        }
        let Ok(message) = serde_json::from_slice::<Value>(&line) else {
            if !line.iter().all(u8::is_ascii_whitespace) {
                conn.say("a line from the client is not JSON; dropped");
            }
            continue;
        };
        conn.check_version(&message);
        let is_request = message.get("id").is_some();
        if message["method"] == "initialize" || !is_request {
            // In order: the handshake, and notifications (answered at once, 202).
            send_one(&conn, message).await;
        } else {
            // A request, or an answer to the server's: a server may hold the POST
            // open until it is done, so each goes on its own.
            let conn = conn.clone();
            tokio::spawn(async move { send_one(&conn, message).await });
        }
    }
    // The client is gone: end the session, briefly.
    if conn.session.lock().unwrap().is_some() {
        let delete = conn.request(reqwest::Method::DELETE, None).send();
        let _ = tokio::time::timeout(Duration::from_secs(2), delete).await;
    }
    Ok(())
}

/// POSTs one message from the client; its answer is relayed on a task of its own.
async fn send_one(conn: &Arc<Conn>, message: Value) {
    let method = message["method"].as_str().unwrap_or("").to_string();
    let is_initialize = method == "initialize";
    if is_initialize {
        *conn.initialize.lock().unwrap() = Some(message.clone());
        *conn.session.lock().unwrap() = None;
        *conn.version.lock().unwrap() = None;
    }
    // Wait for a session being opened again.
    drop(conn.reopening.lock().await);
    let mut response = match conn.post(&message).await {
        Ok(r) => r,
        Err(e) => return conn.fail(&message, &e),
    };
    if !is_initialize && !response.status().is_success() && conn.session.lock().unwrap().is_some() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        if !expired(status, &body) {
            return conn.fail(&message, &http_failure(status, &body));
        }
        if let Err(e) = reopen(conn).await {
            return conn.fail(
                &message,
                &format!("the session expired and could not be opened again: {e}"),
            );
        }
        response = match conn.post(&message).await {
            Ok(r) => r,
            Err(e) => return conn.fail(&message, &e),
        };
    }
    let status = response.status();
    if !status.is_success() {
        let body = response.text().await.unwrap_or_default();
        return conn.fail(&message, &http_failure(status, &body));
    }
    if is_initialize {
        *conn.session.lock().unwrap() = response.headers().get("mcp-session-id").cloned();
        // The version header follows from the answer, read by the relay below.
        let conn = conn.clone();
        let (tx, rx) = tokio::sync::oneshot::channel();
        tokio::spawn(async move {
            relay_initialize(&conn, response, tx).await;
        });
        // Later messages carry the agreed version: wait for it.
        let _ = rx.await;
        return;
    }
    let modern = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
    if let Some(version) = modern
        && conn.session.lock().unwrap().is_none()
    {
        // The 2026-07-28 era has no session; its GET stream still names the version.
        *conn.version.lock().unwrap() = Some(version.to_string());
    }
    if method == "notifications/initialized" || modern.is_some() {
        start_get_stream(conn);
    }
    let conn = conn.clone();
    tokio::spawn(async move { conn.relay(response).await });
}

/// Relays the answer to `initialize`, noting the version it agreed on.
async fn relay_initialize(conn: &Conn, response: Response, done: tokio::sync::oneshot::Sender<()>) {
    let kind = response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .unwrap_or_default();
    let body = if kind.starts_with("text/event-stream") {
        // The answer is the stream's first message with a result or error.
        let mut response = response;
        let mut parser = Parser::new(conn.max);
        let mut found = None;
        'read: while let Ok(Some(chunk)) = response.chunk().await {
            let Ok(events) = parser.feed(&chunk) else {
                break;
            };
            for event in events {
                if event.name != "message" {
                    continue;
                }
                let value: Value = serde_json::from_str(&event.data).unwrap_or(Value::Null);
                if value.get("result").is_some() || value.get("error").is_some() {
                    found = Some(value);
                    break 'read;
                }
                conn.emit_json(event.data.as_bytes());
            }
        }
        found
    } else {
        response
            .bytes()
            .await
            .ok()
            .and_then(|b| serde_json::from_slice::<Value>(&b).ok())
    };
    match body {
        Some(answer) => {
            if let Some(version) = answer["result"]["protocolVersion"].as_str() {
                *conn.version.lock().unwrap() = Some(version.to_string());
            }
            let _ = conn.out.send(answer.to_string().into_bytes());
        }
        None => {
            let initialize = conn
                .initialize
                .lock()
                .unwrap()
                .clone()
                .unwrap_or(Value::Null);
            conn.fail(&initialize, "the server gave no answer to initialize");
        }
    }
    let _ = done.send(());
}

/// Opens an expired session again with the client's own `initialize`, whose answer
/// the client already has.
async fn reopen(conn: &Arc<Conn>) -> Result<(), String> {
    let _held = conn.reopening.lock().await;
    let Some(mut initialize) = conn.initialize.lock().unwrap().clone() else {
        return Err("the client never sent initialize".into());
    };
    initialize["id"] = json!("mcp-lock-guard-reopen");
    *conn.session.lock().unwrap() = None;
    *conn.version.lock().unwrap() = None;
    let response = conn.post(&initialize).await?;
    if !response.status().is_success() {
        let status = response.status();
        let body = response.text().await.unwrap_or_default();
        return Err(http_failure(status, &body));
    }
    *conn.session.lock().unwrap() = response.headers().get("mcp-session-id").cloned();
    // Read the answer for its version; it is not the client's to see.
    let body = response.text().await.unwrap_or_default();
    let answer = body
        .lines()
        .map(|l| l.strip_prefix("data:").unwrap_or(l).trim())
        .find_map(|l| {
            serde_json::from_str::<Value>(l)
                .ok()
                .filter(|v| v.get("result").is_some())
        });
    if let Some(version) = answer
        .as_ref()
        .and_then(|a| a["result"]["protocolVersion"].as_str())
    {
        *conn.version.lock().unwrap() = Some(version.to_string());
    }
    let initialized = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    let _ = conn.post(&initialized).await?;
    conn.say("the server forgot the session; opened a new one with the client's initialize");
    conn.get_started
        .store(false, std::sync::atomic::Ordering::SeqCst);
    start_get_stream(conn);
    Ok(())
}

fn http_failure(status: StatusCode, body: &str) -> String {
    let body = crate::text::cut(body.trim(), 200);
    if body.is_empty() {
        format!("the server answered HTTP {}", status.as_u16())
    } else {
        format!("the server answered HTTP {}: {body}", status.as_u16())
    }
}

/// Opens the GET stream for the server's own messages, once per session.
fn start_get_stream(conn: &Arc<Conn>) {
    if conn
        .get_started
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    let conn = conn.clone();
    tokio::spawn(async move { get_stream(&conn).await });
}

async fn get_stream(conn: &Conn) {
    let mut parser = Parser::new(conn.max);
    let session = conn.session.lock().unwrap().clone();
    for attempt in 0..=MAX_RECONNECTS {
        if attempt > 0 {
            let wait = parser
                .retry_ms()
                .map_or(DEFAULT_RETRY, Duration::from_millis);
            tokio::time::sleep(wait).await;
            if *conn.session.lock().unwrap() != session {
                // A new session has a stream of its own.
                return;
            }
            parser = parser.reconnected();
        }
        let mut request = conn
            .request(reqwest::Method::GET, None)
            .header(ACCEPT, "text/event-stream");
        if let Some(id) = parser.last_event_id() {
            request = request.header("Last-Event-ID", id);
        }
        let response = match request.send().await {
            Ok(r) => r,
            Err(_) => continue,
        };
        match response.status() {
            // The server offers no stream: nothing to hold open.
            StatusCode::METHOD_NOT_ALLOWED => return,
            // The session is gone; the next POST opens one and its stream.
            StatusCode::NOT_FOUND | StatusCode::BAD_REQUEST => return,
            s if !s.is_success() => continue,
            _ => {}
        }
        let _ = conn.relay_stream(response, &mut parser).await;
    }
    conn.say("the server's GET stream kept dropping; its notifications may be missed");
}

/// Legacy HTTP+SSE: one event stream, messages POSTed to its endpoint.
async fn legacy(remote: ResolvedRemote, options: ClientOptions, out: Out) -> Result<(), String> {
    let url = parse_url(&remote.url)?;
    let client = build_client(&url, &options)?;
    let headers = header_map(&remote)?;
    let response = client
        .get(url.clone())
        .headers(headers.clone())
        .header(ACCEPT, "text/event-stream")
        .send()
        .await
        .map_err(|e| format!("cannot reach {}: {}", remote.written_url, reqwest_chain(e)))?;
    if !response.status().is_success() {
        return Err(format!(
            "GET (HTTP+SSE): the server answered HTTP {}",
            response.status().as_u16()
        ));
    }
    let (endpoint_tx, endpoint_rx) = tokio::sync::oneshot::channel::<Url>();
    let max = options.max_message_bytes;
    let base = url.clone();
    let events_out = out.clone();
    let reader = tokio::spawn(async move {
        let mut response = response;
        let mut parser = Parser::new(max);
        let mut endpoint_tx = Some(endpoint_tx);
        while let Ok(Some(chunk)) = response.chunk().await {
            let Ok(events) = parser.feed(&chunk) else {
                break;
            };
            for event in events {
                match event.name.as_str() {
                    "endpoint" => {
                        if let (Some(tx), Ok(endpoint)) =
                            (endpoint_tx.take(), base.join(event.data.trim()))
                        {
                            let _ = tx.send(endpoint);
                        }
                    }
                    "message" => {
                        let _ = events_out.send(event.data.into_bytes());
                    }
                    _ => {}
                }
            }
        }
    });
    let endpoint = endpoint_rx
        .await
        .map_err(|_| "GET (HTTP+SSE): the stream ended before its endpoint event".to_string())?;
    // Headers go to the configured origin only.
    let headers = if endpoint.origin() == url.origin() {
        headers
    } else {
        HeaderMap::new()
    };
    let mut stdin = BufReader::new(tokio::io::stdin());
    let mut line = Vec::new();
    loop {
        line.clear();
        tokio::select! {
            read = stdin.read_until(b'\n', &mut line) => match read {
                Ok(0) | Err(_) => break,
                Ok(_) => {}
            },
            _ = async { while !reader.is_finished() { tokio::time::sleep(Duration::from_millis(50)).await } } => {
                return Err("the server's event stream ended".into());
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
            let error = json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603, "message": format!("mcp-lock guard: {}", remote.secrets.redact(&why))}});
            let _ = out.send(error.to_string().into_bytes());
        }
    }
    reader.abort();
    Ok(())
}
