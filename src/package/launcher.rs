//! Recognising what a stdio entry launches: an npm or PyPI package through its
//! ecosystem's runner, an OCI image through `docker`/`podman run`, or a local script.
//! Anything else is "not recognised", never guessed.

/// What an entry launches, as its command and arguments say.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recognised {
    /// The runner as written (`npx`, `npm exec`, `uvx`, `docker run`, `node`, …), or the
    /// command for an entry that is not recognised.
    pub launcher: String,
    pub target: Target,
    /// The index in `args` of the argument that names the package (or script), which
    /// the guard rewrites to launch the pinned version.
    pub arg: Option<usize>,
    /// For `--package=P` / `--from P` / `--spec P` written as one argument: the
    /// option's prefix (`--package=`) that stays in front of the rewritten spec.
    pub prefix: String,
    /// The registry (npm) or index (PyPI) the runner is told to use by its arguments
    /// (`--registry URL`, `--default-index URL`), with a trailing `/`: it outranks the
    /// environment and config files.
    pub registry: Option<String>,
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Target {
    /// An npm package; `spec` is what follows the name's `@` (a version, tag or
    /// range), `None` when nothing does.
    Npm { name: String, spec: Option<String> },
    /// A PyPI distribution; `spec` is the version after `==` or `@`, or the whole
    /// specifier (`>=1.2`) when it is a range.
    Pypi { name: String, spec: Option<String> },
    /// An OCI image reference (`name[:tag][@sha256:…]`).
    Oci { reference: String },
    /// A local file run by an interpreter, or executed by path.
    Script { path: String },
    /// Not a form mcp-lock knows.
    Unrecognised,
}

/// Recognises what `command args` launches. `is_file` says whether a path names a
/// file (for an executable given by path).
pub fn recognise(command: &str, args: &[String], is_file: &dyn Fn(&str) -> bool) -> Recognised {
    let base = file_name(command);
    let base = base.strip_suffix(".exe").unwrap_or(base);
    let base = base.strip_suffix(".cmd").unwrap_or(base);
    let found = match base {
        "npx" => npm_runner("npx", args, 0, NPX_VALUES),
        "bunx" => npm_runner("bunx", args, 0, &["-p", "--package"]),
        "npm" if matches!(first(args), Some("exec" | "x")) => {
            npm_runner(&format!("npm {}", args[0]), args, 1, NPX_VALUES)
        }
        "pnpm" if first(args) == Some("dlx") => npm_runner("pnpm dlx", args, 1, NPX_VALUES),
        "yarn" if first(args) == Some("dlx") => npm_runner("yarn dlx", args, 1, NPX_VALUES),
        "bun" if first(args) == Some("x") => npm_runner("bun x", args, 1, &["-p", "--package"]),
        "uvx" => uv_runner("uvx", args, 0),
        "uv" if first(args) == Some("tool") && args.get(1).map(String::as_str) == Some("run") => {
            uv_runner("uv tool run", args, 2)
        }
        "pipx" if first(args) == Some("run") => pipx_runner(args),
        "docker" | "podman" if first(args) == Some("run") => oci_runner(base, args),
        "node" | "nodejs" => script_runner(base, args, 0, NODE_VALUES, &["-e", "--eval", "-p"]),
        "python" | "python3" => {
            script_runner(base, args, 0, &["-W", "-X", "-Q"], &["-c", "-m", "-"])
        }
        "deno" if first(args) == Some("run") => script_runner("deno run", args, 1, &[], &[]),
        "bun" => {
            let start = usize::from(first(args) == Some("run"));
            script_runner(base, args, start, &[], &["-e", "--eval"])
        }
        _ if (command.contains('/') || command.contains('\\')) && is_file(command) => {
            Some(Recognised {
                launcher: "path".into(),
                target: Target::Script {
                    path: command.to_string(),
                },
                arg: None,
                prefix: String::new(),
                registry: None,
            })
        }
        _ => None,
    };
    found.unwrap_or_else(|| Recognised {
        launcher: command.to_string(),
        target: Target::Unrecognised,
        arg: None,
        prefix: String::new(),
        registry: None,
    })
}

