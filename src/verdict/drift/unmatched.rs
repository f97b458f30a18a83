//! A client whose declared capabilities match no profile the lock pins a server
//! under: the closest pinned profile, how it differs, and what would pin the client.
//! Said by the guard and by `check-listing --handshake`.

use serde::Serialize;
use serde_json::Value;

use crate::records::lock::PinnedServer;
use crate::records::profile::{ProfileSettings, capability_difference};

/// The client matches no pinned profile: how far it is from the closest one, and what
/// would pin what it is shown.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct MissingProfile {
    /// The pinned profile with the fewest differences.
    pub closest: String,
    /// JSON pointers from the closest profile's capabilities to the client's:
    /// `+/sampling` the client declares and the profile does not, `-/roots` the reverse,
    /// `~/roots/listChanged` a different value.
    pub difference: Vec<String>,
    /// A known profile (built in, or defined in mcp-lock.toml) whose capabilities equal
    /// the client's.
    pub profile: Option<String>,
    /// What pins it.
    pub pin_with: String,
}

impl MissingProfile {
    /// `capabilities` are what the client declared.
    pub fn new(
        server: &str,
        pins: &PinnedServer,
        capabilities: &Value,
        settings: &ProfileSettings,
    ) -> Self {
        let (closest, difference) = pins
            .profiles
            .iter()
            .map(|(name, p)| {
                let d = capability_difference(&p.client_capabilities.to_value(), capabilities);
                (name.clone(), d)
            })
            .min_by_key(|(_, d)| d.len())
            .expect("a pinned server has a profile");
        let profile = settings.known().into_iter().find(|name| {
            settings
                .get(name)
                .is_ok_and(|p| &p.capabilities == capabilities)
        });
        let pin_with = match &profile {
            Some(name) => format!("mcp-lock update {server} --client {name}"),
            None => format!(
                "define a profile with these capabilities in mcp-lock.toml, then run `mcp-lock update {server} --client NAME`"
            ),
        };
        MissingProfile {
            closest,
            difference,
            profile,
            pin_with,
        }
    }

    /// How to pin this client, as a sentence's end.
    pub fn advice(&self) -> String {
        match &self.profile {
            Some(name) => format!(
                "its capabilities are those of client profile {name:?}: pin it with `{}`",
                self.pin_with
            ),
            None => format!("no known profile has its capabilities: {}", self.pin_with),
        }
    }

    /// What a client with profile drift is judged against, and the known profile
    /// that would pin it when there is one (the drift line itself says that
    /// `mcp-lock update` pins the handshake it sends).
    pub fn judged(&self, server: &str, pins: &PinnedServer) -> String {
        let names: Vec<&str> = pins.profiles.keys().map(String::as_str).collect();
        let mut line = format!(
            "the client's capabilities match no client profile pinned for {server} (pinned: {}); its tools are judged against every definition approved for {server}, and a tool no pinned profile saw counts as added",
            names.join(", ")
        );
        if self.profile.is_some() {
            line.push_str("; ");
            line.push_str(&self.advice());
        }
        line
    }

    /// The one line said on stderr and in the audit log.
    pub fn message(&self, server: &str, pins: &PinnedServer) -> String {
        let names: Vec<&str> = pins.profiles.keys().map(String::as_str).collect();
        format!(
            "the client's capabilities match no client profile pinned for {server} (pinned: {}); closest is {}, differing at {}; its tools are judged against every definition approved for {server}, and a tool no pinned profile saw counts as added; {}",
            names.join(", "),
            self.closest,
            self.difference.join(", "),
            self.advice()
        )
    }
}
