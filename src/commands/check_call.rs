//! `mcp-lock check-call`: judge one planned call against the pinned and the live
//! contract.

use std::io::Read;

use anyhow::Context;
use mcp_lock::base::json::Json;
use mcp_lock::contract::validate::{checkable_arguments, read_exactly};
use mcp_lock::live::check::{
    ProfileUse, Target, Targets, check_servers, plan_targets, resolve_all,
};
use mcp_lock::records::lock::Pins;
use mcp_lock::review::call::{CallVerdict, check_call, render_call};
use mcp_lock::servers::client::Outcome;
use mcp_lock::verdict::exit_codes::ExitCode;

use super::{Workspace, check_options, env_lookup, progress};
use crate::cli::{CallFormat, CheckCallArgs};

pub async fn run(ws: &Workspace, args: CheckCallArgs) -> anyhow::Result<ExitCode> {
    let arguments = read_arguments(&args.args)?;
    let project = ws.load_config()?;
    let policy = ws.policy(Some(&args.policy))?;
    let (lock, _) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    let selected = project.select(std::slice::from_ref(&args.server))?;
    let resolved = resolve_all(&project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&args.connect.client, ProfileUse::Pinned);
    let Targets { mut targets, .. } = plan_targets(resolved, &lock, &policy, using)?;
    // One listing judges the call: the first pinned profile that pins the tool.
    let pins = lock.servers.get(&args.server);
    let pinned_under = |t: &Target| {
        pins.and_then(|p| p.profiles.get(&t.profile.name))
            .is_some_and(|p| p.tools.contains_key(&args.tool))
    };
    let at = targets.iter().position(pinned_under).unwrap_or(0);
    targets.truncate(at + 1);
    targets.drain(..at);
    let options = check_options(&args.connect, true, ws, &policy)?;
    let mut checked = check_servers(targets, Pins::Whole(&lock), &options, progress()).await;
    let mut checked = checked.remove(0);
    mcp_lock::live::check::mark_denied(&mut checked.report, &policy.rules, &checked.fetched, pins);
    // Shadowing is judged against the other servers' tools the lock pins.
    let mut policy = policy;
    policy.screen.context =
        std::sync::Arc::new(mcp_lock::verdict::screen::Context::from_lock(&lock));
    policy.evaluate(&mut checked.report);
    let listing = match &checked.fetched.outcome {
        Outcome::Complete { listing, .. } => Some(listing),
        _ => None,
    };
    let mut report = check_call(
        &checked.report,
        pins.and_then(|p| p.profiles.get(&checked.profile.name)),
        listing,
        &args.tool,
        &arguments,
        &policy.rules,
    );
    report.redact(&checked.secrets);
    match args.format {
        CallFormat::Json => super::out(&format!(
            "{}\n",
            mcp_lock::base::text::escape_json_output(&serde_json::to_string_pretty(&report)?)
        )),
        CallFormat::Human => {
            super::out(&render_call(&report));
            let tool = mcp_lock::base::text::escape_for_terminal(&args.tool);
            match report.verdict {
                CallVerdict::Valid => super::status(
                    "Valid",
                    anstyle::AnsiColor::Green,
                    &format!("the call to {tool} fits the pinned and the live contract"),
                ),
                CallVerdict::ContractChanged => super::error(&contract_problem(&report, &tool)),
                CallVerdict::InvalidArguments => {
                    super::error(&format!("the arguments do not fit {tool}'s schema"))
                }
                CallVerdict::Unverified => {
                    super::error(&format!("server {} could not be checked", args.server))
                }
                CallVerdict::Denied => super::error(&format!(
                    "the tool rules deny this call to {tool}: {}; nothing may send it",
                    mcp_lock::base::text::escape_for_terminal(
                        &report
                            .denied
                            .as_ref()
                            .map(|d| d.to_string())
                            .unwrap_or_default()
                    )
                )),
            }
        }
    }
    Ok(report.exit_code())
}

/// Why the call's contract does not hold, in one line: the tool not pinned, no
/// longer listed, or changed.
fn contract_problem(report: &mcp_lock::review::call::CallReport, tool: &str) -> String {
    let server = &report.server;
    match (report.pinned.present, report.live.present) {
        (false, false) => format!(
            "{tool} is not pinned in the lock and server {server} does not list it; check the tool's name with `mcp-lock verify {server}`"
        ),
        (false, true) => format!(
            "{tool} is not pinned in the lock; review and approve it with `mcp-lock update {server}` before sending this call"
        ),
        (true, false) => format!(
            "{tool} is pinned but server {server} no longer lists it; review the change with `mcp-lock diff {server}`"
        ),
        (true, true) if report.change.is_none() => format!(
            "server {server} changed since it was pinned ({}); review it with `mcp-lock diff {server}` before sending this call",
            report.server_changes.join(", ")
        ),
        (true, true) => format!(
            "{tool}'s contract changed since it was pinned; review it with `mcp-lock diff {server}` before sending this call"
        ),
    }
}

/// `--args`: JSON text, `@FILE`, or `-` for standard input. Read strictly: a
/// repeated member name is refused, as the guard refuses it. Arguments the guard
/// could not check (see [`checkable_arguments`]) come back as the violation it
/// would refuse them with.
fn read_arguments(
    spec: &str,
) -> anyhow::Result<Result<serde_json::Value, mcp_lock::contract::validate::Violation>> {
    let (text, source) = if spec == "-" {
        let mut text = String::new();
        std::io::stdin()
            .read_to_string(&mut text)
            .context("cannot read the arguments from standard input")?;
        (text, "standard input".to_string())
    } else if let Some(path) = spec.strip_prefix('@') {
        let text = std::fs::read_to_string(path)
            .with_context(|| format!("cannot read the arguments from {path}"))?;
        (text, path.to_string())
    } else {
        (spec.to_string(), "--args".to_string())
    };
    let json = Json::parse(&text).with_context(|| format!("{source}: not JSON"))?;
    if json.has_repeated_member() {
        anyhow::bail!("{source}: a member name is repeated; readers disagree on what it means");
    }
    if !json.is_object() {
        anyhow::bail!("{source}: the arguments must be a JSON object");
    }
    Ok(checkable_arguments(&json, read_exactly(text.as_bytes())))
}
