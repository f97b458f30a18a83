//! `mcp-lock guard`: start one stdio server behind the enforcing proxy.

use std::collections::BTreeMap;

use anyhow::Context;
use mcp_lock::base::secrets::Secrets;
use mcp_lock::live::guard::pins::PinWatch;
use mcp_lock::live::guard::{AuditLog, Ended, GuardSetup, Launch, OnDrift, Session};
use mcp_lock::records::lock::{PinnedServer, Reached, read_lock, read_lock_server};
use mcp_lock::servers::config::{
    Expanded, ProjectConfig, RemoteKind, Resolved, ServerSpec, ToolFilter, TransportSpec,
    match_expansion, match_expansion_with,
};
use mcp_lock::verdict::exit_codes::ExitCode;

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
        // `mcp-lock update NAME` pins only a server the config defines.
        let defined = ProjectConfig::load_files(&ws.project_dir, &ws.configs, &Default::default())
            .is_ok_and(|p| p.servers.iter().any(|s| s.name == args.server));
        if defined {
            anyhow::bail!(
                "server {:?} is not pinned in {lock_shown}; run `mcp-lock update {}` first",
                args.server,
                args.server
            );
        }
        // Only on this error path is the whole lock read, for the names it pins.
        let lock = read_lock(&ws.lock_path)?.unwrap_or_default();
        let pinned: Vec<&str> = lock.servers.keys().map(String::as_str).collect();
        anyhow::bail!(
            "server {:?} is neither pinned in {lock_shown} nor defined in the config; add it to the config and run `mcp-lock update {}`, or name a pinned server ({})",
            args.server,
            args.server,
            if pinned.is_empty() {
                "none yet".to_string()
            } else {
                pinned.join(", ")
            }
        );
    };
    // The packages of a pinned closure, from the companion file beside the lock.
    let mut pinned = pinned;
    if pinned.package.as_ref().is_some_and(|p| p.closure.is_some()) {
        let closures = mcp_lock::records::lock::closures::read(
            &mcp_lock::records::lock::closures::companion_path(&ws.lock_path),
        )
        .map_err(anyhow::Error::msg)?;
        mcp_lock::records::lock::closures::attach_server(&args.server, &mut pinned, &closures);
    }
    // The policy verify uses, so the guard serves what verify passes.
    let mut policy = ws.policy(None)?;
    // Who signs the log's checkpoints: the user's own settings, never the project's.
    let signer =
        mcp_lock::records::audit::signing::user_signer(&env_lookup).map_err(anyhow::Error::msg)?;
    if !policy.ignored.is_empty() {
        eprintln!(
            "mcp-lock guard: warning: {}: {} ignored: a project's file cannot name a command or key for mcp-lock to use; set it in {}",
            ws.policy_shown(),
            policy.ignored.join(" and "),
            user_settings_shown()
        );
    }
    policy.exact |= args.exact;
    let exact = policy.exact;
    let Launched {
        mut launch,
        secrets,
        mut disagreements,
        moved,
        new_origin,
        filter,
    } = launch(ws, &args, &pinned)?;
    // What verify would fail of this launch, the guard does not start: the same check
    // (without registry look-ups) and the same policy rule decide both. A remote
    // entry on an origin the lock does not pin is never connected to, whatever the
    // policy (verify does not contact it either): its headers and login token would
    // go there.
    let approve = if new_origin { " --approve-origin" } else { "" };
    let moved = moved.map(|line| {
        match policy.action(mcp_lock::verdict::policy::Rule::LaunchChanged) {
            mcp_lock::verdict::policy::Action::Fail => Err(format!(
                "{line} (launch-changed, which `mcp-lock verify` fails); review it and run `mcp-lock update {}{approve}`",
                args.server
            )),
            _ if new_origin => Err(format!(
                "{line} (launch-changed); an origin the lock does not pin gets no connection and none of the entry's headers or login token: review it and run `mcp-lock update {}{approve}`",
                args.server
            )),
            _ => Ok(line),
        }
    });
    // The private copy a pinned script runs from, open until the server has started.
    let mut script_copy = None;
    let refused = match moved {
        Some(Err(reason)) => Err(reason),
        moved => {
            disagreements.extend(moved.and_then(Result::ok));
            launch_check(&launch, ws.lock_dir(), pinned.package.as_ref(), &policy).await
        }
    };
    let refused = match refused {
        Err(reason) => Some(format!("refusing to start: {reason}")),
        Ok(warning) => {
            disagreements.extend(warning);
            let scripts = args.allow_scripts || policy.allow_scripts.contains(&args.server);
            let closure = match pinned.package.as_ref() {
                Some(pin) => {
                    mcp_lock::servers::package::closure_launch(
                        &launch.command,
                        &launch.args,
                        &launch.env,
                        &launch.cwd,
                        ws.lock_dir(),
                        pin,
                        scripts,
                        None,
                    )
                    .await
                }
                None => Ok(None),
            };
            match closure {
                Err(e) => Some(format!("refusing to start: {e}")),
                // The pinned closure is what starts, from the closure cache.
                Ok(Some(run)) => {
                    if let Some(why) = &run.rebuilt {
                        disagreements.push(format!(
                            "the cached closure did not match what was installed ({why}); it was installed again from the pins"
                        ));
                    }
                    if !run.scripts_skipped.is_empty() {
                        disagreements.push(format!(
                            "install scripts not run for {} (allow them with `--allow-scripts` in the entry's guard options, or `[closure] allow-scripts = [{:?}]` in mcp-lock.toml)",
                            run.scripts_skipped.join(", "),
                            args.server
                        ));
                    }
                    launch.command = run.program;
                    launch.args = run.args;
                    launch.env.extend(run.env);
                    None
                }
                // A pinned script runs from the very bytes checked against its pin;
                // a package at its pinned version.
                Ok(None) => match pinned
                    .package
                    .as_ref()
                    .map(|pin| {
                        mcp_lock::servers::package::script_launch(
                            &launch.command,
                            &launch.args,
                            &launch.cwd,
                            pin,
                            policy
                                .package_action(mcp_lock::servers::package::PackageStatus::Changed)
                                != mcp_lock::verdict::policy::Action::Fail,
                        )
                    })
                    .transpose()
                {
                    Err(reason) => Some(format!("refusing to start: {reason}")),
                    Ok(Some(Some(run))) => {
                        launch.args = run.args;
                        script_copy = Some(run.copy);
                        None
                    }
                    Ok(_) => {
                        launch.args = mcp_lock::servers::package::pinned_launch(
                            &launch.command,
                            &launch.args,
                            &launch.cwd,
                            ws.lock_dir(),
                            pinned.package.as_ref(),
                        );
                        None
                    }
                },
            }
        }
    };
    // The default log belongs beside the lock; one given is where the user said.
    let (audit_path, audit_root) = match &args.audit_log {
        Some(path) => (path.clone(), mcp_lock::base::files::parent_of(path)),
        None => {
            let lock_dir = mcp_lock::base::files::parent_of(&ws.lock_path);
            (lock_dir.join(".mcp-lock").join("audit.jsonl"), lock_dir)
        }
    };
    let mut audit =
        AuditLog::open(&audit_path, &audit_root, &args.server, secrets).with_context(|| {
            format!(
                "cannot open the audit log {}",
                display_path(&audit_path, &ws.project_dir)
            )
        })?;
    audit.configure(policy.audit.clone(), signer);
    let started: mcp_lock::live::guard::audit::Members = vec![
        ("decision", serde_json::json!("started")),
        (
            "log_format",
            serde_json::json!(mcp_lock::records::audit::format::LOG_FORMAT),
        ),
        ("version", serde_json::json!(env!("CARGO_PKG_VERSION"))),
        ("pid", serde_json::json!(std::process::id())),
        ("command", serde_json::json!(launch.command)),
        ("args", serde_json::json!(launch.args)),
    ];
    audit.record("session_started", started).with_context(|| {
        format!(
            "cannot write the audit log {}",
            display_path(&audit_path, &ws.project_dir)
        )
    })?;
    for line in &disagreements {
        // A refusal is the one line shown; what led to it is in the audit log.
        if refused.is_none() {
            eprintln!(
                "mcp-lock guard: warning: {}",
                mcp_lock::base::text::escape_for_terminal(line)
            );
        }
        audit
            .record(
                "launch_disagrees",
                vec![("message", serde_json::Value::String(line.clone()))],
            )
            .with_context(|| {
                format!(
                    "cannot write the audit log {}",
                    display_path(&audit_path, &ws.project_dir)
                )
            })?;
    }
    if let Some(reason) = refused {
        audit
            .record(
                "launch_refused",
                vec![("message", serde_json::Value::String(reason.clone()))],
            )
            .with_context(|| {
                format!(
                    "cannot write the audit log {}",
                    display_path(&audit_path, &ws.project_dir)
                )
            })?;
        // The session ends here: its checkpoint, as at any other end.
        let _ = audit.checkpoint("session_end");
        super::error(&format!("mcp-lock guard: {reason}"));
        return Ok(ExitCode::Drift);
    }
    let on_drift = match args.on_drift {
        cli::OnDrift::Hide => OnDrift::Hide,
        cli::OnDrift::Fail => OnDrift::Fail,
    };
    let profiles: Vec<String> = pinned.profiles.keys().cloned().collect();
    policy.screen.context = std::sync::Arc::new(screen_context(ws, &args.server, &pinned));
    let session = Session::new(&args.server, Some(pinned), policy, on_drift)
        .with_filter(filter)
        .with_state_dir(ws.lock_dir().to_path_buf());
    if !super::quiet() {
        eprintln!(
            "mcp-lock guard: enforcing {} of {} (client profiles pinned: {}{}) from {lock_shown}; audit log {}",
            mcp_lock::base::text::count(session.pinned_count(), "pinned tool"),
            mcp_lock::base::text::escape_for_terminal(&args.server),
            mcp_lock::base::text::escape_for_terminal(&profiles.join(", ")),
            if exact { "; exact mode" } else { "" },
            display_path(&audit_path, &ws.project_dir)
        );
    }
    let setup = GuardSetup {
        session,
        audit,
        pins: watch,
        max_message_bytes: args.max_message_bytes,
    };
    let command_shown = launch.command.clone();
    // The proxy blocks on pipes for the whole session; the thread that runs it also
    // spawns the server and lives as long as it does.
    let ended = tokio::task::spawn_blocking(move || {
        let ended = mcp_lock::live::guard::run(&launch, setup);
        drop(script_copy);
        ended
    })
    .await
    .context("the guard stopped unexpectedly")?
    .with_context(|| format!("cannot start the server ({command_shown})"))?;
    Ok(match ended {
        Ended::ClientClosed => ExitCode::Success,
        Ended::ServerExited(_) => ExitCode::ServerExited,
    })
}

