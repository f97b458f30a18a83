//! The checks of one server's tables: its JSON fields read, every pin against its
//! hash and its profiles, its package pin complete.

use std::collections::BTreeMap;

use toml::Spanned;

use super::raw::{RawPackage, RawServer};
use super::{LineIndex, LockError, invalid_at};
use crate::base::json::Json;
use crate::contract::hash::definition_hash;
use crate::contract::surface::Kind;
use crate::records::lock::{Approval, LockedServer, LockedTool, PinnedServer, Reached};

/// The listing fields of one profile, however the lock version spells them.
struct RawListing {
    profile: Spanned<String>,
    protocol_version: String,
    client_info: Spanned<String>,
    client_capabilities: Spanned<String>,
    roots: Option<Spanned<String>>,
    server_info: Spanned<String>,
    list_changed: bool,
    instructions_hash: Option<Spanned<String>>,
    set_hash: Spanned<String>,
    /// The set hashes of the other kinds this profile pins.
    other_set_hashes: Vec<(Kind, Spanned<String>)>,
}

/// The value `roots` is written with: the project directory, never a path.
pub(crate) const PROJECT_ROOT: &str = "project-dir";

/// Whether [`check_server`] reads the definitions, or only what launching the server
/// needs (its header: the item lists are empty, and the checks that need them are
/// left to the whole reading).
#[derive(Clone, Copy, PartialEq)]
pub(super) enum Definitions {
    Read,
    Skip,
}

