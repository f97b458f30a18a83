//! The option tables of the runners mcp-lock recognises, written from each runner's
//! own option list (npm's config definitions and `npx`'s argument pass, `uv tool run
//! --help`, `pipx run --help`, `docker run --help`, `podman run --help`,
//! `node --help`, `python3 --help`, `deno run --help`, `bun --help`). What matters is
//! which options take a value: a value taken for a positional argument, or a
//! positional taken for a value, would pin one package while the runner launches
//! another. An option not in a table makes the entry "not recognised".

/// What an option is to the recogniser.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// Takes no value (`--rm`, `-y`); `--flag=value` is accepted.
    Flag,
    /// Takes a value: the next argument, or attached (`--opt=v`, `-ov`).
    Value,
    /// Takes a value only attached (`--inspect=9229`, `--allow-read=.`).
    Attached,
    /// Its value names the package (`npx --package`, `uvx --from`, `pipx run --spec`).
    Package,
    /// Its value is the registry or index the runner resolves from.
    Registry,
    /// Its value picks the interpreter (`uvx --python`, `pipx run --python`): a
    /// version request (`3.12`, `cpython@3.12`, `>=3.11`) is taken; a path or an
    /// executable's name runs an interpreter mcp-lock does not pin, and makes the
    /// entry not recognised ([`is_version_request`]).
    Interpreter,
    /// The entry cannot be pinned as mcp-lock reads it: the code comes from elsewhere
    /// (`node -e`, `python -m`), or the option changes what the runner resolves in a
    /// way mcp-lock does not follow (`uvx --find-links`, `pipx run --pip-args`).
    Stop(&'static str),
}

use Kind::*;

mod runtimes;
pub use runtimes::*;

/// One option: its spellings and what it is.
pub type Opt = (&'static [&'static str], Kind);

/// How a runner reads its command line.
#[derive(Debug, Clone, Copy)]
pub struct Syntax {
    /// Short options cluster (`-it`) and take attached values (`-eFOO`): getopt,
    /// pflag, clap and argparse. Otherwise a short option is only ever a whole word.
    pub clusters: bool,
    /// An attached short value may be written `-e=FOO` (the `=` is dropped).
    pub short_eq: bool,
    /// Options end at the first positional argument (`npx`, `uvx`, `docker run`,
    /// interpreters). `npm exec` reads options anywhere before `--`.
    pub stop_at_positional: bool,
}

pub const GETOPT: Syntax = Syntax {
    clusters: true,
    short_eq: true,
    stop_at_positional: true,
};
/// Python's own option parser: `-Wignore`, `-cCODE`, but `-W=x` is the value `=x`.
pub const PYTHON: Syntax = Syntax {
    clusters: true,
    short_eq: false,
    stop_at_positional: true,
};
/// npm's nopt after `npx`'s pass: whole words only; `-p=x` is `--package=x`.
pub const NPX: Syntax = Syntax {
    clusters: false,
    short_eq: true,
    stop_at_positional: true,
};
pub const NPM_EXEC: Syntax = Syntax {
    clusters: false,
    short_eq: true,
    stop_at_positional: false,
};
/// node, deno, bun: whole words only (`node -r./x.js` is a "bad option").
pub const WORDS: Syntax = Syntax {
    clusters: false,
    short_eq: false,
    stop_at_positional: true,
};

const SHELL: Kind = Stop("it runs a shell command rather than the package");
const NPMRC: Kind = Stop("it names an npmrc file, whose registry mcp-lock does not read");

