//! `verify`'s check of what the host will launch for an entry against its pin.

use std::fmt::Write as _;

use super::*;

/// The check of one server's package: what the host launches for this entry against
/// the pin (`None`: the lock has none). `action` is left for the policy to set.
pub async fn check(entry: &Entry<'_>, pin: Option<&PackagePin>, lookups: Lookups) -> PackageCheck {
    let started = std::time::Instant::now();
    let mut out = check_untimed(entry, pin, lookups).await;
    out.elapsed_ms = started.elapsed().as_millis() as u64;
    out
}

async fn check_untimed(
    entry: &Entry<'_>,
    pin: Option<&PackagePin>,
    lookups: Lookups,
) -> PackageCheck {
    let mut out = check_package(entry, pin, lookups).await;
    if let Some(pin) = pin {
        check_closure(entry, pin, lookups, &mut out).await;
    }
    out
}

/// The closure part of the check, once the package itself is the pinned one. A
/// wrapped entry runs the pinned closure from the guard's cache, so only an entry
/// the host launches itself has its closure resolved again and compared.
async fn check_closure(
    entry: &Entry<'_>,
    pin: &PackagePin,
    lookups: Lookups,
    out: &mut PackageCheck,
) {
    // `--offline` (and the guard, which never asks a registry) skips the registry,
    // not what the lock itself says is unpinned.
    if !matches!(
        out.status,
        PackageStatus::Pinned | PackageStatus::Floating | PackageStatus::Skipped
    ) || !matches!(pin.package, Package::Npm { .. } | Package::Pypi { .. })
    {
        return;
    }
    let Some(pinned) = &pin.closure else {
        closure_unpinned(entry, pin, lookups, out).await;
        return;
    };
    if out.status != PackageStatus::Pinned {
        return;
    }
    if entry.guarded {
        let _ = write!(
            out.message,
            "; the guard runs its pinned closure ({})",
            crate::base::text::count(pinned.count, "package")
        );
        return;
    }
    if lookups == Lookups::Offline {
        return;
    }
    let live = match resolve_closure_reusing(entry, pin, pinned.closure.as_deref()).await {
        Ok(Some(live)) => live,
        Ok(None) => return,
        Err(why) => {
            out.status = PackageStatus::Unverifiable;
            out.message = format!("its dependency closure cannot be resolved: {why}");
            return;
        }
    };
    if live.hash() == pinned.hash {
        let _ = write!(
            out.message,
            "; its dependency closure is the pinned one ({})",
            crate::base::text::count(pinned.count, "package")
        );
        return;
    }
    out.status = PackageStatus::DependencyChanged;
    out.dependencies = match &pinned.closure {
        Some(closure) => closure::changes(closure, &live),
        None => Vec::new(),
    };
    let listed: Vec<String> = out.dependencies.iter().map(ToString::to_string).collect();
    out.live = Some(format!(
        "closure {} ({})",
        short(&live.hash()),
        crate::base::text::count(live.packages.len(), "package")
    ));
    out.message = if listed.is_empty() {
        format!(
            "the dependency closure the launcher resolves now is not the pinned one ({} -> {})",
            short(&pinned.hash),
            short(&live.hash())
        )
    } else {
        format!(
            "the launcher now installs other dependencies than pinned: {}; wrap the entry (`mcp-lock wrap`) to run the pinned closure, or review and `mcp-lock update`",
            listed.join(", ")
        )
    };
}

/// A package the lock pins without its dependency closure: whatever launches it
/// (the host's launcher, or the guard) resolves the dependencies afresh each time, so
/// it is a finding (`closure-unpinned`), never silent. Online, the closure is resolved
/// again to say why it is not pinned, and whether `update` can pin it now: advice that
/// cannot succeed is never given.
async fn closure_unpinned(
    entry: &Entry<'_>,
    pin: &PackagePin,
    lookups: Lookups,
    out: &mut PackageCheck,
) {
    let before = std::mem::take(&mut out.message);
    out.status = PackageStatus::ClosureUnpinned;
    let launcher = if entry.guarded {
        "the guard"
    } else {
        "the launcher"
    };
    let mut message = format!(
        "its dependency closure is not pinned: {launcher} resolves its dependencies afresh at every launch"
    );
    match lookups {
        Lookups::Offline => message.push_str(" (`mcp-lock verify` online says why)"),
        Lookups::Online => match resolve_closure(entry, pin).await {
            Ok(_) => message.push_str("; it resolves now: `mcp-lock update` pins it"),
            Err(why) => {
                let _ = write!(message, "; it cannot be pinned: {why}");
            }
        },
    }
    out.message = if before.is_empty() {
        message
    } else {
        format!("{before}; {message}")
    };
}

