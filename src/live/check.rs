//! Checking many servers at once: resolve, fetch concurrently (bounded), compare.

use std::borrow::Cow;
use std::sync::Arc;

use tokio::sync::Semaphore;

use crate::base::secrets::Secrets;
use crate::contract::surface::Surface;
use crate::records::lock::{LockedServer, Lockfile, PinnedServer, Pins, Reached};
use crate::records::profile::{Profile, UnknownProfile};
use crate::servers::client::{
    ClientOptions, Fetched, Outcome, PROTOCOL_VERSIONS, ProtocolChoice, StatusSink, fetch_remote,
    fetch_stdio,
};
use crate::servers::config::{ConfigError, ProjectConfig, RemoteKind, Resolved, ServerSpec};
use crate::verdict::drift::{Pinned, ServerReport, compare};
use crate::verdict::policy::Policy;

mod judging;
pub use judging::*;

/// How to check.
#[derive(Debug, Clone)]
pub struct CheckOptions {
    pub client: ClientOptions,
    /// Servers started at once (each until it answered the handshake).
    pub jobs: usize,
    /// Send the clientInfo and capabilities the lock recorded and ask for the protocol
    /// version and transport it pinned (verify), rather than this build's defaults and
    /// the newest protocol (update).
    pub identity_from_lock: bool,
    /// The project directory: the lock's directory, which `roots/list` is answered
    /// with for a profile that declares roots.
    pub project_dir: std::path::PathBuf,
    /// Ask for exactly this protocol version under every profile (`update --protocol`).
    pub protocol: Option<String>,
    /// Whether package checks ask the registries (`verify --offline` does not).
    pub packages: crate::servers::package::Lookups,
    /// The pinned dependency closures (the lock's companion file), by server: a
    /// wrapped entry is listed from its closure, as the guard runs it.
    pub closures: std::sync::Arc<
        std::collections::BTreeMap<
            String,
            std::sync::Arc<crate::servers::package::closure::Closure>,
        >,
    >,
    /// The servers whose closures install with their install scripts run.
    pub allow_scripts: std::collections::BTreeSet<String>,
    /// Contact a remote entry whose URL is on another origin than the lock pins
    /// (`update --approve-origin`). Otherwise it is not contacted at all: its headers
    /// and login token go to no origin a person has not approved.
    pub contact_new_origins: bool,
}

/// How many servers are contacted at once by default: twice the cores this process
/// may use, at least 4. A server start (node, Python) is mostly CPU for its first
/// seconds: more at once than the machine can run only makes every start, and so its
/// handshake, slower (benches/real_project.py measures it).
pub fn default_jobs() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZeroUsize::get);
    (2 * cores).max(4)
}

impl Default for CheckOptions {
    fn default() -> Self {
        CheckOptions {
            client: ClientOptions::default(),
            jobs: default_jobs(),
            identity_from_lock: true,
            project_dir: std::path::PathBuf::from("."),
            protocol: None,
            packages: crate::servers::package::Lookups::Online,
            closures: Default::default(),
            allow_scripts: Default::default(),
            contact_new_origins: false,
        }
    }
}

impl CheckOptions {
    /// `pin` with its closure's packages, when the companion file holds them.
    pub fn with_closure(
        &self,
        server: &str,
        pin: &crate::servers::package::PackagePin,
    ) -> crate::servers::package::PackagePin {
        let mut pin = pin.clone();
        if let Some(c) = pin.closure.as_mut()
            && c.closure.is_none()
            && let Some(closure) = self.closures.get(server).filter(|k| k.hash() == c.hash)
        {
            c.closure = Some(closure.clone());
        }
        pin
    }
}

/// One server to list under one client profile.
#[derive(Debug, Clone)]
pub struct Target {
    pub spec: ServerSpec,
    pub resolved: Resolved,
    pub profile: Profile,
    /// The kinds besides tools that are listed.
    pub surface: Surface,
}

/// The targets of a run, and what to tell the user about the profiles chosen.
#[derive(Debug, Clone, Default)]
pub struct Targets {
    pub targets: Vec<Target>,
    /// One line each: a profile the settings ask for that the lock does not pin yet,
    /// or a host without a built-in profile.
    pub notices: Vec<String>,
}

/// Which profiles a run lists each server under.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ProfileUse<'a> {
    /// What the lock pinned (verify): each pinned profile, as the lock recorded it. A
    /// server the lock does not pin is listed under the profiles the settings select.
    Pinned,
    /// What the settings select (update).
    Selected,
    /// One profile for this run (`--client`).
    Only(&'a str),
}