/// What verify would say of `launch`: its package check against the pin (local
/// scripts hashed, registries not asked) judged by the policy's `package-*` rule.
/// `Err`: why the guard must not start it (verify fails it, or cannot check a pin the
/// lock records as unresolved); `Ok(Some)`: a warning to show and audit.
async fn launch_check(
    launch: &Launch,
    project_dir: &std::path::Path,
    pin: Option<&mcp_lock::servers::package::PackagePin>,
    policy: &mcp_lock::verdict::policy::Policy,
) -> Result<Option<String>, String> {
    use mcp_lock::servers::package::{Entry, Lookups, PackageStatus};
    use mcp_lock::verdict::policy::Action;
    let entry = Entry {
        command: &launch.command,
        args: &launch.args,
        env: &launch.env,
        cwd: &launch.cwd,
        project_dir,
        guarded: true,
        // Registries are not asked here (offline), so redirects never arise.
        fetcher: mcp_lock::servers::package::Fetcher::default(),
    };
    let check = mcp_lock::servers::package::check(&entry, pin, Lookups::Offline).await;
    let rule = match check.status {
        PackageStatus::Unverifiable => "unverifiable",
        PackageStatus::Changed => "package-changed",
        PackageStatus::ClosureUnpinned => "closure-unpinned",
        _ => "package-floating",
    };
    let action = match check.status {
        PackageStatus::Unverifiable => Action::Fail,
        status => policy.package_action(status),
    };
    match action {
        // What `update` cannot fix is not sent to `update`: the message says what can.
        Action::Fail if check.status == PackageStatus::ClosureUnpinned => Err(format!(
            "{} ({rule}, which `mcp-lock verify` fails)",
            check.message
        )),
        Action::Fail => Err(format!(
            "{} ({rule}, which `mcp-lock verify` fails); review it and run `mcp-lock update`",
            check.message
        )),
        Action::Warn => Ok(Some(format!("{} ({rule}, warn)", check.message))),
        Action::Allow => Ok(None),
    }
}

