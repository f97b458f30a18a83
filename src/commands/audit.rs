//! `mcp-lock audit verify` and `mcp-lock audit show`: the guard's log, read back.

use std::path::PathBuf;

use mcp_lock::records::audit::{chain, format, show};
use mcp_lock::verdict::exit_codes::ExitCode;

use super::{Workspace, display_path};
use crate::cli::{AuditCommand, AuditFormat};

pub fn run(ws: &Workspace, command: AuditCommand) -> anyhow::Result<ExitCode> {
    match command {
        AuditCommand::Verify(args) => {
            if args.format == AuditFormat::Markdown {
                anyhow::bail!(
                    "audit verify writes text or json; use --format text or --format json"
                );
            }
            let files = log_files(ws, args.files)?;
            let report = chain::verify(&files, args.allowed_signers.as_deref(), &args.namespace)?;
            if args.format == AuditFormat::Json {
                // Session ids in warnings come from the log: escaped for a terminal too.
                println!(
                    "{}",
                    mcp_lock::base::text::escape_json_output(&serde_json::to_string_pretty(
                        &report
                    )?)
                );
            } else {
                print_verdict(&report);
            }
            Ok(if report.intact {
                ExitCode::Success
            } else {
                ExitCode::Drift
            })
        }
        AuditCommand::Show(mut args) => {
            let files = log_files(ws, std::mem::take(&mut args.files))?;
            match show_sessions(&files, &args) {
                // A reader that stopped reading (`| head`) ends the output, not the run.
                Err(e) if e.kind() == std::io::ErrorKind::BrokenPipe => {}
                other => other?,
            }
            Ok(ExitCode::Success)
        }
    }
}

/// Writes each session as the log is read, in the chosen format: only the sessions
/// under way are held, whatever the log's size.
fn show_sessions(files: &[PathBuf], args: &crate::cli::AuditShowArgs) -> std::io::Result<()> {
    use std::io::Write;
    let mut out = std::io::BufWriter::new(std::io::stdout().lock());
    let format = args.format;
    match format {
        AuditFormat::Markdown => out.write_all(show::MARKDOWN_HEAD.as_bytes())?,
        AuditFormat::Json => out.write_all(b"{\n  \"sessions\": [")?,
        AuditFormat::Text => {}
    }
    let mut written = 0;
    let shown =
        show::summarise(
            files,
            args.since.as_deref(),
            args.server.as_deref(),
            |s| match format {
                AuditFormat::Text => out.write_all(show::text_session(s).as_bytes()),
                AuditFormat::Markdown => out.write_all(show::markdown_session(s).as_bytes()),
                AuditFormat::Json => {
                    // Each session after the first follows a comma.
                    let session = show::json_session(s).map_err(std::io::Error::other)?;
                    written += 1;
                    write!(out, "{}\n{session}", if written == 1 { "" } else { "," })
                }
            },
        )?;
    match format {
        AuditFormat::Text if shown == 0 => out.write_all(show::TEXT_NONE.as_bytes())?,
        AuditFormat::Markdown if shown == 0 => out.write_all(show::MARKDOWN_NONE.as_bytes())?,
        AuditFormat::Json if shown == 0 => out.write_all(b"]\n}\n")?,
        AuditFormat::Json => out.write_all(b"\n  ]\n}\n")?,
        _ => {}
    }
    out.flush()
}

/// The files named, or the project's log and its rotated files, oldest first.
fn log_files(ws: &Workspace, given: Vec<PathBuf>) -> anyhow::Result<Vec<PathBuf>> {
    if !given.is_empty() {
        return Ok(given);
    }
    let lock_dir = mcp_lock::base::files::parent_of(&ws.lock_path);
    let log = lock_dir.join(".mcp-lock").join("audit.jsonl");
    let files = format::family(&log)?;
    if files.is_empty() {
        anyhow::bail!(
            "no audit log at {}; `mcp-lock guard` writes it (or name the log's files)",
            display_path(&log, &ws.project_dir)
        );
    }
    Ok(files)
}

fn print_verdict(report: &chain::ChainReport) {
    let files = mcp_lock::base::text::count(report.files.len(), "file");
    let signed = if report.signatures_checked {
        format!("{} signed, signatures checked", report.signed_checkpoints)
    } else if report.signed_checkpoints > 0 {
        format!(
            "{} signed, signatures not checked: pass --allowed-signers",
            report.signed_checkpoints
        )
    } else {
        "none signed".into()
    };
    match &report.broken {
        None => {
            println!(
                "audit log intact: {} in {files} ({}, {signed})",
                entries(report.entries),
                mcp_lock::base::text::count(report.checkpoints, "checkpoint"),
            );
            if report.unchained > 0 {
                println!(
                    "  the first {} were written before the log was chained",
                    entries(report.unchained)
                );
            }
            if report.signatures_checked
                && let Some(after) = report.after_last_signed.filter(|n| *n > 0)
            {
                println!(
                    "  {} after the last signed checkpoint are chained only",
                    entries(after)
                );
            }
        }
        Some(b) => {
            super::error(&format!(
                "audit log broken: {}",
                mcp_lock::base::text::escape_for_terminal(&b.message)
            ));
        }
    }
    for w in &report.warnings {
        eprintln!("warning: {}", mcp_lock::base::text::escape_for_terminal(w));
    }
}

fn entries(n: usize) -> String {
    match n {
        1 => "1 entry".into(),
        n => format!("{n} entries"),
    }
}
