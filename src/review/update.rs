//! Turning checked servers into proposals a person approves, and approved proposals
//! into a new lock. Only approved proposals move a pin.

use crate::live::check::Checked;
use std::collections::{BTreeMap, HashMap};

use crate::base::json::Json;
use crate::contract::hash::HashedTool;
use crate::contract::surface::Kind;
use crate::records::lock::{Approval, LockedServer, LockedTool, Lockfile, PinnedServer, Reached};
use crate::servers::client::{Listing, Outcome, ServerSession};
use crate::servers::package::PackagePin;
use crate::verdict::drift::{ChangeKind, ServerChange, ToolChange, Verdict};

/// One change to the lock that needs approval. Every proposal but `DropServer`
/// concerns one server under one client profile.
#[derive(Debug, Clone)]
pub enum Proposal {
    /// A server seen for the first time: pin all of its pinnable tools at once.
    PinServer {
        server: String,
        profile: String,
        /// The tools to pin, as additions with their live definitions and findings.
        tools: Vec<ToolChange>,
        /// The server's `instructions`, which the pin's hash will stand for.
        instructions: Option<String>,
        /// What its entry launches, resolved: pinned with the tools.
        package: Option<PackagePin>,
    },
    /// A pinned server listed under a client profile the lock does not pin yet: pin
    /// that profile's whole listing. `changes` are the definitions no pinned profile
    /// approves (tools only this client is offered, or offered differently).
    PinProfile {
        server: String,
        profile: String,
        changes: Vec<ToolChange>,
        /// The named definitions of each kind in the listing (approved already or among
        /// `changes`), in [`Kind::ALL`]'s order.
        listed: Vec<(Kind, usize)>,
        instructions: Option<String>,
    },
    /// A kind (prompts, resource templates, resources) the lock does not pin yet for
    /// a pinned server under this profile: pin all of its listing.
    PinKind {
        server: String,
        profile: String,
        kind: Kind,
        /// Its definitions, as additions with their findings.
        items: Vec<ToolChange>,
    },
    /// A definition added, removed, renamed or changed on a pinned server.
    Tool {
        server: String,
        profile: String,
        change: ToolChange,
    },
    /// What the server says about itself (or how it is launched) changed.
    Metadata {
        server: String,
        profile: String,
        changes: Vec<ServerChange>,
        /// The live `instructions` text, shown when they changed.
        instructions: Option<String>,
    },
    /// A client profile the settings no longer select for a pinned server. `only`
    /// counts the tools no other profile approves, which lose their approval.
    DropProfile {
        server: String,
        profile: String,
        only: usize,
    },
    /// The config no longer has a pinned server.
    DropServer { server: String, tools: usize },
    /// What a server's entry launches, resolved now, differs from its package pin (or
    /// the lock has none yet). Only `package-changed` in `--accept` accepts it
    /// without asking.
    Package {
        server: String,
        old: Option<PackagePin>,
        new: PackagePin,
    },
}

impl Proposal {
    pub fn server(&self) -> &str {
        match self {
            Proposal::PinServer { server, .. }
            | Proposal::PinProfile { server, .. }
            | Proposal::PinKind { server, .. }
            | Proposal::Tool { server, .. }
            | Proposal::Metadata { server, .. }
            | Proposal::DropProfile { server, .. }
            | Proposal::DropServer { server, .. }
            | Proposal::Package { server, .. } => server,
        }
    }

    /// The client profile it concerns (none for a whole server's removal).
    pub fn profile(&self) -> Option<&str> {
        match self {
            Proposal::PinServer { profile, .. }
            | Proposal::PinProfile { profile, .. }
            | Proposal::PinKind { profile, .. }
            | Proposal::Tool { profile, .. }
            | Proposal::Metadata { profile, .. }
            | Proposal::DropProfile { profile, .. } => Some(profile),
            Proposal::DropServer { .. } | Proposal::Package { .. } => None,
        }
    }
}

/// What `update` could not act on, with why.
#[derive(Debug, Clone)]
pub struct Held {
    pub server: String,
    pub profile: String,
    pub verdict: Verdict,
    pub reason: String,
    /// Held because the server sent one of its secrets, which never go in the lock.
    pub secret: bool,
}

/// What `update` found: changes to ask about, servers it must leave alone, and live
/// tools that can never be pinned.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// In server order.
    pub proposals: Vec<Proposal>,
    pub held: Vec<Held>,
    /// (server, change) for tools with a `problem`.
    pub unpinnable: Vec<(String, ToolChange)>,
    /// (server, why) for packages that could not be resolved: their pins are left as
    /// they are.
    pub package_errors: Vec<(String, String)>,
}

