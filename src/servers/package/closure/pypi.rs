//! PyPI closures: resolved by uv with hashes (`uv pip compile --generate-hashes`),
//! installed into a virtual environment with `--require-hashes`.

use std::path::Path;

use super::{Closure, Dependency, Ecosystem, run_tool_stderr};
use crate::servers::package::pypi::normalize;

/// The closure uv resolves for `name==version` from `index`, for the Python uv finds
/// (as `uvx` would). It runs in a scratch directory with `--no-config`, so no
/// project's uv settings redirect it, and with `--no-build`: no build backend runs.
///
/// A dependency published only as a source distribution stops uv there. When its
/// `PKG-INFO` states its dependencies statically ([`sdist`](super::sdist)), uv resolves
/// again with it excluded and its dependencies asked for in its place, and it joins
/// the closure with its sdist's sha256; otherwise the error says why, whole.
pub async fn resolve(
    uv: &Path,
    name: &str,
    version: &str,
    index: &str,
    fetcher: &crate::servers::package::Fetcher,
    lower: bool,
) -> Result<Closure, String> {
    let mut sdists: Vec<super::sdist::StaticSdist> = Vec::new();
    // Each round adds one source-only package at least; a closure has few.
    for _ in 0..MAX_SOURCE_ONLY {
        let failed = match compile(uv, name, version, index, &sdists, lower).await? {
            Ok(text) => return with_sdists(from_requirements(&text, name, version)?, &sdists),
            Err(failed) => failed,
        };
        let (what, message, stderr) = failed;
        let named = source_only(&stderr);
        let fresh: Vec<&(String, Option<String>)> = named
            .iter()
            .filter(|(n, _)| !sdists.iter().any(|s| normalize(&s.name) == normalize(n)))
            .collect();
        if fresh.is_empty() || normalize(&fresh[0].0) == normalize(name) {
            return Err(explain_failure(&what, message, &stderr));
        }
        for (package, tried) in fresh {
            match super::sdist::read_static(index, package, tried.as_deref(), fetcher).await {
                Ok(found) => sdists.push(found),
                Err(why) => return Err(source_only_text(package, tried.as_deref(), &why)),
            }
        }
    }
    Err(format!(
        "resolving {name}=={version} met more than {MAX_SOURCE_ONLY} packages published only as source distributions; the closure is not pinned (`closure-unpinned`)"
    ))
}

/// The most dependencies published only as sdists one closure is resolved around.
const MAX_SOURCE_ONLY: usize = 16;

type Failed = (String, String, String);

/// One `uv pip compile --no-build` of `name==version`, the static sdists excluded
/// and their dependencies required in their place. `Ok(Err)`: uv failed (what ran,
/// its one-line error, all it printed).
async fn compile(
    uv: &Path,
    name: &str,
    version: &str,
    index: &str,
    sdists: &[super::sdist::StaticSdist],
    lower: bool,
) -> Result<Result<String, Failed>, String> {
    let scratch = tempfile::Builder::new()
        .prefix("mcp-lock-resolve-")
        .tempdir()
        .map_err(|e| format!("cannot make a scratch directory: {e}"))?;
    let mut command = tokio::process::Command::new(uv);
    command
        .current_dir(scratch.path())
        .args([
            "pip",
            "compile",
            "-",
            "--generate-hashes",
            "--no-header",
            "--no-annotate",
            "--no-config",
            "--quiet",
            // Building a source distribution to read its metadata runs its build
            // backend: never while resolving.
            "--no-build",
        ])
        .arg("--index-url")
        .arg(index);
    let mut input = format!("{name}=={version}\n");
    if !sdists.is_empty() {
        let excludes = scratch.path().join("excludes.txt");
        let names: String = sdists.iter().map(|s| format!("{}\n", s.name)).collect();
        std::fs::write(&excludes, names)
            .map_err(|e| format!("cannot write {}: {e}", excludes.display()))?;
        command.arg("--excludes").arg(&excludes);
        for s in sdists {
            for r in &s.requires {
                input.push_str(r);
                input.push('\n');
            }
        }
    }
    only_the_index(&mut command);
    if lower {
        super::lower_priority(&mut command);
    }
    let what = format!("uv resolving {name}=={version}");
    Ok(run_tool_stderr(command, &what, Some(input))
        .await
        .map_err(|(message, stderr)| (what, message, stderr)))
}

