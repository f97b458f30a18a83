//! Start-up verification for agent hosts: before an agent plans with a server's
//! tools, check that they are still the tools a person approved.
//!
//! ```no_run
//! use mcp_lock::hosts::startup::Verifier;
//!
//! let verification = Verifier::new(".").verify_blocking()?;
//! if !verification.passed() {
//!     eprintln!("{}", verification.summary());
//!     std::process::exit(verification.exit_code().into());
//! }
//! # Ok::<(), mcp_lock::hosts::startup::StartupError>(())
//! ```
//!
//! [`Verifier::verify`] is the same for hosts that already run a tokio runtime.

use std::path::PathBuf;

use crate::contract::classify::{Class, Finding};
use crate::live::check::{
    CheckOptions, ProfileUse, Progress, Targets, no_progress, plan_targets, resolve_all,
    select_with_lock, verify_servers,
};
use crate::records::lock::{LockError, Pins, read_lock};
use crate::servers::config::{ConfigError, ProjectConfig};
use crate::verdict::drift::{ServerChange, ServerReport, ToolChange, Verdict};
use crate::verdict::exit_codes::ExitCode;
use crate::verdict::policy::{Action, POLICY_FILE, Policy, PolicyError};

/// Why verification could not run at all (as opposed to finding drift).
#[derive(Debug, thiserror::Error)]
pub enum StartupError {
    #[error(transparent)]
    Config(#[from] ConfigError),
    #[error(transparent)]
    Lock(#[from] LockError),
    #[error("{0} not found; run `mcp-lock update` to pin the servers first")]
    NoLock(String),
    #[error(transparent)]
    Policy(#[from] PolicyError),
    #[error(transparent)]
    Profile(#[from] crate::records::profile::UnknownProfile),
    /// The lock's companion file (the pinned dependency closures) does not read.
    #[error("{0}")]
    Closures(String),
    #[error("cannot start the async runtime: {0}")]
    Runtime(std::io::Error),
}

/// What to verify and how: a project directory, and optionally its config, lock,
/// policy and a subset of its servers.
#[derive(Clone)]
pub struct Verifier {
    project_dir: PathBuf,
    config: Option<PathBuf>,
    lock: Option<PathBuf>,
    policy: Option<PathBuf>,
    servers: Vec<String>,
    client: Option<String>,
    options: CheckOptions,
    progress: Option<Progress>,
    personal: bool,
}

impl Verifier {
    /// Verifies the project in `project_dir`: the client configs found there (as
    /// `mcp-lock verify` finds them), its `mcp.lock`, and `mcp-lock.toml` beside the
    /// lock if there is one.
    pub fn new(project_dir: impl Into<PathBuf>) -> Self {
        Verifier {
            project_dir: project_dir.into(),
            config: None,
            lock: None,
            policy: None,
            servers: Vec::new(),
            client: None,
            options: CheckOptions::default(),
            progress: None,
            personal: false,
        }
    }

    /// The lock is the user's own lock of the project's personal servers (`mcp-lock
    /// --user CLIENT update`): servers are started in, and profiles name, the project
    /// directory rather than the lock's.
    pub fn personal(mut self) -> Self {
        self.personal = true;
        self
    }

    /// Reads servers from this client config only.
    pub fn config(mut self, path: impl Into<PathBuf>) -> Self {
        self.config = Some(path.into());
        self
    }

    /// Uses this lock instead of `mcp.lock` in the project directory.
    pub fn lock(mut self, path: impl Into<PathBuf>) -> Self {
        self.lock = Some(path.into());
        self
    }

    /// Uses this policy file (it must exist) instead of the one beside the lock.
    pub fn policy(mut self, path: impl Into<PathBuf>) -> Self {
        self.policy = Some(path.into());
        self
    }

    /// Verifies only these servers (by config name); by default, all of them, and
    /// pins whose server left the config count as removed.
    pub fn servers<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.servers = names.into_iter().map(Into::into).collect();
        self
    }

    /// Verifies what this client profile sees (`mcp-lock verify --client NAME`): a
    /// host passes its own profile. By default, every profile the lock pins.
    pub fn client(mut self, profile: impl Into<String>) -> Self {
        self.client = Some(profile.into());
        self
    }

    /// Timeouts, limits and concurrency (the defaults are `mcp-lock verify`'s).
    pub fn options(mut self, options: CheckOptions) -> Self {
        self.options = options;
        self
    }

    /// Tells `progress` what each server is doing, for hosts that show it.
    pub fn progress(mut self, progress: Progress) -> Self {
        self.progress = Some(progress);
        self
    }

    /// Connects to the servers, lists their tools and compares them with the lock.
    /// Environment variables in the config are read from this process's environment.
    pub async fn verify(&self) -> Result<Verification, StartupError> {
        let project = ProjectConfig::load(&self.project_dir, self.config.as_deref())?;
        let lock_path = self
            .lock
            .clone()
            .unwrap_or_else(|| self.project_dir.join("mcp.lock"));
        let lock = read_lock(&lock_path)?
            .ok_or_else(|| StartupError::NoLock(lock_path.display().to_string()))?;
        let policy = match &self.policy {
            Some(path) => Policy::load(path)?.ok_or_else(|| {
                StartupError::Policy(PolicyError::Read {
                    path: path.display().to_string(),
                    source: std::io::ErrorKind::NotFound.into(),
                })
            })?,
            None => Policy::load(
                &lock_path
                    .parent()
                    .unwrap_or(&self.project_dir)
                    .join(POLICY_FILE),
            )?
            .unwrap_or_default(),
        };
        let policy = policy.with_user_rules(&|v| std::env::var(v).ok())?;
        let (selected, gone) = select_with_lock(&project, &lock, &self.servers)?;
        let resolved = resolve_all(&project, &selected, &|v| std::env::var(v).ok())?;
        let using = match &self.client {
            Some(name) => ProfileUse::Only(name),
            None => ProfileUse::Pinned,
        };
        let Targets { targets, notices } = plan_targets(resolved, &lock, &policy, using)?;
        let progress = self.progress.clone().unwrap_or_else(no_progress);
        let mut options = self.options.clone();
        options.project_dir = if self.personal {
            self.project_dir.clone()
        } else {
            lock_path
                .parent()
                .filter(|p| !p.as_os_str().is_empty())
                .unwrap_or(&self.project_dir)
                .to_path_buf()
        };
        options.closures = std::sync::Arc::new(
            crate::records::lock::closures::read(&crate::records::lock::closures::companion_path(
                &lock_path,
            ))
            .map_err(StartupError::Closures)?,
        );
        options.allow_scripts = policy.allow_scripts.clone();
        let reports = verify_servers(
            Pins::Whole(&lock),
            targets,
            &gone,
            &options,
            &policy,
            progress,
        )
        .await;
        Ok(Verification { reports, notices })
    }

    /// [`Verifier::verify`] on a runtime of its own, for hosts without one. Inside a
    /// tokio runtime, call `verify().await` instead: a runtime cannot be started
    /// within another.
    pub fn verify_blocking(&self) -> Result<Verification, StartupError> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .map_err(StartupError::Runtime)?;
        runtime.block_on(self.verify())
    }
}

/// The outcome: one report per server, with every change classified and judged by
/// the policy. Each server's secrets are already redacted inside its report's text;
/// server text still needs escaping before a terminal shows it.
#[derive(Debug, Clone)]
pub struct Verification {
    /// One per server and client profile it was listed under.
    pub reports: Vec<ServerReport>,
    /// Profiles the settings select that the lock does not pin yet, and hosts with no
    /// built-in profile: worth saying, never a failure.
    pub notices: Vec<String>,
}

/// A change the policy fails, with where it is.
#[derive(Debug, Clone, Copy)]
pub struct Failure<'a> {
    pub server: &'a str,
    pub change: &'a ToolChange,
}

impl Failure<'_> {
    /// The change's class (authority, breaking, semantic, additive, cosmetic), when
    /// it was classified.
    pub fn class(&self) -> Option<Class> {
        self.change.class
    }