/// Adds a package proposal for each pinned server whose entry resolves to something
/// other than its pin, after that server's other proposals; a server being pinned
/// for the first time gets its package in its `PinServer` proposal. Any server whose
/// package did not resolve is recorded in `package_errors`.
pub fn add_package_proposals(
    plan: &mut Plan,
    lock: &Lockfile,
    resolved: &BTreeMap<String, PackagePin>,
) {
    for (server, new) in resolved {
        let unresolved = matches!(
            new.package,
            crate::servers::package::Package::Unresolved { .. }
        );
        if let crate::servers::package::Package::Unresolved { reason } = &new.package {
            plan.package_errors.push((server.clone(), reason.clone()));
        }
        // A new server's package is pinned with its tools, in the same review.
        let mut being_pinned = false;
        for p in &mut plan.proposals {
            if let Proposal::PinServer {
                server: s, package, ..
            } = p
                && s == server
            {
                *package = Some(new.clone());
                being_pinned = true;
            }
        }
        // A server pinned now records that its package is not, so verify and the guard
        // never read the missing pin as "from before packages were pinned"; a pin
        // already in the lock stays as it is.
        if being_pinned || unresolved {
            continue;
        }
        let Some(old) = lock.servers.get(server).map(|s| s.package.clone()) else {
            continue;
        };
        if old.as_ref() == Some(new) {
            continue;
        }
        // A closure that could not be resolved this time leaves the pinned one as it is.
        if new.closure.is_none()
            && old
                .as_ref()
                .is_some_and(|o| o.package == new.package && o.launcher == new.launcher)
        {
            continue;
        }
        let at = plan
            .proposals
            .iter()
            .rposition(|p| p.server() == server)
            .map_or(plan.proposals.len(), |i| i + 1);
        plan.proposals.insert(
            at,
            Proposal::Package {
                server: server.clone(),
                old,
                new: new.clone(),
            },
        );
    }
}

