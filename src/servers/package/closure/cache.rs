//! The content-addressed closure cache: each pinned closure installed once, into a
//! directory named by its hash, with a manifest of every file written when the
//! install finished. Before each launch the tree is checked against its manifest; a
//! tree that does not match (or an install that never finished) is removed and
//! installed again, never used.
//!
//! The manifest lies inside the tree it describes, so whoever can write the cache can
//! rewrite it too: each of its lines, and the whole, carries an HMAC-SHA256 under a
//! key of the user's own, kept outside the cache (`$XDG_CONFIG_HOME/mcp-lock/
//! closure-cache.key`, made on first use), bound to the closure hash the lock pins
//! and the directory. A file changed and its line recomputed no longer verifies, and
//! the check names it; a manifest without a valid seal (an older mcp-lock's, or one
//! written under another key) is not trusted: the closure is installed again.
//!
//! npm closures install with `npm ci` from the lockfile rebuilt out of the pin (npm
//! checks each tarball against its pinned integrity); PyPI closures into a virtual
//! environment with `uv pip install --require-hashes --no-deps`. Install scripts
//! (npm lifecycle scripts; building a PyPI source distribution) are off unless the
//! server is allowed them.

use std::fmt::Write as _;
use std::io::Read as _;
use std::os::unix::fs::PermissionsExt as _;
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use super::{Closure, Ecosystem, is_integrity_error, npm, pypi, run_tool};

mod stats;
use stats::*;

/// The manifest's file name, in the installed directory.
const MANIFEST: &str = ".mcp-lock-manifest";

/// The manifest's first line: its format (keyed lines, then a keyed end).
const MANIFEST_HEADER: &str = "mcp-lock closure manifest 2";

/// The most of a manifest read.
const MAX_MANIFEST: u64 = super::MAX_OUTPUT as u64;

/// The key file's name, in mcp-lock's config directory.
const KEY_FILE: &str = "closure-cache.key";

/// What to install.
#[derive(Debug, Clone)]
pub struct Install<'a> {
    pub closure: &'a Closure,
    /// The closure's hash, which names its directory.
    pub hash: &'a str,
    /// The server's own package.
    pub name: &'a str,
    pub version: &'a str,
    /// `npm` or `uv`.
    pub tool: PathBuf,
    /// The registry (npm) or index (PyPI) the packages come from.
    pub registry: String,
    /// Install scripts run (npm lifecycle scripts; PyPI source builds).
    pub scripts: bool,
}

/// An installed closure.
#[derive(Debug, Clone)]
pub struct Installed {
    pub dir: PathBuf,
    /// Why it was installed again (a tree that did not match its manifest), when it was.
    pub rebuilt: Option<String>,
}

/// Why a closure could not be installed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum InstallError {
    /// A package's bytes do not match the pinned integrity or hash.
    #[error("integrity mismatch installing the pinned closure: {0}")]
    Integrity(String),
    #[error("{0}")]
    Failed(String),
}

/// `$XDG_CACHE_HOME/mcp-lock/closures`, else `$HOME/.cache/mcp-lock/closures`.
pub fn cache_root() -> Option<PathBuf> {
    let base = std::env::var_os("XDG_CACHE_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".cache"))
        })?;
    Some(base.join("mcp-lock").join("closures"))
}

/// The directory a closure installs into under `root`.
pub fn dir_for(root: &Path, install: &Install<'_>) -> PathBuf {
    let hex = install.hash.strip_prefix("sha256:").unwrap_or(install.hash);
    let short: String = hex.chars().take(32).collect();
    root.join(format!(
        "{}-{short}{}",
        install.closure.ecosystem.as_str(),
        if install.scripts { "-scripts" } else { "" }
    ))
}