/// Options of npx / npm exec that take a value as the next argument.
const NPX_VALUES: &[&str] = &[
    "-p",
    "--package",
    "-c",
    "--call",
    "--registry",
    "--cache",
    "--userconfig",
    "-w",
    "--workspace",
];
/// Node options that take a value as the next argument.
const NODE_VALUES: &[&str] = &["-r", "--require", "--import", "--loader", "--env-file"];

fn first(args: &[String]) -> Option<&str> {
    args.first().map(String::as_str)
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// `npx [options] [--package=P] pkg[@spec] …`: with `--package`, the package is its
/// value and the first word after the options is the command it provides.
fn npm_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    values: &[&str],
) -> Option<Recognised> {
    let mut package: Option<(usize, String)> = None;
    let mut i = start;
    while i < args.len() {
        let arg = &args[i];
        if arg == "--" {
            i += 1;
            break;
        }
        if let Some(value) = arg.strip_prefix("--package=") {
            package.get_or_insert((i, format!("--package={value}")));
        } else if (arg == "-p" || arg == "--package") && i + 1 < args.len() {
            package.get_or_insert((i + 1, args[i + 1].clone()));
            i += 1;
        } else if values.contains(&arg.as_str()) {
            i += 1;
        } else if !arg.starts_with('-') {
            break;
        }
        i += 1;
    }
    let (index, written, prefix) = match package {
        Some((index, written)) => match written.strip_prefix("--package=") {
            Some(value) => (index, value.to_string(), "--package=".to_string()),
            None => (index, written, String::new()),
        },
        None if i < args.len() => (i, args[i].clone(), String::new()),
        None => return None,
    };
    let (name, spec) = split_npm_spec(&written)?;
    Some(Recognised {
        launcher: launcher.into(),
        target: Target::Npm { name, spec },
        arg: Some(index),
        prefix,
        registry: None,
    })
}

/// `@scope/name@spec` or `name@spec` into name and spec. Specs that name no registry
/// package (a path, URL, git or alias spec) are not recognised.
pub fn split_npm_spec(written: &str) -> Option<(String, Option<String>)> {
    if written.is_empty()
        || written.starts_with(['.', '/', '~'])
        || written.contains("://")
        || written.contains(':')
    {
        return None;
    }
    let at = written.char_indices().skip(1).find(|(_, c)| *c == '@');
    let (name, spec) = match at {
        Some((i, _)) => (&written[..i], Some(written[i + 1..].to_string())),
        None => (written, None),
    };
    let valid_name = match name.strip_prefix('@') {
        Some(scoped) => scoped
            .split_once('/')
            .is_some_and(|(s, n)| !s.is_empty() && !n.is_empty() && !n.contains('/')),
        None => !name.contains('/'),
    };
    if !valid_name || spec.as_deref() == Some("") {
        return None;
    }
    Some((name.to_string(), spec))
}

/// Options of uvx / uv tool run that take a value as the next argument.
const UV_VALUES: &[&str] = &[
    "--with",
    "--with-editable",
    "--with-requirements",
    "-w",
    "--python",
    "-p",
    "--index",
    "--default-index",
    "--index-url",
    "-i",
    "--extra-index-url",
    "--find-links",
    "-f",
    "--cache-dir",
    "--directory",
    "--project",
    "--config-file",
    "--env-file",
];

/// `uvx [--from P] [options] pkg[==v|@v] …`.
fn uv_runner(launcher: &str, args: &[String], start: usize) -> Option<Recognised> {
    python_runner(launcher, args, start, "--from", UV_VALUES)
}

