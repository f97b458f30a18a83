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
mod tests;
