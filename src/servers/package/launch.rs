//! What the guard launches for a pinned entry: the package spec rewritten to the pinned
//! version. Whether it may launch at all is [`super::check`]'s answer, as for verify.

use std::path::Path;

use sha2::{Digest, Sha256};

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

/// A pinned node or python script launched from the bytes the guard hashed: the
/// interpreter's arguments, and the sealed in-memory copy of the script they read it
/// from (inherited by the server; keep it open until the server has started).
#[derive(Debug)]
pub struct ScriptLaunch {
    pub args: Vec<String>,
    pub copy: std::os::fd::OwnedFd,
}

/// The most of a pinned script the guard copies before running it.
pub const MAX_SCRIPT_BYTES: u64 = 64 * 1024 * 1024;

/// For an entry that runs a pinned script with `node` or `python3`: reads the script
/// once, checks those bytes against the pin, and says how to run exactly them, so a
/// file swapped between the check and the interpreter's open is never what runs. The
/// bytes go into a sealed memfd the server inherits; a small bootstrap given to the
/// interpreter (`node -e`, `python3 -c`) runs them as the script itself (its path as
/// `__filename`/`__file__`, `process.argv[1]`/`sys.argv[0]`, relative imports from
/// its directory, CommonJS or ES module as node decides). `Ok(None)`: not such an
/// entry. `Err`: why nothing may start (the script changed, cannot be read). A
/// script that changed runs (these bytes, read once) only when `changed_may_run`: the
/// policy warns on `package-changed`, so verify passes it too.
pub fn script_launch(
    command: &str,
    args: &[String],
    cwd: &Path,
    pin: &PackagePin,
    changed_may_run: bool,
) -> Result<Option<ScriptLaunch>, String> {
    use std::io::{Read, Write};
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    use std::os::unix::fs::OpenOptionsExt;
    let Package::Script { sha256, .. } = &pin.package else {
        return Ok(None);
    };
    let rec = recognise(command, args, &|p| cwd.join(p).is_file());
    let (Target::Script { path }, Some(at)) = (&rec.target, rec.arg) else {
        return Ok(None);
    };
    let python = match rec.launcher.as_str() {
        "node" | "nodejs" => false,
        "python" | "python3" => true,
        _ => return Ok(None),
    };
    let full = cwd.join(path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(&full)
        .map_err(|e| format!("cannot read the pinned script {path}: {e}"))?;
    if !file.metadata().is_ok_and(|m| m.is_file()) {
        return Err(format!("the pinned script {path} is not a regular file"));
    }
    let mut bytes = Vec::new();
    file.take(MAX_SCRIPT_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| format!("cannot read the pinned script {path}: {e}"))?;
    if bytes.len() as u64 > MAX_SCRIPT_BYTES {
        return Err(format!(
            "the pinned script {path} is larger than {} MiB, the most the guard copies to run",
            MAX_SCRIPT_BYTES / (1024 * 1024)
        ));
    }
    let live = format!("{:x}", Sha256::digest(&bytes));
    if live != *sha256 && !changed_may_run {
        return Err(format!(
            "the script {path} changed since it was pinned (sha256 {} -> {}); nothing started",
            short(sha256),
            short(&live)
        ));
    }
    // SAFETY: memfd_create with a valid C string; the result is checked.
    let raw = unsafe { libc::memfd_create(c"mcp-lock-script".as_ptr(), libc::MFD_ALLOW_SEALING) };
    if raw < 0 {
        return Err(format!(
            "cannot make a private copy of the script {path}: {}",
            std::io::Error::last_os_error()
        ));
    }
    // SAFETY: a descriptor just created and owned by nothing else.
    let copy = unsafe { OwnedFd::from_raw_fd(raw) };
    let mut writer = std::fs::File::from(copy.try_clone().map_err(|e| e.to_string())?);
    writer
        .write_all(&bytes)
        .map_err(|e| format!("cannot make a private copy of the script {path}: {e}"))?;
    drop(writer);
    // SAFETY: fcntl and lseek on a descriptor this function owns.
    let sealed = unsafe {
        libc::fcntl(
            copy.as_raw_fd(),
            libc::F_ADD_SEALS,
            libc::F_SEAL_SHRINK | libc::F_SEAL_GROW | libc::F_SEAL_WRITE | libc::F_SEAL_SEAL,
        ) == 0
            && libc::lseek(copy.as_raw_fd(), 0, libc::SEEK_SET) == 0
    };
    if !sealed {
        return Err(format!(
            "cannot seal the private copy of the script {path}: {}",
            std::io::Error::last_os_error()
        ));
    }
    let fd = copy.as_raw_fd();
    let absolute = std::path::absolute(&full).unwrap_or(full.clone());
    let text = |p: &Path| serde_json::to_string(&p.to_string_lossy()).unwrap_or_default();
    let mut out = args[..at].to_vec();
    if python {
        // `python3 s.py`: `__file__` absolute, `sys.path[0]` the real directory.
        let real_dir = absolute
            .canonicalize()
            .ok()
            .and_then(|p| p.parent().map(Path::to_path_buf))
            .unwrap_or_else(|| absolute.parent().map(Path::to_path_buf).unwrap_or_default());
        let boot = format!(
            "def _mcp_lock_boot():\n    import os, sys, __main__\n    with os.fdopen({fd}, 'rb') as f:\n        source = f.read()\n    __main__.__file__ = {file}\n    sys.argv[0] = {argv0}\n    if sys.path and sys.path[0] == '' and not getattr(sys.flags, 'safe_path', False):\n        sys.path[0] = {dir}\n    del globals()['_mcp_lock_boot']\n    return compile(source, {file}, 'exec')\nexec(_mcp_lock_boot())\n",
            file = text(&absolute),
            argv0 = serde_json::to_string(path).unwrap_or_default(),
            dir = text(&real_dir),
        );
        out.extend(["-c".to_string(), boot]);
    } else {
        // `node s.js`: the main module is the real path. An ES module is served from
        // the copy by a load hook: in-thread (`module.registerHooks`, Node 22.15 and
        // later) where Node has it, since `module.register` starts a loader thread
        // that costs a start-up a tenth of a second or more; else off-thread.
        let real = absolute.canonicalize().unwrap_or(absolute);
        let boot = format!(
            r#"(() => {{
const M = require('module'), P = require('path'), F = require('fs'), U = require('url'), V = require('vm');
const file = {file};
const source = F.readFileSync({fd}, 'utf8');
F.closeSync({fd});
process.argv.splice(1, 0, file);
const e = process.execArgv.findIndex(a => a === '-e' || a === '--eval');
if (e >= 0) process.execArgv.splice(e, 2);
let esm = /\.m[jt]s$/.test(file);
if (!esm && !/\.c[jt]s$/.test(file)) {{
  for (let d = P.dirname(file); ; d = P.dirname(d)) {{
    let text = null;
    try {{ text = F.readFileSync(P.join(d, 'package.json'), 'utf8'); }} catch (e) {{}}
    if (text !== null) {{ try {{ esm = JSON.parse(text).type === 'module'; }} catch (e) {{}} break; }}
    if (d === P.dirname(d)) break;
  }}
  if (!esm) {{ try {{ new V.Script(M.wrap(source), {{ filename: file }}); }} catch (e) {{ esm = e instanceof SyntaxError; }} }}
}}
if (esm) {{
  const url = U.pathToFileURL(file).href;
  if (typeof M.registerHooks === 'function') {{
    M.registerHooks({{ load(x, c, n) {{ if (x === url) return {{ format: 'module', source, shortCircuit: true }}; return n(x, c); }} }});
  }} else {{
    const hook = 'let u, s; export function initialize(d) {{ u = d.url; s = d.source; }} export async function load(x, c, n) {{ if (x === u) return {{ format: "module", source: s, shortCircuit: true }}; return n(x, c); }}';
    M.register('data:text/javascript,' + encodeURIComponent(hook), {{ data: {{ url, source }} }});
  }}
  import(url);
  return;
}}
const m = new M(file, null);
m.filename = file;
m.id = '.';
m.paths = M._nodeModulePaths(P.dirname(file));
process.mainModule = m;
M._cache[file] = m;
m._compile(source, file);
m.loaded = true;
}})();"#,
            file = text(&real),
        );
        out.extend(["-e".to_string(), boot, "--".to_string()]);
    }
    out.extend(args[at + 1..].iter().cloned());
    Ok(Some(ScriptLaunch { args: out, copy }))
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
            })
            .map_err(closure::cache::InstallError::Failed)?,
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
    use crate::servers::package::tests::{pin, words};

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