/// What the guard starts, the values it must hide, and where its entry disagrees
/// with the config or the lock.
struct Launched {
    launch: Launch,
    secrets: Secrets,
    /// One line each, for stderr and the audit log.
    disagreements: Vec<String>,
    /// The line saying it may reach another server than the pinned one
    /// (`launch-changed`), when it may.
    moved: Option<String>,
    /// Whether it is a remote entry whose URL is on another origin than the lock pins.
    new_origin: bool,
    /// The tools the entry's host hides from its agent.
    filter: ToolFilter,
}

/// The server's command: after `--`, or the config's entry.
fn launch(ws: &Workspace, args: &GuardArgs, pinned: &PinnedServer) -> anyhow::Result<Launched> {
    let mut env = BTreeMap::new();
    env.insert(GUARDED.to_string(), args.server.clone());
    let name = &args.server;
    if let Some((command, rest)) = args.command.split_first() {
        // A client launching a wrapped entry expanded its variables itself: the guard
        // sees only values. The config entry says which of them are secrets.
        let mut secrets = Secrets::default();
        let mut disagreements = Vec::new();
        let mut filter = ToolFilter::default();
        let mut moved = None;
        // What is launched is the command after `--`, whatever the config says; a
        // word the client expanded from the pinned one reads as the pinned one.
        let launched = match pinned.reached() {
            Reached::Stdio {
                command: c,
                args: a,
                code_env,
                ..
            } => {
                let as_pinned = |template: &String, actual: &String| {
                    if match_expansion(template, actual).is_some() {
                        template.clone()
                    } else {
                        actual.clone()
                    }
                };
                Reached::Stdio {
                    command: as_pinned(c, command),
                    args: if a.len() == rest.len() {
                        a.iter().zip(rest).map(|(t, v)| as_pinned(t, v)).collect()
                    } else {
                        rest.to_vec()
                    },
                    env: Vec::new(),
                    // The client expanded the entry's env into the guard's own
                    // environment, where it cannot be told from the client's: the
                    // config's entry is compared with the pins below.
                    code_env: code_env.clone(),
                }
            }
            Reached::Remote { .. } => Reached::Stdio {
                command: command.clone(),
                args: rest.to_vec(),
                env: Vec::new(),
                code_env: Vec::new(),
            },
        };
        if mcp_lock::verdict::drift::launch_moved(pinned.reached(), &launched) {
            moved = Some(format!(
                "the lock pinned {name:?} launched as `{}`, but the guard was given `{}`, which may be another server",
                pinned.reached(),
                launched
            ));
        }
        match ProjectConfig::load_files(&ws.project_dir, &ws.configs, &Default::default()) {
            Err(e) => disagreements.push(format!(
                "cannot read the config that defines {name:?} ({e}); only the values the lock names can be hidden, and the launch cannot be compared with the lock"
            )),
            Ok(project) => match project.servers.iter().find(|s| &s.name == name) {
                None => disagreements.push(format!(
                    "no config read defines {name:?} (read: {}); its secrets cannot be known, and the launch cannot be compared with the lock",
                    shown_files(ws, &project)
                )),
                Some(spec) => {
                    filter = spec.filter.clone();
                    let launched: Vec<&str> = std::iter::once(command.as_str())
                        .chain(rest.iter().map(String::as_str))
                        .collect();
                    secrets = entry_secrets(ws, &project, spec, &launched, &mut disagreements);
                    compare_with_lock(spec, pinned, &mut disagreements, &mut moved);
                }
            },
        }
        let launch = Launch {
            command: command.clone(),
            args: rest.to_vec(),
            env,
            // The client started the guard with the environment it gives the server
            // (its envFile read, Codex's inheritance applied): passed on as it is.
            inherit: None,
            cwd: ws.project_dir.clone(),
        };
        return Ok(Launched {
            launch,
            secrets,
            disagreements,
            moved,
            new_origin: false,
            filter,
        });
    }
    if std::env::var(GUARDED).is_ok_and(|s| &s == name) {
        anyhow::bail!(
            "the config entry for {name:?} starts mcp-lock guard itself; name the real server after `--`: mcp-lock guard {name} -- COMMAND ARGS"
        );
    }
    let project = ws.load_config()?;
    let spec = project.select(std::slice::from_ref(name))?.remove(0);
    let Some(resolved) = spec.resolve_stdio(&project.project_dir, &env_lookup)? else {
        return remote_launch(ws, args, &spec, pinned, env);
    };
    let (mut disagreements, mut moved) = (Vec::new(), None);
    compare_with_lock(&spec, pinned, &mut disagreements, &mut moved);
    env.extend(resolved.env.clone());
    let launch = Launch {
        command: resolved.command.clone(),
        args: resolved.args.clone(),
        env,
        // What the listing connection inherits, so the server the agent gets sees
        // what verify's did.
        inherit: resolved.inherit.clone(),
        cwd: resolved.cwd.clone(),
    };
    Ok(Launched {
        launch,
        secrets: resolved.secrets,
        disagreements,
        moved,
        new_origin: false,
        filter: spec.filter.clone(),
    })
}