/// The plan for every difference between the lock and the checked servers.
/// `dropped` names pinned servers the config no longer has. With `drop_unselected`,
/// a checked server's pinned profiles that were not listed this run are proposed
/// for removal (not when one profile was picked for the run).
pub fn plan(
    checked: &[Checked],
    lock: &Lockfile,
    dropped: &[String],
    drop_unselected: bool,
) -> Plan {
    let mut out = Vec::new();
    let mut held = Vec::new();
    let mut unpinnable = Vec::new();
    for c in checked {
        let name = &c.spec.name;
        let profile = &c.profile.name;
        let Some((session, listing)) = complete(c) else {
            held.push(Held {
                server: name.clone(),
                profile: profile.clone(),
                verdict: c.report.verdict,
                reason: c.report.error.clone().unwrap_or_default(),
                secret: false,
            });
            continue;
        };
        // Secrets never go in the lock: a server that sends one of its own is left as
        // it is pinned, and the others go on.
        let items = Kind::ALL.into_iter().flat_map(|kind| {
            listing
                .kind(kind)
                .into_iter()
                .flatten()
                .map(move |t| (kind, t))
        });
        let leaked = std::iter::once(("its server info".to_string(), &session.server_info))
            .chain(items.map(|(kind, t)| {
                let shown = t.name.as_deref().unwrap_or("(no name)");
                (
                    format!("{} {:?}", kind.noun(), c.secrets.redact(shown)),
                    &*t.definition,
                )
            }))
            .find_map(|(what, json)| c.secrets.find_in_json(json).map(|var| (what, var)));
        if let Some((what, var)) = leaked {
            held.push(Held {
                server: name.clone(),
                profile: profile.clone(),
                verdict: c.report.verdict,
                reason: format!(
                    "it sent the value of {var} in {what}, and secrets never go in the lock"
                ),
                secret: true,
            });
            continue;
        }
        let (good, bad): (Vec<&ToolChange>, Vec<&ToolChange>) =
            c.report.changes.iter().partition(|t| t.is_pinnable());
        unpinnable.extend(bad.into_iter().map(|t| (name.clone(), t.clone())));
        if !lock.servers.contains_key(name) {
            out.push(Proposal::PinServer {
                server: name.clone(),
                profile: profile.clone(),
                tools: good.into_iter().cloned().collect(),
                instructions: c.report.instructions.clone(),
                package: None,
            });
            continue;
        }
        if !c.report.profile_pinned {
            let changes: Vec<ToolChange> = good.into_iter().cloned().collect();
            let listed: Vec<(Kind, usize)> = Kind::ALL
                .into_iter()
                .map(|k| {
                    let named = listing
                        .kind(k)
                        .map_or(0, |items| items.iter().filter(|t| t.name.is_some()).count());
                    (k, named)
                })
                .collect();
            // Instructions another profile approved need no second reading.
            let new_instructions = c
                .report
                .server_changes
                .iter()
                .any(|change| change.field == "instructions");
            out.push(Proposal::PinProfile {
                server: name.clone(),
                profile: profile.clone(),
                listed,
                changes,
                instructions: c.report.instructions.clone().filter(|_| new_instructions),
            });
            continue;
        }
        let meta = c.report.server_changes.clone();
        if !meta.is_empty() {
            out.push(Proposal::Metadata {
                server: name.clone(),
                profile: profile.clone(),
                changes: meta,
                instructions: c.report.instructions.clone(),
            });
        }
        for change in good {
            out.push(Proposal::Tool {
                server: name.clone(),
                profile: profile.clone(),
                change: change.clone(),
            });
        }
        // Kinds the lock does not pin yet for this server (a lock from before they
        // were pinned): shown whole and pinned on approval.
        for kind in &c.report.not_pinned_yet {
            out.push(Proposal::PinKind {
                server: name.clone(),
                profile: profile.clone(),
                kind: *kind,
                items: c
                    .report
                    .pending
                    .iter()
                    .filter(|p| p.kind == *kind && p.is_pinnable())
                    .cloned()
                    .collect(),
            });
        }
    }
    if drop_unselected {
        let mut servers: Vec<&str> = checked.iter().map(|c| c.spec.name.as_str()).collect();
        servers.dedup();
        for server in servers {
            let Some(pins) = lock.servers.get(server) else {
                continue;
            };
            let listed: Vec<&str> = checked
                .iter()
                .filter(|c| c.spec.name == server)
                .map(|c| c.profile.name.as_str())
                .collect();
            for (profile, pin) in &pins.profiles {
                if listed.contains(&profile.as_str()) {
                    continue;
                }
                let others: std::collections::BTreeSet<&str> = pins
                    .profiles
                    .iter()
                    .filter(|(p, _)| *p != profile)
                    .flat_map(|(_, l)| l.tools.keys().map(String::as_str))
                    .collect();
                out.push(Proposal::DropProfile {
                    server: server.to_string(),
                    profile: profile.clone(),
                    only: pin
                        .tools
                        .keys()
                        .filter(|t| !others.contains(t.as_str()))
                        .count(),
                });
            }
        }
    }
    for server in dropped {
        if let Some(pin) = lock.servers.get(server) {
            out.push(Proposal::DropServer {
                server: server.clone(),
                tools: pin.tool_names().len(),
            });
        }
    }
    Plan {
        proposals: out,
        held,
        unpinnable,
        package_errors: Vec::new(),
    }
}

fn complete(c: &Checked) -> Option<(&ServerSession, &Listing)> {
    match &c.fetched.outcome {
        Outcome::Complete { session, listing } => Some((session, listing)),
        _ => None,
    }
}

/// The pins of a listing of one kind: every definition with a key listed once and a
/// hash.
fn pins_of(items: &[HashedTool]) -> BTreeMap<String, LockedTool> {
    let mut counts: BTreeMap<&str, usize> = BTreeMap::new();
    for item in items {
        if let Some(key) = &item.name {
            *counts.entry(key).or_default() += 1;
        }
    }
    items
        .iter()
        .filter_map(|item| {
            let key = item.name.as_ref()?;
            let hash = item.hash.as_ref().ok()?;
            (counts[key.as_str()] == 1).then(|| {
                (
                    key.clone(),
                    LockedTool {
                        hash: hash.clone(),
                        definition: item.definition.clone(),
                    },
                )
            })
        })
        .collect()
}

/// A listing's definitions by key and hash.
type ByKeyAndHash<'a> = HashMap<(&'a str, &'a str), &'a HashedTool>;

