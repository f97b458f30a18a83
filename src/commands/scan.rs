//! `mcp-lock scan`: list the project's servers and screen every live definition
//! (tools, prompts, resource templates), pinned or not. Writes nothing.

use anstyle::AnsiColor;
use mcp_lock::base::text::count;
use mcp_lock::contract::surface::Kind;
use mcp_lock::live::check::{ProfileUse, Targets, check_servers, plan_targets, resolve_all};
use mcp_lock::records::lock::{Pins, read_lock};
use mcp_lock::review::report::{ScannedItem, ScannedServer};
use mcp_lock::servers::client::Outcome;
use mcp_lock::verdict::exit_codes::ExitCode;
use mcp_lock::verdict::policy::Action;

use super::{Workspace, check_options, env_lookup, progress};
use crate::cli::{ScanArgs, ScanFormat};

pub async fn run(ws: &Workspace, args: ScanArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let mut policy = ws.policy(Some(&args.policy))?;
    // The lock is read for its tool names (shadowing) and the profiles it pins; a
    // project without one is scanned all the same.
    let lock = read_lock(&ws.lock_path)?.unwrap_or_default();
    let selected = project.select(&args.servers)?;
    let resolved = resolve_all(&project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&args.connect.client, ProfileUse::Pinned);
    let Targets { targets, notices } = plan_targets(resolved, &lock, &policy, using)?;
    for line in &notices {
        super::notice(line);
    }
    super::announce(&selected);
    let options = check_options(&args.connect, true, ws, &policy)?;
    let checked = check_servers(targets, Pins::Whole(&lock), &options, progress()).await;
    policy.screen.context =
        std::sync::Arc::new(mcp_lock::verdict::screen::Context::of_run(&lock, &checked));
    let mut servers = Vec::with_capacity(checked.len());
    for c in &checked {
        let mut server = ScannedServer {
            name: c.spec.name.clone(),
            profile: c.profile.name.clone(),
            listed: false,
            error: None,
            screened: 0,
            items: Vec::new(),
        };
        let Outcome::Complete { listing, .. } = &c.fetched.outcome else {
            server.error = Some(
                c.report
                    .error
                    .clone()
                    .unwrap_or_else(|| c.report.verdict.as_str().to_string()),
            );
            servers.push(server);
            continue;
        };
        server.listed = true;
        // Resources are data, not definitions the model is told to use.
        for kind in [Kind::Tool, Kind::Prompt, Kind::ResourceTemplate] {
            for item in listing.kind(kind).into_iter().flatten() {
                server.screened += 1;
                let name = item.name.clone().unwrap_or_default();
                let mut found = mcp_lock::verdict::screen::screen(
                    kind,
                    &item.definition.to_value(),
                    &c.spec.name,
                    &policy.screen.context,
                );
                if found.is_empty() {
                    continue;
                }
                policy.decide_screened(&c.spec.name, &name, &mut found);
                // Server text shown back: never with one of the entry's secrets in it.
                for f in &mut found {
                    c.secrets.redact_in_place(&mut f.quote);
                    c.secrets.redact_in_place(&mut f.reason);
                }
                server.items.push(ScannedItem {
                    kind,
                    name: c.secrets.redact(&name),
                    findings: found,
                });
            }
        }
        servers.push(server);
    }
    let failing = servers
        .iter()
        .flat_map(ScannedServer::findings)
        .any(|(_, f)| f.action == Action::Fail);
    let code = if failing {
        ExitCode::Drift
    } else if servers.iter().any(|s| !s.listed) {
        ExitCode::Unverified
    } else {
        ExitCode::Success
    };
    match args.format {
        ScanFormat::Json => super::out(&format!(
            "{}\n",
            mcp_lock::review::report::render_scan_json(&servers, code.into())
        )),
        ScanFormat::Sarif => super::out(&format!(
            "{}\n",
            mcp_lock::review::report::render_scan_sarif(&servers)
        )),
        ScanFormat::Text => {
            super::out(&mcp_lock::review::report::render_scan_text(&servers));
            let screened: usize = servers.iter().map(|s| s.screened).sum();
            let counts = mcp_lock::review::report::screen_counts(&servers);
            let by: Vec<String> = counts.iter().map(|(s, n)| format!("{n} {s}")).collect();
            // A server listed under two profiles is one server, listed twice.
            let names: std::collections::BTreeSet<&str> =
                servers.iter().map(|s| s.name.as_str()).collect();
            let listings = if names.len() == servers.len() {
                String::new()
            } else {
                format!(" ({})", count(servers.len(), "listing"))
            };
            let summary = format!(
                "{} of {}{listings}: {}",
                count(screened, "definition"),
                count(names.len(), "server"),
                by.join(", ")
            );
            match code {
                ExitCode::Success => super::status("Screened", AnsiColor::Green, &summary),
                ExitCode::Drift => super::error(&format!(
                    "{summary}; a finding the policy fails (screen-high fails by default)"
                )),
                _ => super::warning(&format!("{summary}; some server could not be listed")),
            }
        }
    }
    Ok(code)
}
