//! `mcp-lock upgrade`: move servers pinned to an npm or PyPI package to a newer
//! release, after showing what that release changes. The candidate is installed into
//! a scratch cache and listed under every profile the lock pins; its differences are
//! approved as `update`'s are, and a server whose package move is approved has its
//! config, lock and closure companion written together ([`files::replace_together`]).

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::SystemTime;

use anstyle::AnsiColor;
use anyhow::Context;
use mcp_lock::base::files::{self, Place};
use mcp_lock::base::text::{escape_cut, escape_for_terminal as esc};
use mcp_lock::hosts::wrap::{ConfigPath, set_arg};
use mcp_lock::live::check::{ProfileUse, Targets, check_servers, plan_targets, resolve_all};
use mcp_lock::records::lock::{
    Approval, FileLock, Lockfile, Pins, Reached, closures, read_lock, render_lock,
};
use mcp_lock::review::report::{SHOWN_LINE_CHARS, server_label};
use mcp_lock::review::update::{
    Proposal, add_package_proposals, apply, plan, record_approvals, screened_out,
};
use mcp_lock::review::upgrade::{
    at_version, moving, package_first, record_launch, version_arg, writable,
};
use mcp_lock::servers::config::{
    MAX_NAMED_BYTES, ProjectConfig, Resolved, ServerSpec, TransportSpec,
};
use mcp_lock::servers::package::releases::{self, Release, Want};
use mcp_lock::servers::package::{self as package, Fetcher, OwnedEntry, PackagePin};
use mcp_lock::verdict::exit_codes::ExitCode;

use super::update::{Decided, approval_needed, approvals, by_policy, decide, report_line};
use super::{Workspace, check_options, display_path, env_lookup, progress, status, warning};
use crate::cli::UpgradeArgs;

/// One server on its way to a release.
struct Move {
    server: String,
    old: PackagePin,
    /// The candidate's pin: version, integrity or files, closure.
    new: PackagePin,
    /// The entry as the config will have it (its version argument moved, when it
    /// names one), and the argument's (old, new) text for the config's edit.
    spec: ServerSpec,
    edit: Option<(String, String)>,
}

/// How a run went so far: the worst outcome wins the exit code.
#[derive(Default)]
struct Outcome {
    refused: bool,
    unreachable: bool,
    /// A candidate sent one of its server's secrets (as `update`, exit 2).
    secret: bool,
}

impl Outcome {
    fn code(&self) -> ExitCode {
        if self.secret {
            ExitCode::Usage
        } else if self.unreachable {
            ExitCode::Unverified
        } else if self.refused {
            ExitCode::Drift
        } else {
            ExitCode::Success
        }
    }
}

