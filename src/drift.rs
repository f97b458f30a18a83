//! Comparing what a server said with what the lock pins: verdicts and changes.

use std::collections::BTreeMap;

use serde::Serialize;

use crate::action::Action;
use crate::classify::{Class, Finding};
use crate::client::{Fetched, Outcome, ServerSession};
use crate::config::ServerSpec;
use crate::hash::HashedTool;
use crate::json::Json;
use crate::lock::{LockedServer, Lockfile, PinnedServer, Reached};
use crate::secrets::Secrets;
use crate::surface::Kind;
use crate::text::count;

/// One verdict per server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A complete listing was read and matches the lock exactly.
    Converged,
    /// The live listing differs from the lock.
    Stale,
    /// The listing started but did not finish; nothing may be concluded.
    Incomplete,
    /// No evidence could be gathered.
    Unverifiable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Converged => "converged",
            Verdict::Stale => "stale",
            Verdict::Incomplete => "incomplete",
            Verdict::Unverifiable => "unverifiable",
        }
    }
}

/// What happened to a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
    /// Removed under one key and added under another with the definition otherwise
    /// equal (for a resource template, whose key is its `uriTemplate`: the display
    /// `name` changed and nothing else). Still breaking for old callers.
    Renamed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::Renamed => "renamed",
        }
    }
}

/// Which part of a definition changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Part {
    #[serde(rename = "description")]
    Description,
    #[serde(rename = "inputSchema")]
    InputSchema,
    #[serde(rename = "outputSchema")]
    OutputSchema,
    #[serde(rename = "annotations")]
    Annotations,
    /// Anything else: name, title, icons, `_meta`, `execution`, unknown members.
    #[serde(rename = "other")]
    Other,
}

impl Part {
    fn of_member(name: &str) -> Part {
        match name {
            "description" => Part::Description,
            "inputSchema" => Part::InputSchema,
            "outputSchema" => Part::OutputSchema,
            "annotations" => Part::Annotations,
            _ => Part::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Part::Description => "description",
            Part::InputSchema => "inputSchema",
            Part::OutputSchema => "outputSchema",
            Part::Annotations => "annotations",
            Part::Other => "other",
        }
    }
}

/// One listed definition (a tool, or a prompt, template or resource) that differs
/// from its pin.
#[derive(Debug, Clone, Serialize)]
pub struct ToolChange {
    /// What kind of definition it is.
    pub kind: Kind,
    /// Its key: a tool's or prompt's name, a template's `uriTemplate`, a resource's
    /// `uri`.
    pub tool: String,
    pub change: ChangeKind,
    /// For `renamed`: the old key (a template's old display name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// For `changed`: the parts that differ.
    pub parts: Vec<Part>,
    pub pinned_hash: Option<String>,
    /// `None` when the live definition has no hash (see `problem`).
    pub live_hash: Option<String>,
    /// Why the live definition cannot be pinned, if it cannot.
    pub problem: Option<String>,
    /// The worst class among `findings` (set by the policy as it evaluates the report).
    pub class: Option<Class>,
    /// What the policy does with this change.
    pub action: Action,
    /// What changed and what it means, worst first.
    pub findings: Vec<Finding>,
    #[serde(skip)]
    pub pinned: Option<std::sync::Arc<Json>>,
    #[serde(skip)]
    pub live: Option<std::sync::Arc<Json>>,
}

impl ToolChange {
    /// A change of this kind to the definition keyed `key`, with nothing else known
    /// yet (no hashes, definitions, findings).
    pub fn new(kind: Kind, key: String, change: ChangeKind) -> Self {
        ToolChange {
            kind,
            tool: key,
            change,
            renamed_from: None,
            parts: Vec::new(),
            pinned_hash: None,
            live_hash: None,
            problem: None,
            class: None,
            action: Action::default(),
            findings: Vec::new(),
            pinned: None,
            live: None,
        }
    }

    /// Whether the live side could become a pin (or the change is a removal).
    pub fn is_pinnable(&self) -> bool {
        self.problem.is_none()
    }
}