/// One server's entry, checked: its JSON fields read, every pin against its hash.
pub(super) fn check_server(
    server: RawServer,
    version: i64,
    index: &LineIndex,
    path: &str,
    definitions: Definitions,
) -> Result<PinnedServer, LockError> {
    let at = |offset: usize, message: String| invalid_at(index, path, offset, message);
    let name_at = server.name.span().start;
    let name = server.name.get_ref().clone();
    let approved = match &server.approved {
        None => None,
        Some(how) => {
            Some(check_approved(how.get_ref(), version).map_err(|m| at(how.span().start, m))?)
        }
    };
    let code_env = match &server.code_env {
        None => Vec::new(),
        Some(pins) => {
            check_code_env(pins.get_ref(), version).map_err(|m| at(pins.span().start, m))?
        }
    };
    let reached = match (server.transport.as_str(), server.command, server.url) {
        ("stdio", Some(command), None) => Reached::Stdio {
            command,
            args: server.args,
            env: server.env,
            code_env,
        },
        _ if !code_env.is_empty() => {
            return Err(at(
                name_at,
                format!("server {name:?}: `code_env` belongs to a stdio server only"),
            ));
        }
        (kind @ ("streamable-http" | "sse"), None, Some(url)) => Reached::Remote {
            kind: kind.to_string(),
            url,
            headers: server.headers,
            oauth_issuer: server.oauth_issuer,
        },
        (kind, _, _) => {
            return Err(at(
                name_at,
                format!(
                    "server {name:?}: transport {kind:?} does not match its command/url (expected \"stdio\" with command, or \"streamable-http\"/\"sse\" with url)"
                ),
            ));
        }
    };
    let listings = if version == 1 {
        if let Some(profile) = server.profile.first() {
            return Err(at(
                profile.name.span().start,
                format!(
                    "server {name:?}: [[server.profile]] needs lock format version 2 (this lock says version 1)"
                ),
            ));
        }
        let missing =
            |field: &str| at(name_at, format!("server {name:?}: missing field `{field}`"));
        vec![RawListing {
            // A version-1 lock was made with no client capabilities: `bare`.
            profile: Spanned::new(name_at..name_at, crate::records::lock::BARE.to_string()),
            protocol_version: server
                .protocol_version
                .ok_or_else(|| missing("protocol_version"))?,
            client_info: server.client_info.ok_or_else(|| missing("client_info"))?,
            client_capabilities: server
                .client_capabilities
                .ok_or_else(|| missing("client_capabilities"))?,
            roots: None,
            server_info: server.server_info.ok_or_else(|| missing("server_info"))?,
            list_changed: server.list_changed.ok_or_else(|| missing("list_changed"))?,
            instructions_hash: server.instructions_hash,
            set_hash: server.set_hash.ok_or_else(|| missing("set_hash"))?,
            other_set_hashes: Vec::new(),
        }]
    } else {
        let v1_field = [
            ("protocol_version", server.protocol_version.is_some()),
            ("client_info", server.client_info.is_some()),
            ("client_capabilities", server.client_capabilities.is_some()),
            ("server_info", server.server_info.is_some()),
            ("list_changed", server.list_changed.is_some()),
            ("instructions_hash", server.instructions_hash.is_some()),
            ("set_hash", server.set_hash.is_some()),
        ]
        .into_iter()
        .find(|(_, present)| *present);
        if let Some((field, _)) = v1_field {
            return Err(at(
                name_at,
                format!(
                    "server {name:?}: `{field}` belongs in a [[server.profile]] in lock format version 2"
                ),
            ));
        }
        if server.profile.is_empty() {
            return Err(at(
                name_at,
                format!("server {name:?}: no [[server.profile]]; run `mcp-lock update` to pin it"),
            ));
        }
        server
            .profile
            .into_iter()
            .map(|p| RawListing {
                profile: p.name,
                protocol_version: p.protocol_version,
                client_info: p.client_info,
                client_capabilities: p.client_capabilities,
                roots: p.roots,
                server_info: p.server_info,
                list_changed: p.list_changed,
                instructions_hash: p.instructions_hash,
                set_hash: p.set_hash,
                other_set_hashes: [
                    (Kind::Prompt, p.prompts_set_hash),
                    (Kind::ResourceTemplate, p.resource_templates_set_hash),
                    (Kind::Resource, p.resources_set_hash),
                ]
                .into_iter()
                .filter_map(|(k, h)| h.map(|h| (k, h)))
                .collect(),
            })
            .collect()
    };
    if version == 1
        && let Some(item) = server.prompt.first().or(server.resource_template.first())
    {
        return Err(at(
            item.hash.span().start,
            format!("server {name:?}: prompts and resource templates need lock format version 2"),
        ));
    }
    let profile_names: Vec<&str> = listings
        .iter()
        .map(|l| l.profile.get_ref().as_str())
        .collect();
    // Each kind's definitions, under the profiles that saw them: a definition seen
    // under several profiles is written once.
    let mut pinned: BTreeMap<(String, Kind), BTreeMap<String, LockedTool>> = BTreeMap::new();
    let kinds = [
        (Kind::Tool, server.tool),
        (Kind::Prompt, server.prompt),
        (Kind::ResourceTemplate, server.resource_template),
        (Kind::Resource, server.resource),
    ];
    for (kind, items) in kinds {
        let mut seen: BTreeMap<(String, String), usize> = BTreeMap::new();
        for item in items {
            let noun = kind.noun();
            let key_name = kind.lock_key();
            let (key, others) = match kind {
                Kind::Tool | Kind::Prompt => (&item.name, [&item.uri_template, &item.uri]),
                Kind::ResourceTemplate => (&item.uri_template, [&item.name, &item.uri]),
                Kind::Resource => (&item.uri, [&item.name, &item.uri_template]),
            };
            let Some(key_at) = key else {
                return Err(at(
                    item.hash.span().start,
                    format!(
                        "server {name:?}: a [[server.{}]] has no `{key_name}`",
                        kind.lock_table()
                    ),
                ));
            };
            if others.iter().any(|o| o.is_some()) {
                return Err(at(
                    key_at.span().start,
                    format!(
                        "{noun} {:?}: only `{key_name}` names a [[server.{}]]",
                        key_at.get_ref(),
                        kind.lock_table()
                    ),
                ));
            }
            let key = key_at.get_ref().clone();
            let hash = item.hash.get_ref().clone();
            if !is_sha256_hex(&hash) {
                return Err(at(
                    item.hash.span().start,
                    format!("{noun} {key:?}: hash is not 64 lowercase hex digits"),
                ));
            }
            let def_at = item.definition.span().start;
            let definition = Json::parse(item.definition.get_ref()).map_err(|e| {
                // The definition starts on the line after the opening quotes.
                let line = index.line(def_at) + e.line;
                LockError::Invalid {
                    path: path.to_string(),
                    line,
                    message: format!(
                        "{noun} {key:?}: definition is not valid JSON: {}",
                        e.message
                    ),
                }
            })?;
            match definition_hash(&definition) {
                Ok(h) if h == hash => {}
                Ok(_) => {
                    return Err(at(
                        def_at,
                        format!(
                            "{noun} {key:?} of server {name:?}: the definition does not match its hash (edited by hand?); run `mcp-lock update`"
                        ),
                    ));
                }
                Err(e) => {
                    return Err(at(def_at, format!("{noun} {key:?}: definition has {e}")));
                }
            }
            if definition
                .get(kind.key_member())
                .and_then(Json::as_str)
                .as_deref()
                != Some(&key)
            {
                return Err(at(
                    key_at.span().start,
                    format!(
                        "{noun} {key:?}: the definition's {} differs",
                        kind.key_member()
                    ),
                ));
            }
            let under: Vec<String> = match (&item.profiles, version) {
                (None, 1) => vec![crate::records::lock::BARE.to_string()],
                (Some(p), 1) => {
                    return Err(at(
                        p.span().start,
                        format!("{noun} {key:?}: `profiles` needs lock format version 2"),
                    ));
                }
                (None, _) => {
                    return Err(at(
                        key_at.span().start,
                        format!("{noun} {key:?}: no `profiles`; which client profiles saw it?"),
                    ));
                }
                (Some(p), _) => {
                    if let Some(unknown) = p
                        .get_ref()
                        .iter()
                        .find(|n| !profile_names.contains(&n.as_str()))
                    {
                        return Err(at(
                            p.span().start,
                            format!(
                                "{noun} {key:?}: profile {unknown:?} has no [[server.profile]]"
                            ),
                        ));
                    }
                    if p.get_ref().is_empty() {
                        return Err(at(
                            p.span().start,
                            format!("{noun} {key:?}: `profiles` is empty"),
                        ));
                    }
                    p.get_ref().clone()
                }
            };
            let twice = if version == 1 {
                // Keys sort first by name: the first at or after (key, "") tells.
                seen.range((key.clone(), String::new())..)
                    .next()
                    .is_some_and(|((k, _), _)| *k == key)
            } else {
                seen.contains_key(&(key.clone(), hash.clone()))
            };
            if twice {
                return Err(at(
                    key_at.span().start,
                    format!("server {name:?} pins {noun} {key:?} twice"),
                ));
            }
            seen.insert((key.clone(), hash.clone()), key_at.span().start);
            let locked = LockedTool {
                hash,
                definition: definition.into(),
            };
            for profile in under {
                let slot = pinned.entry((profile.clone(), kind)).or_default();
                if slot.insert(key.clone(), locked.clone()).is_some() {
                    return Err(at(
                        key_at.span().start,
                        format!("server {name:?} profile {profile:?} pins {noun} {key:?} twice"),
                    ));
                }
            }
        }
    }
    let mut profiles = BTreeMap::new();
    for listing in listings {
        let profile = listing.profile.get_ref().clone();
        let profile_at = listing.profile.span().start;
        let label = if version == 1 {
            format!("server {name:?}")
        } else {
            format!("server {name:?} profile {profile:?}")
        };
        let json = |field: &Spanned<String>, what: &str| {
            let value = Json::parse(field.get_ref()).map_err(|e| {
                at(
                    field.span().start,
                    format!("{label}: {what} is not valid JSON: {e}"),
                )
            })?;
            match value.canonical() {
                Ok(_) => Ok(value),
                Err(e) => Err(at(field.span().start, format!("{label}: {what} has {e}"))),
            }
        };
        if let Some(hash) = &listing.instructions_hash
            && !is_sha256_hex(hash.get_ref())
        {
            return Err(at(
                hash.span().start,
                format!("{label}: instructions_hash is not 64 lowercase hex digits"),
            ));
        }
        if let Some(roots) = &listing.roots
            && roots.get_ref() != PROJECT_ROOT
        {
            return Err(at(
                roots.span().start,
                format!(
                    "{label}: roots is {:?}; the only value is {PROJECT_ROOT:?}",
                    roots.get_ref()
                ),
            ));
        }
        let tools = pinned
            .remove(&(profile.clone(), Kind::Tool))
            .unwrap_or_default();
        let mut others: BTreeMap<Kind, BTreeMap<String, LockedTool>> = BTreeMap::new();
        for (kind, _) in &listing.other_set_hashes {
            others.insert(
                *kind,
                pinned.remove(&(profile.clone(), *kind)).unwrap_or_default(),
            );
        }
        let locked = LockedServer {
            name: name.clone(),
            profile: profile.clone(),
            reached: reached.clone(),
            protocol_version: listing.protocol_version,
            client_info: json(&listing.client_info, "client_info")?,
            client_capabilities: json(&listing.client_capabilities, "client_capabilities")?,
            server_info: json(&listing.server_info, "server_info")?,
            list_changed: listing.list_changed,
            instructions_hash: listing.instructions_hash.map(Spanned::into_inner),
            tools,
            prompts: others.remove(&Kind::Prompt),
            resource_templates: others.remove(&Kind::ResourceTemplate),
            resources: others.remove(&Kind::Resource),
        };
        if definitions == Definitions::Read && locked.set_hash() != *listing.set_hash.get_ref() {
            return Err(at(
                listing.set_hash.span().start,
                format!(
                    "{label}: set_hash does not match its tools (edited by hand?); run `mcp-lock update`"
                ),
            ));
        }
        for (kind, hash) in listing
            .other_set_hashes
            .iter()
            .filter(|_| definitions == Definitions::Read)
        {
            if locked.set_hash_of(*kind).as_deref() != Some(hash.get_ref().as_str()) {
                return Err(at(
                    hash.span().start,
                    format!(
                        "{label}: {} does not match its {} (edited by hand?); run `mcp-lock update`",
                        kind.set_hash_key(),
                        kind.plural()
                    ),
                ));
            }
        }
        if profiles.insert(profile.clone(), locked).is_some() {
            return Err(at(
                profile_at,
                format!("server {name:?} lists profile {profile:?} twice"),
            ));
        }
    }
    // A definition under a profile that does not pin its kind (no set hash for it).
    if let Some(((profile, kind), items)) = pinned.iter().find(|(_, items)| !items.is_empty()) {
        let key = items.keys().next().cloned().unwrap_or_default();
        return Err(at(
            name_at,
            format!(
                "server {name:?}: {} {key:?} is pinned under profile {profile:?}, which has no {}",
                kind.noun(),
                kind.set_hash_key()
            ),
        ));
    }
    let package = match server.package {
        None => None,
        Some(_) if version < 3 => {
            return Err(at(
                name_at,
                format!(
                    "server {name:?}: [server.package] needs lock format version 3 (this lock says version {version})"
                ),
            ));
        }
        Some(raw) => {
            let offset = raw.span().start;
            Some(
                check_package(raw.into_inner(), version)
                    .map_err(|e| at(offset, format!("server {name:?}: [server.package]: {e}")))?,
            )
        }
    };
    Ok(PinnedServer {
        profiles,
        package,
        approved,
    })
}

