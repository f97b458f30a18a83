//! `mcp-lock check-listing`: what a client received, judged against the lock as verify
//! judges a live listing, with no connection of its own.

use std::io::{BufRead, BufReader, Read};
use std::path::PathBuf;

use anyhow::Context;
use mcp_lock::live::check::{UNMATCHED, declared_profile, judge, mark_unmatched};
use mcp_lock::live::guard::ClientHello;
use mcp_lock::live::received::{
    DocumentError, Documents, Limits, MAX_HANDSHAKE_BYTES, Received, declare,
};
use mcp_lock::records::lock::PinnedServer;
use mcp_lock::verdict::drift::MissingProfile;
use mcp_lock::verdict::exit_codes::ExitCode;

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
    let hello = args.handshake.as_deref().map(read_handshake).transpose()?;
    let chosen = profile_for(ws, &args, &spec, pins, &policy, hello.as_ref())?;
    let limits = Limits {
        max_tools: args.max_tools,
        max_pages: args.max_pages,
        max_message_bytes: args.max_message_bytes,
    };
    let received = read_inputs(&args.files, limits)?;
    let (profile, missing) = match chosen {
        Chosen::Profile(name) => (name, None),
        Chosen::Unmatched(missing) => (UNMATCHED.to_string(), Some(missing)),
    };
    // An unmatched client is judged against every approved definition, and session
    // members it does not give are taken from that view, as the comparison reads them.
    let union = pins
        .filter(|p| !p.profiles.contains_key(&profile))
        .map(|p| p.union(&profile));
    let pin = pins
        .and_then(|p| p.profiles.get(&profile))
        .or(union.as_ref());
    let mut fetched =
        received.into_fetched(spec.transport_name(), pin, policy.surface_for(&spec.name));
    if let Some(hello) = &hello {
        declare(&mut fetched, hello);
    }
    let mut report = judge(&spec, &profile, pins, &mut fetched);
    if let (Some(missing), Some(pins)) = (missing, pins) {
        // Said once, as the guard says it of a session.
        eprintln!(
            "mcp-lock: warning: {}",
            mcp_lock::base::text::escape_for_terminal(&missing.message(&spec.name, pins))
        );
        mark_unmatched(&mut report, missing);
    }
    mcp_lock::live::check::mark_denied(&mut report, &policy.rules, &fetched, pins);
    // Shadowing is judged against the other servers' tools the lock pins.
    let mut policy = policy;
    policy.screen.context =
        std::sync::Arc::new(mcp_lock::verdict::screen::Context::from_lock(&lock));
    policy.evaluate(&mut report);
    let reports = vec![report];
    let code = ExitCode::for_reports(&reports);
    super::print_reports(&reports, args.format, &ctx, code, "Checked");
    Ok(code)
}

/// The profile a listing is judged under, or the client matches none pinned.
enum Chosen {
    Profile(String),
    Unmatched(MissingProfile),
}

/// `--handshake`: JSON text, or `@FILE` (standard input is the listing).
fn read_handshake(spec: &str) -> anyhow::Result<ClientHello> {
    let (text, source) = match spec.strip_prefix('@') {
        Some(path) => {
            let file = std::fs::File::open(path)
                .with_context(|| format!("cannot read the handshake from {path}"))?;
            let mut bytes = Vec::new();
            std::io::Read::take(file, MAX_HANDSHAKE_BYTES as u64 + 1)
                .read_to_end(&mut bytes)
                .with_context(|| format!("cannot read the handshake from {path}"))?;
            if bytes.len() > MAX_HANDSHAKE_BYTES {
                anyhow::bail!(
                    "{path}: larger than {MAX_HANDSHAKE_BYTES} bytes; a handshake is the initialize params the client sent"
                );
            }
            let text = String::from_utf8(bytes).map_err(|e| {
                anyhow::anyhow!(
                    "{path}: not UTF-8 (at byte {})",
                    e.utf8_error().valid_up_to()
                )
            })?;
            (text, path.to_string())
        }
        None => (spec.to_string(), "--handshake".to_string()),
    };
    mcp_lock::live::received::read_handshake(&text, &source).map_err(anyhow::Error::msg)
}

/// The profile the listing was received under: `--client`; else the pinned one the
/// declared handshake matches (none: what it misses); else the one the lock pins the
/// server with; else (not pinned) the known profile with the declared capabilities,
/// or the one the settings select.
fn profile_for(
    ws: &Workspace,
    args: &CheckListingArgs,
    spec: &mcp_lock::servers::config::ServerSpec,
    pins: Option<&PinnedServer>,
    policy: &mcp_lock::verdict::policy::Policy,
    hello: Option<&ClientHello>,
) -> anyhow::Result<Chosen> {
    if let Some(client) = &args.client {
        policy.profiles.get(client)?;
        return Ok(Chosen::Profile(client.clone()));
    }
    if let Some(hello) = hello {
        match pins {
            Some(pins) if !pins.profiles.is_empty() => {
                return Ok(
                    match declared_profile(&spec.name, pins, hello, &policy.profiles) {
                        Ok(name) => Chosen::Profile(name),
                        Err(missing) => Chosen::Unmatched(missing),
                    },
                );
            }
            _ => {
                let settings = &policy.profiles;
                let known = settings.known().into_iter().find(|name| {
                    settings
                        .get(name)
                        .is_ok_and(|p| p.capabilities == hello.capabilities)
                });
                if let Some(name) = known {
                    return Ok(Chosen::Profile(name));
                }
            }
        }
    }
    match pins.map(|p| p.profiles.keys().collect::<Vec<_>>()) {
        Some(names) if names.len() == 1 => Ok(Chosen::Profile(names[0].clone())),
        Some(names) if !names.is_empty() => anyhow::bail!(
            "server {:?} is pinned under client profiles {} in {}; say which client received this listing with --client, or what it declared with --handshake",
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
            Ok(Chosen::Profile(selection.profiles.first().map_or(
                mcp_lock::records::profile::BARE.to_string(),
                |p| p.name.clone(),
            )))
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
