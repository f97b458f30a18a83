//! What a pinned package may be. A closure comes from npm's or uv's resolution at
//! `update` and from the companion file (`mcp.closure.lock`) at every read, and the
//! companion is a file of the repository: a cloned repository writes what it likes
//! there. So every field npm or uv acts on is checked, wherever a closure comes in and
//! again before an installer is handed it: a package is the registry's, by name and
//! exact version, with its hash, and nothing else (no `resolved` tarball, no link, no
//! file, git or directory spec, no line a requirements file would read as more).

use serde_json::{Map, Value};

use super::{Closure, Dependency, Ecosystem};
use crate::servers::package::{Package, PackagePin, npm, pypi};

/// The longest name or version accepted (npm's limit for names).
const MAX_WORD: usize = 214;

/// Whether every package of `closure` is one a pin may hold. `Err`: one line naming
/// the package and the field.
pub fn check(closure: &Closure) -> Result<(), String> {
    let mut seen = std::collections::BTreeSet::new();
    for p in &closure.packages {
        let checked = match closure.ecosystem {
            Ecosystem::Npm => npm_package(p),
            Ecosystem::Pypi => pypi_package(p),
        };
        checked.map_err(|e| format!("package {}: {e}", shown(&p.path)))?;
        if !seen.insert(p.path.as_str()) {
            return Err(format!("package {} is listed twice", shown(&p.path)));
        }
    }
    Ok(())
}

/// Whether `closure` is the closure `pin` pins: as many packages as the lock counts,
/// the same ecosystem, and the server's own package at the lock's version with the
/// lock's integrity (npm) or only hashes of files the lock pins (PyPI). `Err`: one
/// line saying what differs.
pub fn fits(pin: &PackagePin, closure: &Closure) -> Result<(), String> {
    if let Some(count) = pin.closure.as_ref().map(|c| c.count)
        && count != closure.packages.len()
    {
        return Err(format!(
            "it holds {} where mcp.lock counts {count}",
            crate::base::text::count(closure.packages.len(), "package")
        ));
    }
    match (&pin.package, closure.ecosystem) {
        (
            Package::Npm {
                name,
                version,
                integrity,
            },
            Ecosystem::Npm,
        ) => {
            let path = format!("node_modules/{name}");
            let root = root(closure, &path, name)?;
            if root.name != *name || root.version != *version {
                return Err(format!(
                    "its {path} is {}@{} where mcp.lock pins {name}@{version}",
                    root.name, root.version
                ));
            }
            let pinned = npm::sha512_of(integrity).unwrap_or(integrity);
            if root.integrity.as_slice() != [pinned.to_string()] {
                return Err(format!(
                    "the `integrity` of its {path} is not the one mcp.lock pins for {name}@{version}"
                ));
            }
            Ok(())
        }
        (
            Package::Pypi {
                name,
                version,
                files,
            },
            Ecosystem::Pypi,
        ) => {
            let root = root(closure, &pypi::normalize(name), name)?;
            if !pypi::same_version(&root.version, version) {
                return Err(format!(
                    "its {} is version {} where mcp.lock pins {name}=={version}",
                    root.path, root.version
                ));
            }
            let pinned: std::collections::BTreeSet<String> =
                files.values().map(|sha| format!("sha256:{sha}")).collect();
            if let Some(other) = root.integrity.iter().find(|h| !pinned.contains(*h)) {
                return Err(format!(
                    "the `integrity` of its {} has {other}, which is no file mcp.lock pins for {name}=={version}",
                    root.path
                ));
            }
            Ok(())
        }
        (package, ecosystem) => Err(format!(
            "it is a closure of {} packages where mcp.lock pins {}",
            ecosystem.as_str(),
            match package {
                Package::Npm { .. } => "an npm package",
                Package::Pypi { .. } => "a PyPI package",
                _ => "no npm or PyPI package",
            }
        )),
    }
}

fn root<'a>(closure: &'a Closure, path: &str, name: &str) -> Result<&'a Dependency, String> {
    closure
        .packages
        .iter()
        .find(|p| p.path == path)
        .ok_or_else(|| format!("it does not hold {name} itself (no package at {path})"))
}

/// A path as the companion shows it, escaped.
fn shown(path: &str) -> String {
    format!("{path:?}")
}