/// A difference in what the server says about itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerChange {
    /// `instructions`, `server_identity`, `server_info`, `protocol_version`,
    /// `list_changed`, `client_capabilities`, `client_info`, `launch` (command, args,
    /// env names), or `server` (the whole server is gone from the config).
    pub field: &'static str,
    pub pinned: Option<String>,
    pub live: Option<String>,
    /// Whether this alone makes the server stale (instructions and identity do; a
    /// version bump with the same tools does not).
    pub drift: bool,
    /// For a drift: semantic (instructions) or authority (identity).
    pub class: Option<Class>,
    /// What the policy does with it (drifts only).
    pub action: Option<Action>,
}

/// The comparison of one server with its pin.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub name: String,
    /// The client profile the server was listed under.
    pub profile: String,
    /// Whether the lock pins the server under this profile. A server pinned under
    /// other profiles only is compared with every definition they approve.
    pub profile_pinned: bool,
    pub transport: String,
    pub verdict: Verdict,
    /// Tools in the live listing, when one was read completely.
    pub tools: Option<usize>,
    /// Prompts, resource templates and resources in the live listing, when listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_templates: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<usize>,
    pub changes: Vec<ToolChange>,
    pub server_changes: Vec<ServerChange>,
    /// Whether the lock pins this server at all.
    pub pinned: bool,
    /// The most serious action among the changes (set by the policy); a server the
    /// lock does not pin fails.
    pub action: Action,
    pub error: Option<String>,
    /// The server's last stderr lines, when it failed.
    pub stderr: Vec<String>,
    /// Lines on stdout that were not JSON-RPC.
    pub ignored_lines: usize,
    pub elapsed_ms: u64,
    /// The live `instructions` text, for a person to read (reports for machines carry
    /// only the hashes, as the lock does).
    #[serde(skip)]
    pub instructions: Option<String>,
    /// Kinds the server lists that the lock does not pin yet for it (a lock from
    /// before they were pinned): a notice, never a failure, until `update` pins them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_pinned_yet: Vec<Kind>,
    /// Their definitions, as additions, for `update` to show.
    #[serde(skip)]
    pub pending: Vec<ToolChange>,
    /// Tools the server lists that the host's config hides from its agent
    /// (`includeTools`, `disabled_tools`, …): not pinned, never judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filtered: Vec<String>,
    /// What the entry launches against the lock's package pin (stdio servers, when
    /// checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<crate::package::PackageCheck>,
}

impl ServerReport {
    /// "15 tools, 4 prompts, 2 templates": what the live listing held, each kind that
    /// was listed (none when no listing was read completely).
    pub fn listed_text(&self) -> Option<String> {
        let tools = self.tools?;
        let mut parts = vec![count(tools, "tool")];
        for (n, kind) in [
            (self.prompts, Kind::Prompt),
            (self.resource_templates, Kind::ResourceTemplate),
            (self.resources, Kind::Resource),
        ] {
            if let Some(n) = n.filter(|n| *n > 0) {
                parts.push(count(n, kind.noun()));
            }
        }
        Some(parts.join(", "))
    }

    /// Replaces this server's secrets inside every string that can carry one: server
    /// text (tool names, definitions, findings, instructions). The
    /// report's own words and structure stay as they are, so every format renders valid
    /// output from it.
    pub fn redact(&mut self, secrets: &Secrets) {
        if secrets.is_empty() {
            return;
        }
        // `error` and `stderr` were redacted where they were read (the client redacts
        // the server's text inside its messages, never the command as written).
        if let Some(text) = &mut self.instructions {
            secrets.redact_in_place(text);
        }
        for name in &mut self.filtered {
            secrets.redact_in_place(name);
        }
        for change in self.changes.iter_mut().chain(self.pending.iter_mut()) {
            secrets.redact_in_place(&mut change.tool);
            if let Some(from) = &mut change.renamed_from {
                secrets.redact_in_place(from);
            }
            if let Some(problem) = &mut change.problem {
                secrets.redact_in_place(problem);
            }
            for finding in &mut change.findings {
                secrets.redact_in_place(&mut finding.pointer);
                secrets.redact_in_place(&mut finding.reason);
                for side in [&mut finding.before, &mut finding.after]
                    .into_iter()
                    .flatten()
                {
                    secrets.redact_value(side);
                }
            }
            // Definitions are shared with the listing (pins are made from that): a
            // definition with a secret in it gets a redacted copy of its own.
            for side in [&mut change.pinned, &mut change.live].into_iter().flatten() {
                if secrets.occurs_in_json(side) {
                    secrets.redact_json(std::sync::Arc::make_mut(side));
                }
            }
        }
        for change in &mut self.server_changes {
            for side in [&mut change.pinned, &mut change.live].into_iter().flatten() {
                secrets.redact_in_place(side);
            }
        }
    }