/// npm's boolean configs (`@npmcli/config` definitions whose type is Boolean), which
/// `npx` passes over as switches.
const NPM_BOOLEANS: &[&str] = &[
    "--all",
    "--allow-same-version",
    "--audit",
    "--bin-links",
    "--bypass-2fa",
    "--commit-hooks",
    "--dangerously-allow-all-scripts",
    "--description",
    "--dev",
    "--diff-ignore-all-space",
    "--diff-name-only",
    "--diff-no-prefix",
    "--diff-text",
    "--dry-run",
    "--engine-strict",
    "--expect-results",
    "--force",
    "--foreground-scripts",
    "--format-package-lock",
    "--fund",
    "--git-tag-version",
    "--global",
    "--global-style",
    "--if-present",
    "--ignore-scripts",
    "--include-staged",
    "--include-workspace-root",
    "--include-attestations",
    "--init-private",
    "--install-links",
    "--json",
    "--legacy-bundling",
    "--legacy-peer-deps",
    "--link",
    "--long",
    "--offline",
    "--omit-lockfile-registry-resolved",
    "--optional",
    "--package-lock",
    "--package-lock-only",
    "--parseable",
    "--prefer-dedupe",
    "--prefer-offline",
    "--prefer-online",
    "--production",
    "--progress",
    "--provenance",
    "--read-only",
    "--rebuild-bundle",
    "--save",
    "--save-bundle",
    "--save-dev",
    "--save-exact",
    "--save-optional",
    "--save-peer",
    "--save-prod",
    "--shrinkwrap",
    "--sign-git-commit",
    "--sign-git-tag",
    "--strict-peer-deps",
    "--strict-ssl",
    "--timing",
    "--unicode",
    "--update-notifier",
    "--usage",
    "--version",
    "--versions",
    "--workspaces",
    "--workspaces-update",
    "--yes",
    "--no-install",
    "--quiet",
    "--help",
    "--color",
    "--browser",
    // Shorthands of the above (npm's shorthand table).
    "-y",
    "-a",
    "-f",
    "-g",
    "-l",
    "-S",
    "-B",
    "-D",
    "-E",
    "-O",
    "-P",
    "-q",
    "-s",
    "-d",
    "-dd",
    "-ddd",
    "-v",
    "-h",
    "-H",
    "-?",
    "--silent",
    "--verbose",
    "--local",
    "--ws",
    "-ws",
    "--iwr",
    "-iwr",
    "--porcelain",
    "--readonly",
    "--desc",
    "-desc",
];

/// npm's configs that take a value (every other `@npmcli/config` definition).
const NPM_VALUES: &[&str] = &[
    "--_auth",
    "--access",
    "--allow-directory",
    "--allow-file",
    "--allow-git",
    "--allow-remote",
    "--also",
    "--audit-level",
    "--auth-type",
    "--before",
    "--enjoy-by",
    "--ca",
    "--cache",
    "--cache-max",
    "--cache-min",
    "--cafile",
    "--cert",
    "--cidr",
    "--cpu",
    "--depth",
    "--diff",
    "--diff-dst-prefix",
    "--diff-src-prefix",
    "--diff-unified",
    "--editor",
    "--expect-result-count",
    "--expires",
    "--fetch-retries",
    "--fetch-retry-factor",
    "--fetch-retry-maxtimeout",
    "--fetch-retry-mintimeout",
    "--fetch-timeout",
    "--git",
    "--heading",
    "--https-proxy",
    "--include",
    "--install-strategy",
    "--key",
    "--libc",
    "--local-address",
    "--location",
    "-L",
    "--lockfile-version",
    "--loglevel",
    "--logs-dir",
    "--logs-max",
    "--maxsockets",
    "--message",
    "-m",
    "--min-release-age",
    "--noproxy",
    "--omit",
    "--only",
    "--os",
    "--otp",
    "--pack-destination",
    "--preid",
    "--proxy",
    "--replace-registry-host",
    "--save-prefix",
    "--scope",
    "--searchexclude",
    "--searchlimit",
    "--searchopts",
    "--searchstaleness",
    "--tag",
    "--tag-version-prefix",
    "--umask",
    "--user-agent",
    "--viewer",
    "--which",
    "--workspace",
    "-w",
];

