//! The server itself: what a stdio entry launches (an npm or PyPI package, an OCI
//! image, a local script), pinned in the lock beside its tools.
//!
//! [`launcher`] recognises the entry's form; [`npm`] and [`pypi`] ask the registry the
//! user's own tools would ask. `update` pins what the spec resolves to
//! ([`resolve_pin`]); `verify` checks what the host will launch against the pin
//! ([`check`]); the guard launches the pinned version ([`pinned_launch`]).
//! Transitive dependencies are not pinned.

pub mod launcher;
pub mod npm;
pub mod pypi;

use std::collections::BTreeMap;
use std::path::Path;
use std::time::Duration;

use serde::Serialize;
use sha2::{Digest, Sha256};

use crate::policy::Action;
pub use launcher::{Recognised, Target, recognise};

/// What the lock pins for the code a server entry launches.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct PackagePin {
    /// How it was recognised: `npx`, `uvx`, `docker run`, `node`, `path`, … (for an
    /// entry not recognised, its command).
    pub launcher: String,
    pub package: Package,
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
                crate::text::count(files.len(), "file")
            ),
            Package::Oci { reference, digest } => match digest {
                Some(_) => write!(f, "oci {reference}"),
                None => write!(f, "oci {reference} (tag only, no digest)"),
            },
            Package::Script { path, sha256 } => {
                write!(f, "script {path} (sha256 {})", short(sha256))
            }
            Package::Unrecognised => write!(f, "not recognised ({})", self.launcher),
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
    pub fn as_str(self) -> &'static str {
        match self {
            PackageStatus::Pinned => "pinned",
            PackageStatus::Changed => "changed",
            PackageStatus::Floating => "floating",
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
    /// What the policy does with it (`package-changed`, `package-floating`).
    pub action: Action,
    /// How long the check took (registry look-ups, hashing).
    pub elapsed_ms: u64,
}