/// The lock with the accepted proposals applied. A profile is dropped last, and never
/// the last one a server has.
pub fn apply(lock: &Lockfile, checked: &[Checked], accepted: &[Proposal]) -> Lockfile {
    let mut next = lock.clone();
    let mut drops = Vec::new();
    // Each listing's definitions by key and hash, made the first time a change to
    // one of them is applied: many changes then cost a lookup each, not a scan.
    let mut indexes: HashMap<(usize, Kind), ByKeyAndHash> = HashMap::new();
    for proposal in accepted {
        match proposal {
            Proposal::DropServer { server, .. } => {
                next.servers.remove(server);
                continue;
            }
            Proposal::DropProfile {
                server, profile, ..
            } => {
                drops.push((server, profile));
                continue;
            }
            Proposal::Package { server, new, .. } => {
                if let Some(pins) = next.servers.get_mut(server) {
                    pins.package = Some(new.clone());
                }
                continue;
            }
            _ => {}
        }
        let profile = proposal.profile().unwrap_or_default();
        let Some((at, c)) = checked
            .iter()
            .enumerate()
            .find(|(_, c)| c.spec.name == proposal.server() && c.profile.name == profile)
        else {
            continue;
        };
        let Some((session, listing)) = complete(c) else {
            continue;
        };
        match proposal {
            Proposal::PinServer { server, .. } | Proposal::PinProfile { server, .. } => {
                let mut pin = new_pin(c, session);
                pin.tools = pins_of(&listing.tools);
                for kind in [Kind::Prompt, Kind::ResourceTemplate, Kind::Resource] {
                    *pin.items_mut(kind) = listing.kind(kind).map(pins_of);
                }
                match next.servers.get_mut(server) {
                    Some(pins) => {
                        // One launch per server: every profile records the one used now.
                        for other in pins.profiles.values_mut() {
                            other.reached = pin.reached.clone();
                        }
                        pins.profiles.insert(pin.profile.clone(), pin);
                    }
                    None => {
                        next.servers
                            .insert(server.clone(), PinnedServer::single(pin));
                    }
                }
                if let Proposal::PinServer {
                    package: Some(package),
                    ..
                } = proposal
                    && let Some(pins) = next.servers.get_mut(server)
                {
                    pins.package = Some(package.clone());
                }
            }
            Proposal::PinKind { server, kind, .. } => {
                if let Some(pin) = next
                    .servers
                    .get_mut(server)
                    .and_then(|s| s.profiles.get_mut(profile))
                    && let Some(items) = listing.kind(*kind)
                {
                    *pin.items_mut(*kind) = Some(pins_of(items));
                }
            }
            Proposal::Tool { server, change, .. } => {
                let Some(pin) = next
                    .servers
                    .get_mut(server)
                    .and_then(|s| s.profiles.get_mut(profile))
                else {
                    continue;
                };
                let items = match change.kind {
                    Kind::Tool => &mut pin.tools,
                    kind => pin.items_mut(kind).get_or_insert_default(),
                };
                // The pin is made from the listing as sent, not from the (redacted)
                // report: the definition the report names, with the hash it shows.
                let live = listing.kind(change.kind).and_then(|all| {
                    let index = indexes.entry((at, change.kind)).or_insert_with(|| {
                        let mut index = HashMap::new();
                        for t in all {
                            if let (Some(name), Ok(hash)) = (&t.name, &t.hash) {
                                // The first of a repeated key is the one found.
                                index.entry((name.as_str(), hash.as_str())).or_insert(t);
                            }
                        }
                        index
                    });
                    index
                        .get(&(change.tool.as_str(), change.live_hash.as_deref()?))
                        .copied()
                });
                if change.change == ChangeKind::Renamed
                    && change.kind != Kind::ResourceTemplate
                    && let Some(old) = &change.renamed_from
                {
                    items.remove(old);
                }
                match (change.change, live) {
                    (ChangeKind::Removed, _) => {
                        items.remove(&change.tool);
                    }
                    (_, Some(item)) => {
                        items.insert(
                            change.tool.clone(),
                            LockedTool {
                                hash: change.live_hash.clone().unwrap_or_default(),
                                definition: item.definition.clone(),
                            },
                        );
                    }
                    _ => {}
                }
            }
            Proposal::Metadata { server, .. } => {
                let fresh = new_pin(c, session);
                if let Some(pins) = next.servers.get_mut(server) {
                    for other in pins.profiles.values_mut() {
                        other.reached = fresh.reached.clone();
                    }
                    if let Some(pin) = pins.profiles.get_mut(profile) {
                        *pin = LockedServer {
                            tools: std::mem::take(&mut pin.tools),
                            prompts: pin.prompts.take(),
                            resource_templates: pin.resource_templates.take(),
                            resources: pin.resources.take(),
                            ..fresh
                        };
                    }
                }
            }
            Proposal::DropServer { .. }
            | Proposal::DropProfile { .. }
            | Proposal::Package { .. } => {}
        }
    }
    for (server, profile) in drops {
        if let Some(pins) = next.servers.get_mut(server)
            && pins.profiles.len() > 1
        {
            pins.profiles.remove(profile);
        }
    }
    next
}