/// The closure installed under `root` and checked against its manifest: installed
/// now if it never was, or again if its tree does not match. Other processes
/// installing the same closure wait for each other.
pub async fn ensure(root: &Path, install: &Install<'_>) -> Result<Installed, InstallError> {
    let dir = dir_for(root, install);
    let failed = |what: &str, e: std::io::Error| {
        InstallError::Failed(format!("cannot {what} {}: {e}", dir.display()))
    };
    crate::base::files::create_dir_within(root, root, 0o700)
        .map_err(|e| failed("make the closure cache beside", e))?;
    let _held = hold(&dir.with_extension("lock"))
        .await
        .map_err(|e| failed("lock the closure cache for", e))?;
    let seal = cache_key(root).map(|key| Seal::new(key, install.hash, &dir));
    let rebuilt = match check(&dir, &seal) {
        Ok(Fit::Matches) => return Ok(Installed { dir, rebuilt: None }),
        Ok(Fit::Missing) => None,
        Ok(Fit::Differs(why)) => Some(why),
        Err(e) => Some(format!("its tree cannot be read: {e}")),
    };
    // A stat record of the tree removed is of no use to the one installed now.
    let _ = std::fs::remove_file(stats_path(&dir));
    if dir.exists() {
        std::fs::remove_dir_all(&dir).map_err(|e| failed("remove", e))?;
    }
    std::fs::create_dir_all(&dir).map_err(|e| failed("make", e))?;
    let done = match install.closure.ecosystem {
        Ecosystem::Npm => install_npm(&dir, install).await,
        Ecosystem::Pypi => install_pypi(&dir, install).await,
    };
    if let Err(e) = done {
        let _ = std::fs::remove_dir_all(&dir);
        return Err(e);
    }
    // Without a key nothing is written that a later launch could trust: the closure
    // is installed again each time, and said so.
    if let Ok(seal) = &seal {
        let manifest = manifest_of(&dir).map_err(|e| failed("read what was installed in", e))?;
        crate::base::files::replace(
            &dir.join(MANIFEST),
            &dir,
            seal.seal(&manifest).as_bytes(),
            0o600,
        )
        .map_err(|e| failed("write the manifest of", e))?;
    }
    Ok(Installed { dir, rebuilt })
}

async fn install_npm(dir: &Path, install: &Install<'_>) -> Result<(), InstallError> {
    let write = |name: &str, text: &str| {
        std::fs::write(dir.join(name), text)
            .map_err(|e| InstallError::Failed(format!("cannot write {name}: {e}")))
    };
    write(
        "package.json",
        &npm::package_json(install.name, install.version),
    )?;
    write(
        "package-lock.json",
        &npm::lockfile(install.closure, install.name, install.version)
            .map_err(InstallError::Failed)?,
    )?;
    let mut command = tokio::process::Command::new(&install.tool);
    command
        .current_dir(dir)
        .args([
            "ci",
            "--no-audit",
            "--no-fund",
            "--no-update-notifier",
            // Not --prefer-offline: with no `resolved` in the lockfile npm finds each
            // tarball through the registry's packument, and a cached packument older
            // than the pinned release does not list it (ETARGET).
        ])
        .arg(format!("--registry={}", install.registry));
    if !install.scripts {
        command.arg("--ignore-scripts");
    }
    run(
        command,
        &format!("npm ci for {}@{}", install.name, install.version),
    )
    .await?;
    // npm checked each tarball against its integrity; the tree must also be the one
    // pinned, package by package.
    for p in &install.closure.packages {
        let manifest = dir.join(&p.path).join("package.json");
        let installed = std::fs::read_to_string(&manifest)
            .ok()
            .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
            .and_then(|v| v.get("version").and_then(|v| v.as_str()).map(String::from));
        let optional = p.entry.contains("\"optional\":true");
        match installed {
            Some(v) if v == p.version => {}
            None if optional => {}
            other => {
                return Err(InstallError::Failed(format!(
                    "npm ci installed {} as {} where {} is pinned",
                    p.path,
                    other.as_deref().unwrap_or("nothing"),
                    p.version
                )));
            }
        }
    }
    Ok(())
}

async fn install_pypi(dir: &Path, install: &Install<'_>) -> Result<(), InstallError> {
    let requirements = pypi::requirements(install.closure).map_err(InstallError::Failed)?;
    std::fs::write(dir.join("requirements.txt"), requirements)
        .map_err(|e| InstallError::Failed(format!("cannot write requirements.txt: {e}")))?;
    let mut venv = tokio::process::Command::new(&install.tool);
    venv.current_dir(dir)
        .args(["venv", "--no-config", "--quiet", "venv"]);
    run(venv, "uv venv").await?;
    let mut command = tokio::process::Command::new(&install.tool);
    command
        .current_dir(dir)
        .args([
            "pip",
            "install",
            "--no-config",
            "--quiet",
            "--require-hashes",
            "--no-deps",
            "--python",
            "venv/bin/python",
            "-r",
            "requirements.txt",
        ])
        .arg("--index-url")
        .arg(&install.registry);
    pypi::only_the_index(&mut command);
    if !install.scripts {
        command.args(["--only-binary", ":all:"]);
    }
    let what = format!("uv installing {}=={}", install.name, install.version);
    match super::run_tool_stderr(command, &what, None).await {
        Ok(_) => Ok(()),
        Err((e, _)) if is_integrity_error(&e) => Err(InstallError::Integrity(e)),
        Err((e, stderr)) => match pypi::source_only(&stderr).first() {
            // A dependency pinned by its sdist (static metadata, read without building
            // it) is built when installed, as uvx would: its build backend runs then,
            // and only where scripts are allowed.
            Some((package, _)) if !install.scripts => Err(InstallError::Failed(format!(
                "{package} is pinned as a source distribution, and installing it builds it (runs its build backend, as uvx would): allow that for this server with `mcp-lock guard --allow-scripts` or `[closure] allow-scripts` in mcp-lock.toml"
            ))),
            _ => Err(InstallError::Failed(e)),
        },
    }
}