async fn check_package(
    entry: &Entry<'_>,
    pin: Option<&PackagePin>,
    lookups: Lookups,
) -> PackageCheck {
    let rec = entry.recognised();
    let kind = match &rec.target {
        Target::Npm { .. } => "npm",
        Target::Pypi { .. } => "pypi",
        Target::Oci { .. } => "oci",
        Target::Script { .. } => "script",
        Target::Unrecognised => "unrecognised",
    };
    let mut out = PackageCheck {
        status: PackageStatus::Pinned,
        kind,
        launcher: rec.launcher.clone(),
        pinned: pin.map(|p| p.to_string()),
        live: None,
        message: String::new(),
        dependencies: Vec::new(),
        action: Action::Allow,
        elapsed_ms: 0,
    };
    let changed = |out: &mut PackageCheck, live: String, message: String| {
        out.status = PackageStatus::Changed;
        out.live = Some(live);
        out.message = message;
    };
    let Some(pin) = pin else {
        out.status = if kind == "unrecognised" {
            PackageStatus::Unrecognised
        } else {
            PackageStatus::NotPinnedYet
        };
        out.message = match out.status {
            PackageStatus::Unrecognised => unrecognised_text(&rec),
            _ => "package not pinned yet (the lock is from before packages were pinned); `mcp-lock update` pins it".into(),
        };
        return out;
    };
    // The project's own copy, which the launcher would run instead of the pinned one.
    let local = match (&rec.target, &pin.package) {
        (Target::Npm { name, spec }, Package::Npm { name: pinned, .. }) if name == pinned => {
            local_copy_runs(entry, &rec, pin, name, spec.as_deref())
        }
        _ => None,
    };
    match (&rec.target, &pin.package) {
        (_, Package::Unresolved { reason }) => {
            out.status = PackageStatus::Unverifiable;
            out.message = format!(
                "the lock records this package as unresolved ({reason}); nothing pins what it launches until `mcp-lock update` resolves it"
            );
        }
        (Target::Unrecognised, Package::Unrecognised) => {
            out.status = PackageStatus::Unrecognised;
            out.message = unrecognised_text(&rec);
        }
        (
            Target::Script { path },
            Package::Script {
                path: pinned_path,
                sha256,
            },
        ) => {
            let now = script_path(entry, path);
            if now != *pinned_path {
                changed(
                    &mut out,
                    format!("script {now}"),
                    format!("the entry now runs {now}, the lock pins {pinned_path}"),
                );
            } else {
                match sha256_file_async(entry.cwd.join(path)).await {
                    Err(e) => changed(
                        &mut out,
                        format!("script {now} (unreadable)"),
                        format!("cannot read the pinned script {now}: {e}"),
                    ),
                    Ok(live) if live != *sha256 => changed(
                        &mut out,
                        format!("script {now} (sha256 {})", short(&live)),
                        format!(
                            "the script {now} changed since it was pinned (sha256 {} -> {})",
                            short(sha256),
                            short(&live)
                        ),
                    ),
                    Ok(_) => out.message = "unchanged since it was pinned".into(),
                }
            }
        }
        (
            Target::Oci { reference },
            Package::Oci {
                reference: pinned_ref,
                digest,
            },
        ) => {
            if reference != pinned_ref {
                changed(
                    &mut out,
                    format!("oci {reference}"),
                    format!("the entry now runs image {reference}, the lock pins {pinned_ref}"),
                );
            } else if digest.is_none() {
                out.status = PackageStatus::Floating;
                out.message = format!(
                    "image {reference} is pinned by tag only, not by digest; write it as {reference}@sha256:… in the config to pin it"
                );
            } else {
                out.message = format!("image {reference} pinned by digest");
            }
        }
        (Target::Npm { name, .. }, Package::Npm { version, .. }) if local.is_some() => {
            let found = local.clone().unwrap_or_default();
            changed(
                &mut out,
                format!("npm {name} from the project ({found})"),
                format!(
                    "`{}` runs the project's own copy, {found}, not the registry's {name}@{version}; its files cannot be checked against the pinned tarball: remove it, or wrap the entry (`mcp-lock wrap`) so the guard runs the pinned closure",
                    rec.launcher
                ),
            );
        }
        (
            Target::Npm { name, spec },
            Package::Npm {
                name: pinned_name,
                version,
                integrity,
            },
        ) if name == pinned_name => {
            check_npm(
                entry,
                &rec,
                &mut out,
                name,
                spec.as_deref(),
                version,
                integrity,
                lookups,
            )
            .await;
        }
        (
            Target::Pypi { name, spec },
            Package::Pypi {
                name: pinned_name,
                version,
                files,
            },
        ) if pypi::normalize(name) == pypi::normalize(pinned_name) => {
            check_pypi(
                entry,
                &rec,
                &mut out,
                name,
                spec.as_deref(),
                version,
                files,
                lookups,
            )
            .await;
        }
        (target, _) => {
            let live = match target {
                Target::Npm { name, spec } => format!(
                    "npm {name}{}",
                    spec.as_deref().map(|s| format!("@{s}")).unwrap_or_default()
                ),
                Target::Pypi { name, spec } => {
                    format!("pypi {name}{}", spec.as_deref().unwrap_or_default())
                }
                Target::Oci { reference } => format!("oci {reference}"),
                Target::Script { path } => format!("script {path}"),
                Target::Unrecognised => format!("not recognised ({})", rec.launcher),
            };
            let mut message = format!("the entry now launches {live}; the lock pins {pin}");
            if let (Target::Unrecognised, Some(note)) = (target, &rec.note) {
                let _ = write!(message, " (not recognised: {note})");
            }
            changed(&mut out, live, message);
        }
    }
    out
}

