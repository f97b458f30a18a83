//! The environment a stdio server is started with, besides its `env`: VS Code's
//! `envFile`, read when the server is contacted, and the variables a host lets the
//! server inherit (Codex passes only a few).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

use super::Host;

/// The most of an `envFile` read: a dotenv file is a few lines, and the file is
/// named by a (possibly cloned, hostile) config.
pub const MAX_ENV_FILE_BYTES: u64 = 1024 * 1024;

/// The variables Codex lets a stdio server inherit from its own environment, besides
/// the entry's `env_vars` (openai/codex `codex-rs/rmcp-client/src/utils.rs`
/// `DEFAULT_ENV_VARS`, `create_env_for_mcp_server`).
#[cfg(not(windows))]
pub const CODEX_INHERITED: &[&str] = &[
    "HOME",
    "LOGNAME",
    "PATH",
    "SHELL",
    "USER",
    "__CF_USER_TEXT_ENCODING",
    "LANG",
    "LC_ALL",
    "TERM",
    "TMPDIR",
    "TZ",
];

/// On Windows, Codex's `WINDOWS_CORE_ENV_VARS`
/// (openai/codex `codex-rs/protocol/src/shell_environment.rs`).
#[cfg(windows)]
pub const CODEX_INHERITED: &[&str] = &[
    "PATH",
    "PATHEXT",
    "SHELL",
    "COMSPEC",
    "SYSTEMROOT",
    "WINDIR",
    "SYSTEMDRIVE",
    "USERNAME",
    "USERDOMAIN",
    "USERPROFILE",
    "HOMEDRIVE",
    "HOMEPATH",
    "PROGRAMFILES",
    "PROGRAMFILES(X86)",
    "PROGRAMW6432",
    "PROGRAMDATA",
    "LOCALAPPDATA",
    "APPDATA",
    "TEMP",
    "TMP",
    "TMPDIR",
    "POWERSHELL",
    "PWSH",
];

/// What a Codex entry's server inherits: [`CODEX_INHERITED`], then its `env_vars`.
pub fn codex_inherited(env_vars: &[String]) -> Inherit {
    let mut names: Vec<String> = CODEX_INHERITED.iter().map(|v| v.to_string()).collect();
    for var in env_vars {
        if !names.contains(var) {
            names.push(var.clone());
        }
    }
    Inherit::Only(names)
}

