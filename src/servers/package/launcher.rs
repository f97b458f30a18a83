//! Recognising what a stdio entry launches: an npm or PyPI package through its
//! ecosystem's runner, an OCI image through `docker`/`podman run`, or a local script.
//! Anything else is "not recognised", never guessed: each runner's command line is read
//! with its own option table ([`super::options`]), and an option not in it makes the
//! entry not recognised, with a note saying which.

use super::options::{self, Kind, Opt, Syntax};

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
    /// Why a runner's command line was not recognised (an option mcp-lock does not
    /// know, or one that means the code comes from elsewhere).
    pub note: Option<String>,
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
    let table = |t: &'static [Opt]| move |arg: &str| options::find(t, arg);
    let found = match base {
        "npx" => npm_runner("npx", args, 0, options::NPX, &options::npx),
        "bunx" => npm_runner("bunx", args, 0, options::WORDS, &table(options::DLX)),
        "npm" if matches!(first(args), Some("exec" | "x")) => npm_runner(
            &format!("npm {}", args[0]),
            args,
            1,
            options::NPM_EXEC,
            &options::npm_exec,
        ),
        "pnpm" if first(args) == Some("dlx") => {
            npm_runner("pnpm dlx", args, 1, options::WORDS, &table(options::DLX))
        }
        "yarn" if first(args) == Some("dlx") => {
            npm_runner("yarn dlx", args, 1, options::WORDS, &table(options::DLX))
        }
        "bun" if first(args) == Some("x") => {
            npm_runner("bun x", args, 1, options::WORDS, &table(options::DLX))
        }
        "uvx" => python_runner("uvx", args, 0, &table(options::UV)),
        "uv" if first(args) == Some("tool") && args.get(1).map(String::as_str) == Some("run") => {
            python_runner("uv tool run", args, 2, &table(options::UV))
        }
        "pipx" if first(args) == Some("run") => {
            python_runner("pipx run", args, 1, &table(options::PIPX))
        }
        "docker" if first(args) == Some("run") => oci_runner("docker run", args, &options::docker),
        "podman" if first(args) == Some("run") => oci_runner("podman run", args, &options::podman),
        "node" | "nodejs" => script_runner(base, args, 0, options::WORDS, &table(options::NODE)),
        "python" | "python3" => {
            script_runner(base, args, 0, options::PYTHON, &table(options::PYTHON_OPTS))
        }
        "deno" if first(args) == Some("run") => {
            script_runner("deno run", args, 1, options::WORDS, &table(options::DENO))
        }
        "bun" => {
            let start = usize::from(first(args) == Some("run"));
            script_runner(base, args, start, options::WORDS, &table(options::BUN))
        }
        _ if (command.contains('/') || command.contains('\\')) && is_file(command) => {
            Ok(Recognised {
                launcher: "path".into(),
                target: Target::Script {
                    path: command.to_string(),
                },
                arg: None,
                prefix: String::new(),
                registry: None,
                note: None,
            })
        }
        _ => Err(None),
    };
    found.unwrap_or_else(|note| Recognised {
        launcher: command.to_string(),
        target: Target::Unrecognised,
        arg: None,
        prefix: String::new(),
        registry: None,
        note,
    })
}

/// Not recognised: with a note when a runner was found but its line could not be read.
type NotRecognised = Option<String>;

fn first(args: &[String]) -> Option<&str> {
    args.first().map(String::as_str)
}

fn file_name(path: &str) -> &str {
    path.rsplit(['/', '\\']).next().unwrap_or(path)
}

/// A runner's command line as its option table reads it.
#[derive(Debug, Default)]
struct Line {
    /// The index of the first positional argument.
    positional: Option<usize>,
    /// The package option's value: the index of the argument holding it, the value,
    /// and what stays in front of it in that argument (`--package=`, `-p`).
    package: Option<(usize, String, String)>,
    /// The registry option's value, with a trailing `/`.
    registry: Option<String>,
}

/// A value attached to its option (`--opt=v`, `-ov`): the value, and what precedes it
/// in the argument.
type Attached = (String, String);