    /// What changed and what it means, worst first.
    pub fn findings(&self) -> &[Finding] {
        &self.change.findings
    }
}

impl Verification {
    /// The exit code `mcp-lock verify` would give: 0 passed, 1 a change the policy
    /// fails, 3 a server could not be verified.
    pub fn exit_code(&self) -> ExitCode {
        ExitCode::for_reports(&self.reports)
    }

    /// True when every server was verified and nothing the policy fails changed.
    pub fn passed(&self) -> bool {
        self.exit_code() == ExitCode::Success
    }

    /// Every tool change the policy fails.
    pub fn failures(&self) -> Vec<Failure<'_>> {
        self.reports
            .iter()
            .flat_map(|r| {
                r.changes
                    .iter()
                    .filter(|c| c.action == Action::Fail)
                    .map(|change| Failure {
                        server: &r.name,
                        change,
                    })
            })
            .collect()
    }

    /// Server-level changes the policy fails (instructions or server identity changed,
    /// a pinned server gone from the config), with the server's name.
    pub fn server_failures(&self) -> Vec<(&str, &ServerChange)> {
        self.reports
            .iter()
            .flat_map(|r| {
                r.server_changes
                    .iter()
                    .filter(|c| c.drift && c.action == Some(Action::Fail))
                    .map(move |c| (r.name.as_str(), c))
            })
            .collect()
    }

    /// Servers that could not be verified completely, with the reason.
    pub fn unverified(&self) -> Vec<(&str, &str)> {
        self.reports
            .iter()
            .filter(|r| matches!(r.verdict, Verdict::Incomplete | Verdict::Unverifiable))
            .map(|r| {
                (
                    r.name.as_str(),
                    r.error.as_deref().unwrap_or("unknown error"),
                )
            })
            .collect()
    }

    /// The human report `mcp-lock verify` prints, without colour, and its summary
    /// line; server text escaped.
    pub fn summary(&self) -> String {
        let text = format!(
            "{}{}",
            crate::review::report::render_human(&self.reports),
            crate::review::report::render_summary(&self.reports)
        );
        anstream::adapter::strip_str(&text).to_string()
    }
}
