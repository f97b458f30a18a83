//! The server itself: what a stdio entry launches (an npm or PyPI package, an OCI
//! image, a local script), pinned in the lock beside its tools.
//!
//! [`launcher`] recognises the entry's form; [`npm`] and [`pypi`] ask the registry the
//! user's own tools would ask. `update` pins what the spec resolves to
//! ([`resolve_pin`]); `verify` checks what the host will launch against the pin
//! ([`check`]); the guard launches the pinned version ([`pinned_launch`]).
//! Transitive dependencies are not pinned.

mod check;
pub mod closure;
mod launch;
pub mod launcher;
mod local;
pub mod npm;
mod options;
pub mod pypi;
pub mod registry_cache;
pub mod releases;

mod fetcher;
pub use fetcher::*;

pub use check::check;
pub use launch::{ClosureLaunch, ScriptLaunch, closure_launch, pinned_launch, script_launch};

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::base::action::Action;
pub use launcher::{Recognised, Target, recognise};

/// Which registry a package is published to: how its versions order, which installer
/// resolves its closure.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Ecosystem {
    /// Semver versions, prereleases written `1.0.0-rc.1`.
    Npm,
    /// PEP 440 versions, pre- and dev-releases written `1.0rc1`, `1.0.dev1`.
    Pypi,
}

impl Ecosystem {
    pub fn as_str(self) -> &'static str {
        match self {
            Ecosystem::Npm => "npm",
            Ecosystem::Pypi => "pypi",
        }
    }

    pub fn parse(text: &str) -> Option<Ecosystem> {
        match text {
            "npm" => Some(Ecosystem::Npm),
            "pypi" => Some(Ecosystem::Pypi),
            _ => None,
        }
    }

    /// Version order: semver precedence for npm, PEP 440 for PyPI.
    pub fn compare(self, a: &str, b: &str) -> std::cmp::Ordering {
        match self {
            Ecosystem::Npm => npm::compare(a, b),
            Ecosystem::Pypi => pypi::compare(a, b),
        }
    }

    /// A prerelease (npm `-rc.1`), or a PyPI pre- or dev-release.
    pub fn is_prerelease(self, version: &str) -> bool {
        match self {
            Ecosystem::Npm => npm::is_prerelease(version),
            Ecosystem::Pypi => pypi::Version::parse(version).is_some_and(|v| v.is_pre()),
        }
    }
}

/// What the lock pins for the code a server entry launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagePin {
    /// How it was recognised: `npx`, `uvx`, `docker run`, `node`, `path`, … (for an
    /// entry not recognised, its command).
    pub launcher: String,
    pub package: Package,
    /// The whole dependency closure of an npm or PyPI package (lock version 5);
    /// `None`: not pinned yet, or not resolvable when pinned.
    pub closure: Option<closure::ClosurePin>,
}

/// The pinned artifact.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Package {
    /// An npm package: exact version and the registry's `dist.integrity`.
    Npm {
        name: String,
        version: String,
        integrity: String,
    },
    /// A PyPI distribution: exact version and the sha256 of each file of it.
    Pypi {
        name: String,
        version: String,
        /// File name -> sha256, sorted.
        files: BTreeMap<String, String>,
    },
    /// An OCI image: the reference as written, and its digest when it carries one.
    Oci {
        reference: String,
        digest: Option<String>,
    },
    /// A local script: its path relative to the project and its sha256.
    Script { path: String, sha256: String },
    /// A launch mcp-lock does not recognise: recorded, never guessed.
    Unrecognised,
    /// A package `update` could not resolve (its registry unreachable, say) when the
    /// server was first pinned: recorded with why, so verify reports it as
    /// unverifiable and the guard refuses it until `update` pins it (lock version 4).
    Unresolved { reason: String },
}

impl Package {
    /// The `kind` the lock writes.
    pub fn kind(&self) -> &'static str {
        match self {
            Package::Npm { .. } => "npm",
            Package::Pypi { .. } => "pypi",
            Package::Oci { .. } => "oci",
            Package::Script { .. } => "script",
            Package::Unrecognised => "unrecognised",
            Package::Unresolved { .. } => "unresolved",
        }
    }
}

