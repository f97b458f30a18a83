//! Streamable HTTP (2025-03-26 onwards, and the sessionless 2026-07-28 shape).
//!
//! Every message is a POST to one endpoint; an answer comes back as one JSON body or
//! as an SSE stream. In the handshake era the server may hand out an `Mcp-Session-Id`,
//! sent back on every later request and ended with a DELETE; an expired session (404)
//! is opened again once. Modern requests carry `MCP-Protocol-Version` and
//! `Mcp-Method` headers mirroring the body.

use std::time::Duration;

use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap, HeaderName, HeaderValue, LOCATION};
use reqwest::{Client, Response, StatusCode, Url};
use serde_json::Value;
use tokio::time::{Instant, timeout_at};

use super::session::{Opening, open_and_list};
use super::sse::Parser;
use super::{
    ClientOptions, Counters, Incoming, Outcome, RedirectKind, RpcError, Transport, classify,
    messages_in, notification, request_message, take_payload,
};
use crate::base::json::Json;
pub(crate) use crate::base::net::{MAX_REDIRECTS, error_chain, reqwest_chain};
use crate::base::secrets::Secrets;
use crate::servers::config::ResolvedRemote;

/// How much of an error body is kept for a message.
const ERROR_BODY_BYTES: usize = 64 * 1024;
/// Characters of a `WWW-Authenticate` challenge kept in an error message.
const CHALLENGE_CHARS: usize = 200;
/// How long the closing DELETE may take.
const DELETE_TIMEOUT: Duration = Duration::from_secs(2);

/// Lists a Streamable HTTP server's tools. `Err` only when the session could not open.
pub(crate) async fn fetch(
    remote: &ResolvedRemote,
    options: &ClientOptions,
    deadline: Instant,
) -> Result<(Outcome, Counters), Opening> {
    options.status.set("connecting");
    let mut conn = HttpConnection::new(remote, options).map_err(Opening::Failed)?;
    let result = open_and_list(&mut conn, options, deadline).await;
    conn.close(deadline).await;
    result
        .map(|outcome| (outcome, conn.counters))
        .map_err(|e| match e {
            Opening::Restart => {
                Opening::Failed("the connection closed during the protocol probe".into())
            }
            other => other,
        })
}

/// The HTTP client for one server (see [`crate::base::net::build_client`]).
pub(crate) fn build_client(url: &Url, options: &ClientOptions) -> Result<Client, String> {
    crate::base::net::build_client(url, options.request_timeout)
}

/// Parses a configured URL, saying what is wrong with it.
pub(crate) fn parse_url(text: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("invalid URL: {e}"))?;
    match url.scheme() {
        "http" | "https" => Ok(url),
        other => Err(format!(
            "unsupported URL scheme {other:?} (expected http or https)"
        )),
    }
}

/// The configured headers, checked.
pub(crate) fn header_map(remote: &ResolvedRemote) -> Result<HeaderMap, String> {
    let mut map = HeaderMap::new();
    for (name, value, _) in &remote.headers {
        let key = HeaderName::from_bytes(name.as_bytes())
            .map_err(|_| format!("header {name:?} is not a valid header name"))?;
        let mut value = HeaderValue::from_str(value)
            .map_err(|_| format!("the value of header {name:?} is not a valid header value"))?;
        value.set_sensitive(true);
        map.insert(key, value);
    }
    Ok(map)
}

