//! Client profiles: what an agent host sends when it connects, so a lock pins the
//! listing that host's agent actually receives.
//!
//! Servers list different tools depending on the capabilities a client declares
//! (server-everything lists 13 tools to `{}` and 19 to VS Code). A profile is a host's
//! `protocolVersion`, `capabilities` and `clientInfo`; a profile that declares `roots`
//! answers `roots/list` with the project directory. Values and their sources are in
//! `docs/profiles.md`.

use std::collections::BTreeMap;
use std::path::Path;

use serde_json::{Value, json};

use crate::servers::client::{
    ClientOptions, LEGACY_VERSION, MODERN_VERSION, ProtocolChoice, is_modern,
};
use crate::servers::config::Host;

/// What one agent host sends when it connects.
#[derive(Debug, Clone, PartialEq)]
pub struct Profile {
    pub name: String,
    /// The version the host asks for: a handshake-era version is requested with
    /// `initialize` (the server may answer an older one); a modern one means
    /// `server/discover` first, then the newest handshake.
    pub protocol_version: String,
    pub capabilities: Value,
    pub client_info: Value,
}

/// The profile of today's mcp-lock: no capabilities, the newest protocol.
pub use crate::records::lock::BARE;

/// The built-in profiles, by name.
pub const BUILTIN: [&str; 11] = [
    "bare",
    "claude-code",
    "cline",
    "codex",
    "continue",
    "cursor",
    "gemini-cli",
    "kilo-code",
    "opencode",
    "qwen-code",
    "vscode",
];

/// Stands in a profile's `clientInfo.name` for the name of the server it connects
/// to: Qwen Code names its client after each server (`qwen-cli-mcp-client-<server>`).
pub const SERVER_NAME_PLACEHOLDER: &str = "{server}";

impl Profile {
    /// A built-in profile.
    pub fn builtin(name: &str) -> Option<Profile> {
        let (protocol_version, capabilities, client_info) = match name {
            "bare" => (
                MODERN_VERSION,
                json!({}),
                crate::servers::client::default_client_info(),
            ),
            // Tries `server/discover` first, then `initialize` at 2025-11-25.
            "claude-code" => (
                MODERN_VERSION,
                json!({"roots": {"listChanged": true}, "elicitation": {"form": {}, "url": {}}}),
                json!({"name": "claude-code", "title": "Claude Code", "version": "2.1.332"}),
            ),
            "vscode" => (
                "2025-11-25",
                json!({
                    "roots": {"listChanged": true},
                    "sampling": {},
                    "elicitation": {"form": {}, "url": {}},
                    "tasks": {
                        "list": {},
                        "cancel": {},
                        "requests": {
                            "sampling": {"createMessage": {}},
                            "elicitation": {"create": {}}
                        }
                    }
                }),
                json!({"name": "Visual Studio Code", "version": "1.138.0"}),
            ),
            "cursor" => (
                "2025-11-25",
                json!({"roots": {"listChanged": false}}),
                json!({"name": "cursor-vscode", "version": "1.0.0"}),
            ),
            "codex" => (
                "2025-06-18",
                json!({
                    "elicitation": {"form": {}, "url": {}},
                    "experimental": {"codex/auth-change": {}}
                }),
                json!({"name": "codex-mcp-client", "title": "Codex", "version": "0.171.0"}),
            ),
            "gemini-cli" => (
                "2025-06-18",
                json!({"roots": {"listChanged": true}}),
                json!({"name": "gemini-cli-mcp-client", "version": "0.61.0"}),
            ),
            "opencode" => (
                "2025-11-25",
                json!({"roots": {}}),
                json!({"name": "opencode", "version": "1.18.33"}),
            ),
            // Cline CLI: the oldest protocol version and no capabilities.
            "cline" => (
                "2024-11-05",
                json!({}),
                json!({"name": "@cline/core", "version": "0.0.0"}),
            ),
            "continue" => (
                "2025-11-25",
                json!({}),
                json!({"name": "continue-cli-client", "version": "1.0.0"}),
            ),
            "qwen-code" => (
                "2025-11-25",
                json!({
                    "extensions": {
                        "io.modelcontextprotocol/ui": {"mimeTypes": ["text/html;profile=mcp-app"]}
                    },
                    "roots": {}
                }),
                json!({"name": "qwen-cli-mcp-client-{server}", "version": "0.0.1"}),
            ),
            // Kilo Code CLI, an opencode fork: opencode's handshake under its own name.
            "kilo-code" => (
                "2025-11-25",
                json!({"roots": {}}),
                json!({"name": "kilo", "version": "7.7.9"}),
            ),
            _ => return None,
        };
        Some(Profile {
            name: name.to_string(),
            protocol_version: protocol_version.to_string(),
            capabilities,
            client_info,
        })
    }