/// Reads `args[start..]` with a runner's option table, or says why it cannot.
fn read_line(
    launcher: &str,
    args: &[String],
    start: usize,
    syntax: Syntax,
    kind_of: &dyn Fn(&str) -> Option<Kind>,
) -> Result<Line, String> {
    let mut line = Line::default();
    let unknown =
        |name: &str| format!("`{launcher}` is given `{name}`, an option mcp-lock does not know");
    let mut i = start;
    while i < args.len() {
        let arg = args[i].as_str();
        if arg == "--" {
            if line.positional.is_none() && i + 1 < args.len() {
                line.positional = Some(i + 1);
            }
            break;
        }
        if arg == "-"
            && let Some(Kind::Stop(why)) = kind_of(arg)
        {
            return Err(format!("`{launcher}` is given `-`: {why}"));
        }
        if !arg.starts_with('-') || arg == "-" {
            line.positional.get_or_insert(i);
            if syntax.stop_at_positional {
                break;
            }
            i += 1;
            continue;
        }
        // The option's name, its kind, and a value attached to it with what precedes
        // the value in the argument.
        let mut taken: Option<(String, Kind, Option<Attached>)> = None;
        if arg.starts_with("--") || !syntax.clusters {
            let split = if arg.starts_with("--") || syntax.short_eq {
                arg.split_once('=')
            } else {
                None
            };
            let (name, attached) = match split {
                Some((name, value)) => (name, Some((value.to_string(), format!("{name}=")))),
                None => (arg, None),
            };
            let kind = kind_of(name).ok_or_else(|| unknown(name))?;
            taken = Some((name.to_string(), kind, attached));
        } else {
            // A getopt cluster: flags, then at most one option taking a value, which is
            // the rest of the argument or the next one.
            for (j, c) in arg.char_indices().skip(1) {
                let name = format!("-{c}");
                let kind = kind_of(&name).ok_or_else(|| unknown(&name))?;
                match kind {
                    Kind::Flag | Kind::Attached => continue,
                    Kind::Stop(_) => {
                        taken = Some((name, kind, None));
                        break;
                    }
                    _ => {
                        let end = j + c.len_utf8();
                        let mut rest = &arg[end..];
                        let mut prefix = arg[..end].to_string();
                        if syntax.short_eq && rest.starts_with('=') {
                            rest = &rest[1..];
                            prefix.push('=');
                        }
                        let attached = (!rest.is_empty()).then(|| (rest.to_string(), prefix));
                        taken = Some((name, kind, attached));
                        break;
                    }
                }
            }
        }
        let Some((name, kind, attached)) = taken else {
            i += 1;
            continue;
        };
        let value = match kind {
            Kind::Flag | Kind::Attached => None,
            Kind::Stop(why) => return Err(format!("`{launcher}` is given `{name}`: {why}")),
            Kind::Value | Kind::Package | Kind::Registry | Kind::Interpreter => match attached {
                Some((value, prefix)) => Some((i, value, prefix)),
                None => match args.get(i + 1) {
                    // A value that reads as an option: runners differ on it; not a guess.
                    Some(next) if !next.starts_with('-') => {
                        i += 1;
                        Some((i, next.clone(), String::new()))
                    }
                    _ => {
                        return Err(format!(
                            "`{launcher}` is given `{name}` without a value mcp-lock can read"
                        ));
                    }
                },
            },
        };
        match (kind, value) {
            (Kind::Interpreter, Some((_, value, _))) if !options::is_version_request(&value) => {
                return Err(format!(
                    "`{launcher}` is given `{name} {value}`: it picks the interpreter by path or name, which mcp-lock does not pin (give a version, `{name} 3.12`)"
                ));
            }
            (Kind::Package, Some(found)) => {
                if line.package.is_some() {
                    return Err(format!(
                        "`{launcher}` is given `{name}` twice: more than one package"
                    ));
                }
                line.package = Some(found);
            }
            (Kind::Registry, Some((_, url, _))) => {
                line.registry = Some(if url.ends_with('/') {
                    url
                } else {
                    format!("{url}/")
                });
            }
            _ => {}
        }
        i += 1;
    }
    Ok(line)
}

/// `npx [options] [--package=P] pkg[@spec] …`: with `--package`, the package is its
/// value and the first word after the options is the command it provides.
fn npm_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    syntax: Syntax,
    kind_of: &dyn Fn(&str) -> Option<Kind>,
) -> Result<Recognised, NotRecognised> {
    let line = read_line(launcher, args, start, syntax, kind_of).map_err(Some)?;
    let (index, written, prefix) = match line.package {
        Some(found) => found,
        None => match line.positional {
            Some(i) => (i, args[i].clone(), String::new()),
            None => return Err(Some(format!("`{launcher}` names no package"))),
        },
    };
    let (name, spec) = split_npm_spec(&written).ok_or_else(|| not_on_a_registry(&written))?;
    Ok(Recognised {
        launcher: launcher.into(),
        target: Target::Npm { name, spec },
        arg: Some(index),
        prefix,
        registry: line.registry,
        note: None,
    })
}

