//! What the guard launches for a pinned entry: the package spec rewritten to the pinned
//! version. Whether it may launch at all is [`super::check`]'s answer, as for verify.

use std::path::Path;

use super::*;

/// What the guard launches for an entry: its arguments with the package spec
/// rewritten to the pinned version (`npx -y pkg` -> `npx -y pkg@1.0.0`, `uvx pkg` ->
/// `uvx pkg==1.0.0`); anything else as written.
pub fn pinned_launch(
    command: &str,
    args: &[String],
    cwd: &Path,
    project_dir: &Path,
    pin: Option<&PackagePin>,
) -> Vec<String> {
    let entry_env = BTreeMap::new();
    let entry = Entry {
        command,
        args,
        env: &entry_env,
        cwd,
        project_dir,
        guarded: true,
        fetcher: Fetcher::default(),
    };
    let rec = entry.recognised();
    let mut out = args.to_vec();
    let Some(pin) = pin else {
        return out;
    };
    match (&rec.target, &pin.package, rec.arg) {
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
                out.splice(i..i, ["--spec".to_string(), spec]);
            } else {
                out[i] = format!("{}{spec}", rec.prefix);
            }
        }
        _ => {}
    }
    out
}

/// What runs an entry's pinned closure: the program in the closure cache, its
/// arguments and the environment it needs beside the entry's.
#[derive(Debug, Clone)]
pub struct ClosureLaunch {
    pub program: String,
    pub args: Vec<String>,
    pub env: Vec<(String, String)>,
    /// Why the cache entry was installed again, when it was.
    pub rebuilt: Option<String>,
    /// Packages with install scripts that did not run.
    pub scripts_skipped: Vec<String>,
}

/// Options a runner takes before the command name that take a value as the next
/// argument.
const VALUE_OPTIONS: &[&str] = &[
    "--registry",
    "--cache",
    "--python",
    "--index-url",
    "--default-index",
    "--index",
    "--extra-index-url",
    "--pip-args",
];

