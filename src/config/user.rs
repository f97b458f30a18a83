//! Where each client keeps its user-level servers (`--user CLIENT`). Servers read
//! from these files are personal: they are not the project's to share.

use std::path::{Path, PathBuf};

/// The clients `--user` knows, as it spells them.
pub const USER_CLIENTS: [&str; 7] = [
    "claude-code",
    "codex",
    "gemini-cli",
    "windsurf",
    "cline",
    "goose",
    "opencode",
];

/// The user-level config file of `client`, from `$HOME`, `$XDG_CONFIG_HOME` and
/// `$CODEX_HOME` as `lookup` gives them. `None` for an unknown client or when
/// `$HOME` is not set.
pub fn user_config_path(client: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    let home = lookup("HOME").filter(|h| !h.is_empty()).map(PathBuf::from);
    let config_home = lookup("XDG_CONFIG_HOME")
        .filter(|h| !h.is_empty())
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    Some(match client {
        "claude-code" => home?.join(".claude.json"),
        "codex" => lookup("CODEX_HOME")
            .filter(|h| !h.is_empty())
            .map(PathBuf::from)
            .or_else(|| home.map(|h| h.join(".codex")))?
            .join("config.toml"),
        "gemini-cli" => home?.join(".gemini/settings.json"),
        "windsurf" => home?.join(".codeium/windsurf/mcp_config.json"),
        "cline" => config_home?.join(
            "Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json",
        ),
        "goose" => config_home?.join("goose/config.yaml"),
        "opencode" => {
            let dir = config_home?.join("opencode");
            let jsonc = dir.join("opencode.jsonc");
            if jsonc.is_file() && !dir.join("opencode.json").is_file() {
                jsonc
            } else {
                dir.join("opencode.json")
            }
        }
        _ => return None,
    })
}

/// Whether `path` is one of the user-level files `--user` reads, under this
/// environment.
pub fn is_user_file(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = canonical(path);
    USER_CLIENTS
        .iter()
        .filter_map(|client| user_config_path(client, lookup))
        .any(|user| canonical(&user) == path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_files_follow_home_xdg_and_codex_home() {
        let env = |vars: &'static [(&'static str, &'static str)]| {
            move |k: &str| {
                vars.iter()
                    .find(|(n, _)| *n == k)
                    .map(|(_, v)| v.to_string())
            }
        };
        let home = env(&[("HOME", "/h")]);
        assert_eq!(
            user_config_path("claude-code", &home).unwrap(),
            Path::new("/h/.claude.json")
        );
        assert_eq!(
            user_config_path("codex", &home).unwrap(),
            Path::new("/h/.codex/config.toml")
        );
        assert_eq!(
            user_config_path("goose", &home).unwrap(),
            Path::new("/h/.config/goose/config.yaml")
        );
        let moved = env(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("CODEX_HOME", "/c"),
        ]);
        assert_eq!(
            user_config_path("codex", &moved).unwrap(),
            Path::new("/c/config.toml")
        );
        assert_eq!(
            user_config_path("cline", &moved).unwrap(),
            Path::new(
                "/x/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
            )
        );
        assert!(user_config_path("nope", &home).is_none());
        assert!(user_config_path("gemini-cli", &env(&[])).is_none());
    }
}
