//! The whole dependency closure of an npm or PyPI server: every package its launcher
//! installs, each with its exact version and integrity.
//!
//! `update` resolves it as the launcher would ([`npm::resolve`]: npm's own resolution
//! into a lockfile; [`pypi::resolve`]: uv's, with hashes) and pins it: `mcp.lock`
//! records its [`Closure::hash`] and count, the companion file beside the lock every
//! package. `verify` resolves it again for an entry the host launches itself and
//! reports what moved ([`changes`]); the guard installs exactly it into a
//! content-addressed cache ([`cache`]) and runs the server from there.

pub mod cache;
pub mod npm;
pub mod pypi;
pub mod reuse;
pub mod sdist;
pub mod valid;

use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::Duration;

use serde::Serialize;

pub use super::Ecosystem;

/// Every package a server's launch installs.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Closure {
    pub ecosystem: Ecosystem,
    /// Sorted by path; the server's own package among them.
    pub packages: Vec<Dependency>,
}

/// One package of a closure.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dependency {
    /// npm: where it is installed (`node_modules/a/node_modules/b`); PyPI: its
    /// normalized name.
    pub path: String,
    pub name: String,
    pub version: String,
    /// npm: the registry's sha512 SRI hash of the tarball; PyPI: `sha256:<hex>` of
    /// each file the installer may take, sorted.
    pub integrity: Vec<String>,
    /// npm: the rest of npm's lockfile entry (dependencies, bin, os, cpu, optional…)
    /// as canonical JSON, which `npm ci` needs to lay the tree out as resolved; empty
    /// for PyPI.
    pub entry: String,
    /// It has install scripts (npm's `hasInstallScript`), which are not run unless
    /// allowed.
    pub scripts: bool,
}

/// What `mcp.lock` records of a closure; the packages are in the companion file.
#[derive(Debug, Clone)]
pub struct ClosurePin {
    /// `sha256:<hex>` of the closure ([`Closure::hash`]).
    pub hash: String,
    /// How many packages it holds.
    pub count: usize,
    /// The packages, when read from the companion file or just resolved.
    pub closure: Option<Arc<Closure>>,
}

impl PartialEq for ClosurePin {
    /// Two pins are the same closure when their hashes are: the packages are only
    /// carried along.
    fn eq(&self, other: &Self) -> bool {
        self.hash == other.hash && self.count == other.count
    }
}

impl Eq for ClosurePin {}

impl Closure {
    /// `sha256:<hex>` over one line per package, sorted by path: path, name, version,
    /// integrity (space-separated), `1`/`0` for install scripts and the entry,
    /// tab-separated, each line ending in `\n`, the ecosystem's name first.
    pub fn hash(&self) -> String {
        format!(
            "sha256:{}",
            crate::contract::hash::sha256_hex(self.hash_input().as_bytes())
        )
    }

    fn hash_input(&self) -> String {
        let mut text = format!("{}\n", self.ecosystem.as_str());
        let mut packages: Vec<&Dependency> = self.packages.iter().collect();
        packages.sort_by(|a, b| a.path.cmp(&b.path));
        for p in packages {
            let _ = writeln!(
                text,
                "{}\t{}\t{}\t{}\t{}\t{}",
                p.path,
                p.name,
                p.version,
                p.integrity.join(" "),
                u8::from(p.scripts),
                p.entry
            );
        }
        text
    }

    pub fn pin(self) -> ClosurePin {
        ClosurePin {
            hash: self.hash(),
            count: self.packages.len(),
            closure: Some(Arc::new(self)),
        }
    }

    /// The packages with install scripts, by name.
    pub fn with_scripts(&self) -> Vec<&str> {
        let mut names: Vec<&str> = self
            .packages
            .iter()
            .filter(|p| p.scripts)
            .map(|p| p.name.as_str())
            .collect();
        names.dedup();
        names
    }
}

/// One package of a closure that differs between the pin and what resolves now.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct DependencyChange {
    pub name: String,
    /// Where it is installed (npm) or its normalized name (PyPI).
    pub path: String,
    /// The pinned version (with its integrity when only that changed); absent when the
    /// package is new.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    /// The version resolved now; absent when the package is gone.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
}

impl std::fmt::Display for DependencyChange {
    /// "ms 2.1.2 -> 2.1.3", "ms added (2.1.3)", "ms removed (2.1.2)".
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match (&self.from, &self.to) {
            (Some(a), Some(b)) => write!(f, "{} {a} -> {b}", self.name),
            (None, Some(b)) => write!(f, "{} added ({b})", self.name),
            (Some(a), None) => write!(f, "{} removed ({a})", self.name),
            (None, None) => write!(f, "{}", self.name),
        }
    }
}

