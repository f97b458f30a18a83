//! Policy: what `verify` does with each kind of change (fail, warn or allow), which
//! kinds `update` may accept without asking, and which field names select a target.
//!
//! Kept in `mcp-lock.toml` beside the lock and overridable by flags.

use std::collections::{BTreeMap, BTreeSet};
use std::fmt;
use std::path::Path;

use serde::{Deserialize, Serialize};

pub use crate::base::action::Action;
use crate::contract::classify::{Class, Classifier, DEFAULT_TARGET_FIELDS, worst};
use crate::contract::surface::{Kind, Surface};
use crate::records::profile::{Profile, ProfileSettings};
use crate::servers::client::PROTOCOL_VERSIONS;
use crate::servers::package::PackageStatus;
use crate::verdict::drift::{ChangeKind, ServerReport, ToolChange, Verdict};
use crate::verdict::screen::{Accepted, ScreenSettings, Screened, Severity};

mod judge;

/// The policy file's name, next to the lock.
pub const POLICY_FILE: &str = "mcp-lock.toml";

/// What the policy is keyed on: a class, a definition of some kind appearing or
/// disappearing, or a rename.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
pub enum Rule {
    Class(Class),
    Added(Kind),
    Removed(Kind),
    /// A definition removed under one key and added under another, otherwise equal.
    Renamed,
    /// What a server entry launches is not what the lock pins: another version,
    /// integrity, file hash, image or script (fail by default).
    PackageChanged,
    /// A wrapped entry whose spec floats (the guard launches the pin), or an image
    /// pinned by tag only (warn by default).
    PackageFloating,
    /// The package is the pinned one, but the dependency closure an entry's own
    /// launcher installs now is not the pinned closure (fail by default).
    DependencyChanged,
    /// An npm or PyPI entry whose dependency closure is not pinned (it could not be
    /// resolved without running a build backend, say): its launcher resolves the
    /// dependencies afresh at every launch (warn by default).
    ClosureUnpinned,
    /// The entry may reach another server than the one pinned: a remote origin
    /// (scheme, host, port), or an unrecognised launch's command or module, changed
    /// (fail by default).
    LaunchChanged,
    /// A pinned definition the tool rules deny to the host ([`crate::verdict::rules`]): it is
    /// still pinned, so its drift is seen, but never served (a note by default).
    ToolDenied,
    /// Screening found something of this severity in a definition about to be
    /// approved (high fails by default, medium and low warn): see [`crate::verdict::screen`].
    Screen(Severity),
}

impl Rule {
    pub const ALL: [Rule; 23] = [
        Rule::Class(Class::Authority),
        Rule::Class(Class::Breaking),
        Rule::Class(Class::Semantic),
        Rule::Class(Class::Additive),
        Rule::Class(Class::Cosmetic),
        Rule::Added(Kind::Tool),
        Rule::Removed(Kind::Tool),
        Rule::Added(Kind::Prompt),
        Rule::Removed(Kind::Prompt),
        Rule::Added(Kind::ResourceTemplate),
        Rule::Removed(Kind::ResourceTemplate),
        Rule::Added(Kind::Resource),
        Rule::Removed(Kind::Resource),
        Rule::Renamed,
        Rule::PackageChanged,
        Rule::PackageFloating,
        Rule::DependencyChanged,
        Rule::ClosureUnpinned,
        Rule::LaunchChanged,
        Rule::ToolDenied,
        Rule::Screen(Severity::High),
        Rule::Screen(Severity::Medium),
        Rule::Screen(Severity::Low),
    ];

    /// A tool appearing: the rule named `tool-added`.
    pub const TOOL_ADDED: Rule = Rule::Added(Kind::Tool);
    /// A tool disappearing: `tool-removed`.
    pub const TOOL_REMOVED: Rule = Rule::Removed(Kind::Tool);