fn npm_package(p: &Dependency) -> Result<(), String> {
    let names = npm_path(&p.path).ok_or_else(|| {
        "`path` is not node_modules/<name>, nested only under other packages' node_modules"
            .to_string()
    })?;
    if !npm::is_semver(&p.version) {
        return Err(format!(
            "`version` {:?} is not one exact semver version",
            p.version
        ));
    }
    match p.integrity.as_slice() {
        [one] if is_sha512(one) => {}
        _ => {
            return Err(
                "`integrity` is not one sha512 SRI hash (sha512-<88 base64>), which npm checks the registry's tarball against".into(),
            );
        }
    }
    let entry = if p.entry.is_empty() {
        Map::new()
    } else {
        match serde_json::from_str::<Value>(&p.entry) {
            Ok(Value::Object(map)) => map,
            _ => return Err("`entry` is not a JSON object".into()),
        }
    };
    for (key, value) in &entry {
        entry_field(key, value).map_err(|why| format!("`entry` {key:?}: {why}"))?;
    }
    // npm records `name` only for an alias (`"x": "npm:y@1"` installs y at
    // node_modules/x); otherwise the package is the one its path names.
    let installed = entry
        .get("name")
        .and_then(Value::as_str)
        .unwrap_or(names[names.len() - 1]);
    if p.name != installed {
        return Err(format!(
            "`name` {:?} is not the package npm installs there ({installed:?})",
            p.name
        ));
    }
    let scripts = entry.get("hasInstallScript") == Some(&Value::Bool(true));
    if p.scripts != scripts {
        return Err("`scripts` does not say what the entry's `hasInstallScript` says".to_string());
    }
    Ok(())
}

/// The package names of an npm install path (`node_modules/a/node_modules/@s/b` ->
/// `a`, `@s/b`), when every part is one.
fn npm_path(path: &str) -> Option<Vec<&str>> {
    let mut names = Vec::new();
    let mut rest = path.strip_prefix("node_modules/")?;
    loop {
        let (name, next) = match rest.strip_prefix('@') {
            Some(scoped) => {
                let slash = scoped.find('/')? + 1;
                match rest[slash + 1..].find('/') {
                    Some(end) => (&rest[..slash + 1 + end], Some(&rest[slash + 2 + end..])),
                    None => (rest, None),
                }
            }
            None => match rest.split_once('/') {
                Some((name, next)) => (name, Some(next)),
                None => (rest, None),
            },
        };
        if !is_npm_name(name) {
            return None;
        }
        names.push(name);
        match next {
            None => return Some(names),
            Some(next) => rest = next.strip_prefix("node_modules/")?,
        }
    }
}

/// An npm package name: `name` or `@scope/name`, each part of the characters a URL
/// keeps as they are (npm's rule; old names may have capitals), not starting with `.`
/// or `_`.
pub fn is_npm_name(name: &str) -> bool {
    fn part(s: &str) -> bool {
        !s.is_empty()
            && !s.starts_with(['.', '_'])
            && s.bytes().all(|b| {
                b.is_ascii_alphanumeric()
                    || matches!(
                        b,
                        b'-' | b'_' | b'.' | b'!' | b'~' | b'*' | b'\'' | b'(' | b')'
                    )
            })
    }
    if name.is_empty() || name.len() > MAX_WORD || name == "node_modules" {
        return false;
    }
    match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(scope, name)| part(scope) && part(name)),
        None => part(name),
    }
}

fn is_sha512(integrity: &str) -> bool {
    npm::sha512_of(integrity) == Some(integrity) && !integrity.contains('?')
}

