//! The fixture's HTTP side: Streamable HTTP at `/mcp` and legacy HTTP+SSE at `/sse`,
//! over a deliberately small HTTP/1.1 server (one thread per connection, every response
//! closes its connection) so that it can misbehave in ways a framework would not allow.

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{Receiver, Sender, channel};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use serde_json::{Value, json};

use super::{Options, answer};

#[derive(Clone, Copy, PartialEq, Eq)]
pub enum Mode {
    Streamable,
    LegacySse,
}

#[derive(Default)]
pub struct HttpOptions {
    pub mode: Option<Mode>,
    pub port: u16,
    pub port_file: Option<String>,
    pub log_file: Option<String>,
    pub respond_sse: bool,
    pub token: Option<String>,
    pub misbehave: String,
}

struct State {
    o: Options,
    port: u16,
    sessions: Mutex<HashSet<String>>,
    next_session: AtomicUsize,
    /// Legacy HTTP+SSE: each open GET stream's sender, by session.
    streams: Mutex<HashMap<String, Sender<String>>>,
    log: Mutex<Option<std::fs::File>>,
}

struct Request {
    method: String,
    path: String,
    headers: HashMap<String, String>,
    body: Vec<u8>,
}

pub fn serve(o: Options) {
    let listener = TcpListener::bind(("127.0.0.1", o.http.port)).expect("bind 127.0.0.1");
    let port = listener.local_addr().expect("local address").port();
    let log = o.http.log_file.as_ref().map(|path| {
        std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(path)
            .expect("open the log file")
    });
    if let Some(path) = &o.http.port_file {
        let partial = format!("{path}.partial");
        std::fs::write(&partial, format!("{port}\n")).expect("write the port file");
        std::fs::rename(&partial, path).expect("move the port file into place");
    }
    eprintln!("fixture_server: listening on 127.0.0.1:{port}");
    let state = Arc::new(State {
        o,
        port,
        sessions: Mutex::new(HashSet::new()),
        next_session: AtomicUsize::new(1),
        streams: Mutex::new(HashMap::new()),
        log: Mutex::new(log),
    });
    for stream in listener.incoming().flatten() {
        let state = state.clone();
        std::thread::spawn(move || {
            if let Some(request) = read_request(&stream) {
                handle(&state, stream, request);
            }
        });
    }
}

fn read_request(stream: &TcpStream) -> Option<Request> {
    let mut reader = BufReader::new(stream.try_clone().ok()?);
    let mut line = String::new();
    reader.read_line(&mut line).ok()?;
    let mut parts = line.split_whitespace();
    let method = parts.next()?.to_string();
    let mut path = parts.next()?.to_string();
    // A proxy receives the absolute form: keep the path only.
    if let Some(rest) = path.strip_prefix("http://") {
        path = rest.find('/').map_or("/".into(), |i| rest[i..].to_string());
    }
    let mut headers = HashMap::new();
    loop {
        let mut header = String::new();
        reader.read_line(&mut header).ok()?;
        let header = header.trim_end();
        if header.is_empty() {
            break;
        }
        if let Some((name, value)) = header.split_once(':') {
            headers.insert(name.trim().to_ascii_lowercase(), value.trim().to_string());
        }
    }
    let length: usize = headers
        .get("content-length")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0);
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(Request {
        method,
        path,
        headers,
        body,
    })
}

fn respond(mut stream: &TcpStream, status: &str, headers: &[(&str, String)], body: &[u8]) {
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
    let _ = stream.flush();
}

fn json_headers() -> Vec<(&'static str, String)> {
    vec![("Content-Type", "application/json".into())]
}

/// Starts a response whose body runs until the connection closes.
fn start_stream(mut stream: &TcpStream, extra: &[(&str, String)]) {
    let mut head = String::from(
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\nConnection: close\r\n",
    );
    for (name, value) in extra {
        head.push_str(&format!("{name}: {value}\r\n"));
    }
    head.push_str("\r\n");
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.flush();
}

fn write_raw(mut stream: &TcpStream, text: &str) -> bool {
    stream.write_all(text.as_bytes()).is_ok() && stream.flush().is_ok()
}