    pub fn as_str(self) -> &'static str {
        match self {
            Rule::Class(c) => c.as_str(),
            Rule::Added(Kind::Tool) => "tool-added",
            Rule::Removed(Kind::Tool) => "tool-removed",
            Rule::Added(Kind::Prompt) => "prompt-added",
            Rule::Removed(Kind::Prompt) => "prompt-removed",
            Rule::Added(Kind::ResourceTemplate) => "resource-template-added",
            Rule::Removed(Kind::ResourceTemplate) => "resource-template-removed",
            Rule::Added(Kind::Resource) => "resource-added",
            Rule::Removed(Kind::Resource) => "resource-removed",
            Rule::Renamed => "renamed",
            Rule::PackageChanged => "package-changed",
            Rule::PackageFloating => "package-floating",
            Rule::DependencyChanged => "dependency-changed",
            Rule::ClosureUnpinned => "closure-unpinned",
            Rule::LaunchChanged => crate::verdict::drift::LAUNCH_CHANGED,
            Rule::ToolDenied => "tool-denied",
            Rule::Screen(Severity::High) => "screen-high",
            Rule::Screen(Severity::Medium) => "screen-medium",
            Rule::Screen(Severity::Low) => "screen-low",
        }
    }

    pub fn parse(name: &str) -> Option<Rule> {
        Rule::ALL.into_iter().find(|r| r.as_str() == name)
    }

    /// The rule a change falls under.
    pub fn of(change: &ToolChange) -> Rule {
        match change.change {
            ChangeKind::Added => Rule::Added(change.kind),
            ChangeKind::Removed => Rule::Removed(change.kind),
            ChangeKind::Renamed => Rule::Renamed,
            ChangeKind::Changed => Rule::Class(change.class.unwrap_or(Class::Breaking)),
        }
    }
}

impl fmt::Display for Rule {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// What the guard does with a tool whose live definition is not approved.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Serve {
    /// The policy fails the change: the tool is hidden and its calls refused.
    Hide,
    /// Additive or cosmetic only: the client is given the approved definition, and
    /// calls that fit its input schema go through.
    Pinned,
    /// The policy lets a new tool, or a change beyond additive, through: the client is
    /// given the live definition (and the audit log says so).
    Live,
}

/// The whole policy.
#[derive(Debug, Clone, PartialEq)]
pub struct Policy {
    pub verify: BTreeMap<Rule, Action>,
    /// Rules whose changes `update` accepts without asking.
    pub accept: BTreeSet<Rule>,
    pub target_fields: Vec<String>,
    /// Exact mode: every difference from the pins fails, whatever `verify` says, so
    /// verify fails it and the guard hides it (today's strictness, both sides).
    pub exact: bool,
    /// The client profiles servers are pinned under.
    pub profiles: ProfileSettings,
    /// Which kinds besides tools are listed and pinned (`[surface]`), and per server.
    pub surface: Surface,
    pub surface_per_server: BTreeMap<String, Surface>,
    /// `[config] prefer`: for a server defined differently in two config files, the
    /// file (relative to the project directory) to take it from.
    pub prefer: BTreeMap<String, std::path::PathBuf>,
    /// `[audit]`: checkpoints and rotation of the guard's log.
    pub audit: crate::records::audit::format::AuditSettings,
    /// `[oauth] client-metadata-url`: the project's Client ID Metadata Document, for
    /// remote entries that name none of their own.
    pub client_metadata_url: Option<String>,
    /// `[closure] allow-scripts`: the servers whose pinned closure is installed with
    /// its install scripts run (npm lifecycle scripts, PyPI source builds); for every
    /// other server they are off.
    pub allow_scripts: BTreeSet<String>,
    /// `[upgrade]`: which releases a pin may move to.
    pub upgrade: UpgradeSettings,
    /// `[screen]`: accepted findings, and the other servers' tool names screening
    /// compares with (filled by the command, from the lock and the live listings).
    pub screen: ScreenSettings,
    /// Settings the file named that name a command to run or a key to use
    /// (`[audit] signing-key`, `sign-command`): a project's file cannot give them, so
    /// they are ignored, and the guard says so in one line. Only the user's own
    /// settings give them ([`crate::records::audit::signing`]).
    pub ignored: Vec<&'static str>,
    /// `[tools]`, `[prompts]`, `[resource-templates]` and their `[profile.NAME.*]`
    /// sections, of the user's own file and the project's: who may use what.
    pub rules: crate::verdict::rules::ToolRules,
}

/// `[upgrade]` of the policy file.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct UpgradeSettings {
    /// `min-release-age`: a release younger than this is held back (the cooldown);
    /// zero holds nothing back. A week by default.
    pub min_release_age: std::time::Duration,
}

impl Default for UpgradeSettings {
    fn default() -> Self {
        UpgradeSettings {
            min_release_age: crate::servers::package::releases::DEFAULT_MIN_RELEASE_AGE,
        }
    }
}