/// Pairs every resolved server with the profiles `using` picks.
pub fn plan_targets(
    resolved: Vec<(ServerSpec, Resolved)>,
    lock: &Lockfile,
    policy: &Policy,
    using: ProfileUse<'_>,
) -> Result<Targets, UnknownProfile> {
    let settings = &policy.profiles;
    let mut out = Targets::default();
    for (spec, resolved) in resolved {
        let pins = lock.servers.get(&spec.name);
        let client = match using {
            ProfileUse::Only(name) => Some(name),
            _ => None,
        };
        let selection = settings.for_server(&spec.name, &spec.hosts, client)?;
        for host in &selection.unprofiled {
            out.notices.push(format!(
                "server {:?} comes from {}'s config, which has no built-in client profile; it is listed as `bare` (name a profile in mcp-lock.toml to change that)",
                spec.name,
                host.as_str()
            ));
        }
        let profiles: Vec<Profile> = match (using, pins) {
            (ProfileUse::Pinned, Some(pins)) => {
                let missing: Vec<&str> = selection
                    .profiles
                    .iter()
                    .map(|p| p.name.as_str())
                    .filter(|name| !pins.profiles.contains_key(*name))
                    .collect();
                if !missing.is_empty() {
                    out.notices.push(format!(
                        "server {:?}: client profile {} {} not pinned yet (the lock pins {}); `mcp-lock update {}` pins {}",
                        spec.name,
                        missing.join(", "),
                        if missing.len() == 1 { "is" } else { "are" },
                        pins.profiles.keys().cloned().collect::<Vec<_>>().join(", "),
                        spec.name,
                        if missing.len() == 1 { "it" } else { "them" },
                    ));
                }
                pins.profiles.values().map(Profile::from_pin).collect()
            }
            _ => selection.profiles,
        };
        let surface = policy.surface_for(&spec.name);
        for profile in profiles {
            let mut resolved = resolved.clone();
            if let Resolved::Stdio(stdio) = &mut resolved {
                stdio.inherit = inherit_under(&spec, &profile.name);
            }
            out.targets.push(Target {
                spec: spec.clone(),
                resolved,
                profile,
                surface,
            });
        }
    }
    Ok(out)
}

/// What a stdio server inherits when listed under `profile`: as the host whose
/// built-in profile it is starts it, when that host's file defines the entry; else as
/// the host of the first file that does.
pub fn inherit_under(
    spec: &ServerSpec,
    profile: &str,
) -> Option<crate::servers::config::environ::Inherit> {
    let environ = spec.environ.as_ref()?;
    let host = spec
        .hosts
        .iter()
        .find(|h| crate::records::profile::for_host(**h) == Some(profile))
        .or(spec.hosts.first());
    match host {
        Some(host) => environ.inherit_of(*host),
        None => environ.inherit.clone(),
    }
}

/// One server's fetch under one profile and its comparison with the lock.
#[derive(Debug, Clone)]
pub struct Checked {
    pub spec: ServerSpec,
    /// The profile it was listed under.
    pub profile: Profile,
    /// What the server said, as it said it (only the error texts redacted): pins are
    /// made from it, so anything shown from it must be redacted with `secrets`.
    pub fetched: Fetched,
    /// The comparison, this server's secrets redacted.
    pub report: ServerReport,
    /// This server's secret values.
    pub secrets: Secrets,
}

/// Told what each server is doing and when it finishes, for progress display.
pub trait ProgressSink: Send + Sync {
    /// A server entered a new state ("initializing", "listing page 2"). `server` is
    /// the server's name and the client profile it is listed under: `name [profile]`.
    fn state(&self, server: &str, state: &str);
    /// A server is done.
    fn finished(&self, report: &ServerReport);
}

pub type Progress = Arc<dyn ProgressSink>;

/// A progress sink that shows nothing, for hosts with no display.
pub fn no_progress() -> Progress {
    struct Silent;
    impl ProgressSink for Silent {
        fn state(&self, _: &str, _: &str) {}
        fn finished(&self, _: &ServerReport) {}
    }
    Arc::new(Silent)
}