impl std::fmt::Display for PackagePin {
    /// "npm tiny-mcp@1.0.0 (sha512-AbCd…)", "script server.js (sha256 1a2b…)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match &self.package {
            Package::Npm {
                name,
                version,
                integrity,
            } => write!(f, "npm {name}@{version} ({})", short(integrity)),
            Package::Pypi {
                name,
                version,
                files,
            } => write!(
                f,
                "pypi {name}=={version} ({})",
                crate::base::text::count(files.len(), "file")
            ),
            Package::Oci { reference, digest } => match digest {
                Some(_) => write!(f, "oci {reference}"),
                None => write!(f, "oci {reference} (tag only, no digest)"),
            },
            Package::Script { path, sha256 } => {
                write!(f, "script {path} (sha256 {})", short(sha256))
            }
            Package::Unrecognised => write!(f, "not recognised ({})", self.launcher),
            Package::Unresolved { .. } => write!(f, "unresolved ({})", self.launcher),
        }
    }
}

fn short(hash: &str) -> &str {
    let end = hash.char_indices().nth(19).map_or(hash.len(), |(i, _)| i);
    &hash[..end]
}

/// What `verify` found about one server's package.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum PackageStatus {
    /// What the host launches is what the lock pins.
    Pinned,
    /// It is not: another version, integrity, file hash, image or script
    /// (`package-changed`).
    Changed,
    /// A wrapped entry with a floating spec, or a tag-only image (`package-floating`).
    Floating,
    /// The package is the pinned one, but the dependency closure the host's launcher
    /// resolves now is not the pinned closure (`dependency-changed`): an entry the
    /// host launches itself, not through the guard.
    DependencyChanged,
    /// An npm or PyPI package whose dependency closure the lock does not pin (it could
    /// not be resolved, or the lock is from before closures were pinned): its launcher
    /// resolves the dependencies afresh at every launch (`closure-unpinned`).
    ClosureUnpinned,
    /// The lock has no package pin for the server (a lock from before they were
    /// pinned): a notice until `update` pins it.
    NotPinnedYet,
    /// The entry launches something mcp-lock does not recognise: shown, not pinned.
    Unrecognised,
    /// `--offline`: registry look-ups were skipped.
    Skipped,
    /// The registry could not be reached or gave no usable answer.
    Unverifiable,
}

impl PackageStatus {
    /// The policy rule a status with something to act on falls under.
    pub fn rule(self) -> Option<&'static str> {
        match self {
            PackageStatus::Changed => Some("package-changed"),
            PackageStatus::Floating => Some("package-floating"),
            PackageStatus::DependencyChanged => Some("dependency-changed"),
            PackageStatus::ClosureUnpinned => Some("closure-unpinned"),
            _ => None,
        }
    }

    /// Whether the pin and what is launched differ (a value moved from one to the other).
    pub fn moved(self) -> bool {
        matches!(
            self,
            PackageStatus::Changed | PackageStatus::DependencyChanged
        )
    }

    pub fn as_str(self) -> &'static str {
        match self {
            PackageStatus::Pinned => "pinned",
            PackageStatus::Changed => "changed",
            PackageStatus::Floating => "floating",
            PackageStatus::DependencyChanged => "dependency_changed",
            PackageStatus::ClosureUnpinned => "closure_unpinned",
            PackageStatus::NotPinnedYet => "not_pinned_yet",
            PackageStatus::Unrecognised => "unrecognised",
            PackageStatus::Skipped => "skipped",
            PackageStatus::Unverifiable => "unverifiable",
        }
    }
}

/// The package check of one server, as reports show it.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct PackageCheck {
    pub status: PackageStatus,
    /// `npm`, `pypi`, `oci`, `script` or `unrecognised`.
    pub kind: &'static str,
    pub launcher: String,
    /// The pin, as one line ("npm tiny-mcp@1.0.0 (sha512-…)").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pinned: Option<String>,
    /// What the host launches now, when it differs or was resolved ("npm tiny-mcp@1.0.1").
    #[serde(skip_serializing_if = "Option::is_none")]
    pub live: Option<String>,
    /// One line saying what was found and what to do.
    pub message: String,
    /// For `dependency_changed`: each package of the closure that moved.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub dependencies: Vec<closure::DependencyChange>,
    /// What the policy does with it (`package-changed`, `package-floating`,
    /// `dependency-changed`, `closure-unpinned`).
    pub action: Action,
    /// How long the check took (registry look-ups, hashing).
    pub elapsed_ms: u64,
}