/// One key of the rest of npm's lockfile entry. What npm acts on must describe the
/// registry package: dependency specs are registry ranges (or `npm:` aliases of
/// registry packages), bins stay inside the package; `resolved`, `link`, `inBundle`
/// and anything npm's lockfile does not write are refused.
fn entry_field(key: &str, value: &Value) -> Result<(), String> {
    match key {
        "dependencies" | "optionalDependencies" | "peerDependencies" | "acceptDependencies" => {
            let specs = value.as_object().ok_or("is not an object")?;
            for (name, spec) in specs {
                if !is_npm_name(name) {
                    return Err(format!("{name:?} is not a package name"));
                }
                match spec.as_str() {
                    Some(spec) if is_registry_spec(spec) => {}
                    _ => {
                        return Err(format!(
                            "{name:?} is {spec}, not a version range of the registry (a file, link, git, URL or directory spec cannot be pinned)"
                        ));
                    }
                }
            }
            Ok(())
        }
        "peerDependenciesMeta" => {
            let ok = value.as_object().is_some_and(|m| {
                m.iter().all(|(name, meta)| {
                    is_npm_name(name)
                        && meta
                            .as_object()
                            .is_some_and(|o| o.values().all(Value::is_boolean))
                })
            });
            ok.then_some(())
                .ok_or_else(|| "is not package names with boolean flags".into())
        }
        "bundleDependencies" => {
            let ok = value.is_boolean()
                || value
                    .as_array()
                    .is_some_and(|names| names.iter().all(|n| n.as_str().is_some_and(is_npm_name)));
            ok.then_some(())
                .ok_or_else(|| "is not a list of package names".into())
        }
        "bin" => {
            let bins = value.as_object().ok_or("is not an object")?;
            for (name, target) in bins {
                if !is_bin_name(name) {
                    return Err(format!("{name:?} is not a command name"));
                }
                if !target.as_str().is_some_and(is_inside_path) {
                    return Err(format!(
                        "{name:?} points at {target}, not a file inside the package"
                    ));
                }
            }
            Ok(())
        }
        "os" | "cpu" | "libc" => {
            let ok = value.as_str().is_some()
                || value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string));
            ok.then_some(())
                .ok_or_else(|| "is not a list of strings".into())
        }
        "engines" => {
            let ok = value
                .as_object()
                .is_some_and(|o| o.values().all(Value::is_string))
                || value
                    .as_array()
                    .is_some_and(|a| a.iter().all(Value::is_string));
            ok.then_some(())
                .ok_or_else(|| "is not names with version ranges".into())
        }
        "hasInstallScript" | "hasShrinkwrap" | "dev" | "optional" | "devOptional" | "peer" => value
            .is_boolean()
            .then_some(())
            .ok_or_else(|| "is not true or false".into()),
        "name" => value
            .as_str()
            .is_some_and(is_npm_name)
            .then_some(())
            .ok_or_else(|| "is not a package name".into()),
        // What npm only shows.
        "license" | "deprecated" | "funding" => Ok(()),
        "resolved" | "link" | "inBundle" | "integrity" | "version" | "extraneous"
        | "workspaces" | "devDependencies" => Err(format!(
            "a pinned package may not carry it: it is the registry's tarball for its name and version, checked against its `integrity`{}",
            if matches!(key, "resolved" | "link") {
                " (never another tarball, a link or a directory)"
            } else {
                ""
            }
        )),
        _ => Err("is not a field of npm's lockfile a pin may carry".into()),
    }
}

/// A dependency spec npm resolves from the registry: a version, range or dist-tag, or
/// `npm:name@range`. Anything with `:`, `/`, `#` or `@` (a file, link, git, URL,
/// GitHub or directory spec) is not.
fn is_registry_spec(spec: &str) -> bool {
    let range = match spec.strip_prefix("npm:") {
        Some(alias) => match alias.rsplit_once('@') {
            Some((name, range)) if is_npm_name(name) => range,
            _ if is_npm_name(alias) => "",
            _ => return false,
        },
        None => spec,
    };
    range.len() <= 256
        && range.bytes().all(|b| {
            b.is_ascii_alphanumeric()
                || matches!(
                    b,
                    b' ' | b'.'
                        | b'-'
                        | b'+'
                        | b'*'
                        | b'^'
                        | b'~'
                        | b'<'
                        | b'>'
                        | b'='
                        | b'|'
                        | b'_'
                )
        })
}

fn is_bin_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_WORD
        && !name.starts_with('.')
        && !name.contains(['/', '\\'])
        && !name.chars().any(char::is_control)
}

/// A relative path that stays inside the directory it is relative to.
fn is_inside_path(path: &str) -> bool {
    !path.is_empty()
        && path.len() <= 4096
        && !path.starts_with('/')
        && !path.contains('\\')
        && !path.chars().any(char::is_control)
        && path.split('/').all(|part| part != "..")
}