/// A remote server's launch: this binary's `remote-bridge`, which speaks the pinned
/// transport to the server and stdio to the proxy. Its headers (and a login's token)
/// are read by the bridge from the config and never pass through here.
fn remote_launch(
    ws: &Workspace,
    args: &GuardArgs,
    spec: &ServerSpec,
    pinned: &PinnedServer,
    env: BTreeMap<String, String>,
) -> anyhow::Result<Launched> {
    let project = ws.load_config()?;
    let resolved = spec.resolve(&project.project_dir, &env_lookup)?;
    let (mut disagreements, mut moved) = (Vec::new(), None);
    compare_with_lock(spec, pinned, &mut disagreements, &mut moved);
    let exe = std::env::current_exe()
        .context("cannot find the mcp-lock binary to run the remote bridge")?;
    let mut bridge_args = Vec::new();
    if let Some(client) = &ws.user {
        bridge_args.push("--user".to_string());
        bridge_args.push(client.clone());
    } else if let Some(config) = ws.configs.first() {
        bridge_args.push("--config".to_string());
        bridge_args.push(config.display().to_string());
    }
    bridge_args.extend([
        "remote-bridge".to_string(),
        args.server.clone(),
        "--transport".to_string(),
        pinned.reached().transport_name().to_string(),
        "--max-message-bytes".to_string(),
        args.max_message_bytes.to_string(),
    ]);
    let mut versions: Vec<&str> = pinned
        .profiles
        .values()
        .map(|p| p.protocol_version.as_str())
        .collect();
    versions.sort_unstable();
    versions.dedup();
    for version in versions {
        bridge_args.push("--pinned-version".to_string());
        bridge_args.push(version.to_string());
    }
    Ok(Launched {
        launch: Launch {
            command: exe.display().to_string(),
            args: bridge_args,
            env,
            inherit: None,
            cwd: ws.project_dir.clone(),
        },
        secrets: resolved.secrets().clone(),
        disagreements,
        moved,
        new_origin: mcp_lock::live::check::new_origin(spec, pinned.reached()).is_some(),
        filter: spec.filter.clone(),
    })
}

