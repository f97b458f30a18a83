//! What the guard decides, with no I/O: which listed tools the client may see (and
//! in which definition), which calls reach the server, and what a refusal says.
//!
//! The guard only ever judges what the client itself receives. It never lists tools
//! on its own: a server could answer the guard one way and the client another.
//!
//! Each tool is judged as verify judges it ([`crate::verdict::drift::tool_change`], then the
//! policy): what verify passes, the guard serves; what verify fails, the guard hides
//! and refuses.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::client::{
    ClientHello, MissingProfile, ProfileDrift, matching_profile, same_capabilities,
    unpinned_version,
};
use crate::base::json::Json;
use crate::base::text::escape_for_terminal;
use crate::contract::classify::Class;
use crate::contract::hash::{HashedTool, instructions_hash};
use crate::contract::surface::Kind;
use crate::contract::validate::{ArgumentCheck, ArgumentSchema, Violation};
use crate::records::lock::{LockedServer, PinnedServer};
use crate::verdict::drift::{ChangeKind, Pinned, ToolChange, tool_change};
use crate::verdict::policy::{Action, Policy, Rule, Serve};
use crate::verdict::rules::{Denial, ToolRules};

mod decision;
mod listing;
mod surface;

mod contract;
#[cfg(test)]
mod tests;

use decision::short_name;
pub use decision::{Contract, Decision, ErrorCode, OnDrift, Refusal, RequiredAction, ServedAs};

pub use surface::{
    CheckedItems, ItemDecision, ItemHidden, ItemRefusal, ItemServed, template_matches,
};

/// How one listed tool was given to the client.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Served {
    Approved,
    /// The approved definition with this hash in place of the live one.
    Pinned {
        pinned_hash: String,
    },
    Live,
    /// Left out; calls are refused with this code.
    Hidden(ErrorCode),
    /// Left out because the tool rules deny it to the client's host; calls are
    /// refused with TOOL_DENIED (PROMPT_DENIED, RESOURCE_TEMPLATE_DENIED).
    Denied(Denial),
}

/// One tool as a listing the client received showed it.
#[derive(Debug, Clone)]
struct Seen {
    /// None when it has none to go by (no canonical form, or its name listed twice).
    hash: Option<String>,
    /// Why it cannot be pinned whatever its definition (listed twice).
    problem: Option<String>,
    /// The live definition when it is not approved: judged again when the pins or
    /// the client's profile change, and the schema of a tool served live.
    live: Option<Arc<Json>>,
    served: Served,
}

impl Served {
    /// Why a definition of `kind` served this way is left out, and the rule when the
    /// rules deny it (for one served, the code is never read).
    fn left_out(&self, kind: Kind) -> (ErrorCode, Option<Denial>) {
        match self {
            Served::Hidden(code) => (*code, None),
            Served::Denied(denial) => (denied_code(kind), Some(denial.clone())),
            _ => (ErrorCode::ListingNotVerified, None),
        }
    }
}

/// The code of a definition of `kind` the rules deny.
fn denied_code(kind: Kind) -> ErrorCode {
    match kind {
        Kind::Prompt => ErrorCode::PromptDenied,
        Kind::ResourceTemplate => ErrorCode::ResourceTemplateDenied,
        _ => ErrorCode::ToolDenied,
    }
}

impl Seen {
    fn usable(&self) -> bool {
        !matches!(self.served, Served::Hidden(_) | Served::Denied(_))
    }
}

#[derive(Debug, Default)]
struct Listing {
    /// The list_changed generation the listing's first page was asked for in; None
    /// when its first page was not seen.
    generation: Option<u64>,
    tools: HashMap<String, Seen>,
}

/// The most requests that may wait for the server's answers at once (docs/guard.md);
/// the guard answers any more with an error.
pub const MAX_PENDING: usize = 10_000;