/// The pin a `[server.package]` table describes, with the fields its kind needs.
fn check_package(
    raw: RawPackage,
    version: i64,
) -> Result<crate::servers::package::PackagePin, String> {
    use crate::servers::package::{Package, PackagePin};
    let need = |field: Option<String>, key: &str| {
        field.ok_or_else(|| format!("kind {:?} needs `{key}`", raw.kind))
    };
    let sha = |value: &str, what: &str| {
        if is_sha256_hex(value) {
            Ok(())
        } else {
            Err(format!("{what} is not 64 lowercase hex digits"))
        }
    };
    let package = match raw.kind.as_str() {
        "npm" => {
            let integrity = need(raw.integrity.clone(), "integrity")?;
            if crate::servers::package::npm::sha512_of(&integrity).is_none() {
                return Err(format!(
                    "integrity {integrity:?} is not a sha512 SRI hash (sha512-…)"
                ));
            }
            // The guard launches `name@version`: anything but a version there would
            // launch something else.
            let version = need(raw.version.clone(), "version")?;
            if !crate::servers::package::npm::is_semver(&version) {
                return Err(format!("version {version:?} is not a semver version"));
            }
            Package::Npm {
                name: need(raw.name.clone(), "name")?,
                version,
                integrity,
            }
        }
        "pypi" => {
            let mut files = BTreeMap::new();
            for f in &raw.file {
                sha(&f.sha256, &format!("the sha256 of {}", f.name))?;
                if files.insert(f.name.clone(), f.sha256.clone()).is_some() {
                    return Err(format!("file {:?} is listed twice", f.name));
                }
            }
            let version = need(raw.version.clone(), "version")?;
            if crate::servers::package::pypi::Version::parse(&version).is_none() {
                return Err(format!("version {version:?} is not a PEP 440 version"));
            }
            Package::Pypi {
                name: need(raw.name.clone(), "name")?,
                version,
                files,
            }
        }
        "oci" => Package::Oci {
            reference: need(raw.reference.clone(), "reference")?,
            digest: raw.digest.clone(),
        },
        "script" => {
            let sha256 = need(raw.sha256.clone(), "sha256")?;
            sha(&sha256, "sha256")?;
            Package::Script {
                path: need(raw.path.clone(), "path")?,
                sha256,
            }
        }
        "unrecognised" => Package::Unrecognised,
        "unresolved" if version >= 4 => Package::Unresolved {
            reason: need(raw.reason.clone(), "reason")?,
        },
        "unresolved" => {
            return Err(format!(
                "kind \"unresolved\" needs lock format version 4 (this lock says version {version})"
            ));
        }
        other => {
            return Err(format!(
                "unknown kind {other:?} (expected npm, pypi, oci, script, unrecognised or unresolved)"
            ));
        }
    };
    let closure = match (&raw.closure, raw.closure_packages) {
        (None, None) => None,
        (Some(_), _) | (_, Some(_)) if version < 5 => {
            return Err(format!(
                "`closure` needs lock format version 5 (this lock says version {version})"
            ));
        }
        (Some(hash), Some(count))
            if matches!(package, Package::Npm { .. } | Package::Pypi { .. }) =>
        {
            if !hash.strip_prefix("sha256:").is_some_and(is_sha256_hex) {
                return Err(format!(
                    "closure {hash:?} is not sha256: and 64 lowercase hex digits"
                ));
            }
            Some(crate::servers::package::closure::ClosurePin {
                hash: hash.clone(),
                count: usize::try_from(count)
                    .map_err(|_| "closure_packages is too large".to_string())?,
                closure: None,
            })
        }
        (Some(_), Some(_)) => {
            return Err(format!("kind {:?} has no dependency closure", raw.kind));
        }
        (Some(_), None) => return Err("`closure` needs `closure_packages`".into()),
        (None, Some(_)) => return Err("`closure_packages` needs `closure`".into()),
    };
    Ok(PackagePin {
        launcher: raw.launcher,
        package,
        closure,
    })
}

