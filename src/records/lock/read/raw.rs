//! The lock's tables as the TOML reader gives them, before any check.

use serde::Deserialize;
use toml::Spanned;

#[derive(Deserialize)]
pub(super) struct VersionOnly {
    pub(super) version: Option<Spanned<i64>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawLock {
    #[allow(dead_code)]
    pub(super) version: i64,
    #[serde(default)]
    pub(super) server: Vec<RawServer>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawServer {
    pub(super) name: Spanned<String>,
    /// Version 7: how its last pin change was approved.
    pub(super) approved: Option<Spanned<String>>,
    pub(super) transport: String,
    pub(super) command: Option<String>,
    #[serde(default)]
    pub(super) args: Vec<String>,
    #[serde(default)]
    pub(super) env: Vec<String>,
    /// Version 6: the code-loading variables of `env`, `NAME=sha256:…`.
    pub(super) code_env: Option<Spanned<Vec<String>>>,
    pub(super) url: Option<String>,
    #[serde(default)]
    pub(super) headers: Vec<String>,
    /// Version 3: the issuer of the login token used.
    pub(super) oauth_issuer: Option<String>,
    // Version 1 keeps one listing's fields on the server itself.
    pub(super) protocol_version: Option<String>,
    pub(super) client_info: Option<Spanned<String>>,
    pub(super) client_capabilities: Option<Spanned<String>>,
    pub(super) server_info: Option<Spanned<String>>,
    pub(super) list_changed: Option<bool>,
    pub(super) instructions_hash: Option<Spanned<String>>,
    pub(super) set_hash: Option<Spanned<String>>,
    /// Version 2: one listing per client profile.
    #[serde(default)]
    pub(super) profile: Vec<RawProfile>,
    #[serde(default)]
    pub(super) tool: Vec<RawTool>,
    #[serde(default)]
    pub(super) prompt: Vec<RawTool>,
    #[serde(default)]
    pub(super) resource_template: Vec<RawTool>,
    #[serde(default)]
    pub(super) resource: Vec<RawTool>,
    /// Version 3: what the entry launches.
    pub(super) package: Option<Spanned<RawPackage>>,
}

/// `[server.package]`: the fields of every kind; which ones a kind needs is checked
/// in [`check_package`].
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawPackage {
    pub(super) kind: String,
    pub(super) launcher: String,
    pub(super) name: Option<String>,
    pub(super) version: Option<String>,
    pub(super) integrity: Option<String>,
    pub(super) reference: Option<String>,
    pub(super) digest: Option<String>,
    pub(super) path: Option<String>,
    pub(super) sha256: Option<String>,
    /// Why an `unresolved` package could not be pinned (version 4).
    pub(super) reason: Option<String>,
    /// The closure's hash and how many packages it holds (version 5).
    pub(super) closure: Option<String>,
    pub(super) closure_packages: Option<u64>,
    #[serde(default)]
    pub(super) file: Vec<RawFile>,
}

/// `[[server.package.file]]`: one distribution file of a pinned PyPI release.
#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawFile {
    pub(super) name: String,
    pub(super) sha256: String,
}

#[derive(Debug, Clone, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawProfile {
    pub(super) name: Spanned<String>,
    pub(super) protocol_version: String,
    pub(super) client_info: Spanned<String>,
    pub(super) client_capabilities: Spanned<String>,
    /// `"project-dir"`: `roots/list` was answered with the lock's directory.
    pub(super) roots: Option<Spanned<String>>,
    pub(super) server_info: Spanned<String>,
    pub(super) list_changed: bool,
    pub(super) instructions_hash: Option<Spanned<String>>,
    pub(super) set_hash: Spanned<String>,
    pub(super) prompts_set_hash: Option<Spanned<String>>,
    pub(super) resource_templates_set_hash: Option<Spanned<String>>,
    pub(super) resources_set_hash: Option<Spanned<String>>,
}

/// One pinned definition of any kind: keyed by `name` (tools, prompts),
/// `uri_template` (resource templates) or `uri` (resources).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(super) struct RawTool {
    pub(super) name: Option<Spanned<String>>,
    pub(super) uri_template: Option<Spanned<String>>,
    pub(super) uri: Option<Spanned<String>>,
    /// The profiles it was seen under (version 2; version 1 has one listing).
    pub(super) profiles: Option<Spanned<Vec<String>>>,
    pub(super) hash: Spanned<String>,
    pub(super) definition: Spanned<String>,
}

impl RawServer {
    /// The server without its definitions: what launching it needs, cheap to read.
    pub(super) fn header(&self) -> RawServer {
        RawServer {
            name: self.name.clone(),
            approved: self.approved.clone(),
            transport: self.transport.clone(),
            command: self.command.clone(),
            args: self.args.clone(),
            env: self.env.clone(),
            code_env: self.code_env.clone(),
            url: self.url.clone(),
            headers: self.headers.clone(),
            oauth_issuer: self.oauth_issuer.clone(),
            protocol_version: self.protocol_version.clone(),
            client_info: self.client_info.clone(),
            client_capabilities: self.client_capabilities.clone(),
            server_info: self.server_info.clone(),
            list_changed: self.list_changed,
            instructions_hash: self.instructions_hash.clone(),
            set_hash: self.set_hash.clone(),
            profile: self.profile.clone(),
            tool: Vec::new(),
            prompt: Vec::new(),
            resource_template: Vec::new(),
            resource: Vec::new(),
            package: self.package.clone(),
        }
    }
}