/// Expands every selected server's variables up front, so a config error stops the
/// run before any server starts; a remote entry's `headersHelper` is run here.
pub fn resolve_all(
    project: &ProjectConfig,
    specs: &[ServerSpec],
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Result<Vec<(ServerSpec, Resolved)>, ConfigError> {
    specs
        .iter()
        .map(|spec| {
            let resolved = spec.resolve_to_contact(&project.project_dir, lookup)?;
            Ok((spec.clone(), resolved))
        })
        .collect()
}

/// Drops `value` on a thread of its own: freeing every listed definition of a large
/// listing takes a tenth of a verify, and nothing waits for it. Dropped here if no
/// thread can be started.
fn drop_elsewhere<T: Send + 'static>(value: T) {
    let _ = std::thread::Builder::new()
        .name("mcp-lock-drop".into())
        .spawn(move || drop(value));
}

/// Fetches and compares every target, at most `options.jobs` starting at a time (a
/// server's turn ends once it answered the handshake and is being listed; its
/// timeouts run from its own start). Results come back in the order given.
pub async fn check_servers(
    targets: Vec<Target>,
    pins: Pins<'_>,
    options: &CheckOptions,
    progress: Progress,
) -> Vec<Checked> {
    let lock = pins.header();
    let permits = Arc::new(Semaphore::new(options.jobs.max(1)));
    let mut handles = Vec::new();
    for Target {
        spec,
        resolved,
        profile,
        surface,
    } in targets
    {
        let server_pins = lock.servers.get(&spec.name).cloned();
        let exact = server_pins
            .as_ref()
            .and_then(|s| s.profiles.get(&profile.name))
            .cloned();
        let mut client = options.client.clone();
        profile.apply(&mut client, &options.project_dir);
        client.client_info =
            crate::records::profile::client_info_for(&client.client_info, &spec.name);
        client.surface = surface;
        // A pinned version this build does not speak (edited by hand, or written by a
        // newer mcp-lock) cannot be asked for: the server is not contacted.
        let unknown_version = exact
            .as_ref()
            .filter(|pin| {
                options.identity_from_lock
                    && !PROTOCOL_VERSIONS.contains(&pin.protocol_version.as_str())
            })
            .map(|pin| {
                format!(
                    "the lock pins protocol version {:?}, which this mcp-lock does not speak ({}); restore the pinned value, upgrade mcp-lock, or run `mcp-lock update {}` to pin it again",
                    pin.protocol_version,
                    PROTOCOL_VERSIONS.join(", "),
                    spec.name
                )
            });
        if options.identity_from_lock
            && let Some(pin) = &exact
        {
            client.protocol = ProtocolChoice::Exactly(pin.protocol_version.clone());
        }
        if let Some(version) = &options.protocol {
            client.protocol = ProtocolChoice::Exactly(version.clone());
        }
        // Without the lock's identity (update), the transport is found again.
        let pinned_transport = match server_pins.as_ref().map(|s| s.reached()) {
            Some(Reached::Remote { kind, .. }) if options.identity_from_lock => {
                RemoteKind::parse(kind)
            }
            _ => None,
        };
        // A remote entry moved to another origin is not contacted: a pull request
        // that edits the URL must not get the entry's headers or login token.
        let new_origin = match (&resolved, &server_pins) {
            (Resolved::Remote(_), Some(pins)) if !options.contact_new_origins => {
                let pinned = exact.as_ref().map_or(pins.reached(), |p| &p.reached);
                new_origin(&spec, pinned)
            }
            _ => None,
        };
        // Nor is a remote entry the lock does not pin at all, when checking against
        // the lock (verify, check-call, a host's start-up check): a pull request that
        // adds one must not get the headers it names either. `update` contacts it.
        let unpinned_remote = (options.identity_from_lock
            && !options.contact_new_origins
            && server_pins.is_none()
            && matches!(resolved, Resolved::Remote(_)))
        .then(|| {
            format!(
                "not pinned yet, and not contacted: verify sends the headers and login token of no remote server the lock does not pin; review the entry, then run `mcp-lock update {}` to pin it",
                spec.name
            )
        });
        // A wrapped entry runs what the guard launches: the pinned closure from the
        // closure cache, or the pinned package version.
        let mut resolved = resolved;
        let mut closure_pin = None;
        if options.identity_from_lock
            && spec.guarded
            && let Resolved::Stdio(stdio) = &mut resolved
            && let Some(pin) = server_pins.as_ref().and_then(|s| s.package.as_ref())
            && matches!(
                pin.package,
                crate::servers::package::Package::Npm { .. }
                    | crate::servers::package::Package::Pypi { .. }
            )
        {
            if pin.closure.is_some() {
                closure_pin = Some(options.with_closure(&spec.name, pin));
            } else {
                stdio.args = crate::servers::package::pinned_launch(
                    &stdio.command,
                    &stdio.args,
                    &stdio.cwd,
                    &options.project_dir,
                    Some(pin),
                );
            }
        }
        let scripts = spec.allow_scripts || options.allow_scripts.contains(&spec.name);
        let project_dir = options.project_dir.clone();
        let status = progress.clone();
        let name = format!("{} [{}]", spec.name, profile.name);
        // A server's turn ends when it has answered the handshake and is being
        // listed: starting is what takes the cores, so the next server starts then.
        let turn: Arc<std::sync::Mutex<Option<tokio::sync::OwnedSemaphorePermit>>> = Arc::default();
        let held = turn.clone();
        client.status = StatusSink::new(move |state| {
            if state.starts_with("listing") {
                held.lock().unwrap_or_else(|e| e.into_inner()).take();
            }
            status.state(&name, state)
        });
        let permits = permits.clone();
        let progress = progress.clone();
        let arriving = pins.arriving();
        handles.push(tokio::spawn(async move {
            let permit = permits.acquire_owned().await.expect("never closed");
            *turn.lock().unwrap_or_else(|e| e.into_inner()) = Some(permit);
            let mut resolved = resolved;
            let mut install_error = None;
            if let (Some(pin), Resolved::Stdio(stdio)) = (&closure_pin, &mut resolved) {
                match crate::servers::package::closure_launch(
                    &stdio.command,
                    &stdio.args,
                    &stdio.env,
                    &stdio.cwd,
                    &project_dir,
                    pin,
                    scripts,
                    None,
                )
                .await
                {
                    Ok(Some(run)) => {
                        stdio.command = run.program;
                        stdio.args = run.args;
                        stdio.env.extend(run.env);
                    }
                    Ok(None) => {
                        stdio.args = crate::servers::package::pinned_launch(
                            &stdio.command,
                            &stdio.args,
                            &stdio.cwd,
                            &project_dir,
                            Some(pin),
                        );
                    }
                    Err(e) => {
                        install_error = Some(format!("the guard would refuse to start it: {e}"))
                    }
                }
            }
            let not_contacted = new_origin
                .as_ref()
                .map(|(_, why)| why.clone())
                .or(unpinned_remote.clone());
            let mut fetched = match (
                &resolved,
                not_contacted.or(unknown_version).or(install_error),
            ) {
                (_, Some(error)) => Fetched::unverifiable(error),
                (Resolved::Stdio(stdio), None) => fetch_stdio(stdio, &client).await,
                (Resolved::Remote(remote), None) => {
                    fetch_remote(remote, &client, pinned_transport).await
                }
            };
            // The listing is compared with the definitions, which may have been
            // read meanwhile: the header the server was launched from has none. A
            // lock that does not read is the caller's error to report.
            let arrived = match &arriving {
                None => None,
                Some(whole) => Some(whole.get().await?),
            };
            let server_pins = match &arrived {
                None => server_pins.as_ref(),
                Some(whole) => whole.servers.get(&spec.name),
            };
            let mut report = judge(&spec, &profile.name, server_pins, &mut fetched);
            if let Some(why) = unpinned_remote {
                // Not pinned is drift, as for a server listed; nothing was listed.
                report.verdict = crate::verdict::drift::Verdict::Stale;
                report.error = Some(why);
            }
            report
                .server_changes
                .extend(new_origin.map(|(change, _)| change));
            report.redact(resolved.secrets());
            let checked = Checked {
                spec,
                profile,
                fetched,
                report,
                secrets: resolved.secrets().clone(),
            };
            progress.finished(&checked.report);
            Some(checked)
        }));
    }
    let mut results = Vec::with_capacity(handles.len());
    for handle in handles {
        match handle.await {
            Ok(checked) => results.extend(checked),
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    results
}

/// The `launch-changed` change and why the entry is not contacted, when a remote
/// entry's URL is on another origin (scheme, host, port) than `pinned` (or the lock
/// pinned a stdio launch).
pub fn new_origin(
    spec: &ServerSpec,
    pinned: &Reached,
) -> Option<(crate::verdict::drift::ServerChange, String)> {
    let now = Reached::from_spec(spec);
    let Reached::Remote { url, .. } = &now else {
        return None;
    };
    if !crate::verdict::drift::launch_moved(pinned, &now) {
        return None;
    }
    let change = crate::verdict::drift::launch_change(pinned, &now)?;
    let was = match pinned {
        Reached::Remote { url, .. } => format!("at {}", show_origin(url)),
        stdio => format!("as `{stdio}`"),
    };
    let why = format!(
        "not contacted: the lock pins it {was}, the config now names {}; its headers and login token are sent to no origin the lock does not pin: review the move, then run `mcp-lock update {} --approve-origin`",
        show_origin(url),
        spec.name
    );
    Some((change, why))
}

/// `scheme://host:port` of a URL, as [`crate::verdict::drift::origin`] reads it.
fn show_origin(url: &str) -> String {
    let (scheme, host, port) = crate::verdict::drift::origin(url);
    if scheme.is_empty() {
        return format!("{url:?}");
    }
    format!("{scheme}://{host}:{port}")
}

/// The servers `names` asks for (all when empty): the config's entries to contact,
/// and the pinned servers the config no longer has, which are reported as gone rather
/// than as unknown. A name in neither is an unknown server.
pub fn select_with_lock(
    project: &ProjectConfig,
    lock: &Lockfile,
    names: &[String],
) -> Result<(Vec<ServerSpec>, Vec<String>), ConfigError> {
    let defined = |name: &str| project.server(name).is_some();
    if names.is_empty() {
        let gone = lock
            .servers
            .keys()
            .filter(|name| !defined(name))
            .cloned()
            .collect();
        return Ok((project.servers.clone(), gone));
    }
    let mut in_config = Vec::new();
    let mut gone = Vec::new();
    for name in names {
        if defined(name) {
            in_config.push(name.clone());
        } else if lock.servers.contains_key(name) {
            if !gone.contains(name) {
                gone.push(name.clone());
            }
        } else {
            // Says it is unknown, and what the config defines.
            project.select(std::slice::from_ref(name))?;
        }
    }
    // An empty list would select every server.
    let specs = if in_config.is_empty() {
        Vec::new()
    } else {
        project.select(&in_config)?
    };
    Ok((specs, gone))
}

/// Takes the tools a host's filter hides out of a listing, and returns their names.
fn filter_listing(
    filter: &crate::servers::config::ToolFilter,
    fetched: &mut Fetched,
) -> Vec<String> {
    if filter.is_empty() {
        return Vec::new();
    }
    let listing = match &mut fetched.outcome {
        Outcome::Complete { listing, .. } | Outcome::Incomplete { listing, .. } => listing,
        Outcome::Unverifiable { .. } => return Vec::new(),
    };
    let mut hidden = Vec::new();
    listing.tools.retain(|tool| match &tool.name {
        Some(name) if !filter.shows(name) => {
            hidden.push(name.clone());
            false
        }
        _ => true,
    });
    hidden.sort();
    hidden.dedup();
    hidden
}

/// A listing that names a tool more than once says nothing certain about that tool:
/// which definition an agent acts on is up to the agent (the guard refuses such a
/// listing). It is an error of the listing, which is then incomplete.
fn refuse_repeated_names(fetched: &mut Fetched) {
    let Outcome::Complete { listing, .. } = &fetched.outcome else {
        return;
    };
    let mut seen = std::collections::BTreeSet::new();
    let names = listing.tools.iter().filter_map(|t| t.name.as_deref());
    let Some(repeated) = names.clone().find(|name| !seen.insert(*name)) else {
        return;
    };
    let copies = names.filter(|name| *name == repeated).count();
    let error = format!(
        "the listing names tool {repeated:?} {copies} times; a server must list each tool once"
    );
    let taken = std::mem::replace(
        &mut fetched.outcome,
        Outcome::Unverifiable {
            error: String::new(),
        },
    );
    if let Outcome::Complete { session, listing } = taken {
        fetched.outcome = Outcome::Incomplete {
            session,
            listing,
            error,
        };
    }
}

/// The stdio entries among `targets`, once per server, for the package checks.
pub fn package_entries(
    targets: &[Target],
    options: &CheckOptions,
) -> Vec<crate::servers::package::OwnedEntry> {
    let mut seen = std::collections::BTreeSet::new();
    targets
        .iter()
        .filter(|t| seen.insert(t.spec.name.clone()))
        .filter_map(|t| match &t.resolved {
            Resolved::Stdio(stdio) => Some(crate::servers::package::OwnedEntry {
                server: t.spec.name.clone(),
                command: stdio.command.clone(),
                args: stdio.args.clone(),
                env: stdio.env.clone(),
                cwd: stdio.cwd.clone(),
                project_dir: options.project_dir.clone(),
                guarded: t.spec.guarded,
                fetcher: crate::servers::package::Fetcher {
                    allow_redirects: options.client.allow_cross_origin_redirects,
                },
            }),
            Resolved::Remote(_) => None,
        })
        .collect()
}

/// Puts a server's package check on its report (a pinned server's only: one the lock
/// does not pin is "not pinned" as a whole). A changed package makes it stale even
/// when every tool is unchanged.
pub fn attach_package(
    report: &mut ServerReport,
    packages: &std::collections::BTreeMap<String, crate::servers::package::PackageCheck>,
) {
    if !report.pinned {
        return;
    }
    if let Some(check) = packages.get(&report.name) {
        if check.status.moved() && report.verdict == crate::verdict::drift::Verdict::Converged {
            report.verdict = crate::verdict::drift::Verdict::Stale;
        }
        report.package = Some(check.clone());
    }
}

/// Verifies selected servers against the lock and lets the policy judge every
/// change: what `mcp-lock verify` and an agent host's start-up check both run. The
/// pinned servers named in `gone` (see [`select_with_lock`]) have left the config and
/// are reported as removed.
pub async fn verify_servers(
    pins: Pins<'_>,
    targets: Vec<Target>,
    gone: &[String],
    options: &CheckOptions,
    policy: &Policy,
    progress: Progress,
) -> Vec<ServerReport> {
    let secrets: std::collections::BTreeMap<String, Secrets> = targets
        .iter()
        .map(|t| (t.spec.name.clone(), t.resolved.secrets().clone()))
        .collect();
    let lock = pins.header();
    let entries = package_entries(&targets, options)
        .into_iter()
        .map(|e| {
            let pin = lock
                .servers
                .get(&e.server)
                .and_then(|s| s.package.as_ref())
                .map(|p| options.with_closure(&e.server, p));
            (e, pin)
        })
        .collect();
    let (checked, packages) = tokio::join!(
        check_servers(targets, pins, options, progress),
        crate::servers::package::check_all(entries, options.packages)
    );
    // A registry URL or message can carry a value from the entry's variables.
    let mut packages = packages;
    for (name, check) in &mut packages {
        if let Some(secrets) = secrets.get(name) {
            check.redact(secrets);
        }
    }
    // A server gone from the config is reported with its definitions, and the tool
    // rules judge what is pinned: both need the definitions.
    let arrived = match pins.arriving() {
        Some(whole) if !gone.is_empty() || !policy.rules.is_empty() => whole.get().await,
        _ => None,
    };
    let whole = arrived.as_deref().unwrap_or(lock);
    // Shadowing is judged against the other servers' tools: pinned and listed now.
    let mut policy = policy.clone();
    policy.screen.context = Arc::new(crate::verdict::screen::Context::of_run(whole, &checked));
    let policy = &policy;
    let mut reports = Vec::with_capacity(checked.len());
    let mut listings = Vec::with_capacity(checked.len());
    for mut c in checked {
        mark_denied(
            &mut c.report,
            &policy.rules,
            &c.fetched,
            whole.servers.get(&c.spec.name),
        );
        reports.push(c.report);
        listings.push(c.fetched);
    }
    drop_elsewhere(listings);
    for report in &mut reports {
        attach_package(report, &packages);
    }
    for name in gone {
        if let Some(pinned) = whole.servers.get(name) {
            for profile in pinned.profiles.values() {
                reports.push(ServerReport::dropped_from_config(
                    profile,
                    profile.reached.transport_name(),
                ));
            }
        }
    }
    reports.sort_by(|a, b| (&a.name, &a.profile).cmp(&(&b.name, &b.profile)));
    for report in &mut reports {
        policy.evaluate(report);
    }
    reports
}

/// The screen's context for a run is built here, beside [`Checked`], so the screen
/// itself never depends on how servers are checked.
impl crate::verdict::screen::Context {
    /// Every tool name the lock pins, and every tool name each checked server listed
    /// now: what `verify`, `update` and `scan` screen against.
    pub fn of_run(lock: &Lockfile, checked: &[Checked]) -> Self {
        let mut ctx = Self::from_lock(lock);
        for c in checked {
            if let crate::servers::client::Outcome::Complete { listing, .. } = &c.fetched.outcome {
                ctx.add(
                    &c.spec.name,
                    listing.tools.iter().filter_map(|t| t.name.clone()),
                );
            }
        }
        ctx
    }
}