/// A request of the client the server has yet to answer.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Pending {
    /// `initialize` or `server/discover`: the answer carries `instructions` and the
    /// server's identity; the request said who the client is.
    Handshake(Option<ClientHello>),
    /// `tools/list`: the first page or a later one, asked for in this generation.
    List {
        first_page: bool,
        generation: u64,
    },
    Call {
        tool: String,
    },
    /// `prompts/list`, `resources/templates/list` or `resources/list`: a page of a
    /// listing of that kind, asked for in that kind's generation.
    ItemList {
        kind: Kind,
        first_page: bool,
        generation: u64,
    },
    Other,
}

/// A hidden tool, for the audit log and the `--on-drift fail` error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hidden {
    pub tool: String,
    pub error_code: ErrorCode,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    /// The worst class of the change, and what the policy does with it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_profile: Option<MissingProfile>,
    /// The rule that denies it and its file (TOOL_DENIED).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<Denial>,
}

/// A tool given to the client although its live definition is not approved: the
/// policy passes the change. One audit entry each.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServedChange {
    pub tool: String,
    /// `pinned` (the approved definition in place of the live one) or `live`.
    pub served: ServedAs,
    /// `added` or `changed`.
    pub change: ChangeKind,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    pub class: Option<Class>,
    pub action: Action,
}

/// A page after the check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedPage {
    /// The message to send the client in its place.
    pub message: String,
    /// Tools left out (or, with `OnDrift::Fail`, the reason the page was refused).
    pub hidden: Vec<Hidden>,
    /// Tools served although not approved.
    pub served: Vec<ServedChange>,
    /// How many tools the client sees on this page.
    pub shown: usize,
    /// The page was answered with an error instead.
    pub refused: bool,
    /// This page completed a listing.
    pub complete: bool,
}

/// Something the guard says once: a line on stderr and an audit entry.
#[derive(Debug, Clone, PartialEq)]
pub struct Notice {
    pub event: &'static str,
    pub members: Vec<(&'static str, Value)>,
    /// The stderr line; None for an entry only.
    pub message: Option<String>,
}

/// The state of one guarded session.
pub struct Session {
    server: String,
    /// The server's pins under every profile; None when the lock no longer pins it.
    pins: Option<PinnedServer>,
    policy: Policy,
    /// The policy's tool rules, shared with the contracts of calls.
    rules: Arc<ToolRules>,
    /// The pinned profile the client is (its capabilities equal the recorded ones).
    matched: Option<String>,
    /// What listings are judged against: the matched profile's pins, or (no match,
    /// or no handshake seen yet) every approved tool.
    view: Option<LockedServer>,
    hello: Option<ClientHello>,
    /// The client matches no pinned profile: what would pin it.
    missing: Option<MissingProfile>,
    /// The version the handshake agreed on.
    agreed: Option<String>,
    /// The client's handshake is none the lock pinned (capabilities or era): the
    /// nearest pinned profile and the difference.
    drift: Option<ProfileDrift>,
    /// The shape of the client's `roots/list` answer, once seen.
    roots_answer: Option<crate::records::observed::RootsShape>,
    /// A handshake (or roots answer) not yet recorded in the state file.
    unrecorded: bool,
    /// The directory of the lock, whose `.mcp-lock/handshakes.json` records what the
    /// client sent; None: not recorded.
    state_dir: Option<std::path::PathBuf>,
    /// The `serverInfo.name` the server gave in the handshake answer (outer None:
    /// no answer yet).
    server_name: Option<Option<String>>,
    /// The server's identity changed and the policy fails that: nothing is served.
    refuse_all: bool,
    /// Lines already said, so each is said once.
    said: HashSet<String>,
    /// Compiled input schemas by definition hash.
    schemas: HashMap<String, Arc<ArgumentSchema>>,
    on_drift: OnDrift,
    /// Bumped by every notifications/tools/list_changed.
    generation: u64,
    complete: Option<Listing>,
    partial: Option<Listing>,
    pending: HashMap<String, Pending>,
    /// What was checked of prompts, resource templates and resources.
    items: HashMap<Kind, surface::ItemState>,
    filter: crate::servers::config::ToolFilter,
}

/// The name a view of every approved tool goes by in messages.
const UNION: &str = "(every approved definition)";

impl Session {
    pub fn new(
        server: &str,
        pins: Option<PinnedServer>,
        policy: Policy,
        on_drift: OnDrift,
    ) -> Self {
        let mut session = Session {
            server: server.to_string(),
            pins,
            rules: Arc::new(policy.rules.clone()),
            policy,
            matched: None,
            view: None,
            hello: None,
            missing: None,
            agreed: None,
            drift: None,
            roots_answer: None,
            unrecorded: false,
            state_dir: None,
            server_name: None,
            refuse_all: false,
            said: HashSet::new(),
            schemas: HashMap::new(),
            on_drift,
            generation: 0,
            complete: None,
            partial: None,
            pending: HashMap::new(),
            items: HashMap::new(),
            filter: crate::servers::config::ToolFilter::default(),
        };
        session.choose_view(None);
        session
    }

