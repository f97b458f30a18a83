//! Why one exchange with a server failed, worded for the one-line messages users see.

use serde_json::Value;

/// Why one exchange with a server failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum RpcError {
    #[error("timed out")]
    Timeout,
    #[error("{0}")]
    Closed(String),
    #[error("{0}")]
    Io(String),
    #[error("message larger than {0} bytes")]
    TooLarge(usize),
    #[error("error {code}: {message}")]
    Remote {
        code: i64,
        message: String,
        data: Option<Value>,
    },
    #[error("{0}")]
    Protocol(String),
    /// An HTTP status that is not an answer; `rpc` is a JSON-RPC error in its body
    /// (code, message, data).
    #[error("HTTP {status}{}", rpc_suffix(.rpc, .body))]
    Http {
        status: u16,
        rpc: Option<(i64, String, Option<Value>)>,
        body: String,
    },
    /// 401 or 403.
    #[error("authentication failed (HTTP {status}){}", challenge_suffix(.challenge))]
    Auth {
        status: u16,
        challenge: Option<String>,
    },
    /// A redirect mcp-lock would not follow.
    #[error("HTTP {status} redirect to {location}{}", redirect_suffix(*.kind))]
    Redirect {
        status: u16,
        location: String,
        kind: RedirectKind,
    },
}

/// Why a redirect was not followed.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RedirectKind {
    /// A 307/308 to another origin, without --allow-redirects.
    CrossOrigin,
    /// A 301/302/303, which would turn a POST into a GET.
    ChangesMethod,
    /// A Location that is not a URL.
    Unreadable,
}

fn redirect_suffix(kind: RedirectKind) -> &'static str {
    match kind {
        RedirectKind::CrossOrigin => {
            ", another origin; not followed (pass --allow-redirects to follow it)"
        }
        RedirectKind::ChangesMethod => {
            ", which turns a POST into a GET; not followed (point the config's url at the new address)"
        }
        RedirectKind::Unreadable => ", which is not a URL; not followed",
    }
}

fn rpc_suffix(rpc: &Option<(i64, String, Option<Value>)>, body: &str) -> String {
    match rpc {
        Some((code, message, _)) => format!(": error {code}: {message}"),
        None if body.is_empty() => String::new(),
        None => format!(": {body}"),
    }
}

fn challenge_suffix(challenge: &Option<String>) -> String {
    match challenge {
        Some(c) => format!("; WWW-Authenticate: {c}"),
        None => String::new(),
    }
}

impl RpcError {
    pub(super) fn from_error_object(error: &Value) -> Self {
        RpcError::Remote {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0),
            message: error
                .get("message")
                .and_then(Value::as_str)
                .unwrap_or("(no message)")
                .to_string(),
            data: error.get("data").cloned(),
        }
    }
}
