//! `mcp.lock`: the data model. Reading and writing live in their own files.
//!
//! The lock keeps every pinned definition in readable form beside its hash, so a
//! reviewer sees what moved and the reader can prove the two still agree.

mod arriving;
pub mod closures;
mod pieces;
mod read;
mod write;

use std::collections::BTreeMap;

pub use arriving::{Pins, WholeLock};
pub use read::{
    LockError, LockLines, UncheckedLock, layout_and_toml_readings, parse_lock, parse_lock_server,
    parse_lock_with_lines, read_lock, read_lock_server, read_lock_with_lines, read_lock_with_text,
    read_unchecked,
};
pub use write::{FileLock, render_lock, write_lock, write_lock_file};

use crate::base::json::Json;
use crate::contract::hash::set_hash;
use crate::contract::surface::Kind;
use crate::servers::client::ServerSession;
use crate::servers::config::{ServerSpec, TransportSpec};

/// The lock format this build writes. Version 1 (one listing per server, made with
/// no client capabilities) still reads, as pinned under the `bare` profile; version 2
/// is version 3 without `oauth_issuer` or package pins (every package reads "not
/// pinned yet"); version 3 is version 4 without `kind = "unresolved"` packages;
/// version 5 is version 6 without `code_env` (no code-loading variable pinned);
/// version 6 is version 7 without `approved` (every approval "not recorded"); version 7
/// is version 8 without `approved = "pull-request"`.
pub const FORMAT_VERSION: i64 = 8;

/// The profile name of a server pinned with no client declared (no capabilities, the
/// newest protocol): what a lock from before profiles holds. The profile module names it.
pub const BARE: &str = "bare";

/// The whole lock: servers by name.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Lockfile {
    pub servers: BTreeMap<String, PinnedServer>,
}

/// One pinned server: its listing under each client profile it was pinned with
/// (never none).
#[derive(Debug, Clone, PartialEq)]
pub struct PinnedServer {
    pub profiles: BTreeMap<String, LockedServer>,
    /// What its entry launches (version 3); `None`: not pinned yet.
    pub package: Option<crate::servers::package::PackagePin>,
    /// How the last change to its pins was approved (version 7); `None`: not recorded
    /// (a lock from before approvals were, or a server no run has changed since).
    pub approved: Option<Approval>,
}

/// How a change to a server's pins was approved: whether a person looked at it.
/// Written in the lock as [`Approval::as_str`]; the same approvals give the same
/// bytes on every machine (no time, no user, no host).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Approval {
    /// `update`: a person answered y (or a) at the terminal prompt.
    Terminal,
    /// `update --yes`: accepted unasked, no one looked at it.
    Yes,
    /// The policy's `accept` (or `--accept`) took it without asking anyone.
    Policy,
    /// `upgrade` moved it, a person answering at the terminal.
    UpgradeTerminal,
    /// `upgrade --yes` moved it.
    UpgradeYes,
    /// `upgrade` moved it and the policy accepted it unasked.
    UpgradePolicy,
    /// `update --pull-request` wrote it for review: merging the pull request that
    /// proposed it approves it (version 8).
    PullRequest,
}

impl Approval {
    pub const ALL: [Approval; 7] = [
        Approval::Terminal,
        Approval::Yes,
        Approval::Policy,
        Approval::UpgradeTerminal,
        Approval::UpgradeYes,
        Approval::UpgradePolicy,
        Approval::PullRequest,
    ];

    /// The value of `approved` in the lock.
    pub fn as_str(self) -> &'static str {
        match self {
            Approval::Terminal => "terminal",
            Approval::Yes => "yes",
            Approval::Policy => "policy",
            Approval::UpgradeTerminal => "upgrade-terminal",
            Approval::UpgradeYes => "upgrade-yes",
            Approval::UpgradePolicy => "upgrade-policy",
            Approval::PullRequest => "pull-request",
        }
    }

    pub fn parse(text: &str) -> Option<Approval> {
        Approval::ALL.into_iter().find(|a| a.as_str() == text)
    }

    /// Whether a person was asked and said yes. A pull request's pins are approved
    /// by whoever merges it, which the lock cannot know: not counted.
    pub fn by_a_person(self) -> bool {
        matches!(self, Approval::Terminal | Approval::UpgradeTerminal)
    }

    /// The lock format version that first wrote this value.
    pub fn since_version(self) -> i64 {
        match self {
            Approval::PullRequest => 8,
            _ => 7,
        }
    }

    /// How much a person saw of it: the policy's least (no one was asked), `--yes`
    /// next (someone ran it, no one read it), the terminal most. Several changes to
    /// one server approved differently in one run record the least.
    pub fn looked_at(self) -> u8 {
        match self {
            Approval::Policy | Approval::UpgradePolicy => 0,
            Approval::Yes | Approval::UpgradeYes | Approval::PullRequest => 1,
            Approval::Terminal | Approval::UpgradeTerminal => 2,
        }
    }
}