async fn run(command: tokio::process::Command, what: &str) -> Result<(), InstallError> {
    run_tool(command, what, None).await.map(drop).map_err(|e| {
        if is_integrity_error(&e) {
            InstallError::Integrity(e)
        } else {
            InstallError::Failed(e)
        }
    })
}

/// An exclusive `flock` on `path`, waited for off the async workers.
async fn hold(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd as _;
    let file = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(path)?;
    tokio::task::spawn_blocking(move || {
        // SAFETY: flock on a descriptor this function owns; it blocks until granted.
        let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX) };
        if rc == 0 {
            Ok(file)
        } else {
            Err(std::io::Error::last_os_error())
        }
    })
    .await
    .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}

enum Fit {
    Matches,
    Missing,
    Differs(String),
}

/// The user's key for the closure cache's manifests: 32 random bytes, hex, in
/// `$XDG_CONFIG_HOME/mcp-lock/` (else `~/.config/mcp-lock/`), made on first use with
/// mode 0600. Never one inside the cache (`cache_root`): the cache is what it checks.
/// `Err`: why there is none, one line.
pub(super) fn cache_key(cache_root: &Path) -> Result<ring::hmac::Key, String> {
    let base = std::env::var_os("XDG_CONFIG_HOME")
        .filter(|v| !v.is_empty())
        .map(PathBuf::from)
        .or_else(|| {
            std::env::var_os("HOME")
                .filter(|v| !v.is_empty())
                .map(|h| PathBuf::from(h).join(".config"))
        })
        .ok_or("neither XDG_CONFIG_HOME nor HOME is set: no key to check the cache against")?;
    let dir = base.join("mcp-lock");
    let path = dir.join(KEY_FILE);
    let shown = path.display();
    let root = cache_root
        .canonicalize()
        .unwrap_or_else(|_| cache_root.to_path_buf());
    let real_dir = crate::base::files::create_dir_within(&dir, &dir, 0o700)
        .map_err(|e| format!("cannot make {}: {e}", dir.display()))?;
    if real_dir.starts_with(&root) {
        return Err(format!(
            "{shown} is inside the closure cache it would check; set XDG_CONFIG_HOME elsewhere"
        ));
    }
    let hex = match read_key(&path) {
        Ok(hex) => hex,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            use ring::rand::SecureRandom as _;
            let mut bytes = [0u8; 32];
            ring::rand::SystemRandom::new()
                .fill(&mut bytes)
                .map_err(|_| "no randomness for the closure cache key".to_string())?;
            let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
            match write_key(&path, &hex) {
                Ok(()) => hex,
                // Another process made it first: its key is the one.
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {
                    read_key(&path).map_err(|e| format!("cannot read {shown}: {e}"))?
                }
                Err(e) => return Err(format!("cannot write {shown}: {e}")),
            }
        }
        Err(e) => {
            return Err(format!(
                "cannot read {shown}: {e}; remove it to make a new one"
            ));
        }
    };
    let bytes: Option<Vec<u8>> = (hex.len() == 64)
        .then(|| {
            (0..64)
                .step_by(2)
                .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).ok())
                .collect()
        })
        .flatten();
    let bytes = bytes
        .ok_or_else(|| format!("{shown} is not 64 hex digits; remove it to make a new one"))?;
    Ok(ring::hmac::Key::new(ring::hmac::HMAC_SHA256, &bytes))
}

/// The key file's text, trimmed: a regular file only (no link followed, no FIFO
/// waited on), read bounded.
fn read_key(path: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)?;
    if !file.metadata()?.is_file() {
        return Err(std::io::Error::other("not a regular file"));
    }
    let mut text = String::new();
    file.take(256).read_to_string(&mut text)?;
    Ok(text.trim().to_string())
}