    /// The profile a lock recorded: what verify sends again, whatever the settings
    /// say today.
    pub fn from_pin(pin: &crate::records::lock::LockedServer) -> Profile {
        Profile {
            name: pin.profile.clone(),
            protocol_version: pin.protocol_version.clone(),
            capabilities: pin.client_capabilities.to_value(),
            client_info: pin.client_info.to_value(),
        }
    }

    /// Whether `roots/list` is answered (with the project directory).
    pub fn declares_roots(&self) -> bool {
        self.capabilities.get("roots").is_some()
    }

    /// The options that connect as this host would, in `project_dir`.
    pub fn apply(&self, options: &mut ClientOptions, project_dir: &Path) {
        options.capabilities = self.capabilities.clone();
        options.client_info = self.client_info.clone();
        if is_modern(&self.protocol_version) {
            options.protocol = ProtocolChoice::Newest;
            options.handshake_version = LEGACY_VERSION.to_string();
        } else {
            options.protocol = ProtocolChoice::HandshakeOnly;
            options.handshake_version = self.protocol_version.clone();
        }
        options.roots = self.declares_roots().then(|| project_roots(project_dir));
    }
}

/// The clientInfo a profile sends to the server named `server`: a
/// [`SERVER_NAME_PLACEHOLDER`] in its `name` becomes that name, as Qwen Code names its
/// client after each server. Any other clientInfo is sent as it is.
pub fn client_info_for(client_info: &Value, server: &str) -> Value {
    let mut info = client_info.clone();
    if let Some(name) = info.get("name").and_then(Value::as_str)
        && name.contains(SERVER_NAME_PLACEHOLDER)
    {
        info["name"] = Value::String(name.replace(SERVER_NAME_PLACEHOLDER, server));
    }
    info
}

/// The roots a host reports for a project: its directory, as a `file://` URI.
pub fn project_roots(project_dir: &Path) -> Value {
    let dir = std::path::absolute(project_dir).unwrap_or_else(|_| project_dir.to_path_buf());
    let name = dir
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    json!([{"uri": file_uri(&dir), "name": name}])
}

/// `file://` and the path, percent-encoding what a URI path cannot hold.
pub fn file_uri(path: &Path) -> String {
    use std::os::unix::ffi::OsStrExt;
    let mut uri = String::from("file://");
    for &b in path.as_os_str().as_bytes() {
        let keep = b.is_ascii_alphanumeric() || b"/-._~!$&'()*+,;=:@".contains(&b);
        if keep {
            uri.push(b as char);
        } else {
            uri.push_str(&format!("%{b:02X}"));
        }
    }
    uri
}

/// The profile a host's own config file implies, if it has a built-in one.
pub fn for_host(host: Host) -> Option<&'static str> {
    match host {
        Host::ClaudeCode => Some("claude-code"),
        Host::VsCode => Some("vscode"),
        Host::Cursor => Some("cursor"),
        Host::Codex => Some("codex"),
        Host::GeminiCli => Some("gemini-cli"),
        Host::OpenCode => Some("opencode"),
        Host::Cline => Some("cline"),
        Host::Continue => Some("continue"),
        Host::ClaudeDesktop
        | Host::Zed
        | Host::Windsurf
        | Host::RooCode
        | Host::Goose
        | Host::Kiro
        | Host::AmazonQ
        | Host::Unknown => None,
    }
}