impl PackageCheck {
    /// Replaces the server's secrets in every string of the check.
    pub fn redact(&mut self, secrets: &crate::base::secrets::Secrets) {
        for text in [&mut self.pinned, &mut self.live].into_iter().flatten() {
            secrets.redact_in_place(text);
        }
        secrets.redact_in_place(&mut self.message);
    }
}

/// How `verify` treats registries.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum Lookups {
    /// Ask the registries.
    #[default]
    Online,
    /// `--offline`: skip registry look-ups (local scripts are still hashed).
    Offline,
}

/// One stdio entry, as the package checks need it.
#[derive(Debug, Clone, Copy)]
pub struct Entry<'a> {
    /// Command and arguments with variables expanded (what is launched).
    pub command: &'a str,
    pub args: &'a [String],
    /// The entry's own environment (the launcher reads its registry settings there
    /// first), then the process's.
    pub env: &'a BTreeMap<String, String>,
    /// Where the entry runs: relative scripts are found from here.
    pub cwd: &'a Path,
    /// The project directory: script paths are recorded relative to it.
    pub project_dir: &'a Path,
    /// Launched through `mcp-lock guard` (wrapped): the guard runs the pinned version.
    pub guarded: bool,
    /// How the registries are asked.
    pub fetcher: Fetcher,
}

/// An [`Entry`] that owns its parts, to move into a task.
#[derive(Debug, Clone)]
pub struct OwnedEntry {
    /// The server's name in the config.
    pub server: String,
    pub command: String,
    pub args: Vec<String>,
    pub env: BTreeMap<String, String>,
    pub cwd: std::path::PathBuf,
    pub project_dir: std::path::PathBuf,
    pub guarded: bool,
    pub fetcher: Fetcher,
}

impl OwnedEntry {
    pub fn entry(&self) -> Entry<'_> {
        Entry {
            command: &self.command,
            args: &self.args,
            env: &self.env,
            cwd: &self.cwd,
            project_dir: &self.project_dir,
            guarded: self.guarded,
            fetcher: self.fetcher,
        }
    }
}

/// The package check of each entry, all at once, by server name.
pub async fn check_all(
    entries: Vec<(OwnedEntry, Option<PackagePin>)>,
    lookups: Lookups,
) -> BTreeMap<String, PackageCheck> {
    at_once(entries, move |(entry, pin)| async move {
        let result = check(&entry.entry(), pin.as_ref(), lookups).await;
        (entry.server, result)
    })
    .await
}

/// [`resolve_pin`] and [`resolve_closure`] for each entry, all at once, by server
/// name; an entry that does not resolve gets a [`Package::Unresolved`] pin saying
/// why, one whose closure does not resolve a pin without closure and the reason.
pub async fn resolve_all(
    entries: Vec<OwnedEntry>,
) -> BTreeMap<String, (PackagePin, Option<String>)> {
    at_once(entries, |entry| async move {
        let mut unpinned = None;
        let pin = match resolve_pin(&entry.entry()).await {
            Ok(mut pin) => {
                match resolve_closure(&entry.entry(), &pin).await {
                    Ok(Some(closure)) => pin.closure = Some(closure.pin()),
                    Ok(None) => {}
                    Err(why) => unpinned = Some(why),
                }
                pin
            }
            Err(reason) => PackagePin {
                launcher: entry.entry().recognised().launcher,
                package: Package::Unresolved { reason },
                closure: None,
            },
        };
        (entry.server, (pin, unpinned))
    })
    .await
}

/// The dependency closure the launcher of an npm or PyPI entry installs for `pin`'s
/// version, resolved by npm or uv ([`closure`]); `None` for other packages. `Err`: why
/// it could not be resolved (no npm or uv, the registry down, …).
pub async fn resolve_closure(
    entry: &Entry<'_>,
    pin: &PackagePin,
) -> Result<Option<closure::Closure>, String> {
    match closure_plan(entry, pin)? {
        Some(plan) => plan.resolve().await.map(Some),
        None => Ok(None),
    }
}