impl Default for Policy {
    /// Strict: authority, breaking, semantic, tool added and tool removed fail;
    /// additive and cosmetic warn (a rewording graded cosmetic is still shown). `update`
    /// asks about everything.
    fn default() -> Self {
        let verify = Rule::ALL
            .into_iter()
            .map(|rule| {
                let action = match rule {
                    Rule::Class(Class::Additive | Class::Cosmetic) => Action::Warn,
                    Rule::PackageFloating | Rule::ClosureUnpinned => Action::Warn,
                    Rule::ToolDenied => Action::Allow,
                    Rule::Screen(Severity::Medium | Severity::Low) => Action::Warn,
                    _ => Action::Fail,
                };
                (rule, action)
            })
            .collect();
        Policy {
            verify,
            accept: BTreeSet::new(),
            target_fields: DEFAULT_TARGET_FIELDS
                .iter()
                .map(|s| s.to_string())
                .collect(),
            exact: false,
            profiles: ProfileSettings::default(),
            surface: Surface::default(),
            surface_per_server: BTreeMap::new(),
            prefer: BTreeMap::new(),
            audit: Default::default(),
            client_metadata_url: None,
            allow_scripts: BTreeSet::new(),
            upgrade: UpgradeSettings::default(),
            screen: ScreenSettings::default(),
            ignored: Vec::new(),
            rules: crate::verdict::rules::ToolRules::default(),
        }
    }
}