    /// The tools the host's own config hides from its agent: hidden, as the host
    /// would, and never judged (verify does not pin them either).
    pub fn with_filter(mut self, filter: crate::servers::config::ToolFilter) -> Self {
        self.filter = filter;
        self
    }

    /// Records each handshake the client sends in `.mcp-lock/handshakes.json` of this
    /// directory (the lock's).
    pub fn with_state_dir(mut self, lock_dir: std::path::PathBuf) -> Self {
        self.state_dir = Some(lock_dir);
        self
    }

    pub fn server(&self) -> &str {
        &self.server
    }

    /// The client's handshake differs from every pinned one: how.
    pub fn drift(&self) -> Option<&ProfileDrift> {
        self.drift.as_ref()
    }

    /// The client answered `roots/list` with this shape: recorded with its handshake
    /// when it is new.
    pub fn saw_roots(&mut self, shape: crate::records::observed::RootsShape) {
        if self.hello.is_some() && self.roots_answer.as_ref() != Some(&shape) {
            self.roots_answer = Some(shape);
            self.unrecorded = true;
        }
    }

    /// What the client sent, to record in the state file, once each time it is new,
    /// with the directory to record it in (its `at` is left for the caller).
    pub fn take_observation(
        &mut self,
    ) -> Option<(std::path::PathBuf, crate::records::observed::Handshake)> {
        if !std::mem::take(&mut self.unrecorded) {
            return None;
        }
        let dir = self.state_dir.clone()?;
        let hello = self.hello.as_ref()?;
        let host = hello.client_info["name"].as_str().unwrap_or_default();
        Some((
            dir,
            crate::records::observed::Handshake {
                server: self.server.clone(),
                host: host.to_string(),
                client_info: hello.client_info.clone(),
                path: hello.path().to_string(),
                requested_version: hello.protocol_version.clone(),
                agreed_version: self.agreed.clone(),
                capabilities: hello.capabilities.clone(),
                roots_declared: hello.capabilities.get("roots").is_some(),
                roots_answer: self.roots_answer.clone(),
                profile: self
                    .drift
                    .as_ref()
                    .map(|d| d.nearest.clone())
                    .or(self.matched.clone()),
                matched: self.drift.is_none() && self.matched.is_some(),
                at: String::new(),
            },
        ))
    }

    /// How many tools the current view pins.
    pub fn pinned_count(&self) -> usize {
        self.view.as_ref().map_or(0, |v| v.tools.len())
    }

    /// The pinned profile the client matched, if it did.
    pub fn profile(&self) -> Option<&str> {
        self.matched.as_deref()
    }

    /// What a live tool is compared with.
    fn pinned(&self) -> Option<Pinned<'_>> {
        Some(Pinned {
            view: self.view.as_ref()?,
            server: self.pins.as_ref()?,
            exact: self.matched.is_some(),
        })
    }

    /// The rule that denies the definition of `kind` keyed `key` to the client's host
    /// (the profile its handshake matched; when it matched none, every host's rules
    /// apply), judged on `definition`, the one the client is served.
    fn denial(&self, kind: Kind, key: &str, definition: Option<&Json>) -> Option<Denial> {
        if self.rules.is_empty() {
            return None;
        }
        self.rules
            .decide_definition(self.matched.as_deref(), kind, &self.server, key, definition)
    }