/// What resolving `pin`'s closure takes: the resolver and the registry it asks;
/// `None` for packages without a closure.
fn closure_plan(
    entry: &Entry<'_>,
    pin: &PackagePin,
) -> Result<Option<closure::reuse::Plan>, String> {
    let rec = entry.recognised();
    let plan = |ecosystem, tool, name: &str, version: &str, registry| closure::reuse::Plan {
        ecosystem,
        tool,
        name: name.to_string(),
        version: version.to_string(),
        registry,
        fetcher: entry.fetcher,
    };
    match &pin.package {
        Package::Npm { name, version, .. } => {
            let registry =
                npm::registry_given(name, rec.registry.as_deref(), entry.project_dir, &|k| {
                    entry.lookup(k)
                })?;
            let tool = closure::tool_beside(entry.command, "npm", entry.project_dir)
                .ok_or("npm is not on PATH; the dependency closure cannot be resolved")?;
            Ok(Some(plan(Ecosystem::Npm, tool, name, version, registry)))
        }
        Package::Pypi { name, version, .. } => {
            let index = rec
                .registry
                .clone()
                .unwrap_or_else(|| pypi::index_for(&rec.launcher, &|k| entry.lookup(k)));
            let tool = closure::tool_beside(entry.command, "uv", entry.project_dir)
                .ok_or("uv is not on PATH; the dependency closure cannot be resolved")?;
            Ok(Some(plan(Ecosystem::Pypi, tool, name, version, index)))
        }
        _ => Ok(None),
    }
}

/// [`resolve_closure`] for `verify`: the closure recorded at the last resolution when
/// none of the registry documents it was resolved from changed since
/// ([`closure::reuse`]), else resolved again. `pinned`: the closure the lock pins.
pub async fn resolve_closure_reusing(
    entry: &Entry<'_>,
    pin: &PackagePin,
    pinned: Option<&closure::Closure>,
) -> Result<Option<closure::Closure>, String> {
    let Some(plan) = closure_plan(entry, pin)? else {
        return Ok(None);
    };
    let rec = entry.recognised();
    let registry_for = |name: &str| {
        npm::registry_given(name, rec.registry.as_deref(), entry.project_dir, &|k| {
            entry.lookup(k)
        })
        .ok()
    };
    closure::reuse::resolve(&plan, pinned, &entry.fetcher, &registry_for)
        .await
        .map(Some)
}

/// `work` for every item at once, one task each, its results by server name. A task
/// that panicked panics here.
async fn at_once<I, T, Work, Done>(items: Vec<I>, work: Work) -> BTreeMap<String, T>
where
    Work: Fn(I) -> Done,
    Done: std::future::Future<Output = (String, T)> + Send + 'static,
    T: Send + 'static,
{
    let handles: Vec<_> = items
        .into_iter()
        .map(|item| tokio::spawn(work(item)))
        .collect();
    let mut out = BTreeMap::new();
    for handle in handles {
        match handle.await {
            Ok((name, result)) => {
                out.insert(name, result);
            }
            Err(e) => std::panic::resume_unwind(e.into_panic()),
        }
    }
    out
}

impl Entry<'_> {
    fn lookup(&self, key: &str) -> Option<String> {
        self.env
            .get(key)
            .cloned()
            .or_else(|| std::env::var(key).ok())
    }

    fn recognised(&self) -> Recognised {
        recognise(self.command, self.args, &|p| self.cwd.join(p).is_file())
    }
}

pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The largest script or binary hashed for a pin. The file is streamed through the
/// hash, so this bounds time, not memory.
pub const MAX_SCRIPT_HASHED: u64 = 1 << 30;

/// The sha256 of a file, lowercase hex: a regular file only (a FIFO, a device or
/// `/dev/stdin` a config names is refused at once, never read), streamed, at most
/// [`MAX_SCRIPT_HASHED`] bytes.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    use std::io::Read as _;
    let (file, _) = crate::base::files::open_regular(path)?;
    let mut hasher = Sha256::new();
    let copied = std::io::copy(&mut file.take(MAX_SCRIPT_HASHED + 1), &mut hasher)?;
    if copied > MAX_SCRIPT_HASHED {
        return Err(crate::base::files::too_large_error(MAX_SCRIPT_HASHED));
    }
    Ok(format!("{:x}", hasher.finalize()))
}

/// [`sha256_file`] off the async workers: a script can be a large binary, and hashing
/// it must not stall the servers being listed meanwhile.
async fn sha256_file_async(path: std::path::PathBuf) -> std::io::Result<String> {
    match tokio::runtime::Handle::try_current() {
        Ok(handle) => handle
            .spawn_blocking(move || sha256_file(&path))
            .await
            .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic())),
        Err(_) => sha256_file(&path),
    }
}