pub async fn run(ws: &Workspace, args: UpgradeArgs) -> anyhow::Result<ExitCode> {
    if args.to.is_some() && args.servers.len() != 1 {
        anyhow::bail!(
            "--to names one version: name exactly one server (`mcp-lock upgrade SERVER --to VERSION`)"
        );
    }
    let mut project = ws.load_config()?;
    let display = ws.lock_display();
    let root = ws.belongs_in(&ws.lock_path);
    let lock_dir = ws
        .lock_path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(&ws.project_dir)
        .to_path_buf();
    let journal = lock_dir.join(".mcp-lock").join("upgrade.journal");
    let companion = closures::companion_path(&ws.lock_path);
    // Held from reading the lock and configs to writing them: the lock's directory,
    // then each config's.
    let _held = if args.dry_run {
        Vec::new()
    } else {
        let held = lock_all(ws, &project).await?;
        files::create_dir_within(journal.parent().unwrap_or(&lock_dir), &root, 0o755)
            .with_context(|| format!("cannot create {}", journal.display()))?;
        let configs = config_files(ws, &project);
        let mut places: Vec<Place> = configs
            .iter()
            .map(|(path, root)| Place { path, root })
            .collect();
        places.push(Place {
            path: &ws.lock_path,
            root: &root,
        });
        places.push(Place {
            path: &companion,
            root: &root,
        });
        let finished = files::finish_interrupted(
            &places,
            Place {
                path: &journal,
                root: &root,
            },
        )
        .with_context(|| format!("cannot finish an interrupted upgrade beside {display}"))?;
        if finished.is_some() {
            super::notice("an interrupted upgrade was finished first");
            project = ws.load_config()?;
        }
        held
    };
    let mut policy = ws.policy(None)?;
    policy.accept.extend(args.accept.iter().copied());
    let min_age = args
        .min_release_age
        .unwrap_or(policy.upgrade.min_release_age);
    let mut lock = read_lock(&ws.lock_path)?
        .with_context(|| format!("{display} does not exist; run `mcp-lock update` first"))?;
    if let Err(why) = closures::attach(&mut lock, &ws.lock_path) {
        warning(&format!("{why}; closure changes are not shown"));
    }
    let selected = select(&project, &lock, &args.servers)?;
    if selected.is_empty() {
        status(
            "Fresh",
            AnsiColor::Green,
            "no server is pinned to an npm or PyPI package",
        );
        return Ok(ExitCode::Success);
    }
    let resolved = resolve_all(&project, &selected, &env_lookup)?;
    let fetcher = Fetcher {
        allow_redirects: args.connect.allow_redirects,
    };
    let mut outcome = Outcome::default();
    // The candidates run from a cache of this run's own, never the user's.
    let scratch = tempfile::Builder::new()
        .prefix("mcp-lock-upgrade-")
        .tempdir()
        .context("cannot create a scratch directory for the candidates")?;
    let mut moves = Vec::new();
    let mut targets = Vec::new();
    for (spec, resolved) in resolved {
        let Resolved::Stdio(stdio) = resolved else {
            continue;
        };
        let Some(old) = lock.servers.get(&spec.name).and_then(|s| s.package.clone()) else {
            continue;
        };
        let entry = OwnedEntry {
            server: spec.name.clone(),
            command: stdio.command.clone(),
            args: stdio.args.clone(),
            env: stdio.env.clone(),
            cwd: stdio.cwd.clone(),
            project_dir: lock_dir.clone(),
            guarded: spec.guarded,
            fetcher,
        };
        let Some(version) = find_candidate(&entry, &old, &args, min_age, &mut outcome).await else {
            continue;
        };
        let name = spec.name.clone();
        let wanted = at_version(&old, &version);
        let launch = package::pinned_launch(
            &stdio.command,
            &stdio.args,
            &stdio.cwd,
            &lock_dir,
            Some(&wanted),
        );
        let candidate = OwnedEntry {
            args: launch.clone(),
            ..entry
        };
        let mut new = match package::resolve_pin(&candidate.entry()).await {
            Ok(pin) => pin,
            Err(why) => {
                super::error(&format!(
                    "{}: cannot pin {version}: {}",
                    esc(&name),
                    escape_cut(&redacted(&stdio.secrets, why), SHOWN_LINE_CHARS)
                ));
                outcome.unreachable = true;
                continue;
            }
        };
        match package::resolve_closure(&candidate.entry(), &new).await {
            Ok(Some(closure)) => new.closure = Some(closure.pin()),
            Ok(None) => {}
            Err(why) => warning(&format!(
                "{}: dependency closure not pinned: {}",
                esc(&name),
                escape_cut(&redacted(&stdio.secrets, why), SHOWN_LINE_CHARS)
            )),
        }
        let mut run = stdio.clone();
        run.args = launch;
        if new.closure.is_some() {
            let scripts = policy.allow_scripts.contains(&name);
            match package::closure_launch(
                &run.command,
                &run.args,
                &run.env,
                &run.cwd,
                &lock_dir,
                &new,
                scripts,
                Some(scratch.path()),
            )
            .await
            {
                Ok(Some(launch)) => {
                    run.command = launch.program;
                    run.args = launch.args;
                    run.env.extend(launch.env);
                }
                Ok(None) => {}
                Err(e) => {
                    super::error(&format!(
                        "{}: cannot install {version} to list it: {}",
                        esc(&name),
                        escape_cut(&redacted(&stdio.secrets, e.to_string()), SHOWN_LINE_CHARS)
                    ));
                    outcome.unreachable = true;
                    continue;
                }
            }
        }
        // The lock records the entry as the config will have it; the listing runs
        // what was just installed.
        let mut next_spec = spec.clone();
        let mut edit = None;
        if let TransportSpec::Stdio {
            command,
            args: written,
            ..
        } = &mut next_spec.transport
            && let Some((at, arg)) = version_arg(command, written, &stdio.cwd, &lock_dir, &new)
        {
            edit = Some((written[at].clone(), arg.clone()));
            written[at] = arg;
        }
        // The launch is already the candidate's: the guard's pinned one is not wanted.
        let mut listed_spec = next_spec.clone();
        listed_spec.guarded = false;
        let Targets {
            targets: server_targets,
            notices,
        } = plan_targets(
            vec![(listed_spec, Resolved::Stdio(run))],
            &lock,
            &policy,
            ProfileUse::Pinned,
        )?;
        for line in &notices {
            super::notice(line);
        }
        targets.extend(server_targets);
        moves.push(Move {
            server: name,
            old,
            new,
            spec: next_spec,
            edit,
        });
    }
    if moves.is_empty() {
        return Ok(outcome.code());
    }
    let mut options = check_options(&args.connect, true, ws, &policy)?;
    options.allow_scripts = policy.allow_scripts.clone();
    let mut checked = check_servers(targets, Pins::Whole(&lock), &options, progress()).await;
    // Everything was listed: the candidates' installs go now, before any question.
    drop(scratch);
    policy.screen.context =
        std::sync::Arc::new(mcp_lock::verdict::screen::Context::of_run(&lock, &checked));
    for c in &mut checked {
        policy.evaluate(&mut c.report);
    }
    let mut plan = plan(&checked, &lock, &[], false);
    let mut failed: Vec<String> = Vec::new();
    for h in &plan.held {
        let label = server_label(&h.server, &h.profile);
        if h.secret {
            super::error(&format!("{label}: {}; it is not upgraded", esc(&h.reason)));
        } else {
            super::error(&format!(
                "{label}: the candidate could not be listed: {}: {}; it is not upgraded",
                h.verdict.as_str(),
                escape_cut(&h.reason, SHOWN_LINE_CHARS)
            ));
        }
        outcome.unreachable = true;
        failed.push(h.server.clone());
    }
    for (server, change) in &plan.unpinnable {
        warning(&format!(
            "{}/{}: cannot be pinned: {}",
            esc(server),
            esc(&change.tool),
            esc(change.problem.as_deref().unwrap_or(""))
        ));
    }
    moves.retain(|m| !failed.contains(&m.server));
    let packages: BTreeMap<String, PackagePin> = moves
        .iter()
        .map(|m| (m.server.clone(), m.new.clone()))
        .collect();
    add_package_proposals(&mut plan, &lock, &packages);
    let proposals: Vec<Proposal> = package_first(
        plan.proposals
            .into_iter()
            .filter(|p| !failed.contains(&p.server().to_string()))
            .collect(),
    );
    if proposals.is_empty() {
        return Ok(outcome.code());
    }
    for m in &moves {
        show_move(m);
    }
    let to = Destination {
        ws,
        journal: &journal,
        root: &root,
    };
    let by_policy = by_policy(&proposals, &policy);
    let decisions = match decide(&proposals, &by_policy, args.dry_run, args.yes).await? {
        Decided::DryRun => return Ok(outcome.code()),
        Decided::Each(decisions) => decisions,
        Decided::NoTerminal => {
            let kept = writable(&proposals, &by_policy);
            if !kept.is_empty() {
                let how = approvals(&proposals, &by_policy, &by_policy, false, true);
                write(&to, &project, &lock, &checked, &moves, (&kept, &how))?;
                for p in &kept {
                    report_line(p, true);
                }
            }
            approval_needed("upgrade", &by_policy, kept.len());
            return Ok(ExitCode::ApprovalNeeded);
        }
    };
    // Unattended, nothing screening fails is pinned: such a change is rejected (its
    // old pin stays, and verify reports it), a new listing is not pinned.
    let mut decisions = decisions;
    let withheld = if args.yes {
        screened_out(&proposals, &mut decisions)
    } else {
        Vec::new()
    };
    for (p, yes) in proposals.iter().zip(decisions.iter_mut()) {
        let listing = matches!(p, Proposal::PinProfile { .. } | Proposal::PinKind { .. });
        if listing
            && withheld.iter().any(|w| {
                w.from_listing && w.server == p.server() && Some(w.profile.as_str()) == p.profile()
            })
        {
            *yes = false;
        }
    }
    for w in &withheld {
        super::error(&format!(
            "{}/{} [{}] not pinned: screening found {}; review it with `mcp-lock update {}` in a terminal",
            esc(&w.server),
            esc(&w.key),
            esc(&w.profile),
            esc(&w.findings),
            esc(&w.server)
        ));
    }
    let kept = writable(&proposals, &decisions);
    if !kept.is_empty() {
        let how = approvals(&proposals, &decisions, &by_policy, args.yes, true);
        write(&to, &project, &lock, &checked, &moves, (&kept, &how))?;
    }
    let moved = moving(&proposals, &decisions);
    for m in &moves {
        if moved.contains(&m.server) {
            for (p, yes) in proposals.iter().zip(&decisions) {
                if p.server() == m.server {
                    report_line(p, *yes);
                }
            }
            // A wrapped entry runs the pin whatever its spec says.
            if m.edit.is_none() && !m.spec.guarded {
                super::notice(&format!(
                    "{}: the config names no version of its package, so it is unchanged and only the lock moves to {}; an entry not wrapped by `mcp-lock wrap` runs the registry's newest release anyway",
                    esc(&m.server),
                    esc(&m.new.to_string())
                ));
            }
        } else {
            status(
                "Unchanged",
                AnsiColor::Yellow,
                &format!(
                    "{} (its package move was rejected: its config and pins stay at {})",
                    esc(&m.server),
                    esc(&m.old.to_string())
                ),
            );
        }
    }
    if !withheld.is_empty() {
        return Ok(ExitCode::ApprovalNeeded);
    }
    Ok(outcome.code())
}

