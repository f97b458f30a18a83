//! A small MCP client of our own: connect, hand-shake, list every tool.
//!
//! It works over `serde_json::Value` for protocol fields and keeps tool definitions as
//! raw [`Json`] so that they hash exactly as sent (see `NOTES-CRATES.md` on SDKs).
//! The client knows nothing of the lock: it reports what the server said.

pub mod stdio;

use std::collections::HashSet;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::time::Instant;

use crate::config::ResolvedStdio;
use crate::hash::{HashedTool, instructions_hash};
use crate::json::Json;
use crate::secrets::Secrets;
use stdio::StdioConnection;

/// The protocol version mcp-lock asks for.
pub const PROTOCOL_VERSION: &str = "2025-11-25";

/// The client capabilities mcp-lock declares unless a lock recorded others. Fixed, because
/// declared capabilities change which tools some servers list.
pub fn default_capabilities() -> Value {
    json!({})
}

/// The clientInfo mcp-lock sends.
pub fn default_client_info() -> Value {
    json!({"name": "mcp-lock", "version": env!("CARGO_PKG_VERSION")})
}

/// Limits and identity for one connection.
#[derive(Debug, Clone)]
pub struct ClientOptions {
    /// Longest wait for any one answer.
    pub request_timeout: Duration,
    /// Longest time for a whole server, from spawn to the last page.
    pub server_timeout: Duration,
    /// A listing with more pages than this is a runaway and stops as incomplete.
    pub max_pages: usize,
    /// A listing with more tools than this is a runaway and stops as incomplete.
    pub max_tools: usize,
    /// Largest single message accepted from a server, in bytes.
    pub max_message_bytes: usize,
    pub capabilities: Value,
    pub client_info: Value,
    pub protocol_version: String,
}

impl Default for ClientOptions {
    fn default() -> Self {
        ClientOptions {
            request_timeout: Duration::from_secs(30),
            server_timeout: Duration::from_secs(120),
            max_pages: 500,
            max_tools: 10_000,
            max_message_bytes: 16 * 1024 * 1024,
            capabilities: default_capabilities(),
            client_info: default_client_info(),
            protocol_version: PROTOCOL_VERSION.into(),
        }
    }
}

/// Why one exchange with a server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    #[error("timed out")]
    Timeout,
    #[error("{0}")]
    Closed(String),
    #[error("read error: {0}")]
    Io(String),
    #[error("message larger than {0} bytes")]
    TooLarge(usize),
    #[error("error {code}: {message}")]
    Remote { code: i64, message: String },
    #[error("{0}")]
    Protocol(String),
}

impl RpcError {
    fn from_error_object(error: &Value) -> Self {
        RpcError::Remote {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string(),
        }
    }
}

/// What the server said about itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ServerSession {
    /// The protocol version the server answered with.
    pub protocol_version: String,
    /// `serverInfo` as sent.
    pub server_info: Json,
    /// Whether it announced `tools.listChanged`.
    pub list_changed: bool,
    /// The hash of `instructions`, if it sent any.
    pub instructions_hash: Option<String>,
    /// The client capabilities and clientInfo this session declared.
    pub client_capabilities: Value,
    pub client_info: Value,
}

/// Every tool a listing returned, in order, over however many pages.
#[derive(Debug, Clone, Default)]
pub struct Listing {
    pub tools: Vec<HashedTool>,
    pub pages: usize,
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
    /// The server's last stderr lines, secrets redacted.
    pub stderr_tail: Vec<String>,
    /// Lines on stdout that were not JSON-RPC messages.
    pub ignored_lines: usize,
    /// Notifications received while listing.
    pub notifications: usize,
    /// From spawn to the last page (or the failure).
    pub elapsed: Duration,
}