fn not_on_a_registry(written: &str) -> NotRecognised {
    Some(format!(
        "`{written}` is not a package on a registry (a path, URL, git or alias spec)"
    ))
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

/// `uvx [--from P] [options] pkg[==v|@v] …`, `pipx run [--spec P] [options] app …`:
/// the package option's value when given, else the first positional argument.
fn python_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    kind_of: &dyn Fn(&str) -> Option<Kind>,
) -> Result<Recognised, NotRecognised> {
    let line = read_line(launcher, args, start, options::GETOPT, kind_of).map_err(Some)?;
    let (index, written, prefix) = match line.package {
        Some(found) => found,
        None => match line.positional {
            Some(i) => (i, args[i].clone(), String::new()),
            None => return Err(Some(format!("`{launcher}` names no package"))),
        },
    };
    let (name, spec) = split_pypi_spec(&written).ok_or_else(|| not_on_a_registry(&written))?;
    Ok(Recognised {
        launcher: launcher.into(),
        target: Target::Pypi { name, spec },
        arg: Some(index),
        prefix,
        registry: line.registry,
        note: None,
    })
}

/// `name[extras]==1.2`, `name@1.2`, `name@latest`, `name>=1` or `name` into name and
/// spec, the spec as written after the name and its extras (`==1.2`, `@1.2`,
/// `@latest`, `>=1`), so messages quote it as the user wrote it. Paths, URLs and
/// `name @ url` references are not recognised.
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
    } else if let Some(v) = rest.strip_prefix("==") {
        let v = v.trim();
        if v.is_empty() || v.contains(['/', ':', ' ']) {
            return None;
        }
        Some(format!("=={v}"))
    } else if let Some(v) = rest.strip_prefix('@') {
        // uv's own `name@version` and `name@latest`; any other `@` is a PEP 508
        // direct reference (`name @ ./path`), which uv reads as a path or URL.
        let v = v.trim();
        if v != "latest" && super::pypi::exact_version(v).is_none() {
            return None;
        }
        Some(format!("@{v}"))
    } else if rest.starts_with(['>', '<', '~', '!', '=']) {
        Some(rest.to_string())
    } else {
        return None;
    };
    Some((name.to_string(), spec))
}

/// `docker run [options] IMAGE [command …]`.
fn oci_runner(
    launcher: &str,
    args: &[String],
    kind_of: &dyn Fn(&str) -> Option<Kind>,
) -> Result<Recognised, NotRecognised> {
    let line = read_line(launcher, args, 1, options::GETOPT, kind_of).map_err(Some)?;
    let i = line
        .positional
        .ok_or_else(|| Some(format!("`{launcher}` names no image")))?;
    Ok(Recognised {
        launcher: launcher.into(),
        target: Target::Oci {
            reference: args[i].clone(),
        },
        arg: Some(i),
        prefix: String::new(),
        registry: None,
        note: None,
    })
}

