//! `mcp-lock diff`: the classified view of what changed, between the lock and live
//! servers or between two lock files. Reports only; the exit code says whether
//! anything differs.

use anstyle::AnsiColor;
use mcp_lock::base::text::escape_for_terminal as esc;
use mcp_lock::records::lock::{Approval, Lockfile};
use mcp_lock::review::report::{render_diff, render_summary};
use mcp_lock::verdict::drift::{Verdict, compare_locks};
use mcp_lock::verdict::exit_codes::ExitCode;

use super::Workspace;
use crate::cli::{DiffArgs, Format};

pub async fn run(ws: &Workspace, args: DiffArgs) -> anyhow::Result<ExitCode> {
    let policy = ws.policy(Some(&args.policy))?;
    let mut approvals = String::new();
    let (reports, ctx) = match &args.from {
        Some(from) => {
            let to = args.to.clone().unwrap_or_else(|| ws.lock_path.clone());
            let [(old, _), (new, ctx)] = ws.read_two_locks_for_reports([from, &to])?;
            approvals = approval_lines(&old, &new, &args.servers);
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
                mcp_lock::servers::package::Lookups::Online,
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
        super::out(&approvals);
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

/// For each server whose pins differ between two locks, how the new side was approved
/// (lock version 7's `approved`), and how the old one was: "one: approved by policy
/// (was terminal); no person looked at it".
fn approval_lines(old: &Lockfile, new: &Lockfile, only: &[String]) -> String {
    let shown = |how: Option<Approval>| how.map_or("not recorded", Approval::as_str);
    let mut out = String::new();
    for (name, pins) in &new.servers {
        if !only.is_empty() && !only.contains(name) {
            continue;
        }
        let was = old.servers.get(name);
        if was.is_some_and(|w| w.profiles == pins.profiles && w.package == pins.package) {
            continue;
        }
        out.push_str(&format!(
            "{}: approved by {}",
            esc(name),
            shown(pins.approved)
        ));
        match was {
            Some(w) => out.push_str(&format!(" (was {})", shown(w.approved))),
            None => out.push_str(" (first pin)"),
        }
        match pins.approved {
            Some(Approval::PullRequest) => {
                out.push_str("; a person approves it by merging the pull request")
            }
            Some(how) if !how.by_a_person() => out.push_str("; no person looked at it"),
            _ => {}
        }
        out.push('\n');
    }
    out
}