/// "header Authorization (from $TOKEN)": what an authentication error points at.
pub(crate) fn credentials_used(remote: &ResolvedRemote) -> String {
    if remote.headers.is_empty() && remote.oauth_off {
        return "no headers were sent, and its config turns OAuth off (\"oauth\": false); add one (e.g. \"Authorization\": \"Bearer ${TOKEN}\") under \"headers\" in the config".into();
    }
    if remote.headers.is_empty() {
        return format!(
            "no headers were sent; run `mcp-lock login {}` if the server uses OAuth, or add one (e.g. \"Authorization\": \"Bearer ${{TOKEN}}\") under \"headers\" in the config",
            remote.name
        );
    }
    if let Some(issuer) = &remote.oauth_issuer {
        return format!(
            "sent the token from `mcp-lock login {}` (issuer {issuer}); run it again to log in afresh",
            remote.name
        );
    }
    let names: Vec<String> = remote
        .headers
        .iter()
        .map(|(name, _, vars)| match vars.as_slice() {
            [] => format!("header {name}"),
            vars => format!(
                "header {name} (from {})",
                vars.iter()
                    .map(|v| format!("${v}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            ),
        })
        .collect();
    format!("sent {}", names.join(", "))
}

/// Who is being talked to, for error messages: the URL as written (reqwest's own
/// messages show the expanded, percent-encoded URL, which redaction cannot recognise),
/// the credentials sent, and the values to redact.
#[derive(Debug, Clone)]
pub(crate) struct Peer {
    pub url: String,
    pub credentials: String,
    pub secrets: Secrets,
}

impl Peer {
    pub(crate) fn new(remote: &ResolvedRemote) -> Self {
        Peer {
            url: remote.written_url.clone(),
            credentials: credentials_used(remote),
            secrets: remote.secrets.clone(),
        }
    }
}

/// A send that failed before any status arrived.
pub(crate) fn send_error(e: reqwest::Error, peer: &Peer) -> RpcError {
    if e.is_timeout() {
        return RpcError::Timeout;
    }
    let e = e.without_url();
    if e.is_connect() {
        // The innermost cause says it best ("Connection refused (os error 111)").
        let mut cause: &dyn std::error::Error = &e;
        while let Some(inner) = cause.source() {
            cause = inner;
        }
        return RpcError::Io(format!("cannot connect to {}: {cause}", peer.url));
    }
    RpcError::Io(format!("{}: {}", peer.url, error_chain(&e)))
}

/// A status that is not an answer, as an error; `Ok` for 2xx.
pub(crate) async fn check_status(
    response: Response,
    deadline: Instant,
    peer: &Peer,
) -> Result<Response, RpcError> {
    let credentials = peer.credentials.as_str();
    let status = response.status();
    if status.is_success() {
        return Ok(response);
    }
    if matches!(status, StatusCode::UNAUTHORIZED | StatusCode::FORBIDDEN) {
        // A challenge can be any length; like a body, it is redacted, then cut.
        let challenge = response.headers().get("www-authenticate").map(|v| {
            let text = peer.secrets.redact(&String::from_utf8_lossy(v.as_bytes()));
            crate::base::text::cut(&text, CHALLENGE_CHARS)
        });
        return Err(RpcError::Auth {
            status: status.as_u16(),
            challenge: Some(match challenge {
                Some(c) => format!("{c}; {credentials}"),
                None => credentials.to_string(),
            }),
        });
    }
    if status.is_redirection() {
        let location = response
            .headers()
            .get(LOCATION)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).into_owned())
            .unwrap_or_else(|| "(no Location)".into());
        let keeps_method = matches!(
            status,
            StatusCode::TEMPORARY_REDIRECT | StatusCode::PERMANENT_REDIRECT
        );
        return Err(RpcError::Redirect {
            status: status.as_u16(),
            location,
            kind: if keeps_method {
                RedirectKind::CrossOrigin
            } else {
                RedirectKind::ChangesMethod
            },
        });
    }
    let body = read_body_prefix(response, ERROR_BODY_BYTES, deadline).await;
    let rpc = messages_in(&body).ok().and_then(|messages| {
        messages.iter().find_map(|m| {
            let error = m.get("error")?.to_value();
            Some((
                error.get("code").and_then(Value::as_i64).unwrap_or(0),
                error
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("")
                    .to_string(),
                error.get("data").cloned(),
            ))
        })
    });
    // Redacted before it is cut, so no part of an echoed secret survives the cut.
    let text = peer
        .secrets
        .redact_truncated(String::from_utf8_lossy(&body).trim(), 200);
    Err(RpcError::Http {
        status: status.as_u16(),
        rpc,
        body: if text.is_empty() {
            status.canonical_reason().unwrap_or("").to_string()
        } else {
            text
        },
    })
}

/// Up to `max` bytes of a body (an error page), whatever happens.
pub(crate) async fn read_body_prefix(
    mut response: Response,
    max: usize,
    deadline: Instant,
) -> Vec<u8> {
    let mut body = Vec::new();
    while body.len() < max {
        match timeout_at(deadline, response.chunk()).await {
            Ok(Ok(Some(chunk))) => {
                let room = max - body.len();
                body.extend_from_slice(&chunk[..chunk.len().min(room)]);
            }
            _ => break,
        }
    }
    body
}

/// Reads a whole body, refusing more than `max` bytes.
pub(crate) async fn read_body(
    mut response: Response,
    max: usize,
    deadline: Instant,
) -> Result<Vec<u8>, RpcError> {
    // Sized once when the length is known, so a large body is not copied as it grows.
    let declared = response.content_length().unwrap_or(0);
    if declared > max as u64 {
        return Err(RpcError::TooLarge(max));
    }
    let mut body = Vec::with_capacity(declared as usize);
    loop {
        match timeout_at(deadline, response.chunk()).await {
            Err(_) => return Err(RpcError::Timeout),
            Ok(Err(e)) => {
                return Err(RpcError::Closed(format!(
                    "the connection dropped mid-answer: {}",
                    error_chain(&e)
                )));
            }
            Ok(Ok(None)) => return Ok(body),
            Ok(Ok(Some(chunk))) => {
                if body.len() + chunk.len() > max {
                    return Err(RpcError::TooLarge(max));
                }
                body.extend_from_slice(&chunk);
            }
        }
    }
}

fn content_type(response: &Response) -> String {
    response
        .headers()
        .get(CONTENT_TYPE)
        .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
        .unwrap_or_default()
}

/// One Streamable HTTP server.
pub(crate) struct HttpConnection {
    client: Client,
    url: Url,
    headers: HeaderMap,
    peer: Peer,
    session_id: Option<HeaderValue>,
    /// The version `initialize` agreed on, sent as `MCP-Protocol-Version` afterwards.
    protocol_version: Option<String>,
    /// What `initialize` sent, to open an expired session again.
    init_params: Option<Value>,
    reopened: bool,
    allow_cross_origin_redirects: bool,
    next_id: i64,
    counters: Counters,
    pub(crate) answers: super::Answers,
    max_message_bytes: usize,
}

impl HttpConnection {
    fn new(remote: &ResolvedRemote, options: &ClientOptions) -> Result<Self, String> {
        let url = parse_url(&remote.url)?;
        Ok(HttpConnection {
            client: build_client(&url, options)?,
            headers: header_map(remote)?,
            peer: Peer::new(remote),
            url,
            session_id: None,
            protocol_version: None,
            init_params: None,
            reopened: false,
            allow_cross_origin_redirects: options.allow_cross_origin_redirects,
            next_id: 1,
            counters: Counters::default(),
            answers: super::Answers::of(options),
            max_message_bytes: options.max_message_bytes,
        })
    }

    async fn post(&self, body: &Value, deadline: Instant) -> Result<Response, RpcError> {
        let method = body.get("method").and_then(Value::as_str).unwrap_or("");
        let modern = body["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
        let mut target = self.url.clone();
        let mut hops = 0;
        loop {
            // The configured headers (and a login's token) go to the configured origin only.
            let own_origin = target.origin() == self.url.origin();
            let mut request = self
                .client
                .post(target.clone())
                .header(ACCEPT, "application/json, text/event-stream")
                .header(CONTENT_TYPE, "application/json")
                .body(serde_json::to_vec(body).expect("a Value always serializes"));
            if own_origin {
                request = request.headers(self.headers.clone());
            }
            match modern {
                Some(version) => {
                    request = request
                        .header("MCP-Protocol-Version", version)
                        .header("Mcp-Method", method);
                }
                None => {
                    if let Some(session) = &self.session_id {
                        request = request.header("Mcp-Session-Id", session.clone());
                    }
                    if let Some(version) = &self.protocol_version {
                        request = request.header("MCP-Protocol-Version", version.as_str());
                    }
                }
            }
            let response = match timeout_at(deadline, request.send()).await {
                Err(_) => return Err(RpcError::Timeout),
                Ok(Err(e)) => return Err(send_error(e, &self.peer)),
                Ok(Ok(response)) => response,
            };
            match check_status(response, deadline, &self.peer).await {
                Err(RpcError::Redirect {
                    location,
                    kind: RedirectKind::CrossOrigin,
                    status,
                }) if self.allow_cross_origin_redirects && hops < MAX_REDIRECTS => {
                    target = target.join(&location).map_err(|_| RpcError::Redirect {
                        status,
                        location: location.clone(),
                        kind: RedirectKind::Unreadable,
                    })?;
                    hops += 1;
                }
                other => return other,
            }
        }
    }

    /// Posts a request and reads its answer, once.
    async fn exchange(
        &mut self,
        body: &Value,
        id: i64,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let response = self.post(body, deadline).await?;
        let is_initialize = body["method"] == "initialize";
        if is_initialize {
            self.session_id = response.headers().get("mcp-session-id").cloned();
        }
        let answer = self.read_answer(response, id, deadline).await?;
        if is_initialize {
            self.protocol_version = answer.get("protocolVersion").and_then(Json::as_str);
            self.init_params = Some(body["params"].clone());
        }
        Ok(answer)
    }

    async fn read_answer(
        &mut self,
        response: Response,
        id: i64,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let kind = content_type(&response);
        if response.status() == StatusCode::ACCEPTED {
            return Err(RpcError::Protocol(
                "the server answered a request with 202 Accepted and no body".into(),
            ));
        }
        if kind.starts_with("application/json") {
            let body = read_body(response, self.max_message_bytes, deadline).await?;
            let messages = messages_in(&body).map_err(|why| {
                RpcError::Protocol(format!(
                    "the response body is not a readable JSON-RPC message: {why}"
                ))
            })?;
            for message in messages {
                match classify(message, id, &mut self.counters, &self.answers) {
                    Incoming::Answer(answer) => return answer,
                    // A JSON body cannot carry a request we could answer in time.
                    Incoming::ServerRequest(_) | Incoming::Other => {}
                }
            }
            return Err(RpcError::Protocol(
                "the response body holds no answer to the request".into(),
            ));
        }
        if kind.starts_with("text/event-stream") {
            return self.read_stream(response, id, deadline).await;
        }
        Err(RpcError::Protocol(format!(
            "unexpected Content-Type {:?} (expected application/json or text/event-stream)",
            if kind.is_empty() {
                "(none)"
            } else {
                kind.as_str()
            }
        )))
    }

    async fn read_stream(
        &mut self,
        mut response: Response,
        id: i64,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let mut parser = Parser::new(self.max_message_bytes);
        loop {
            let chunk = match timeout_at(deadline, response.chunk()).await {
                Err(_) => return Err(RpcError::Timeout),
                Ok(Err(e)) => {
                    return Err(RpcError::Closed(format!(
                        "the SSE stream broke before the answer arrived: {}",
                        reqwest_chain(e)
                    )));
                }
                Ok(Ok(None)) => {
                    return Err(RpcError::Closed(
                        "the server ended the SSE stream without answering".into(),
                    ));
                }
                Ok(Ok(Some(chunk))) => chunk,
            };
            let events = parser.feed(&chunk).map_err(|e| RpcError::TooLarge(e.0))?;
            for event in events {
                let inbound =
                    take_payload(event.data.as_bytes(), id, &mut self.counters, &self.answers);
                for reply in &inbound.replies {
                    self.reply(reply, deadline).await?;
                }
                if let Some(answer) = inbound.answer {
                    return answer;
                }
            }
        }
    }

    /// Posts an answer to a request the server sent on a stream.
    async fn reply(&self, reply: &Value, deadline: Instant) -> Result<(), RpcError> {
        let response = self.post(reply, deadline).await?;
        drop(response);
        Ok(())
    }

    /// Opens an expired session again with what the first `initialize` sent.
    async fn reopen(&mut self, deadline: Instant) -> Result<(), RpcError> {
        let Some(params) = self.init_params.clone() else {
            return Err(RpcError::Protocol(
                "the session expired before it was opened".into(),
            ));
        };
        self.session_id = None;
        self.protocol_version = None;
        let id = self.next_id;
        self.next_id += 1;
        let body = request_message(id, "initialize", params);
        self.exchange(&body, id, deadline).await?;
        self.notify("notifications/initialized", None, deadline)
            .await
    }

    /// Ends the session, if there is one. Failures do not matter: the listing is done.
    async fn close(&mut self, deadline: Instant) {
        let Some(session) = self.session_id.take() else {
            return;
        };
        let mut request = self
            .client
            .delete(self.url.clone())
            .headers(self.headers.clone())
            .header("Mcp-Session-Id", session);
        if let Some(version) = &self.protocol_version {
            request = request.header("MCP-Protocol-Version", version.as_str());
        }
        // Never past the server's deadline, and briefly even when time is left.
        let until = deadline.min(Instant::now() + DELETE_TIMEOUT);
        let _ = timeout_at(until, request.send()).await;
    }
}

/// Whether an error says the server forgot the session: a 404 as the spec says, or
/// the TypeScript SDK's 400 "No valid session ID provided".
fn session_expired(e: &RpcError) -> bool {
    match e {
        RpcError::Http { status: 404, .. } => true,
        RpcError::Http {
            status: 400,
            rpc,
            body,
        } => {
            let text = rpc.as_ref().map_or(body.as_str(), |(_, m, _)| m.as_str());
            text.to_ascii_lowercase()
                .contains("no valid session id provided")
        }
        _ => false,
    }
}

impl Transport for HttpConnection {
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let id = self.next_id;
        self.next_id += 1;
        let body = request_message(id, method, params);
        match self.exchange(&body, id, deadline).await {
            Err(e)
                if session_expired(&e)
                    && self.session_id.is_some()
                    && !self.reopened
                    && method != "initialize" =>
            {
                // The server forgot the session (restart, expiry): open one again, once.
                self.reopened = true;
                self.reopen(deadline).await?;
                self.exchange(&body, id, deadline).await
            }
            other => other,
        }
    }

    async fn notify(
        &mut self,
        method: &str,
        params: Option<Value>,
        deadline: Instant,
    ) -> Result<(), RpcError> {
        self.post(&notification(method, params), deadline)
            .await
            .map(drop)
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn name(&self) -> &'static str {
        "streamable-http"
    }
}
