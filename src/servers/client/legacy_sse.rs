//! The HTTP+SSE transport of 2024-11-05 (deprecated, still deployed).
//!
//! A GET opens a long-lived event stream whose first event, `endpoint`, names the URL
//! to POST messages to; every answer comes back as a `message` event on the stream.

use reqwest::Url;
use reqwest::header::{ACCEPT, CONTENT_TYPE, HeaderMap};
use serde_json::Value;
use tokio::sync::mpsc;
use tokio::task::JoinHandle;
use tokio::time::{Instant, timeout_at};

use super::http::{
    Peer, build_client, check_status, header_map, parse_url, reqwest_chain, send_error,
};
use super::session::{Opening, open_and_list};
use super::sse::{Event, Parser};
use super::{
    ClientOptions, Counters, Outcome, ProtocolChoice, RedirectKind, RpcError, Transport,
    notification, request_message, take_payload,
};
use crate::base::json::Json;
use crate::servers::config::ResolvedRemote;

/// Events waiting to be read; the reader pauses when this many are queued (each is
/// at most --max-message-bytes).
const QUEUED_EVENTS: usize = 4;

/// Lists a legacy HTTP+SSE server's tools. `Err` only when the session could not open.
pub(crate) async fn fetch(
    remote: &ResolvedRemote,
    options: &ClientOptions,
    deadline: Instant,
) -> Result<(Outcome, Counters), Opening> {
    options.status.set("connecting (HTTP+SSE)");
    let mut conn = SseConnection::connect(remote, options, deadline)
        .await
        .map_err(Opening::Failed)?;
    // The transport predates the modern era: go straight to the handshake.
    let mut options = options.clone();
    if options.protocol == ProtocolChoice::Newest {
        options.protocol = ProtocolChoice::HandshakeOnly;
    }
    let result = open_and_list(&mut conn, &options, deadline).await;
    let counters = conn.counters;
    drop(conn);
    result
        .map(|outcome| (outcome, counters))
        .map_err(|e| match e {
            Opening::Restart | Opening::NotStreamable(_) => {
                Opening::Failed("the HTTP+SSE server refused the session".into())
            }
            other => other,
        })
}

pub(crate) struct SseConnection {
    client: reqwest::Client,
    endpoint: Url,
    headers: HeaderMap,
    peer: Peer,
    events: mpsc::Receiver<Result<Event, RpcError>>,
    _reader: AbortOnDrop,
    next_id: i64,
    counters: Counters,
    pub(crate) answers: super::Answers,
}

impl SseConnection {
    async fn connect(
        remote: &ResolvedRemote,
        options: &ClientOptions,
        deadline: Instant,
    ) -> Result<Self, String> {
        let url = parse_url(&remote.url)?;
        let client = build_client(&url, options)?;
        let headers = header_map(remote)?;
        let peer = Peer::new(remote);
        let until = deadline.min(Instant::now() + options.request_timeout);
        let opening = |e: RpcError| match e {
            RpcError::Timeout => format!(
                "GET (HTTP+SSE): no endpoint event within {}s",
                options.request_timeout.as_secs_f64()
            ),
            e => format!("GET (HTTP+SSE): {e}"),
        };
        let mut target = url.clone();
        let mut hops = 0;
        let response = loop {
            // The configured headers go to the configured origin only.
            let mut request = client
                .get(target.clone())
                .header(ACCEPT, "text/event-stream");
            if target.origin() == url.origin() {
                request = request.headers(headers.clone());
            }
            let response = match timeout_at(until, request.send()).await {
                Err(_) => return Err(opening(RpcError::Timeout)),
                Ok(Err(e)) => return Err(opening(send_error(e, &peer))),
                Ok(Ok(r)) => r,
            };
            match check_status(response, until, &peer).await {
                Err(RpcError::Redirect {
                    location,
                    kind: RedirectKind::CrossOrigin,
                    ..
                }) if options.allow_cross_origin_redirects && hops < 10 => {
                    target = target.join(&location).map_err(|e| {
                        format!("GET (HTTP+SSE): the redirect to {location:?} is not a URL: {e}")
                    })?;
                    hops += 1;
                }
                other => break other.map_err(opening)?,
            }
        };
        let kind = response
            .headers()
            .get(CONTENT_TYPE)
            .map(|v| String::from_utf8_lossy(v.as_bytes()).to_ascii_lowercase())
            .unwrap_or_default();
        if !kind.starts_with("text/event-stream") {
            return Err(format!(
                "GET (HTTP+SSE): unexpected Content-Type {kind:?} (expected text/event-stream)"
            ));
        }
        let (tx, mut events) = mpsc::channel(QUEUED_EVENTS);
        // Ends the reader (and the connection) on every way out of here.
        let reader = AbortOnDrop(tokio::spawn(read_events(
            response,
            options.max_message_bytes,
            tx,
        )));
        let first = match timeout_at(until, events.recv()).await {
            Err(_) => return Err(opening(RpcError::Timeout)),
            Ok(None) => return Err(opening(RpcError::Closed("the stream ended".into()))),
            Ok(Some(Err(e))) => return Err(opening(e)),
            Ok(Some(Ok(event))) => event,
        };
        if first.name != "endpoint" {
            return Err(format!(
                "GET (HTTP+SSE): the first event is {:?}, not \"endpoint\"",
                first.name
            ));
        }
        let endpoint = endpoint_of(
            &url,
            &first.data,
            options
                .allow_cross_origin_redirects
                .then_some(())
                .ok_or("pass --allow-redirects to use it"),
        )?;
        // An endpoint elsewhere (allowed above) gets none of the configured headers.
        let headers = if endpoint.origin() == url.origin() {
            headers
        } else {
            HeaderMap::new()
        };
        Ok(SseConnection {
            client,
            endpoint,
            headers,
            peer,
            events,
            _reader: reader,
            next_id: 1,
            counters: Counters::default(),
            answers: super::Answers::of(options),
        })
    }

