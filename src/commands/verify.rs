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
use crate::cli::{ConnectArgs, Format, VerifyArgs};

pub async fn run(ws: &Workspace, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.no_connect {
        return no_connect(ws, &args);
    }
    let project = ws.load_config()?;
    let policy = ws.policy(Some(&args.policy))?;
    let (lock, ctx) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    let lookups = if args.offline {
        mcp_lock::package::Lookups::Offline
    } else {
        mcp_lock::package::Lookups::Online
    };
    let reports = live_reports(
        ws,
        &project,
        &lock,
        &args.servers,
        &args.connect,
        &policy,
        lookups,
    )
    .await?;
    let code = ExitCode::for_reports(&reports);
    super::print_reports(&reports, args.format, &ctx, code, "Verified");
    // The process ends next: freeing every pinned and listed definition one by one
    // would only cost time (a tenth of a large verify).
    std::mem::forget((reports, lock, ctx));
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
    lookups: mcp_lock::package::Lookups,
) -> anyhow::Result<Vec<ServerReport>> {
    let (selected, gone) = select_with_lock(project, lock, servers)?;
    let resolved = resolve_all(project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&connect.client, ProfileUse::Pinned);
    let Targets { targets, notices } = plan_targets(resolved, lock, policy, using)?;
    for line in &notices {
        super::notice(line);
    }
    super::announce(&selected);
    let mut options = check_options(connect, true, ws.lock_dir())?;
    options.packages = lookups;
    let reports = verify_servers(lock, targets, &gone, &options, policy, progress()).await;
    Ok(reports)
}

/// `verify --no-connect`: the lock (read, so well formed) against the config, with no
/// server started and no request made. Exit 1 when a server is not pinned, is pinned
/// with another launch, or was dropped from the config.
fn no_connect(ws: &Workspace, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    use anstyle::AnsiColor;
    use mcp_lock::offline;
    use mcp_lock::text::{count, escape_for_terminal as esc};

    if !matches!(args.format, Format::Human | Format::Json | Format::Markdown) {
        anyhow::bail!(
            "--no-connect prints human, json or markdown output; SARIF, JUnit and GitHub reports need the listings verify reads"
        );
    }
    let project = ws.load_config()?;
    // A broken policy file fails here as in verify: the hook also runs on its edits.
    ws.policy(Some(&args.policy))?;
    let (lock, ctx) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    let (selected, gone) = select_with_lock(&project, &lock, &args.servers)?;
    let servers = offline::check(&lock, &selected, &gone);
    let problems = servers.iter().filter(|s| s.problem.is_some()).count();
    let code = if problems == 0 {
        ExitCode::Success
    } else {
        ExitCode::Drift
    };
    match args.format {
        Format::Json => super::out(&format!(
            "{}\n",
            offline::render_json(&servers, &ctx.path, code.into())
        )),
        Format::Markdown => super::out(&mcp_lock::report::render_offline_markdown(
            &servers,
            &ctx.path,
            code.into(),
        )),
        _ => {
            let width = servers
                .iter()
                .map(|s| esc(&s.name).chars().count())
                .max()
                .unwrap_or(0);
            let mut text = String::new();
            for s in &servers {
                let line = match &s.problem {
                    Some(problem) => esc(problem),
                    None => format!(
                        "{:<width$}  pinned ({}), launched as the config says",
                        esc(&s.name),
                        esc(&s.profiles.join(", "))
                    ),
                };
                text.push_str(&line);
                text.push('\n');
            }
            for skipped in offline::SKIPPED {
                text.push_str(&format!("skipped: {skipped}\n"));
            }
            super::out(&text);
            let summary = format!("{} in {}", count(servers.len(), "server"), ctx.path);
            if problems == 0 {
                super::status("Checked", AnsiColor::Green, &format!("{summary}, offline"));
            } else {
                super::error(&format!(
                    "{} of {summary} (checked offline)",
                    count(problems, "problem")
                ));
            }
        }
    }
    Ok(code)
}