    /// A report for a server that could not be checked at all.
    pub fn unverifiable(name: &str, transport: &str, error: String) -> Self {
        ServerReport {
            name: name.into(),
            profile: String::new(),
            profile_pinned: true,
            transport: transport.into(),
            verdict: Verdict::Unverifiable,
            tools: None,
            prompts: None,
            resource_templates: None,
            resources: None,
            changes: Vec::new(),
            server_changes: Vec::new(),
            pinned: true,
            action: Action::default(),
            error: Some(error),
            stderr: Vec::new(),
            ignored_lines: 0,
            elapsed_ms: 0,
            instructions: None,
            not_pinned_yet: Vec::new(),
            pending: Vec::new(),
            filtered: Vec::new(),
            package: None,
        }
    }

    /// A report for a server the lock pins but the config no longer has.
    pub fn dropped_from_config(pinned: &LockedServer, transport: &str) -> Self {
        let changes = Kind::ALL
            .into_iter()
            .flat_map(|kind| {
                pinned
                    .items(kind)
                    .into_iter()
                    .flatten()
                    .map(move |(name, item)| ToolChange {
                        pinned_hash: Some(item.hash.clone()),
                        pinned: Some(item.definition.clone()),
                        ..ToolChange::new(kind, name.clone(), ChangeKind::Removed)
                    })
            })
            .collect();
        ServerReport {
            error: Some(
                "pinned in the lock but not in the config; run `mcp-lock update` to drop it".into(),
            ),
            verdict: Verdict::Stale,
            changes,
            server_changes: vec![ServerChange {
                field: "server",
                pinned: Some(pinned.name.clone()),
                live: None,
                drift: true,
                class: Some(Class::Breaking),
                action: None,
            }],
            profile: pinned.profile.clone(),
            ..ServerReport::unverifiable(&pinned.name, transport, String::new())
        }
    }
}

/// What a listing under one profile is compared with.
#[derive(Debug, Clone, Copy)]
pub struct Pinned<'a> {
    /// The profile's own pins, or (not `exact`) every approved tool of the server.
    pub view: &'a LockedServer,
    /// Everything the lock pins for the server: a definition approved under any
    /// profile is approved.
    pub server: &'a PinnedServer,
    /// Whether `view` is this profile's own listing. Only then can a tool it does not
    /// list be a removal: another client may simply not be offered it.
    pub exact: bool,
}

impl<'a> Pinned<'a> {
    /// A server pinned under exactly this one listing.
    pub fn exact(view: &'a LockedServer, server: &'a PinnedServer) -> Self {
        Pinned {
            view,
            server,
            exact: true,
        }
    }
}

