//! `mcp-lock guard`: start one stdio server behind the enforcing proxy.

use std::collections::BTreeMap;

use anyhow::Context;
use mcp_lock::config::{ProjectConfig, TransportSpec};
use mcp_lock::exit_codes::ExitCode;
use mcp_lock::guard::pins::PinWatch;
use mcp_lock::guard::{AuditLog, Ended, GuardSetup, Launch, OnDrift, Pins, Session};
use mcp_lock::lock::read_lock_server;
use mcp_lock::secrets::Secrets;

use super::{Workspace, display_path, env_lookup};
use crate::cli::{self, GuardArgs};

/// Set in the server's environment, so a config entry that launches the guard itself
/// cannot start guards without end.
const GUARDED: &str = "MCP_LOCK_GUARDED";

pub async fn run(ws: &Workspace, args: GuardArgs) -> anyhow::Result<ExitCode> {
    let lock_shown = ws.lock_display();
    // Watching starts before the pins are read, so no change can fall in between.
    let watch = PinWatch::new(ws.lock_path.clone());
    // Only this server's part of the lock is read: a guard for a small server does
    // not pay for the pins of a large one.
    let Some(pinned) = read_lock_server(&ws.lock_path, &args.server)? else {
        anyhow::bail!("{lock_shown} not found; run `mcp-lock update` to pin the servers first");
    };
    let Some(pinned) = pinned else {
        anyhow::bail!(
            "server {:?} is not pinned in {lock_shown}; run `mcp-lock update {}` first",
            args.server,
            args.server
        );
    };
    let (launch, secrets) = launch(ws, &args)?;
    let audit_path = args.audit_log.clone().unwrap_or_else(|| {
        ws.lock_path
            .parent()
            .unwrap_or(std::path::Path::new("."))
            .join(".mcp-lock")
            .join("audit.jsonl")
    });
    let audit = AuditLog::open(&audit_path, &args.server, secrets).with_context(|| {
        format!(
            "cannot open the audit log {}",
            display_path(&audit_path, &ws.project_dir)
        )
    })?;
    let on_drift = match args.on_drift {
        cli::OnDrift::Hide => OnDrift::Hide,
        cli::OnDrift::Fail => OnDrift::Fail,
    };
    let session = Session::new(&args.server, Pins::from(pinned), on_drift);
    eprintln!(
        "mcp-lock guard: enforcing {} pinned tool(s) of {} from {lock_shown}; audit log {}",
        session.pinned_count(),
        mcp_lock::text::escape_for_terminal(&args.server),
        display_path(&audit_path, &ws.project_dir)
    );
    let setup = GuardSetup {
        session,
        audit,
        pins: watch,
        max_message_bytes: args.max_message_bytes.max(1024),
    };
    let command_shown = launch.command.clone();
    // The proxy blocks on pipes for the whole session; the thread that runs it also
    // spawns the server and lives as long as it does.
    let ended = tokio::task::spawn_blocking(move || mcp_lock::guard::run(&launch, setup))
        .await
        .context("the guard stopped unexpectedly")?
        .with_context(|| format!("cannot start the server ({command_shown})"))?;
    Ok(match ended {
        Ended::ClientClosed => ExitCode::Success,
        Ended::ServerExited(_) => ExitCode::ServerExited,
    })
}

/// The server's command: after `--`, or the config's entry.
fn launch(ws: &Workspace, args: &GuardArgs) -> anyhow::Result<(Launch, Secrets)> {
    let mut env = BTreeMap::new();
    env.insert(GUARDED.to_string(), args.server.clone());
    if let Some((command, rest)) = args.command.split_first() {
        // The client already expanded the entry's env and passed it to us; its values
        // are secrets all the same, if the config says which they are.
        let mut secrets = Secrets::default();
        if let Ok(project) = ProjectConfig::load(&ws.project_dir, ws.config.as_deref())
            && let Some(spec) = project.servers.iter().find(|s| s.name == args.server)
            && let TransportSpec::Stdio { env: vars, .. } = &spec.transport
        {
            for name in vars.keys() {
                if let Ok(value) = std::env::var(name) {
                    secrets.add(name, &value);
                }
            }
        }
        let launch = Launch {
            command: command.clone(),
            args: rest.to_vec(),
            env,
            cwd: ws.project_dir.clone(),
        };
        return Ok((launch, secrets));
    }
    if std::env::var(GUARDED).is_ok_and(|s| s == args.server) {
        anyhow::bail!(
            "the config entry for {:?} starts mcp-lock guard itself; name the real server after `--`: mcp-lock guard {} -- COMMAND ARGS",
            args.server,
            args.server
        );
    }
    let project = ws.load_config()?;
    let spec = project
        .select(std::slice::from_ref(&args.server))?
        .remove(0);
    let Some(resolved) = spec.resolve_stdio(&project.project_dir, &env_lookup)? else {
        anyhow::bail!(
            "server {:?} is a remote ({}) server; guard runs stdio servers",
            args.server,
            spec.transport_name()
        );
    };
    env.extend(resolved.env.clone());
    let launch = Launch {
        command: resolved.command.clone(),
        args: resolved.args.clone(),
        env,
        cwd: resolved.cwd.clone(),
    };
    Ok((launch, resolved.secrets))
}