/// What `npm exec` and `npx` give a meaning of their own.
const NPM_ROLES: &[Opt] = &[
    (&["--package"], Package),
    (&["--registry", "--reg", "-reg"], Registry),
    (&["--call", "-c", "--shell"], SHELL),
    (&["--userconfig", "--globalconfig"], NPMRC),
    (
        &["--node-options"],
        Stop(
            "it gives node options (`--require`, `--import`) that load code before the package's, which mcp-lock does not pin",
        ),
    ),
    (
        &["--script-shell"],
        Stop("it names the shell that runs the package's command, a program mcp-lock does not pin"),
    ),
    (
        &["--node-gyp"],
        Stop("it names the program that builds native modules, which mcp-lock does not pin"),
    ),
    (
        &["--prefix", "-C"],
        Stop(
            "it names the directory whose node_modules npx may run the package from instead of the registry's",
        ),
    ),
];

/// `npx`: `-p` is `--package` (npx's own pass), everything else as `npm exec`.
pub fn npx(arg: &str) -> Option<Kind> {
    if arg == "-p" {
        return Some(Package);
    }
    npm_exec(arg)
}

/// `npm exec` / `npm x`: nopt over npm's definitions, where `-p` is `--parseable`.
pub fn npm_exec(arg: &str) -> Option<Kind> {
    if arg == "-p" {
        return Some(Flag);
    }
    find(NPM_ROLES, arg)
        .or_else(|| NPM_BOOLEANS.contains(&arg).then_some(Flag))
        .or_else(|| NPM_VALUES.contains(&arg).then_some(Value))
}

/// `pnpm dlx`, `yarn dlx`, `bunx`, `bun x`: only the options each documents for
/// naming the package (anything else is not recognised).
pub const DLX: &[Opt] = &[
    (&["--package", "-p"], Package),
    (&["--quiet", "-q", "--silent", "--bun"], Flag),
    (&["--shell-mode", "-c"], SHELL),
];

/// `uv tool run --help` (uv 0.13): every option it lists.
pub const UV: &[Opt] = &[
    (&["--from"], Package),
    (&["-p", "--python"], Interpreter),
    (
        &["--env-file"],
        Stop("it reads variables (`UV_*`, `PYTHONPATH`, …) from a file mcp-lock does not pin"),
    ),
    (&["--default-index", "--index-url", "-i"], Registry),
    (
        &[
            "-b",
            "--build-constraints",
            "--python-platform",
            "--torch-backend",
            "--keyring-provider",
            "-P",
            "--upgrade-package",
            "--upgrade-group",
            "--fork-strategy",
            "--no-sources-package",
            "--reinstall-package",
            "--link-mode",
            "-C",
            "--config-setting",
            "--config-settings-package",
            "--no-build-isolation-package",
            "--no-build-package",
            "--no-binary-package",
            "--cache-dir",
            "--refresh-package",
            "--color",
            "--allow-insecure-host",
            "--directory",
            "--project",
        ],
        Value,
    ),
    (
        &[
            "--isolated",
            "--no-env-file",
            "--lfs",
            "-U",
            "--upgrade",
            "--no-sources",
            "--reinstall",
            "--compile-bytecode",
            "--no-build-isolation",
            "--no-build",
            "--no-binary",
            "--require-build-hashes",
            "--no-require-build-hashes",
            "-n",
            "--no-cache",
            "--refresh",
            "--managed-python",
            "--no-managed-python",
            "--no-python-downloads",
            "-q",
            "--quiet",
            "-v",
            "--verbose",
            "--system-certs",
            "--offline",
            "--no-progress",
            "--no-config",
        ],
        Flag,
    ),
    (
        &[
            "--index",
            "--extra-index-url",
            "-f",
            "--find-links",
            "--no-index",
            "--index-strategy",
        ],
        Stop(
            "it adds package sources that uv may install from instead of the one index mcp-lock asks",
        ),
    ),
    (
        &[
            "-c",
            "--constraints",
            "--overrides",
            "--resolution",
            "--prerelease",
            "--prerelease-package",
            "--exclude-newer",
            "--exclude-newer-package",
        ],
        Stop("it changes which version uv picks, which mcp-lock does not follow"),
    ),
    (&["-h", "--help"], Stop("it prints help")),
    (
        &["--with", "-w", "--with-editable", "--with-requirements"],
        Stop("it installs packages beside the pinned one, whose code mcp-lock does not pin"),
    ),
    (
        &["--config-file"],
        Stop("it names a uv config file, whose indexes mcp-lock does not read"),
    ),
];