/// `mcp-lock remote-bridge SERVER`: what [`remote_launch`] starts.
pub async fn remote_bridge(
    ws: &Workspace,
    args: cli::RemoteBridgeArgs,
) -> anyhow::Result<ExitCode> {
    let project = ws.load_config()?;
    let spec = project
        .select(std::slice::from_ref(&args.server))?
        .remove(0);
    let resolved = spec.resolve_to_contact(&project.project_dir, &env_lookup)?;
    let Resolved::Remote(mut remote) = resolved else {
        anyhow::bail!("server {:?} is not a remote server", args.server);
    };
    match args.transport.as_deref() {
        Some("sse") => remote.kind = RemoteKind::Sse,
        Some("streamable-http") => remote.kind = RemoteKind::StreamableHttp,
        _ => {}
    }
    let secrets = remote.secrets.clone();
    let options = mcp_lock::servers::client::ClientOptions {
        max_message_bytes: args.max_message_bytes,
        ..Default::default()
    };
    match mcp_lock::servers::client::bridge::run(remote, options, args.pinned_versions).await {
        Ok(()) => Ok(ExitCode::Success),
        Err(e) => {
            eprintln!("mcp-lock guard: {}: {}", args.server, secrets.redact(&e));
            Ok(ExitCode::ServerExited)
        }
    }
}

