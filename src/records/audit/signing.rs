//! Who signs the guard's checkpoints: the user's own configuration,
//! `$XDG_CONFIG_HOME/mcp-lock/mcp-lock.toml` (else `~/.config/mcp-lock/mcp-lock.toml`),
//! never a project's file. A cloned repository's `mcp-lock.toml` that named a signing
//! command would have every guard session run it, and one that named
//! `~/.ssh/id_ed25519` would have the guard sign with the user's own key; so the
//! project's policy file keeps only what judges changes, and these settings live here.

use std::path::{Path, PathBuf};

use serde::Deserialize;

/// How a checkpoint is signed.
#[derive(Debug, Clone)]
pub enum Signer {
    /// `[audit] signing-key`: `ssh-keygen -Y sign -f KEY -n mcp-lock-audit`.
    Key(PathBuf),
    /// `[audit] sign-command`: text on stdin, signature on stdout.
    Command(Vec<String>),
}

/// The user's settings file's name, in `mcp-lock/` of the user's config directory.
pub const USER_SETTINGS_FILE: &str = "mcp-lock.toml";

/// The most of the user's settings file read: a few lines of TOML.
const MAX_BYTES: u64 = 1 << 20;

/// The user's settings file: `$XDG_CONFIG_HOME/mcp-lock/mcp-lock.toml` when that
/// variable is an absolute path, else `$HOME/.config/mcp-lock/mcp-lock.toml` (a
/// relative value would name a file of whatever directory the guard runs in, the
/// project's). None when neither is set.
pub fn user_settings_path(lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let absolute = |name: &str| lookup(name).map(PathBuf::from).filter(|p| p.is_absolute());
    let base =
        absolute("XDG_CONFIG_HOME").or_else(|| absolute("HOME").map(|h| h.join(".config")))?;
    Some(base.join("mcp-lock").join(USER_SETTINGS_FILE))
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawUserSettings {
    #[serde(default)]
    audit: RawUserAudit,
    // Tool rules, read by crate::verdict::rules.
    #[serde(default)]
    #[allow(dead_code)]
    tools: Option<toml::Value>,
    #[serde(default)]
    #[allow(dead_code)]
    prompts: Option<toml::Value>,
    #[serde(default, rename = "resource-templates")]
    #[allow(dead_code)]
    resource_templates: Option<toml::Value>,
    #[serde(default)]
    #[allow(dead_code)]
    profile: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawUserAudit {
    signing_key: Option<String>,
    sign_command: Option<Vec<String>>,
}

/// The signer the user's settings file names, if it names one; a missing file names
/// none. The error is one line naming the file and what to change.
pub fn user_signer(lookup: &dyn Fn(&str) -> Option<String>) -> Result<Option<Signer>, String> {
    let Some(path) = user_settings_path(lookup) else {
        return Ok(None);
    };
    let Some(text) = read_settings(&path)? else {
        return Ok(None);
    };
    let home = lookup("HOME")
        .map(PathBuf::from)
        .filter(|h| h.is_absolute());
    parse_signer(&text, &path, home.as_deref())
}

/// The signer of settings text read from `path`: `signing-key` (`~/` is `home`, a
/// relative path the settings file's directory) or `sign-command`.
fn parse_signer(text: &str, path: &Path, home: Option<&Path>) -> Result<Option<Signer>, String> {
    let shown = path.display();
    let raw: RawUserSettings = toml::from_str(crate::servers::config::shape::without_bom(text))
        .map_err(|e| {
            format!(
                "{shown}: {}; it may hold only [audit] signing-key or sign-command, and tool rules",
                e.message().trim()
            )
        })?;
    match (raw.audit.signing_key, raw.audit.sign_command) {
        (Some(_), Some(_)) => Err(format!(
            "{shown}: give [audit] signing-key or sign-command, not both"
        )),
        (None, Some(command)) if command.is_empty() => Err(format!(
            "{shown}: [audit] sign-command is empty; name the program and its arguments"
        )),
        (None, Some(command)) => Ok(Some(Signer::Command(command))),
        (Some(key), None) => {
            let key_path = match key.strip_prefix("~/") {
                Some(rest) => home
                    .ok_or_else(|| {
                        format!("{shown}: [audit] signing-key starts with ~/ but HOME is not set; write the key's absolute path")
                    })?
                    .join(rest),
                None => crate::base::files::parent_of(path).join(key),
            };
            Ok(Some(Signer::Key(key_path)))
        }
        (None, None) => Ok(None),
    }
}

/// The text of the settings file, None when there is none: only a regular file,
/// opened without blocking (a FIFO cannot hang the guard), at most [`MAX_BYTES`].
fn read_settings(path: &Path) -> Result<Option<String>, String> {
    match crate::base::files::read_regular_text(path, MAX_BYTES) {
        Ok(text) => Ok(Some(text)),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(format!(
            "cannot read {}: {e}; make it a regular file of your settings, or remove it",
            path.display()
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn lookup(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |name| {
            vars.iter()
                .find(|(k, _)| *k == name)
                .map(|(_, v)| v.to_string())
        }
    }

    #[test]
    fn the_user_settings_file_is_under_an_absolute_xdg_config_home_else_home() {
        let at = |vars| user_settings_path(&lookup(vars));
        assert_eq!(
            at(&[("XDG_CONFIG_HOME", "/x"), ("HOME", "/h")]),
            Some(PathBuf::from("/x/mcp-lock/mcp-lock.toml"))
        );
        assert_eq!(
            at(&[("XDG_CONFIG_HOME", "rel"), ("HOME", "/h")]),
            Some(PathBuf::from("/h/.config/mcp-lock/mcp-lock.toml"))
        );
        assert_eq!(at(&[("HOME", "rel")]), None);
    }

    #[test]
    fn a_key_is_read_from_home_or_beside_the_file_and_a_command_as_written() {
        let file = Path::new("/c/mcp-lock/mcp-lock.toml");
        let home = Some(Path::new("/h"));
        let key = |text: &str| match parse_signer(text, file, home) {
            Ok(Some(Signer::Key(k))) => k,
            other => panic!("{other:?}"),
        };
        assert_eq!(
            key("[audit]\nsigning-key = \"~/.ssh/audit\"\n"),
            PathBuf::from("/h/.ssh/audit")
        );
        assert_eq!(
            key("[audit]\nsigning-key = \"audit\"\n"),
            PathBuf::from("/c/mcp-lock/audit")
        );
        match parse_signer("[audit]\nsign-command = [\"s\", \"-x\"]\n", file, home) {
            Ok(Some(Signer::Command(argv))) => assert_eq!(argv, ["s", "-x"]),
            other => panic!("{other:?}"),
        }
        let err = parse_signer("[verify]\nauthority = \"warn\"\n", file, home).unwrap_err();
        assert!(
            err.contains("only [audit] signing-key or sign-command"),
            "{err}"
        );
        let err = parse_signer("[audit]\nsign-command = []\n", file, home).unwrap_err();
        assert!(err.contains("sign-command is empty"), "{err}");
    }
}
