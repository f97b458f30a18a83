//! One function per subcommand, and what they share.

mod audit;
mod check_call;
mod check_listing;
mod diff;
mod guard;
mod hash;
pub mod hook;
mod login;
mod outdated;
mod profiles;
mod progress;
mod scan;
mod servers;
mod update;
mod upgrade;
mod verify;
mod wrap;

use std::io::IsTerminal;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use anstyle::{AnsiColor, Style};
use anyhow::Context;
use mcp_lock::base::text::escape_for_terminal;
use mcp_lock::live::check::{CheckOptions, ProfileUse, Progress};
use mcp_lock::servers::client::ClientOptions;
use mcp_lock::servers::config::ProjectConfig;
use mcp_lock::verdict::exit_codes::ExitCode;

use mcp_lock::records::lock::{Lockfile, read_lock_with_lines, read_unchecked};
use mcp_lock::review::report::{
    LockContext, render_github, render_human, render_junit, render_markdown, render_sarif,
    render_summary,
};
use mcp_lock::verdict::drift::{ServerReport, Verdict};
use mcp_lock::verdict::policy::{Action, POLICY_FILE, Policy};

use crate::cli::{Cli, Command, ConnectArgs, Format, PolicyArgs};

/// `--quiet`: progress, status and summary lines are not printed.
static QUIET: AtomicBool = AtomicBool::new(false);

/// Whether `--quiet` was given.
pub fn quiet() -> bool {
    QUIET.load(Ordering::Relaxed)
}

pub async fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    QUIET.store(cli.quiet, Ordering::Relaxed);
    let project_dir = std::env::current_dir().context("cannot read the current directory")?;
    let user_config = match &cli.user {
        Some(client) => {
            let found = mcp_lock::servers::config::user::user_config(
                client,
                mcp_lock::servers::config::user::Platform::current(),
                &|v| std::env::var(v).ok(),
                &|p| p.is_file(),
            )
            .with_context(|| {
                format!("cannot tell where {client} keeps its config: HOME is not set")
            })?;
            if let Some(note) = &found.note {
                notice(note);
            }
            let mut paths = found.paths;
            if client == "amazon-q" {
                let shadowed =
                    mcp_lock::servers::config::amazonq_shadowed_agents(&project_dir, &paths);
                for (file, name, project) in &shadowed {
                    notice(&format!(
                        "Amazon Q: agent {name:?} of {} is not read: the project's {} has the same name, and Amazon Q uses the workspace's",
                        file.display(),
                        display_path(project, &project_dir)
                    ));
                }
                paths.retain(|p| !shadowed.iter().any(|(f, ..)| f == p));
                if paths.is_empty() {
                    anyhow::bail!(
                        "every user-level Amazon Q agent is shadowed by a project agent of the same name; run mcp-lock without --user to read the project's"
                    );
                }
            }
            if paths.len() > 1 {
                let shown: Vec<String> = paths.iter().map(|p| p.display().to_string()).collect();
                notice(&format!("{client}: reading {}", shown.join(", ")));
            }
            paths
        }
        None => Vec::new(),
    };
    // Servers from a user-level file are personal: pinned in a lock of the user's own
    // (one per project), never in the project's committed mcp.lock, unless --lock says.
    let personal_config = cli.user.is_some()
        || cli.config.as_deref().is_some_and(|p| {
            mcp_lock::servers::config::is_user_file(p, &|v| std::env::var(v).ok())
        });
    let personal = personal_config && cli.lock.is_none();
    let lock_path = match &cli.lock {
        Some(path) => path.clone(),
        None if personal => user_lock_path(&project_dir)?,
        None => project_dir.join("mcp.lock"),
    };
    // The project's own mcp-lock.toml still applies to its personal servers.
    let policy_path = cli.policy.clone().or_else(|| {
        let project_policy = project_dir.join(POLICY_FILE);
        (personal && project_policy.is_file()).then_some(project_policy)
    });
    let ctx = Workspace {
        project_dir: project_dir.clone(),
        configs: cli.config.clone().into_iter().chain(user_config).collect(),
        user: cli.user.clone(),
        lock_path,
        policy_path,
        personal,
    };
    match cli.command {
        Command::Update(args) => update::run(&ctx, args).await,
        Command::Upgrade(args) => upgrade::run(&ctx, args).await,
        Command::Verify(args) => verify::run(&ctx, args).await,
        Command::Diff(args) => diff::run(&ctx, args).await,
        Command::Scan(args) => scan::run(&ctx, args).await,
        Command::Hash(args) => hash::run(args),
        Command::Guard(args) => guard::run(&ctx, args).await,
        Command::Wrap(args) => wrap::run(&ctx, args, wrap::Direction::Wrap),
        Command::Unwrap(args) => wrap::run(&ctx, args, wrap::Direction::Unwrap),
        Command::CheckCall(args) => check_call::run(&ctx, args).await,
        Command::CheckListing(args) => check_listing::run(&ctx, args),
        Command::Hook { host } => hook::run(&ctx, host).await,
        Command::Servers(args) => servers::run(&ctx, args),
        Command::Profiles(args) => profiles::run(&ctx, args),
        Command::Outdated(args) => outdated::run(&ctx, args).await,
        Command::Login(args) => login::login(&ctx, args).await,
        Command::Logout(args) => login::logout(&ctx, args),
        Command::RemoteBridge(args) => guard::remote_bridge(&ctx, args).await,
        Command::Audit(command) => audit::run(&ctx, command),
        Command::Completions { shell } => {
            write_stdout(completions(shell).as_bytes(), "the completion script")
        }
        Command::Man { subcommand } => {
            write_stdout(&man_page(subcommand.as_deref())?, "the man page")
        }
    }
}