/// `text` with the entry's secret values redacted.
fn redacted(secrets: &mcp_lock::base::secrets::Secrets, mut text: String) -> String {
    secrets.redact_in_place(&mut text);
    text
}

/// The servers to upgrade: those named, each of which must be a stdio entry pinned
/// to an npm or PyPI package, or else every such server.
fn select(
    project: &ProjectConfig,
    lock: &Lockfile,
    names: &[String],
) -> anyhow::Result<Vec<ServerSpec>> {
    let registry_package = |name: &str| {
        lock.servers
            .get(name)
            .and_then(|s| s.package.as_ref())
            .is_some_and(|p| releases::pinned_version(p).is_some())
    };
    if names.is_empty() {
        return Ok(project
            .servers
            .iter()
            .filter(|s| matches!(s.transport, TransportSpec::Stdio { .. }))
            .filter(|s| registry_package(&s.name))
            .cloned()
            .collect());
    }
    let mut out = Vec::new();
    for name in names {
        let Some(spec) = project.server(name) else {
            let known: Vec<&str> = project.servers.iter().map(|s| s.name.as_str()).collect();
            anyhow::bail!(
                "no server named {:?} in the config; it has: {}",
                esc(name),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            );
        };
        let Some(pinned) = lock.servers.get(name) else {
            anyhow::bail!(
                "{} is not pinned yet; run `mcp-lock update {}` first",
                esc(name),
                esc(name)
            );
        };
        if !registry_package(name) {
            let what = match &pinned.package {
                Some(pin) => format!("it is pinned to {pin}"),
                None if matches!(spec.transport, TransportSpec::Remote { .. }) => {
                    "it is a remote server".to_string()
                }
                None => "no package is pinned for it".to_string(),
            };
            anyhow::bail!(
                "{} is not an npm or PyPI package ({}); only those can be upgraded",
                esc(name),
                esc(&what)
            );
        }
        out.push(spec.clone());
    }
    Ok(out)
}

