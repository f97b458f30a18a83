//! `mcp-lock check-listing`: what a client received, judged against the lock as verify
//! judges a live listing, with no connection of its own.

use std::io::{BufRead, BufReader};
use std::path::PathBuf;

use anyhow::Context;
use mcp_lock::check::judge;
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::lock::PinnedServer;
use mcp_lock::received::{DocumentError, Documents, Limits, Received};

use super::Workspace;
use crate::cli::CheckListingArgs;

pub fn run(ws: &Workspace, args: CheckListingArgs) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let policy = ws.policy(Some(&args.policy))?;
    let (lock, ctx) =
        ws.read_lock_for_reports(&ws.lock_path, "; run `mcp-lock update` to create it")?;
    let spec = project
        .select(std::slice::from_ref(&args.server))?
        .remove(0);
    let pins = lock.servers.get(&spec.name);
    let profile = profile_for(ws, &args, &spec, pins, &policy)?;
    let limits = Limits {
        max_tools: args.max_tools,
        max_pages: args.max_pages,
        max_message_bytes: args.max_message_bytes,
    };
    let received = read_inputs(&args.files, limits)?;
    let pin = pins.and_then(|p| p.profiles.get(&profile));
    let mut fetched =
        received.into_fetched(spec.transport_name(), pin, policy.surface_for(&spec.name));
    let mut report = judge(&spec, &profile, pins, &mut fetched);
    policy.evaluate(&mut report);
    let reports = vec![report];
    let code = ExitCode::for_reports(&reports);
    super::print_reports(&reports, args.format, &ctx, code, "Checked");
    Ok(code)
}

/// The profile the listing was received under: `--client`, else the one the lock
/// pins the server with, else (not pinned) the one the settings select.
fn profile_for(
    ws: &Workspace,
    args: &CheckListingArgs,
    spec: &mcp_lock::config::ServerSpec,
    pins: Option<&PinnedServer>,
    policy: &mcp_lock::policy::Policy,
) -> anyhow::Result<String> {
    if let Some(client) = &args.client {
        policy.profiles.get(client)?;
        return Ok(client.clone());
    }
    match pins.map(|p| p.profiles.keys().collect::<Vec<_>>()) {
        Some(names) if names.len() == 1 => Ok(names[0].clone()),
        Some(names) if !names.is_empty() => anyhow::bail!(
            "server {:?} is pinned under client profiles {} in {}; say which client received this listing with --client",
            spec.name,
            names
                .iter()
                .map(|n| n.as_str())
                .collect::<Vec<_>>()
                .join(", "),
            ws.lock_display()
        ),
        _ => {
            let selection = policy.profiles.for_server(&spec.name, &spec.hosts, None)?;
            Ok(selection
                .profiles
                .first()
                .map_or(mcp_lock::profile::BARE.to_string(), |p| p.name.clone()))
        }
    }
}

/// What every input holds, read one document at a time within `limits`: standard
/// input when no file is named (or `-`). Past a limit nothing more is read, and the
/// listing is incomplete.
fn read_inputs(files: &[PathBuf], limits: Limits) -> anyhow::Result<Received> {
    let files: Vec<PathBuf> = if files.is_empty() {
        if std::io::IsTerminal::is_terminal(&std::io::stdin()) {
            anyhow::bail!(
                "no input: name a FILE, or pipe what the client received into `mcp-lock check-listing SERVER`"
            );
        }
        vec![PathBuf::from("-")]
    } else {
        files.to_vec()
    };
    let mut received = Received::new(limits);
    for file in &files {
        let (place, reader): (String, Box<dyn BufRead>) = if file.as_os_str() == "-" {
            ("standard input".into(), Box::new(std::io::stdin().lock()))
        } else {
            let shown = file.display().to_string();
            let opened =
                std::fs::File::open(file).with_context(|| format!("cannot read {shown}"))?;
            (shown, Box::new(BufReader::with_capacity(64 * 1024, opened)))
        };
        let mut documents = Documents::new(reader, &place, limits.max_message_bytes);
        loop {
            match documents.next_document() {
                Ok(Some(document)) => received
                    .take_document(document, &place)
                    .map_err(anyhow::Error::msg)?,
                Ok(None) => break,
                Err(DocumentError::Invalid(why)) => anyhow::bail!(why),
                Err(DocumentError::TooLarge(why)) => received.stop(why),
            }
            if received.stopped() {
                return Ok(received);
            }
        }
    }
    received.finish().map_err(anyhow::Error::msg)
}