/// Installs `pin`'s closure into the closure cache (`cache`, else the user's: see
/// [`closure::cache::cache_root`]), or checks the installed one, and
/// says what runs it in place of `command args`. `Ok(None)`: the pin has no closure,
/// or the entry's form is not one the cache can run (the package's version is then
/// what starts). `Err`: why nothing may start (an integrity mismatch at install, a
/// closure that cannot be installed).
// The entry's parts as `Entry` holds them, plus what to install and where.
#[allow(clippy::too_many_arguments)]
pub async fn closure_launch(
    command: &str,
    args: &[String],
    env: &BTreeMap<String, String>,
    cwd: &Path,
    project_dir: &Path,
    pin: &PackagePin,
    scripts: bool,
    cache: Option<&Path>,
) -> Result<Option<ClosureLaunch>, closure::cache::InstallError> {
    use closure::cache::{Install, InstallError, cache_root, ensure, program};
    use closure::{Ecosystem, tool_beside};
    let Some(closure_pin) = &pin.closure else {
        return Ok(None);
    };
    let Some(closure) = &closure_pin.closure else {
        return Err(InstallError::Failed(format!(
            "the lock pins a dependency closure ({}) that its companion file (`mcp.closure.lock` beside `mcp.lock`) does not hold; run `mcp-lock update` to pin it again",
            closure_pin.hash
        )));
    };
    // The companion is a file of the repository: what reaches npm or uv is what a pin
    // may be, and the closure the lock pins.
    closure::valid::check(closure)
        .and_then(|()| closure::valid::fits(pin, closure))
        .map_err(|e| {
            InstallError::Failed(format!(
                "the dependency closure in `mcp.closure.lock` is not the one `mcp.lock` pins: {e}; run `mcp-lock update` to pin it again"
            ))
        })?;
    let entry = Entry {
        command,
        args,
        env,
        cwd,
        project_dir,
        guarded: true,
        fetcher: Fetcher::default(),
    };
    let rec = entry.recognised();
    let Some(at) = rec.arg else {
        return Ok(None);
    };
    let (name, version, ecosystem, registry, tool) = match (&rec.target, &pin.package) {
        (Target::Npm { .. }, Package::Npm { name, version, .. }) => (
            name,
            version,
            Ecosystem::Npm,
            npm::registry_given(name, rec.registry.as_deref(), project_dir, &|k| {
                entry.lookup(k)
            }),
            tool_beside(command, "npm", project_dir),
        ),
        (Target::Pypi { .. }, Package::Pypi { name, version, .. }) => (
            name,
            version,
            Ecosystem::Pypi,
            rec.registry
                .clone()
                .unwrap_or_else(|| pypi::index_for(&rec.launcher, &|k| entry.lookup(k))),
            tool_beside(command, "uv", project_dir),
        ),
        _ => return Ok(None),
    };
    let tool = tool.ok_or_else(|| {
        InstallError::Failed(format!(
            "{} is not on PATH; the pinned closure cannot be installed",
            match ecosystem {
                Ecosystem::Npm => "npm",
                Ecosystem::Pypi => "uv",
            }
        ))
    })?;
    // `npx pkg args…` runs the package's own command; `--package P cmd args…` and
    // `--from P cmd args…` the command named after the options.
    let named = !rec.prefix.is_empty()
        || matches!(
            at.checked_sub(1)
                .and_then(|i| args.get(i))
                .map(String::as_str),
            Some("--package" | "-p" | "--from" | "--spec")
        );
    let (command_name, rest) = if named {
        let mut i = at + 1;
        loop {
            match args.get(i).map(String::as_str) {
                None => return Ok(None),
                Some(a) if VALUE_OPTIONS.contains(&a) => i += 2,
                Some(a) if a.starts_with('-') => i += 1,
                Some(a) => break (Some(a.to_string()), &args[i + 1..]),
            }
        }
    } else {
        (None, &args[at + 1..])
    };
    let root = cache
        .map(Path::to_path_buf)
        .or_else(cache_root)
        .ok_or_else(|| {
            InstallError::Failed(
                "neither XDG_CACHE_HOME nor HOME is set: no place for the closure cache".into(),
            )
        })?;
    let install = Install {
        closure,
        hash: &closure_pin.hash,
        name,
        version,
        tool,
        registry,
        scripts,
    };
    let installed = ensure(&root, &install).await?;
    let (program, args) = program(
        &installed.dir,
        ecosystem,
        name,
        command_name.as_deref(),
        rest,
    )
    .map_err(InstallError::Failed)?;
    let env = match ecosystem {
        // The venv is checked file by file before each launch: no bytecode is written
        // into it.
        Ecosystem::Pypi => vec![("PYTHONDONTWRITEBYTECODE".to_string(), "1".to_string())],
        Ecosystem::Npm => Vec::new(),
    };
    Ok(Some(ClosureLaunch {
        program: program.to_string_lossy().into_owned(),
        args,
        env,
        rebuilt: installed.rebuilt,
        scripts_skipped: if scripts {
            Vec::new()
        } else {
            closure
                .with_scripts()
                .into_iter()
                .map(String::from)
                .collect()
        },
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::package::tests::{pin, words};

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
        let args = pinned_launch(
            "npx",
            &words("-y tiny-mcp --stdio"),
            dir.path(),
            dir.path(),
            Some(&npm),
        );
        assert_eq!(args, words("-y tiny-mcp@1.0.0 --stdio"));
        let args = pinned_launch(
            "npx",
            &words("-y --package=tiny-mcp@latest tiny"),
            dir.path(),
            dir.path(),
            Some(&npm),
        );
        assert_eq!(args, words("-y --package=tiny-mcp@1.0.0 tiny"));
        let py = pin(
            Package::Pypi {
                name: "tiny-py".into(),
                version: "1.0.0".into(),
                files: BTreeMap::new(),
            },
            "uvx",
        );
        let args = pinned_launch("uvx", &words("tiny-py"), dir.path(), dir.path(), Some(&py));
        assert_eq!(args, words("tiny-py==1.0.0"));
        let args = pinned_launch(
            "pipx",
            &words("run tiny-py"),
            dir.path(),
            dir.path(),
            Some(&py),
        );
        assert_eq!(args, words("run --spec tiny-py==1.0.0 tiny-py"));
        // Another package than the pin: as written (the guard's check refuses it first).
        let args = pinned_launch(
            "npx",
            &words("-y other"),
            dir.path(),
            dir.path(),
            Some(&npm),
        );
        assert_eq!(args, words("-y other"));
    }
}