/// Writes generated text to stdout; `mcp-lock man | head` is no error.
fn write_stdout(bytes: &[u8], what: &str) -> anyhow::Result<ExitCode> {
    use std::io::Write;
    match std::io::stdout().lock().write_all(bytes) {
        Err(e) if e.kind() != std::io::ErrorKind::BrokenPipe => {
            Err(anyhow::Error::new(e).context(format!("cannot write {what}")))
        }
        _ => Ok(ExitCode::Success),
    }
}

/// The roff man page of mcp-lock, or of one subcommand (`mcp-lock-verify(1)`).
fn man_page(subcommand: Option<&str>) -> anyhow::Result<Vec<u8>> {
    use clap::CommandFactory;
    let mut command = Cli::command();
    command.build();
    let page = match subcommand {
        None => command,
        Some(name) => {
            let Some(sub) = command.find_subcommand(name) else {
                let names: Vec<&str> = command
                    .get_subcommands()
                    .map(|c| c.get_name())
                    .filter(|n| *n != "help")
                    .collect();
                anyhow::bail!(
                    "no subcommand named {:?}; the pages are: {}",
                    escape_for_terminal(name),
                    names.join(", ")
                );
            };
            // clap names are 'static; the process prints one page and ends.
            let full: &'static str =
                Box::leak(format!("mcp-lock-{}", sub.get_name()).into_boxed_str());
            sub.clone()
                .name(full)
                .bin_name(full)
                .version(env!("CARGO_PKG_VERSION"))
        }
    };
    let mut out = Vec::new();
    clap_mangen::Man::new(page)
        .render(&mut out)
        .context("cannot render the man page")?;
    Ok(out)
}

/// The completion script for `shell`.
fn completions(shell: clap_complete::Shell) -> String {
    use clap::CommandFactory;
    const BIN: &str = "mcp-lock";
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut Cli::command(), BIN, &mut script);
    let script = String::from_utf8_lossy(&script).into_owned();
    if shell != clap_complete::Shell::Bash {
        return script;
    }
    // clap_complete's bash script dispatches on `mcp__lock__subcmd__verify` but labels
    // the case `mcp__subcmd__lock__subcmd__verify)` (the hyphen of the binary name is
    // turned into a separator there), so no flag after a subcommand would complete.
    let dispatched = format!("{}__subcmd__", BIN.replace('-', "__"));
    let labelled = format!("{}__subcmd__", BIN.replace('-', "__subcmd__"));
    script.replace(&labelled, &dispatched)
}

/// A prompt was answered with Ctrl-C: the run ends as interrupted (exit 130), not as
/// an error.
#[derive(Debug, thiserror::Error)]
#[error("interrupted")]
pub struct Interrupted;

pub use progress::hide as hide_progress;

/// What every command that touches servers needs.
pub struct Workspace {
    pub project_dir: PathBuf,
    /// `--config`, or the user-level files of `--user` (none: discover the project's).
    pub configs: Vec<PathBuf>,
    /// `--user CLIENT`.
    pub user: Option<String>,
    pub lock_path: PathBuf,
    /// `--policy`; otherwise mcp-lock.toml beside the lock, if present.
    pub policy_path: Option<PathBuf>,
    /// The lock is the user's own lock for this project (servers from user-level
    /// files): the project directory, not the lock's, is what roots name.
    pub personal: bool,
}