fn write_key(path: &Path, hex: &str) -> std::io::Result<()> {
    use std::io::Write as _;
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(0o600)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)?;
    file.write_all(format!("{hex}\n").as_bytes())?;
    file.sync_all()
}

/// Seals and checks one closure directory's manifest: the user's key, bound to the
/// closure hash the lock pins and the directory's name, so no line moves from one
/// closure or directory to another.
struct Seal {
    key: ring::hmac::Key,
    binding: String,
}

impl Seal {
    fn new(key: ring::hmac::Key, closure_hash: &str, dir: &Path) -> Seal {
        let name = dir
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        Seal {
            key,
            binding: format!("{closure_hash}\t{name}\n"),
        }
    }

    fn tag(&self, text: &str) -> String {
        let mut context = ring::hmac::Context::with_key(&self.key);
        context.update(self.binding.as_bytes());
        context.update(text.as_bytes());
        context
            .sign()
            .as_ref()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect()
    }

    fn verifies(&self, text: &str, tag: &str) -> bool {
        let Some(tag) = (tag.len() == 64)
            .then(|| {
                (0..64)
                    .step_by(2)
                    .map(|i| u8::from_str_radix(&tag[i..i + 2], 16).ok())
                    .collect::<Option<Vec<u8>>>()
            })
            .flatten()
        else {
            return false;
        };
        let mut message = self.binding.clone().into_bytes();
        message.extend_from_slice(text.as_bytes());
        ring::hmac::verify(&self.key, &message, &tag).is_ok()
    }

    /// The manifest as written: the header, each line behind its tag, then `end` and
    /// the tag of everything before it.
    fn seal(&self, manifest: &str) -> String {
        let mut out = format!("{MANIFEST_HEADER}\n");
        for line in manifest.lines() {
            let _ = writeln!(out, "{}\t{line}", self.tag(line));
        }
        let end = self.tag(&out);
        let _ = writeln!(out, "end\t{end}");
        out
    }
}

/// The path a manifest line names (its last field).
fn path_of(line: &str) -> String {
    line.rsplit('\t').next().unwrap_or(line).to_string()
}

fn check(dir: &Path, seal: &Result<Seal, String>) -> std::io::Result<Fit> {
    let recorded = match read_manifest(dir) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(if dir.exists() {
                Fit::Differs(match seal {
                    Ok(_) => "its install never finished".into(),
                    Err(why) => format!("it cannot be trusted without a key ({why})"),
                })
            } else {
                Fit::Missing
            });
        }
        Err(e) => return Err(e),
    };
    let seal = match seal {
        Ok(seal) => seal,
        Err(why) => {
            return Ok(Fit::Differs(format!(
                "it cannot be trusted without a key ({why})"
            )));
        }
    };
    let Some(body) = recorded.strip_prefix(&format!("{MANIFEST_HEADER}\n")) else {
        return Ok(Fit::Differs(
            "its manifest carries no seal of this user's key (an older mcp-lock's?)".into(),
        ));
    };
    // Each line as mcp-lock wrote it, the first whose tag does not verify, and
    // whether the whole does.
    let mut lines = Vec::new();
    let mut forged = None;
    let mut sealed = false;
    // The whole verifies: every line is as mcp-lock sealed it, without a tag per line.
    if let Some(at) = body
        .rfind("\nend\t")
        .map(|i| i + 1)
        .or_else(|| body.starts_with("end\t").then_some(0))
        && let Some(tag) = body[at..]
            .strip_suffix('\n')
            .and_then(|l| l.strip_prefix("end\t"))
        && !tag.contains('\n')
        && seal.verifies(&recorded[..MANIFEST_HEADER.len() + 1 + at], tag)
    {
        lines = body[..at]
            .lines()
            .map(|l| l.split_once('\t').map_or(l, |(_, rest)| rest))
            .collect();
        sealed = true;
    }
    let mut before = format!("{MANIFEST_HEADER}\n");
    for line in body.lines().take_while(|_| !sealed) {
        if let Some(tag) = line.strip_prefix("end\t") {
            sealed = seal.verifies(&before, tag) && before.len() + line.len() + 1 == recorded.len();
            break;
        }
        match line.split_once('\t') {
            Some((tag, rest)) if seal.verifies(rest, tag) => lines.push(rest),
            Some((_, rest)) => {
                forged.get_or_insert_with(|| path_of(rest));
                lines.push(rest);
            }
            None => {
                forged.get_or_insert_with(|| path_of(line));
            }
        }
        before.push_str(line);
        before.push('\n');
    }
    if let Some(path) = forged {
        return Ok(Fit::Differs(format!(
            "{path} is not as installed (its manifest line is not the one mcp-lock sealed)"
        )));
    }
    let recorded = lines.join("\n") + "\n";
    let known = read_stats(dir, seal);
    let (now, stats) = manifest_with(dir, known.as_ref())?;
    if now == recorded && sealed {
        // What was hashed now is remembered for the next launch; a record that cannot
        // be written only means hashing again then.
        if stats.hashed > 0 {
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos() as i128);
            let _ = write_stats(dir, seal, &stats, now);
        }
        return Ok(Fit::Matches);
    }
    let old: std::collections::BTreeSet<&str> = recorded.lines().collect();
    let first = now.lines().find(|l| !old.contains(l)).map(path_of);
    let gone = {
        let new: std::collections::BTreeSet<&str> = now.lines().collect();
        recorded.lines().find(|l| !new.contains(l)).map(path_of)
    };
    Ok(Fit::Differs(match first.or(gone) {
        Some(path) => format!("{path} is not as installed"),
        None if !sealed => "its manifest is not the one mcp-lock sealed".into(),
        None => "its files are not as installed".into(),
    }))
}

