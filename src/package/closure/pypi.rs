//! PyPI closures: resolved by uv with hashes (`uv pip compile --generate-hashes`),
//! installed into a virtual environment with `--require-hashes`.

use std::path::Path;

use super::{Closure, Dependency, Ecosystem, run_tool_stderr};
use crate::package::pypi::normalize;

/// The closure uv resolves for `name==version` from `index`, for the Python uv finds
/// (as `uvx` would). It runs in a scratch directory with `--no-config`, so no
/// project's uv settings redirect it.
pub async fn resolve(uv: &Path, name: &str, version: &str, index: &str) -> Result<Closure, String> {
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
            // backend; the closure installs wheels only (unless scripts are allowed).
            "--no-build",
        ])
        .arg("--index-url")
        .arg(index);
    super::cache::only_the_index(&mut command);
    let what = format!("uv resolving {name}=={version}");
    let text = run_tool_stderr(command, &what, Some(format!("{name}=={version}\n")))
        .await
        .map_err(|(message, stderr)| explain_failure(&what, message, &stderr))?;
    from_requirements(&text, name, version)
}

/// Why uv could not resolve, whole: a package published only as a source distribution
/// named with what that means and what the user can do; any other failure with every
/// line uv printed (its causes and hints), not only the first.
pub fn explain_failure(what: &str, message: String, stderr: &str) -> String {
    let sdists = source_only(stderr);
    if !sdists.is_empty() {
        let (these, is, its) = match sdists.len() {
            1 => (sdists[0].clone(), "is", "its"),
            _ => (sdists.join(", "), "are", "their"),
        };
        return format!(
            "{these} {is} published only as a source distribution (no wheel uv can use), and reading {its} dependencies would run {its} build backend, which mcp-lock never does; so the closure cannot be pinned, and the launcher resolves it afresh and builds {these} at every launch (`closure-unpinned`, which verify and the guard report). To pin it, {these} needs a wheel on the index (ask its maintainers), or run the server from an image pinned by digest; `closure-unpinned = \"allow\"` under [verify] in mcp-lock.toml accepts it as it is"
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
/// it tried when it names one (`proxy-tools 0.1.0`), in the order first named.
fn source_only(stderr: &str) -> Vec<String> {
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
            match version {
                Some(v) => format!("{name} {v}"),
                None => name,
            }
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
        Some(p) if crate::package::pypi::same_version(&p.version, version) => {}
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