/// The version a server moves to, after saying why there is none when there is none.
async fn find_candidate(
    entry: &OwnedEntry,
    old: &PackagePin,
    args: &UpgradeArgs,
    min_age: std::time::Duration,
    outcome: &mut Outcome,
) -> Option<String> {
    let server = esc(&entry.server);
    let pinned = releases::pinned_version(old)?;
    let source = releases::source(old, Some(&entry.entry()), &entry.project_dir)?;
    let found = match releases::fetch(&source, &entry.fetcher).await {
        Ok(found) => found,
        Err(why) => {
            super::error(&format!(
                "{server}: cannot list the releases of {}: {}",
                esc(&source.name),
                escape_cut(&why, SHOWN_LINE_CHARS)
            ));
            outcome.unreachable = true;
            return None;
        }
    };
    let want = match &args.to {
        Some(version) => Want::Exactly(version),
        None => Want::Newest,
    };
    let now = SystemTime::now();
    let outlook = match releases::candidate(&found, pinned, want, min_age, now) {
        Ok(outlook) => outlook,
        Err(refusal) => {
            super::error(&format!("{server}: {}", esc(&refusal.to_string())));
            outcome.refused = true;
            return None;
        }
    };
    let Some(candidate) = outlook.candidate else {
        let mut line = format!(
            "{server}: {} {} is the newest release past the cooldown",
            esc(&source.name),
            esc(pinned)
        );
        let held: Vec<String> = outlook
            .held_back
            .iter()
            .map(|h| format!("{} ({})", h.release.version, h.hold))
            .collect();
        if !held.is_empty() {
            line.push_str(&format!("; held back: {}", esc(&held.join(", "))));
        }
        let withdrawn: Vec<String> = outlook
            .withdrawn
            .iter()
            .map(|r| format!("{} ({})", r.version, flags(r).join(", ")))
            .collect();
        if !withdrawn.is_empty() {
            line.push_str(&format!("; passed over: {}", esc(&withdrawn.join(", "))));
        }
        status("Fresh", AnsiColor::Green, &line);
        return None;
    };
    if found.ecosystem.compare(&candidate.version, pinned) == std::cmp::Ordering::Equal {
        status(
            "Fresh",
            AnsiColor::Green,
            &format!(
                "{server}: {} {} is already pinned",
                esc(&source.name),
                esc(pinned)
            ),
        );
        return None;
    }
    if let Some(message) = &candidate.deprecated {
        warning(&format!(
            "{server}: {} {} is deprecated: {}; taken because --to names it",
            esc(&source.name),
            esc(&candidate.version),
            esc(message)
        ));
    }
    if let Some(reason) = &candidate.yanked {
        warning(&format!(
            "{server}: {} {} is yanked{}; taken because --to names it",
            esc(&source.name),
            esc(&candidate.version),
            if reason.is_empty() {
                String::new()
            } else {
                format!(": {}", esc(reason))
            }
        ));
    }
    for r in &outlook.withdrawn {
        super::notice(&format!(
            "{server}: {} {} passed over ({})",
            esc(&source.name),
            esc(&r.version),
            flags(r).join(", ")
        ));
    }
    Some(candidate.version)
}

