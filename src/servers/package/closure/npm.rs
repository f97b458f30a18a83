//! npm closures: resolved by npm itself into a lockfile, installed with `npm ci` from
//! the lockfile rebuilt out of the pin.

use std::path::Path;

use serde_json::{Map, Value};

use super::{Closure, Dependency, Ecosystem, MAX_OUTPUT, run_tool};

/// The root package of the scratch project a closure is resolved and installed in.
const ROOT: &str = "mcp-lock-closure";

/// The closure `npm` resolves for `name@version` from `registry`: npm's own
/// resolution (`npm install --package-lock-only --ignore-scripts`) in a scratch
/// directory, so nothing is installed and no script runs. The user's npm
/// configuration (`~/.npmrc`, for credentials) applies; the registry is the one the
/// pin was resolved from.
pub async fn resolve(
    npm: &Path,
    name: &str,
    version: &str,
    registry: &str,
    lower: bool,
) -> Result<Closure, String> {
    let scratch = tempfile::Builder::new()
        .prefix("mcp-lock-resolve-")
        .tempdir()
        .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    std::fs::write(
        scratch.path().join("package.json"),
        package_json(name, version),
    )
    .map_err(|e| format!("cannot write a scratch package.json: {e}"))?;
    let mut command = tokio::process::Command::new(npm);
    command
        .current_dir(scratch.path())
        .args([
            "install",
            "--package-lock-only",
            "--ignore-scripts",
            "--no-audit",
            "--no-fund",
            "--omit-lockfile-registry-resolved",
            "--lockfile-version=3",
            "--no-update-notifier",
        ])
        .arg(format!("--registry={registry}"));
    if lower {
        super::lower_priority(&mut command);
    }
    run_tool(command, &format!("npm resolving {name}@{version}"), None).await?;
    let lock = read_bounded(&scratch.path().join("package-lock.json"))
        .map_err(|e| format!("npm wrote no readable package-lock.json: {e}"))?;
    from_lockfile(&lock, name, version)
}

fn read_bounded(path: &Path) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let mut text = String::new();
    file.take(MAX_OUTPUT as u64 + 1)
        .read_to_string(&mut text)
        .map_err(|e| e.to_string())?;
    if text.len() > MAX_OUTPUT {
        return Err(format!("larger than {} MiB", MAX_OUTPUT / (1024 * 1024)));
    }
    Ok(text)
}

/// The scratch project's package.json: one dependency, the server's package.
pub fn package_json(name: &str, version: &str) -> String {
    let mut deps = Map::new();
    deps.insert(name.into(), Value::String(version.into()));
    let root = serde_json::json!({
        "name": ROOT,
        "version": "0.0.0",
        "private": true,
        "dependencies": deps,
    });
    serde_json::to_string_pretty(&root).expect("JSON") + "\n"
}