impl State {
    fn log(&self, line: &str) {
        if let Some(file) = self.log.lock().unwrap().as_mut() {
            let _ = writeln!(file, "{line}");
        }
    }

    fn new_session(&self) -> String {
        let id = format!("s-{}", self.next_session.fetch_add(1, Ordering::SeqCst));
        self.sessions.lock().unwrap().insert(id.clone());
        id
    }
}

fn handle(state: &State, stream: TcpStream, request: Request) {
    let o = &state.o;
    let message: Value = serde_json::from_slice(&request.body).unwrap_or(Value::Null);
    let rpc_method = message["method"].as_str().unwrap_or("").to_string();
    let session = request.headers.get("mcp-session-id").cloned();
    let version = request.headers.get("mcp-protocol-version");
    state.log(&format!(
        "{} {} {} session={} version={} method-header={} api-key={} last-event-id={} t-ms={}",
        request.method,
        request.path,
        if rpc_method.is_empty() {
            "-"
        } else {
            &rpc_method
        },
        session.as_deref().unwrap_or("-"),
        version.map_or("-", String::as_str),
        request
            .headers
            .get("mcp-method")
            .map_or("-", String::as_str),
        request.headers.get("x-api-key").map_or("-", String::as_str),
        request
            .headers
            .get("last-event-id")
            .map_or("-", String::as_str),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis()),
    ));
    if o.http.misbehave == "huge-challenge" {
        // A 60 KB challenge on one header line.
        let challenge = format!("Bearer realm=\"{}\"", "r".repeat(60_000));
        let headers = [("WWW-Authenticate", challenge)];
        respond(&stream, "401 Unauthorized", &headers, b"unauthorized");
        return;
    }
    if let Some(token) = &o.http.token
        && request.headers.get("authorization") != Some(&format!("Bearer {token}"))
    {
        let headers = [("WWW-Authenticate", "Bearer realm=\"fixture\"".to_string())];
        respond(&stream, "401 Unauthorized", &headers, b"unauthorized");
        return;
    }
    match state.o.http.mode {
        Some(Mode::LegacySse) => handle_legacy(state, &stream, &request, &message),
        _ => handle_streamable(state, &stream, &request, &message, session),
    }
}