/// What of the project's own the launcher runs in place of the pinned npm package
/// ([`super::local`]), when it does: npx and `npm exec` look in the project first. A
/// wrapped entry with a pinned closure runs that closure from the guard's cache, never
/// the project's copy.
fn local_copy_runs(
    entry: &Entry<'_>,
    rec: &Recognised,
    pin: &PackagePin,
    name: &str,
    spec: Option<&str>,
) -> Option<String> {
    if !super::local::looks_locally(&rec.launcher) || (entry.guarded && pin.closure.is_some()) {
        return None;
    }
    let at = rec.arg?;
    let named = !rec.prefix.is_empty()
        || matches!(
            at.checked_sub(1)
                .and_then(|i| entry.args.get(i))
                .map(String::as_str),
            Some("--package" | "-p")
        );
    let word = (!named).then(|| entry.args[at].as_str());
    super::local::local_copy(entry.cwd, name, word, spec.and_then(npm::exact_version))
}

fn unrecognised_text(rec: &Recognised) -> String {
    match &rec.note {
        Some(note) => format!("not recognised: {note}; its code is not pinned"),
        None => format!(
            "launches `{}`, which mcp-lock does not recognise as a package runner or script; its code is not pinned",
            rec.launcher
        ),
    }
}

#[allow(clippy::too_many_arguments)]
async fn check_npm(
    entry: &Entry<'_>,
    rec: &Recognised,
    out: &mut PackageCheck,
    name: &str,
    spec: Option<&str>,
    version: &str,
    integrity: &str,
    lookups: Lookups,
) {
    let exact = spec.and_then(npm::exact_version);
    if let Some(written) = exact
        && written != version
    {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("npm {name}@{written}"));
        out.message = format!(
            "the config asks for {name}@{written}; the lock pins {version} ({version} -> {written})"
        );
        return;
    }
    if lookups == Lookups::Offline {
        out.status = PackageStatus::Skipped;
        out.message = "registry look-up skipped (--offline)".into();
        return;
    }
    let registry =
        match npm::registry_given(name, rec.registry.as_deref(), entry.project_dir, &|k| {
            entry.lookup(k)
        }) {
            Ok(registry) => registry,
            Err(e) => {
                out.status = PackageStatus::Unverifiable;
                out.message = e;
                return;
            }
        };
    let packument = match npm::fetch(&registry, name, &entry.fetcher).await {
        Ok(p) => p,
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    match packument.versions.get(version) {
        None => {
            out.status = PackageStatus::Changed;
            out.live = Some(format!("npm {name}@{version} (not published)"));
            out.message =
                format!("the pinned {name}@{version} is no longer published on {registry}");
            return;
        }
        // Only the sha512 entries are compared: npm verifies a tarball by no other.
        Some(live) if live.as_deref().and_then(npm::sha512_of) != npm::sha512_of(integrity) => {
            out.status = PackageStatus::Changed;
            out.live = Some(format!(
                "npm {name}@{version} ({})",
                live.as_deref().map(short).unwrap_or("no integrity")
            ));
            out.message = format!(
                "{registry} gives {name}@{version} another integrity than the lock pins ({} -> {})",
                short(integrity),
                live.as_deref().map(short).unwrap_or("none")
            );
            return;
        }
        Some(_) => {}
    }
    let target = npm::resolve(&packument, &registry, name, spec);
    report_target(
        out,
        entry.guarded,
        exact.is_some(),
        &format!("{name}@"),
        "npm",
        version,
        target,
        &format!("{name}@{version}"),
    );
}