impl std::fmt::Display for Approval {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// One server as listed under one client profile.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedServer {
    pub name: String,
    /// The client profile this listing was made with.
    pub profile: String,
    pub reached: Reached,
    /// The protocol version the server answered with when pinned.
    pub protocol_version: String,
    /// The clientInfo and client capabilities sent when pinned; verify sends the same.
    pub client_info: Json,
    pub client_capabilities: Json,
    /// `serverInfo` as the server sent it.
    pub server_info: Json,
    pub list_changed: bool,
    pub instructions_hash: Option<String>,
    /// Pinned tools by name.
    pub tools: BTreeMap<String, LockedTool>,
    /// Pinned prompts by name; `None`: not pinned yet (a lock from before prompts were
    /// pinned, or a surface that leaves them out).
    pub prompts: Option<BTreeMap<String, LockedTool>>,
    /// Pinned resource templates by `uriTemplate`; `None`: not pinned yet.
    pub resource_templates: Option<BTreeMap<String, LockedTool>>,
    /// Pinned resources by `uri`; `None`: not pinned (resources are pinned on request).
    pub resources: Option<BTreeMap<String, LockedTool>>,
}

impl LockedServer {
    /// The pins of one kind, when that kind is pinned.
    pub fn items(&self, kind: Kind) -> Option<&BTreeMap<String, LockedTool>> {
        match kind {
            Kind::Tool => Some(&self.tools),
            Kind::Prompt => self.prompts.as_ref(),
            Kind::ResourceTemplate => self.resource_templates.as_ref(),
            Kind::Resource => self.resources.as_ref(),
        }
    }

    /// The slot of one kind's pins (tools are always pinned).
    pub fn items_mut(&mut self, kind: Kind) -> &mut Option<BTreeMap<String, LockedTool>> {
        match kind {
            Kind::Prompt => &mut self.prompts,
            Kind::ResourceTemplate => &mut self.resource_templates,
            Kind::Resource => &mut self.resources,
            Kind::Tool => unreachable!("tools are always pinned"),
        }
    }

    /// The set hash over the pinned definitions of one kind (`key:hash` lines).
    pub fn set_hash_of(&self, kind: Kind) -> Option<String> {
        self.items(kind).map(|items| {
            set_hash(
                items
                    .iter()
                    .map(|(key, item)| (key.as_str(), item.hash.as_str())),
            )
        })
    }
}

/// How a server was reached, without any secret value: command and args as written in
/// the config (variables unexpanded), env and header names only.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Reached {
    Stdio {
        command: String,
        args: Vec<String>,
        env: Vec<String>,
        /// The entry's `env` variables that decide which code runs
        /// ([`crate::servers::config::environ::loads_code`]), each with the pin of its value as
        /// written ([`crate::servers::config::environ::code_env_pin`]), sorted by name (lock
        /// version 6; empty in an older lock: none pinned).
        code_env: Vec<(String, String)>,
    },
    Remote {
        kind: String,
        url: String,
        headers: Vec<String>,
        /// The issuer of the `mcp-lock login` token used, when one was (never the
        /// token): a note in reports when it differs, never drift.
        oauth_issuer: Option<String>,
    },
}

impl Reached {
    pub fn from_spec(spec: &ServerSpec) -> Self {
        match &spec.transport {
            TransportSpec::Stdio {
                command, args, env, ..
            } => Reached::Stdio {
                command: command.clone(),
                args: args.clone(),
                env: env.keys().cloned().collect(),
                code_env: env
                    .iter()
                    .filter(|(name, _)| crate::servers::config::environ::loads_code(name))
                    .map(|(name, written)| {
                        (
                            name.clone(),
                            crate::servers::config::environ::code_env_pin(written),
                        )
                    })
                    .collect(),
            },
            TransportSpec::Remote { kind, url, headers } => Reached::Remote {
                kind: kind.as_str().to_string(),
                url: url.clone(),
                headers: headers.keys().cloned().collect(),
                oauth_issuer: None,
            },
        }
    }

    /// The launch without how it authenticated: what a config alone can say.
    pub fn without_auth(&self) -> Reached {
        match self {
            Reached::Remote {
                kind, url, headers, ..
            } => Reached::Remote {
                kind: kind.clone(),
                url: url.clone(),
                headers: headers.clone(),
                oauth_issuer: None,
            },
            stdio => stdio.clone(),
        }
    }
}

impl Reached {
    /// How a server was reached in a session: the config's entry, with the transport
    /// actually used (an `http` entry may turn out to be a legacy HTTP+SSE server).
    /// and the login token's issuer, if one was sent.
    pub fn as_used(spec: &ServerSpec, session: &ServerSession) -> Self {
        match Reached::from_spec(spec) {
            Reached::Remote { url, headers, .. } => Reached::Remote {
                kind: session.transport.clone(),
                url,
                headers,
                oauth_issuer: session.oauth_issuer.clone(),
            },
            stdio => stdio,
        }
    }
}