/// The closure uv resolved, with each static sdist added: its name, version and sha256.
fn with_sdists(
    mut closure: Closure,
    sdists: &[super::sdist::StaticSdist],
) -> Result<Closure, String> {
    for s in sdists {
        if closure
            .packages
            .iter()
            .any(|p| p.path == normalize(&s.name))
        {
            return Err(format!(
                "uv's resolution holds {} although it was excluded",
                s.name
            ));
        }
        closure.packages.push(Dependency {
            path: normalize(&s.name),
            name: s.name.clone(),
            version: s.version.clone(),
            integrity: vec![format!("sha256:{}", s.sha256)],
            entry: String::new(),
            scripts: false,
        });
    }
    closure.packages.sort_by(|a, b| a.path.cmp(&b.path));
    super::valid::check(&closure).map_err(|e| format!("uv's resolution: {e}"))?;
    Ok(closure)
}

/// Why a package published only as a source distribution stops the closure, whole:
/// which, why its dependencies cannot be read without its build backend, and what the
/// user can do.
fn source_only_text(package: &str, version: Option<&str>, why: &str) -> String {
    let these = match version {
        Some(v) => format!("{package} {v}"),
        None => package.to_string(),
    };
    format!(
        "{these} is published only as a source distribution (no wheel uv can use), and {why}; mcp-lock never runs a build backend while resolving, so the closure cannot be pinned, and the launcher resolves it afresh and builds {package} at every launch (`closure-unpinned`, which verify and the guard report). To pin it, {package} needs a wheel on the index or a source distribution with static metadata (ask its maintainers), or run the server from an image pinned by digest; `closure-unpinned = \"allow\"` under [verify] in mcp-lock.toml accepts it as it is"
    )
}

/// Why uv could not resolve, whole: a package published only as a source distribution
/// named with what that means and what the user can do; any other failure with every
/// line uv printed (its causes and hints), not only the first.
pub fn explain_failure(what: &str, message: String, stderr: &str) -> String {
    if let Some((package, version)) = source_only(stderr).first() {
        return source_only_text(
            package,
            version.as_deref(),
            "reading its dependencies would run its build backend",
        );
    }
    let lines: Vec<&str> = stderr
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect();
    if lines.is_empty() {
        message
    } else {
        format!("{what} failed: {}", lines.join(" "))
    }
}

/// The packages uv says have no usable wheel while building is off, with the version
/// it tried when it names one, in the order first named.
pub(crate) fn source_only(stderr: &str) -> Vec<(String, Option<String>)> {
    let word = |s: &str| {
        !s.is_empty()
            && s.bytes()
                .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
    };
    let mut names: Vec<String> = Vec::new();
    // "hint: Wheels are required for `proxy-tools` because building from source is disabled"
    for part in stderr.split("Wheels are required for `").skip(1) {
        if let Some((name, _)) = part.split_once('`')
            && word(name)
            && !names.iter().any(|n| normalize(n) == normalize(name))
        {
            names.push(name.to_string());
        }
    }
    // "Because proxy-tools==0.1.0 has no usable wheels": the version tried.
    names
        .into_iter()
        .map(|name| {
            let version = stderr.split(" has no usable wheels").find_map(|before| {
                let last = before.split_whitespace().next_back()?;
                let (n, v) = last.split_once("==")?;
                (normalize(n) == normalize(&name) && word(v)).then(|| v.to_string())
            });
            (name, version)
        })
        .collect()
}

/// The closure in a requirements file with hashes (`name==version \ --hash=…`).
pub fn from_requirements(text: &str, name: &str, version: &str) -> Result<Closure, String> {
    let joined = text.replace("\\\n", " ");
    let mut out: Vec<Dependency> = Vec::new();
    for line in joined.lines() {
        let line = line.split(" #").next().unwrap_or_default().trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let mut words = line.split_whitespace();
        let requirement = words.next().unwrap_or_default();
        let requirement = requirement.split(';').next().unwrap_or_default();
        let Some((package, pinned)) = requirement.split_once("==") else {
            return Err(format!(
                "uv's resolution has {requirement:?}, not an exact `name==version`"
            ));
        };
        let mut integrity: Vec<String> = words
            .filter_map(|w| w.strip_prefix("--hash="))
            .map(|h| h.to_ascii_lowercase())
            .collect();
        if integrity.is_empty() {
            return Err(format!(
                "uv gave no hash for {package}=={pinned}; it cannot be pinned"
            ));
        }
        integrity.sort();
        integrity.dedup();
        let package = package.split('[').next().unwrap_or(package);
        out.push(Dependency {
            path: normalize(package),
            name: package.to_string(),
            version: pinned.to_string(),
            integrity,
            entry: String::new(),
            scripts: false,
        });
    }
    out.sort_by(|a, b| a.path.cmp(&b.path));
    let closure = Closure {
        ecosystem: Ecosystem::Pypi,
        packages: out,
    };
    super::valid::check(&closure).map_err(|e| format!("uv's resolution: {e}"))?;
    let out = closure.packages;
    match out.iter().find(|p| p.path == normalize(name)) {
        Some(p) if crate::servers::package::pypi::same_version(&p.version, version) => {}
        Some(p) => {
            return Err(format!(
                "uv resolved {name} to {} where {version} is pinned",
                p.version
            ));
        }
        None => return Err(format!("uv's resolution does not hold {name} itself")),
    }
    Ok(Closure {
        ecosystem: Ecosystem::Pypi,
        packages: out,
    })
}