#[allow(clippy::too_many_arguments)]
async fn check_pypi(
    entry: &Entry<'_>,
    rec: &Recognised,
    out: &mut PackageCheck,
    name: &str,
    spec: Option<&str>,
    version: &str,
    files: &BTreeMap<String, String>,
    lookups: Lookups,
) {
    let exact = spec.and_then(pypi::exact_version);
    if let Some(written) = exact
        && !pypi::same_version(written, version)
    {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("pypi {name}=={written}"));
        out.message = format!(
            "the config asks for {name}{}; the lock pins {version} ({version} -> {written})",
            spec.unwrap_or_default()
        );
        return;
    }
    if lookups == Lookups::Offline {
        out.status = PackageStatus::Skipped;
        out.message = "index look-up skipped (--offline)".into();
        return;
    }
    let index = rec
        .registry
        .clone()
        .unwrap_or_else(|| pypi::index_for(&rec.launcher, &|k| entry.lookup(k)));
    let listed = match pypi::fetch(&index, name, &entry.fetcher).await {
        Ok(f) => f,
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    let live = pypi::files_of(&listed, version);
    // Files may be added to a release later: only a pinned file that changed or
    // vanished counts.
    for (file, sha) in files {
        let problem = match live.get(file) {
            None => Some(format!(
                "{file} of the pinned {name}=={version} is no longer on {index}"
            )),
            Some(None) => {
                out.status = PackageStatus::Unverifiable;
                out.message =
                    format!("{index} gives no sha256 for {file}; the pin cannot be checked");
                return;
            }
            Some(Some(live)) if !live.eq_ignore_ascii_case(sha) => Some(format!(
                "{index} gives {file} another sha256 than the lock pins ({} -> {})",
                short(sha),
                short(live)
            )),
            Some(Some(_)) => None,
        };
        if let Some(message) = problem {
            out.status = PackageStatus::Changed;
            out.live = Some(format!("pypi {name}=={version} ({file} changed)"));
            out.message = message;
            return;
        }
    }
    let target = pypi_target(&listed, name, spec);
    report_target(
        out,
        entry.guarded,
        exact.is_some(),
        &format!("{name}=="),
        "pypi",
        version,
        target,
        &format!("{name}=={version}"),
    );
}