impl PackageCheck {
    /// Replaces the server's secrets in every string of the check.
    pub fn redact(&mut self, secrets: &crate::secrets::Secrets) {
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

/// [`resolve_pin`] for each entry, all at once, by server name.
pub async fn resolve_all(entries: Vec<OwnedEntry>) -> BTreeMap<String, Result<PackagePin, String>> {
    at_once(entries, |entry| async move {
        let result = resolve_pin(&entry.entry()).await;
        (entry.server, result)
    })
    .await
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

/// The whole answer for a request to a registry, or why there is none.
async fn http_get(url: &str, accept: &str) -> Result<String, String> {
    static PROVIDER: std::sync::Once = std::sync::Once::new();
    PROVIDER.call_once(|| {
        // Fails only if another provider was installed first, which is as good.
        let _ = rustls::crypto::ring::default_provider().install_default();
    });
    let client = reqwest::Client::builder()
        .user_agent(concat!("mcp-lock/", env!("CARGO_PKG_VERSION")))
        .connect_timeout(Duration::from_secs(10))
        .timeout(Duration::from_secs(30))
        .build()
        .map_err(|e| format!("cannot build an HTTP client: {e}"))?;
    let response = client
        .get(url)
        .header("Accept", accept)
        .send()
        .await
        .map_err(|e| format!("cannot reach {url}: {}", error_chain(&e)))?;
    let status = response.status();
    if status == reqwest::StatusCode::NOT_FOUND {
        return Err(format!(
            "{url} answered 404: no such package on that registry"
        ));
    }
    if !status.is_success() {
        return Err(format!("{url} answered HTTP {status}"));
    }
    response
        .text()
        .await
        .map_err(|e| format!("cannot read the answer from {url}: {}", error_chain(&e)))
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut text = e.to_string();
    let mut source = e.source();
    while let Some(s) = source {
        text.push_str(": ");
        text.push_str(&s.to_string());
        source = s.source();
    }
    text
}

pub(crate) fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| b.is_ascii_hexdigit())
}

/// The sha256 of a file, lowercase hex.
pub fn sha256_file(path: &Path) -> std::io::Result<String> {
    let bytes = std::fs::read(path)?;
    Ok(format!("{:x}", Sha256::digest(&bytes)))
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
            let registry = npm::registry_for(&name, entry.project_dir, &|k| entry.lookup(k));
            let packument = npm::fetch(&registry, &name).await?;
            let version = npm::resolve(&packument, &name, spec.as_deref())?;
            let integrity = packument
                .versions
                .get(&version)
                .cloned()
                .flatten()
                .ok_or_else(|| {
                    format!(
                        "the registry at {registry} gives no dist.integrity for {name}@{version}"
                    )
                })?;
            Package::Npm {
                name,
                version,
                integrity,
            }
        }
        Target::Pypi { name, spec } => {
            let index = pypi::index_for(&launcher, &|k| entry.lookup(k));
            let files = pypi::fetch(&index, &name).await?;
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
    Ok(PackagePin { launcher, package })
}

/// The version uv or pip installs for a spec: the exact one asked for, or the newest.
fn pypi_target(
    files: &[pypi::IndexFile],
    name: &str,
    spec: Option<&str>,
) -> Result<String, String> {
    match spec {
        None => pypi::newest(files).ok_or_else(|| format!("the index lists no files for {name}")),
        Some(spec) => match pypi::exact_version(spec) {
            Some(v) => files
                .iter()
                .find(|f| pypi::same_version(&f.version, v))
                .map(|f| f.version.clone())
                .ok_or_else(|| format!("{name}=={v} is not on the index")),
            None => Err(format!(
                "{name}{spec}: version ranges are not resolved; write an exact version (=={name} 1.2.3)"
            )),
        },
    }
}

/// The check of one server's package: what the host launches for this entry against
/// the pin (`None`: the lock has none). `action` is left for the policy to set.
pub async fn check(entry: &Entry<'_>, pin: Option<&PackagePin>, lookups: Lookups) -> PackageCheck {
    let started = std::time::Instant::now();
    let mut out = check_untimed(entry, pin, lookups).await;
    out.elapsed_ms = started.elapsed().as_millis() as u64;
    out
}

async fn check_untimed(
    entry: &Entry<'_>,
    pin: Option<&PackagePin>,
    lookups: Lookups,
) -> PackageCheck {
    let rec = entry.recognised();
    let kind = match &rec.target {
        Target::Npm { .. } => "npm",
        Target::Pypi { .. } => "pypi",
        Target::Oci { .. } => "oci",
        Target::Script { .. } => "script",
        Target::Unrecognised => "unrecognised",
    };
    let mut out = PackageCheck {
        status: PackageStatus::Pinned,
        kind,
        launcher: rec.launcher.clone(),
        pinned: pin.map(|p| p.to_string()),
        live: None,
        message: String::new(),
        action: Action::Allow,
        elapsed_ms: 0,
    };
    let changed = |out: &mut PackageCheck, live: String, message: String| {
        out.status = PackageStatus::Changed;
        out.live = Some(live);
        out.message = message;
    };
    let Some(pin) = pin else {
        out.status = if kind == "unrecognised" {
            PackageStatus::Unrecognised
        } else {
            PackageStatus::NotPinnedYet
        };
        out.message = match out.status {
            PackageStatus::Unrecognised => unrecognised_text(&rec),
            _ => "package not pinned yet (the lock is from before packages were pinned); `mcp-lock update` pins it".into(),
        };
        return out;
    };
    match (&rec.target, &pin.package) {
        (Target::Unrecognised, Package::Unrecognised) => {
            out.status = PackageStatus::Unrecognised;
            out.message = unrecognised_text(&rec);
        }
        (
            Target::Script { path },
            Package::Script {
                path: pinned_path,
                sha256,
            },
        ) => {
            let now = script_path(entry, path);
            if now != *pinned_path {
                changed(
                    &mut out,
                    format!("script {now}"),
                    format!("the entry now runs {now}, the lock pins {pinned_path}"),
                );
            } else {
                match sha256_file_async(entry.cwd.join(path)).await {
                    Err(e) => changed(
                        &mut out,
                        format!("script {now} (unreadable)"),
                        format!("cannot read the pinned script {now}: {e}"),
                    ),
                    Ok(live) if live != *sha256 => changed(
                        &mut out,
                        format!("script {now} (sha256 {})", short(&live)),
                        format!(
                            "the script {now} changed since it was pinned (sha256 {} -> {})",
                            short(sha256),
                            short(&live)
                        ),
                    ),
                    Ok(_) => out.message = format!("script {now} as pinned"),
                }
            }
        }
        (
            Target::Oci { reference },
            Package::Oci {
                reference: pinned_ref,
                digest,
            },
        ) => {
            if reference != pinned_ref {
                changed(
                    &mut out,
                    format!("oci {reference}"),
                    format!("the entry now runs image {reference}, the lock pins {pinned_ref}"),
                );
            } else if digest.is_none() {
                out.status = PackageStatus::Floating;
                out.message = format!(
                    "image {reference} is pinned by tag only, not by digest; write it as {reference}@sha256:… in the config to pin it"
                );
            } else {
                out.message = format!("image {reference} pinned by digest");
            }
        }
        (
            Target::Npm { name, spec },
            Package::Npm {
                name: pinned_name,
                version,
                integrity,
            },
        ) if name == pinned_name => {
            check_npm(
                entry,
                &mut out,
                name,
                spec.as_deref(),
                version,
                integrity,
                lookups,
            )
            .await;
        }
        (
            Target::Pypi { name, spec },
            Package::Pypi {
                name: pinned_name,
                version,
                files,
            },
        ) if pypi::normalize(name) == pypi::normalize(pinned_name) => {
            check_pypi(
                entry,
                &rec,
                &mut out,
                name,
                spec.as_deref(),
                version,
                files,
                lookups,
            )
            .await;
        }
        (target, _) => {
            let live = match target {
                Target::Npm { name, spec } => format!(
                    "npm {name}{}",
                    spec.as_deref().map(|s| format!("@{s}")).unwrap_or_default()
                ),
                Target::Pypi { name, spec } => {
                    format!("pypi {name}{}", spec.as_deref().unwrap_or_default())
                }
                Target::Oci { reference } => format!("oci {reference}"),
                Target::Script { path } => format!("script {path}"),
                Target::Unrecognised => format!("not recognised ({})", rec.launcher),
            };
            let message = format!("the entry now launches {live}; the lock pins {pin}");
            changed(&mut out, live, message);
        }
    }
    out
}

fn unrecognised_text(rec: &Recognised) -> String {
    format!(
        "launches `{}`, which mcp-lock does not recognise as a package runner or script; its code is not pinned",
        rec.launcher
    )
}

async fn check_npm(
    entry: &Entry<'_>,
    out: &mut PackageCheck,
    name: &str,
    spec: Option<&str>,
    version: &str,
    integrity: &str,
    lookups: Lookups,
) {
    let exact = spec.and_then(npm::exact_version);
    if let Some(written) = exact
        && written != version
    {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("npm {name}@{written}"));
        out.message = format!(
            "the config asks for {name}@{written}; the lock pins {version} ({version} -> {written})"
        );
        return;
    }
    if lookups == Lookups::Offline {
        out.status = PackageStatus::Skipped;
        out.message = "registry look-up skipped (--offline)".into();
        return;
    }
    let registry = npm::registry_for(name, entry.project_dir, &|k| entry.lookup(k));
    let packument = match npm::fetch(&registry, name).await {
        Ok(p) => p,
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    match packument.versions.get(version) {
        None => {
            out.status = PackageStatus::Changed;
            out.live = Some(format!("npm {name}@{version} (not published)"));
            out.message =
                format!("the pinned {name}@{version} is no longer published on {registry}");
            return;
        }
        Some(live) if live.as_deref() != Some(integrity) => {
            out.status = PackageStatus::Changed;
            out.live = Some(format!(
                "npm {name}@{version} ({})",
                live.as_deref().map(short).unwrap_or("no integrity")
            ));
            out.message = format!(
                "{registry} gives {name}@{version} another integrity than the lock pins ({} -> {})",
                short(integrity),
                live.as_deref().map(short).unwrap_or("none")
            );
            return;
        }
        Some(_) => {}
    }
    let target = npm::resolve(&packument, name, spec);
    report_target(
        out,
        entry.guarded,
        exact.is_some(),
        &format!("{name}@"),
        "npm",
        version,
        target,
        &format!("{name}@{version}"),
    );
}

#[allow(clippy::too_many_arguments)]
async fn check_pypi(
    entry: &Entry<'_>,
    rec: &Recognised,
    out: &mut PackageCheck,
    name: &str,
    spec: Option<&str>,
    version: &str,
    files: &BTreeMap<String, String>,
    lookups: Lookups,
) {
    let exact = spec.and_then(pypi::exact_version);
    if let Some(written) = exact
        && !pypi::same_version(written, version)
    {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("pypi {name}=={written}"));
        out.message = format!(
            "the config asks for {name}=={written}; the lock pins {version} ({version} -> {written})"
        );
        return;
    }
    if lookups == Lookups::Offline {
        out.status = PackageStatus::Skipped;
        out.message = "index look-up skipped (--offline)".into();
        return;
    }
    let index = pypi::index_for(&rec.launcher, &|k| entry.lookup(k));
    let listed = match pypi::fetch(&index, name).await {
        Ok(f) => f,
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    let live = pypi::files_of(&listed, version);
    // Files may be added to a release later: only a pinned file that changed or
    // vanished counts.
    for (file, sha) in files {
        let problem = match live.get(file) {
            None => Some(format!(
                "{file} of the pinned {name}=={version} is no longer on {index}"
            )),
            Some(None) => {
                out.status = PackageStatus::Unverifiable;
                out.message =
                    format!("{index} gives no sha256 for {file}; the pin cannot be checked");
                return;
            }
            Some(Some(live)) if !live.eq_ignore_ascii_case(sha) => Some(format!(
                "{index} gives {file} another sha256 than the lock pins ({} -> {})",
                short(sha),
                short(live)
            )),
            Some(Some(_)) => None,
        };
        if let Some(message) = problem {
            out.status = PackageStatus::Changed;
            out.live = Some(format!("pypi {name}=={version} ({file} changed)"));
            out.message = message;
            return;
        }
    }
    let target = pypi_target(&listed, name, spec);
    report_target(
        out,
        entry.guarded,
        exact.is_some(),
        &format!("{name}=="),
        "pypi",
        version,
        target,
        &format!("{name}=={version}"),
    );
}

/// The verdict once the pinned version checked out: an unwrapped entry launches what
/// its spec resolves to (`target`); a wrapped one launches the pin, and a floating spec
/// warns. A spec that does not resolve leaves an unwrapped entry unverifiable and only
/// warns for a wrapped one, which never launches it.
#[allow(clippy::too_many_arguments)]
fn report_target(
    out: &mut PackageCheck,
    guarded: bool,
    exact: bool,
    prefix: &str,
    kind: &str,
    version: &str,
    target: Result<String, String>,
    pinned_spec: &str,
) {
    let target = match target {
        Ok(t) => t,
        Err(e) if guarded => {
            out.status = PackageStatus::Floating;
            out.message = format!("{e}; the guard launches the pinned {version}");
            return;
        }
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    let target = target.as_str();
    let same = if kind == "pypi" {
        pypi::same_version(target, version)
    } else {
        target == version
    };
    if !guarded && !same {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("{kind} {prefix}{target}"));
        out.message = format!(
            "the host launches {prefix}{target}, the lock pins {version} ({version} -> {target}); every tool may be unchanged, the code is not"
        );
    } else if guarded && !exact {
        out.status = PackageStatus::Floating;
        out.live = Some(format!("{kind} {prefix}{version}"));
        out.message = format!(
            "floats; the registry's newest is {target}; pinned {version} (the guard launches {pinned_spec}); write {pinned_spec} in the config to pin it"
        );
    } else {
        out.live = Some(format!("{kind} {prefix}{version}"));
        out.message = format!("{pinned_spec} as pinned");
    }
}

/// What the guard launches for an entry: its arguments with the package spec
/// rewritten to the pinned version (`npx -y pkg` -> `npx -y pkg@1.0.0`, `uvx pkg` ->
/// `uvx pkg==1.0.0`), or a refusal when a pinned script changed. The note says what
/// was done, when anything was.
pub fn pinned_launch(
    command: &str,
    args: &[String],
    cwd: &Path,
    project_dir: &Path,
    pin: Option<&PackagePin>,
) -> Result<(Vec<String>, Option<String>), String> {
    let entry_env = BTreeMap::new();
    let entry = Entry {
        command,
        args,
        env: &entry_env,
        cwd,
        project_dir,
        guarded: true,
    };
    let rec = entry.recognised();
    let Some(pin) = pin else {
        return Ok((args.to_vec(), None));
    };
    let mut out = args.to_vec();
    match (&rec.target, &pin.package, rec.arg) {
        (
            Target::Script { path },
            Package::Script {
                path: pinned,
                sha256,
            },
            _,
        ) => {
            let now = script_path(&entry, path);
            if now != *pinned {
                // Another script than the pinned one: the config changed, which verify
                // reports; the guard judges its tools as usual.
                return Ok((
                    out,
                    Some(format!(
                        "the entry no longer launches the pinned script {pinned} but {now}; launching it as written (run `mcp-lock verify`)"
                    )),
                ));
            }
            let live = sha256_file(&cwd.join(path)).map_err(|e| {
                format!("refusing to start: cannot read the pinned script {now}: {e}")
            })?;
            if live != *sha256 {
                return Err(format!(
                    "refusing to start: the script {now} changed since it was pinned (sha256 {} -> {}); review it and run `mcp-lock update`",
                    short(sha256),
                    short(&live)
                ));
            }
            Ok((out, None))
        }
        (
            Target::Npm { name, .. },
            Package::Npm {
                name: pinned,
                version,
                ..
            },
            Some(i),
        ) if name == pinned => {
            out[i] = format!("{}{name}@{version}", rec.prefix);
            Ok((out, Some(format!("launching the pinned {name}@{version}"))))
        }
        (
            Target::Pypi { name, .. },
            Package::Pypi {
                name: pinned,
                version,
                ..
            },
            Some(i),
        ) if pypi::normalize(name) == pypi::normalize(pinned) => {
            let spec = format!("{name}=={version}");
            if rec.launcher == "pipx run"
                && rec.prefix.is_empty()
                && args.get(i.wrapping_sub(1)).map(String::as_str) != Some("--spec")
            {
                out.splice(i..i, ["--spec".to_string(), spec.clone()]);
            } else {
                out[i] = format!("{}{spec}", rec.prefix);
            }
            Ok((out, Some(format!("launching the pinned {spec}"))))
        }
        (_, Package::Unrecognised, _) | (_, Package::Oci { .. }, _) => Ok((out, None)),
        _ => Ok((
            out,
            Some(format!(
                "the entry no longer launches the pinned {pin}; launching it as written (run `mcp-lock verify`)"
            )),
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pin(package: Package, launcher: &str) -> PackagePin {
        PackagePin {
            launcher: launcher.into(),
            package,
        }
    }

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn guard_rewrites_npm_and_pypi_specs_to_the_pinned_version() {
        let dir = tempfile::tempdir().unwrap();
        let npm = pin(
            Package::Npm {
                name: "tiny-mcp".into(),
                version: "1.0.0".into(),
                integrity: "sha512-x".into(),
            },
            "npx",
        );
        let (args, _) = pinned_launch(
            "npx",
            &words("-y tiny-mcp --stdio"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y tiny-mcp@1.0.0 --stdio"));
        let (args, _) = pinned_launch(
            "npx",
            &words("-y --package=tiny-mcp@latest tiny"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y --package=tiny-mcp@1.0.0 tiny"));
        let py = pin(
            Package::Pypi {
                name: "tiny-py".into(),
                version: "1.0.0".into(),
                files: BTreeMap::new(),
            },
            "uvx",
        );
        let (args, _) =
            pinned_launch("uvx", &words("tiny-py"), dir.path(), dir.path(), Some(&py)).unwrap();
        assert_eq!(args, words("tiny-py==1.0.0"));
        let (args, _) = pinned_launch(
            "pipx",
            &words("run tiny-py"),
            dir.path(),
            dir.path(),
            Some(&py),
        )
        .unwrap();
        assert_eq!(args, words("run --spec tiny-py==1.0.0 tiny-py"));
        // Another package than the pin: launched as written, with a note.
        let (args, note) = pinned_launch(
            "npx",
            &words("-y other"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y other"));
        assert!(note.unwrap().contains("no longer launches"));
    }

    #[test]
    fn guard_refuses_a_script_whose_hash_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.js"), "console.log(1)\n").unwrap();
        let sha = sha256_file(&dir.path().join("server.js")).unwrap();
        let script = pin(
            Package::Script {
                path: "server.js".into(),
                sha256: sha,
            },
            "node",
        );
        let args = words("server.js");
        assert!(pinned_launch("node", &args, dir.path(), dir.path(), Some(&script)).is_ok());
        std::fs::write(dir.path().join("server.js"), "console.log(2)\n").unwrap();
        let err = pinned_launch("node", &args, dir.path(), dir.path(), Some(&script)).unwrap_err();
        assert!(
            err.starts_with("refusing to start: the script server.js"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }

    #[test]
    fn oci_digests_are_read_from_the_reference() {
        let hex = "b".repeat(64);
        assert_eq!(
            oci_digest(&format!("mcp/github@sha256:{hex}")),
            Some(format!("sha256:{hex}"))
        );
        assert_eq!(oci_digest("mcp/github:1.0"), None);
        assert_eq!(oci_digest("mcp/github@sha256:abc"), None);
    }

    #[tokio::test]
    async fn a_changed_script_is_package_changed_offline_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.py"), "print(1)\n").unwrap();
        let env = BTreeMap::new();
        let args = words("s.py");
        let entry = Entry {
            command: "python3",
            args: &args,
            env: &env,
            cwd: dir.path(),
            project_dir: dir.path(),
            guarded: false,
        };
        let pinned = resolve_pin(&entry).await.unwrap();
        assert_eq!(pinned.package.kind(), "script");
        let same = check(&entry, Some(&pinned), Lookups::Offline).await;
        assert_eq!(same.status, PackageStatus::Pinned);
        std::fs::write(dir.path().join("s.py"), "print(2)\n").unwrap();
        let changed = check(&entry, Some(&pinned), Lookups::Offline).await;
        assert_eq!(changed.status, PackageStatus::Changed);
        assert!(
            changed.message.contains("changed since it was pinned"),
            "{}",
            changed.message
        );
    }

    #[tokio::test]
    async fn an_unreachable_registry_is_unverifiable_and_offline_is_skipped() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let env = BTreeMap::from([(
            "npm_config_registry".to_string(),
            format!("http://127.0.0.1:{port}/"),
        )]);
        let args = words("-y tiny-mcp");
        let entry = Entry {
            command: "npx",
            args: &args,
            env: &env,
            cwd: dir.path(),
            project_dir: dir.path(),
            guarded: false,
        };
        let npm = pin(
            Package::Npm {
                name: "tiny-mcp".into(),
                version: "1.0.0".into(),
                integrity: "sha512-x".into(),
            },
            "npx",
        );
        let online = check(&entry, Some(&npm), Lookups::Online).await;
        assert_eq!(online.status, PackageStatus::Unverifiable);
        assert!(
            online.message.contains("cannot reach"),
            "{}",
            online.message
        );
        assert_eq!(
            check(&entry, Some(&npm), Lookups::Offline).await.status,
            PackageStatus::Skipped
        );
        assert!(resolve_pin(&entry).await.is_err());
    }
}