fn pypi_package(p: &Dependency) -> Result<(), String> {
    if !is_pep508_name(&p.name) {
        return Err(format!(
            "`name` {:?} is not a PyPI project name (PEP 508: letters, digits, `.`, `_`, `-`)",
            p.name
        ));
    }
    if p.path != pypi::normalize(&p.name) {
        return Err(format!(
            "`path` is not the normalized name of {:?} ({:?})",
            p.name,
            pypi::normalize(&p.name)
        ));
    }
    let version_chars = p
        .version
        .bytes()
        .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'!' | b'+' | b'_' | b'-'));
    if p.version.len() > MAX_WORD || !version_chars || pypi::Version::parse(&p.version).is_none() {
        return Err(format!(
            "`version` {:?} is not one PEP 440 version",
            p.version
        ));
    }
    if p.integrity.is_empty() {
        return Err("`integrity` is empty: every package installs with its hashes".into());
    }
    if let Some(bad) = p.integrity.iter().find(|h| !is_file_hash(h)) {
        return Err(format!(
            "`integrity` has {bad:?}, not sha256:<64 lowercase hex digits>"
        ));
    }
    if !p.entry.is_empty() {
        return Err("`entry` is for npm packages only".into());
    }
    if p.scripts {
        return Err("`scripts` is for npm packages only".into());
    }
    Ok(())
}

/// A PEP 508 name: letters and digits, with `.`, `_` and `-` inside.
pub fn is_pep508_name(name: &str) -> bool {
    let edge = |b: Option<u8>| b.is_some_and(|b| b.is_ascii_alphanumeric());
    name.len() <= MAX_WORD
        && edge(name.bytes().next())
        && edge(name.bytes().last())
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'.' | b'_' | b'-'))
}