/// The user's own lock for a project's personal servers:
/// `$XDG_CONFIG_HOME/mcp-lock/locks/<directory name>-<hash of its path>.lock`.
fn user_lock_path(project_dir: &Path) -> anyhow::Result<PathBuf> {
    let config_home = user_config_home()
        .context("cannot tell where the user's lock goes: neither XDG_CONFIG_HOME nor HOME is set; pass --lock PATH")?;
    let key = mcp_lock::servers::config::project_key(project_dir);
    let name = project_dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| "root".into());
    let hash = &mcp_lock::contract::hash::sha256_hex(key.as_bytes())[..12];
    Ok(config_home
        .join("mcp-lock")
        .join("locks")
        .join(format!("{name}-{hash}.lock")))
}

/// `$XDG_CONFIG_HOME`, else `~/.config`.
fn user_config_home() -> Option<PathBuf> {
    std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".config")))
}

impl Workspace {
    /// The directory a file mcp-lock writes at `path` must stay in once its symlinks
    /// are followed (see [`mcp_lock::base::files`]): the project for a file in it, mcp-lock's
    /// config directory for the user's locks, home for a client's user-level config,
    /// and otherwise the directory the path names. A repository cannot point a file
    /// of its own at the user's.
    fn belongs_in(&self, path: &Path) -> PathBuf {
        use mcp_lock::base::files::normalize;
        let path = normalize(&self.project_dir.join(path));
        let project = normalize(&self.project_dir);
        if path.starts_with(&project) {
            return project;
        }
        if let Some(own) = user_config_home().map(|c| normalize(&c.join("mcp-lock")))
            && path.starts_with(&own)
        {
            return own;
        }
        let home = std::env::var_os("HOME")
            .filter(|h| !h.is_empty())
            .map(|h| normalize(Path::new(&h)));
        if let Some(home) = home
            && path.starts_with(&home)
            && mcp_lock::servers::config::is_user_file(&path, &|v| std::env::var(v).ok())
        {
            return home;
        }
        mcp_lock::base::files::parent_of(&path)
    }

    fn load_config(&self) -> anyhow::Result<ProjectConfig> {
        let prefer = self.policy(None)?.prefer;
        let project = ProjectConfig::load_files(&self.project_dir, &self.configs, &prefer)?;
        for message in &project.warnings {
            warning(message);
        }
        Ok(project)
    }

    /// The project directory as profiles see it: the lock's directory (the project's
    /// own for a user's lock of its personal servers).
    fn lock_dir(&self) -> &Path {
        if self.personal {
            return &self.project_dir;
        }
        self.lock_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            .unwrap_or(&self.project_dir)
    }

    /// Which profiles a run lists each server under: `--client`, else `default`.
    fn profile_use<'a>(client: &'a Option<String>, default: ProfileUse<'a>) -> ProfileUse<'a> {
        match client {
            Some(name) => ProfileUse::Only(name),
            None => default,
        }
    }

    /// The lock path as the user would write it.
    fn lock_display(&self) -> String {
        display_path(&self.lock_path, &self.project_dir)
    }

    /// The policy file: given with --policy, else mcp-lock.toml beside the lock.
    fn policy_file(&self) -> PathBuf {
        match &self.policy_path {
            Some(path) => path.clone(),
            None => self
                .lock_path
                .parent()
                .unwrap_or(Path::new("."))
                .join(POLICY_FILE),
        }
    }

    /// The policy file as the user would write it.
    fn policy_shown(&self) -> String {
        display_path(&self.policy_file(), &self.project_dir)
    }

    /// The policy: the file (given, or beside the lock), then the flags over it. A
    /// file named with --policy must exist.
    fn policy(&self, flags: Option<&PolicyArgs>) -> anyhow::Result<Policy> {
        let path = self.policy_file();
        let policy = match Policy::load(&path)? {
            Some(policy) => policy,
            None if self.policy_path.is_some() => anyhow::bail!(
                "policy file {} not found",
                display_path(&path, &self.project_dir)
            ),
            None => Policy::default(),
        };
        let mut policy = policy;
        // Rules name their file as the user would write it.
        for layer in &mut policy.rules.layers {
            layer.source = self.policy_shown();
        }
        let mut policy = policy.with_user_rules(&env_lookup)?;
        if let Some(flags) = flags {
            let lists = [
                ("--fail", &flags.fail),
                ("--warn", &flags.warn),
                ("--allow", &flags.allow),
            ];
            for (i, (a, x)) in lists.iter().enumerate() {
                for (b, y) in &lists[i + 1..] {
                    if let Some(rule) = x.iter().find(|r| y.contains(r)) {
                        anyhow::bail!(
                            "{rule} is given to both {a} and {b}; give each class one action"
                        );
                    }
                }
            }
            policy.set(&flags.fail, Action::Fail);
            policy.set(&flags.warn, Action::Warn);
            policy.set(&flags.allow, Action::Allow);
            policy.exact |= flags.exact;
        }
        Ok(policy)
    }