/// Which profiles a project pins, from `mcp-lock.toml`.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ProfileSettings {
    /// User-defined profiles by name (`[profile.NAME]`).
    pub defined: BTreeMap<String, Profile>,
    /// `[profiles] pin = [...]`: for every server.
    pub pin: Option<Vec<String>>,
    /// `[profiles.server] NAME = [...]`: for one server.
    pub per_server: BTreeMap<String, Vec<String>>,
}

/// A profile name nobody defines.
#[derive(Debug, Clone, PartialEq, thiserror::Error)]
#[error("unknown client profile {name:?}; the profiles are {known}")]
pub struct UnknownProfile {
    pub name: String,
    pub known: String,
}

impl ProfileSettings {
    /// A profile by name: user-defined first, then built-in.
    pub fn get(&self, name: &str) -> Result<Profile, UnknownProfile> {
        if let Some(p) = self.defined.get(name) {
            return Ok(p.clone());
        }
        Profile::builtin(name).ok_or_else(|| UnknownProfile {
            name: name.to_string(),
            known: self.known().join(", "),
        })
    }

    /// Every profile name, built-in and defined, sorted.
    pub fn known(&self) -> Vec<String> {
        let mut names: Vec<String> = BUILTIN.iter().map(|s| s.to_string()).collect();
        names.extend(self.defined.keys().cloned());
        names.sort();
        names.dedup();
        names
    }

    /// The profiles a server is pinned under: `--client` when given, else its
    /// `[profiles.server]` entry, else `[profiles] pin`, else the profiles of the
    /// hosts whose files define it (`bare` for a host without one). Sorted, no repeats.
    pub fn for_server(
        &self,
        server: &str,
        hosts: &[Host],
        client: Option<&str>,
    ) -> Result<Selection, UnknownProfile> {
        let (names, unprofiled): (Vec<String>, Vec<Host>) = if let Some(c) = client {
            (vec![c.to_string()], Vec::new())
        } else if let Some(names) = self.per_server.get(server) {
            (names.clone(), Vec::new())
        } else if let Some(names) = &self.pin {
            (names.clone(), Vec::new())
        } else {
            let mut names = Vec::new();
            let mut unprofiled = Vec::new();
            for host in hosts {
                match for_host(*host) {
                    Some(name) => names.push(name.to_string()),
                    None => {
                        names.push(BARE.to_string());
                        unprofiled.push(*host);
                    }
                }
            }
            if names.is_empty() {
                names.push(BARE.to_string());
            }
            (names, unprofiled)
        };
        let mut profiles = Vec::new();
        for name in names {
            let profile = self.get(&name)?;
            if !profiles.iter().any(|p: &Profile| p.name == profile.name) {
                profiles.push(profile);
            }
        }
        profiles.sort_by(|a, b| a.name.cmp(&b.name));
        Ok(Selection {
            profiles,
            unprofiled,
        })
    }
}

/// The profiles chosen for one server.
#[derive(Debug, Clone, PartialEq)]
pub struct Selection {
    pub profiles: Vec<Profile>,
    /// Hosts whose files define the server but that have no built-in profile (their
    /// servers use `bare`, with a notice).
    pub unprofiled: Vec<Host>,
}

/// The JSON pointers where two capability objects differ: `+/sampling` for what
/// `actual` declares and `expected` does not, `-/roots` for the reverse, `~/x` for a
/// value both have but differently.
pub fn capability_difference(expected: &Value, actual: &Value) -> Vec<String> {
    let mut out = Vec::new();
    diff_at(expected, actual, &mut String::new(), &mut out);
    out
}