/// `pipx run --help`.
pub const PIPX: &[Opt] = &[
    (&["--spec"], Package),
    (&["--index-url", "-i"], Registry),
    (&["--python"], Interpreter),
    (
        &[
            "--no-cache",
            "--quiet",
            "-q",
            "--verbose",
            "-v",
            "--fetch-missing-python",
            "--system-site-packages",
            "--editable",
            "-e",
        ],
        Flag,
    ),
    (
        &["--pip-args"],
        Stop("it passes options to pip (an index, a path) that mcp-lock does not read"),
    ),
    (
        &["--path", "--pypackages"],
        Stop("it runs the app from a local path"),
    ),
    (&["-h", "--help"], Stop("it prints help")),
];

/// `docker run --help` (Docker 27/28): the options that take a value, then the rest.
const DOCKER_VALUES: &[&str] = &[
    "--add-host",
    "--annotation",
    "-a",
    "--attach",
    "--blkio-weight",
    "--blkio-weight-device",
    "--cap-add",
    "--cap-drop",
    "--cgroup-parent",
    "--cgroupns",
    "--cidfile",
    "--cpu-count",
    "--cpu-percent",
    "--cpu-period",
    "--cpu-quota",
    "--cpu-rt-period",
    "--cpu-rt-runtime",
    "-c",
    "--cpu-shares",
    "--cpus",
    "--cpuset-cpus",
    "--cpuset-mems",
    "--detach-keys",
    "--device",
    "--device-cgroup-rule",
    "--device-read-bps",
    "--device-read-iops",
    "--device-write-bps",
    "--device-write-iops",
    "--dns",
    "--dns-opt",
    "--dns-option",
    "--dns-search",
    "--domainname",
    "--entrypoint",
    "-e",
    "--env",
    "--env-file",
    "--expose",
    "--gpus",
    "--group-add",
    "--health-cmd",
    "--health-interval",
    "--health-retries",
    "--health-start-interval",
    "--health-start-period",
    "--health-timeout",
    "-h",
    "--hostname",
    "--io-maxbandwidth",
    "--io-maxiops",
    "--ip",
    "--ip6",
    "--ipc",
    "--isolation",
    "--kernel-memory",
    "-l",
    "--label",
    "--label-file",
    "--link",
    "--link-local-ip",
    "--log-driver",
    "--log-opt",
    "--mac-address",
    "-m",
    "--memory",
    "--memory-reservation",
    "--memory-swap",
    "--memory-swappiness",
    "--mount",
    "--name",
    "--network",
    "--net",
    "--network-alias",
    "--net-alias",
    "--oom-score-adj",
    "--pid",
    "--pids-limit",
    "--platform",
    "-p",
    "--publish",
    "--pull",
    "--restart",
    "--runtime",
    "--security-opt",
    "--shm-size",
    "--stop-signal",
    "--stop-timeout",
    "--storage-opt",
    "--sysctl",
    "--tmpfs",
    "--ulimit",
    "-u",
    "--user",
    "--userns",
    "--uts",
    "-v",
    "--volume",
    "--volume-driver",
    "--volumes-from",
    "-w",
    "--workdir",
];
const DOCKER_FLAGS: &[&str] = &[
    "-d",
    "--detach",
    "--disable-content-trust",
    "--init",
    "-i",
    "--interactive",
    "--no-healthcheck",
    "--oom-kill-disable",
    "--privileged",
    "-P",
    "--publish-all",
    "-q",
    "--quiet",
    "--read-only",
    "--rm",
    "--sig-proxy",
    "-t",
    "--tty",
    "--use-api-socket",
];
/// `podman run --help`: what podman adds to Docker's options.
const PODMAN_VALUES: &[&str] = &[
    "--arch",
    "--authfile",
    "--cert-dir",
    "--cgroup-conf",
    "--cgroups",
    "--chrootdirs",
    "--conmon-pidfile",
    "--creds",
    "--decryption-key",
    "--gidmap",
    "--group-entry",
    "--health-log-destination",
    "--health-max-log-count",
    "--health-max-log-size",
    "--health-on-failure",
    "--health-startup-cmd",
    "--health-startup-interval",
    "--health-startup-retries",
    "--health-startup-success",
    "--health-startup-timeout",
    "--hostuser",
    "--image-volume",
    "--init-path",
    "--os",
    "--passwd-entry",
    "--personality",
    "--pidfile",
    "--pod",
    "--pod-id-file",
    "--preserve-fds",
    "--rdt-class",
    "--requires",
    "--retry",
    "--retry-delay",
    "--sdnotify",
    "--seccomp-policy",
    "--secret",
    "--shm-size-systemd",
    "--subgidname",
    "--subuidname",
    "--systemd",
    "--timeout",
    "--uidmap",
    "--umask",
    "--unsetenv",
    "--variant",
];
const PODMAN_FLAGS: &[&str] = &[
    "--env-host",
    "--http-proxy",
    "--no-hostname",
    "--no-hosts",
    "--passwd",
    "--read-only-tmpfs",
    "--replace",
    "--rootfs",
    "--tls-verify",
    "--unsetenv-all",
];