/// `node [options] path …`: the first positional argument after the options is the
/// script, unless an option says the code comes from elsewhere (`-e`, `-c`, `-m`).
fn script_runner(
    launcher: &str,
    args: &[String],
    start: usize,
    syntax: Syntax,
    kind_of: &dyn Fn(&str) -> Option<Kind>,
) -> Result<Recognised, NotRecognised> {
    let line = read_line(launcher, args, start, syntax, kind_of).map_err(Some)?;
    let i = line
        .positional
        .ok_or_else(|| Some(format!("`{launcher}` names no script")))?;
    let path = &args[i];
    // `deno run npm:pkg`, `deno run https://…`: a specifier, not a local file.
    if let Some((scheme, _)) = path.split_once(':')
        && scheme.len() > 1
        && scheme.bytes().all(|b| b.is_ascii_alphabetic())
    {
        return Err(Some(format!(
            "`{launcher}` runs `{path}`, which is not a local file"
        )));
    }
    Ok(Recognised {
        launcher: launcher.into(),
        target: Target::Script { path: path.clone() },
        arg: Some(i),
        prefix: String::new(),
        registry: None,
        note: None,
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
            pypi("mcp-server-git", Some("==2026.10.19"))
        );
        assert_eq!(
            of("uvx mcp-server-git@2026.10.19").target,
            pypi("mcp-server-git", Some("@2026.10.19"))
        );
        // uv's own `@latest`, also as the value of `--from`.
        assert_eq!(
            of("uvx awslabs.aws-documentation-mcp-server@latest").target,
            pypi("awslabs.aws-documentation-mcp-server", Some("@latest"))
        );
        let r = of("uvx --from mcp-server-time@latest mcp-server-time");
        assert_eq!(
            (r.target, r.arg),
            (pypi("mcp-server-time", Some("@latest")), Some(1))
        );
        let r = of("uvx --from mcp-server-time==1.0 mcp-server-time --local-timezone UTC");
        assert_eq!(
            (r.target, r.arg),
            (pypi("mcp-server-time", Some("==1.0")), Some(1))
        );
        let r = of("uv tool run --python 3.12 pkg[cli]>=2");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("uv tool run", pypi("pkg", Some(">=2")))
        );
        let r = of("pipx run --spec tiny-py==1.0.0 tiny");
        assert_eq!(
            (r.launcher.as_str(), r.target),
            ("pipx run", pypi("tiny-py", Some("==1.0.0")))
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
            Some(("Mcp_Server.x".into(), Some("==1.2".into())))
        );
        assert_eq!(
            split_pypi_spec("pkg[a,b]@3"),
            Some(("pkg".into(), Some("@3".into())))
        );
        assert_eq!(
            split_pypi_spec("pkg@latest"),
            Some(("pkg".into(), Some("@latest".into())))
        );
        // Any other `@` is a direct reference uv reads as a path: not a registry spec.
        assert_eq!(split_pypi_spec("pkg@next"), None);
        assert_eq!(
            split_pypi_spec("pkg~=1.0"),
            Some(("pkg".into(), Some("~=1.0".into())))
        );
        assert_eq!(split_pypi_spec("pkg @ https://x/y.whl"), None);
        assert_eq!(split_pypi_spec("pkg-"), None);
        assert_eq!(split_pypi_spec("pkg+local"), None);
    }

    /// The forms of issue 26: each pinned a decoy while the runner ran something else.
    #[test]
    fn an_option_is_read_as_its_runner_reads_it_and_an_unknown_one_is_never_guessed() {
        let digest = format!("mcp/github@sha256:{}", "a".repeat(64));
        // An option that takes a value takes the next word.
        let r = of("npx -y --globalconfig tiny-mcp evil-pkg");
        assert_eq!(r.target, Target::Unrecognised);
        assert!(r.note.unwrap().contains("`--globalconfig`"));
        assert_eq!(
            of("npx -y --cache ./npm-cache tiny-mcp").target,
            npm("tiny-mcp", None)
        );
        assert_eq!(
            of("uvx --refresh-package tiny-py evil").target,
            pypi("evil", None)
        );
        let r = of(&format!(
            "docker run -i --rm --health-cmd {digest} evil/image:latest"
        ));
        assert_eq!(
            r.target,
            Target::Oci {
                reference: "evil/image:latest".into()
            }
        );
        // Code given as an argument is no script, in every spelling.
        for line in [
            "node --eval=CODE s.js",
            "node -e CODE s.js",
            "node -pe CODE s.js",
            "python3 -cCODE s.py",
            "python3 -uc CODE s.py",
            "python3 -mmodule s.py",
            "python3 - s.py",
        ] {
            let r = of(line);
            assert_eq!(r.target, Target::Unrecognised, "{line}");
            assert!(r.note.is_some(), "{line}");
        }
        // Attached values take nothing more; a cluster's value is the rest of it.
        assert_eq!(
            of("python3 -Wignore -X dev -W=x s.py").target,
            Target::Script {
                path: "s.py".into()
            }
        );
        assert_eq!(
            of("python3 -uW ignore s.py").target,
            Target::Script {
                path: "s.py".into()
            }
        );
        assert_eq!(
            of("docker run -it -eFOO=1 -e=BAR --env=X img:1 serve").target,
            Target::Oci {
                reference: "img:1".into()
            }
        );
        assert_eq!(
            of("docker run -ite FOO img:1").target,
            Target::Oci {
                reference: "img:1".into()
            }
        );
        assert_eq!(
            of("node --title srv --inspect server.js").target,
            Target::Script {
                path: "server.js".into()
            }
        );
        assert_eq!(
            of("uvx -p3.12 --python=3.12 -qq tiny-py").target,
            pypi("tiny-py", None)
        );
        // Options a table does not hold, and ones whose effect is not followed.
        for line in [
            "npx --frobnicate tiny-mcp",
            "npx -yq tiny-mcp",
            "npx -c 'evil' tiny-mcp",
            "npx --userconfig ./rc tiny-mcp",
            "npx -p a -p b cmd",
            "npm exec tiny-mcp --stdio",
            "uvx --find-links ./wheels tiny-py",
            "uvx --index http://127.0.0.1:1/ tiny-py",
            "uvx -qZ tiny-py",
            "pipx run --pip-args=--index-url=x tiny-py",
            "docker run --frobnicate img",
            "node -r./x.js server.js",
            "node --require ./pre.js server.js",
            "node --import=./pre.mjs server.js",
            "uvx --with evil-extra tiny-py",
            "uvx --config-file ./uv.toml tiny-py",
            "node --max-old-space-size server.js",
            "deno run npm:evil",
            "deno run https://example.com/x.ts",
        ] {
            let r = of(line);
            assert_eq!(r.target, Target::Unrecognised, "{line}");
            assert!(r.note.is_some(), "{line}: a note says why");
        }
        // Options that load code or pick the interpreter (issue 40): the option named.
        for (line, option) in [
            (
                "npx --node-options=--require=./x.js -y tiny-mcp",
                "--node-options",
            ),
            ("npx -y --node-options --require tiny-mcp", "--node-options"),
            ("npx --script-shell ./sh -y tiny-mcp", "--script-shell"),
            ("npx --prefix ./vendor -y tiny-mcp", "--prefix"),
            ("npm exec --node-gyp ./gyp tiny-mcp", "--node-gyp"),
            ("uvx --python ./evilpy tiny-py", "--python ./evilpy"),
            ("uvx -p evilpy tiny-py", "-p evilpy"),
            (
                "uvx --python=/tmp/py/bin/python tiny-py",
                "--python /tmp/py/bin/python",
            ),
            ("uv tool run -p./py tiny-py", "-p ./py"),
            ("uvx --env-file .env tiny-py", "--env-file"),
            ("pipx run --python ./py tiny-py", "--python ./py"),
            ("node --env-file=.env server.js", "--env-file"),
            (
                "node --openssl-config ./o.cnf server.js",
                "--openssl-config",
            ),
            ("node --snapshot-blob ./s.blob server.js", "--snapshot-blob"),
            ("deno run --import-map=./m.json main.ts", "--import-map"),
            ("bun --config ./bunfig.toml index.ts", "--config"),
        ] {
            let r = of(line);
            assert_eq!(r.target, Target::Unrecognised, "{line}");
            let note = r.note.unwrap_or_default();
            assert!(note.contains(&format!("`{option}")), "{line}: {note}");
        }
        // A version request picks no file: the package is still the one pinned.
        for line in [
            "uvx --python 3.12 tiny-py",
            "uvx -p cpython@3.12.1 tiny-py",
            "uvx --python=>=3.11,<3.13 tiny-py",
            "uvx -p pypy3.10 tiny-py",
            "uvx -p 3.13t tiny-py",
            "pipx run --python 3.12 tiny-py",
        ] {
            assert_eq!(of(line).target, pypi("tiny-py", None), "{line}");
        }
        // `npm exec` reads options after the package too; `-p` is --parseable there.
        let r = of("npm exec -p tiny-mcp --registry http://127.0.0.1:1 -- --stdio");
        assert_eq!(r.target, npm("tiny-mcp", None));
        assert_eq!(r.registry.as_deref(), Some("http://127.0.0.1:1/"));
    }

    #[test]
    fn registry_and_index_arguments_are_what_the_pin_resolves_from() {
        let r = of("npx --registry=http://127.0.0.1:1/npm -y tiny-mcp");
        assert_eq!(r.registry.as_deref(), Some("http://127.0.0.1:1/npm/"));
        assert_eq!(
            of("npx --registry http://127.0.0.1:1/ tiny-mcp")
                .registry
                .as_deref(),
            Some("http://127.0.0.1:1/")
        );
        for line in [
            "uvx --index-url http://127.0.0.1:2/simple tiny-py",
            "uvx --default-index=http://127.0.0.1:2/simple tiny-py",
            "uvx -ihttp://127.0.0.1:2/simple tiny-py",
            "pipx run -i http://127.0.0.1:2/simple tiny-py",
        ] {
            assert_eq!(
                of(line).registry.as_deref(),
                Some("http://127.0.0.1:2/simple/"),
                "{line}"
            );
        }
        assert_eq!(of("npx -y tiny-mcp").registry, None);
    }

    #[test]
    fn package_options_keep_their_prefix_for_the_guard() {
        let r = of("uvx --from=tiny-py==1.0 tiny");
        assert_eq!((r.arg, r.prefix.as_str()), (Some(0), "--from="));
        let r = of("npx -p=tiny-mcp tiny");
        assert_eq!((r.arg, r.prefix.as_str()), (Some(0), "-p="));
        let r = of("pipx run --spec tiny-py tiny");
        assert_eq!((r.arg, r.prefix.as_str()), (Some(2), ""));
    }
}