/// Variables that decide which code a server's runtime or launcher loads, taken from
/// each one's documentation: Node.js (`nodejs.org/api/cli.html`, "Environment
/// variables": `NODE_OPTIONS` carries `--require`/`--import`, `NODE_PATH`,
/// `NODE_REPL_EXTERNAL_MODULE`, `NODE_COMPILE_CACHE`, `NODE_PRESERVE_SYMLINKS`) and the
/// OpenSSL it loads (`OPENSSL_CONF` loads engines and providers, `OPENSSL_ENGINES`,
/// `OPENSSL_MODULES`); Python (`docs.python.org/3/using/cmdline.html`, "Environment
/// variables": `PYTHONPATH`, `PYTHONHOME`, `PYTHONSTARTUP`, `PYTHONSAFEPATH`,
/// `PYTHONPLATLIBDIR`, `PYTHONUSERBASE` and `PYTHONNOUSERSITE` (the user site's `.pth`
/// files run code), `PYTHONPYCACHEPREFIX` (bytecode read in place of the source),
/// `PYTHONEXECUTABLE`, `PYTHONBREAKPOINT` and `PYTHONWARNINGS` (both import a module
/// they name), `PYTHONINSPECT`, `PYTHONCASEOK`); the dynamic loader (`ld.so(8)`:
/// every `LD_*`, `LD_PRELOAD`, `LD_LIBRARY_PATH` and `LD_AUDIT` among them; `dyld(1)`:
/// every `DYLD_*`; glibc's `GCONV_PATH`, which loads iconv modules); npm
/// (`docs.npmjs.com/cli/using-npm/config`: every `npm_config_*`, read case-blind, sets
/// a config such as `node-options`, `script-shell`, `userconfig` or `prefix`); uv
/// (`docs.astral.sh/uv/reference/environment`: every `UV_*`: indexes, find-links,
/// the interpreter, config files); pip and pipx (`PIP_*`, `PIPX_*`, among them
/// `PIPX_DEFAULT_PYTHON`); Deno (`DENO_*`, `DENO_DIR` its module cache), Bun
/// (`BUN_*`), Docker and Podman (`DOCKER_*`, `CONTAINER_HOST`, `CONTAINERS_*`,
/// `REGISTRIES_CONFIG_PATH`: which daemon, which credential helper runs); and the
/// like: `PATH` (which `npx`, `node` or `python3` the host starts), `HOME` and
/// `XDG_CONFIG_HOME`/`XDG_DATA_HOME`/`XDG_CACHE_HOME` (where `.npmrc`, `uv.toml`, the
/// user site and uv's interpreters are found), `BASH_ENV`/`ENV` (a file the shell
/// that runs an npm bin sources), the JVM's `JAVA_TOOL_OPTIONS`, `_JAVA_OPTIONS`,
/// `JDK_JAVA_OPTIONS`, `CLASSPATH`, Ruby's `RUBYOPT`, `RUBYLIB`, Perl's `PERL5OPT`,
/// `PERL5LIB`, `PERLLIB`.
///
/// The registry and index settings mcp-lock itself reads to check a package pin
/// (`npm_config_registry`, `npm_config_@scope:registry`, `UV_DEFAULT_INDEX`,
/// `UV_INDEX_URL`, `PIP_INDEX_URL`) are followed, not pinned: a pin is checked against
/// the registry they name.
const CODE_LOADING: &[&str] = &[
    "NODE_OPTIONS",
    "NODE_PATH",
    "NODE_REPL_EXTERNAL_MODULE",
    "NODE_COMPILE_CACHE",
    "NODE_PRESERVE_SYMLINKS",
    "OPENSSL_CONF",
    "OPENSSL_ENGINES",
    "OPENSSL_MODULES",
    "PYTHONPATH",
    "PYTHONHOME",
    "PYTHONSTARTUP",
    "PYTHONSAFEPATH",
    "PYTHONPLATLIBDIR",
    "PYTHONUSERBASE",
    "PYTHONNOUSERSITE",
    "PYTHONPYCACHEPREFIX",
    "PYTHONEXECUTABLE",
    "PYTHONBREAKPOINT",
    "PYTHONWARNINGS",
    "PYTHONINSPECT",
    "PYTHONCASEOK",
    "GCONV_PATH",
    "CONTAINER_HOST",
    "REGISTRIES_CONFIG_PATH",
    "PATH",
    "HOME",
    "XDG_CONFIG_HOME",
    "XDG_DATA_HOME",
    "XDG_CACHE_HOME",
    "BASH_ENV",
    "ENV",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "JDK_JAVA_OPTIONS",
    "CLASSPATH",
    "RUBYOPT",
    "RUBYLIB",
    "PERL5OPT",
    "PERL5LIB",
    "PERLLIB",
];

/// Prefixes of [`CODE_LOADING`] families.
const CODE_LOADING_PREFIXES: &[&str] = &[
    "LD_",
    "DYLD_",
    "NPM_CONFIG_",
    "UV_",
    "PIP_",
    "PIPX_",
    "DENO_",
    "BUN_",
    "DOCKER_",
    "CONTAINERS_",
];

/// Whether a variable decides which code a server's runtime or launcher loads (see
/// [`CODE_LOADING`]): such a variable in an entry's `env` is part of its launch,
/// pinned in the lock, and a change to it is `launch-changed`. Names are compared
/// case-blind (npm reads its own so, and Windows all).
pub fn loads_code(name: &str) -> bool {
    let upper = name.to_ascii_uppercase();
    if upper == "NPM_CONFIG_REGISTRY"
        || (upper.starts_with("NPM_CONFIG_@") && upper.ends_with(":REGISTRY"))
        || matches!(
            upper.as_str(),
            "UV_DEFAULT_INDEX" | "UV_INDEX_URL" | "PIP_INDEX_URL"
        )
    {
        return false;
    }
    CODE_LOADING.contains(&upper.as_str())
        || CODE_LOADING_PREFIXES.iter().any(|p| upper.starts_with(p))
}

