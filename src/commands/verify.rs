//! `mcp-lock verify`: compare live servers with the lock.

use mcp_lock::check::{check_servers, resolve_all};
use mcp_lock::drift::ServerReport;
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::lock::read_lock;
use mcp_lock::report::{render_human, render_json, render_summary};

use super::{Workspace, check_options, env_lookup, progress};
use crate::cli::{VerifyArgs, VerifyFormat};

pub async fn run(ws: &Workspace, args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let selected = project.select(&args.servers)?;
    let Some(lock) = read_lock(&ws.lock_path)? else {
        anyhow::bail!(
            "{} not found; run `mcp-lock update` to create it",
            ws.lock_display()
        );
    };
    let targets = resolve_all(&project, &selected, &env_lookup)?;
    super::remember_secrets(&targets);
    super::announce(&selected);
    let options = check_options(&args.connect, true)?;
    let checked = check_servers(targets, &lock, &options, progress()).await;
    let mut reports: Vec<ServerReport> = checked.into_iter().map(|c| c.report).collect();
    if args.servers.is_empty() {
        for (name, pinned) in &lock.servers {
            if !project.servers.iter().any(|s| &s.name == name) {
                let transport = match &pinned.reached {
                    mcp_lock::lock::Reached::Stdio { .. } => "stdio".to_string(),
                    mcp_lock::lock::Reached::Remote { kind, .. } => kind.clone(),
                };
                reports.push(ServerReport::dropped_from_config(pinned, &transport));
            }
        }
        reports.sort_by(|a, b| a.name.cmp(&b.name));
    }
    let code = ExitCode::for_verdicts(reports.iter().map(|r| r.verdict));
    match args.format {
        VerifyFormat::Json => super::out(&format!(
            "{}\n",
            render_json(&reports, &ws.lock_display(), code)
        )),
        VerifyFormat::Human => {
            super::out(&render_human(&reports));
            let summary = render_summary(&reports);
            match code {
                ExitCode::Success => super::status("Verified", anstyle::AnsiColor::Green, &summary),
                _ => super::error(&summary),
            }
        }
    }
    Ok(code)
}
