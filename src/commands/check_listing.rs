//! `mcp-lock check-listing`: what a client received, judged against the lock as verify
//! judges a live listing, with no connection of its own.

use std::io::Read;
use std::path::PathBuf;

use anyhow::Context;
use mcp_lock::check::judge;
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::lock::PinnedServer;
use mcp_lock::received::{MAX_INPUT_BYTES, Received, documents};

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
    let inputs = read_inputs(&args.files)?;
    let mut docs = Vec::new();
    for (place, text) in &inputs {
        for doc in documents(text, place).map_err(anyhow::Error::msg)? {
            docs.push((doc, place.as_str()));
        }
    }
    let received = Received::read(docs).map_err(anyhow::Error::msg)?;
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

/// Each input's text with its name for messages: standard input when no file is
/// named (or `-`). Every read is bounded.
fn read_inputs(files: &[PathBuf]) -> anyhow::Result<Vec<(String, String)>> {
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
    let mut out = Vec::with_capacity(files.len());
    for file in &files {
        let (place, reader): (String, Box<dyn Read>) = if file.as_os_str() == "-" {
            ("standard input".into(), Box::new(std::io::stdin()))
        } else {
            let shown = file.display().to_string();
            let opened =
                std::fs::File::open(file).with_context(|| format!("cannot read {shown}"))?;
            (shown, Box::new(opened))
        };
        let mut bytes = Vec::new();
        reader
            .take(MAX_INPUT_BYTES + 1)
            .read_to_end(&mut bytes)
            .with_context(|| format!("cannot read {place}"))?;
        if bytes.len() as u64 > MAX_INPUT_BYTES {
            anyhow::bail!(
                "{place}: larger than {} MiB; a listing that large is not read",
                MAX_INPUT_BYTES / (1024 * 1024)
            );
        }
        let text = String::from_utf8(bytes).map_err(|e| {
            anyhow::anyhow!(
                "{place}: not UTF-8 (at byte {})",
                e.utf8_error().valid_up_to()
            )
        })?;
        out.push((place, text));
    }
    Ok(out)
}
