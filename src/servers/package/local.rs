//! The project's own copy of an npm package, which `npx` / `npm exec` / `bunx` run in
//! place of the registry's.
//!
//! npm's exec (libnpmexec `exec`, `missingFromTree`) finds the npm prefix (the nearest
//! directory from the working directory that holds `package.json` or `node_modules`),
//! and runs without installing anything when: that prefix's `package.json` has a `bin`
//! named like the command word; a `node_modules/.bin/<word>` exists in it or any
//! directory above; or its `node_modules` tree (at any depth) holds the package at a
//! version the spec accepts (for an exact version, that version; for a name alone,
//! any). The code that runs is then the repository's, whatever the registry holds.
//! mcp-lock cannot prove such files are the pinned tarball's, so a copy that would run
//! is `package-changed`.

use std::io::Read;
use std::path::{Path, PathBuf};

/// Launchers that look in the project before the registry.
pub fn looks_locally(launcher: &str) -> bool {
    matches!(launcher, "npx" | "npm exec" | "npm x" | "bunx" | "bun x")
}

/// The most of a `package.json` read.
const MAX_MANIFEST_BYTES: u64 = 1024 * 1024;

/// The most directory entries looked at in the project's `node_modules`; a larger tree
/// may hold a copy (it cannot be judged, so it counts as one).
const MAX_ENTRIES: usize = 50_000;

/// How deep nested `node_modules` are searched.
const MAX_DEPTH: usize = 12;

/// What in the project the launcher would run instead of the registry's `name`, as one
/// phrase (`node_modules/tiny-mcp (version 1.0.0)`), when anything. `word` is the
/// command word npx is given when no `--package` names the package (`tiny-mcp@1.0.0`);
/// `exact` the version the spec asks for, when exact.
pub fn local_copy(
    cwd: &Path,
    name: &str,
    word: Option<&str>,
    exact: Option<&str>,
) -> Option<String> {
    let cwd = cwd.canonicalize().unwrap_or_else(|_| cwd.to_path_buf());
    let prefix = npm_prefix(&cwd);
    let shown = |p: &Path| {
        p.strip_prefix(&cwd)
            .map(|r| r.display().to_string())
            .unwrap_or_else(|_| p.display().to_string())
    };
    if let Some(word) = word {
        if let Some(manifest) = read_manifest(&prefix.join("package.json"))
            && names_bin(&manifest, word)
        {
            return Some(format!(
                "the project's own package.json, whose bin `{word}` it runs"
            ));
        }
        for dir in prefix.ancestors() {
            let bin = dir.join("node_modules").join(".bin").join(word);
            if std::fs::symlink_metadata(&bin).is_ok() {
                return Some(shown(&bin));
            }
        }
    }
    let modules = prefix.join("node_modules");
    if !modules.is_dir() {
        return None;
    }
    let mut budget = MAX_ENTRIES;
    match find_copy(&modules, name, exact, 0, &mut budget) {
        Found::Copy(path, version) => Some(format!(
            "{} (version {})",
            shown(&path),
            version.as_deref().unwrap_or("unreadable")
        )),
        Found::TooLarge => Some(format!(
            "{} (more than {MAX_ENTRIES} entries: it cannot be searched, and may hold one)",
            shown(&modules)
        )),
        Found::Nothing => None,
    }
}

/// npm's local prefix: the nearest directory from `cwd` up (the filesystem root left
/// out) that holds `package.json` or `node_modules`; else `cwd`.
fn npm_prefix(cwd: &Path) -> PathBuf {
    for dir in cwd.ancestors() {
        if dir.parent().is_none() {
            break;
        }
        if dir.join("package.json").exists() || dir.join("node_modules").is_dir() {
            return dir.to_path_buf();
        }
    }
    cwd.to_path_buf()
}

enum Found {
    Copy(PathBuf, Option<String>),
    TooLarge,
    Nothing,
}