/// Compares a fetch under `profile` with the server's pins (`None`: never pinned).
pub fn compare(
    spec: &ServerSpec,
    pinned: Option<Pinned<'_>>,
    profile: &str,
    fetched: &Fetched,
) -> ServerReport {
    let mut report = ServerReport {
        name: spec.name.clone(),
        profile: profile.to_string(),
        profile_pinned: pinned.is_some_and(|p| p.exact),
        transport: spec.transport_name().into(),
        verdict: Verdict::Converged,
        tools: None,
        prompts: None,
        resource_templates: None,
        resources: None,
        changes: Vec::new(),
        server_changes: Vec::new(),
        pinned: pinned.is_some(),
        action: Action::default(),
        error: None,
        stderr: Vec::new(),
        ignored_lines: fetched.ignored_lines,
        elapsed_ms: fetched.elapsed.as_millis() as u64,
        instructions: None,
        not_pinned_yet: Vec::new(),
        pending: Vec::new(),
        filtered: Vec::new(),
        package: None,
    };
    let (session, listing) = match &fetched.outcome {
        Outcome::Unverifiable { error } => {
            report.verdict = Verdict::Unverifiable;
            report.error = Some(error.clone());
            report.stderr = fetched.stderr_tail.clone();
            return report;
        }
        Outcome::Incomplete { listing, error, .. } => {
            report.verdict = Verdict::Incomplete;
            report.error = Some(format!(
                "{error} (after {}, {})",
                count(listing.pages, "page"),
                count(listing.tools.len(), "tool")
            ));
            report.stderr = fetched.stderr_tail.clone();
            return report;
        }
        Outcome::Complete { session, listing } => (session, listing),
    };
    report.tools = Some(listing.tools.len());
    report.prompts = listing.prompts.as_ref().map(Vec::len);
    report.resource_templates = listing.resource_templates.as_ref().map(Vec::len);
    report.resources = listing.resources.as_ref().map(Vec::len);
    report.instructions = session.instructions.clone();
    report.changes = tool_changes(pinned, &listing.tools);
    for kind in [Kind::Prompt, Kind::ResourceTemplate, Kind::Resource] {
        let Some(live) = listing.kind(kind) else {
            continue;
        };
        match pinned {
            Some(p) if p.view.items(kind).is_none() => {
                report.not_pinned_yet.push(kind);
                report.pending.extend(item_changes(kind, None, live));
            }
            _ => report.changes.extend(item_changes(kind, pinned, live)),
        }
    }
    match pinned {
        None => {
            report.error = Some("not pinned yet; run `mcp-lock update` to pin it".into());
            report.verdict = Verdict::Stale;
        }
        Some(pinned) => {
            report.server_changes = server_changes(pinned, session);
            if !pinned.exact {
                report.error = Some(format!(
                    "not pinned under client profile {profile:?} yet (the lock pins {}); judged against every definition approved for the server; run `mcp-lock update {} --client {profile}` to pin it",
                    pinned
                        .server
                        .profiles
                        .keys()
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(", "),
                    spec.name
                ));
            }
            let launch = Reached::as_used(spec, session);
            if launch != pinned.view.reached {
                report.server_changes.push(ServerChange {
                    field: "launch",
                    pinned: Some(pinned.view.reached.to_string()),
                    live: Some(launch.to_string()),
                    drift: false,
                    class: None,
                    action: None,
                });
            }
            if !report.changes.is_empty() || report.server_changes.iter().any(|c| c.drift) {
                report.verdict = Verdict::Stale;
            }
        }
    }
    report
}

/// Every tool difference between the pins and a complete live listing. A live
/// definition approved under any profile of the server is no change.
pub fn tool_changes(pinned: Option<Pinned<'_>>, live: &[HashedTool]) -> Vec<ToolChange> {
    item_changes(Kind::Tool, pinned, live)
}

