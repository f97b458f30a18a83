//! What `update` shows a reviewer before each approval.

use super::*;

/// A proposal as the reviewer sees it before approving: what moves, each finding
/// with its class and reason, word diffs for text. Every line is escaped.
pub fn render_proposal(proposal: &crate::review::update::Proposal) -> String {
    use crate::review::update::Proposal;
    let bold = Style::new().bold();
    let mut out = String::new();
    match proposal {
        Proposal::Package { server, old, new } => {
            let rule = if old.is_some() {
                "package-changed"
            } else {
                "not pinned yet"
            };
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: package ({rule}), launched with {}",
                esc(server),
                esc(&new.launcher)
            );
            match old {
                Some(old) => {
                    let _ = writeln!(out, "    pinned    {}", esc(&old.to_string()));
                }
                None => {
                    let _ = writeln!(out, "    pinned    (none)");
                }
            }
            let _ = writeln!(out, "    resolved  {}", esc(&new.to_string()));
            for line in package_detail(new) {
                let _ = writeln!(out, "        {}", esc(&line));
            }
            for line in closure_lines(old.as_ref(), new) {
                let _ = writeln!(out, "    closure   {}", esc(&line));
            }
        }
        Proposal::PinServer {
            server,
            profile,
            tools,
            instructions,
            package,
        } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: new server, {} to pin",
                server_label(server, profile),
                kinds_text(tools)
            );
            if let Some(package) = package {
                let _ = writeln!(
                    out,
                    "    package  {} (launched with {})",
                    esc(&package.to_string()),
                    esc(&package.launcher)
                );
                if let Some(closure) = &package.closure {
                    let _ = writeln!(
                        out,
                        "    closure  {} ({})",
                        esc(&closure.hash),
                        count(closure.count, "package")
                    );
                }
            }
            out.push_str(&instructions_block(instructions.as_deref(), "    "));
            for tool in tools {
                let hash = tool.live_hash.as_deref().unwrap_or("");
                let _ = writeln!(out, "    {}  {}", short(hash), esc(&tool.tool));
                out.push_str(&render_screened(&tool.screening, "        "));
                out.push_str(&render_findings(&tool.findings, "        "));
                out.push_str(&added_definition(tool, "        "));
            }
        }
        Proposal::PinKind {
            server,
            profile,
            kind,
            items,
        } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: {} not pinned yet (a lock from before they were); {} to pin",
                server_label(server, profile),
                kind.plural(),
                count(items.len(), kind.noun())
            );
            for item in items {
                let hash = item.live_hash.as_deref().unwrap_or("");
                let _ = writeln!(out, "    {}  {}", short(hash), esc(&item.tool));
                out.push_str(&render_screened(&item.screening, "        "));
                out.push_str(&render_findings(&item.findings, "        "));
                out.push_str(&added_definition(item, "        "));
            }
        }
        Proposal::PinProfile {
            server,
            profile,
            changes,
            listed,
            instructions,
        } => {
            let approved: Vec<(Kind, usize)> = listed
                .iter()
                .map(|&(kind, n)| {
                    let new = changes.iter().filter(|c| c.kind == kind).count();
                    (kind, n.saturating_sub(new))
                })
                .collect();
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: client profile {} not pinned yet; pin its listing ({} already approved, {} new or different)",
                server_label(server, profile),
                esc(profile),
                super::counts_text(&approved),
                changes.len()
            );
            out.push_str(&instructions_block(instructions.as_deref(), "    "));
            for change in changes {
                out.push_str(&change_header(change, "    ", None));
                out.push_str(&render_screened(&change.screening, "        "));
                out.push_str(&render_findings(&change.findings, "        "));
                out.push_str(&added_definition(change, "        "));
            }
        }
        Proposal::DropProfile {
            server,
            profile,
            only,
        } => {
            let tail = if *only == 0 {
                "every tool it pins stays approved under another profile".to_string()
            } else {
                format!(
                    "{} only it approves will no longer be approved",
                    count(*only, "tool")
                )
            };
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: client profile {} is no longer selected; drop its listing ({tail})",
                server_label(server, profile),
                esc(profile)
            );
        }
        Proposal::Tool {
            server,
            profile,
            change,
        } => {
            out.push_str(&change_header(change, "", Some((server, profile))));
            out.push_str(&render_screened(&change.screening, "    "));
            out.push_str(&render_findings(&change.findings, "    "));
            out.push_str(&added_definition(change, "    "));
        }
        Proposal::Metadata {
            server,
            profile,
            changes,
            instructions,
        } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: server metadata changed",
                server_label(server, profile)
            );
            for c in changes {
                out.push_str(&server_change_line(c, "    "));
                out.push_str(&instructions_change(c, instructions.as_deref(), "        "));
            }
        }
        Proposal::DropServer { server, tools } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: no longer in the config; drop its {}",
                esc(server),
                count(*tools, "pin")
            );
        }
    }
    out
}

/// What a package move does to the dependency closure: its hash and count, then each
/// package that moved when both closures' packages are at hand.
fn closure_lines(
    old: Option<&crate::servers::package::PackagePin>,
    new: &crate::servers::package::PackagePin,
) -> Vec<String> {
    let Some(now) = &new.closure else {
        return Vec::new();
    };
    let before = old.and_then(|o| o.closure.as_ref());
    let mut lines = vec![match before {
        Some(b) if b.hash == now.hash => format!("unchanged ({})", count(now.count, "package")),
        Some(b) => format!(
            "{} ({}) -> {} ({})",
            b.hash,
            count(b.count, "package"),
            now.hash,
            count(now.count, "package")
        ),
        None => format!(
            "not pinned yet -> {} ({})",
            now.hash,
            count(now.count, "package")
        ),
    }];
    if let (Some(b), Some(n)) = (
        before.and_then(|b| b.closure.as_ref()),
        now.closure.as_ref(),
    ) {
        lines.extend(
            crate::servers::package::closure::changes(b, n)
                .iter()
                .map(|c| format!("  {c}")),
        );
    }
    lines
}

/// "changed  instructions  semantic, fail  1a2b… -> 9f8e…" or "note  protocol_version …".
/// What a resolved package pin records beyond its one-line form: the integrity, each
/// file's sha256, the digest.
fn package_detail(pin: &crate::servers::package::PackagePin) -> Vec<String> {
    use crate::servers::package::Package;
    match &pin.package {
        Package::Npm { integrity, .. } => vec![format!("integrity {integrity}")],
        Package::Pypi { files, .. } => files
            .iter()
            .map(|(f, sha)| format!("{f} sha256 {sha}"))
            .collect(),
        Package::Oci {
            digest: Some(d), ..
        } => vec![format!("digest {d}")],
        Package::Oci { digest: None, .. } => {
            vec!["no digest: a tag-only image is reported as floating by verify".into()]
        }
        Package::Script { sha256, .. } => vec![format!("sha256 {sha256}")],
        Package::Unrecognised => {
            vec!["not a launcher mcp-lock recognises: recorded, its code not pinned".into()]
        }
        Package::Unresolved { reason } => vec![format!(
            "not resolved ({reason}): verify reports it as unverifiable until `update` pins it"
        )],
    }
}