fn is_file_hash(hash: &str) -> bool {
    let hex = |s: &str, n: usize| {
        s.len() == n && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    };
    hash.strip_prefix("sha256:").is_some_and(|h| hex(h, 64))
        || hash.strip_prefix("sha384:").is_some_and(|h| hex(h, 96))
        || hash.strip_prefix("sha512:").is_some_and(|h| hex(h, 128))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npm_dep(path: &str, entry: &str) -> Dependency {
        Dependency {
            path: path.into(),
            name: path.rsplit("node_modules/").next().unwrap().into(),
            version: "1.0.0".into(),
            integrity: vec![format!("sha512-{}==", "Q".repeat(86))],
            entry: entry.into(),
            scripts: false,
        }
    }

    fn npm(packages: Vec<Dependency>) -> Closure {
        Closure {
            ecosystem: Ecosystem::Npm,
            packages,
        }
    }

    #[test]
    fn an_npm_entry_naming_another_source_is_refused_with_its_field() {
        let fine = npm(vec![
            npm_dep(
                "node_modules/a",
                r#"{"bin":{"a":"./bin/a.js"},"dependencies":{"b":"^1.0.0 || 2.x","c":"npm:@s/c@~1.2.3"},"license":"MIT","optional":true}"#,
            ),
            npm_dep("node_modules/a/node_modules/@s/b", ""),
        ]);
        check(&fine).unwrap();
        for (entry, field) in [
            (r#"{"resolved":"file:evil.tgz"}"#, "\"resolved\""),
            (r#"{"link":true}"#, "\"link\""),
            (r#"{"inBundle":true}"#, "\"inBundle\""),
            (r#"{"dependencies":{"b":"file:../b"}}"#, "\"dependencies\""),
            (
                r#"{"dependencies":{"b":"git+https://x/b.git"}}"#,
                "\"dependencies\"",
            ),
            (r#"{"dependencies":{"b":"user/b"}}"#, "\"dependencies\""),
            (r#"{"bin":{"a":"../../../x"}}"#, "\"bin\""),
            (r#"{"postinstall":"x"}"#, "\"postinstall\""),
            ("[1]", "not a JSON object"),
        ] {
            let bad = npm(vec![npm_dep("node_modules/a", entry)]);
            let why = check(&bad).unwrap_err();
            assert!(
                why.contains("\"node_modules/a\"") && why.contains(field),
                "{entry}: {why}"
            );
        }
        for path in [
            "node_modules/../x",
            "node_modules/a/../../x",
            "/abs",
            "node_modules/a/b",
        ] {
            assert!(check(&npm(vec![npm_dep(path, "")])).is_err(), "{path}");
        }
        let mut range = npm_dep("node_modules/a", "");
        range.version = "^1.0.0".into();
        assert!(check(&npm(vec![range])).unwrap_err().contains("`version`"));
        let mut sha1 = npm_dep("node_modules/a", "");
        sha1.integrity = vec!["sha1-abc".into()];
        assert!(check(&npm(vec![sha1])).unwrap_err().contains("`integrity`"));
    }

    #[test]
    fn a_closure_fits_only_the_package_the_lock_pins() {
        use crate::servers::package::closure::ClosurePin;
        let sri = format!("sha512-{}==", "Q".repeat(86));
        let closure = npm(vec![
            npm_dep("node_modules/a", ""),
            npm_dep("node_modules/b", ""),
        ]);
        let pin = |package: Package, count: usize| PackagePin {
            launcher: "npx".into(),
            package,
            closure: Some(ClosurePin {
                hash: closure.hash(),
                count,
                closure: None,
            }),
        };
        let a = |version: &str, integrity: &str| Package::Npm {
            name: "a".into(),
            version: version.into(),
            integrity: integrity.into(),
        };
        fits(&pin(a("1.0.0", &sri), 2), &closure).unwrap();
        let why = fits(
            &pin(a("1.0.0", &format!("sha512-{}==", "R".repeat(86))), 2),
            &closure,
        )
        .unwrap_err();
        assert!(why.contains("`integrity` of its node_modules/a"), "{why}");
        assert!(
            fits(&pin(a("1.0.1", &sri), 2), &closure)
                .unwrap_err()
                .contains("1.0.1")
        );
        assert!(
            fits(&pin(a("1.0.0", &sri), 3), &closure)
                .unwrap_err()
                .contains("counts 3")
        );
        let other = Package::Npm {
            name: "c".into(),
            version: "1.0.0".into(),
            integrity: sri.clone(),
        };
        assert!(
            fits(&pin(other, 2), &closure)
                .unwrap_err()
                .contains("itself")
        );
        let py = |sha: &str| Package::Pypi {
            name: "a".into(),
            version: "1.0.0".into(),
            files: std::collections::BTreeMap::from([(
                "a-1.0.0-py3-none-any.whl".into(),
                sha.into(),
            )]),
        };
        assert!(
            fits(&pin(py(&"a".repeat(64)), 2), &closure)
                .unwrap_err()
                .contains("PyPI")
        );
        let wheel = Closure {
            ecosystem: Ecosystem::Pypi,
            packages: vec![Dependency {
                path: "a".into(),
                name: "a".into(),
                version: "1.0".into(),
                integrity: vec![format!("sha256:{}", "a".repeat(64))],
                entry: String::new(),
                scripts: false,
            }],
        };
        fits(&pin(py(&"a".repeat(64)), 1), &wheel).unwrap();
        let why = fits(&pin(py(&"b".repeat(64)), 1), &wheel).unwrap_err();
        assert!(why.contains("no file mcp.lock pins"), "{why}");
    }

    #[test]
    fn a_pypi_name_or_version_that_is_more_than_one_is_refused() {
        let dep = |name: &str, version: &str| Dependency {
            path: pypi::normalize(name),
            name: name.into(),
            version: version.into(),
            integrity: vec![format!("sha256:{}", "a".repeat(64))],
            entry: String::new(),
            scripts: false,
        };
        let closure = |p| Closure {
            ecosystem: Ecosystem::Pypi,
            packages: vec![p],
        };
        check(&closure(dep("Tiny_Py", "1.0.0.post1"))).unwrap();
        let why = check(&closure(dep("tiny-py==1.0.0\n./evil.whl", "1.0.0"))).unwrap_err();
        assert!(why.contains("`name`"), "{why}");
        let why = check(&closure(dep("tiny-py", "1.0.0 --index-url http://x"))).unwrap_err();
        assert!(why.contains("`version`"), "{why}");
        let mut no_hash = dep("tiny-py", "1.0.0");
        no_hash.integrity.clear();
        assert!(
            check(&closure(no_hash))
                .unwrap_err()
                .contains("`integrity`")
        );
        let mut md5 = dep("tiny-py", "1.0.0");
        md5.integrity = vec!["md5:abc".into()];
        assert!(check(&closure(md5)).unwrap_err().contains("`integrity`"));
    }
}