    /// A lock and what the reports need to point into it, read once; a missing
    /// file is an error naming it, with `hint` after.
    fn read_lock_for_reports(
        &self,
        path: &Path,
        hint: &str,
    ) -> anyhow::Result<(Lockfile, LockContext)> {
        let shown = display_path(path, &self.project_dir);
        let Some((lock, lines)) = read_lock_with_lines(path)? else {
            anyhow::bail!("{shown} not found{hint}");
        };
        let ctx = LockContext::with_lines(&shown, lines, &lock);
        Ok((lock, ctx))
    }

    /// [`Workspace::read_lock_for_reports`] of two locks, each read as TOML before
    /// either is checked: neither's text, nor the first's parsed definitions, is held
    /// while the second is read.
    fn read_two_locks_for_reports(
        &self,
        paths: [&Path; 2],
    ) -> anyhow::Result<[(Lockfile, LockContext); 2]> {
        let mut unchecked = Vec::with_capacity(2);
        for path in paths {
            let shown = display_path(path, &self.project_dir);
            let Some(lock) = read_unchecked(path)? else {
                anyhow::bail!("{shown} not found");
            };
            unchecked.push((shown, lock));
        }
        let mut read = unchecked.into_iter().map(|(shown, lock)| {
            let (lock, lines) = lock.check()?;
            let ctx = LockContext::with_lines(&shown, lines, &lock);
            anyhow::Ok((lock, ctx))
        });
        let old = read.next().expect("two locks")?;
        let new = read.next().expect("two locks")?;
        Ok([old, new])
    }
}

/// Prints reports in the chosen format; `verb` starts the closing line when all
/// converged.
fn print_reports(
    reports: &[ServerReport],
    format: Format,
    ctx: &LockContext,
    code: ExitCode,
    verb: &str,
) {
    print_reports_observed(reports, format, ctx, code, verb, &[]);
}

/// [`print_reports`], with the handshakes hosts last sent where they differ from the
/// lock's: a member of the JSON report, a note before a human one.
fn print_reports_observed(
    reports: &[ServerReport],
    format: Format,
    ctx: &LockContext,
    code: ExitCode,
    verb: &str,
    observed: &[mcp_lock::records::observed::Observed],
) {
    if format == Format::Human {
        for o in observed {
            notice(&o.message);
        }
    }
    match format {
        Format::Json => out(&format!(
            "{}\n",
            mcp_lock::review::report::render_json_observed(reports, &ctx.path, code, observed)
        )),
        Format::Sarif => out(&format!("{}\n", render_sarif(reports, ctx))),
        Format::Junit => out(&render_junit(reports, ctx)),
        Format::Github => out(&render_github(reports, ctx)),
        Format::Markdown => out(&render_markdown(reports, ctx, code)),
        Format::Human => {
            out(&render_human(reports));
            let summary = render_summary(reports);
            match code {
                // The closing line is a summary: --quiet leaves it out, the report
                // above says the same.
                _ if quiet() && code == ExitCode::Success => {}
                ExitCode::Success if reports.iter().all(|r| r.verdict == Verdict::Converged) => {
                    status(verb, AnsiColor::Green, &summary)
                }
                ExitCode::Success => warning(&format!("{summary} (within the policy)")),
                _ => error(&summary),
            }
        }
    }
}

/// The recorded handshakes (`.mcp-lock/handshakes.json` beside the lock) that differ
/// from what `lock` pinned, for these servers (all with none named). A state file
/// that cannot be read is one note, and counts as none.
fn observed_handshakes(
    ws: &Workspace,
    lock: &mcp_lock::records::lock::Lockfile,
    servers: &[String],
) -> Vec<mcp_lock::records::observed::Observed> {
    match mcp_lock::records::observed::read(ws.lock_dir()) {
        Ok(seen) => mcp_lock::records::observed::differing(lock, &seen, servers),
        Err(why) => {
            notice(&why);
            Vec::new()
        }
    }
}

fn display_path(path: &Path, base: &Path) -> String {
    match path.strip_prefix(base) {
        // Relative to the root is no shorter, and reads as relative to here.
        Ok(relative) if base.parent().is_some() => relative.display().to_string(),
        _ => path.display().to_string(),
    }
}