/// Every difference of one kind between the pins and a complete live listing of it
/// (the pins of that kind must exist: a kind the lock does not pin yet is no change).
/// Definitions are paired by their kind's key; a removal and an addition whose
/// definitions are otherwise equal are one rename.
pub fn item_changes(
    kind: Kind,
    pinned: Option<Pinned<'_>>,
    live: &[HashedTool],
) -> Vec<ToolChange> {
    let noun = kind.noun();
    let mut by_name: BTreeMap<&str, Vec<&HashedTool>> = BTreeMap::new();
    let mut changes = Vec::new();
    for (index, tool) in live.iter().enumerate() {
        match &tool.name {
            Some(name) => by_name.entry(name).or_default().push(tool),
            None => changes.push(ToolChange {
                live_hash: tool.hash.as_ref().ok().cloned(),
                problem: Some(format!(
                    "it has no string {}, so it cannot be pinned",
                    kind.key_member()
                )),
                live: Some(tool.definition.clone()),
                ..ToolChange::new(
                    kind,
                    format!("({noun} #{} without a {})", index + 1, kind.key_member()),
                    ChangeKind::Added,
                )
            }),
        }
    }
    let empty = BTreeMap::new();
    let pins = pinned.and_then(|p| p.view.items(kind)).unwrap_or(&empty);
    let removals = pinned.is_none_or(|p| p.exact);
    for (name, pin) in pins {
        if removals && !by_name.contains_key(name.as_str()) {
            changes.push(ToolChange {
                pinned_hash: Some(pin.hash.clone()),
                pinned: Some(pin.definition.clone()),
                ..ToolChange::new(kind, name.clone(), ChangeKind::Removed)
            });
        }
    }
    for (name, copies) in by_name {
        let problem = (copies.len() > 1).then(|| {
            format!(
                "the server lists {} {} keyed {name:?}",
                copies.len(),
                kind.plural()
            )
        });
        changes.extend(item_change(kind, pinned, name, copies[0], problem));
    }
    pair_renames(kind, &mut changes);
    changes.sort_by(|a, b| a.tool.cmp(&b.tool));
    changes
}

/// Turns each removal and addition whose definitions are equal but for the key into
/// one rename (for a template, a `uriTemplate` moved with all else equal, which its
/// findings judge: authority when it widens); a template whose display `name` alone
/// changed is a rename too.
fn pair_renames(kind: Kind, changes: &mut Vec<ToolChange>) {
    use crate::classify::{canonical_except_key, is_template_rename};
    use std::collections::{HashMap, VecDeque};
    if kind == Kind::ResourceTemplate {
        for c in changes.iter_mut() {
            if let (ChangeKind::Changed, Some(a), Some(b)) = (c.change, &c.pinned, &c.live)
                && is_template_rename(a, b)
            {
                c.renamed_from = a.get("name").and_then(Json::as_str);
                c.change = ChangeKind::Renamed;
            }
        }
    }
    // Each removal takes the first addition left whose definition but for the key is
    // the same: additions are found by that canonical form, not compared pairwise.
    let mut additions: HashMap<String, VecDeque<usize>> = HashMap::new();
    let has_removal = changes.iter().any(|c| c.change == ChangeKind::Removed);
    if !has_removal {
        return;
    }
    for (j, c) in changes.iter().enumerate() {
        if c.change == ChangeKind::Added
            && c.problem.is_none()
            && let Some(form) = c
                .live
                .as_deref()
                .and_then(|d| canonical_except_key(kind, d))
        {
            additions.entry(form).or_default().push_back(j);
        }
    }
    if additions.is_empty() {
        return;
    }
    let mut taken = vec![false; changes.len()];
    for i in 0..changes.len() {
        if changes[i].change != ChangeKind::Removed {
            continue;
        }
        let Some(form) = changes[i]
            .pinned
            .as_deref()
            .and_then(|d| canonical_except_key(kind, d))
        else {
            continue;
        };
        let Some(j) = additions.get_mut(&form).and_then(VecDeque::pop_front) else {
            continue;
        };
        taken[j] = true;
        let added = &changes[j];
        let (tool, live_hash, live) = (
            added.tool.clone(),
            added.live_hash.clone(),
            added.live.clone(),
        );
        let removed = &mut changes[i];
        removed.renamed_from = Some(std::mem::replace(&mut removed.tool, tool));
        removed.change = ChangeKind::Renamed;
        removed.live_hash = live_hash;
        removed.live = live;
        removed.parts = vec![Part::Other];
    }
    let mut index = 0;
    changes.retain(|_| {
        index += 1;
        !taken[index - 1]
    });
}

/// How one live tool differs from the pins, if it does: the judgement verify makes of
/// each tool in a listing and the guard makes of each tool a client receives. `None`
/// when the definition is approved (under any profile of the server). `problem` says
/// why the tool cannot be pinned whatever its definition (listed twice).
pub fn tool_change(
    pinned: Option<Pinned<'_>>,
    name: &str,
    live: &HashedTool,
    problem: Option<String>,
) -> Option<ToolChange> {
    item_change(Kind::Tool, pinned, name, live, problem)
}