/// The manifest's text, read bounded, from a regular file only.
fn read_manifest(dir: &Path) -> std::io::Result<String> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(dir.join(MANIFEST))?;
    if !file.metadata()?.is_file() {
        return Ok(String::new());
    }
    let mut text = String::new();
    file.take(MAX_MANIFEST + 1).read_to_string(&mut text)?;
    if text.len() as u64 > MAX_MANIFEST {
        return Ok(String::new());
    }
    Ok(text)
}

/// One line per file, directory and symlink under `dir` (but the manifest), sorted:
/// kind, mode or target, sha256 for files, and the path, tab-separated.
pub fn manifest_of(dir: &Path) -> std::io::Result<String> {
    manifest_with(dir, None).map(|(text, _)| text)
}

/// The program to run from an installed closure and its arguments: the executable the
/// launcher would have run (`npx pkg` the package's own bin, `uvx pkg` the command
/// named after it, `--package P cmd` / `--from P cmd` the command named), with the
/// arguments that follow it in the entry.
pub fn program(
    installed: &Path,
    ecosystem: Ecosystem,
    name: &str,
    command: Option<&str>,
    rest: &[String],
) -> Result<(PathBuf, Vec<String>), String> {
    let bin = match ecosystem {
        Ecosystem::Npm => installed.join("node_modules").join(".bin"),
        Ecosystem::Pypi => installed.join("venv").join("bin"),
    };
    let command = match (command, ecosystem) {
        (Some(c), _) => c.to_string(),
        (None, Ecosystem::Pypi) => name.to_string(),
        (None, Ecosystem::Npm) => npm_default_bin(installed, name)?,
    };
    if command.contains('/') || command.is_empty() || command.starts_with('.') {
        return Err(format!("{command:?} is not a command name"));
    }
    let program = bin.join(&command);
    if !program.exists() {
        return Err(format!(
            "the pinned closure of {name} has no command {command:?}"
        ));
    }
    Ok((program, rest.to_vec()))
}

/// The bin `npx pkg` runs: the only one, or the one named as the package (without
/// its scope).
fn npm_default_bin(installed: &Path, name: &str) -> Result<String, String> {
    let manifest = installed
        .join("node_modules")
        .join(name)
        .join("package.json");
    let text = std::fs::read_to_string(&manifest)
        .map_err(|e| format!("cannot read {}: {e}", manifest.display()))?;
    let package: serde_json::Value = serde_json::from_str(&text)
        .map_err(|e| format!("{} is not JSON: {e}", manifest.display()))?;
    let unscoped = name.rsplit('/').next().unwrap_or(name);
    match package.get("bin") {
        Some(serde_json::Value::String(_)) => Ok(unscoped.to_string()),
        Some(serde_json::Value::Object(bins)) if bins.len() == 1 => {
            Ok(bins.keys().next().expect("one").clone())
        }
        Some(serde_json::Value::Object(bins)) if bins.contains_key(unscoped) => {
            Ok(unscoped.to_string())
        }
        _ => Err(format!(
            "{name} has no single executable for npx to run (its package.json `bin`)"
        )),
    }
}

#[cfg(test)]
mod tests;