/// The pin of one code-loading variable of an entry's `env`: `sha256:` and the hex
/// SHA-256 of its value as the config writes it (`${VAR}` unexpanded), so no value,
/// secret or not, is written to the lock.
pub fn code_env_pin(written: &str) -> String {
    use sha2::{Digest, Sha256};
    format!("sha256:{:x}", Sha256::digest(written.as_bytes()))
}

/// Where a stdio server's environment comes from besides its host's own and its
/// entry's `env`.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Environ {
    /// VS Code's (and Cursor's) `envFile`, as written (a `${VAR}` template): a dotenv
    /// file read when the server is started, under the entry's `env`.
    pub env_file: Option<String>,
    /// What of the host's environment the server inherits, when not all: the host
    /// of the file that defines the entry (the first one read, when several define
    /// it alike).
    pub inherit: Option<Inherit>,
    /// When other hosts' files define the entry alike but pass the server another
    /// environment (a Gemini CLI and a Claude Code file naming one server), what each
    /// of those hosts lets it inherit: its listing under that host's client profile is
    /// made with that environment ([`Environ::inherit_of`]).
    pub by_host: Vec<(Host, Option<Inherit>)>,
    /// The entry's `env` PATH is put after the inherited one, as VS Code does, rather
    /// than replacing it.
    pub path_appends: bool,
}

impl Environ {
    /// What `host` lets the server inherit: its own entry in `by_host`, else
    /// `inherit`.
    pub fn inherit_of(&self, host: Host) -> Option<Inherit> {
        match self.by_host.iter().find(|(h, _)| *h == host) {
            Some((_, inherit)) => inherit.clone(),
            None => self.inherit.clone(),
        }
    }
}

/// Which of its own variables a host lets a stdio server inherit, when not all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Inherit {
    /// Only these (Codex).
    Only(Vec<String>),
    /// All but those that look like secrets, as Gemini CLI strips them
    /// ([`gemini_keeps`]), with its settings' `allowed` and `blocked` names.
    GeminiRedacted {
        allowed: Vec<String>,
        blocked: Vec<String>,
    },
    /// All but these: the names a VS Code entry's `env` sets to `null`.
    AllBut(Vec<String>),
}

/// Sets a server's environment on the command that starts it: what its host lets it
/// inherit of this process's environment (all of it when `inherit` is `None`), then
/// `env` over that.
pub fn set_environment(
    command: &mut std::process::Command,
    inherit: Option<&Inherit>,
    env: &BTreeMap<String, String>,
) {
    match inherit {
        None => {}
        Some(Inherit::Only(names)) => {
            command.env_clear();
            for name in names {
                if let Some(value) = std::env::var_os(name) {
                    command.env(name, value);
                }
            }
        }
        Some(Inherit::AllBut(names)) => {
            for name in names {
                command.env_remove(name);
            }
        }
        Some(Inherit::GeminiRedacted { allowed, blocked }) => {
            // What a developer's Gemini CLI passes. Its GitHub Actions mode (only its
            // short list, when `GITHUB_SHA` is set) is not applied: a verify in
            // Actions lists the server as the agent on a developer's machine gets it.
            let strict = false;
            for (name, value) in std::env::vars_os() {
                let (name_text, value_text) = (name.to_string_lossy(), value.to_string_lossy());
                if !gemini_keeps(&name_text, &value_text, allowed, blocked, strict) {
                    command.env_remove(&name);
                }
            }
        }
    }
    command.envs(env);
}