/// "deprecated", "yanked".
fn flags(r: &Release) -> Vec<&'static str> {
    let mut out = Vec::new();
    if r.deprecated.is_some() {
        out.push("deprecated");
    }
    if r.yanked.is_some() {
        out.push("yanked");
    }
    out
}

/// The package move of one server and what its dependency closure changes.
fn show_move(m: &Move) {
    let version = |p: &PackagePin| releases::pinned_version(p).unwrap_or_default().to_string();
    let name = match &m.new.package {
        package::Package::Npm { name, .. } | package::Package::Pypi { name, .. } => name.clone(),
        _ => String::new(),
    };
    let mut text = format!(
        "{}: upgrade {} {} -> {}\n",
        esc(&m.server),
        esc(&name),
        esc(&version(&m.old)),
        esc(&version(&m.new))
    );
    match &m.edit {
        Some((old, new)) => text.push_str(&format!("    config    {} -> {}\n", esc(old), esc(new))),
        None => text.push_str("    config    unchanged (it names no version)\n"),
    }
    let old = m.old.closure.as_ref().and_then(|c| c.closure.as_ref());
    let new = m.new.closure.as_ref().and_then(|c| c.closure.as_ref());
    match (old, new) {
        (Some(old), Some(new)) => {
            let changes = package::closure::changes(old, new);
            if changes.is_empty() {
                text.push_str("    closure   unchanged\n");
            }
            for change in changes {
                text.push_str(&format!("    closure   {}\n", esc(&change.to_string())));
            }
        }
        (None, Some(new)) => text.push_str(&format!(
            "    closure   {} packages (none pinned before)\n",
            new.packages.len()
        )),
        (_, None) => text.push_str("    closure   not pinned\n"),
    }
    super::err_out(&format!("{text}\n"));
}

/// Where a run writes: the lock and its companion (belonging in `root`), and the
/// journal that makes their replacement, with the configs', one step.
struct Destination<'a> {
    ws: &'a Workspace,
    journal: &'a Path,
    root: &'a Path,
}