/// What moved from `pinned` to `live`, package by package (by path), sorted.
pub fn changes(pinned: &Closure, live: &Closure) -> Vec<DependencyChange> {
    use std::collections::BTreeMap;
    let old: BTreeMap<&str, &Dependency> = pinned
        .packages
        .iter()
        .map(|p| (p.path.as_str(), p))
        .collect();
    let new: BTreeMap<&str, &Dependency> =
        live.packages.iter().map(|p| (p.path.as_str(), p)).collect();
    let mut out = Vec::new();
    for (path, a) in &old {
        match new.get(path) {
            None => out.push(DependencyChange {
                name: a.name.clone(),
                path: path.to_string(),
                from: Some(a.version.clone()),
                to: None,
            }),
            Some(b) if a != b => {
                let (from, to) = if a.version == b.version {
                    (
                        format!("{} ({})", a.version, short_integrity(&a.integrity)),
                        format!("{} ({})", b.version, short_integrity(&b.integrity)),
                    )
                } else {
                    (a.version.clone(), b.version.clone())
                };
                out.push(DependencyChange {
                    name: b.name.clone(),
                    path: path.to_string(),
                    from: Some(from),
                    to: Some(to),
                });
            }
            Some(_) => {}
        }
    }
    for (path, b) in &new {
        if !old.contains_key(path) {
            out.push(DependencyChange {
                name: b.name.clone(),
                path: path.to_string(),
                from: None,
                to: Some(b.version.clone()),
            });
        }
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    out
}

fn short_integrity(integrity: &[String]) -> String {
    match integrity.first() {
        None => "no integrity".into(),
        Some(first) => first.chars().take(19).collect::<String>() + "…",
    }
}

/// How long a resolution or an install may take before it is abandoned (and its
/// process killed).
pub const INSTALL_DEADLINE: Duration = Duration::from_secs(300);

/// The most of a lockfile or installer output read.
pub const MAX_OUTPUT: usize = 64 * 1024 * 1024;

/// Where a tool the launcher needs (`npm` beside `npx`, `uv` beside `uvx`) is: beside
/// the entry's command when that is an absolute path outside the project (a cloned
/// repository's own `bin/npm` is never run: the config asked for its `npx`, not that),
/// else found in the absolute directories of `PATH`.
pub fn tool_beside(command: &str, tool: &str, project_dir: &Path) -> Option<PathBuf> {
    let written = Path::new(command);
    let project = project_dir
        .canonicalize()
        .unwrap_or_else(|_| project_dir.to_path_buf());
    if written.is_absolute() {
        let beside = written.with_file_name(tool);
        let real = beside.canonicalize().ok();
        if beside.is_file() && real.is_some_and(|r| !r.starts_with(&project)) {
            return Some(beside);
        }
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .filter(|dir| dir.is_absolute())
        .map(|dir| dir.join(tool))
        .find(|candidate| candidate.is_file())
}

/// Runs an installer to the end within [`INSTALL_DEADLINE`], its output bounded; the
/// process is killed if the deadline passes or the caller goes away. `Err`: one line
/// saying what failed, with the tool's own last error line.
pub async fn run_tool(
    command: tokio::process::Command,
    what: &str,
    stdin: Option<String>,
) -> Result<String, String> {
    run_tool_stderr(command, what, stdin)
        .await
        .map_err(|(message, _)| message)
}

/// [`run_tool`], with what the tool printed on stderr beside the one-line error when
/// it failed (empty when it never ran), for a caller that reads more of it.
pub async fn run_tool_stderr(
    mut command: tokio::process::Command,
    what: &str,
    stdin: Option<String>,
) -> Result<String, (String, String)> {
    use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
    command
        .stdin(if stdin.is_some() {
            std::process::Stdio::piped()
        } else {
            std::process::Stdio::null()
        })
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .kill_on_drop(true);
    let mut child = command
        .spawn()
        .map_err(|e| (format!("cannot start {what}: {e}"), String::new()))?;
    if let (Some(input), Some(mut pipe)) = (stdin, child.stdin.take()) {
        tokio::spawn(async move {
            let _ = pipe.write_all(input.as_bytes()).await;
        });
    }
    let mut out = child.stdout.take().expect("piped");
    let mut err = child.stderr.take().expect("piped");
    let work = async {
        let mut stdout = Vec::new();
        let mut stderr = Vec::new();
        let mut out = (&mut out).take(MAX_OUTPUT as u64);
        let mut err = (&mut err).take(MAX_OUTPUT as u64);
        let (a, b) = tokio::join!(out.read_to_end(&mut stdout), err.read_to_end(&mut stderr));
        let status = child.wait().await;
        (a.and(b), status, stdout, stderr)
    };
    let (read, status, stdout, stderr) = tokio::time::timeout(INSTALL_DEADLINE, work)
        .await
        .map_err(|_| {
            (
                format!(
                    "{what} did not finish within {} s; stopped",
                    INSTALL_DEADLINE.as_secs()
                ),
                String::new(),
            )
        })?;
    read.map_err(|e| {
        (
            format!("cannot read what {what} printed: {e}"),
            String::new(),
        )
    })?;
    let status = status.map_err(|e| (format!("{what} failed: {e}"), String::new()))?;
    if !status.success() {
        let stderr = String::from_utf8_lossy(&stderr).into_owned();
        return Err((
            format!("{what} failed ({status}): {}", last_error_line(&stderr)),
            stderr,
        ));
    }
    Ok(String::from_utf8_lossy(&stdout).into_owned())
}

/// The line of an installer's error output that says most: the first that names an
/// error, else the last non-empty one.
pub fn last_error_line(stderr: &str) -> String {
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    let line = lines
        .iter()
        .find(|l| l.contains("EINTEGRITY") || l.to_ascii_lowercase().contains("hash mismatch"))
        .or_else(|| {
            lines
                .iter()
                .find(|l| l.starts_with("npm error") && !l.contains("A complete log"))
        })
        .or_else(|| lines.iter().find(|l| l.starts_with("error:")))
        .or(lines.last())
        .copied()
        .unwrap_or("no error output");
    crate::base::text::escape_for_terminal(&line.chars().take(400).collect::<String>())
}

/// Whether an installer's error line says an integrity or hash did not match.
pub fn is_integrity_error(line: &str) -> bool {
    line.contains("EINTEGRITY")
        || line.contains("integrity checksum failed")
        || line.to_ascii_lowercase().contains("hash mismatch")
}

/// Runs `command` at a lower CPU priority than mcp-lock and the servers it lists.
pub fn lower_priority(command: &mut tokio::process::Command) {
    // SAFETY: setpriority is a single system call, safe between fork and exec.
    unsafe {
        command.pre_exec(|| {
            libc::setpriority(libc::PRIO_PROCESS, 0, 10);
            Ok(())
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    pub(super) fn dep(path: &str, version: &str, integrity: &str) -> Dependency {
        Dependency {
            path: path.into(),
            name: path.rsplit("node_modules/").next().unwrap().into(),
            version: version.into(),
            integrity: vec![integrity.into()],
            entry: String::new(),
            scripts: false,
        }
    }

    fn closure(packages: Vec<Dependency>) -> Closure {
        Closure {
            ecosystem: Ecosystem::Npm,
            packages,
        }
    }

    #[test]
    fn the_closure_hash_covers_every_field_and_not_the_order() {
        let a = closure(vec![
            dep("node_modules/a", "1.0.0", "sha512-a"),
            dep("node_modules/b", "2.0.0", "sha512-b"),
        ]);
        let mut reordered = a.clone();
        reordered.packages.reverse();
        assert_eq!(a.hash(), reordered.hash());
        let mut other = a.clone();
        other.packages[1].integrity = vec!["sha512-c".into()];
        assert_ne!(a.hash(), other.hash());
        let mut scripts = a.clone();
        scripts.packages[0].scripts = true;
        assert_ne!(a.hash(), scripts.hash());
        let mut entry = a.clone();
        entry.packages[0].entry = r#"{"dependencies":{"b":"^2"}}"#.into();
        assert_ne!(a.hash(), entry.hash());
        assert!(a.hash().starts_with("sha256:"));
    }

    #[test]
    fn a_tool_beside_a_command_inside_the_project_is_never_taken() {
        let project = tempfile::tempdir().unwrap();
        let bin = project.path().join("bin");
        std::fs::create_dir(&bin).unwrap();
        std::fs::write(bin.join("npx"), "").unwrap();
        std::fs::write(bin.join("npm-decoy"), "").unwrap();
        let npx = bin.join("npx").display().to_string();
        assert_eq!(tool_beside(&npx, "npm-decoy", project.path()), None);
        let elsewhere = tempfile::tempdir().unwrap();
        assert_eq!(
            tool_beside(&npx, "npm-decoy", elsewhere.path()),
            Some(bin.join("npm-decoy"))
        );
    }

    #[test]
    fn changes_name_each_package_that_moved_was_added_or_went() {
        let pinned = closure(vec![
            dep("node_modules/a", "1.0.0", "sha512-a"),
            dep("node_modules/b", "2.0.0", "sha512-b"),
            dep("node_modules/c", "3.0.0", "sha512-c"),
        ]);
        let live = closure(vec![
            dep("node_modules/a", "1.0.1", "sha512-a2"),
            dep("node_modules/b", "2.0.0", "sha512-other"),
            dep("node_modules/d", "4.0.0", "sha512-d"),
        ]);
        let shown: Vec<String> = changes(&pinned, &live)
            .iter()
            .map(ToString::to_string)
            .collect();
        assert_eq!(
            shown,
            [
                "a 1.0.0 -> 1.0.1",
                "b 2.0.0 (sha512-b…) -> 2.0.0 (sha512-other…)",
                "c removed (3.0.0)",
                "d added (4.0.0)"
            ]
        );
        assert!(changes(&pinned, &pinned).is_empty());
    }
}
