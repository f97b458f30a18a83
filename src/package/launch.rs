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