/// The requirements file `uv pip install --require-hashes` installs `closure` from:
/// one `name==version --hash=…` line per package, each with its hashes. Only names
/// and versions a pin may have reach it ([`super::valid`]): nothing in a field can
/// start another line or add an option.
pub fn requirements(closure: &Closure) -> Result<String, String> {
    super::valid::check(closure)?;
    let mut text = String::new();
    for p in &closure.packages {
        text.push_str(&format!("{}=={}", p.name, p.version));
        for hash in &p.integrity {
            text.push_str(&format!(" --hash={hash}"));
        }
        text.push('\n');
    }
    Ok(text)
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

#[cfg(test)]
mod tests {
    use super::*;

    const COMPILED: &str = "\
anyio==4.16.0 \\
    --hash=sha256:BBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBBB \\
    --hash=sha256:aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa
mcp-server-time==0.6.2 \\
    --hash=sha256:cccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccccc
tzdata==2025.2 ; sys_platform == 'win32' \\
    --hash=sha256:dddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddddd
";

    #[test]
    fn uvs_resolution_gives_each_package_with_its_sorted_hashes() {
        let closure = from_requirements(COMPILED, "mcp_server_time", "0.6.2").unwrap();
        let names: Vec<&str> = closure.packages.iter().map(|p| p.path.as_str()).collect();
        assert_eq!(names, ["anyio", "mcp-server-time", "tzdata"]);
        assert_eq!(
            closure.packages[0].integrity,
            [
                format!("sha256:{}", "a".repeat(64)),
                format!("sha256:{}", "b".repeat(64))
            ]
        );
        let text = requirements(&closure).unwrap();
        assert!(text.contains(&format!(
            "anyio==4.16.0 --hash=sha256:{} --hash=sha256:{}\n",
            "a".repeat(64),
            "b".repeat(64)
        )));
        assert_eq!(
            from_requirements(&text, "mcp-server-time", "0.6.2").unwrap(),
            closure
        );
    }

    #[test]
    fn a_dependency_published_only_as_an_sdist_is_named_with_what_the_user_can_do() {
        let stderr = "\
error: No solution found when resolving dependencies:
  cause: Because proxy-tools==0.1.0 has no usable wheels and only proxy-tools==0.1.0 is available, we can conclude that all versions of proxy-tools cannot be used.
         And because pywebview==5.4 depends on proxy-tools, we can conclude that your requirements are unsatisfiable.

hint: Wheels are required for `proxy-tools` because building from source is disabled for all packages (i.e., with `--no-build`)
";
        let why = explain_failure("uv resolving serena-agent==1.0", "short".into(), stderr);
        assert!(
            why.starts_with(
                "proxy-tools 0.1.0 is published only as a source distribution (no wheel uv can use)"
            ),
            "{why}"
        );
        assert!(why.contains("closure-unpinned"), "{why}");
        assert!(!why.contains("mcp-lock update"), "{why}");
        let other = "error: No solution found\n  cause: Because six>=9 is not on the index\n";
        assert_eq!(
            explain_failure("uv resolving x==1", "short".into(), other),
            "uv resolving x==1 failed: error: No solution found cause: Because six>=9 is not on the index"
        );
        assert_eq!(explain_failure("uv", "short".into(), ""), "short");
    }

    #[test]
    fn a_resolution_without_hashes_or_exact_versions_is_refused() {
        assert!(from_requirements("six==1.16.0\n", "six", "1.16.0").is_err());
        assert!(
            from_requirements(
                &format!("six>=1 --hash=sha256:{}\n", "a".repeat(64)),
                "six",
                "1.16.0"
            )
            .is_err()
        );
        assert!(
            from_requirements(
                &format!("six==1.17.0 --hash=sha256:{}\n", "a".repeat(64)),
                "six",
                "1.16.0"
            )
            .unwrap_err()
            .contains("1.17.0")
        );
    }
}