/// A Gemini CLI settings file's inheritance: its
/// `security.environmentVariableRedaction` `allowed` and `blocked` names.
pub fn gemini_redaction(root: &serde_json::Value) -> Result<Inherit, String> {
    let lists = root
        .get("security")
        .and_then(|s| s.get("environmentVariableRedaction"));
    let names = |key: &str| -> Result<Vec<String>, String> {
        match lists.and_then(|l| l.get(key)) {
            None | Some(serde_json::Value::Null) => Ok(Vec::new()),
            Some(serde_json::Value::Array(items)) => items
                .iter()
                .map(|v| v.as_str().map(str::to_string))
                .collect::<Option<_>>()
                .ok_or_else(|| format!("security.environmentVariableRedaction.{key} holds a value that is not a string")),
            Some(_) => Err(format!(
                "security.environmentVariableRedaction.{key} is not a list"
            )),
        }
    };
    Ok(Inherit::GeminiRedacted {
        allowed: names("allowed")?,
        blocked: names("blocked")?,
    })
}

/// Variables Gemini CLI always passes on.
const GEMINI_ALWAYS: &[&str] = &[
    "PATH",
    "SYSTEMROOT",
    "COMSPEC",
    "PATHEXT",
    "WINDIR",
    "TEMP",
    "TMP",
    "USERPROFILE",
    "SYSTEMDRIVE",
    "HOME",
    "LANG",
    "SHELL",
    "TMPDIR",
    "USER",
    "LOGNAME",
    "ADDITIONAL_CONTEXT",
    "AVAILABLE_LABELS",
    "BRANCH_NAME",
    "DESCRIPTION",
    "EVENT_NAME",
    "GITHUB_ENV",
    "IS_PULL_REQUEST",
    "ISSUES_TO_TRIAGE",
    "ISSUE_BODY",
    "ISSUE_NUMBER",
    "ISSUE_TITLE",
    "PULL_REQUEST_NUMBER",
    "REPOSITORY",
    "TITLE",
    "TRIGGERING_ACTOR",
];

/// Variables Gemini CLI never passes on.
const GEMINI_NEVER: &[&str] = &[
    "CLIENT_ID",
    "DB_URI",
    "CONNECTION_STRING",
    "AWS_DEFAULT_REGION",
    "AZURE_CLIENT_ID",
    "AZURE_TENANT_ID",
    "SLACK_WEBHOOK_URL",
    "TWILIO_ACCOUNT_SID",
    "DATABASE_URL",
    "GOOGLE_CLOUD_PROJECT",
    "GOOGLE_CLOUD_ACCOUNT",
    "FIREBASE_PROJECT_ID",
];

/// Parts of a name that make Gemini CLI strip the variable.
const GEMINI_NEVER_IN_NAME: &[&str] = &[
    "TOKEN",
    "SECRET",
    "PASSWORD",
    "PASSWD",
    "KEY",
    "AUTH",
    "CREDENTIAL",
    "CREDS",
    "PRIVATE",
    "CERT",
];

/// Whether Gemini CLI passes one of its variables on to a stdio server, as its
/// `sanitizeEnvironment` decides with redaction on, as it always is for MCP servers
/// (google-gemini/gemini-cli `packages/core/src/services/environmentSanitization.ts`,
/// `packages/core/src/tools/mcp-client.ts` `createTransport`): the settings'
/// `allowed` and `blocked` names first, then its fixed lists, then (unless `strict`,
/// in GitHub Actions, where nothing else passes) names and values that look like
/// credentials.
pub fn gemini_keeps(
    name: &str,
    value: &str,
    allowed: &[String],
    blocked: &[String],
    strict: bool,
) -> bool {
    let upper = name.to_uppercase();
    let listed = |names: &[String]| names.iter().any(|n| n.to_uppercase() == upper);
    if listed(allowed) {
        return true;
    }
    if listed(blocked) {
        return false;
    }
    if GEMINI_ALWAYS.contains(&upper.as_str()) || upper.starts_with("GEMINI_CLI_") {
        return true;
    }
    if GEMINI_NEVER.contains(&upper.as_str()) || strict {
        return false;
    }
    if GEMINI_NEVER_IN_NAME.iter().any(|part| upper.contains(part)) {
        return false;
    }
    !looks_like_credential(&value.to_uppercase())
}

