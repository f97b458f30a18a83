//! Moving a package-pinned server to another release (`mcp-lock upgrade`): the
//! candidate's pin and launch, and which of the approved proposals may be written.
//!
//! The candidate is listed as `update` lists a server, and its differences become
//! [`Proposal`]s; a server's package proposal gates all of them: a server moves to the
//! new release whole (its package, launch and approved definitions) or not at all.

use std::path::Path;

use crate::records::lock::{Lockfile, Reached};
use crate::review::update::Proposal;
use crate::servers::package::{Package, PackagePin, Target, pinned_launch, recognise};

/// `pin` at `version`: the same package, its integrity or files, and its closure not
/// known yet. Only what [`pinned_launch`] reads is right in it.
pub fn at_version(pin: &PackagePin, version: &str) -> PackagePin {
    let package = match &pin.package {
        Package::Npm { name, .. } => Package::Npm {
            name: name.clone(),
            version: version.to_string(),
            integrity: String::new(),
        },
        Package::Pypi { name, .. } => Package::Pypi {
            name: name.clone(),
            version: version.to_string(),
            files: Default::default(),
        },
        other => other.clone(),
    };
    PackagePin {
        launcher: pin.launcher.clone(),
        package,
        closure: None,
    }
}

/// The argument of a config entry (`command args`, as written) that names its
/// package's version, and what it becomes at `pin`'s version: `tiny-mcp@1.0.0` ->
/// `tiny-mcp@1.1.0`, `tiny-py==1.0.0` -> `tiny-py==1.1.0`. `None` when the entry names
/// no version (`npx -y tiny-mcp`): the config stays as it is and only the lock moves.
pub fn version_arg(
    command: &str,
    args: &[String],
    cwd: &Path,
    project_dir: &Path,
    pin: &PackagePin,
) -> Option<(usize, String)> {
    let rec = recognise(command, args, &|_| false);
    let names_version = match &rec.target {
        Target::Npm { spec, .. } | Target::Pypi { spec, .. } => spec.is_some(),
        _ => false,
    };
    if !names_version {
        return None;
    }
    let new = pinned_launch(command, args, cwd, project_dir, Some(pin));
    let at = args.iter().zip(&new).position(|(a, b)| a != b)?;
    Some((at, new[at].clone()))
}

/// Each server's package proposal ahead of its other proposals, the servers in the
/// order they came: the move is asked about first.
pub fn package_first(proposals: Vec<Proposal>) -> Vec<Proposal> {
    let mut servers: Vec<String> = Vec::new();
    for p in &proposals {
        if !servers.iter().any(|s| s == p.server()) {
            servers.push(p.server().to_string());
        }
    }
    let mut out = Vec::with_capacity(proposals.len());
    for server in servers {
        let (package, rest): (Vec<&Proposal>, Vec<&Proposal>) = proposals
            .iter()
            .filter(|p| p.server() == server)
            .partition(|p| matches!(p, Proposal::Package { .. }));
        out.extend(package.into_iter().chain(rest).cloned());
    }
    out
}

/// The servers whose package proposal was accepted.
pub fn moving(proposals: &[Proposal], decisions: &[bool]) -> Vec<String> {
    proposals
        .iter()
        .zip(decisions)
        .filter(|(p, yes)| **yes && matches!(p, Proposal::Package { .. }))
        .map(|(p, _)| p.server().to_string())
        .collect()
}

/// The accepted proposals that may be written: those of servers whose package move
/// was accepted. Anything of a server whose move was rejected stays as pinned.
pub fn writable(proposals: &[Proposal], decisions: &[bool]) -> Vec<Proposal> {
    let moving = moving(proposals, decisions);
    proposals
        .iter()
        .zip(decisions)
        .filter(|(p, yes)| **yes && moving.iter().any(|s| s == p.server()))
        .map(|(p, _)| p.clone())
        .collect()
}

/// Records `reached` (the entry as the config will have it) as how `server` is
/// launched, under every profile its lock pins: the lock then says what verify will
/// read in the config, whichever definitions were approved.
pub fn record_launch(lock: &mut Lockfile, server: &str, reached: &Reached) {
    if let Some(pins) = lock.servers.get_mut(server) {
        for profile in pins.profiles.values_mut() {
            profile.reached = reached.clone();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn npm(version: &str) -> PackagePin {
        PackagePin {
            launcher: "npx".into(),
            package: Package::Npm {
                name: "tiny-mcp".into(),
                version: version.into(),
                integrity: "sha512-x".into(),
            },
            closure: None,
        }
    }

    fn strings(args: &[&str]) -> Vec<String> {
        args.iter().map(|a| a.to_string()).collect()
    }

    #[test]
    fn a_config_naming_a_version_has_that_argument_moved_and_a_floating_one_none() {
        let dir = Path::new("/p");
        let pin = at_version(&npm("1.0.0"), "1.1.0");
        assert_eq!(
            version_arg("npx", &strings(&["-y", "tiny-mcp@1.0.0"]), dir, dir, &pin),
            Some((1, "tiny-mcp@1.1.0".to_string()))
        );
        assert_eq!(
            version_arg("npx", &strings(&["-y", "tiny-mcp"]), dir, dir, &pin),
            None
        );
        let py = PackagePin {
            launcher: "uvx".into(),
            package: Package::Pypi {
                name: "tiny-py".into(),
                version: "1.1.0".into(),
                files: Default::default(),
            },
            closure: None,
        };
        assert_eq!(
            version_arg("uvx", &strings(&["tiny-py==1.0.0"]), dir, dir, &py),
            Some((0, "tiny-py==1.1.0".to_string()))
        );
    }

    /// Any other proposal of `server`.
    fn other(server: &str) -> Proposal {
        Proposal::DropProfile {
            server: server.into(),
            profile: "bare".into(),
            only: 0,
        }
    }

    fn package(server: &str) -> Proposal {
        Proposal::Package {
            server: server.into(),
            old: Some(npm("1.0.0")),
            new: npm("1.1.0"),
        }
    }

    #[test]
    fn the_package_is_asked_first_and_a_rejected_one_keeps_its_servers_changes_out() {
        let proposals = package_first(vec![other("a"), package("a"), other("b"), package("b")]);
        let order: Vec<(&str, bool)> = proposals
            .iter()
            .map(|p| (p.server(), matches!(p, Proposal::Package { .. })))
            .collect();
        assert_eq!(
            order,
            [("a", true), ("a", false), ("b", true), ("b", false)]
        );
        // a's package accepted, its other change too; b's package rejected, its other
        // change accepted.
        let kept = writable(&proposals, &[true, true, false, true]);
        assert_eq!(kept.len(), 2);
        assert!(kept.iter().all(|p| p.server() == "a"));
        assert_eq!(moving(&proposals, &[true, true, false, true]), ["a"]);
    }
}