/// Writes the approved moves: each config's version argument, the lock and its
/// companion, in one step a crash cannot leave half done.
fn write(
    to: &Destination,
    project: &ProjectConfig,
    lock: &Lockfile,
    checked: &[mcp_lock::live::check::Checked],
    moves: &[Move],
    (kept, approved): (&[Proposal], &[(String, Approval)]),
) -> anyhow::Result<()> {
    let Destination { ws, journal, root } = *to;
    let mut next = apply(lock, checked, kept);
    let mut texts: BTreeMap<PathBuf, (String, PathBuf)> = BTreeMap::new();
    for m in moves {
        if !kept.iter().any(|p| p.server() == m.server) {
            continue;
        }
        record_launch(&mut next, &m.server, &Reached::from_spec(&m.spec));
        let Some((old, new)) = &m.edit else {
            continue;
        };
        for file in files_of(project, &m.server) {
            let shown = display_path(&file, &ws.project_dir);
            if !texts.contains_key(&file) {
                let text = files::read_regular_text(&file, MAX_NAMED_BYTES)
                    .with_context(|| format!("cannot read {shown}"))?;
                texts.insert(file.clone(), (text, ws.belongs_in(&file)));
            }
            let (text, _) = texts.get_mut(&file).expect("just read");
            let path = ConfigPath {
                shown: &shown,
                file: &file,
                project_dir: &ws.project_dir,
            };
            *text = set_arg(text, &path, &m.server, old, new)
                .with_context(|| format!("cannot move {} in {shown}", esc(&m.server)))?;
        }
    }
    record_approvals(lock, &mut next, approved);
    let lock_text = render_lock(&next);
    let companion = closures::companion_path(&ws.lock_path);
    let held = closures::companion_closures(&ws.lock_path, &next);
    let companion_text = (!held.is_empty()).then(|| closures::render(&held));
    let mut files: Vec<(Place, &[u8], u32)> = texts
        .iter()
        .map(|(path, (text, root))| (Place { path, root }, text.as_bytes(), mode_of(path)))
        .collect();
    files.push((
        Place {
            path: &ws.lock_path,
            root,
        },
        lock_text.as_bytes(),
        mode_of(&ws.lock_path),
    ));
    if let Some(text) = &companion_text {
        files.push((
            Place {
                path: &companion,
                root,
            },
            text.as_bytes(),
            mode_of(&companion),
        ));
    }
    files::replace_together(
        &files,
        Place {
            path: journal,
            root,
        },
    )
    .with_context(|| format!("cannot write {}", ws.lock_display()))
}

/// A file's permission bits, or 0644 for a new one.
fn mode_of(path: &Path) -> u32 {
    use std::os::unix::fs::PermissionsExt;
    std::fs::metadata(path)
        .map(|m| m.permissions().mode() & 0o7777)
        .unwrap_or(0o644)
}

/// The config files that define `server` (and use the entry), once each.
fn files_of(project: &ProjectConfig, server: &str) -> Vec<PathBuf> {
    let mut out: Vec<PathBuf> = Vec::new();
    for found in &project.found {
        if found.name == server && found.skipped.is_none() && !out.contains(&found.file) {
            out.push(found.file.clone());
        }
    }
    out
}

/// Every config file read, with the directory it belongs in.
fn config_files(ws: &Workspace, project: &ProjectConfig) -> Vec<(PathBuf, PathBuf)> {
    project
        .files
        .iter()
        .map(|f| (f.clone(), ws.belongs_in(f)))
        .collect()
}

/// Takes the lock on the directory of the lock file and of each config file, in
/// that order, each directory once.
async fn lock_all(ws: &Workspace, project: &ProjectConfig) -> anyhow::Result<Vec<FileLock>> {
    let mut paths = vec![(ws.lock_path.clone(), ws.belongs_in(&ws.lock_path))];
    for file in &project.files {
        paths.push((file.clone(), ws.belongs_in(file)));
    }
    let mut seen: Vec<PathBuf> = Vec::new();
    let mut held = Vec::new();
    for (path, root) in paths {
        let shown = display_path(&path, &ws.project_dir);
        let target =
            files::landing(&path, &root).with_context(|| format!("cannot write {shown}"))?;
        let dir = files::parent_of(&target);
        if seen.contains(&dir) {
            continue;
        }
        seen.push(dir);
        let lock = tokio::task::spawn_blocking(move || {
            FileLock::acquire(&path, &root, || {
                status(
                    "Blocking",
                    AnsiColor::Cyan,
                    &format!("waiting for file lock on {shown} (another mcp-lock run is writing beside it)"),
                )
            })
        })
        .await?
        .context("cannot lock a directory to write in")?;
        held.push(lock);
    }
    Ok(held)
}