/// The verdict once the pinned version checked out: an unwrapped entry launches what
/// its spec resolves to (`target`); a wrapped one launches the pin, and a floating spec
/// warns. A spec that does not resolve leaves an unwrapped entry unverifiable and only
/// warns for a wrapped one, which never launches it.
#[allow(clippy::too_many_arguments)]
fn report_target(
    out: &mut PackageCheck,
    guarded: bool,
    exact: bool,
    prefix: &str,
    kind: &str,
    version: &str,
    target: Result<String, String>,
    pinned_spec: &str,
) {
    let target = match target {
        Ok(t) => t,
        Err(e) if guarded => {
            out.status = PackageStatus::Floating;
            out.message = format!("{e}; the guard launches the pinned {version}");
            return;
        }
        Err(e) => {
            out.status = PackageStatus::Unverifiable;
            out.message = e;
            return;
        }
    };
    let target = target.as_str();
    let same = if kind == "pypi" {
        pypi::same_version(target, version)
    } else {
        target == version
    };
    if !guarded && !same {
        out.status = PackageStatus::Changed;
        out.live = Some(format!("{kind} {prefix}{target}"));
        out.message = format!(
            "the host launches {prefix}{target}, the lock pins {version} ({version} -> {target}); every tool may be unchanged, the code is not"
        );
    } else if guarded && !exact {
        out.status = PackageStatus::Floating;
        out.live = Some(format!("{kind} {prefix}{version}"));
        out.message = format!(
            "floats; the registry's newest is {target}; pinned {version} (the guard launches {pinned_spec}); write {pinned_spec} in the config to pin it"
        );
    } else {
        out.live = Some(format!("{kind} {prefix}{version}"));
        out.message = format!("{pinned_spec} as pinned");
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::servers::package::tests::{pin, words};

    #[tokio::test]
    async fn a_changed_script_is_package_changed_offline_too() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("s.py"), "print(1)\n").unwrap();
        let env = BTreeMap::new();
        let args = words("s.py");
        let entry = Entry {
            command: "python3",
            args: &args,
            env: &env,
            cwd: dir.path(),
            project_dir: dir.path(),
            guarded: false,
            fetcher: Fetcher::default(),
        };
        let pinned = resolve_pin(&entry).await.unwrap();
        assert_eq!(pinned.package.kind(), "script");
        let same = check(&entry, Some(&pinned), Lookups::Offline).await;
        assert_eq!(same.status, PackageStatus::Pinned);
        std::fs::write(dir.path().join("s.py"), "print(2)\n").unwrap();
        let changed = check(&entry, Some(&pinned), Lookups::Offline).await;
        assert_eq!(changed.status, PackageStatus::Changed);
        assert!(
            changed.message.contains("changed since it was pinned"),
            "{}",
            changed.message
        );
    }

    #[tokio::test]
    async fn an_unreachable_registry_is_unverifiable_and_offline_is_skipped() {
        // A port nothing listens on: bound, then closed.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let env = BTreeMap::from([(
            "npm_config_registry".to_string(),
            format!("http://127.0.0.1:{port}/"),
        )]);
        let args = words("-y tiny-mcp");
        let entry = Entry {
            command: "npx",
            args: &args,
            env: &env,
            cwd: dir.path(),
            project_dir: dir.path(),
            guarded: false,
            fetcher: Fetcher::default(),
        };
        let npm = pin(
            Package::Npm {
                name: "tiny-mcp".into(),
                version: "1.0.0".into(),
                integrity: "sha512-x".into(),
            },
            "npx",
        );
        let online = check(&entry, Some(&npm), Lookups::Online).await;
        assert_eq!(online.status, PackageStatus::Unverifiable);
        assert!(
            online.message.contains("cannot reach"),
            "{}",
            online.message
        );
        // Offline, the registry is skipped; what the lock itself says is not.
        let unpinned = check(&entry, Some(&npm), Lookups::Offline).await;
        assert_eq!(unpinned.status, PackageStatus::ClosureUnpinned);
        assert!(
            unpinned.message.starts_with(
                "registry look-up skipped (--offline); its dependency closure is not pinned"
            ),
            "{}",
            unpinned.message
        );
        let mut with_closure = npm.clone();
        with_closure.closure = Some(closure::ClosurePin {
            hash: format!("sha256:{}", "a".repeat(64)),
            count: 1,
            closure: None,
        });
        assert_eq!(
            check(&entry, Some(&with_closure), Lookups::Offline)
                .await
                .status,
            PackageStatus::Skipped
        );
        assert!(resolve_pin(&entry).await.is_err());
    }
}
