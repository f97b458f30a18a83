//! Which pinned client profile the guarded client is: read from its own handshake,
//! matched by deep equality of capabilities, and what to say when none matches.

use std::collections::BTreeSet;

use serde::Serialize;
use serde_json::{Value, json};

use crate::base::json::Json;
use crate::records::lock::PinnedServer;
use crate::records::profile::capability_difference;
use crate::servers::client::is_modern;
pub use crate::verdict::drift::MissingProfile;

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

    /// `server/discover` or `initialize`.
    pub fn path(&self) -> &'static str {
        if self.modern {
            "server/discover"
        } else {
            "initialize"
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

/// The pinned profile the client is: its capabilities equal the recorded ones
/// (compared as JSON values: key order does not matter) and it speaks the same era,
/// the version agreed on being the pinned one (2026-07-28 only ever via
/// `server/discover`; within `initialize`, the version the session agreed on). The
/// clientInfo, a host's own version, does not count. Of several, the first by name.
/// `agreed` is the version the session agreed on (the client's own when unknown).
pub fn matching_profile(
    pins: &PinnedServer,
    hello: &ClientHello,
    agreed: Option<&str>,
) -> Option<String> {
    let agreed = agreed.or(hello.protocol_version.as_deref());
    pins.profiles
        .iter()
        .find(|(_, p)| {
            p.client_capabilities.to_value() == hello.capabilities
                && agreed == Some(p.protocol_version.as_str())
                && hello.modern == is_modern(&p.protocol_version)
        })
        .map(|(name, _)| name.clone())
}

/// A pinned profile with the client's capabilities but another era: the client is
/// judged against its pins (as before the era counted), and the drift is reported.
/// Of several, the one pinned in the client's own era kind, else the first by name.
pub fn same_capabilities(pins: &PinnedServer, hello: &ClientHello) -> Option<String> {
    let equal: Vec<(&String, &crate::records::lock::LockedServer)> = pins
        .profiles
        .iter()
        .filter(|(_, p)| p.client_capabilities.to_value() == hello.capabilities)
        .collect();
    equal
        .iter()
        .find(|(_, p)| is_modern(&p.protocol_version) == hello.modern)
        .or(equal.first())
        .map(|(name, _)| (*name).clone())
}

/// The client's handshake differs from every one the lock pinned: profile drift.
/// `nearest` is the pinned profile it is judged under (the one with its
/// capabilities, in another era; else the one with the fewest differences).
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ProfileDrift {
    pub nearest: String,
    /// JSON pointers from the nearest profile's capabilities to the client's.
    pub difference: Vec<String>,
    /// The era differs: `server/discover` against `initialize`, or another
    /// `initialize` version.
    pub era_changed: bool,
    pub pinned_protocol_version: String,
    /// The version the session agreed on.
    pub protocol_version: Option<String>,
    /// `server/discover` or `initialize`.
    pub path: &'static str,
}

impl ProfileDrift {
    pub fn new(
        pins: &PinnedServer,
        hello: &ClientHello,
        agreed: Option<&str>,
        nearest: &str,
    ) -> Self {
        let pin = &pins.profiles[nearest];
        let agreed = agreed.or(hello.protocol_version.as_deref());
        ProfileDrift {
            nearest: nearest.to_string(),
            difference: capability_difference(
                &pin.client_capabilities.to_value(),
                &hello.capabilities,
            ),
            era_changed: agreed != Some(pin.protocol_version.as_str())
                || hello.modern != is_modern(&pin.protocol_version),
            pinned_protocol_version: pin.protocol_version.clone(),
            protocol_version: agreed.map(str::to_string),
            path: hello.path(),
        }
    }

    /// The one line said on stderr and in the audit log, once a session.
    pub fn message(&self, server: &str, hello: &ClientHello, judged: &str) -> String {
        let host = host_shown(&hello.client_info);
        let mut what = Vec::new();
        if !self.difference.is_empty() {
            what.push(format!(
                "capabilities differing at {}",
                self.difference.join(", ")
            ));
        }
        if self.era_changed {
            what.push(format!(
                "{} {} where the lock pinned {} {}",
                self.path,
                self.protocol_version.as_deref().unwrap_or("(no version)"),
                if is_modern(&self.pinned_protocol_version) {
                    "server/discover"
                } else {
                    "initialize"
                },
                self.pinned_protocol_version
            ));
        }
        format!(
            "profile drift: {host} sent another handshake than the lock pinned for {server} under {} ({}); {judged}; run `mcp-lock update {server}` to pin the handshake it sends",
            self.nearest,
            what.join("; ")
        )
    }
}

/// "Claude Code 2.1.340": a host as its clientInfo names it.
pub fn host_shown(client_info: &Value) -> String {
    let name = client_info["title"]
        .as_str()
        .or(client_info["name"].as_str())
        .unwrap_or("the client");
    let name = crate::base::text::escape_for_terminal(name);
    match client_info["version"].as_str() {
        Some(v) => format!("{name} {}", crate::base::text::escape_for_terminal(v)),
        None => name,
    }
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
