//! `mcp-lock profiles`: every client profile by name, built-in and defined in
//! `mcp-lock.toml`, with what mcp-lock sends when it connects as that host.

use mcp_lock::base::text::escape_for_terminal as esc;
use mcp_lock::records::profile::{BUILTIN, Profile};
use mcp_lock::servers::client::{LEGACY_VERSION, is_modern};
use mcp_lock::verdict::exit_codes::ExitCode;
use serde::Serialize;
use serde_json::Value;

use super::{Workspace, write_stdout};
use crate::cli::{CallFormat, ProfilesArgs};

/// One profile, as it is sent.
#[derive(Debug, Serialize)]
struct Row {
    name: String,
    /// `builtin`, or `mcp-lock.toml` for one the project defines.
    source: &'static str,
    /// The version the profile asks for.
    protocol_version: String,
    /// The first request: `server/discover` (a modern version) or `initialize`.
    first_request: &'static str,
    /// The version `initialize` asks for (after `server/discover` is refused, for a
    /// modern version).
    initialize_version: String,
    capabilities: Value,
    client_info: Value,
}

impl Row {
    fn new(p: Profile, source: &'static str) -> Row {
        let modern = is_modern(&p.protocol_version);
        Row {
            initialize_version: if modern {
                LEGACY_VERSION.to_string()
            } else {
                p.protocol_version.clone()
            },
            first_request: if modern {
                "server/discover"
            } else {
                "initialize"
            },
            name: p.name,
            source,
            protocol_version: p.protocol_version,
            capabilities: p.capabilities,
            client_info: p.client_info,
        }
    }
}

pub(super) fn run(ctx: &Workspace, args: ProfilesArgs) -> anyhow::Result<ExitCode> {
    let settings = ctx.policy(None)?.profiles;
    let mut rows: Vec<Row> = Vec::new();
    for name in BUILTIN {
        if let Some(p) = Profile::builtin(name) {
            rows.push(Row::new(p, "builtin"));
        }
    }
    for p in settings.defined.values() {
        rows.push(Row::new(p.clone(), "mcp-lock.toml"));
    }
    if let Some(name) = &args.name {
        rows.retain(|r| &r.name == name);
        if rows.is_empty() {
            anyhow::bail!(
                "unknown client profile {name:?}; the profiles are {}",
                settings.known().join(", ")
            );
        }
    }
    let out = match args.format {
        CallFormat::Json => {
            let mut s = serde_json::to_string_pretty(&serde_json::json!({ "profiles": rows }))?;
            s.push('\n');
            s
        }
        CallFormat::Human => {
            let mut s = String::new();
            for r in &rows {
                let first = if r.first_request == "initialize" {
                    "initialize".to_string()
                } else {
                    format!("server/discover, then initialize {}", r.initialize_version)
                };
                s.push_str(&format!(
                    "{} ({})\n  protocol      {} ({})\n  capabilities  {}\n  clientInfo    {}\n",
                    esc(&r.name),
                    r.source,
                    esc(&r.protocol_version),
                    esc(&first),
                    esc(&r.capabilities.to_string()),
                    esc(&r.client_info.to_string()),
                ));
            }
            s
        }
    };
    write_stdout(out.as_bytes(), "the profiles")
}