fn diff_at(expected: &Value, actual: &Value, at: &mut String, out: &mut Vec<String>) {
    match (expected, actual) {
        (Value::Object(a), Value::Object(b)) => {
            let mut keys: Vec<&String> = a.keys().chain(b.keys()).collect();
            keys.sort();
            keys.dedup();
            for key in keys {
                let len = at.len();
                at.push('/');
                at.push_str(&key.replace('~', "~0").replace('/', "~1"));
                match (a.get(key), b.get(key)) {
                    (None, Some(_)) => out.push(format!("+{at}")),
                    (Some(_), None) => out.push(format!("-{at}")),
                    (Some(x), Some(y)) => diff_at(x, y, at, out),
                    (None, None) => {}
                }
                at.truncate(len);
            }
        }
        (a, b) if a != b => out.push(format!("~{}", if at.is_empty() { "/" } else { at })),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_builtin_profile_exists_and_only_those_with_roots_answer_roots_list() {
        for name in BUILTIN {
            let p = Profile::builtin(name).unwrap();
            assert_eq!(p.name, name);
            assert!(
                crate::servers::client::PROTOCOL_VERSIONS.contains(&p.protocol_version.as_str())
            );
        }
        assert!(!Profile::builtin("bare").unwrap().declares_roots());
        assert!(Profile::builtin("vscode").unwrap().declares_roots());
        assert!(Profile::builtin("nope").is_none());
    }

    #[test]
    fn a_server_gets_the_profile_of_the_host_whose_file_defines_it() {
        let s = ProfileSettings::default();
        let pick = |hosts: &[Host]| -> Vec<String> {
            s.for_server("x", hosts, None)
                .unwrap()
                .profiles
                .into_iter()
                .map(|p| p.name)
                .collect()
        };
        assert_eq!(pick(&[Host::ClaudeCode]), ["claude-code"]);
        assert_eq!(
            pick(&[Host::VsCode, Host::ClaudeCode]),
            ["claude-code", "vscode"]
        );
        assert_eq!(pick(&[Host::ClaudeDesktop]), ["bare"]);
        let sel = s.for_server("x", &[Host::ClaudeDesktop], None).unwrap();
        assert_eq!(sel.unprofiled, [Host::ClaudeDesktop]);
        let sel = s
            .for_server("x", &[Host::ClaudeCode], Some("vscode"))
            .unwrap();
        assert_eq!(sel.profiles[0].name, "vscode");
        let err = s.for_server("x", &[], Some("emacs")).unwrap_err();
        assert!(err.to_string().contains("bare, claude-code"), "{err}");
    }

    #[test]
    fn cline_and_continue_files_imply_their_hosts_profiles() {
        assert_eq!(for_host(Host::Cline), Some("cline"));
        assert_eq!(for_host(Host::Continue), Some("continue"));
        let s = ProfileSettings::default();
        let sel = s
            .for_server("x", &[Host::Continue, Host::Cline], None)
            .unwrap();
        let names: Vec<&str> = sel.profiles.iter().map(|p| p.name.as_str()).collect();
        assert_eq!(names, ["cline", "continue"]);
        assert!(sel.unprofiled.is_empty());
    }

    #[test]
    fn a_server_name_placeholder_in_client_info_becomes_the_servers_name() {
        let qwen = Profile::builtin("qwen-code").unwrap();
        assert_eq!(
            client_info_for(&qwen.client_info, "github"),
            json!({"name": "qwen-cli-mcp-client-github", "version": "0.0.1"})
        );
        let codex = Profile::builtin("codex").unwrap();
        assert_eq!(
            client_info_for(&codex.client_info, "github"),
            codex.client_info
        );
        assert_eq!(client_info_for(&json!({}), "github"), json!({}));
    }

    #[test]
    fn capability_differences_are_json_pointers() {
        let a = json!({"roots": {"listChanged": true}, "elicitation": {}});
        let b =
            json!({"roots": {"listChanged": false}, "sampling": {}, "elicitation": {"url": {}}});
        assert_eq!(
            capability_difference(&a, &b),
            ["+/elicitation/url", "~/roots/listChanged", "+/sampling"]
        );
        assert!(capability_difference(&a, &a).is_empty());
    }

    #[test]
    fn the_project_root_is_a_file_uri_with_unsafe_bytes_encoded() {
        assert_eq!(file_uri(Path::new("/a b/ü")), "file:///a%20b/%C3%BC");
        let roots = project_roots(Path::new("/srv/my-project"));
        assert_eq!(roots[0]["name"], "my-project");
        assert_eq!(roots[0]["uri"], "file:///srv/my-project");
    }
}