/// `pipx run [--spec P] [options] app …`.
fn pipx_runner(args: &[String]) -> Option<Recognised> {
    const PIPX_VALUES: &[&str] = &["--python", "--index-url", "-i", "--pip-args", "--backend"];
    python_runner("pipx run", args, 1, "--spec", PIPX_VALUES)
}

/// A Python runner's package: the value of `from` (`--from P`, `--from=P`) when given,
/// else the first argument that is not an option (skipping the values of `values`).
fn python_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    from: &str,
    values: &[&str],
) -> Option<Recognised> {
    let with_value = format!("{from}=");
    let mut given: Option<(usize, String, String)> = None;
    let mut i = start;
    while i < args.len() {
        let arg = &args[i];
        if let Some(value) = arg.strip_prefix(&with_value) {
            given.get_or_insert((i, value.to_string(), with_value.clone()));
        } else if arg == from && i + 1 < args.len() {
            given.get_or_insert((i + 1, args[i + 1].clone(), String::new()));
            i += 1;
        } else if values.contains(&arg.as_str()) {
            i += 1;
        } else if !arg.starts_with('-') {
            break;
        }
        i += 1;
    }
    let (index, written, prefix) = match given {
        Some(found) => found,
        None if i < args.len() => (i, args[i].clone(), String::new()),
        None => return None,
    };
    let (name, spec) = split_pypi_spec(&written)?;
    Some(Recognised {
        launcher: launcher.into(),
        target: Target::Pypi { name, spec },
        arg: Some(index),
        prefix,
        registry: None,
    })
}

