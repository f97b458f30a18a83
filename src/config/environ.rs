//! The environment a stdio server is started with, besides its `env`: VS Code's
//! `envFile`, read when the server is contacted, and the variables a host lets the
//! server inherit (Codex passes only a few).

use std::collections::BTreeMap;
use std::io::Read;
use std::path::Path;

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
pub fn codex_inherited(env_vars: &[String]) -> Vec<String> {
    let mut names: Vec<String> = CODEX_INHERITED.iter().map(|v| v.to_string()).collect();
    for var in env_vars {
        if !names.contains(var) {
            names.push(var.clone());
        }
    }
    names
}

/// Sets a server's environment on the command that starts it: only the `inherit`
/// variables of this process when the host passes only those (every one otherwise),
/// then `env` over them.
pub fn set_environment(
    command: &mut std::process::Command,
    inherit: Option<&[String]>,
    env: &BTreeMap<String, String>,
) {
    if let Some(names) = inherit {
        command.env_clear();
        for name in names {
            if let Some(value) = std::env::var_os(name) {
                command.env(name, value);
            }
        }
    }
    command.envs(env);
}

/// Reads an `envFile` (at most [`MAX_ENV_FILE_BYTES`]) into its variables, as VS Code
/// does when it starts the server.
pub fn read_env_file(path: &Path) -> Result<Vec<(String, String)>, String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    if file.metadata().is_ok_and(|m| m.is_dir()) {
        return Err("is a directory".into());
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
            Some(q) => {
                if c == q && previous != Some('\\') {
                    quote = None;
                }
            }
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
    fn codex_servers_inherit_the_default_names_and_env_vars() {
        let names = codex_inherited(&["GITHUB_TOKEN".to_string(), "PATH".to_string()]);
        assert!(names.contains(&"PATH".to_string()));
        assert_eq!(names.last().unwrap(), "GITHUB_TOKEN");
        assert_eq!(names.iter().filter(|n| *n == "PATH").count(), 1);
    }
}
