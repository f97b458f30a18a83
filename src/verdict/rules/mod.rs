//! Tool rules: which tools, prompts and resource templates a project's agents may use,
//! by name, by annotation and by host, and what a call's arguments may be.
//!
//! Two files give rules: the user's own `$XDG_CONFIG_HOME/mcp-lock/mcp-lock.toml`
//! (an organisation ships it to every machine) and the project's `mcp-lock.toml`. Each
//! is a [`Layer`] judged on its own, and a definition is denied when any layer denies
//! it, so a project's file can narrow the organisation's rules but never widen them.
//!
//! Within a layer, for the host profile `P`, a definition `SERVER/NAME` is judged in
//! this order, the first that matches deciding:
//!
//! 1. `[profile.P.tools] deny` matches: denied;
//! 2. `[profile.P.tools] allow` matches: allowed (for that host only);
//! 3. `[tools] deny` matches: denied;
//! 4. `[tools] allow` is given and does not match: denied;
//! 5. an annotation rule (`deny-when`, the project's or the profile's) holds of the
//!    tool's effective hints and no `except` names it: denied;
//! 6. allowed.
//!
//! The same holds for `[prompts]` and `[resource-templates]` (names only). Argument
//! rules (`[tools.arguments."SERVER/TOOL"]`) of every layer and of the host's section
//! all apply: a call is refused when any one is broken.

mod arguments;
mod glob;
mod parse;

use std::collections::BTreeMap;
use std::fmt;

use serde::Serialize;
use serde_json::{Map, Value};

use crate::contract::surface::Kind;

pub use arguments::ArgumentRule;
pub use glob::Glob;
pub(crate) use parse::{RawHostRules, RawKindRules, RawToolRules};
pub use parse::{load_user_layer, read_user_file, user_layer_from_text};

/// An annotation rule's condition, on the tool's effective hints (the spec's defaults
/// for what it leaves out: a tool that says nothing may modify, destroy, and reach
/// the open world).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Hint {
    /// Effective `destructiveHint` is true (not read-only, and not marked
    /// non-destructive).
    Destructive,
    /// `readOnlyHint` is not true.
    NotReadOnly,
    /// Effective `openWorldHint` is true.
    OpenWorld,
    /// Effective `idempotentHint` is false.
    NotIdempotent,
}

impl Hint {
    pub const ALL: [Hint; 4] = [
        Hint::Destructive,
        Hint::NotReadOnly,
        Hint::OpenWorld,
        Hint::NotIdempotent,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Hint::Destructive => "destructive",
            Hint::NotReadOnly => "not-read-only",
            Hint::OpenWorld => "open-world",
            Hint::NotIdempotent => "not-idempotent",
        }
    }

    pub fn parse(name: &str) -> Option<Hint> {
        Hint::ALL.into_iter().find(|h| h.as_str() == name)
    }

    /// Whether a tool with these `annotations` has the hint, by effective value.
    pub fn holds(self, annotations: Option<&Map<String, Value>>) -> bool {
        let hints = crate::contract::classify::Hints::of(annotations);
        match self {
            Hint::Destructive => hints.destructive,
            Hint::NotReadOnly => !hints.read_only,
            Hint::OpenWorld => hints.open_world,
            Hint::NotIdempotent => !hints.idempotent,
        }
    }
}

impl fmt::Display for Hint {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The rules of one kind of definition in one section.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct KindRules {
    /// When given, every definition it does not match is denied.
    pub allow: Option<Vec<Glob>>,
    pub deny: Vec<Glob>,
    /// Tools only: deny a tool whose effective annotations have any of these hints...
    pub deny_when: Vec<Hint>,
    /// ...unless one of these names it.
    pub except: Vec<Glob>,
}

impl KindRules {
    fn is_empty(&self) -> bool {
        self.allow.is_none()
            && self.deny.is_empty()
            && self.deny_when.is_empty()
            && self.except.is_empty()
    }
}

/// One section's rules: `[tools]`, `[prompts]`, `[resource-templates]` and argument
/// rules, of the file or of one host profile.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct RuleSet {
    pub tools: KindRules,
    pub prompts: KindRules,
    pub resource_templates: KindRules,
    /// `SERVER/TOOL` glob -> argument name -> rule.
    pub arguments: Vec<(Glob, BTreeMap<String, ArgumentRule>)>,
}

impl RuleSet {
    fn is_empty(&self) -> bool {
        self.tools.is_empty()
            && self.prompts.is_empty()
            && self.resource_templates.is_empty()
            && self.arguments.is_empty()
    }