/// `name[extras]==1.2`, `name@1.2`, `name>=1` or `name` into name and spec. Paths,
/// URLs and `name @ url` references are not recognised.
pub fn split_pypi_spec(written: &str) -> Option<(String, Option<String>)> {
    if written.is_empty() || written.starts_with(['.', '/', '~']) || written.contains("://") {
        return None;
    }
    let end = written
        .find(|c: char| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')))
        .unwrap_or(written.len());
    let name = &written[..end];
    if name.is_empty() || name.ends_with(['-', '_', '.']) {
        return None;
    }
    let mut rest = &written[end..];
    if rest.starts_with('[') {
        let close = rest.find(']')?;
        rest = &rest[close + 1..];
    }
    let rest = rest.trim();
    let spec = if rest.is_empty() {
        None
    } else if let Some(v) = rest.strip_prefix("==").or_else(|| rest.strip_prefix('@')) {
        let v = v.trim();
        if v.is_empty() || v.contains(['/', ':', ' ']) {
            return None;
        }
        Some(v.to_string())
    } else if rest.starts_with(['>', '<', '~', '!', '=']) {
        Some(rest.to_string())
    } else {
        return None;
    };
    Some((name.to_string(), spec))
}

/// `docker run` options that take a value as the next argument.
const DOCKER_VALUES: &[&str] = &[
    "-e",
    "--env",
    "--env-file",
    "-v",
    "--volume",
    "--mount",
    "--name",
    "-p",
    "--publish",
    "--network",
    "--net",
    "-w",
    "--workdir",
    "-u",
    "--user",
    "--entrypoint",
    "-l",
    "--label",
    "--platform",
    "--pull",
    "--cpus",
    "-m",
    "--memory",
    "--add-host",
    "--cap-add",
    "--cap-drop",
    "--device",
    "-h",
    "--hostname",
    "--ipc",
    "--pid",
    "--restart",
    "--runtime",
    "--security-opt",
    "--tmpfs",
    "--ulimit",
    "--log-driver",
    "--log-opt",
    "--shm-size",
    "--gpus",
    "--group-add",
    "--dns",
    "--expose",
    "--label-file",
    "--cidfile",
    "--stop-signal",
    "--stop-timeout",
    "-a",
    "--attach",
];

/// `docker run [options] IMAGE [command …]`.
fn oci_runner(base: &str, args: &[String]) -> Option<Recognised> {
    let mut i = 1;
    while i < args.len() {
        let arg = &args[i];
        if DOCKER_VALUES.contains(&arg.as_str()) {
            i += 2;
            continue;
        }
        if arg.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    let reference = args.get(i)?;
    Some(Recognised {
        launcher: format!("{base} run"),
        target: Target::Oci {
            reference: reference.clone(),
        },
        arg: Some(i),
        prefix: String::new(),
        registry: None,
    })
}

/// `node [options] path …`: the first word after the options is the script, unless an
/// option says the code comes from elsewhere (`-e`, `-c`, `-m`).
fn script_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    values: &[&str],
    not_a_file: &[&str],
) -> Option<Recognised> {
    let mut i = start;
    while i < args.len() {
        let arg = args[i].as_str();
        if not_a_file.contains(&arg) {
            return None;
        }
        if values.contains(&arg) {
            i += 2;
            continue;
        }
        if arg.starts_with('-') {
            i += 1;
            continue;
        }
        break;
    }
    let path = args.get(i)?;
    Some(Recognised {
        launcher: launcher.into(),
        target: Target::Script { path: path.clone() },
        arg: Some(i),
        prefix: String::new(),
        registry: None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    fn of(line: &str) -> Recognised {
        let mut w = words(line);
        let command = w.remove(0);
        recognise(&command, &w, &|p| p.ends_with(".sh"))
    }

    fn npm(name: &str, spec: Option<&str>) -> Target {
        Target::Npm {
            name: name.into(),
            spec: spec.map(String::from),
        }
    }

    fn pypi(name: &str, spec: Option<&str>) -> Target {
        Target::Pypi {
            name: name.into(),
            spec: spec.map(String::from),
        }
    }

    #[test]
    fn npx_with_and_without_yes_and_a_version() {
        let r = of("npx -y @modelcontextprotocol/server-memory");
        assert_eq!(r.launcher, "npx");
        assert_eq!(r.target, npm("@modelcontextprotocol/server-memory", None));
        assert_eq!(r.arg, Some(1));
        assert_eq!(
            of("npx tiny-mcp@1.0.0 --flag").target,
            npm("tiny-mcp", Some("1.0.0"))
        );
        assert_eq!(
            of("npx --yes @scope/pkg@^2 serve").target,
            npm("@scope/pkg", Some("^2"))
        );
    }

    #[test]
    fn npx_package_option_names_the_package_not_the_command() {
        let r = of("npx -y --package=@scope/pkg@1.2.3 pkg-bin --stdio");
        assert_eq!(r.target, npm("@scope/pkg", Some("1.2.3")));
        assert_eq!((r.arg, r.prefix.as_str()), (Some(1), "--package="));
        let r = of("npx -p tiny-mcp tiny");
        assert_eq!((r.target, r.arg), (npm("tiny-mcp", None), Some(1)));
    }

    #[test]
    fn npm_exec_pnpm_yarn_dlx_and_bunx() {
        assert_eq!(
            of("npm exec -y -- tiny-mcp@1").target,
            npm("tiny-mcp", Some("1"))
        );
        assert_eq!(of("npm exec tiny-mcp").launcher, "npm exec");
        assert_eq!(of("pnpm dlx tiny-mcp").launcher, "pnpm dlx");
        assert_eq!(
            of("yarn dlx tiny-mcp@latest").target,
            npm("tiny-mcp", Some("latest"))
        );
        let r = of("bunx tiny-mcp@2.0.0");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("bunx", npm("tiny-mcp", Some("2.0.0")))
        );
    }

    #[test]
    fn uvx_uv_tool_run_and_pipx_run() {
        let r = of("uvx mcp-server-git --repository .");
        assert_eq!((r.target, r.arg), (pypi("mcp-server-git", None), Some(0)));
        assert_eq!(
            of("uvx mcp-server-git==2026.10.19").target,
            pypi("mcp-server-git", Some("2026.10.19"))
        );
        assert_eq!(
            of("uvx mcp-server-git@2026.10.19").target,
            pypi("mcp-server-git", Some("2026.10.19"))
        );
        let r = of("uvx --from mcp-server-time==1.0 mcp-server-time --local-timezone UTC");
        assert_eq!(
            (r.target, r.arg),
            (pypi("mcp-server-time", Some("1.0")), Some(1))
        );
        let r = of("uv tool run --python 3.12 pkg[cli]>=2");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("uv tool run", pypi("pkg", Some(">=2")))
        );
        let r = of("pipx run --spec tiny-py==1.0.0 tiny");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("pipx run", pypi("tiny-py", Some("1.0.0")))
        );
        assert_eq!(of("pipx run tiny-py").target, pypi("tiny-py", None));
    }

    #[test]
    fn docker_and_podman_run_find_the_image_after_the_options() {
        let r = of("docker run -i --rm -e GITHUB_TOKEN mcp/github");
        assert_eq!(r.launcher, "docker run");
        assert_eq!(
            r.target,
            Target::Oci {
                reference: "mcp/github".into()
            }
        );
        let digest = format!("ghcr.io/o/img:1@sha256:{}", "a".repeat(64));
        let r = of(&format!(
            "podman run --rm -v /a:/b --network=host {digest} serve"
        ));
        assert_eq!(r.target, Target::Oci { reference: digest });
    }

    #[test]
    fn local_scripts_by_interpreter_and_by_path() {
        let script = |path: &str| Target::Script { path: path.into() };
        assert_eq!(
            of("node --enable-source-maps server.js").target,
            script("server.js")
        );
        assert_eq!(
            of("python3 -u tools/server.py --x").target,
            script("tools/server.py")
        );
        assert_eq!(
            of("deno run --allow-read main.ts").target,
            script("main.ts")
        );
        assert_eq!(of("bun run index.ts").target, script("index.ts"));
        assert_eq!(of("bun index.ts").target, script("index.ts"));
        let r = of("./bin/server.sh --stdio");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("path", script("./bin/server.sh"))
        );
    }

    #[test]
    fn anything_else_is_not_recognised() {
        for line in [
            "my-server --stdio",
            "python -m mcp_server_time",
            "node -e console.log(1)",
            "npx",
            "npx ./local-dir",
            "npx github:owner/repo",
            "uvx ./path/to/pkg",
            "docker ps",
            "./missing/server",
        ] {
            let r = of(line);
            assert_eq!(r.target, Target::Unrecognised, "{line}");
            assert_eq!(r.launcher, words(line)[0], "{line}");
        }
    }

    #[test]
    fn npm_spec_splitting() {
        assert_eq!(
            split_npm_spec("@a/b@1.0.0"),
            Some(("@a/b".into(), Some("1.0.0".into())))
        );
        assert_eq!(split_npm_spec("@a/b"), Some(("@a/b".into(), None)));
        assert_eq!(
            split_npm_spec("pkg@next"),
            Some(("pkg".into(), Some("next".into())))
        );
        assert_eq!(split_npm_spec("pkg@"), None);
        assert_eq!(split_npm_spec("@a"), None);
        assert_eq!(split_npm_spec("a/b/c"), None);
        assert_eq!(split_npm_spec("alias@npm:other@1"), None);
    }

    #[test]
    fn pypi_spec_splitting() {
        assert_eq!(
            split_pypi_spec("Mcp_Server.x==1.2"),
            Some(("Mcp_Server.x".into(), Some("1.2".into())))
        );
        assert_eq!(
            split_pypi_spec("pkg[a,b]@3"),
            Some(("pkg".into(), Some("3".into())))
        );
        assert_eq!(
            split_pypi_spec("pkg~=1.0"),
            Some(("pkg".into(), Some("~=1.0".into())))
        );
        assert_eq!(split_pypi_spec("pkg @ https://x/y.whl"), None);
        assert_eq!(split_pypi_spec("pkg-"), None);
        assert_eq!(split_pypi_spec("pkg+local"), None);
    }
}
