//! `mcp-lock verify`: compare live servers with the lock; the policy decides the exit.

use std::sync::Arc;

use mcp_lock::live::check::{
    ProfileUse, Targets, plan_targets, resolve_all, select_with_lock, verify_servers,
};
use mcp_lock::records::lock::{Lockfile, Pins, WholeLock, read_unchecked};
use mcp_lock::review::report::LockContext;
use mcp_lock::servers::config::ProjectConfig;
use mcp_lock::verdict::drift::ServerReport;
use mcp_lock::verdict::exit_codes::ExitCode;
use mcp_lock::verdict::policy::Policy;

use super::{Workspace, check_options, display_path, env_lookup, progress};
use crate::cli::{ConnectArgs, Format, VerifyArgs};

pub async fn run(ws: &Workspace, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    if args.no_connect {
        return no_connect(ws, &args);
    }
    let project = ws.load_config()?;
    let policy = ws.policy(Some(&args.policy))?;
    let read = CheckLock::read(ws)?;
    let lookups = if args.offline {
        mcp_lock::servers::package::Lookups::Offline
    } else {
        mcp_lock::servers::package::Lookups::Online
    };
    let reports = live_reports(
        ws,
        &project,
        read.pins(),
        &args.servers,
        &args.connect,
        &policy,
        lookups,
    )
    .await?;
    let (lock, ctx) = read.finish().await?;
    let code = ExitCode::for_reports(&reports);
    // What hosts really sent is a notice: CI has no host, and judges what the lock pins.
    let observed = super::observed_handshakes(ws, &lock, &args.servers);
    super::print_reports_observed(&reports, args.format, &ctx, code, "Verified", &observed);
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
    pins: Pins<'_>,
    servers: &[String],
    connect: &ConnectArgs,
    policy: &Policy,
    lookups: mcp_lock::servers::package::Lookups,
) -> anyhow::Result<Vec<ServerReport>> {
    let lock = pins.header();
    let (selected, gone) = select_with_lock(project, lock, servers)?;
    let resolved = resolve_all(project, &selected, &env_lookup)?;
    let using = Workspace::profile_use(&connect.client, ProfileUse::Pinned);
    let Targets { targets, notices } = plan_targets(resolved, lock, policy, using)?;
    for line in &notices {
        super::notice(line);
    }
    super::announce(&selected);
    let mut options = check_options(connect, true, ws, policy)?;
    options.packages = lookups;
    let reports = verify_servers(pins, targets, &gone, &options, policy, progress()).await;
    Ok(reports)
}

/// The lock live servers are checked against, read as the check needs it.
pub enum CheckLock {
    Whole(Lockfile, LockContext),
    /// A large lock: its header read, its definitions being read while the servers
    /// are listed.
    Arriving {
        header: Lockfile,
        whole: WholeLock,
        shown: String,
    },
}

impl CheckLock {
    /// From this many definitions on, they are read while the servers are listed;
    /// below, reading them first costs milliseconds, and a broken definition is
    /// reported before any server starts.
    const ARRIVING_FROM: usize = 1000;

    /// Reads the project's lock; a missing file is an error that says how to make one.
    pub fn read(ws: &Workspace) -> anyhow::Result<CheckLock> {
        let shown = display_path(&ws.lock_path, &ws.project_dir);
        let Some(unchecked) = read_unchecked(&ws.lock_path)? else {
            anyhow::bail!("{shown} not found; run `mcp-lock update` to create it");
        };
        if unchecked.definitions() < Self::ARRIVING_FROM {
            let (lock, lines) = unchecked.check()?;
            let ctx = LockContext::with_lines(&shown, lines, &lock);
            return Ok(CheckLock::Whole(lock, ctx));
        }
        let (header, unchecked) = unchecked.header()?;
        Ok(CheckLock::Arriving {
            header,
            whole: WholeLock::read(unchecked),
            shown,
        })
    }

    pub fn pins(&self) -> Pins<'_> {
        match self {
            CheckLock::Whole(lock, _) => Pins::Whole(lock),
            CheckLock::Arriving { header, whole, .. } => Pins::Arriving { header, whole },
        }
    }

    /// The whole lock and what the reports need to point into it, or the error
    /// reading its definitions found.
    pub async fn finish(self) -> anyhow::Result<(Arc<Lockfile>, LockContext)> {
        match self {
            CheckLock::Whole(lock, ctx) => Ok((Arc::new(lock), ctx)),
            CheckLock::Arriving { whole, shown, .. } => {
                let (lock, lines) = whole.finish().await?;
                let ctx = LockContext::with_lines(&shown, lines, &lock);
                Ok((lock, ctx))
            }
        }
    }
}

/// `verify --no-connect`: the lock (read, so well formed) against the config, with no
/// server started and no request made. Exit 1 when a server is not pinned, is pinned
/// with another launch, or was dropped from the config.
fn no_connect(ws: &Workspace, args: &VerifyArgs) -> anyhow::Result<ExitCode> {
    use anstyle::AnsiColor;
    use mcp_lock::base::text::{count, escape_for_terminal as esc};
    use mcp_lock::review::offline;

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
        Format::Markdown => super::out(&mcp_lock::review::report::render_offline_markdown(
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