/// A policy file that cannot be used, with where.
#[derive(Debug, thiserror::Error)]
pub enum PolicyError {
    #[error("cannot read {path}: {source}")]
    Read {
        path: String,
        source: std::io::Error,
    },
    #[error("{path}:{line}: {message}")]
    Invalid {
        path: String,
        line: usize,
        message: String,
    },
    /// The user's own settings file cannot be read or understood ([`crate::verdict::rules`]).
    #[error("{0}")]
    User(String),
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields)]
struct RawPolicy {
    #[serde(default)]
    verify: BTreeMap<toml::Spanned<String>, toml::Spanned<String>>,
    #[serde(default)]
    update: RawUpdate,
    #[serde(default)]
    classify: RawClassify,
    #[serde(default)]
    exact: bool,
    #[serde(default)]
    profiles: RawProfiles,
    #[serde(default)]
    profile: BTreeMap<toml::Spanned<String>, RawProfile>,
    #[serde(default)]
    surface: RawSurface,
    #[serde(default)]
    config: RawConfigPrefs,
    #[serde(default)]
    audit: RawAudit,
    #[serde(default)]
    oauth: RawOauth,
    #[serde(default)]
    closure: RawClosure,
    #[serde(default)]
    upgrade: RawUpgrade,
    tools: Option<crate::verdict::rules::RawToolRules>,
    prompts: Option<crate::verdict::rules::RawKindRules>,
    #[serde(rename = "resource-templates")]
    resource_templates: Option<crate::verdict::rules::RawKindRules>,
    #[serde(default)]
    screen: RawScreen,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawScreen {
    #[serde(default)]
    accept: Vec<toml::Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawClosure {
    #[serde(default)]
    allow_scripts: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawUpgrade {
    min_release_age: Option<toml::Spanned<toml::Value>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawOauth {
    client_metadata_url: Option<toml::Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawAudit {
    checkpoint_every: Option<u64>,
    max_file_bytes: Option<u64>,
    signing_key: Option<toml::Value>,
    sign_command: Option<toml::Value>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawConfigPrefs {
    #[serde(default)]
    prefer: BTreeMap<String, String>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSurface {
    prompts: Option<bool>,
    resource_templates: Option<bool>,
    resources: Option<bool>,
    #[serde(default)]
    server: BTreeMap<String, RawSurfaceServer>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawSurfaceServer {
    prompts: Option<bool>,
    resource_templates: Option<bool>,
    resources: Option<bool>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawProfiles {
    pin: Option<Vec<toml::Spanned<String>>>,
    #[serde(default)]
    server: BTreeMap<String, Vec<toml::Spanned<String>>>,
}

#[derive(Deserialize)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawProfile {
    protocol_version: Option<toml::Spanned<String>>,
    capabilities: Option<toml::Table>,
    client_info: Option<toml::Table>,
    /// The host's own rules (`[profile.NAME.tools]` and friends): the only thing a
    /// section of a built-in profile may hold.
    tools: Option<crate::verdict::rules::RawToolRules>,
    prompts: Option<crate::verdict::rules::RawKindRules>,
    resource_templates: Option<crate::verdict::rules::RawKindRules>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields)]
struct RawUpdate {
    #[serde(default)]
    accept: Vec<toml::Spanned<String>>,
}

#[derive(Deserialize, Default)]
#[serde(deny_unknown_fields, rename_all = "kebab-case")]
struct RawClassify {
    target_fields: Option<Vec<String>>,
}

/// The largest policy file read (a regular file only).
pub const MAX_POLICY_BYTES: u64 = 4 * 1024 * 1024;

impl Policy {
    /// Reads a policy file; a missing file is `Ok(None)`.
    pub fn load(path: &Path) -> Result<Option<Policy>, PolicyError> {
        let shown = path.display().to_string();
        match crate::base::files::read_regular_text(path, MAX_POLICY_BYTES) {
            Ok(text) => Policy::parse(&text, &shown).map(Some),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(source) => Err(PolicyError::Read {
                path: shown,
                source,
            }),
        }
    }

    /// Parses policy text over the defaults; `path` is only for messages.
    pub fn parse(text: &str, path: &str) -> Result<Policy, PolicyError> {
        let text = crate::servers::config::shape::without_bom(text);
        let at = |offset: usize, message: String| PolicyError::Invalid {
            path: path.to_string(),
            line: text[..offset.min(text.len())].matches('\n').count() + 1,
            message,
        };
        let raw: RawPolicy = toml::from_str(text).map_err(|e| {
            at(
                e.span().map_or(0, |s| s.start),
                format!("not a valid policy: {}", e.message().trim()),
            )
        })?;
        let mut policy = Policy::default();
        for (key, value) in raw.verify {
            let rule = parse_rule(key.get_ref()).map_err(|m| at(key.span().start, m))?;
            let action = match value.get_ref().as_str() {
                "fail" => Action::Fail,
                "warn" => Action::Warn,
                "allow" => Action::Allow,
                other => {
                    return Err(at(
                        value.span().start,
                        format!("{other:?} is not an action; use \"fail\", \"warn\" or \"allow\""),
                    ));
                }
            };
            policy.verify.insert(rule, action);
        }
        for name in raw.update.accept {
            let rule = parse_rule(name.get_ref()).map_err(|m| at(name.span().start, m))?;
            if let Rule::Screen(_) = rule {
                return Err(at(
                    name.span().start,
                    format!(
                        "{rule} cannot be accepted by `update`; name findings a person looked at in [screen] accept"
                    ),
                ));
            }
            policy.accept.insert(rule);
        }
        if let Some(fields) = raw.classify.target_fields {
            policy.target_fields = fields;
        }
        policy.exact = raw.exact;
        let mut hosts = BTreeMap::new();
        for (name, p) in raw.profile {
            let at_name = name.span().start;
            let name = name.into_inner();
            let sections = crate::verdict::rules::RawHostRules {
                tools: p.tools,
                prompts: p.prompts,
                resource_templates: p.resource_templates,
            };
            if !sections.is_empty() {
                hosts.insert(name.clone(), (at_name, sections));
            }
            let defines =
                p.protocol_version.is_some() || p.capabilities.is_some() || p.client_info.is_some();
            if Profile::builtin(&name).is_some() {
                if defines {
                    return Err(at(
                        at_name,
                        format!(
                            "profile {name:?} is built in; give your own profile another name (its section may hold only tools, prompts and resource-templates rules)"
                        ),
                    ));
                }
                continue;
            }
            let Some(version) = p.protocol_version else {
                if defines {
                    return Err(at(
                        at_name,
                        format!("profile {name:?}: protocol-version is missing"),
                    ));
                }
                continue;
            };
            let version_at = version.span().start;
            let version = version.into_inner();
            if !PROTOCOL_VERSIONS.contains(&version.as_str()) {
                return Err(at(
                    version_at,
                    format!(
                        "profile {name:?}: protocol-version {version:?} is not one mcp-lock speaks ({})",
                        PROTOCOL_VERSIONS.join(", ")
                    ),
                ));
            }
            let json = |t: toml::Table| serde_json::to_value(t).unwrap_or_default();
            let client_info = p.client_info.map(json).unwrap_or_else(
                || serde_json::json!({"name": name, "version": env!("CARGO_PKG_VERSION")}),
            );
            policy.profiles.defined.insert(
                name.clone(),
                Profile {
                    name,
                    protocol_version: version,
                    capabilities: json(p.capabilities.unwrap_or_default()),
                    client_info,
                },
            );
        }
        let mut layer = crate::verdict::rules::Layer {
            source: path.to_string(),
            user: false,
            ..Default::default()
        };
        let base = crate::verdict::rules::RawHostRules {
            tools: raw.tools,
            prompts: raw.prompts,
            resource_templates: raw.resource_templates,
        };
        layer.base = base.read().map_err(|(o, m)| at(o, m))?;
        for (name, (at_name, sections)) in hosts {
            if let Err(e) = policy.profiles.get(&name) {
                return Err(at(at_name, e.to_string()));
            }
            let set = sections.read().map_err(|(o, m)| at(o, m))?;
            layer.hosts.insert(name, set);
        }
        policy.rules.layers.push(layer);
        let mut names = |list: Vec<toml::Spanned<String>>| -> Result<Vec<String>, PolicyError> {
            list.into_iter()
                .map(|n| {
                    let at_n = n.span().start;
                    let n = n.into_inner();
                    policy
                        .profiles
                        .get(&n)
                        .map(|_| n)
                        .map_err(|e| at(at_n, e.to_string()))
                })
                .collect()
        };
        let pin = raw.profiles.pin.map(&mut names).transpose()?;
        let mut per_server = BTreeMap::new();
        for (server, list) in raw.profiles.server {
            per_server.insert(server, names(list)?);
        }
        policy.profiles.pin = pin;
        policy.profiles.per_server = per_server;
        let over = |base: Surface, p: Option<bool>, t: Option<bool>, r: Option<bool>| Surface {
            prompts: p.unwrap_or(base.prompts),
            resource_templates: t.unwrap_or(base.resource_templates),
            resources: r.unwrap_or(base.resources),
        };
        policy.prefer = raw
            .config
            .prefer
            .into_iter()
            .map(|(name, file)| (name, std::path::PathBuf::from(file)))
            .collect();
        let audit = raw.audit;
        if let Some(every) = audit.checkpoint_every {
            policy.audit.checkpoint_every = every;
        }
        if let Some(max) = audit.max_file_bytes {
            policy.audit.max_file_bytes = max.max(1);
        }
        // A project's file cannot name what the guard runs or signs with: the user's
        // own settings do (crate::records::audit::signing). Named here, they are only noted.
        if audit.signing_key.is_some() {
            policy.ignored.push("[audit] signing-key");
        }
        if audit.sign_command.is_some() {
            policy.ignored.push("[audit] sign-command");
        }
        policy.allow_scripts = raw.closure.allow_scripts.into_iter().collect();
        if let Some(url) = raw.oauth.client_metadata_url {
            crate::servers::config::entry::check_client_metadata_url(url.get_ref())
                .map_err(|e| at(url.span().start, format!("client-metadata-url: {e}")))?;
            policy.client_metadata_url = Some(url.into_inner());
        }
        if let Some(age) = raw.upgrade.min_release_age {
            let read = match age.get_ref() {
                toml::Value::String(text) => crate::servers::package::releases::parse_age(text),
                toml::Value::Integer(0) => Ok(std::time::Duration::ZERO),
                other => Err(format!(
                    "{other} is not a release age; write a quoted duration: \"7d\", \"36h\", \"90m\", or 0 for no cooldown"
                )),
            };
            policy.upgrade.min_release_age =
                read.map_err(|e| at(age.span().start, format!("min-release-age: {e}")))?;
        }
        for entry in raw.screen.accept {
            let accepted =
                Accepted::parse(entry.get_ref()).map_err(|m| at(entry.span().start, m))?;
            policy.screen.accept.push(accepted);
        }
        let surface = raw.surface;
        policy.surface = over(
            Surface::default(),
            surface.prompts,
            surface.resource_templates,
            surface.resources,
        );
        for (server, s) in surface.server {
            let each = over(policy.surface, s.prompts, s.resource_templates, s.resources);
            policy.surface_per_server.insert(server, each);
        }
        Ok(policy)
    }

    /// Adds the rules of the user's own settings file (looked up with `lookup`) before
    /// the project's.
    pub fn with_user_rules(
        mut self,
        lookup: &dyn Fn(&str) -> Option<String>,
    ) -> Result<Policy, PolicyError> {
        if let Some(layer) =
            crate::verdict::rules::load_user_layer(lookup).map_err(PolicyError::User)?
        {
            self.rules.add_user_layer(layer);
        }
        Ok(self)
    }
}

/// Parses a rule name, or says which names there are.
pub fn parse_rule(name: &str) -> Result<Rule, String> {
    Rule::parse(name).ok_or_else(|| {
        let names: Vec<&str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
        format!("{name:?} is not a class; use one of {}", names.join(", "))
    })
}

/// Parses a rule `update --accept` may take: any but the screening ones, which only
/// a person (or `[screen] accept`, naming each finding) accepts.
pub fn parse_accept_rule(name: &str) -> Result<Rule, String> {
    match parse_rule(name)? {
        Rule::Screen(_) => Err(format!(
            "{name} cannot be accepted unasked; name each finding a person looked at in [screen] accept of mcp-lock.toml"
        )),
        rule => Ok(rule),
    }
}

#[cfg(test)]
mod tests;