    async fn post(&self, body: &Value, deadline: Instant) -> Result<(), RpcError> {
        let request = self
            .client
            .post(self.endpoint.clone())
            .headers(self.headers.clone())
            .header(CONTENT_TYPE, "application/json")
            .body(serde_json::to_vec(body).expect("a Value always serializes"));
        let response = match timeout_at(deadline, request.send()).await {
            Err(_) => return Err(RpcError::Timeout),
            Ok(Err(e)) => return Err(send_error(e, &self.peer)),
            Ok(Ok(r)) => r,
        };
        check_status(response, deadline, &self.peer).await.map(drop)
    }
}

/// The URL an `endpoint` event names, resolved against the stream's URL. Another
/// origin is used only when `cross_origin` allows it (verify's --allow-redirects);
/// otherwise its error is the hint on how to allow it.
pub(crate) fn endpoint_of(
    url: &Url,
    data: &str,
    cross_origin: Result<(), &str>,
) -> Result<Url, String> {
    let endpoint = url
        .join(data.trim())
        .map_err(|e| format!("GET (HTTP+SSE): the endpoint {data:?} is not a URL: {e}"))?;
    if endpoint.origin() != url.origin()
        && let Err(hint) = cross_origin
    {
        return Err(format!(
            "GET (HTTP+SSE): the endpoint {endpoint} is on another origin; not used ({hint})"
        ));
    }
    Ok(endpoint)
}

/// A task aborted when this is dropped: dropping a `JoinHandle` alone leaves the task
/// running, and the reader's stream has no deadline of its own.
struct AbortOnDrop(JoinHandle<()>);

impl Drop for AbortOnDrop {
    fn drop(&mut self) {
        // Dropping the stream closes the connection, which ends the session.
        self.0.abort();
    }
}

/// Feeds the stream's events to the connection until it ends or breaks.
async fn read_events(
    mut response: reqwest::Response,
    max: usize,
    tx: mpsc::Sender<Result<Event, RpcError>>,
) {
    let mut parser = Parser::new(max);
    loop {
        let chunk = match response.chunk().await {
            Ok(Some(chunk)) => chunk,
            Ok(None) => {
                let _ = tx
                    .send(Err(RpcError::Closed(
                        "the server ended the SSE stream".into(),
                    )))
                    .await;
                return;
            }
            Err(e) => {
                let _ = tx
                    .send(Err(RpcError::Closed(format!(
                        "the SSE stream broke: {}",
                        reqwest_chain(e)
                    ))))
                    .await;
                return;
            }
        };
        match parser.feed(&chunk) {
            Ok(events) => {
                for event in events {
                    if tx.send(Ok(event)).await.is_err() {
                        return;
                    }
                }
            }
            Err(e) => {
                let _ = tx.send(Err(RpcError::TooLarge(e.0))).await;
                return;
            }
        }
    }
}

impl Transport for SseConnection {
    async fn request(
        &mut self,
        method: &str,
        params: Value,
        deadline: Instant,
    ) -> Result<Json, RpcError> {
        let id = self.next_id;
        self.next_id += 1;
        self.post(&request_message(id, method, params), deadline)
            .await?;
        loop {
            let event = match timeout_at(deadline, self.events.recv()).await {
                Err(_) => return Err(RpcError::Timeout),
                Ok(None) => return Err(RpcError::Closed("the SSE stream ended".into())),
                Ok(Some(event)) => event?,
            };
            let inbound =
                take_payload(event.data.as_bytes(), id, &mut self.counters, &self.answers);
            for reply in &inbound.replies {
                self.post(reply, deadline).await?;
            }
            if let Some(answer) = inbound.answer {
                return answer;
            }
        }
    }

    async fn notify(
        &mut self,
        method: &str,
        params: Option<Value>,
        deadline: Instant,
    ) -> Result<(), RpcError> {
        self.post(&notification(method, params), deadline).await
    }

    fn counters(&self) -> Counters {
        self.counters
    }

    fn name(&self) -> &'static str {
        "sse"
    }
}