    fn of(&self, kind: Kind) -> Option<&KindRules> {
        match kind {
            Kind::Tool => Some(&self.tools),
            Kind::Prompt => Some(&self.prompts),
            Kind::ResourceTemplate => Some(&self.resource_templates),
            Kind::Resource => None,
        }
    }
}

/// The rules of one file.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Layer {
    /// The file as shown to the user.
    pub source: String,
    /// Whether it is the user's own (organisation's) file rather than the project's.
    pub user: bool,
    pub base: RuleSet,
    /// `[profile.NAME.tools]` and friends, by profile name.
    pub hosts: BTreeMap<String, RuleSet>,
}

/// What a definition is, as far as the rules ask.
#[derive(Debug, Clone, Copy)]
pub struct Subject<'a> {
    pub kind: Kind,
    pub server: &'a str,
    /// A tool's or prompt's name; a template's `name` (its `uriTemplate` is matched
    /// too, as `other`).
    pub name: &'a str,
    /// Another key the definition is known by (a template's `uriTemplate`).
    pub other: Option<&'a str>,
    /// The definition's `annotations` (tools).
    pub annotations: Option<&'a Map<String, Value>>,
}

impl<'a> Subject<'a> {
    /// A definition of `kind` listed by `server` under `key`, as the lock and the
    /// reports key it (a template by `uriTemplate`), read from its JSON when known.
    pub fn of(kind: Kind, server: &'a str, key: &'a str, definition: Option<&'a Value>) -> Self {
        let name = match kind {
            Kind::ResourceTemplate => definition
                .and_then(|d| d.get("name"))
                .and_then(Value::as_str),
            _ => None,
        };
        Subject {
            kind,
            server,
            name: name.unwrap_or(key),
            other: name.map(|_| key),
            annotations: definition
                .and_then(|d| d.get("annotations"))
                .and_then(Value::as_object),
        }
    }

    fn matches(&self, glob: &Glob) -> bool {
        glob.matches(self.server, self.name)
            || self.other.is_some_and(|o| glob.matches(self.server, o))
    }
}

/// Why a definition or a call is refused: the rule, quoted as written, and its file.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denial {
    /// The rule as the file says it: `[tools] deny "github/delete_*"`,
    /// `[profile.codex.tools] deny-when "destructive"`, `[tools] allow (not listed)`.
    pub rule: String,
    /// The file that holds it, as shown.
    pub source: String,
}

impl fmt::Display for Denial {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{} in {}", self.rule, self.source)
    }
}

/// A definition a server offers that the rules deny to the report's host: still
/// pinned (so its drift is seen), never served.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Denied {
    pub kind: Kind,
    /// Its key, as the lock keys it (a template's `uriTemplate`).
    pub name: String,
    #[serde(flatten)]
    pub denial: Denial,
    /// What the policy's `tool-denied` rule does with it (set as the report is
    /// evaluated).
    pub action: crate::base::action::Action,
}

/// Every rule that applies: the user's layer first, then the project's.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ToolRules {
    pub layers: Vec<Layer>,
}

impl ToolRules {
    /// No file gives a rule: everything is allowed.
    pub fn is_empty(&self) -> bool {
        self.layers
            .iter()
            .all(|l| l.base.is_empty() && l.hosts.values().all(RuleSet::is_empty))
    }

    /// Puts the user's own layer before the project's.
    pub fn add_user_layer(&mut self, layer: Layer) {
        self.layers.retain(|l| !l.user);
        self.layers.insert(0, layer);
    }

    /// The profiles some section names (each must be a profile the policy knows).
    pub fn host_names(&self) -> impl Iterator<Item = &str> {
        self.layers
            .iter()
            .flat_map(|l| l.hosts.keys().map(String::as_str))
    }

    /// [`ToolRules::decide`], or [`ToolRules::decide_unknown_host`] for `None`.
    pub fn decide_for(&self, profile: Option<&str>, subject: &Subject) -> Option<Denial> {
        match profile {
            Some(p) => self.decide(p, subject),
            None => self.decide_unknown_host(subject),
        }
    }

    /// [`ToolRules::decide_for`] a definition as listed or pinned, keyed `key` as the
    /// lock keys it: its annotations and (a template's) name read from it.
    pub fn decide_definition(
        &self,
        profile: Option<&str>,
        kind: Kind,
        server: &str,
        key: &str,
        definition: Option<&crate::base::json::Json>,
    ) -> Option<Denial> {
        use crate::base::json::Json;
        let annotations = definition
            .and_then(|d| d.get("annotations"))
            .map(Json::to_value);
        let name = match kind {
            Kind::ResourceTemplate => definition
                .and_then(|d| d.get("name"))
                .and_then(Json::as_text),
            _ => None,
        };
        let subject = Subject {
            kind,
            server,
            name: name.unwrap_or(key),
            other: name.map(|_| key),
            annotations: annotations.as_ref().and_then(Value::as_object),
        };
        self.decide_for(profile, &subject)
    }

