//! What the guard launches for a pinned entry: the package spec rewritten to the pinned
//! version, or a refusal when a pinned script changed.

use std::path::Path;

use super::*;

/// What the guard launches for an entry: its arguments with the package spec
/// rewritten to the pinned version (`npx -y pkg` -> `npx -y pkg@1.0.0`, `uvx pkg` ->
/// `uvx pkg==1.0.0`), or a refusal when a pinned script changed. The note says what
/// was done, when anything was.
pub fn pinned_launch(
    command: &str,
    args: &[String],
    cwd: &Path,
    project_dir: &Path,
    pin: Option<&PackagePin>,
) -> Result<(Vec<String>, Option<String>), String> {
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
    let Some(pin) = pin else {
        return Ok((args.to_vec(), None));
    };
    let mut out = args.to_vec();
    match (&rec.target, &pin.package, rec.arg) {
        (
            Target::Script { path },
            Package::Script {
                path: pinned,
                sha256,
            },
            _,
        ) => {
            let now = script_path(&entry, path);
            if now != *pinned {
                // Another script than the pinned one: the config changed, which verify
                // reports; the guard judges its tools as usual.
                return Ok((
                    out,
                    Some(format!(
                        "the entry no longer launches the pinned script {pinned} but {now}; launching it as written (run `mcp-lock verify`)"
                    )),
                ));
            }
            let live = sha256_file(&cwd.join(path)).map_err(|e| {
                format!("refusing to start: cannot read the pinned script {now}: {e}")
            })?;
            if live != *sha256 {
                return Err(format!(
                    "refusing to start: the script {now} changed since it was pinned (sha256 {} -> {}); review it and run `mcp-lock update`",
                    short(sha256),
                    short(&live)
                ));
            }
            Ok((out, None))
        }
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
            Ok((out, Some(format!("launching the pinned {name}@{version}"))))
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
                out.splice(i..i, ["--spec".to_string(), spec.clone()]);
            } else {
                out[i] = format!("{}{spec}", rec.prefix);
            }
            Ok((out, Some(format!("launching the pinned {spec}"))))
        }
        (_, Package::Unrecognised, _) | (_, Package::Oci { .. }, _) => Ok((out, None)),
        _ => Ok((
            out,
            Some(format!(
                "the entry no longer launches the pinned {pin}; launching it as written (run `mcp-lock verify`)"
            )),
        )),
    }
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
        let (args, _) = pinned_launch(
            "npx",
            &words("-y tiny-mcp --stdio"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y tiny-mcp@1.0.0 --stdio"));
        let (args, _) = pinned_launch(
            "npx",
            &words("-y --package=tiny-mcp@latest tiny"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y --package=tiny-mcp@1.0.0 tiny"));
        let py = pin(
            Package::Pypi {
                name: "tiny-py".into(),
                version: "1.0.0".into(),
                files: BTreeMap::new(),
            },
            "uvx",
        );
        let (args, _) =
            pinned_launch("uvx", &words("tiny-py"), dir.path(), dir.path(), Some(&py)).unwrap();
        assert_eq!(args, words("tiny-py==1.0.0"));
        let (args, _) = pinned_launch(
            "pipx",
            &words("run tiny-py"),
            dir.path(),
            dir.path(),
            Some(&py),
        )
        .unwrap();
        assert_eq!(args, words("run --spec tiny-py==1.0.0 tiny-py"));
        // Another package than the pin: launched as written, with a note.
        let (args, note) = pinned_launch(
            "npx",
            &words("-y other"),
            dir.path(),
            dir.path(),
            Some(&npm),
        )
        .unwrap();
        assert_eq!(args, words("-y other"));
        assert!(note.unwrap().contains("no longer launches"));
    }

    #[test]
    fn guard_refuses_a_script_whose_hash_changed() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("server.js"), "console.log(1)\n").unwrap();
        let sha = sha256_file(&dir.path().join("server.js")).unwrap();
        let script = pin(
            Package::Script {
                path: "server.js".into(),
                sha256: sha,
            },
            "node",
        );
        let args = words("server.js");
        assert!(pinned_launch("node", &args, dir.path(), dir.path(), Some(&script)).is_ok());
        std::fs::write(dir.path().join("server.js"), "console.log(2)\n").unwrap();
        let err = pinned_launch("node", &args, dir.path(), dir.path(), Some(&script)).unwrap_err();
        assert!(
            err.starts_with("refusing to start: the script server.js"),
            "{err}"
        );
        assert!(!err.contains('\n'));
    }
}