/// [`tool_change`] for a definition of any kind, by its key.
pub fn item_change(
    kind: Kind,
    pinned: Option<Pinned<'_>>,
    name: &str,
    live: &HashedTool,
    problem: Option<String>,
) -> Option<ToolChange> {
    let problem = problem.or_else(|| {
        live.hash
            .as_ref()
            .err()
            .map(|e| format!("its definition has no canonical form: {e}"))
    });
    let live_hash = live
        .hash
        .as_ref()
        .ok()
        .filter(|_| problem.is_none())
        .cloned();
    if let (Some(pinned), Some(hash)) = (pinned, &live_hash)
        && pinned.server.approves_item(kind, name, hash)
    {
        return None;
    }
    let pin = pinned
        .and_then(|p| p.view.items(kind))
        .and_then(|items| items.get(name));
    Some(ToolChange {
        parts: pin.map_or_else(Vec::new, |p| changed_parts(&p.definition, &live.definition)),
        pinned_hash: pin.map(|p| p.hash.clone()),
        live_hash,
        problem,
        pinned: pin.map(|p| p.definition.clone()),
        live: Some(live.definition.clone()),
        ..ToolChange::new(
            kind,
            name.to_string(),
            if pin.is_some() {
                ChangeKind::Changed
            } else {
                ChangeKind::Added
            },
        )
    })
}

/// The parts whose members differ, comparing each top-level member's canonical form.
pub fn changed_parts(pinned: &Json, live: &Json) -> Vec<Part> {
    let members = |j: &Json| -> BTreeMap<String, Option<String>> {
        match j {
            Json::Object(m) => m
                .iter()
                .map(|(k, v)| (k.to_string_lossy(), v.canonical().ok()))
                .collect(),
            _ => BTreeMap::new(),
        }
    };
    let (a, b) = (members(pinned), members(live));
    let mut parts: Vec<Part> = a
        .keys()
        .chain(b.keys())
        .filter(|k| {
            let (x, y) = (a.get(*k), b.get(*k));
            // A member with no canonical form never equals anything.
            x != y || matches!(x, Some(None))
        })
        .map(|k| Part::of_member(k))
        .collect();
    if parts.is_empty() && live.canonical().is_err() {
        parts.push(Part::Other);
    }
    parts.sort();
    parts.dedup();
    parts
}

/// Differences in what the server says about itself. Instructions approved under any
/// profile are no change; the client's own identity is compared only with its own
/// profile's pin.
pub fn server_changes(pins: Pinned<'_>, live: &ServerSession) -> Vec<ServerChange> {
    let pinned = pins.view;
    let mut changes = Vec::new();
    let mut push = |field, pinned: Option<String>, live: Option<String>, drift| {
        if pinned != live {
            let class = match field {
                "instructions" => Some(Class::Semantic),
                "server_identity" => Some(Class::Authority),
                _ => None,
            };
            changes.push(ServerChange {
                field,
                pinned,
                live,
                drift,
                class,
                action: None,
            });
        }
    };
    if !pins
        .server
        .approves_instructions(live.instructions_hash.as_deref())
    {
        push(
            "instructions",
            pinned.instructions_hash.clone(),
            live.instructions_hash.clone(),
            true,
        );
    }
    let name = |j: &Json| j.get("name").and_then(Json::as_str);
    push(
        "server_identity",
        name(&pinned.server_info),
        name(&live.server_info),
        true,
    );
    let pinned_info = pinned.server_info.canonical().ok();
    let live_info = live.server_info.canonical().ok();
    if name(&pinned.server_info) == name(&live.server_info) {
        push("server_info", pinned_info, live_info, false);
    }
    if !pins.exact {
        return changes;
    }
    push(
        "protocol_version",
        Some(pinned.protocol_version.clone()),
        Some(live.protocol_version.clone()),
        false,
    );
    push(
        "list_changed",
        Some(pinned.list_changed.to_string()),
        Some(live.list_changed.to_string()),
        false,
    );
    push(
        "client_capabilities",
        pinned.client_capabilities.canonical().ok(),
        Json::from_value(&live.client_capabilities).canonical().ok(),
        false,
    );
    push(
        "client_info",
        pinned.client_info.canonical().ok(),
        Json::from_value(&live.client_info).canonical().ok(),
        false,
    );
    changes
}

