//! The content-addressed closure cache: each pinned closure installed once, into a
//! directory named by its hash, with a manifest of every file written when the
//! install finished. Before each launch the tree is checked against its manifest; a
//! tree that does not match (or an install that never finished) is removed and
//! installed again, never used.
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

/// The manifest's file name, in the installed directory.
const MANIFEST: &str = ".mcp-lock-manifest";

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
    crate::files::create_dir_within(root, root, 0o700)
        .map_err(|e| failed("make the closure cache beside", e))?;
    let _held = hold(&dir.with_extension("lock"))
        .await
        .map_err(|e| failed("lock the closure cache for", e))?;
    let rebuilt = match check(&dir) {
        Ok(Fit::Matches) => return Ok(Installed { dir, rebuilt: None }),
        Ok(Fit::Missing) => None,
        Ok(Fit::Differs(why)) => Some(why),
        Err(e) => Some(format!("its tree cannot be read: {e}")),
    };
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
    let manifest = manifest_of(&dir).map_err(|e| failed("read what was installed in", e))?;
    crate::files::replace(&dir.join(MANIFEST), &dir, manifest.as_bytes(), 0o600)
        .map_err(|e| failed("write the manifest of", e))?;
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
    only_the_index(&mut command);
    if !install.scripts {
        command.args(["--only-binary", ":all:"]);
    }
    run(
        command,
        &format!("uv installing {}=={}", install.name, install.version),
    )
    .await
}

/// The variables that would give uv another source of packages than the one index
/// (extra indexes, find-links, another strategy across indexes) or change which files
/// it takes, removed from its environment: every package comes from the index the pin
/// names, checked against its hashes.
pub const UV_SOURCE_VARIABLES: &[&str] = &[
    "UV_INDEX",
    "UV_INDEX_URL",
    "UV_DEFAULT_INDEX",
    "UV_EXTRA_INDEX_URL",
    "UV_FIND_LINKS",
    "UV_NO_INDEX",
    "UV_INDEX_STRATEGY",
    "UV_CONSTRAINT",
    "UV_OVERRIDE",
    "UV_BUILD_CONSTRAINT",
    "UV_NO_BINARY",
    "UV_NO_BINARY_PACKAGE",
    "UV_CONFIG_FILE",
    "UV_TORCH_BACKEND",
    "UV_REQUIRE_HASHES",
    "UV_NO_VERIFY_HASHES",
    "UV_VERIFY_HASHES",
];

/// uv with the index it was given as its only source ([`UV_SOURCE_VARIABLES`]).
pub fn only_the_index(command: &mut tokio::process::Command) {
    for name in UV_SOURCE_VARIABLES {
        command.env_remove(name);
    }
    command.args(["--index-strategy", "first-index"]);
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

fn check(dir: &Path) -> std::io::Result<Fit> {
    let recorded = match std::fs::read_to_string(dir.join(MANIFEST)) {
        Ok(text) => text,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Ok(if dir.exists() {
                Fit::Differs("its install never finished".into())
            } else {
                Fit::Missing
            });
        }
        Err(e) => return Err(e),
    };
    let now = manifest_of(dir)?;
    if now == recorded {
        return Ok(Fit::Matches);
    }
    let old: std::collections::BTreeSet<&str> = recorded.lines().collect();
    let first = now
        .lines()
        .find(|l| !old.contains(l))
        .map(|l| l.rsplit('\t').next().unwrap_or(l).to_string());
    let gone = {
        let new: std::collections::BTreeSet<&str> = now.lines().collect();
        recorded
            .lines()
            .find(|l| !new.contains(l))
            .map(|l| l.rsplit('\t').next().unwrap_or(l).to_string())
    };
    Ok(Fit::Differs(match first.or(gone) {
        Some(path) => format!("{path} is not as installed"),
        None => "its files are not as installed".into(),
    }))
}