/// Records in `next` how each server whose pins moved from `old` was approved:
/// `approvals` holds, per accepted proposal, its server and how it was accepted. A
/// server with changes approved in several ways records the one a person saw least
/// ([`Approval::looked_at`]): the lock never says a person looked when one did not. A
/// server whose pins did not move keeps the approval it had (read from `old`); call
/// this last, after everything else that changes `next`.
pub fn record_approvals(old: &Lockfile, next: &mut Lockfile, approvals: &[(String, Approval)]) {
    for (name, pins) in &mut next.servers {
        let Some(how) = approvals
            .iter()
            .filter(|(server, _)| server == name)
            .map(|(_, how)| *how)
            .min_by_key(|how| how.looked_at())
        else {
            continue;
        };
        let moved = old
            .servers
            .get(name)
            .is_none_or(|was| was.profiles != pins.profiles || was.package != pins.package);
        if moved {
            pins.approved = Some(how);
        }
    }
}

/// A definition an unattended run does not pin: screening found something in it the
/// policy fails (`screen-high` by default).
#[derive(Debug, Clone)]
pub struct Withheld {
    pub server: String,
    pub profile: String,
    pub kind: Kind,
    pub key: String,
    /// "sensitive-read at /description, concealment at /description"
    pub findings: String,
    /// Part of a whole listing being pinned (a first pin): the pin is made without it.
    /// Otherwise the change itself is not accepted and the old pin (if any) stays.
    pub from_listing: bool,
}

fn failing(change: &ToolChange) -> Option<String> {
    let found: Vec<String> = change
        .screening
        .iter()
        .filter(|f| f.action == crate::base::action::Action::Fail)
        .map(|f| format!("{} ({}) at {}", f.rule, f.severity, f.pointer))
        .collect();
    (!found.is_empty()).then(|| found.join(", "))
}

/// Takes out of the accepted proposals every definition whose screening the policy
/// fails: what `--yes` and the policy's `accept` must never pin without a person. A
/// change is rejected (its old pin stays); a definition of a whole listing is named,
/// for [`withhold`] to leave out of the pin.
pub fn screened_out(proposals: &[Proposal], decisions: &mut [bool]) -> Vec<Withheld> {
    let mut out = Vec::new();
    for (p, yes) in proposals.iter().zip(decisions.iter_mut()) {
        if !*yes {
            continue;
        }
        let (server, profile) = (p.server().to_string(), p.profile().unwrap_or_default());
        let withheld = |c: &ToolChange, findings: String, from_listing: bool| Withheld {
            server: server.clone(),
            profile: profile.to_string(),
            kind: c.kind,
            key: c.tool.clone(),
            findings,
            from_listing,
        };
        match p {
            Proposal::Tool { change, .. } => {
                if let Some(findings) = failing(change) {
                    *yes = false;
                    out.push(withheld(change, findings, false));
                }
            }
            Proposal::PinServer { tools: items, .. }
            | Proposal::PinProfile { changes: items, .. }
            | Proposal::PinKind { items, .. } => {
                for c in items {
                    if let Some(findings) = failing(c) {
                        out.push(withheld(c, findings, true));
                    }
                }
            }
            _ => {}
        }
    }
    out
}

/// Leaves the withheld definitions of whole listings out of their new pins.
pub fn withhold(lock: &mut Lockfile, withheld: &[Withheld]) {
    for w in withheld.iter().filter(|w| w.from_listing) {
        if let Some(pin) = lock
            .servers
            .get_mut(&w.server)
            .and_then(|s| s.profiles.get_mut(&w.profile))
        {
            match w.kind {
                Kind::Tool => {
                    pin.tools.remove(&w.key);
                }
                kind => {
                    if let Some(items) = pin.items_mut(kind) {
                        items.remove(&w.key);
                    }
                }
            }
        }
    }
}

fn new_pin(c: &Checked, session: &ServerSession) -> LockedServer {
    LockedServer {
        name: c.spec.name.clone(),
        profile: c.profile.name.clone(),
        // Recording the transport used lets verify go straight to it.
        reached: Reached::as_used(&c.spec, session),
        protocol_version: session.protocol_version.clone(),
        client_info: Json::from_value(&session.client_info),
        client_capabilities: Json::from_value(&session.client_capabilities),
        server_info: session.server_info.clone(),
        list_changed: session.list_changed,
        instructions_hash: session.instructions_hash.clone(),
        tools: Default::default(),
        prompts: None,
        resource_templates: None,
        resources: None,
    }
}
