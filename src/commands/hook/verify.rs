//! Verifying the session's servers at SessionStart, and the records kept of it.

use super::*;

/// Each of `servers` (at least one) of `group`, as Claude Code's profile sees them:
/// taken from the last start when nothing it depends on changed, verified otherwise.
/// No lock: each is refused as not pinned, saying how to pin it.
pub(super) async fn verify(
    group: &Group,
    place: &Place,
    rules: &SessionRules,
    servers: &[String],
    mut reuse: Option<&mut Reuse>,
    lock_names: &mut Vec<String>,
) -> Result<BTreeMap<String, ServerRecord>, String> {
    let Some(stamp) = &group.stamp else {
        return Ok(servers
            .iter()
            .map(|n| (n.clone(), ServerRecord::unpinned(n, group.personal)))
            .collect());
    };
    let lookup = |v: &str| std::env::var(v).ok();
    let config =
        mcp_lock::servers::config::ProjectConfig::load(&place.project, group.config.as_deref())
            .map_err(|e| e.to_string())?;
    let mut found = BTreeMap::new();
    let mut todo = Vec::new();
    let mut materials = BTreeMap::new();
    // The lock's server names: kept with the reuse under the lock's bytes, so a start
    // that reuses every server does not parse the lock.
    let names_id = format!("lock:{}", reuse_id(group.personal, ""));
    let mut names_material = Material::new();
    names_material
        .part(b"the lock's server names")
        .part(stamp.sha256.as_bytes());
    let mut pinned = None;
    let names: Vec<String> = match reuse
        .as_deref()
        .and_then(|r| r.get::<Vec<String>>(&names_id, &names_material))
    {
        Some(names) => names,
        None => {
            let lock = read_pinned(group)?;
            let names: Vec<String> = lock.servers.keys().cloned().collect();
            if let Some(reuse) = reuse.as_deref_mut() {
                reuse.put(&names_id, &names_material, &names);
            }
            pinned = Some(lock);
            names
        }
    };
    lock_names.extend(names.iter().cloned());
    for name in servers {
        // Turned off in the user's settings (`/mcp disable`): Claude Code does not
        // start it, and its calls are refused as not verified this session.
        if !config.servers.iter().any(|s| &s.name == name) {
            continue;
        }
        // Not pinned: refused without being started (nothing it serves is approved).
        if !names.contains(name) {
            found.insert(name.clone(), ServerRecord::unpinned(name, group.personal));
            continue;
        }
        let material = config
            .servers
            .iter()
            .find(|s| &s.name == name)
            .and_then(|spec| material(group, stamp, &config, spec, place, &lookup))
            .map(|mut m| {
                // The tools the rules deny are in the record kept.
                m.part(b"rules").part(rules.stamp.as_bytes());
                m
            });
        let id = reuse_id(group.personal, name);
        if let (Some(m), Some(r)) = (&material, reuse.as_deref())
            && let Some(kept) = r.get(&id, m)
        {
            found.insert(name.clone(), kept);
            continue;
        }
        if let Some(m) = material {
            materials.insert(name.clone(), m);
        }
        todo.push(name.clone());
    }
    if todo.is_empty() {
        return Ok(found);
    }
    let mut verifier = Verifier::new(&place.project)
        .lock(&group.lock)
        .client(PROFILE)
        .servers(todo.iter().cloned());
    if group.personal {
        verifier = verifier.personal();
    }
    if let Some(config) = &group.config {
        verifier = verifier.config(config);
    }
    if let Some(policy) = &group.policy {
        verifier = verifier.policy(policy);
    }
    let verification = verifier.verify().await.map_err(|e| e.to_string())?;
    let lock = match pinned {
        Some(lock) => lock,
        None => read_pinned(group)?,
    };
    // The verifier read it too: still the bytes the session started with.
    if !stamp.holds(&group.lock) {
        return Err(format!(
            "{} changed while the servers were verified against it",
            group.lock.display()
        ));
    }
    for report in &verification.reports {
        let standing = ServerRecord::of(report, &lock, group.personal, &rules.policy);
        let listed = matches!(
            report.verdict,
            mcp_lock::verdict::drift::Verdict::Converged | mcp_lock::verdict::drift::Verdict::Stale
        );
        if let Some(reuse) = reuse.as_deref_mut() {
            let id = reuse_id(group.personal, &report.name);
            match materials.get(&report.name) {
                // Only a server listed whole: one unreachable now may answer later.
                Some(m) if listed => reuse.put(&id, m, &standing),
                _ => reuse.forget(&id),
            }
        }
        found.insert(report.name.clone(), standing);
    }
    // Asked for and not reported: not verified, so refused.
    for name in todo {
        found.entry(name.clone()).or_insert_with(|| ServerRecord {
            refused: Some(format!(
                "MCP server {} was not verified at session start",
                mcp_lock::base::text::escape_for_terminal(&name)
            )),
            ..ServerRecord::unpinned(&name, group.personal)
        });
    }
    Ok(found)
}

pub(super) fn read_record(path: &Path) -> Option<SessionRecord> {
    // A record holds one input schema per pinned tool; past this it is not ours.
    const MAX_RECORD_BYTES: u64 = 512 * 1024 * 1024;
    let mut bytes = Vec::new();
    std::fs::File::open(path)
        .ok()?
        .take(MAX_RECORD_BYTES + 1)
        .read_to_end(&mut bytes)
        .ok()?;
    if bytes.len() as u64 > MAX_RECORD_BYTES {
        return None;
    }
    serde_json::from_slice::<SessionRecord>(&bytes)
        .ok()
        .filter(|r| r.version == SessionRecord::VERSION)
}

/// Writes the record whole (a temporary file renamed over it) in a private directory
/// that no symlink leads out of.
pub(super) fn keep(place: &Place, path: &Path, record: &SessionRecord) -> Result<(), String> {
    let root = mcp_lock::base::files::parent_of(&place.records);
    mcp_lock::base::files::create_dir_within(&place.records, &root, 0o700)
        .map_err(|e| format!("cannot create {}: {e}", place.records.display()))?;
    let bytes = serde_json::to_vec(record).expect("a record serializes");
    mcp_lock::base::files::replace(path, &place.records, &bytes, 0o600)
        .map_err(|e| format!("cannot write {}: {e}", path.display()))
}

/// Records of sessions that ended without a SessionEnd (a crash, a kill) are removed
/// after a week.
pub(super) fn remove_old_records(dir: &Path, keep: &Path) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let week = std::time::Duration::from_secs(7 * 24 * 3600);
    for entry in entries.flatten() {
        let path = entry.path();
        let old = entry
            .metadata()
            .ok()
            .and_then(|m| m.modified().ok())
            .and_then(|t| t.elapsed().ok())
            .is_some_and(|age| age > week);
        if old && path != keep && path.extension().is_some_and(|e| e == "json") {
            let _ = std::fs::remove_file(path);
        }
    }
}