/// A script's path as the lock records it: relative to the project when inside it.
fn script_path(entry: &Entry<'_>, written: &str) -> String {
    let full = entry.cwd.join(written);
    let base = entry
        .project_dir
        .canonicalize()
        .unwrap_or(entry.project_dir.to_path_buf());
    let full = full.canonicalize().unwrap_or(full);
    match full.strip_prefix(&base) {
        Ok(rel) => rel.to_string_lossy().replace('\\', "/"),
        Err(_) => full.to_string_lossy().into_owned(),
    }
}

/// An OCI reference's digest (`…@sha256:<64 hex>`), if it carries one.
pub fn oci_digest(reference: &str) -> Option<String> {
    let (_, digest) = reference.rsplit_once('@')?;
    let hex = digest.strip_prefix("sha256:")?;
    is_sha256_hex(hex).then(|| digest.to_string())
}

/// What `update` pins for an entry: its spec resolved through the registry the user's
/// tools use (floating specs to the registry's newest), the script hashed, the image
/// taken as written. An error says why nothing can be pinned.
pub async fn resolve_pin(entry: &Entry<'_>) -> Result<PackagePin, String> {
    let rec = entry.recognised();
    let launcher = rec.launcher.clone();
    let package = match rec.target {
        Target::Unrecognised => Package::Unrecognised,
        Target::Script { path } => {
            let full = entry.cwd.join(&path);
            let sha256 = sha256_file_async(full)
                .await
                .map_err(|e| format!("cannot read the script {path}: {e}"))?;
            Package::Script {
                path: script_path(entry, &path),
                sha256,
            }
        }
        Target::Oci { reference } => Package::Oci {
            digest: oci_digest(&reference),
            reference,
        },
        Target::Npm { name, spec } => {
            let registry =
                npm::registry_given(&name, rec.registry.as_deref(), entry.project_dir, &|k| {
                    entry.lookup(k)
                })?;
            let packument = npm::fetch(&registry, &name, &entry.fetcher).await?;
            let version = npm::resolve(&packument, &registry, &name, spec.as_deref())?;
            let given = packument.versions.get(&version).cloned().flatten();
            let integrity = given
                .as_deref()
                .and_then(npm::sha512_of)
                .ok_or_else(|| match &given {
                    None => format!(
                        "the registry at {registry} gives no dist.integrity for {name}@{version}; it cannot be pinned"
                    ),
                    Some(other) => format!(
                        "the registry at {registry} gives {name}@{version} no sha512 integrity (only {:?}); it cannot be pinned",
                        short(other)
                    ),
                })?
                .to_string();
            Package::Npm {
                name,
                version,
                integrity,
            }
        }
        Target::Pypi { name, spec } => {
            let index = rec
                .registry
                .clone()
                .unwrap_or_else(|| pypi::index_for(&launcher, &|k| entry.lookup(k)));
            let files = pypi::fetch(&index, &name, &entry.fetcher).await?;
            let version = pypi_target(&files, &name, spec.as_deref())?;
            let mut pinned = BTreeMap::new();
            for (file, sha) in pypi::files_of(&files, &version) {
                let sha = sha.ok_or_else(|| {
                    format!("the index at {index} gives no sha256 for {file}; it cannot be pinned")
                })?;
                pinned.insert(file, sha.to_ascii_lowercase());
            }
            Package::Pypi {
                name,
                version,
                files: pinned,
            }
        }
    };
    Ok(PackagePin {
        launcher,
        package,
        closure: None,
    })
}

/// The version uv or pip installs for a spec: the exact one asked for, or the newest
/// (no spec, or uv's `@latest`). `spec` is as written after the name (`==1.2`, `@1.2`,
/// `@latest`, `>=1`), and every message quotes it so.
fn pypi_target(
    files: &[pypi::IndexFile],
    name: &str,
    spec: Option<&str>,
) -> Result<String, String> {
    let written = format!("{name}{}", spec.unwrap_or_default());
    match spec {
        None => pypi::newest(files).ok_or_else(|| format!("the index lists no files for {name}")),
        Some(spec) if pypi::is_latest(spec) => pypi::newest(files)
            .ok_or_else(|| format!("{written}: the index lists no files for {name}")),
        Some(spec) => match pypi::exact_version(spec) {
            Some(v) => files
                .iter()
                .find(|f| pypi::same_version(&f.version, v))
                .map(|f| f.version.clone())
                .ok_or_else(|| format!("{written} is not on the index")),
            None => Err(format!(
                "{written}: version ranges are not resolved; write an exact version ({name}==1.2.3) or {name}@latest"
            )),
        },
    }
}

#[cfg(test)]
mod tests;
