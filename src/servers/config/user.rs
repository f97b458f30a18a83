//! Where each client keeps its user-level servers (`--user CLIENT`). Servers read
//! from these files are personal: they are not the project's to share.

use std::path::{Path, PathBuf};

/// The clients `--user` knows, as it spells them (the names client profiles use
/// where a client has one).
pub const USER_CLIENTS: [&str; 15] = [
    "claude-code",
    "claude-desktop",
    "codex",
    "gemini-cli",
    "windsurf",
    "cline",
    "goose",
    "opencode",
    "kiro",
    "cursor",
    "vscode",
    "zed",
    "roo-code",
    "continue",
    "amazon-q",
];

/// The operating system whose conventions a client's user-level file follows.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Platform {
    Linux,
    MacOs,
    Windows,
}

impl Platform {
    /// The platform mcp-lock was built for.
    pub fn current() -> Platform {
        if cfg!(target_os = "macos") {
            Platform::MacOs
        } else if cfg!(windows) {
            Platform::Windows
        } else {
            Platform::Linux
        }
    }
}

/// The user-level files `--user CLIENT` reads (one for most clients; a file and the
/// files of a folder for Amazon Q and Continue), and a note on the choice when the
/// client keeps its file in one of two places.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UserConfig {
    pub paths: Vec<PathBuf>,
    pub note: Option<String>,
}

