//! `mcp-lock verify`: compare live servers with the lock; the policy decides the exit.

use mcp_lock::check::{
    ProfileUse, Targets, plan_targets, resolve_all, select_with_lock, verify_servers,
};
use mcp_lock::config::ProjectConfig;
use mcp_lock::drift::ServerReport;
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::lock::Lockfile;
use mcp_lock::policy::Policy;

use super::{Workspace, check_options, env_lookup, progress};
use crate::cli::{ConnectArgs, VerifyArgs};

pub async fn run(ws: &Workspace, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let policy = ws.policy(Some(&args.policy))?;
    let (lock, ctx) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    let reports = live_reports(ws, &project, &lock, &args.servers, &args.connect, &policy).await?;
    let code = ExitCode::for_reports(&reports);
    super::print_reports(&reports, args.format, &ctx, code, "Verified");
    Ok(code)
}

/// Checks the selected servers against the lock and classifies every change. Pins
/// whose server left the config are reported as gone: all of them with no servers
/// named, else the named ones.
pub async fn live_reports(
    ws: &Workspace,
    project: &ProjectConfig,
    lock: &Lockfile,
    servers: &[String],
    connect: &ConnectArgs,
    policy: &Policy,
) -> anyhow::Result<Vec<ServerReport>> {
    let (selected, gone) = select_with_lock(project, lock, servers)?;
    let resolved = resolve_all(project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&connect.client, ProfileUse::Pinned);
    let Targets { targets, notices } = plan_targets(resolved, lock, policy, using)?;
    for line in &notices {
        super::notice(line);
    }
    super::announce(&selected);
    let options = check_options(connect, true, ws.lock_dir())?;
    let reports = verify_servers(lock, targets, &gone, &options, policy, progress()).await;
    Ok(reports)
}