/// A copy of `name` in a `node_modules` directory or one nested in its packages.
fn find_copy(
    modules: &Path,
    name: &str,
    exact: Option<&str>,
    depth: usize,
    budget: &mut usize,
) -> Found {
    let candidate = modules.join(name);
    if candidate.join("package.json").exists() {
        let version = read_manifest(&candidate.join("package.json")).and_then(|m| {
            m.get("version")
                .and_then(|v| v.as_str())
                .map(str::to_string)
        });
        // An exact spec runs only that version; anything else (a name alone, a range,
        // a tag, a version that cannot be read) may run it.
        if exact.is_none() || version.is_none() || version.as_deref() == exact {
            return Found::Copy(candidate, version);
        }
    }
    if depth >= MAX_DEPTH {
        return Found::Nothing;
    }
    // Each package's own node_modules, scoped ones one level down.
    let Ok(entries) = std::fs::read_dir(modules) else {
        return Found::Nothing;
    };
    for entry in entries.flatten() {
        if *budget == 0 {
            return Found::TooLarge;
        }
        *budget -= 1;
        let Ok(kind) = entry.file_type() else {
            continue;
        };
        if !kind.is_dir() {
            continue;
        }
        let path = entry.path();
        let packages: Vec<PathBuf> = if entry.file_name().to_string_lossy().starts_with('@') {
            match std::fs::read_dir(&path) {
                Ok(scoped) => scoped.flatten().map(|e| e.path()).collect(),
                Err(_) => Vec::new(),
            }
        } else {
            vec![path]
        };
        for package in packages {
            let nested = package.join("node_modules");
            if std::fs::symlink_metadata(&nested).is_ok_and(|m| m.is_dir()) {
                match find_copy(&nested, name, exact, depth + 1, budget) {
                    Found::Nothing => {}
                    found => return found,
                }
            }
        }
    }
    Found::Nothing
}

fn read_manifest(path: &Path) -> Option<serde_json::Value> {
    use std::os::unix::fs::OpenOptionsExt;
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .ok()?;
    if !file.metadata().ok()?.is_file() {
        return None;
    }
    let mut text = String::new();
    file.take(MAX_MANIFEST_BYTES)
        .read_to_string(&mut text)
        .ok()?;
    serde_json::from_str(&text).ok()
}

/// Whether a package.json's `bin` names `word` (a string `bin` is named after the
/// package, without its scope).
fn names_bin(manifest: &serde_json::Value, word: &str) -> bool {
    match manifest.get("bin") {
        Some(serde_json::Value::Object(bins)) => bins.contains_key(word),
        Some(serde_json::Value::String(_)) => manifest
            .get("name")
            .and_then(|n| n.as_str())
            .is_some_and(|n| n.rsplit('/').next() == Some(word)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_copy_npx_would_run_is_found_and_one_it_would_not_is_left() {
        let dir = tempfile::tempdir().unwrap();
        let root = dir.path();
        assert_eq!(
            local_copy(root, "tiny-mcp", Some("tiny-mcp@1.0.0"), Some("1.0.0")),
            None
        );
        std::fs::create_dir_all(root.join("node_modules/tiny-mcp")).unwrap();
        std::fs::write(
            root.join("node_modules/tiny-mcp/package.json"),
            r#"{"name":"tiny-mcp","version":"2.0.0"}"#,
        )
        .unwrap();
        // Another version than an exact spec: npx fetches the pinned one.
        assert_eq!(
            local_copy(root, "tiny-mcp", Some("tiny-mcp@1.0.0"), Some("1.0.0")),
            None
        );
        let found = local_copy(root, "tiny-mcp", Some("tiny-mcp"), None).unwrap();
        assert!(
            found.contains("node_modules/tiny-mcp (version 2.0.0)"),
            "{found}"
        );
        // Nested at any depth, scoped or not.
        std::fs::remove_dir_all(root.join("node_modules/tiny-mcp")).unwrap();
        let nested = root.join("node_modules/@a/b/node_modules/tiny-mcp");
        std::fs::create_dir_all(&nested).unwrap();
        std::fs::write(nested.join("package.json"), r#"{"version":"1.0.0"}"#).unwrap();
        assert!(local_copy(root, "tiny-mcp", None, Some("1.0.0")).is_some());
        // A bin named like the command word, in the project's package.json or .bin.
        let other = tempfile::tempdir().unwrap();
        std::fs::write(
            other.path().join("package.json"),
            r#"{"name":"x","bin":{"tiny-mcp@1.0.0":"evil.js"}}"#,
        )
        .unwrap();
        assert!(
            local_copy(
                other.path(),
                "tiny-mcp",
                Some("tiny-mcp@1.0.0"),
                Some("1.0.0")
            )
            .unwrap()
            .contains("package.json")
        );
    }
}
