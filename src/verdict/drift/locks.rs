//! Two locks compared as if the newer one were live servers: for reviewing a lock
//! change.

use super::*;

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
fn package_between(
    old: &PinnedServer,
    new: &PinnedServer,
) -> Option<crate::servers::package::PackageCheck> {
    let now = new.package.as_ref()?;
    if old.package.as_ref() == Some(now) {
        return None;
    }
    // The same package launched the same way, with only its closure moved, is a
    // dependency change, as verify reports it.
    let same_package = old
        .package
        .as_ref()
        .is_some_and(|p| p.package == now.package && p.launcher == now.launcher);
    Some(crate::servers::package::PackageCheck {
        status: if same_package {
            crate::servers::package::PackageStatus::DependencyChanged
        } else {
            crate::servers::package::PackageStatus::Changed
        },
        kind: now.package.kind(),
        launcher: now.launcher.clone(),
        pinned: old.package.as_ref().map(|p| p.to_string()),
        live: Some(now.to_string()),
        message: match &old.package {
            Some(p) => format!("the newer lock pins {now}; the older pinned {p}"),
            None => format!("the newer lock pins {now}; the older pinned no package"),
        },
        dependencies: match (
            old.package
                .as_ref()
                .and_then(|p| p.closure.as_ref())
                .and_then(|c| c.closure.as_ref()),
            now.closure.as_ref().and_then(|c| c.closure.as_ref()),
        ) {
            (Some(a), Some(b)) => crate::servers::package::closure::changes(a, b),
            _ => Vec::new(),
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
            report
                .server_changes
                .extend(super::launch_change(&pins.view.reached, &listing.reached));
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
        rule: None,
        action: None,
    }];
    report.verdict = if report.changes.is_empty() {
        Verdict::Converged
    } else {
        Verdict::Stale
    };
    report
}