    /// Whether the host `profile` may use `subject`; the first layer that denies it
    /// says why.
    pub fn decide(&self, profile: &str, subject: &Subject) -> Option<Denial> {
        self.layers
            .iter()
            .find_map(|layer| layer.decide(profile, subject))
    }

    /// The decision for a host the caller cannot name (a guard session whose handshake
    /// matches no pinned profile): denied when the rules deny it to any host, so an
    /// unrecognised client is never given what one host's section took away.
    pub fn decide_unknown_host(&self, subject: &Subject) -> Option<Denial> {
        std::iter::once("")
            .chain(self.host_names())
            .find_map(|host| self.decide(host, subject))
    }

    /// [`ToolRules::check_arguments`] for a host the caller cannot name: every host
    /// section's argument rules apply.
    pub fn check_arguments_unknown_host(
        &self,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Option<Denial> {
        std::iter::once("")
            .chain(self.host_names())
            .find_map(|host| self.check_arguments(host, server, tool, arguments))
    }

    /// Whether a call of `server/tool` by the host `profile` with `arguments` keeps
    /// every argument rule; the first broken one says why.
    pub fn check_arguments(
        &self,
        profile: &str,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Option<Denial> {
        self.layers
            .iter()
            .find_map(|layer| layer.check_arguments(profile, server, tool, arguments))
    }
}

impl Layer {
    fn denial(&self, rule: String) -> Option<Denial> {
        Some(Denial {
            rule,
            source: self.source.clone(),
        })
    }

    fn decide(&self, profile: &str, subject: &Subject) -> Option<Denial> {
        let section = section_name(subject.kind);
        let host = self.hosts.get(profile).and_then(|h| h.of(subject.kind));
        let base = self.base.of(subject.kind)?;
        if let Some(host) = host {
            if let Some(g) = host.deny.iter().find(|g| subject.matches(g)) {
                return self.denial(format!("[profile.{profile}.{section}] deny \"{g}\""));
            }
            if host.allow.iter().flatten().any(|g| subject.matches(g)) {
                return None;
            }
        }
        if let Some(g) = base.deny.iter().find(|g| subject.matches(g)) {
            return self.denial(format!("[{section}] deny \"{g}\""));
        }
        if let Some(allow) = &base.allow
            && !allow.iter().any(|g| subject.matches(g))
        {
            return self.denial(format!("[{section}] allow (not listed)"));
        }
        if subject.kind != Kind::Tool {
            return None;
        }
        let excepted = |rules: &KindRules| rules.except.iter().any(|g| subject.matches(g));
        if excepted(base) || host.is_some_and(excepted) {
            return None;
        }
        let hinted = |rules: &KindRules| {
            rules
                .deny_when
                .iter()
                .copied()
                .find(|h| h.holds(subject.annotations))
        };
        if let Some(hint) = host.and_then(hinted) {
            return self.denial(format!(
                "[profile.{profile}.{section}] deny-when \"{hint}\""
            ));
        }
        if let Some(hint) = hinted(base) {
            return self.denial(format!("[{section}] deny-when \"{hint}\""));
        }
        None
    }

    fn check_arguments(
        &self,
        profile: &str,
        server: &str,
        tool: &str,
        arguments: &Value,
    ) -> Option<Denial> {
        let sections = std::iter::once((None, &self.base))
            .chain(self.hosts.get(profile).map(|h| (Some(profile), h)));
        for (host, set) in sections {
            for (glob, rules) in &set.arguments {
                if !glob.matches(server, tool) {
                    continue;
                }
                for (name, rule) in rules {
                    if let Some(why) = rule.broken_by(arguments.get(name)) {
                        let section = match host {
                            Some(p) => format!("[profile.{p}.tools.arguments.\"{glob}\"]"),
                            None => format!("[tools.arguments.\"{glob}\"]"),
                        };
                        return self.denial(format!("{section} {name}: {why}"));
                    }
                }
            }
        }
        None
    }
}

/// The section a kind's rules are written in.
pub fn section_name(kind: Kind) -> &'static str {
    match kind {
        Kind::Tool => "tools",
        Kind::Prompt => "prompts",
        Kind::ResourceTemplate => "resource-templates",
        Kind::Resource => "resources",
    }
}

#[cfg(test)]
mod tests;
