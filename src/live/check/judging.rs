//! Judging a checked server: its report under the policy, denials, and the host profile
//! it was checked for.

use super::*;

/// Compares what one server said under `profile` with its pins (`None`: the server
/// is not pinned), as `verify` does: a listing naming a tool twice is incomplete,
/// tools the host's config hides are left out, and a profile the lock does not pin
/// is judged against every definition approved for the server. The report is not
/// redacted and the policy has not judged it yet.
pub fn judge(
    spec: &ServerSpec,
    profile: &str,
    server_pins: Option<&PinnedServer>,
    fetched: &mut Fetched,
) -> ServerReport {
    refuse_repeated_names(fetched);
    let exact = server_pins.and_then(|s| s.profiles.get(profile));
    // Tools the host's config hides from its agent are neither pinned nor
    // judged: the agent never sees them.
    let filtered = filter_listing(&spec.filter, fetched);
    let union = server_pins
        .filter(|_| exact.is_none())
        .map(|s| s.union(profile));
    let is_exact = exact.is_some();
    // Borrowed from the lock unless the host's filter narrows it.
    let mut view: Option<Cow<'_, LockedServer>> =
        exact.map(Cow::Borrowed).or(union.map(Cow::Owned));
    if let Some(view) = &mut view
        && !spec.filter.is_empty()
    {
        view.to_mut()
            .tools
            .retain(|name, _| spec.filter.shows(name));
    }
    let pinned = server_pins.map(|server| Pinned {
        view: view.as_deref().expect("one of the two"),
        server,
        exact: is_exact,
    });
    let mut report = compare(spec, pinned, profile, fetched);
    report.filtered = filtered;
    report
}

/// Marks on `report` the definitions the tool rules deny to its host, of those the
/// server offers: its listing when one was read, else what the lock pins. A denied
/// definition is judged by its pinned form when there is one (what the agent is
/// served), else its live one. A report under [`UNMATCHED`] is judged for a host
/// that cannot be named: the most restrictive answer.
pub fn mark_denied(
    report: &mut ServerReport,
    rules: &crate::verdict::rules::ToolRules,
    fetched: &Fetched,
    pins: Option<&PinnedServer>,
) {
    use crate::contract::surface::Kind;
    if rules.is_empty() {
        return;
    }
    let listing = match &fetched.outcome {
        crate::servers::client::Outcome::Complete { listing, .. } => Some(listing),
        _ => None,
    };
    let union;
    let pinned = match pins {
        Some(p) => match p.profiles.get(&report.profile) {
            Some(exact) => Some(exact),
            None => {
                union = p.union(&report.profile);
                Some(&union)
            }
        },
        None => None,
    };
    let profile = (report.profile != UNMATCHED).then_some(report.profile.as_str());
    let mut denied = Vec::new();
    for kind in [Kind::Tool, Kind::Prompt, Kind::ResourceTemplate] {
        let pinned_items = pinned.and_then(|p| p.items(kind));
        let mut keys: std::collections::BTreeSet<&str> = listing
            .and_then(|l| l.kind(kind))
            .into_iter()
            .flatten()
            .filter_map(|t| t.name.as_deref())
            .collect();
        if listing.is_none() {
            keys.extend(pinned_items.into_iter().flatten().map(|(k, _)| k.as_str()));
        }
        for key in keys {
            let definition = pinned_items
                .and_then(|items| items.get(key))
                .map(|t| &*t.definition)
                .or_else(|| {
                    listing
                        .and_then(|l| l.kind(kind))
                        .and_then(|ts| ts.iter().find(|t| t.name.as_deref() == Some(key)))
                        .map(|t| &*t.definition)
                });
            if let Some(denial) =
                rules.decide_definition(profile, kind, &report.name, key, definition)
            {
                denied.push(crate::verdict::rules::Denied {
                    kind,
                    name: key.to_string(),
                    denial,
                    action: Default::default(),
                });
            }
        }
    }
    report.denied = denied;
}

/// The `profile` of a report judged for a client whose declared handshake matches no
/// pinned profile: it is judged against every definition approved for the server.
pub const UNMATCHED: &str = "(unmatched)";

/// The pinned profile a client that declared `hello` is, as the guard judges it: the
/// one with its capabilities and era, else the one with its capabilities in another
/// era; or, when none has its capabilities, what it misses: the closest pinned
/// profile, the difference, and what would pin it.
pub fn declared_profile(
    server: &str,
    pins: &PinnedServer,
    hello: &crate::live::guard::ClientHello,
    settings: &crate::records::profile::ProfileSettings,
) -> Result<String, crate::verdict::drift::MissingProfile> {
    use crate::live::guard::client::{matching_profile, same_capabilities};
    matching_profile(pins, hello, None)
        .or_else(|| same_capabilities(pins, hello))
        .ok_or_else(|| {
            crate::verdict::drift::MissingProfile::new(server, pins, &hello.capabilities, settings)
        })
}

/// Marks a report judged under [`UNMATCHED`], as the guard judges a client whose
/// handshake no pinned profile has: against every definition approved for the server,
/// so a tool none approves is added and nothing is removed. The verdict stands: what
/// this passes, the guard serves. `missing` says which pinned profile is closest and
/// what would pin the client.
pub fn mark_unmatched(report: &mut ServerReport, missing: crate::verdict::drift::MissingProfile) {
    report.missing_profile = Some(missing);
}
