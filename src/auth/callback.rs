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

    /// Waits for the browser's request to the callback path; returns its query.
    pub async fn wait(&self) -> Result<String, String> {
        loop {
            let (stream, _) = self
                .listener
                .accept()
                .await
                .map_err(|e| format!("the login callback listener failed: {e}"))?;
            let (read, mut write) = stream.into_split();
            let mut reader = BufReader::new(read.take(16 * 1024));
            let mut line = String::new();
            if reader.read_line(&mut line).await.is_err() {
                continue;
            }
            let target = line.split_whitespace().nth(1).unwrap_or("").to_string();
            let Some(query) = target
                .strip_prefix(CALLBACK_PATH)
                .and_then(|rest| rest.strip_prefix('?'))
            else {
                let _ = write
                    .write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    )
                    .await;
                continue;
            };
            let page = "<!doctype html><title>mcp-lock</title><p>mcp-lock received the login. You can close this window.</p>";
            let _ = write
                .write_all(
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html; charset=utf-8\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    )
                    .as_bytes(),
                )
                .await;
            return Ok(query.to_string());
        }
    }
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