fn handle_streamable(
    state: &State,
    stream: &TcpStream,
    request: &Request,
    message: &Value,
    session: Option<String>,
) {
    let o = &state.o;
    let path = request.path.split('?').next().unwrap_or("");
    match (o.http.misbehave.as_str(), path) {
        ("redirect-cross-origin", "/mcp") => {
            // localhost and 127.0.0.1 are different origins.
            let to = format!("http://localhost:{}/mcp-moved", state.port);
            respond(stream, "307 Temporary Redirect", &[("Location", to)], b"");
            return;
        }
        ("redirect-same-origin", "/mcp") => {
            let to = "/mcp-moved".to_string();
            respond(stream, "307 Temporary Redirect", &[("Location", to)], b"");
            return;
        }
        ("redirect-post-302", "/mcp") => {
            // A move a POST cannot follow: clients turn it into a GET.
            let to = "/mcp-moved".to_string();
            respond(stream, "302 Found", &[("Location", to)], b"");
            return;
        }
        (_, "/mcp")
        | ("redirect-cross-origin" | "redirect-same-origin" | "redirect-post-302", "/mcp-moved") => {
        }
        _ => {
            respond(stream, "404 Not Found", &[], b"not found");
            return;
        }
    }
    match request.method.as_str() {
        "GET" if o.http.misbehave == "flood-get-stream" => {
            start_stream(stream, &[]);
            flood(state, stream);
            return;
        }
        "GET" if o.notify_on_change && o.revision_file.is_some() => {
            // The GET stream: list_changed whenever the revision file changes.
            let path = o.revision_file.clone().unwrap();
            let read = || std::fs::read_to_string(&path).unwrap_or_default();
            let mut seen = read();
            start_stream(stream, &[]);
            let mut id = request
                .headers
                .get("last-event-id")
                .and_then(|v| v.parse::<u64>().ok())
                .unwrap_or(0);
            if o.http.misbehave == "drop-get-stream" && !GET_DROPPED.swap(true, Ordering::SeqCst) {
                // A priming event with an id, a slow retry, then the stream drops.
                write_raw(stream, "retry: 1500\n\nid: 41\ndata:\n\n");
                return;
            }
            if !write_raw(stream, "retry: 100\n\n") {
                return;
            }
            // From here a change of the file is announced: a test waits for this line
            // before it changes the revision.
            state.log(&format!("stream open revision={}", seen.trim()));
            loop {
                std::thread::sleep(Duration::from_millis(10));
                let now = read();
                if now == seen {
                    continue;
                }
                seen = now;
                id += 1;
                let note = json!({"jsonrpc": "2.0", "method": "notifications/tools/list_changed"});
                if !write_raw(stream, &format!("id: {id}\ndata: {note}\n\n")) {
                    return;
                }
            }
        }
        "DELETE" => {
            let known = session.is_some_and(|s| state.sessions.lock().unwrap().remove(&s));
            let status = if known { "200 OK" } else { "404 Not Found" };
            respond(stream, status, &[], b"");
            return;
        }
        "POST" => {}
        _ => {
            respond(
                stream,
                "405 Method Not Allowed",
                &[("Allow", "POST, DELETE".into())],
                b"",
            );
            return;
        }
    }
    let accept = request.headers.get("accept").cloned().unwrap_or_default();
    if !(accept.contains("application/json") && accept.contains("text/event-stream")) {
        respond(
            stream,
            "406 Not Acceptable",
            &[],
            b"Accept must list application/json and text/event-stream",
        );
        return;
    }
    let method = message["method"].as_str().unwrap_or("");
    let modern_version =
        message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
    let error_body = |id: &Value, code: i64, text: &str| {
        serde_json::to_vec(
            &json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": text}}),
        )
        .unwrap()
    };
    let id = message.get("id").cloned();
    let modern_era = matches!(o.era.as_str(), "modern" | "dual");
    if let Some(version) = modern_version.filter(|_| modern_era) {
        let header_version = request
            .headers
            .get("mcp-protocol-version")
            .map(String::as_str);
        let header_method = request.headers.get("mcp-method").map(String::as_str);
        if header_version != Some(version) || header_method != Some(method) {
            let body = error_body(
                id.as_ref().unwrap_or(&Value::Null),
                -32020,
                "Header mismatch",
            );
            respond(stream, "400 Bad Request", &json_headers(), &body);
            return;
        }
    } else if method != "initialize" {
        // The handshake era: a session must exist.
        match &session {
            None if id.is_some() => {
                let body = error_body(
                    id.as_ref().unwrap(),
                    -32000,
                    "Bad Request: no valid session ID provided",
                );
                respond(stream, "400 Bad Request", &json_headers(), &body);
                return;
            }
            Some(s)
                if o.http.misbehave == "expire-session-ts"
                    && !state.sessions.lock().unwrap().contains(s) =>
            {
                // What the TypeScript SDK's examples answer for a session they forgot.
                let body = error_body(
                    &Value::Null,
                    -32000,
                    "Bad Request: No valid session ID provided",
                );
                respond(stream, "400 Bad Request", &json_headers(), &body);
                return;
            }
            Some(s) if !state.sessions.lock().unwrap().contains(s) => {
                let body = error_body(
                    id.as_ref().unwrap_or(&Value::Null),
                    -32001,
                    "Session not found",
                );
                respond(stream, "404 Not Found", &json_headers(), &body);
                return;
            }
            _ => {}
        }
    }
    let Some(id) = id else {
        respond(stream, "202 Accepted", &[], b"");
        return;
    };
    let mut extra = Vec::new();
    let outcome = answer(o, method, &message["params"]);
    if method == "initialize" && outcome.is_ok() {
        extra.push(("Mcp-Session-Id", state.new_session()));
    }
    let reply = match outcome {
        Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
        Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
    };
    if method == "tools/call"
        && (o.http.misbehave == "huge-call-answer" || o.http.misbehave == "huge-structured-answer")
    {
        huge_answer(o, stream, &id);
        return;
    }
    if method == "tools/list" {
        match o.http.misbehave.as_str() {
            "status-500" => {
                respond(
                    stream,
                    "500 Internal Server Error",
                    &[("Content-Type", "text/plain".into())],
                    b"database unavailable",
                );
                return;
            }
            "echo-auth-500" => {
                // A careless error page that quotes the credential, late in a long body.
                let auth = request
                    .headers
                    .get("authorization")
                    .cloned()
                    .unwrap_or_default();
                let body = format!("{} got {auth}", "x".repeat(180));
                respond(
                    stream,
                    "500 Internal Server Error",
                    &[("Content-Type", "text/plain".into())],
                    body.as_bytes(),
                );
                return;
            }
            "wrong-content-type" => {
                respond(
                    stream,
                    "200 OK",
                    &[("Content-Type", "text/html".into())],
                    b"<html>login</html>",
                );
                return;
            }
            "oversized-body" => {
                let pad = "x".repeat(2 * 1024 * 1024);
                let body = format!(
                    "{{\"jsonrpc\":\"2.0\",\"id\":{id},\"result\":{{\"tools\":[],\"pad\":\"{pad}\"}}}}"
                );
                respond(stream, "200 OK", &json_headers(), body.as_bytes());
                return;
            }
            "expire-always" => {
                state.sessions.lock().unwrap().clear();
            }
            "expire-session" | "expire-session-ts"
                if message["params"]["cursor"].is_string()
                    && !EXPIRED.swap(true, Ordering::SeqCst) =>
            {
                // Forget every session once, in the middle of a listing.
                state.sessions.lock().unwrap().clear();
                if o.http.misbehave == "expire-session-ts" {
                    let body = error_body(
                        &Value::Null,
                        -32000,
                        "Bad Request: No valid session ID provided",
                    );
                    respond(stream, "400 Bad Request", &json_headers(), &body);
                } else {
                    let body = error_body(&id, -32001, "Session not found");
                    respond(stream, "404 Not Found", &json_headers(), &body);
                }
                return;
            }
            "slow-sse" => {
                start_stream(stream, &extra);
                for _ in 0..600 {
                    if !write_raw(stream, ": still working\n\n") {
                        return;
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                return;
            }
            "drop-mid-stream" => {
                start_stream(stream, &extra);
                let text = reply.to_string();
                write_raw(stream, &format!("data: {}", &text[..text.len() / 2]));
                // Closing now leaves the answer half-sent.
                return;
            }
            _ => {}
        }
    }
    if o.http.respond_sse {
        start_stream(stream, &extra);
        let note = json!({"jsonrpc": "2.0", "method": "notifications/message", "params": {"level": "info", "data": "working"}});
        let pretty = serde_json::to_string_pretty(&reply).unwrap();
        let data: String = pretty.lines().map(|l| format!("data: {l}\r\n")).collect();
        write_raw(
            stream,
            &format!(
                "\u{feff}: opening comment\r\nid: 0\r\ndata:\r\n\r\nevent: message\r\ndata: {note}\r\n\r\nid: 1\r\n{data}\r\n"
            ),
        );
    } else {
        let mut headers = json_headers();
        headers.extend(extra);
        respond(stream, "200 OK", &headers, reply.to_string().as_bytes());
    }
}

/// What a flood-get-stream server writes on the GET stream before it rests.
const FLOOD_BYTES: usize = 160 * 1024 * 1024;

/// The GET stream of flood-get-stream (legacy: after the endpoint event, answering
/// nothing): 4 KB notifications, FLOOD_BYTES in all, as fast as the client takes
/// them. Progress goes to the log each MiB, so a test sees the writes stall when the
/// client stops reading.
fn flood(state: &State, stream: &TcpStream) {
    let note = json!({"jsonrpc": "2.0", "method": "notifications/message",
        "params": {"level": "info", "data": "f".repeat(4000)}});
    let event = format!("data: {note}\n\n");
    let mut sent = 0;
    while sent < FLOOD_BYTES {
        if !write_raw(stream, &event) {
            return;
        }
        let before = sent / (1024 * 1024);
        sent += event.len();
        if sent / (1024 * 1024) != before {
            state.log(&format!("flood sent-mib={}", sent / (1024 * 1024)));
        }
    }
    state.log("flood done");
    // Held open, as a real GET stream is.
    std::thread::sleep(Duration::from_secs(600));
}

/// A tools/call answer of 40 MB (JSON, or one SSE event with --respond sse).
fn huge_answer(o: &Options, stream: &TcpStream, id: &Value) {
    let reply = if o.http.misbehave == "huge-structured-answer" {
        // About 40 MB of small values: what a decoded copy would multiply most.
        let rows: Vec<Value> = (0..1_600_000)
            .map(|i| json!({"n": i, "v": "abcdefgh"}))
            .collect();
        json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": "rows"}],
                "structuredContent": {"rows": rows}}})
    } else {
        let text = "h".repeat(40 * 1000 * 1000);
        json!({"jsonrpc": "2.0", "id": id,
            "result": {"content": [{"type": "text", "text": text}]}})
    };
    if o.http.respond_sse {
        start_stream(stream, &[]);
        write_raw(stream, &format!("data: {reply}\n\n"));
    } else {
        respond(
            stream,
            "200 OK",
            &json_headers(),
            reply.to_string().as_bytes(),
        );
    }
}