/// The places `client` may keep its user-level config on `platform`, the one the
/// client reads first: `None` for an unknown client or when the home directory is
/// not set. Variables come from `lookup`.
pub fn user_config_places(
    client: &str,
    platform: Platform,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Option<Vec<PathBuf>> {
    let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let home = match platform {
        Platform::Windows => var("USERPROFILE").or_else(|| var("HOME")),
        _ => var("HOME"),
    }
    .map(PathBuf::from);
    // XDG_CONFIG_HOME is honoured on Linux only by the clients that use it there.
    let config_home = var("XDG_CONFIG_HOME")
        .map(PathBuf::from)
        .or_else(|| home.as_ref().map(|h| h.join(".config")));
    // Where a desktop application keeps its settings: VS Code's `userDataPath`
    // (microsoft/vscode `src/vs/platform/environment/node/userDataPath.ts`).
    let app_data = |name: &str| -> Option<PathBuf> {
        Some(match platform {
            Platform::Linux => config_home.clone()?.join(name),
            Platform::MacOs => home.clone()?.join("Library/Application Support").join(name),
            Platform::Windows => var("APPDATA")
                .map(PathBuf::from)
                .or_else(|| home.as_ref().map(|h| h.join("AppData/Roaming")))?
                .join(name),
        })
    };
    let global_storage = |extension: &str| -> Option<PathBuf> {
        Some(
            app_data("Code")?
                .join("User/globalStorage")
                .join(extension)
                .join("settings"),
        )
    };
    Some(match client {
        "claude-code" => vec![home?.join(".claude.json")],
        "claude-desktop" => vec![app_data("Claude")?.join("claude_desktop_config.json")],
        "codex" => vec![
            var("CODEX_HOME")
                .map(PathBuf::from)
                .or_else(|| home.map(|h| h.join(".codex")))?
                .join("config.toml"),
        ],
        "gemini-cli" => vec![gemini_dir(home, &var)?.join("settings.json")],
        "windsurf" => vec![home?.join(".codeium/windsurf/mcp_config.json")],
        // cline/cline `sdk/packages/shared/src/storage/paths.ts` (`resolveMcpSettingsPath`,
        // `resolveClineDataDir`, `resolveClineDir`), and the old VS Code file that
        // `apps/vscode/src/hosts/vscode/mcp-settings-legacy-migration.ts` copies
        // there and leaves behind.
        "cline" => {
            let file = "cline_mcp_settings.json";
            let shared = match var("CLINE_MCP_SETTINGS_PATH") {
                Some(path) => Some(PathBuf::from(path.trim())),
                None => var("CLINE_DATA_DIR")
                    .map(|d| PathBuf::from(d.trim()))
                    .or_else(|| {
                        var("CLINE_DIR")
                            .map(|d| PathBuf::from(d.trim()))
                            .or_else(|| home.as_ref().map(|h| h.join(".cline")))
                            .map(|d| d.join("data"))
                    })
                    .map(|d| d.join("settings").join(file)),
            };
            let legacy = global_storage("saoudrizwan.claude-dev").map(|d| d.join(file));
            let places: Vec<PathBuf> = shared.into_iter().chain(legacy).collect();
            if places.is_empty() {
                return None;
            }
            places
        }
        // block/goose crates/goose/src/config/paths.rs: `$GOOSE_PATH_ROOT/config` when
        // that is absolute; else etcetera's `choose_app_strategy` (lunacookies/etcetera
        // src/app_strategy.rs): on Windows `<home>\AppData\Roaming\Block\goose\config`,
        // elsewhere, macOS too, XDG: `$XDG_CONFIG_HOME/goose` when it is absolute,
        // else `~/.config/goose`.
        "goose" => {
            let absolute = |name: &str| var(name).map(PathBuf::from).filter(|p| p.is_absolute());
            let dir = match absolute("GOOSE_PATH_ROOT") {
                Some(root) => root.join("config"),
                None => match platform {
                    Platform::Windows => home?.join("AppData/Roaming/Block/goose/config"),
                    _ => absolute("XDG_CONFIG_HOME")
                        .or_else(|| home.map(|h| h.join(".config")))?
                        .join("goose"),
                },
            };
            vec![dir.join("config.yaml")]
        }
        "opencode" => {
            let dir = config_home?.join("opencode");
            let jsonc = dir.join("opencode.jsonc");
            if jsonc.is_file() && !dir.join("opencode.json").is_file() {
                vec![jsonc]
            } else {
                vec![dir.join("opencode.json")]
            }
        }
        "kiro" => vec![home?.join(".kiro/settings/mcp.json")],
        "cursor" => vec![home?.join(".cursor/mcp.json")],
        // microsoft/vscode: the user profile's `mcp.json` beside its settings.json.
        "vscode" => vec![app_data("Code")?.join("User/mcp.json")],
        // zed-industries/zed `crates/paths/src/paths.rs` (`config_dir`): XDG on
        // Linux, `~/.config/zed` on macOS too, `%APPDATA%\Zed` on Windows.
        "zed" => vec![match platform {
            Platform::Linux => config_home?.join("zed/settings.json"),
            Platform::MacOs => home?.join(".config/zed/settings.json"),
            Platform::Windows => app_data("Zed")?.join("settings.json"),
        }],
        // RooCodeInc/Roo-Code `src/services/mcp/McpHub.ts` (`getMcpSettingsFilePath`).
        "roo-code" => vec![global_storage("rooveterinaryinc.roo-cline")?.join("mcp_settings.json")],
        // continuedev/continue `core/util/paths.ts` (`getConfigYamlPath`); its
        // `mcpServers` folder is in [`user_config_dirs`].
        "continue" => vec![continue_dir(home, &var)?.join("config.yaml")],
        // aws/amazon-q-developer-cli `crates/chat-cli/src/util/paths.rs`
        // (`global::MCP_CONFIG`): the legacy global MCP file; its agents are in
        // [`user_config_dirs`].
        "amazon-q" => vec![home?.join(".aws/amazonq/mcp.json")],
        _ => return None,
    })
}

/// The folders whose files `client` reads beside its user-level file, each with the
/// file name endings it reads there: Amazon Q's global agents
/// (aws/amazon-q-developer-cli `crates/chat-cli/src/util/paths.rs`,
/// `global::AGENTS_DIR`; `crates/chat-cli/src/cli/agent/mod.rs` loads each `.json`
/// there), and Continue's `mcpServers` blocks under its global folder
/// (continuedev/continue `core/util/paths.ts`, `getGlobalFolderWithName`;
/// `core/config/loadLocalAssistants.ts`, `getDotContinueSubDirs`, and
/// `core/context/mcp/json/loadJsonMcpConfigs.ts` read `~/.continue/mcpServers` as
/// they read the workspace's).
pub fn user_config_dirs(
    client: &str,
    lookup: &dyn Fn(&str) -> Option<String>,
) -> Vec<(PathBuf, &'static [&'static str])> {
    let var = |name: &str| lookup(name).filter(|v| !v.trim().is_empty());
    let home = match Platform::current() {
        Platform::Windows => var("USERPROFILE").or_else(|| var("HOME")),
        _ => var("HOME"),
    }
    .map(PathBuf::from);
    let dir = match client {
        "amazon-q" => home.map(|h| (h.join(".aws/amazonq/cli-agents"), &["json"][..])),
        "continue" => {
            continue_dir(home, &var).map(|d| (d.join("mcpServers"), &["yaml", "yml", "json"][..]))
        }
        _ => None,
    };
    dir.into_iter().collect()
}