/// The secrets of a wrapped entry: the values its variables took, read back from the
/// command the client launched (and from the environment the client gave the guard),
/// and its credential-like literal `env` values.
fn entry_secrets(
    ws: &Workspace,
    project: &ProjectConfig,
    spec: &ServerSpec,
    launched: &[&str],
    disagreements: &mut Vec<String>,
) -> Secrets {
    let mut secrets = Secrets::default();
    // What the guard's own environment can expand (the client passes the entry's env).
    if let Ok(resolved) = spec.resolve(&project.project_dir, &env_lookup) {
        secrets.extend(resolved.secrets());
    }
    let TransportSpec::Stdio {
        command, args, env, ..
    } = &spec.transport
    else {
        disagreements.push(format!(
            "the config defines {:?} as a remote ({}) server, but the guard was given a command to start",
            spec.name,
            spec.transport_name()
        ));
        return secrets;
    };
    for (key, written) in env {
        let Ok(actual) = std::env::var(key) else {
            continue;
        };
        let field = format!("env.{key}");
        let values = match_expansion_with(&spec.vars, &field, written, &actual);
        if !written.contains("${") || values.as_ref().is_some_and(|v| v.is_empty()) {
            // As literal as written, or every reference kept as written by the host.
            secrets.add_literal_env(key, written);
        } else if let Some(values) = values {
            values.iter().for_each(|e| e.record(&mut secrets));
        } else {
            // The variable's value is unknown: the whole value stands for it.
            secrets.add_variable(key, &actual);
        }
    }
    let templates: Vec<&str> = std::iter::once(command.as_str())
        .chain(args.iter().map(String::as_str))
        .collect();
    let matched: Option<Vec<Expanded>> = (templates.len() == launched.len())
        .then(|| {
            templates
                .iter()
                .zip(launched)
                .enumerate()
                .map(|(i, (t, a))| {
                    let field = match i {
                        0 => "command".to_string(),
                        i => format!("args[{}]", i - 1),
                    };
                    match_expansion_with(&spec.vars, &field, t, a)
                })
                .collect::<Option<Vec<_>>>()
                .map(|v| v.concat())
        })
        .flatten();
    match matched {
        Some(values) => values.iter().for_each(|e| e.record(&mut secrets)),
        None => {
            let file = project
                .files
                .first()
                .map(|f| display_path(f, &ws.project_dir))
                .unwrap_or_default();
            disagreements.push(format!(
                "the command after `--` is not what {file} launches for {:?} ({}); secrets in its arguments cannot be told apart, so every argument that is not a literal word of the entry is hidden",
                spec.name,
                templates.join(" ")
            ));
            // Arguments cannot be paired with the entry's: where the entry uses a
            // variable at all, hide every launched argument it does not spell out.
            if templates.iter().any(|t| t.contains("${")) {
                for a in launched {
                    if !templates.iter().any(|t| !t.contains("${") && t == a) {
                        secrets.add(&spec.name, a);
                    }
                }
            }
        }
    }
    secrets
}