/// Compares two locks server by server and profile by profile, reading `new` as if
/// live servers had said it: the same classified view as a live check, for reviewing
/// a lock change. A profile new in `new` is compared with every definition `old`
/// approves for its server; one `new` dropped is reported with the tools that only
/// it approved.
pub fn compare_locks(old: &Lockfile, new: &Lockfile) -> Vec<ServerReport> {
    let names: std::collections::BTreeSet<&String> =
        old.servers.keys().chain(new.servers.keys()).collect();
    let mut reports = Vec::new();
    for name in names {
        match (old.servers.get(name), new.servers.get(name)) {
            (Some(pinned), None) => {
                for profile in pinned.profiles.values() {
                    reports.push(ServerReport {
                        error: Some("no longer in the newer lock".into()),
                        ..ServerReport::dropped_from_config(
                            profile,
                            profile.reached.transport_name(),
                        )
                    });
                }
            }
            (pinned, Some(server)) => {
                for listing in server.profiles.values() {
                    let mut report = compare_listing(pinned, listing);
                    if let Some(old) = pinned {
                        report.package = package_between(old, server);
                        if report.package.is_some() && report.verdict == Verdict::Converged {
                            report.verdict = Verdict::Stale;
                        }
                    }
                    reports.push(report);
                }
                if let Some(pinned) = pinned {
                    for (profile, gone) in &pinned.profiles {
                        if !server.profiles.contains_key(profile) {
                            reports.push(dropped_profile(gone, server));
                        }
                    }
                }
            }
            (None, None) => {}
        }
    }
    reports.sort_by(|a, b| (&a.name, &a.profile).cmp(&(&b.name, &b.profile)));
    reports
}

/// The package pin that moved between two locks, as a `changed` check (`None`: the
/// same pin, or the newer lock has none).
fn package_between(old: &PinnedServer, new: &PinnedServer) -> Option<crate::package::PackageCheck> {
    let now = new.package.as_ref()?;
    if old.package.as_ref() == Some(now) {
        return None;
    }
    Some(crate::package::PackageCheck {
        status: crate::package::PackageStatus::Changed,
        kind: now.package.kind(),
        launcher: now.launcher.clone(),
        pinned: old.package.as_ref().map(|p| p.to_string()),
        live: Some(now.to_string()),
        message: match &old.package {
            Some(p) => format!("the newer lock pins {now}; the older pinned {p}"),
            None => format!("the newer lock pins {now}; the older pinned no package"),
        },
        action: Action::default(),
        elapsed_ms: 0,
    })
}