/// Gemini CLI's value patterns, on the upper-cased value: private keys and
/// certificates, a URL with a password, GitHub, Google, AWS, Stripe and Slack tokens,
/// and JWTs.
fn looks_like_credential(value: &str) -> bool {
    let word = |c: char| c.is_ascii_alphanumeric() || c == '_';
    let run = |rest: &str, ok: &dyn Fn(char) -> bool| rest.chars().take_while(|c| ok(*c)).count();
    // Every place `prefix` occurs, with what follows it.
    let after = |prefix: &'static str| {
        value
            .match_indices(prefix)
            .map(move |(at, _)| &value[at + prefix.len()..])
    };
    for kind in ["RSA", "OPENSSH", "EC", "PGP"] {
        if value.contains(&format!("-----BEGIN {kind} PRIVATE KEY-----")) {
            return true;
        }
    }
    if value.contains("-----BEGIN CERTIFICATE-----") {
        return true;
    }
    for scheme in ["HTTP://", "HTTPS://", "FTP://", "SMTP://"] {
        for rest in after(scheme) {
            // `[^:]+:[^@]+@`: a user, a colon, a password, an at sign.
            if let Some(colon) = rest.find(':')
                && colon > 0
                && rest[colon + 1..].find('@').is_some_and(|at| at > 0)
            {
                return true;
            }
        }
    }
    for prefix in ["GHP_", "GHO_", "GHU_", "GHS_", "GHR_", "GITHUB_PAT_"] {
        if after(prefix).any(|rest| run(rest, &word) >= 36) {
            return true;
        }
    }
    let google = |c: char| word(c) || c == '-' || c == '\\';
    if after("AIZASY").any(|rest| run(rest, &google) >= 33) {
        return true;
    }
    if after("AKIA").any(|rest| run(rest, &|c: char| c.is_ascii_alphanumeric()) >= 16) {
        return true;
    }
    let jwt = |c: char| word(c) || c == '-';
    if after("EYJ").any(|rest| {
        let first = run(rest, &jwt);
        rest[first..].strip_prefix('.').is_some_and(|rest| {
            let second = run(rest, &jwt);
            rest[second..].starts_with('.')
        })
    }) {
        return true;
    }
    for prefix in ["SK_LIVE_", "SK_TEST_", "RK_LIVE_", "RK_TEST_"] {
        if after(prefix).any(|rest| run(rest, &|c: char| c.is_ascii_alphanumeric()) >= 24) {
            return true;
        }
    }
    for prefix in ["XOXA-", "XOXB-", "XOXP-", "XOXR-"] {
        if after(prefix)
            .any(|rest| run(rest, &|c: char| c.is_ascii_alphanumeric() || c == '-') >= 1)
        {
            return true;
        }
    }
    false
}

/// Reads an `envFile` (at most [`MAX_ENV_FILE_BYTES`]) into its variables, as VS Code
/// does when it starts the server.
pub fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    use std::os::unix::fs::OpenOptionsExt;
    // Opened without blocking, so a FIFO or a terminal committed where the file should
    // be is refused at once rather than waited on for ever.
    let file = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
        .map_err(|e| e.to_string())?;
    let kind = file.metadata().map_err(|e| e.to_string())?.file_type();
    if kind.is_dir() {
        return Err("is a directory".into());
    }
    if !kind.is_file() {
        return Err("is not a regular file".into());
    }
    let mut bytes = Vec::new();
    file.take(MAX_ENV_FILE_BYTES + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > MAX_ENV_FILE_BYTES {
        return Err(format!("larger than {} KiB", MAX_ENV_FILE_BYTES / 1024));
    }
    let text = String::from_utf8(bytes).map_err(|_| "not UTF-8 text".to_string())?;
    Ok(parse_env_file(&text))
}