fn is_sha256_hex(s: &str) -> bool {
    s.len() == 64 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

/// `approved` (version 7): one of [`Approval::as_str`]'s values (`pull-request` from 8).
fn check_approved(how: &str, version: i64) -> Result<Approval, String> {
    if version < 7 {
        return Err(format!(
            "`approved` needs lock format version 7 (this lock says version {version})"
        ));
    }
    let how = Approval::parse(how).ok_or_else(|| {
        let known: Vec<&str> = Approval::ALL.iter().map(|a| a.as_str()).collect();
        format!("`approved` {how:?} is not one of {}", known.join(", "))
    })?;
    if version < how.since_version() {
        return Err(format!(
            "`approved = {:?}` needs lock format version {} (this lock says version {version})",
            how.as_str(),
            how.since_version()
        ));
    }
    Ok(how)
}

/// `code_env` (version 6): `NAME=sha256:<64 hex>` each, sorted by name, each name once.
fn check_code_env(pins: &[String], version: i64) -> Result<Vec<(String, String)>, String> {
    if version < 6 {
        return Err(format!(
            "`code_env` needs lock format version 6 (this lock says version {version})"
        ));
    }
    let mut out: Vec<(String, String)> = Vec::new();
    for pin in pins {
        let Some((name, hash)) = pin.split_once('=') else {
            return Err(format!("code_env entry {pin:?} is not NAME=sha256:…"));
        };
        if name.is_empty()
            || !hash.strip_prefix("sha256:").is_some_and(|h| {
                crate::servers::package::is_sha256_hex(h) && h == h.to_ascii_lowercase()
            })
        {
            return Err(format!(
                "code_env entry {pin:?} is not NAME=sha256: and 64 lowercase hex digits"
            ));
        }
        if out.last().is_some_and(|(last, _)| last.as_str() >= name) {
            return Err(format!(
                "code_env entry {name:?} is out of order or listed twice"
            ));
        }
        out.push((name.to_string(), hash.to_string()));
    }
    Ok(out)
}
