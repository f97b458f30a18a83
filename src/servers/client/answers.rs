//! What the client answers when a server asks something of it mid-listing: `ping`,
//! `roots/list` from the profile, and a refusal for sampling and elicitation.

use super::*;

/// How the client answers what a server asks of it while it is listed.
#[derive(Debug, Clone, Default)]
pub(crate) struct Answers {
    /// The `roots` of `roots/list`, when the profile declares roots.
    pub roots: Option<Arc<Value>>,
}

impl Answers {
    pub(crate) fn of(options: &ClientOptions) -> Self {
        Answers {
            roots: options.roots.clone().map(Arc::new),
        }
    }
}

/// The answer to one request a server sent. Sampling and elicitation are refused at
/// once: nobody is there to answer them, and a listing must not wait on a person.
pub(super) fn answer_server_request(method: &str, id: Value, answers: &Answers) -> Value {
    let refuse = |code: i64, message: String| json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}});
    match method {
        "ping" => json!({"jsonrpc": "2.0", "id": id, "result": {}}),
        "roots/list" => match &answers.roots {
            Some(roots) => json!({"jsonrpc": "2.0", "id": id, "result": {"roots": **roots}}),
            None => refuse(
                -32601,
                "mcp-lock does not handle roots/list: this client profile declares no roots".into(),
            ),
        },
        "sampling/createMessage" | "elicitation/create" => refuse(
            -1,
            format!(
                "mcp-lock refused {method}: it is only listing the server's definitions for a lock, and no person or model is there to answer"
            ),
        ),
        _ => refuse(-32601, format!("mcp-lock does not handle {method}")),
    }
}
