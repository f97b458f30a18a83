//! A live listing against its pins: each definition matched, classified by part,
//! renames paired, and what the server says about itself.

use super::*;

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
        not_implemented: Vec::new(),
        pending: Vec::new(),
        filtered: Vec::new(),
        rejected: Vec::new(),
        package: None,
        missing_profile: None,
        denied: Vec::new(),
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
    report.rejected = listing
        .rejected
        .iter()
        .map(|(name, reason)| super::Rejected {
            name: name.clone(),
            reason: reason.clone(),
        })
        .collect();
    report.not_implemented = listing.not_implemented.clone();
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
            report
                .server_changes
                .extend(super::launch_change(&pinned.view.reached, &launch));
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
    use crate::contract::classify::{canonical_except_key, is_template_rename};
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
                rule: None,
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