pub fn docker(arg: &str) -> Option<Kind> {
    if DOCKER_VALUES.contains(&arg) {
        Some(Value)
    } else if DOCKER_FLAGS.contains(&arg) {
        Some(Flag)
    } else {
        None
    }
}

pub fn podman(arg: &str) -> Option<Kind> {
    docker(arg)
        .or_else(|| PODMAN_VALUES.contains(&arg).then_some(Value))
        .or_else(|| PODMAN_FLAGS.contains(&arg).then_some(Flag))
}

const EVAL: Kind = Stop("the code comes from an argument, not a file");

/// The kind of `arg` in a table.
pub fn find(table: &[Opt], arg: &str) -> Option<Kind> {
    table
        .iter()
        .find(|(names, _)| names.contains(&arg))
        .map(|(_, kind)| *kind)
}

/// Whether an interpreter option's value asks for a version (`3.12`, `3.12.1`,
/// `cpython@3.12`, `pypy3.10`, `>=3.11,<3.13`, `3.13t`, `any`) rather than naming an
/// executable or a path: a version is looked for where the runner always looks (its
/// managed interpreters, `PATH`), while a name or path (`./evilpy`, `evilpy`) runs
/// whatever that file is.
pub fn is_version_request(value: &str) -> bool {
    let lower = value.trim().to_ascii_lowercase();
    if lower.is_empty() || lower.contains(['/', '\\']) {
        return false;
    }
    if lower == "any" {
        return true;
    }
    let mut rest = lower.as_str();
    let mut implementation = false;
    for name in ["cpython", "graalpy", "pypy", "python", "cp", "pp", "gp"] {
        if let Some(r) = rest.strip_prefix(name) {
            rest = r.strip_prefix(['@', '-']).unwrap_or(r);
            implementation = true;
            break;
        }
    }
    if rest.is_empty() {
        return implementation;
    }
    let rest = rest
        .strip_suffix("+freethreaded")
        .or_else(|| rest.strip_suffix('t'))
        .unwrap_or(rest);
    rest.starts_with(|c: char| c.is_ascii_digit() || "<>=!~".contains(c))
        && rest
            .chars()
            .all(|c| c.is_ascii_digit() || ".,<>=!~* ".contains(c))
        && rest.contains(|c: char| c.is_ascii_digit())
}
