//! PyPI closures: resolved by uv with hashes (`uv pip compile --generate-hashes`),
//! installed into a virtual environment with `--require-hashes`.

use std::path::Path;

use super::{Closure, Dependency, Ecosystem, run_tool};
use crate::package::pypi::normalize;

/// The closure uv resolves for `name==version` from `index`, for the Python uv finds
/// (as `uvx` would). It runs in a scratch directory with `--no-config`, so no
/// project's uv settings redirect it.
pub async fn resolve(
    uv: &Path,
    name: &str,
    version: &str,
    index: &str,
    lower: bool,
) -> Result<Closure, String> {
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
    if lower {
        super::reuse::lower_priority(&mut command);
    }
    let text = run_tool(
        command,
        &format!("uv resolving {name}=={version}"),
        Some(format!("{name}=={version}\n")),
    )
    .await?;
    from_requirements(&text, name, version)
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