    /// Picks the view: the profile named `keep` if still pinned, else the one the
    /// client's handshake matches (capabilities and era), else the one with its
    /// capabilities in another era (profile drift), else every approved tool
    /// (profile drift too).
    fn choose_view(&mut self, keep: Option<String>) {
        let Some(pins) = &self.pins else {
            self.view = None;
            self.matched = None;
            self.missing = None;
            self.drift = None;
            self.refuse_all = false;
            return;
        };
        let agreed = self.agreed.as_deref();
        let exact = self
            .hello
            .as_ref()
            .and_then(|h| matching_profile(pins, h, agreed));
        let matched = keep
            .filter(|name| pins.profiles.contains_key(name))
            .filter(|name| exact.is_none() || exact.as_ref() == Some(name))
            .or(exact.clone())
            .or_else(|| self.hello.as_ref().and_then(|h| same_capabilities(pins, h)));
        self.missing = match (&matched, &self.hello) {
            (None, Some(hello)) => Some(MissingProfile::new(
                &self.server,
                pins,
                &hello.capabilities,
                &self.policy.profiles,
            )),
            _ => None,
        };
        self.drift = match (&self.hello, &exact) {
            (Some(hello), None) => {
                let nearest = matched
                    .clone()
                    .or(self.missing.as_ref().map(|m| m.closest.clone()));
                nearest.map(|n| ProfileDrift::new(pins, hello, agreed, &n))
            }
            _ => None,
        };
        self.view = Some(match &matched {
            Some(name) => pins.profiles[name].clone(),
            None => pins.union(UNION),
        });
        self.matched = matched;
        self.update_refuse_all();
    }

    /// The client's handshake: which pinned profile it is, given the version the
    /// session agreed on. Returns what to say: a match, or profile drift (once).
    fn meet(&mut self, hello: ClientHello, agreed: Option<String>) -> Vec<Notice> {
        self.hello = Some(hello);
        self.agreed = agreed;
        self.unrecorded = true;
        self.choose_view(None);
        self.judge_again();
        let mut notices = Vec::new();
        let (Some(hello), Some(pins)) = (&self.hello, &self.pins) else {
            return notices;
        };
        match (&self.matched, &self.drift) {
            (Some(name), None) => notices.push(Notice {
                event: "client_profile",
                members: vec![("decision", json!("matched")), ("profile", json!(name))],
                message: None,
            }),
            (_, Some(drift)) => {
                let judged = match (&self.matched, &self.missing) {
                    (_, Some(missing)) => missing.judged(&self.server, pins),
                    (Some(name), None) => format!(
                        "its tools are judged against what {name} pinned, as a client with its capabilities"
                    ),
                    (None, None) => String::new(),
                };
                let line = drift.message(&self.server, hello, &judged);
                if self.said.insert(line.clone()) {
                    let mut members = vec![
                        ("decision", json!("profile_drift")),
                        ("nearest", json!(drift.nearest)),
                        ("closest", json!(drift.nearest)),
                        ("difference", json!(drift.difference)),
                        ("era_changed", json!(drift.era_changed)),
                        ("path", json!(drift.path)),
                        ("protocol_version", json!(drift.protocol_version)),
                        (
                            "pinned_protocol_version",
                            json!(drift.pinned_protocol_version),
                        ),
                        ("client_info", hello.client_info.clone()),
                        ("judged_as", json!(self.matched)),
                    ];
                    if let Some(missing) = &self.missing {
                        members.push(("profile", json!(missing.profile)));
                        members.push(("pin_with", json!(missing.pin_with)));
                    }
                    notices.push(Notice {
                        event: "client_profile",
                        members,
                        message: Some(line),
                    });
                }
            }
            _ => {}
        }
        notices
    }

    /// New pins (the lock changed on disk; None: it no longer pins the server). The
    /// matched profile is kept by name. True when a tool the client was shown, or kept
    /// from, would now be treated differently: the client should list again.
    pub fn set_pins(&mut self, pins: Option<PinnedServer>) -> bool {
        self.set_pins_of_every_kind(pins).contains(&Kind::Tool)
    }