/// One profile's listing in the newer lock, read as a live check against the older.
fn compare_listing(pinned: Option<&PinnedServer>, listing: &LockedServer) -> ServerReport {
    let name = &listing.name;
    let live: Vec<HashedTool> = listing
        .tools
        .values()
        .map(|t| HashedTool::shared(t.definition.clone()))
        .collect();
    let exact = pinned.and_then(|p| p.profiles.get(&listing.profile));
    let union = pinned
        .filter(|_| exact.is_none())
        .map(|p| p.union(&listing.profile));
    let pins = pinned.map(|server| Pinned {
        view: exact.or(union.as_ref()).expect("one of the two"),
        server,
        exact: exact.is_some(),
    });
    let mut report = ServerReport {
        verdict: Verdict::Converged,
        tools: Some(live.len()),
        pinned: pinned.is_some(),
        profile: listing.profile.clone(),
        profile_pinned: exact.is_some(),
        error: None,
        changes: tool_changes(pins, &live),
        ..ServerReport::unverifiable(name, listing.reached.transport_name(), String::new())
    };
    for kind in [Kind::Prompt, Kind::ResourceTemplate, Kind::Resource] {
        let Some(items) = listing.items(kind) else {
            continue;
        };
        let live: Vec<HashedTool> = items
            .values()
            .map(|t| HashedTool::shared_keyed(t.definition.clone(), kind.key_member()))
            .collect();
        *match kind {
            Kind::Prompt => &mut report.prompts,
            Kind::ResourceTemplate => &mut report.resource_templates,
            _ => &mut report.resources,
        } = Some(live.len());
        match pins {
            Some(p) if p.view.items(kind).is_none() => report.not_pinned_yet.push(kind),
            _ => report.changes.extend(item_changes(kind, pins, &live)),
        }
    }
    match pins {
        None => report.error = Some("new in the newer lock".into()),
        Some(pins) => {
            if !pins.exact {
                report.error = Some(format!(
                    "client profile {:?} is new in the newer lock",
                    listing.profile
                ));
            }
            let session = ServerSession {
                protocol_version: listing.protocol_version.clone(),
                transport: listing.reached.transport_name().to_string(),
                server_info: listing.server_info.clone(),
                list_changed: listing.list_changed,
                instructions_hash: listing.instructions_hash.clone(),
                // A lock keeps only the hash.
                instructions: None,
                client_capabilities: listing.client_capabilities.to_value(),
                client_info: listing.client_info.to_value(),
                oauth_issuer: match &listing.reached {
                    Reached::Remote { oauth_issuer, .. } => oauth_issuer.clone(),
                    Reached::Stdio { .. } => None,
                },
            };
            report.server_changes = server_changes(pins, &session);
            if pins.view.reached != listing.reached {
                report.server_changes.push(ServerChange {
                    field: "launch",
                    pinned: Some(pins.view.reached.to_string()),
                    live: Some(listing.reached.to_string()),
                    drift: false,
                    class: None,
                    action: None,
                });
            }
        }
    }
    if !report.changes.is_empty()
        || report.server_changes.iter().any(|c| c.drift)
        || !report.profile_pinned
    {
        report.verdict = Verdict::Stale;
    }
    report
}

/// A profile the newer lock no longer pins: the tools only it approved are removed.
fn dropped_profile(gone: &LockedServer, now: &PinnedServer) -> ServerReport {
    let mut report = ServerReport::dropped_from_config(gone, gone.reached.transport_name());
    report
        .changes
        .retain(|c| !now.tool_names().contains(c.tool.as_str()));
    report.error = Some(format!(
        "client profile {:?} is no longer pinned in the newer lock",
        gone.profile
    ));
    report.server_changes = vec![ServerChange {
        field: "profile",
        pinned: Some(gone.profile.clone()),
        live: None,
        drift: false,
        class: None,
        action: None,
    }];
    report.verdict = if report.changes.is_empty() {
        Verdict::Converged
    } else {
        Verdict::Stale
    };
    report
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacting_a_report_hides_secrets_in_server_text_but_keeps_its_own_words() {
        let mut secrets = Secrets::default();
        secrets.add("MODE", "stdio");
        secrets.add("KEY", "k-123456789");
        let mut report = ServerReport::unverifiable("srv", "stdio", "x".into());
        report.instructions = Some("use k-123456789 over stdio".into());
        report.changes.push(ToolChange {
            live_hash: Some("ab".into()),
            action: Action::Fail,
            live: Some(
                Json::parse(r#"{"name":"t","description":"k-123456789"}"#)
                    .unwrap()
                    .into(),
            ),
            ..ToolChange::new(Kind::Tool, "t-k-123456789".into(), ChangeKind::Added)
        });
        report.redact(&secrets);
        assert_eq!(report.transport, "stdio");
        assert_eq!(
            report.instructions.as_deref(),
            Some("use ${KEY} over ${MODE}")
        );
        assert_eq!(report.changes[0].tool, "t-${KEY}");
        let live = report.changes[0].live.as_ref().unwrap();
        assert_eq!(
            live.get("description").and_then(Json::as_str).unwrap(),
            "${KEY}"
        );
    }
}