/// Continue's global folder: continuedev/continue `core/util/paths.ts`
/// (`getContinueGlobalPath`): CONTINUE_GLOBAL_DIR, else `~/.continue`.
pub(crate) fn continue_dir(
    home: Option<PathBuf>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    var("CONTINUE_GLOBAL_DIR")
        .filter(|v| !v.trim().is_empty())
        .map(PathBuf::from)
        .or_else(|| home.map(|h| h.join(".continue")))
}

/// The user-level config files of `client`, read as the client reads them: the first
/// of its places that exists, else the first; then the files of its folders
/// ([`user_config_dirs`], by name), without the file when it does not exist and the
/// folders have some. `None` for an unknown client or when the home directory is not
/// set.
pub fn user_config(
    client: &str,
    platform: Platform,
    lookup: &dyn Fn(&str) -> Option<String>,
    exists: &dyn Fn(&Path) -> bool,
) -> Option<UserConfig> {
    let places = user_config_places(client, platform, lookup)?;
    let at = places.iter().position(|p| exists(p)).unwrap_or(0);
    let path = places[at].clone();
    let listed: Vec<PathBuf> = user_config_dirs(client, lookup)
        .into_iter()
        .flat_map(|(dir, ends)| super::files_in(&dir, ends))
        .collect();
    let mut paths = Vec::new();
    if listed.is_empty() || exists(&path) {
        paths.push(path.clone());
    }
    paths.extend(listed);
    let note = match (client, at) {
        ("cline", 0) => places[1..].iter().find(|p| exists(p)).map(|old| {
            format!(
                "Cline: reading {}; the old copy {} is not read (Cline moved its settings and no longer runs it)",
                path.display(),
                old.display()
            )
        }),
        ("cline", _) => Some(format!(
            "Cline: {} does not exist; reading the old VS Code file {} (Cline copies it there when it starts)",
            places[0].display(),
            path.display()
        )),
        _ => None,
    };
    Some(UserConfig { paths, note })
}