/// How to connect: the flags, and the project directory (the lock's), which
/// `roots/list` is answered with. Listing as the lock pins (`identity_from_lock`), a
/// wrapped entry runs its pinned closure as the guard would: the closures are read
/// from the lock's companion file, and the policy says which may run install scripts.
fn check_options(
    args: &ConnectArgs,
    identity_from_lock: bool,
    ws: &Workspace,
    policy: &mcp_lock::verdict::policy::Policy,
) -> anyhow::Result<CheckOptions> {
    let self_dir = ws.lock_dir();
    let closures = if identity_from_lock {
        mcp_lock::records::lock::closures::read(&mcp_lock::records::lock::closures::companion_path(
            &ws.lock_path,
        ))
        .map_err(anyhow::Error::msg)?
    } else {
        Default::default()
    };
    // A day is longer than any listing should take, and keeps deadline arithmetic
    // far from overflow.
    const MAX: Duration = Duration::from_secs(24 * 60 * 60);
    let secs = |v: f64, flag: &str| {
        Duration::try_from_secs_f64(v)
            .ok()
            .filter(|d| !d.is_zero() && *d <= MAX)
            .with_context(|| {
                format!("--{flag} must be a number of seconds above 0 and at most 86400")
            })
    };
    Ok(CheckOptions {
        client: ClientOptions {
            request_timeout: secs(args.request_timeout, "request-timeout")?,
            server_timeout: secs(args.timeout, "timeout")?,
            max_pages: args.max_pages,
            max_tools: args.max_tools,
            max_message_bytes: args.max_message_bytes,
            discover_timeout: secs(args.probe_timeout, "probe-timeout")?,
            allow_cross_origin_redirects: args.allow_redirects,
            ..ClientOptions::default()
        },
        jobs: args
            .jobs
            .unwrap_or_else(mcp_lock::live::check::default_jobs),
        identity_from_lock,
        project_dir: self_dir.to_path_buf(),
        protocol: None,
        packages: mcp_lock::servers::package::Lookups::Online,
        closures: std::sync::Arc::new(closures),
        allow_scripts: policy.allow_scripts.clone(),
        contact_new_origins: false,
    })
}

/// On a terminal, says what is about to be contacted: servers can take a while.
fn announce(servers: &[mcp_lock::servers::config::ServerSpec]) {
    if std::io::stderr().is_terminal() && !servers.is_empty() && !quiet() {
        let names: Vec<String> = servers
            .iter()
            .map(|s| escape_for_terminal(&s.name))
            .collect();
        let count = servers.len();
        let noun = if count == 1 { "server" } else { "servers" };
        status(
            "Checking",
            AnsiColor::Cyan,
            &format!("{count} {noun}: {}", names.join(", ")),
        );
    }
}

/// Per-server progress: spinners on a terminal, plain lines otherwise.
fn progress() -> Progress {
    if quiet() {
        return mcp_lock::live::check::no_progress();
    }
    Arc::new(progress::Display::new(std::io::stderr().is_terminal()))
}

/// Prints to stdout. What reaches here was redacted where it came in: each server's
/// secrets inside that server's text (see `mcp_lock::base::secrets`).
pub fn out(text: &str) {
    anstream::print!("{text}");
}

/// Prints to stderr.
pub fn err_out(text: &str) {
    anstream::eprint!("{text}");
}

/// A cargo-style status line on stderr: a right-aligned bold verb, then the message.
pub fn status(verb: &str, color: AnsiColor, message: &str) {
    if quiet() {
        return;
    }
    let style = Style::new().fg_color(Some(color.into())).bold();
    err_out(&format!("{style}{verb:>12}{style:#} {message}\n"));
}

/// Messages may carry server or config text: escaped as well as redacted.
pub fn warning(message: &str) {
    let style = Style::new().fg_color(Some(AnsiColor::Yellow.into())).bold();
    err_out(&format!(
        "{style}warning{style:#}: {}\n",
        escape_for_terminal(message)
    ));
}

/// A note that changes nothing about the outcome.
pub fn notice(message: &str) {
    if quiet() {
        return;
    }
    let style = Style::new().fg_color(Some(AnsiColor::Cyan.into())).bold();
    err_out(&format!(
        "{style}note{style:#}: {}\n",
        escape_for_terminal(message)
    ));
}

pub fn error(message: &str) {
    let style = Style::new().fg_color(Some(AnsiColor::Red.into())).bold();
    err_out(&format!(
        "{style}error{style:#}: {}\n",
        escape_for_terminal(message)
    ));
}

fn env_lookup(name: &str) -> Option<String> {
    std::env::var(name).ok()
}
