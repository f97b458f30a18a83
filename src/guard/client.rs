//! Which pinned client profile the guarded client is: read from its own handshake,
//! matched by deep equality of capabilities, and what to say when none matches.

use std::collections::BTreeSet;

use serde_json::{Value, json};

use crate::client::is_modern;
pub use crate::drift::MissingProfile;
use crate::json::Json;
use crate::lock::PinnedServer;

/// What a client says about itself when it connects.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientHello {
    pub capabilities: Value,
    /// The version it asks for (`initialize`'s `protocolVersion`, or the `_meta`
    /// version of `server/discover`).
    pub protocol_version: Option<String>,
    pub client_info: Value,
    /// Said in `server/discover` (the 2026-07-28 era) rather than `initialize`.
    pub modern: bool,
}

impl ClientHello {
    /// The hello in a client request, if the request is a handshake.
    pub fn from_request(method: &str, params: Option<&Json>) -> Option<ClientHello> {
        let params = params.map(Json::to_value).unwrap_or(Value::Null);
        let text = |v: &Value| v.as_str().map(str::to_string);
        match method {
            "initialize" => Some(ClientHello {
                capabilities: object_or_empty(&params["capabilities"]),
                protocol_version: text(&params["protocolVersion"]),
                client_info: params["clientInfo"].clone(),
                modern: false,
            }),
            "server/discover" => {
                let meta = &params["_meta"];
                Some(ClientHello {
                    capabilities: object_or_empty(
                        &meta["io.modelcontextprotocol/clientCapabilities"],
                    ),
                    protocol_version: text(&meta["io.modelcontextprotocol/protocolVersion"]),
                    client_info: meta["io.modelcontextprotocol/clientInfo"].clone(),
                    modern: true,
                })
            }
            _ => None,
        }
    }
}

/// A client that declares no capabilities at all declares `{}`.
fn object_or_empty(value: &Value) -> Value {
    match value {
        Value::Null => json!({}),
        v => v.clone(),
    }
}

/// The pinned profile whose recorded capabilities equal the client's (compared as
/// JSON values: key order does not matter). Of several, the one pinned with the
/// protocol version the client asks for, else the first by name.
pub fn matching_profile(pins: &PinnedServer, hello: &ClientHello) -> Option<String> {
    let equal: Vec<(&String, &crate::lock::LockedServer)> = pins
        .profiles
        .iter()
        .filter(|(_, p)| p.client_capabilities.to_value() == hello.capabilities)
        .collect();
    equal
        .iter()
        .find(|(_, p)| Some(&p.protocol_version) == hello.protocol_version.as_ref())
        .or(equal.first())
        .map(|(name, _)| (*name).clone())
}

/// Which era a protocol version belongs to, in words.
pub fn era(version: &str) -> &'static str {
    if is_modern(version) {
        "the 2026-07-28 era (server/discover)"
    } else {
        "the handshake era (initialize)"
    }
}

/// A line when the session speaks a protocol version (or era) no pinned profile
/// used: what the server lists may differ between versions.
pub fn unpinned_version(server: &str, pins: &PinnedServer, version: &str) -> Option<String> {
    let pinned: BTreeSet<&str> = pins
        .profiles
        .values()
        .map(|p| p.protocol_version.as_str())
        .collect();
    if pinned.contains(version) {
        return None;
    }
    let same_era = pinned.iter().any(|v| is_modern(v) == is_modern(version));
    let what = if same_era {
        format!("protocol version {version}")
    } else {
        format!("protocol version {version}, in {}", era(version))
    };
    Some(format!(
        "this session speaks {what}, which no client profile pinned for {server} used (pinned: {}); what the server lists may differ: run `mcp-lock verify {server}` with a profile that asks for it",
        pinned.into_iter().collect::<Vec<_>>().join(", ")
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn initialize_and_server_discover_say_the_same_things_in_different_places() {
        let init = Json::from_value(&json!({"protocolVersion": "2025-11-25",
            "capabilities": {"roots": {}}, "clientInfo": {"name": "x"}}));
        let hello = ClientHello::from_request("initialize", Some(&init)).unwrap();
        assert_eq!(hello.capabilities, json!({"roots": {}}));
        assert_eq!(hello.protocol_version.as_deref(), Some("2025-11-25"));
        assert!(!hello.modern);
        let discover = Json::from_value(&json!({"_meta": {
            "io.modelcontextprotocol/protocolVersion": "2026-07-28",
            "io.modelcontextprotocol/clientCapabilities": {"sampling": {}}}}));
        let hello = ClientHello::from_request("server/discover", Some(&discover)).unwrap();
        assert_eq!(hello.capabilities, json!({"sampling": {}}));
        assert!(hello.modern);
        assert!(ClientHello::from_request("tools/list", None).is_none());
        let bare = ClientHello::from_request("initialize", None).unwrap();
        assert_eq!(bare.capabilities, json!({}));
    }
}