/// The user-level config file of `client` on this platform, from the environment
/// `lookup` gives (the first, for a client that reads several).
pub fn user_config_path(client: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Option<PathBuf> {
    user_config(client, Platform::current(), lookup, &|p| p.is_file())
        .and_then(|c| c.paths.into_iter().next())
}

/// Gemini CLI's own directory, `~/.gemini`: google-gemini/gemini-cli
/// `packages/core/src/utils/paths.ts` (`homedir`): GEMINI_CLI_HOME replaces the home
/// directory, `.gemini` stays beneath it (`packages/core/src/config/storage.ts`,
/// `getGlobalGeminiDir`).
pub(crate) fn gemini_dir(
    home: Option<PathBuf>,
    var: &dyn Fn(&str) -> Option<String>,
) -> Option<PathBuf> {
    Some(
        var("GEMINI_CLI_HOME")
            .filter(|v| !v.trim().is_empty())
            .map(PathBuf::from)
            .or(home)?
            .join(".gemini"),
    )
}

/// Whether `path` is one of the user-level files `--user` reads (or the older place
/// a client moved from), under this environment.
pub fn is_user_file(path: &Path, lookup: &dyn Fn(&str) -> Option<String>) -> bool {
    let canonical = |p: &Path| std::fs::canonicalize(p).unwrap_or_else(|_| p.to_path_buf());
    let path = canonical(path);
    let in_dir = |(dir, ends): (PathBuf, &[&str])| {
        path.parent().is_some_and(|p| p == canonical(&dir))
            && path
                .extension()
                .and_then(|e| e.to_str())
                .is_some_and(|e| ends.contains(&e))
    };
    USER_CLIENTS
        .iter()
        .filter_map(|client| user_config_places(client, Platform::current(), lookup))
        .flatten()
        .any(|user| canonical(&user) == path)
        || USER_CLIENTS
            .iter()
            .flat_map(|client| user_config_dirs(client, lookup))
            .any(in_dir)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(vars: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k: &str| {
            vars.iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn first(client: &str, platform: Platform, lookup: &dyn Fn(&str) -> Option<String>) -> PathBuf {
        user_config_places(client, platform, lookup).unwrap()[0].clone()
    }

    #[test]
    fn user_files_follow_home_xdg_and_codex_home() {
        let home = env(&[("HOME", "/h")]);
        let linux = Platform::Linux;
        assert_eq!(
            first("claude-code", linux, &home),
            Path::new("/h/.claude.json")
        );
        assert_eq!(
            first("codex", linux, &home),
            Path::new("/h/.codex/config.toml")
        );
        assert_eq!(
            first("goose", linux, &home),
            Path::new("/h/.config/goose/config.yaml")
        );
        let moved = env(&[
            ("HOME", "/h"),
            ("XDG_CONFIG_HOME", "/x"),
            ("CODEX_HOME", "/c"),
        ]);
        assert_eq!(first("codex", linux, &moved), Path::new("/c/config.toml"));
        assert!(user_config_places("nope", linux, &home).is_none());
        assert!(user_config_places("gemini-cli", linux, &env(&[])).is_none());
    }

    #[test]
    fn goose_config_follows_goose_path_root_absolute_xdg_and_windows_roaming_app_data() {
        let home = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        let relative_xdg = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "rel")]);
        let root = env(&[("HOME", "/h"), ("GOOSE_PATH_ROOT", "/g")]);
        let relative_root = env(&[("HOME", "/h"), ("GOOSE_PATH_ROOT", "g")]);
        let win = env(&[("USERPROFILE", "C:/u"), ("APPDATA", "D:/elsewhere")]);
        assert_eq!(
            first("goose", Platform::Linux, &home),
            Path::new("/x/goose/config.yaml")
        );
        // etcetera's XDG strategy, used on macOS too, ignores a relative XDG_CONFIG_HOME.
        assert_eq!(
            first("goose", Platform::MacOs, &relative_xdg),
            Path::new("/h/.config/goose/config.yaml")
        );
        assert_eq!(
            first("goose", Platform::MacOs, &home),
            Path::new("/x/goose/config.yaml")
        );
        assert_eq!(
            first("goose", Platform::Linux, &root),
            Path::new("/g/config/config.yaml")
        );
        assert_eq!(
            first("goose", Platform::Linux, &relative_root),
            Path::new("/h/.config/goose/config.yaml")
        );
        // etcetera's Windows strategy: the home's AppData/Roaming, whatever APPDATA says.
        assert_eq!(
            first("goose", Platform::Windows, &win),
            Path::new("C:/u/AppData/Roaming/Block/goose/config/config.yaml")
        );
    }

    #[test]
    fn every_client_has_a_user_file_on_every_platform() {
        let all = env(&[
            ("HOME", "/h"),
            ("USERPROFILE", "C:/Users/u"),
            ("APPDATA", "C:/Users/u/AppData/Roaming"),
        ]);
        for platform in [Platform::Linux, Platform::MacOs, Platform::Windows] {
            for client in USER_CLIENTS {
                assert!(
                    user_config_places(client, platform, &all).is_some_and(|p| !p.is_empty()),
                    "{client} on {platform:?}"
                );
            }
        }
    }

    #[test]
    fn desktop_clients_follow_each_platforms_application_folder() {
        let home = env(&[("HOME", "/h")]);
        let win = env(&[("USERPROFILE", "C:/u"), ("APPDATA", "C:/u/AppData/Roaming")]);
        type Lookup<'a> = &'a dyn Fn(&str) -> Option<String>;
        let cases: [(&str, Platform, Lookup, &str); 12] = [
            (
                "vscode",
                Platform::Linux,
                &home,
                "/h/.config/Code/User/mcp.json",
            ),
            (
                "vscode",
                Platform::MacOs,
                &home,
                "/h/Library/Application Support/Code/User/mcp.json",
            ),
            (
                "vscode",
                Platform::Windows,
                &win,
                "C:/u/AppData/Roaming/Code/User/mcp.json",
            ),
            (
                "roo-code",
                Platform::Linux,
                &home,
                "/h/.config/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
            ),
            (
                "roo-code",
                Platform::MacOs,
                &home,
                "/h/Library/Application Support/Code/User/globalStorage/rooveterinaryinc.roo-cline/settings/mcp_settings.json",
            ),
            (
                "claude-desktop",
                Platform::MacOs,
                &home,
                "/h/Library/Application Support/Claude/claude_desktop_config.json",
            ),
            (
                "claude-desktop",
                Platform::Windows,
                &win,
                "C:/u/AppData/Roaming/Claude/claude_desktop_config.json",
            ),
            (
                "zed",
                Platform::Linux,
                &home,
                "/h/.config/zed/settings.json",
            ),
            (
                "zed",
                Platform::MacOs,
                &home,
                "/h/.config/zed/settings.json",
            ),
            (
                "zed",
                Platform::Windows,
                &win,
                "C:/u/AppData/Roaming/Zed/settings.json",
            ),
            ("kiro", Platform::MacOs, &home, "/h/.kiro/settings/mcp.json"),
            ("cursor", Platform::Windows, &win, "C:/u/.cursor/mcp.json"),
        ];
        for (client, platform, lookup, want) in cases {
            assert_eq!(
                first(client, platform, lookup),
                Path::new(want),
                "{client} {platform:?}"
            );
        }
        let xdg = env(&[("HOME", "/h"), ("XDG_CONFIG_HOME", "/x")]);
        assert_eq!(
            first("zed", Platform::Linux, &xdg),
            Path::new("/x/zed/settings.json")
        );
        // macOS keeps Zed in ~/.config whatever XDG_CONFIG_HOME says.
        assert_eq!(
            first("zed", Platform::MacOs, &xdg),
            Path::new("/h/.config/zed/settings.json")
        );
        assert_eq!(
            first("continue", Platform::Linux, &home),
            Path::new("/h/.continue/config.yaml")
        );
        assert_eq!(
            first("amazon-q", Platform::MacOs, &home),
            Path::new("/h/.aws/amazonq/mcp.json")
        );
        let moved = env(&[("HOME", "/h"), ("CONTINUE_GLOBAL_DIR", "/c")]);
        assert_eq!(
            first("continue", Platform::Linux, &moved),
            Path::new("/c/config.yaml")
        );
        assert_eq!(
            user_config_dirs("continue", &moved),
            [(PathBuf::from("/c/mcpServers"), &["yaml", "yml", "json"][..])]
        );
        assert_eq!(
            user_config_dirs("amazon-q", &home)[0].0,
            Path::new("/h/.aws/amazonq/cli-agents")
        );
    }

    #[test]
    fn cline_reads_its_shared_settings_before_the_old_vscode_file() {
        let home = env(&[("HOME", "/h")]);
        let old = "/h/.config/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json";
        assert_eq!(
            user_config_places("cline", Platform::Linux, &home).unwrap(),
            [
                Path::new("/h/.cline/data/settings/cline_mcp_settings.json"),
                Path::new(old)
            ]
        );
        assert_eq!(
            user_config_places("cline", Platform::MacOs, &home).unwrap()[1],
            Path::new(
                "/h/Library/Application Support/Code/User/globalStorage/saoudrizwan.claude-dev/settings/cline_mcp_settings.json"
            )
        );
        let dir = env(&[("HOME", "/h"), ("CLINE_DIR", "/c")]);
        assert_eq!(
            first("cline", Platform::Linux, &dir),
            Path::new("/c/data/settings/cline_mcp_settings.json")
        );
        let data = env(&[
            ("HOME", "/h"),
            ("CLINE_DIR", "/c"),
            ("CLINE_DATA_DIR", "/d"),
        ]);
        assert_eq!(
            first("cline", Platform::Linux, &data),
            Path::new("/d/settings/cline_mcp_settings.json")
        );
        let explicit = env(&[
            ("HOME", "/h"),
            ("CLINE_DATA_DIR", "/d"),
            ("CLINE_MCP_SETTINGS_PATH", "/m.json"),
        ]);
        assert_eq!(
            first("cline", Platform::Linux, &explicit),
            Path::new("/m.json")
        );

        // Both exist: the shared file, with a note naming the stale copy.
        let both = user_config("cline", Platform::Linux, &home, &|_| true).unwrap();
        assert_eq!(
            both.paths,
            [Path::new("/h/.cline/data/settings/cline_mcp_settings.json")]
        );
        assert!(both.note.unwrap().contains("is not read"));
        // Only the old one: it, said so.
        let only_old =
            user_config("cline", Platform::Linux, &home, &|p| p == Path::new(old)).unwrap();
        assert_eq!(only_old.paths, [Path::new(old)]);
        assert!(only_old.note.unwrap().contains("does not exist"));
        // Neither: the shared file (which then is reported missing).
        let neither = user_config("cline", Platform::Linux, &home, &|_| false).unwrap();
        assert_eq!(
            neither.paths,
            [Path::new("/h/.cline/data/settings/cline_mcp_settings.json")]
        );
    }

    #[test]
    fn gemini_cli_home_replaces_the_home_directory() {
        let moved = env(&[("HOME", "/h"), ("GEMINI_CLI_HOME", "/g")]);
        assert_eq!(
            first("gemini-cli", Platform::Linux, &moved),
            Path::new("/g/.gemini/settings.json")
        );
        assert_eq!(
            first("gemini-cli", Platform::MacOs, &env(&[("HOME", "/h")])),
            Path::new("/h/.gemini/settings.json")
        );
    }
}
