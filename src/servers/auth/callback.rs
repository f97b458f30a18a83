//! Where the authorization server sends the browser back: a one-shot listener on
//! 127.0.0.1, or (with `--no-browser`) the address the user pastes back.

use reqwest::Url;
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpListener;

/// The path the redirect URI ends in.
pub const CALLBACK_PATH: &str = "/callback";

/// A bound callback listener.
pub struct Callback {
    listener: TcpListener,
    pub redirect_uri: String,
}

impl Callback {
    /// Listens on 127.0.0.1 at `port` (0: any free port).
    pub async fn bind(port: u16) -> Result<Self, String> {
        let listener = TcpListener::bind(("127.0.0.1", port)).await.map_err(|e| {
            format!("cannot listen for the login callback on 127.0.0.1:{port}: {e}")
        })?;
        let port = listener
            .local_addr()
            .map_err(|e| format!("cannot read the callback listener's port: {e}"))?
            .port();
        Ok(Callback {
            listener,
            redirect_uri: format!("http://127.0.0.1:{port}{CALLBACK_PATH}"),
        })
    }

    /// Waits for the browser's request to the callback path carrying this login's
    /// `state`; returns its query. Connections are served side by side, each given
    /// [`REQUEST_TIMEOUT`] to send its request line, and a request with another state
    /// (any local process can reach the port) is answered and ignored: neither an
    /// idle connection nor a forged callback can block or end the login.
    pub async fn wait(&self, state: &str) -> Result<String, String> {
        let (found, mut answers) = tokio::sync::mpsc::channel(1);
        loop {
            tokio::select! {
                accepted = self.listener.accept() => {
                    let (stream, _) = accepted
                        .map_err(|e| format!("the login callback listener failed: {e}"))?;
                    let found = found.clone();
                    let state = state.to_string();
                    tokio::spawn(async move {
                        if let Some(query) = serve(stream, &state).await {
                            let _ = found.send(query).await;
                        }
                    });
                }
                Some(query) = answers.recv() => return Ok(query),
            }
        }
    }
}

/// How long one connection to the callback port may take to send its request line.
pub const REQUEST_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

/// Answers one connection; the query when it is this login's callback.
async fn serve(stream: tokio::net::TcpStream, state: &str) -> Option<String> {
    let (read, mut write) = stream.into_split();
    let mut reader = BufReader::new(read.take(16 * 1024));
    let mut line = String::new();
    match tokio::time::timeout(REQUEST_TIMEOUT, reader.read_line(&mut line)).await {
        Ok(Ok(_)) => {}
        _ => return None,
    }
    let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
    let query = target
        .strip_prefix(CALLBACK_PATH)
        .and_then(|rest| rest.strip_prefix('?'));
    let ours = query.is_some_and(|q| {
        url::form_urlencoded::parse(q.as_bytes()).any(|(k, v)| k == "state" && v == state)
    });
    let (status, page) = match query {
        None => ("404 Not Found", ""),
        Some(_) if !ours => (
            "400 Bad Request",
            "<!doctype html><title>mcp-lock</title><p>This is not the login mcp-lock is waiting for.</p>",
        ),
        Some(_) => (
            "200 OK",
            "<!doctype html><title>mcp-lock</title><p>mcp-lock received the login. You can close this window.</p>",
        ),
    };
    let _ = write
        .write_all(
            format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                page.len()
            )
            .as_bytes(),
        )
        .await;
    ours.then(|| query.unwrap_or_default().to_string())
}

/// The query of what the user pasted: the whole callback URL, or its query alone.
pub fn pasted_query(text: &str) -> Result<String, String> {
    let text = text.trim();
    if let Ok(url) = Url::parse(text) {
        return url
            .query()
            .map(str::to_string)
            .ok_or_else(|| "the pasted address has no query (code=...&state=...)".to_string());
    }
    let query = text.trim_start_matches('?');
    if query.contains("code=") || query.contains("error=") {
        Ok(query.to_string())
    } else {
        Err("paste the whole address the browser ended on (it holds code=... and state=...)".into())
    }
}
