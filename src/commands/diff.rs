//! `mcp-lock diff`: the classified view of what changed, between the lock and live
//! servers or between two lock files. Reports only; the exit code says whether
//! anything differs.

use anstyle::AnsiColor;
use mcp_lock::drift::{Verdict, compare_locks};
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::report::{render_diff, render_summary};

use super::Workspace;
use crate::cli::{DiffArgs, Format};

pub async fn run(ws: &Workspace, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let policy = ws.policy(Some(&args.policy))?;
    let (reports, ctx) = match &args.from {
        Some(from) => {
            let to = args.to.clone().unwrap_or_else(|| ws.lock_path.clone());
            let [(old, _), (new, ctx)] = ws.read_two_locks_for_reports([from, &to])?;
            let mut reports = compare_locks(&old, &new);
            for report in &mut reports {
                policy.evaluate(report);
            }
            if !args.servers.is_empty() {
                for name in &args.servers {
                    if !reports.iter().any(|r| &r.name == name) {
                        anyhow::bail!("no server named {name:?} in either lock");
                    }
                }
                reports.retain(|r| args.servers.contains(&r.name));
            }
            (reports, ctx)
        }
        None => {
            let project = ws.load_config()?;
            let read = super::verify::CheckLock::read(ws)?;
            let reports = super::verify::live_reports(
                ws,
                &project,
                read.pins(),
                &args.servers,
                &args.connect,
                &policy,
                mcp_lock::package::Lookups::Online,
            )
            .await?;
            let (_, ctx) = read.finish().await?;
            (reports, ctx)
        }
    };
    let code = if reports.iter().any(|r| r.verdict == Verdict::Stale) {
        ExitCode::Drift
    } else if reports.iter().any(|r| r.verdict != Verdict::Converged) {
        ExitCode::Unverified
    } else {
        ExitCode::Success
    };
    if args.format == Format::Human {
        super::out(&render_diff(&reports));
        let summary = render_summary(&reports);
        match code {
            ExitCode::Success => super::status("Same", AnsiColor::Green, &summary),
            ExitCode::Drift => super::status("Differs", AnsiColor::Yellow, &summary),
            _ => super::warning(&format!(
                "no differences found, but not every server could be checked: {summary}"
            )),
        }
    } else {
        super::print_reports(&reports, args.format, &ctx, code, "Same");
    }
    Ok(code)
}