/// Starts a stdio server, lists all its tools and shuts it down.
pub async fn fetch_stdio(resolved: &ResolvedStdio, options: &ClientOptions) -> Fetched {
    let started = Instant::now();
    let deadline = started + options.server_timeout;
    let secrets = &resolved.secrets;
    let mut conn = match StdioConnection::spawn(resolved, options.max_message_bytes) {
        Ok(conn) => conn,
        Err(e) => {
            return Fetched {
                outcome: Outcome::Unverifiable {
                    error: secrets.redact(&format!("could not start {:?}: {e}", resolved.command)),
                },
                stderr_tail: Vec::new(),
                ignored_lines: 0,
                notifications: 0,
                elapsed: started.elapsed(),
            };
        }
    };
    let outcome = converse(&mut conn, options, deadline).await;
    let elapsed = started.elapsed();
    let ignored_lines = conn.ignored_lines;
    let notifications = conn.notifications;
    let stderr_holder = conn.stderr_tail_handle();
    conn.shutdown().await;
    let stderr_tail = stderr_holder
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .iter()
        .cloned()
        .collect();
    Fetched {
        outcome: redact_outcome(outcome, secrets),
        stderr_tail,
        ignored_lines,
        notifications,
        elapsed,
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

async fn converse(
    conn: &mut StdioConnection,
    options: &ClientOptions,
    deadline: Instant,
) -> Outcome {
    let request_deadline = || deadline.min(Instant::now() + options.request_timeout);
    let describe = |what: &str, e: RpcError| match e {
        RpcError::Timeout => format!(
            "{what}: no answer within {}",
            timeout_text(options, deadline)
        ),
        e => format!("{what}: {e}"),
    };
    let params = json!({
        "protocolVersion": options.protocol_version,
        "capabilities": options.capabilities,
        "clientInfo": options.client_info,
    });
    let init = match conn.request("initialize", params, request_deadline()).await {
        Ok(result) => result,
        Err(e) => {
            return Outcome::Unverifiable {
                error: describe("initialize", e),
            };
        }
    };
    let session = match read_session(&init, options) {
        Ok(session) => session,
        Err(error) => return Outcome::Unverifiable { error },
    };
    if let Err(e) = conn
        .notify("notifications/initialized", None, request_deadline())
        .await
    {
        return Outcome::Unverifiable {
            error: describe("notifications/initialized", e),
        };
    }
    let declares_tools = init.to_value()["capabilities"].get("tools").is_some();
    let mut restarts = 0;
    loop {
        let pass = list_once(conn, options, deadline, declares_tools).await;
        let (listing, error) = match pass {
            Pass::Done(listing) => return Outcome::Complete { session, listing },
            Pass::Failed { listing, error } if listing.pages == 0 && restarts == 0 => {
                return Outcome::Unverifiable {
                    error: describe_pass(error, options, deadline),
                };
            }
            Pass::Failed { listing, error } => (listing, describe_pass(error, options, deadline)),
            Pass::ChangedMidway(_) if restarts < MAX_RESTARTS => {
                restarts += 1;
                continue;
            }
            Pass::ChangedMidway(listing) => (
                listing,
                format!(
                    "the tool list changed while it was being read, {} times in a row",
                    restarts + 1
                ),
            ),
        };
        return Outcome::Incomplete {
            session,
            listing,
            error,
        };
    }
}

/// How many times a listing is read again after the server announced a change in
/// the middle of it.
const MAX_RESTARTS: usize = 3;

/// One pass over every page.
enum Pass {
    Done(Listing),
    /// `notifications/tools/list_changed` arrived between pages: they may mix two
    /// versions of the list.
    ChangedMidway(Listing),
    Failed {
        listing: Listing,
        error: PassError,
    },
}

enum PassError {
    Rpc(String, RpcError),
    Other(String),
}

fn describe_pass(error: PassError, options: &ClientOptions, deadline: Instant) -> String {
    match error {
        PassError::Rpc(what, RpcError::Timeout) => {
            format!(
                "{what}: no answer within {}",
                timeout_text(options, deadline)
            )
        }
        PassError::Rpc(what, e) => format!("{what}: {e}"),
        PassError::Other(message) => message,
    }
}

async fn list_once(
    conn: &mut StdioConnection,
    options: &ClientOptions,
    deadline: Instant,
    declares_tools: bool,
) -> Pass {
    let mut listing = Listing::default();
    let mut seen_cursors = HashSet::new();
    let mut cursor: Option<String> = None;
    let mut changes_at_first_page = 0;
    loop {
        let params = match &cursor {
            Some(c) => json!({"cursor": c}),
            None => json!({}),
        };
        let request_deadline = deadline.min(Instant::now() + options.request_timeout);
        let page = match conn.request("tools/list", params, request_deadline).await {
            Ok(page) => page,
            Err(RpcError::Remote { code: -32601, .. }) if !declares_tools && listing.pages == 0 => {
                // No tools capability and no tools/list: a server with no tools.
                return Pass::Done(listing);
            }
            Err(e) => {
                let what = format!("tools/list page {}", listing.pages + 1);
                return Pass::Failed {
                    listing,
                    error: PassError::Rpc(what, e),
                };
            }
        };
        listing.pages += 1;
        if listing.pages == 1 {
            changes_at_first_page = conn.list_changed_count;
        }
        let failed = |listing, message: String| Pass::Failed {
            listing,
            error: PassError::Other(message),
        };
        let Some(tools) = page.get("tools").and_then(Json::as_array) else {
            let message = format!(
                "tools/list page {}: the result has no \"tools\" array",
                listing.pages
            );
            return failed(listing, message);
        };
        listing
            .tools
            .extend(tools.iter().cloned().map(HashedTool::new));
        if listing.tools.len() > options.max_tools {
            let message = format!(
                "runaway listing: more than {} tools (raise --max-tools if this is real)",
                options.max_tools
            );
            return failed(listing, message);
        }
        let changed_midway = conn.list_changed_count > changes_at_first_page;
        match page.get("nextCursor") {
            None | Some(Json::Null) if changed_midway && listing.pages > 1 => {
                return Pass::ChangedMidway(listing);
            }
            None | Some(Json::Null) => return Pass::Done(listing),
            Some(_) if changed_midway => return Pass::ChangedMidway(listing),
            Some(Json::String(next)) => {
                let Some(next) = next.to_str() else {
                    let message = format!(
                        "tools/list page {}: \"nextCursor\" is not valid Unicode (a lone surrogate); it cannot be sent back as received",
                        listing.pages
                    );
                    return failed(listing, message);
                };
                if !seen_cursors.insert(next.clone()) {
                    let message = format!("cursor loop: the server returned cursor {next:?} twice");
                    return failed(listing, message);
                }
                if listing.pages >= options.max_pages {
                    let message = format!(
                        "runaway listing: more than {} pages (raise --max-pages if this is real)",
                        options.max_pages
                    );
                    return failed(listing, message);
                }
                cursor = Some(next);
            }
            Some(_) => {
                let message = format!(
                    "tools/list page {}: \"nextCursor\" is not a string",
                    listing.pages
                );
                return failed(listing, message);
            }
        }
    }
}

fn timeout_text(options: &ClientOptions, deadline: Instant) -> String {
    if Instant::now() + Duration::from_millis(5) >= deadline {
        format!("the server timeout of {}", seconds(options.server_timeout))
    } else {
        format!(
            "the request timeout of {}",
            seconds(options.request_timeout)
        )
    }
}

fn seconds(d: Duration) -> String {
    format!("{}s", d.as_secs_f64())
}

fn read_session(init: &Json, options: &ClientOptions) -> Result<ServerSession, String> {
    if !init.is_object() {
        return Err("initialize: the result is not an object".into());
    }
    let value = init.to_value();
    let protocol_version = value["protocolVersion"]
        .as_str()
        .ok_or("initialize: the result has no protocolVersion")?
        .to_string();
    let instructions = match init.get("instructions") {
        None | Some(Json::Null) => None,
        Some(Json::String(s)) => Some(instructions_hash(&s.to_string_lossy())),
        Some(_) => return Err("initialize: \"instructions\" is not a string".into()),
    };
    let server_info = init.get("serverInfo").cloned().unwrap_or(Json::Null);
    if let Err(e) = server_info.canonical() {
        return Err(format!("initialize: serverInfo has {e}"));
    }
    Ok(ServerSession {
        protocol_version,
        server_info,
        list_changed: value["capabilities"]["tools"]["listChanged"]
            .as_bool()
            .unwrap_or(false),
        instructions_hash: instructions,
        client_capabilities: options.capabilities.clone(),
        client_info: options.client_info.clone(),
    })
}