/// A dotenv file's variables, in order, as VS Code's `parseEnvFile` reads them
/// (microsoft/vscode `src/vs/base/common/envfile.ts`): blank lines and `#` lines are
/// skipped, an `export ` prefix is dropped, the first `=` or `:` outside quotes
/// separates name and value, a `#` outside quotes starts a comment, and a value in
/// matching `"`, `'` or `` ` `` quotes loses them (`\n` and `\r` are unescaped in
/// double quotes only). A later line for a name wins.
pub fn parse_env_file(text: &str) -> Vec<(String, String)> {
    let text = text.replace("\r\n", "\n").replace('\r', "\n");
    let mut vars: Vec<(String, String)> = Vec::new();
    for line in text.split('\n') {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let line = match line.strip_prefix("export ") {
            Some(rest) => rest.trim(),
            None => line,
        };
        let Some(at) = outside_quotes(line, |c| c == '=' || c == ':') else {
            continue;
        };
        let key = line[..at].trim();
        let mut value = line[at + 1..].trim();
        if let Some(hash) = outside_quotes(value, |c| c == '#') {
            value = value[..hash].trim();
        }
        let value = unquote(value);
        if key.is_empty() {
            continue;
        }
        match vars.iter_mut().find(|(k, _)| k == key) {
            Some(existing) => existing.1 = value,
            None => vars.push((key.to_string(), value)),
        }
    }
    vars
}

/// A value without its surrounding quotes, as VS Code strips them.
fn unquote(value: &str) -> String {
    let mut chars = value.chars();
    let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
        return value.to_string();
    };
    if first != last || !matches!(first, '"' | '\'' | '`') {
        return value.to_string();
    }
    let inner = &value[1..value.len() - 1];
    if first == '"' {
        inner.replace("\\n", "\n").replace("\\r", "\r")
    } else {
        inner.to_string()
    }
}