/// The closure a lockfile (version 2 or 3) holds for the server `name@version`.
pub fn from_lockfile(text: &str, name: &str, version: &str) -> Result<Closure, String> {
    let lock: Value =
        serde_json::from_str(text).map_err(|e| format!("npm's lockfile is not JSON: {e}"))?;
    let packages = lock
        .get("packages")
        .and_then(Value::as_object)
        .ok_or("npm's lockfile has no `packages` (lockfile version 2 or later is needed)")?;
    let mut out = Vec::new();
    for (path, entry) in packages {
        if path.is_empty() {
            continue;
        }
        let Some(entry) = entry.as_object() else {
            return Err(format!("npm's lockfile entry {path:?} is not an object"));
        };
        if entry.get("link").and_then(Value::as_bool) == Some(true) {
            return Err(format!(
                "{path} is a link to a local directory, which cannot be pinned"
            ));
        }
        let text = |key: &str| entry.get(key).and_then(Value::as_str).map(str::to_string);
        let version = text("version").ok_or_else(|| format!("{path} has no version"))?;
        let integrity = text("integrity").ok_or_else(|| {
            format!("{path}@{version} has no integrity in npm's lockfile; it cannot be pinned")
        })?;
        let package_name = text("name").unwrap_or_else(|| {
            path.rsplit_once("node_modules/")
                .map_or(path.as_str(), |(_, n)| n)
                .to_string()
        });
        let mut rest = entry.clone();
        // Besides what the pin holds apart: npm copies a dependency's own `workspaces`
        // (which mean something only at a project's root) and marks `extraneous` a
        // package nothing in the tree asks for. Neither changes what is installed, the
        // registry's tarball checked against its integrity, so neither is pinned (a
        // pinned entry that carries one is refused: a companion never needs them).
        for key in [
            "version",
            "integrity",
            "resolved",
            "workspaces",
            "extraneous",
        ] {
            rest.remove(key);
        }
        let scripts = rest.get("hasInstallScript").and_then(Value::as_bool) == Some(true);
        out.push(Dependency {
            path: path.clone(),
            name: package_name,
            version,
            integrity: vec![integrity],
            entry: if rest.is_empty() {
                String::new()
            } else {
                canonical(&Value::Object(rest))
            },
            scripts,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    let closure = Closure {
        ecosystem: Ecosystem::Npm,
        packages: out,
    };
    super::valid::check(&closure).map_err(|e| format!("npm's resolution: {e}"))?;
    let out = closure.packages;
    let top = format!("node_modules/{name}");
    match out.iter().find(|p| p.path == top) {
        Some(p) if p.version == version => {}
        Some(p) => {
            return Err(format!(
                "npm resolved {name} to {} where {version} is pinned",
                p.version
            ));
        }
        None => return Err(format!("npm's lockfile does not hold {name} itself")),
    }
    Ok(Closure {
        ecosystem: Ecosystem::Npm,
        packages: out,
    })
}

/// JSON with every object's keys sorted, on one line.
fn canonical(value: &Value) -> String {
    fn sorted(value: &Value) -> Value {
        match value {
            Value::Object(map) => {
                let mut keys: Vec<&String> = map.keys().collect();
                keys.sort();
                Value::Object(
                    keys.into_iter()
                        .map(|k| (k.clone(), sorted(&map[k])))
                        .collect(),
                )
            }
            Value::Array(items) => Value::Array(items.iter().map(sorted).collect()),
            other => other.clone(),
        }
    }
    serde_json::to_string(&sorted(value)).expect("JSON")
}

/// The package-lock.json `npm ci` installs `closure` from: the scratch root depending
/// on the server's package, then every pinned entry (no `resolved`: npm fetches each
/// from the configured registry and checks it against its integrity).
pub fn lockfile(closure: &Closure, name: &str, version: &str) -> Result<String, String> {
    // Only what a pin may be reaches npm, whatever file it came from.
    super::valid::check(closure)?;
    let mut packages = Map::new();
    let mut deps = Map::new();
    deps.insert(name.into(), Value::String(version.into()));
    packages.insert(
        String::new(),
        serde_json::json!({"name": ROOT, "version": "0.0.0", "dependencies": deps}),
    );
    for p in &closure.packages {
        let mut entry = if p.entry.is_empty() {
            Map::new()
        } else {
            match serde_json::from_str::<Value>(&p.entry) {
                Ok(Value::Object(map)) => map,
                _ => {
                    return Err(format!(
                        "the pinned entry of {} is not a JSON object",
                        p.path
                    ));
                }
            }
        };
        entry.insert("version".into(), Value::String(p.version.clone()));
        if let Some(integrity) = p.integrity.first() {
            entry.insert("integrity".into(), Value::String(integrity.clone()));
        }
        packages.insert(p.path.clone(), Value::Object(entry));
    }
    let lock = serde_json::json!({
        "name": ROOT,
        "version": "0.0.0",
        "lockfileVersion": 3,
        "requires": true,
        "packages": packages,
    });
    Ok(serde_json::to_string_pretty(&lock).expect("JSON") + "\n")
}

#[cfg(test)]
mod tests {
    use super::*;

    const LOCK: &str = r#"{
      "name": "mcp-lock-closure", "lockfileVersion": 3, "requires": true,
      "packages": {
        "": {"name": "mcp-lock-closure", "dependencies": {"debug": "4.3.4"}},
        "node_modules/debug": {
          "version": "4.3.4", "resolved": "https://registry.example/debug/-/debug-4.3.4.tgz",
          "integrity": "sha512-DDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDDD==", "license": "MIT",
          "dependencies": {"ms": "2.1.2"}, "engines": {"node": ">=6.0"}
        },
        "node_modules/ms": {"version": "2.1.2", "integrity": "sha512-MMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMMM==", "hasInstallScript": true}
      }
    }"#;

    #[test]
    fn a_lockfile_gives_every_package_without_its_download_address() {
        let closure = from_lockfile(LOCK, "debug", "4.3.4").unwrap();
        assert_eq!(closure.packages.len(), 2);
        let debug = &closure.packages[0];
        assert_eq!(
            (debug.name.as_str(), debug.version.as_str()),
            ("debug", "4.3.4")
        );
        assert_eq!(
            debug.entry,
            r#"{"dependencies":{"ms":"2.1.2"},"engines":{"node":">=6.0"},"license":"MIT"}"#
        );
        assert!(closure.packages[1].scripts);
        assert_eq!(closure.with_scripts(), ["ms"]);
        assert!(from_lockfile(LOCK, "debug", "4.3.5").is_err());
        assert!(from_lockfile(LOCK, "other", "1.0.0").is_err());
    }

    #[test]
    fn the_rebuilt_lockfile_reads_back_as_the_same_closure() {
        let closure = from_lockfile(LOCK, "debug", "4.3.4").unwrap();
        let rebuilt = lockfile(&closure, "debug", "4.3.4").unwrap();
        assert!(!rebuilt.contains("resolved"));
        assert_eq!(from_lockfile(&rebuilt, "debug", "4.3.4").unwrap(), closure);
    }

    #[test]
    fn a_dependencys_own_workspaces_and_the_extraneous_mark_are_not_pinned() {
        // As npm writes them for redis (workspaces) and jose (extraneous).
        let lock = LOCK
            .replace(
                r#""license": "MIT","#,
                r#""license": "MIT", "workspaces": ["./packages/*"],"#,
            )
            .replace(
                r#""hasInstallScript": true"#,
                r#""hasInstallScript": true, "extraneous": true"#,
            );
        let closure = from_lockfile(&lock, "debug", "4.3.4").unwrap();
        assert_eq!(closure, from_lockfile(LOCK, "debug", "4.3.4").unwrap());
        // A pinned entry carrying either is still refused.
        let mut carried = closure.clone();
        carried.packages[1].entry = r#"{"extraneous":true}"#.into();
        assert!(super::super::valid::check(&carried).is_err());
    }

    #[test]
    fn a_package_without_integrity_or_a_link_is_not_pinned() {
        let no_integrity = r#"{"packages": {"node_modules/a": {"version": "1.0.0"}}}"#;
        assert!(
            from_lockfile(no_integrity, "a", "1.0.0")
                .unwrap_err()
                .contains("no integrity")
        );
        let link = r#"{"packages": {"node_modules/a": {"link": true, "resolved": "../a"}}}"#;
        assert!(
            from_lockfile(link, "a", "1.0.0")
                .unwrap_err()
                .contains("link")
        );
    }
}
