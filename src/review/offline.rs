//! `verify --no-connect`: what can be checked without starting a server or making a
//! request. The lock was read (so it is well formed); here every configured server is
//! looked up in it and its recorded launch compared with the config's entry.

use serde::Serialize;

use crate::records::lock::{Lockfile, Reached};
use crate::servers::config::{RemoteKind, ServerSpec, TransportSpec};

/// The offline report's format version; bump on an incompatible change.
pub const OFFLINE_REPORT_VERSION: u32 = 1;

/// Checks `verify` makes that `--no-connect` cannot, each marked skipped in its output.
pub const SKIPPED: &[&str] = &[
    "listings: tools, prompts, resource templates and resources (no server is started)",
    "server metadata: identity, instructions, protocol version (no server is started)",
    "package pins: registry look-ups and script hashes (--no-connect implies --offline)",
];

/// What the offline check found for one server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum OfflineStatus {
    /// Pinned, under every pinned profile with the launch the config has.
    Pinned,
    /// In the config, not in the lock.
    NotPinned,
    /// Pinned with another command, args, env names, URL or header names.
    LaunchChanged,
    /// In the lock, no longer in the config.
    Gone,
}

impl OfflineStatus {
    pub fn as_str(self) -> &'static str {
        match self {
            OfflineStatus::Pinned => "pinned",
            OfflineStatus::NotPinned => "not_pinned",
            OfflineStatus::LaunchChanged => "launch_changed",
            OfflineStatus::Gone => "gone",
        }
    }
}

/// One server, from the config, the lock or both.
#[derive(Debug, Clone, Serialize)]
pub struct OfflineServer {
    pub name: String,
    pub status: OfflineStatus,
    /// The client profiles the lock pins it under.
    pub profiles: Vec<String>,
    /// What is wrong and what to do, in one line (unescaped: escape where shown).
    pub problem: Option<String>,
}

/// Every selected server's result, sorted by name.
pub fn check(lock: &Lockfile, selected: &[ServerSpec], gone: &[String]) -> Vec<OfflineServer> {
    let mut out = Vec::new();
    for spec in selected {
        let Some(pinned) = lock.servers.get(&spec.name) else {
            out.push(OfflineServer {
                name: spec.name.clone(),
                status: OfflineStatus::NotPinned,
                profiles: Vec::new(),
                problem: Some(format!(
                    "{}: in the config but not pinned in the lock; run `mcp-lock update {}`",
                    spec.name, spec.name
                )),
            });
            continue;
        };
        let profiles: Vec<String> = pinned.profiles.keys().cloned().collect();
        let config = Reached::from_spec(spec);
        let changed = pinned
            .profiles
            .values()
            .find(|listing| !same_launch(&listing.reached, &config, spec));
        let (status, problem) = match changed {
            None => (OfflineStatus::Pinned, None),
            Some(listing) => (
                OfflineStatus::LaunchChanged,
                Some(format!(
                    "{} [{}]: the config launches `{config}` but the lock pinned `{}`; run `mcp-lock update {}`",
                    spec.name, listing.profile, listing.reached, spec.name
                )),
            ),
        };
        out.push(OfflineServer {
            name: spec.name.clone(),
            status,
            profiles,
            problem,
        });
    }
    for name in gone {
        let profiles = lock
            .servers
            .get(name)
            .map(|s| s.profiles.keys().cloned().collect())
            .unwrap_or_default();
        out.push(OfflineServer {
            name: name.clone(),
            status: OfflineStatus::Gone,
            profiles,
            problem: Some(format!(
                "{name}: pinned in the lock but no longer in the config; run `mcp-lock update` to drop it"
            )),
        });
    }
    out.sort_by(|a, b| a.name.cmp(&b.name));
    out
}

/// Whether a pinned launch is the config's. A `streamable-http` entry may have been
/// pinned as `sse` (the server turned out to be a legacy HTTP+SSE one): verify
/// accepts that when the server still is one, which only a connection can tell.
fn same_launch(pinned: &Reached, config: &Reached, spec: &ServerSpec) -> bool {
    // How the pin authenticated is no part of the launch a config names.
    let pinned = &pinned.without_auth();
    if pinned == config {
        return true;
    }
    let fell_back = matches!(
        spec.transport,
        TransportSpec::Remote {
            kind: RemoteKind::StreamableHttp,
            ..
        }
    );
    match (pinned, config) {
        (
            Reached::Remote {
                kind, url, headers, ..
            },
            Reached::Remote {
                url: u, headers: h, ..
            },
        ) => fell_back && kind == RemoteKind::Sse.as_str() && url == u && headers == h,
        _ => false,
    }
}

/// The document `verify --no-connect --format json` prints (docs/json-report.md).
#[derive(Debug, Serialize)]
pub struct OfflineDocument<'a> {
    pub offline_report_version: u32,
    /// Always `no-connect`: this is not verify's report, which says what servers listed.
    pub check: &'static str,
    pub lock: String,
    pub exit_code: i32,
    pub servers: &'a [OfflineServer],
    pub skipped: &'static [&'static str],
}

/// The JSON form of an offline check.
pub fn render_json(servers: &[OfflineServer], lock: &str, exit_code: i32) -> String {
    let doc = OfflineDocument {
        offline_report_version: OFFLINE_REPORT_VERSION,
        check: "no-connect",
        lock: lock.to_string(),
        exit_code,
        servers,
        skipped: SKIPPED,
    };
    crate::base::text::escape_json_output(
        &serde_json::to_string_pretty(&doc).expect("an offline report serializes"),
    )
}