/// Set once a drop-get-stream server has closed its first GET stream.
static GET_DROPPED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// Set once an expire-session server has forgotten its sessions.
static EXPIRED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

fn handle_legacy(state: &State, stream: &TcpStream, request: &Request, message: &Value) {
    let path = request.path.split('?').next().unwrap_or("");
    match (request.method.as_str(), path) {
        ("GET", "/sse") => {
            let session = state.new_session();
            let (tx, rx): (Sender<String>, Receiver<String>) = channel();
            state.streams.lock().unwrap().insert(session.clone(), tx);
            start_stream(stream, &[]);
            // localhost and 127.0.0.1 are different origins.
            let endpoint = if state.o.http.misbehave == "endpoint-cross-origin" {
                format!(
                    "http://localhost:{}/message?sessionId={session}",
                    state.port
                )
            } else {
                format!("/message?sessionId={session}")
            };
            if !write_raw(stream, &format!("event: endpoint\ndata: {endpoint}\n\n")) {
                return;
            }
            if state.o.http.misbehave == "flood-get-stream" {
                flood(state, stream);
                return;
            }
            // Relay answers until the client goes away.
            loop {
                match rx.recv_timeout(Duration::from_secs(15)) {
                    Ok(text) => {
                        if !write_raw(stream, &format!("event: message\ndata: {text}\n\n")) {
                            break;
                        }
                    }
                    Err(std::sync::mpsc::RecvTimeoutError::Timeout) => {
                        if !write_raw(stream, ": keep-alive\n\n") {
                            break;
                        }
                    }
                    Err(_) => break,
                }
            }
            state.streams.lock().unwrap().remove(&session);
        }
        ("POST", "/message") => {
            let session = request
                .path
                .split_once("sessionId=")
                .map(|(_, s)| s.to_string())
                .unwrap_or_default();
            let sender = state.streams.lock().unwrap().get(&session).cloned();
            let Some(sender) = sender else {
                respond(stream, "404 Not Found", &[], b"unknown session");
                return;
            };
            respond(stream, "202 Accepted", &[], b"Accepted");
            let Some(id) = message.get("id").cloned() else {
                return;
            };
            let method = message["method"].as_str().unwrap_or("");
            let reply = match answer(&state.o, method, &message["params"]) {
                Ok(result) => json!({"jsonrpc": "2.0", "id": id, "result": result}),
                Err(error) => json!({"jsonrpc": "2.0", "id": id, "error": error}),
            };
            let _ = sender.send(reply.to_string());
        }
        (_, "/sse") => respond(
            stream,
            "405 Method Not Allowed",
            &[("Allow", "GET".into())],
            b"",
        ),
        _ => respond(stream, "404 Not Found", &[], b"not found"),
    }
}