/// The byte offset of the first character `wanted` outside `"`, `'` or `` ` ``
/// quotes (a quote preceded by a backslash does not close one).
fn outside_quotes(text: &str, wanted: impl Fn(char) -> bool) -> Option<usize> {
    let mut quote: Option<char> = None;
    let mut previous = None;
    for (at, c) in text.char_indices() {
        match quote {
            Some(q) if c == q && previous != Some('\\') => quote = None,
            Some(_) => {}
            None if matches!(c, '"' | '\'' | '`') => quote = Some(c),
            None if wanted(c) => return Some(at),
            None => {}
        }
        previous = Some(c);
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parsed(text: &str) -> Vec<(String, String)> {
        parse_env_file(text)
    }

    fn pair(k: &str, v: &str) -> (String, String) {
        (k.to_string(), v.to_string())
    }

    #[test]
    fn an_env_file_is_read_as_vs_code_reads_it() {
        let text = "# a comment\r\n\nexport A=1\nB = \"two # not a comment\\nline\" # comment\nC: 'single \\n'\nD=`tick`\nE=plain # trailing\n=nameless\nno separator\nA=again\n";
        assert_eq!(
            parsed(text),
            vec![
                pair("A", "again"),
                pair("B", "two # not a comment\nline"),
                pair("C", "single \\n"),
                pair("D", "tick"),
                pair("E", "plain"),
            ]
        );
    }

    #[test]
    fn a_value_keeps_what_follows_its_first_separator() {
        assert_eq!(
            parsed("URL=http://h:8080/x?a=b"),
            vec![pair("URL", "http://h:8080/x?a=b")]
        );
        // The first separator, `:` or `=`, splits: VS Code reads this name as "K".
        assert_eq!(parsed("K:V=W"), vec![pair("K", "V=W")]);
        // Mismatched quotes stay as written.
        assert_eq!(parsed("Q=\"open"), vec![pair("Q", "\"open")]);
    }

    #[test]
    fn an_oversized_env_file_is_refused() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(".env");
        std::fs::write(&path, "A=".repeat(600 * 1024)).unwrap();
        assert_eq!(read_env_file(&path).unwrap_err(), "larger than 1024 KiB");
        assert_eq!(read_env_file(dir.path()).unwrap_err(), "is a directory");
    }

    #[test]
    fn gemini_strips_what_looks_like_a_secret_but_keeps_its_fixed_names() {
        let keeps = |name: &str, value: &str| gemini_keeps(name, value, &[], &[], false);
        assert!(keeps("PATH", "/bin"));
        assert!(keeps("EDITOR", "vi"));
        assert!(keeps("GEMINI_CLI_SYSTEM_SETTINGS_PATH", "x"));
        assert!(!keeps("GITHUB_TOKEN", "x"));
        assert!(!keeps("my_api_key", "x"));
        assert!(!keeps("DATABASE_URL", "x"));
        assert!(!keeps("NOTES", "https://me:pw@example.com/"));
        assert!(keeps("NOTES", "https://example.com/a:b"));
        assert!(!keeps("NOTES", &format!("ghp_{}", "a".repeat(36))));
        assert!(keeps("NOTES", &format!("ghp_{}", "a".repeat(35))));
        assert!(!keeps("NOTES", "eyJhbGci.eyJzdWIi.sig"));
        assert!(!keeps("NOTES", &format!("AKIA{}", "A".repeat(16))));
        assert!(!keeps("NOTES", "xoxb-1-2"));
        assert!(!keeps("NOTES", &format!("sk_live_{}", "a".repeat(24))));
        // The settings' lists come first; in GitHub Actions only the fixed names pass.
        let allowed = ["GITHUB_TOKEN".to_string()];
        assert!(gemini_keeps("github_token", "x", &allowed, &[], true));
        assert!(!gemini_keeps(
            "EDITOR",
            "vi",
            &[],
            &["editor".to_string()],
            false
        ));
        assert!(!gemini_keeps("EDITOR", "vi", &[], &[], true));
        assert!(gemini_keeps("HOME", "/h", &[], &[], true));
    }

    #[test]
    fn an_env_file_that_is_a_fifo_is_refused_at_once_not_waited_on() {
        let dir = tempfile::tempdir().unwrap();
        let fifo = dir.path().join(".env");
        let c_path = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c_path.as_ptr(), 0o600) }, 0);
        let started = std::time::Instant::now();
        assert_eq!(read_env_file(&fifo).unwrap_err(), "is not a regular file");
        assert!(started.elapsed() < std::time::Duration::from_secs(2));
    }

    #[test]
    fn code_loading_variables_are_known_by_name_and_family_and_registries_are_followed() {
        for name in [
            "NODE_OPTIONS",
            "PYTHONPATH",
            "pythonpath",
            "LD_PRELOAD",
            "DYLD_INSERT_LIBRARIES",
            "npm_config_node_options",
            "UV_PYTHON",
            "PIP_FIND_LINKS",
            "PATH",
        ] {
            assert!(loads_code(name), "{name}");
        }
        for name in [
            "API_KEY",
            "PYTHONUNBUFFERED",
            "npm_config_registry",
            "npm_config_@acme:registry",
            "UV_INDEX_URL",
            "DEBUG",
        ] {
            assert!(!loads_code(name), "{name}");
        }
        assert_eq!(code_env_pin("x"), code_env_pin("x"));
        assert_ne!(
            code_env_pin("--require ./a.js"),
            code_env_pin("--require ./b.js")
        );
        assert!(code_env_pin("secret").starts_with("sha256:"));
    }

    #[test]
    fn codex_servers_inherit_the_default_names_and_env_vars() {
        let Inherit::Only(names) =
            codex_inherited(&["GITHUB_TOKEN".to_string(), "PATH".to_string()])
        else {
            panic!("a list")
        };
        assert!(names.contains(&"PATH".to_string()));
        assert_eq!(names.last().unwrap(), "GITHUB_TOKEN");
        assert_eq!(names.iter().filter(|n| *n == "PATH").count(), 1);
    }
}
