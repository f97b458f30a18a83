//! The Streamable HTTP transport's side of the bridge: the session, its requests, and
//! the GET stream.

use super::*;

pub(super) async fn streamable(
    remote: ResolvedRemote,
    options: ClientOptions,
    out: Out,
    pinned_versions: Vec<String>,
) -> Result<(), String> {
    let url = parse_url(&remote.url)?;
    let mut headers = header_map(&remote)?;
    let store = TokenStore::from_env(&|v| std::env::var(v).ok()).ok();
    let deadline = tokio::time::Instant::now() + options.request_timeout;
    let mut secrets = remote.secrets.clone();
    let bearer = add_login(
        &remote,
        &mut headers,
        &mut secrets,
        store.as_ref(),
        deadline,
    )
    .await?;
    let conn = Arc::new(Conn {
        client: build_client(&url, &options)?,
        url,
        headers: std::sync::Mutex::new(headers),
        secrets,
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
        remote: remote.clone(),
        mirrored: Default::default(),
        pending_lists: Default::default(),
        get_task: Default::default(),
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
    // The client is gone: no more notifications to relay; end the session, briefly.
    if let Some(task) = conn.get_task.lock().unwrap().take() {
        task.abort();
    }
    if conn.session.lock().unwrap().is_some() {
        let delete = conn.request(reqwest::Method::DELETE, None).send();
        let _ = tokio::time::timeout(Duration::from_secs(2), delete).await;
    }
    Ok(())
}

/// Adds the token of `mcp-lock login` as the Authorization header where the config
/// sets none of its own, as verify sends it. True when one was added.
pub(super) async fn add_login(
    remote: &ResolvedRemote,
    headers: &mut HeaderMap,
    secrets: &mut Secrets,
    store: Option<&TokenStore>,
    deadline: tokio::time::Instant,
) -> Result<bool, String> {
    let Some(store) = store.filter(|_| !headers.contains_key(AUTHORIZATION) && !remote.oauth_off)
    else {
        return Ok(false);
    };
    match bearer_for(
        store,
        &remote.url,
        remote.machine.as_deref(),
        false,
        deadline,
    )
    .await
    {
        Ok(Some(b)) => {
            let mut value = HeaderValue::from_str(&format!("Bearer {}", b.access_token))
                .map_err(|_| "the cached login token is not a valid header value".to_string())?;
            value.set_sensitive(true);
            headers.insert(AUTHORIZATION, value);
            // A server echoing the header in an error page never shows it to the agent.
            secrets.add_header("Authorization", &format!("Bearer {}", b.access_token));
            Ok(true)
        }
        Ok(None) => Ok(false),
        Err(e) => Err(format!("{e}; run `mcp-lock login {}` again", remote.name)),
    }
}

/// POSTs one message from the client; its answer is relayed on a task of its own.
pub(super) async fn send_one(conn: &Arc<Conn>, message: Value) {
    let method = message["method"].as_str().unwrap_or("").to_string();
    let is_initialize = method == "initialize";
    if is_initialize {
        *conn.initialize.lock().unwrap() = Some(message.clone());
        *conn.session.lock().unwrap() = None;
        *conn.version.lock().unwrap() = None;
    }
    // Wait for a session being opened again.
    drop(conn.reopening.lock().await);
    if method == "tools/list"
        && message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].is_string()
        && let Some(id) = message.get("id")
    {
        conn.pending_lists.lock().unwrap().insert(id.to_string());
    }
    let mut response = match conn.post(&message).await {
        Ok(r) => r,
        Err(e) => return conn.fail(&message, &e).await,
    };
    if !is_initialize && !response.status().is_success() && conn.session.lock().unwrap().is_some() {
        let status = response.status();
        if let Some(why) = conn.step_up(&response).await {
            return conn.fail(&message, &why).await;
        }
        let body = error_text(response).await;
        if !expired(status, &body) {
            return conn.fail(&message, &http_failure(status, &body)).await;
        }
        if let Err(e) = reopen(conn).await {
            let why = format!("the session expired and could not be opened again: {e}");
            return conn.fail(&message, &why).await;
        }
        response = match conn.post(&message).await {
            Ok(r) => r,
            Err(e) => return conn.fail(&message, &e).await,
        };
    }
    let status = response.status();
    if !status.is_success() {
        if let Some(why) = conn.step_up(&response).await {
            return conn.fail(&message, &why).await;
        }
        let body = error_text(response).await;
        return conn.fail(&message, &http_failure(status, &body)).await;
    }
    if is_initialize {
        *conn.session.lock().unwrap() = response.headers().get("mcp-session-id").cloned();
        // Later messages carry the version the answer agrees on: wait for it.
        conn.relay(response, &message).await;
        return;
    }
    let modern = message["params"]["_meta"]["io.modelcontextprotocol/protocolVersion"].as_str();
    if let Some(version) = modern
        && conn.session.lock().unwrap().is_none()
    {
        // The 2026-07-28 era has no session; a later GET or DELETE names the version.
        *conn.version.lock().unwrap() = Some(version.to_string());
    }
    // The standing GET stream is the handshake era's; 2026-07-28 removed it
    // (notifications come through subscriptions/listen).
    if method == "notifications/initialized" {
        start_get_stream(conn);
    }
    let conn = conn.clone();
    tokio::spawn(async move { conn.relay(response, &message).await });
}

/// Opens an expired session again with the client's own `initialize`, whose answer
/// the client already has.
pub(super) async fn reopen(conn: &Arc<Conn>) -> Result<(), String> {
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
        let body = error_text(response).await;
        return Err(http_failure(status, &body));
    }
    *conn.session.lock().unwrap() = response.headers().get("mcp-session-id").cloned();
    // Read the answer for its version; it is not the client's to see.
    let body = read_body(response, conn.max, no_deadline())
        .await
        .map_err(|e| format!("the answer to initialize: {e}"))?;
    let body = String::from_utf8_lossy(&body);
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

pub(super) fn http_failure(status: StatusCode, body: &str) -> String {
    let body = crate::base::text::cut(body.trim(), 200);
    if body.is_empty() {
        format!("the server answered HTTP {}", status.as_u16())
    } else {
        format!("the server answered HTTP {}: {body}", status.as_u16())
    }
}

/// Opens the GET stream for the server's own messages, once per session.
pub(super) fn start_get_stream(conn: &Arc<Conn>) {
    if conn
        .get_started
        .swap(true, std::sync::atomic::Ordering::SeqCst)
    {
        return;
    }
    let task = conn.clone();
    let handle = tokio::spawn(async move { get_stream(&task).await });
    if let Some(old) = conn.get_task.lock().unwrap().replace(handle.abort_handle()) {
        old.abort();
    }
}

pub(super) async fn get_stream(conn: &Conn) {
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
        let mut answered = false;
        match conn
            .relay_stream(response, &mut parser, None, false, false, &mut answered)
            .await
        {
            Ok(()) | Err(Broke::Io(_)) => {}
            Err(Broke::TooLarge) => conn.say(&format!(
                "the server's GET stream sent a message larger than {} bytes (--max-message-bytes); reopening it",
                conn.max
            )),
        }
    }
    conn.say("the server's GET stream kept dropping; its notifications may be missed");
}