    /// [`Session::set_pins`], saying for every kind (tools, prompts, templates,
    /// resources) whether what the client was shown of it, or kept from, would now be
    /// treated differently.
    pub fn set_pins_of_every_kind(&mut self, pins: Option<PinnedServer>) -> Vec<Kind> {
        let before = self.visible();
        let before_items = self.visible_items();
        self.pins = pins;
        self.choose_view(self.matched.clone());
        self.schemas.clear();
        self.judge_again();
        let mut moved = Vec::new();
        if before != self.visible() {
            moved.push(Kind::Tool);
        }
        let after_items = self.visible_items();
        for kind in surface::ITEM_KINDS {
            if before_items.get(&kind) != after_items.get(&kind) {
                moved.push(kind);
            }
        }
        moved
    }

    /// Judges every tool of the listings seen again, after the pins or the view moved.
    fn judge_again(&mut self) {
        let mut complete = self.complete.take();
        let mut partial = self.partial.take();
        for listing in [&mut complete, &mut partial].into_iter().flatten() {
            for (name, seen) in listing.tools.iter_mut() {
                *seen = self.judge_seen(name, seen);
            }
        }
        self.complete = complete;
        self.partial = partial;
        self.judge_items_again();
    }

    /// A tool seen before, judged with the current pins and view.
    fn judge_seen(&self, name: &str, seen: &Seen) -> Seen {
        if let Some(live) = &seen.live {
            let (served, _) = self.judge(
                name,
                &HashedTool::shared(live.clone()),
                seen.problem.clone(),
            );
            return Seen {
                served,
                ..seen.clone()
            };
        }
        // Approved before: only its hash was kept. Still approved, or hidden until the
        // client lists again (the guard tells it to).
        let approved = seen
            .hash
            .as_deref()
            .is_some_and(|h| self.pins.as_ref().is_some_and(|p| p.approves(name, h)));
        let denied = || {
            let hash = seen.hash.as_deref()?;
            let definition = self.approved_definition(name, hash)?;
            self.denial(Kind::Tool, name, Some(&definition))
        };
        let served = if approved && !self.identity_refused() {
            match denied() {
                Some(denial) => Served::Denied(denial),
                None => Served::Approved,
            }
        } else if self.identity_refused() {
            Served::Hidden(ErrorCode::ServerIdentityChanged)
        } else {
            Served::Hidden(self.hidden_code(name))
        };
        Seen {
            served,
            ..seen.clone()
        }
    }

    /// STALE_TOOL_SCHEMA for a name the view pins, UNPINNED_TOOL otherwise.
    fn hidden_code(&self, name: &str) -> ErrorCode {
        if self
            .view
            .as_ref()
            .is_some_and(|v| v.tools.contains_key(name))
        {
            ErrorCode::StaleToolSchema
        } else {
            ErrorCode::UnpinnedTool
        }
    }

    /// The server answered under another name than pinned, and the policy fails it
    /// (worked out once, not for every tool).
    fn identity_refused(&self) -> bool {
        self.refuse_all
    }

    fn update_refuse_all(&mut self) {
        self.refuse_all = self.identity_changed()
            && self.policy.action(Rule::Class(Class::Authority)) == Action::Fail;
    }

    fn identity_changed(&self) -> bool {
        let (Some(live), Some(view)) = (&self.server_name, &self.view) else {
            return false;
        };
        let pinned = view.server_info.get("name").and_then(Json::as_str);
        *live != pinned
    }