/// "node server.js --flag (env: NAME)": how a launch reads in a report.
impl Reached {
    /// `stdio`, `streamable-http` or `sse`.
    pub fn transport_name(&self) -> &str {
        match self {
            Reached::Stdio { .. } => "stdio",
            Reached::Remote { kind, .. } => kind,
        }
    }
}

impl std::fmt::Display for Reached {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (head, rest, label, names) = match self {
            Reached::Stdio {
                command, args, env, ..
            } => (command, args.join(" "), "env", env),
            Reached::Remote {
                kind, url, headers, ..
            } => (kind, url.clone(), "headers", headers),
        };
        write!(f, "{head}")?;
        if !rest.is_empty() {
            write!(f, " {rest}")?;
        }
        if !names.is_empty() {
            write!(f, " ({label}: {})", names.join(", "))?;
        }
        if let Reached::Remote {
            oauth_issuer: Some(issuer),
            ..
        } = self
        {
            write!(f, " (OAuth login, issuer {issuer})")?;
        }
        if let Reached::Stdio { code_env, .. } = self
            && !code_env.is_empty()
        {
            let pins: Vec<String> = code_env
                .iter()
                .map(|(name, pin)| format!("{name} {}", &pin[..pin.len().min(19)]))
                .collect();
            write!(f, " (code-loading env: {})", pins.join(", "))?;
        }
        Ok(())
    }
}

/// One pinned tool definition.
#[derive(Debug, Clone, PartialEq)]
pub struct LockedTool {
    pub hash: String,
    /// The definition as the server sent it (its canonical form hashes to `hash`).
    pub definition: std::sync::Arc<Json>,
}

impl PinnedServer {
    /// A server pinned under one profile.
    pub fn single(pin: LockedServer) -> Self {
        PinnedServer {
            profiles: BTreeMap::from([(pin.profile.clone(), pin)]),
            package: None,
            approved: None,
        }
    }

    /// How the server was reached (the same under every profile).
    pub fn reached(&self) -> &Reached {
        &self.first().reached
    }

    /// The listing of the first profile, by name.
    pub fn first(&self) -> &LockedServer {
        self.profiles
            .values()
            .next()
            .expect("a pinned server has a profile")
    }

    /// Whether this definition of a tool is approved under any profile: approval is
    /// of a definition, whichever client saw it.
    pub fn approves(&self, tool: &str, hash: &str) -> bool {
        self.approves_item(Kind::Tool, tool, hash)
    }

    /// [`PinnedServer::approves`] for a definition of any kind, by its key.
    pub fn approves_item(&self, kind: Kind, key: &str, hash: &str) -> bool {
        self.profiles.values().any(|p| {
            p.items(kind)
                .and_then(|items| items.get(key))
                .is_some_and(|t| t.hash == hash)
        })
    }

    /// Whether any profile pins this kind at all (a lock from before a kind was
    /// pinned does not: that kind is "not pinned yet" for the server).
    pub fn pins_kind(&self, kind: Kind) -> bool {
        self.profiles.values().any(|p| p.items(kind).is_some())
    }

    /// Whether any profile pins `instructions` with this hash (or, for `None`, pins
    /// a server that sent none).
    pub fn approves_instructions(&self, hash: Option<&str>) -> bool {
        self.profiles
            .values()
            .any(|p| p.instructions_hash.as_deref() == hash)
    }

    /// Every tool name pinned under any profile (tools only).
    pub fn tool_names(&self) -> std::collections::BTreeSet<&str> {
        self.profiles
            .values()
            .flat_map(|p| p.tools.keys().map(String::as_str))
            .collect()
    }

    /// What a client no pinned profile matches is judged against: every approved
    /// tool (a name pinned with two definitions takes the first profile's), under
    /// `profile`'s name and with its identity fields.
    pub fn union(&self, profile: &str) -> LockedServer {
        let mut view = LockedServer {
            profile: profile.to_string(),
            tools: BTreeMap::new(),
            prompts: None,
            resource_templates: None,
            resources: None,
            ..self.first().clone()
        };
        for kind in Kind::ALL {
            if kind != Kind::Tool && !self.pins_kind(kind) {
                continue;
            }
            let mut all = BTreeMap::new();
            for pin in self.profiles.values() {
                for (key, item) in pin.items(kind).into_iter().flatten() {
                    all.entry(key.clone()).or_insert_with(|| item.clone());
                }
            }
            match kind {
                Kind::Tool => view.tools = all,
                other => *view.items_mut(other) = Some(all),
            }
        }
        view
    }
}

impl LockedServer {
    /// The set hash over the pinned tools.
    pub fn set_hash(&self) -> String {
        set_hash(
            self.tools
                .iter()
                .map(|(name, tool)| (name.as_str(), tool.hash.as_str())),
        )
    }
}