/// A line when the lock pinned the server launched another way than the config says:
/// in `moved` when it may be another server (`launch-changed`), else a disagreement.
fn compare_with_lock(
    spec: &ServerSpec,
    pinned: &PinnedServer,
    disagreements: &mut Vec<String>,
    moved: &mut Option<String>,
) {
    let now = Reached::from_spec(spec);
    // An http entry pinned as legacy HTTP+SSE, or with a login token, is the same launch.
    let pinned_launch = match pinned.reached().without_auth() {
        Reached::Remote {
            url,
            headers,
            oauth_issuer,
            ..
        } if matches!(now, Reached::Remote { .. }) => Reached::Remote {
            kind: now.transport_name().to_string(),
            url,
            headers,
            oauth_issuer,
        },
        other => other,
    };
    if now == pinned_launch {
        return;
    }
    if mcp_lock::verdict::drift::launch_moved(&pinned_launch, &now) {
        moved.get_or_insert(format!(
            "the lock pinned {:?} launched as `{}`, but the config now launches `{}`, which may be another server",
            spec.name,
            pinned.reached(),
            now
        ));
    } else {
        disagreements.push(format!(
            "the lock pinned {:?} launched as `{}`, but the config now launches `{}`; the pins may be of another server: run `mcp-lock verify {}`",
            spec.name,
            pinned.reached(),
            now,
            spec.name
        ));
    }
}

fn shown_files(ws: &Workspace, project: &ProjectConfig) -> String {
    project
        .files
        .iter()
        .map(|f| display_path(f, &ws.project_dir))
        .collect::<Vec<_>>()
        .join(", ")
}

/// Where the user's own settings are, as the warning names them.
fn user_settings_shown() -> String {
    match mcp_lock::records::audit::signing::user_settings_path(&env_lookup) {
        Some(path) => path.display().to_string(),
        None => format!(
            "$XDG_CONFIG_HOME/mcp-lock/{}",
            mcp_lock::records::audit::signing::USER_SETTINGS_FILE
        ),
    }
}

/// Locks up to this size are read whole by the guard for the other servers' tool
/// names (shadowing); a larger one is not, and only this server's names are known.
const SCREEN_CONTEXT_LOCK_BYTES: u64 = 4 * 1024 * 1024;

/// What screening compares this server's definitions with: its own pinned tool
/// names, and every other server's the lock pins (a lock of reasonable size).
fn screen_context(
    ws: &Workspace,
    server: &str,
    pinned: &mcp_lock::records::lock::PinnedServer,
) -> mcp_lock::verdict::screen::Context {
    let mut ctx = mcp_lock::verdict::screen::Context::default();
    ctx.home = Some(server.to_string());
    let small =
        std::fs::metadata(&ws.lock_path).is_ok_and(|m| m.len() <= SCREEN_CONTEXT_LOCK_BYTES);
    if small && let Ok(Some(lock)) = read_lock(&ws.lock_path) {
        ctx.add_lock(&lock);
    }
    ctx.add(server, pinned.tool_names().into_iter().map(str::to_string));
    ctx
}