    /// How one live tool is served: verify's judgement of it ([`tool_change`], then
    /// the policy), and the change when it is not approved.
    fn judge(
        &self,
        name: &str,
        tool: &HashedTool,
        problem: Option<String>,
    ) -> (Served, Option<ToolChange>) {
        if self.identity_refused() {
            return (Served::Hidden(ErrorCode::ServerIdentityChanged), None);
        }
        if !self.filter.shows(name) {
            return (Served::Hidden(ErrorCode::FilteredByHost), None);
        }
        let pinned = self.pinned();
        let Some(mut change) = tool_change(pinned, name, tool, problem) else {
            let denied = self.denial(Kind::Tool, name, Some(&tool.definition));
            return (denied.map_or(Served::Approved, Served::Denied), None);
        };
        self.policy.judge(&mut change);
        let served = match (pinned.is_some(), self.policy.serve(&change)) {
            // A server the lock does not pin fails verify whatever its tools.
            (false, _) => Served::Hidden(ErrorCode::UnpinnedTool),
            (true, Serve::Hide) => Served::Hidden(self.hidden_code(name)),
            (true, Serve::Pinned) => Served::Pinned {
                pinned_hash: change.pinned_hash.clone().unwrap_or_default(),
            },
            (true, Serve::Live) => Served::Live,
        };
        // Judged on the definition the client is served: the approved one in place of
        // the live one, else the live one (which approving the change would serve).
        let served_definition = match &served {
            Served::Pinned { pinned_hash } => self.approved_definition(name, pinned_hash),
            _ => None,
        };
        let definition = served_definition.as_deref().unwrap_or(&tool.definition);
        let served = match self.denial(Kind::Tool, name, Some(definition)) {
            Some(denial) => Served::Denied(denial),
            None => served,
        };
        (served, Some(change))
    }

    /// The tools of the last complete listing the client may use, and how each is
    /// served.
    fn visible(&self) -> HashMap<String, Served> {
        let Some(listing) = &self.complete else {
            return HashMap::new();
        };
        listing
            .tools
            .iter()
            .filter(|(_, seen)| seen.usable())
            .map(|(name, seen)| (name.clone(), seen.served.clone()))
            .collect()
    }

    /// Records a client request before it is forwarded.
    pub fn expect(&mut self, id: String, pending: Pending) {
        self.pending.insert(id, pending);
    }

    /// Whether a request with this id is still waiting for its answer.
    pub fn is_pending(&self, id: &str) -> bool {
        self.pending.contains_key(id)
    }

    /// Takes the request a server response answers.
    pub fn answered(&mut self, id: &str) -> Option<Pending> {
        self.pending.remove(id)
    }

    /// How many requests wait for their answers.
    pub fn waiting(&self) -> usize {
        self.pending.len()
    }

    /// Every request still waiting, for when the server is gone.
    pub fn drain_pending(&mut self) -> Vec<(String, Pending)> {
        let mut all: Vec<_> = self.pending.drain().collect();
        all.sort_by(|a, b| a.0.cmp(&b.0));
        all
    }

    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// notifications/tools/list_changed: what was checked is stale until a complete
    /// listing asked for from now on has been checked.
    pub fn list_changed(&mut self) {
        self.generation += 1;
    }

    /// Decides a `tools/call` for `tool` with these arguments.
    pub fn decide_call(&mut self, tool: &str, arguments: &Value) -> Decision {
        match self.contract(tool) {
            Ok(contract) => contract.judge(arguments),
            Err(refusal) => Decision::Refuse(refusal),
        }
    }

    /// The lock's definition of `tool` with this hash, under any profile.
    fn approved_definition(&self, tool: &str, hash: &str) -> Option<Arc<Json>> {
        self.pins.as_ref()?.profiles.values().find_map(|p| {
            p.tools
                .get(tool)
                .filter(|t| t.hash == hash)
                .map(|t| t.definition.clone())
        })
    }

    /// The compiled input schema of a definition, by its hash.
    fn schema(&mut self, hash: &str, definition: &Arc<Json>) -> Arc<ArgumentSchema> {
        if let Some(schema) = self.schemas.get(hash) {
            return schema.clone();
        }
        let schema = Arc::new(ArgumentSchema::for_tool(definition));
        self.schemas.insert(hash.to_string(), schema.clone());
        schema
    }
}

/// A server name for a message: quoted, or "no name".
fn quoted(name: Option<&str>) -> String {
    match name {
        Some(n) => format!("{:?}", escape_for_terminal(n)),
        None => "no name".into(),
    }
}

/// Replaces (or adds) an object member, dropping any repeats of it.
fn set_member(object: &mut Json, key: &str, value: Json) {
    if let Json::Object(members) = object {
        members.retain(|(k, _)| !k.eq_str(key));
        members.push((key.into(), value));
    }
}