/// One line per file, directory and symlink under `dir` (but the manifest), sorted:
/// kind, mode or target, sha256 for files, and the path, tab-separated.
pub fn manifest_of(dir: &Path) -> std::io::Result<String> {
    let mut lines = Vec::new();
    let mut stack = vec![PathBuf::new()];
    while let Some(rel) = stack.pop() {
        for entry in std::fs::read_dir(dir.join(&rel))? {
            let entry = entry?;
            let path = rel.join(entry.file_name());
            if path.as_os_str() == MANIFEST {
                continue;
            }
            let meta = std::fs::symlink_metadata(dir.join(&path))?;
            let shown = path.to_string_lossy().into_owned();
            if meta.file_type().is_symlink() {
                let target = std::fs::read_link(dir.join(&path))?;
                lines.push(format!("l\t{}\t\t{shown}", target.display()));
            } else if meta.is_dir() {
                lines.push(format!(
                    "d\t{:o}\t\t{shown}",
                    meta.permissions().mode() & 0o777
                ));
                stack.push(path);
            } else {
                let mut file = std::fs::File::open(dir.join(&path))?;
                let mut hasher = Sha256::new();
                let mut buffer = vec![0u8; 64 * 1024];
                loop {
                    let n = file.read(&mut buffer)?;
                    if n == 0 {
                        break;
                    }
                    hasher.update(&buffer[..n]);
                }
                let mut hex = String::with_capacity(64);
                for byte in hasher.finalize() {
                    let _ = write!(hex, "{byte:02x}");
                }
                lines.push(format!(
                    "f\t{:o}\t{hex}\t{shown}",
                    meta.permissions().mode() & 0o777
                ));
            }
        }
    }
    lines.sort_by(|a, b| a.rsplit('\t').next().cmp(&b.rsplit('\t').next()));
    Ok(lines.join("\n") + "\n")
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
mod tests {
    use super::*;

    #[test]
    fn a_manifest_sees_a_changed_added_or_removed_file() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(dir.path().join("node_modules/a")).unwrap();
        std::fs::write(dir.path().join("node_modules/a/index.js"), "one").unwrap();
        std::fs::write(dir.path().join(MANIFEST), manifest_of(dir.path()).unwrap()).unwrap();
        assert!(matches!(check(dir.path()).unwrap(), Fit::Matches));
        std::fs::write(dir.path().join("node_modules/a/index.js"), "two").unwrap();
        match check(dir.path()).unwrap() {
            Fit::Differs(why) => assert!(why.contains("node_modules/a/index.js"), "{why}"),
            _ => panic!("a changed file went unseen"),
        }
        std::fs::write(dir.path().join("node_modules/a/index.js"), "one").unwrap();
        std::fs::write(dir.path().join("node_modules/a/extra.js"), "x").unwrap();
        assert!(matches!(check(dir.path()).unwrap(), Fit::Differs(_)));
        std::fs::remove_file(dir.path().join("node_modules/a/extra.js")).unwrap();
        std::fs::remove_file(dir.path().join("node_modules/a/index.js")).unwrap();
        assert!(matches!(check(dir.path()).unwrap(), Fit::Differs(_)));
        let fresh = tempfile::tempdir().unwrap();
        let missing = fresh.path().join("never");
        assert!(matches!(check(&missing).unwrap(), Fit::Missing));
    }

    #[test]
    fn npx_runs_the_only_bin_or_the_one_named_as_the_package() {
        let dir = tempfile::tempdir().unwrap();
        let package = dir.path().join("node_modules/@scope/tool");
        std::fs::create_dir_all(&package).unwrap();
        std::fs::write(package.join("package.json"), r#"{"bin": "cli.js"}"#).unwrap();
        assert_eq!(npm_default_bin(dir.path(), "@scope/tool").unwrap(), "tool");
        std::fs::write(package.join("package.json"), r#"{"bin": {"x": "x.js"}}"#).unwrap();
        assert_eq!(npm_default_bin(dir.path(), "@scope/tool").unwrap(), "x");
        std::fs::write(
            package.join("package.json"),
            r#"{"bin": {"x": "x.js", "y": "y.js"}}"#,
        )
        .unwrap();
        assert!(npm_default_bin(dir.path(), "@scope/tool").is_err());
    }
}
