//! `update --pull-request DIR`: what a scheduled job's pull request is made of.

use super::*;

/// What a pull request leaves out, for its body: servers not checked (their pins
/// stay) and definitions screening kept from being pinned unasked.
pub(super) fn left_out_lines(
    held: &[mcp_lock::review::update::Held],
    withheld: &[mcp_lock::review::update::Withheld],
) -> Vec<String> {
    let mut lines: Vec<String> = held
        .iter()
        .filter(|h| !h.secret)
        .map(|h| {
            format!(
                "{} [{}]: {}: {}; its pins are unchanged",
                h.server,
                h.profile,
                h.verdict.as_str(),
                h.reason
            )
        })
        .collect();
    lines.extend(withheld.iter().map(|w| {
        format!(
            "{} {}/{} [{}]: not pinned, screening found {}; a person reviews it with `mcp-lock update {}` in a terminal, or the team accepts the findings in [screen] accept",
            w.kind.noun(),
            w.server,
            w.key,
            w.profile,
            w.findings,
            w.server
        )
    }));
    lines
}

/// `update --pull-request DIR`: the pull request's title.txt, labels.txt (one a line)
/// and body.md, or, when the lock did not move, none of them (any left from an earlier
/// run are removed, so a job never opens a pull request for an old run); and always
/// paths.txt, the lock and its companion (absolute, one a line): what a pull request
/// commits.
pub(super) fn write_review(
    dir: &std::path::Path,
    review: Option<&Review>,
    lock_path: &std::path::Path,
) -> anyhow::Result<()> {
    std::fs::create_dir_all(dir).with_context(|| format!("cannot create {}", dir.display()))?;
    let lock = std::path::absolute(lock_path)
        .with_context(|| format!("cannot resolve {}", lock_path.display()))?;
    let companion = mcp_lock::records::lock::closures::companion_path(&lock);
    let mut files = vec![(
        "paths.txt",
        Some(format!("{}\n{}\n", lock.display(), companion.display())),
    )];
    files.extend([
        ("title.txt", review.map(|r| format!("{}\n", r.title))),
        (
            "labels.txt",
            review.map(|r| r.labels.iter().map(|l| format!("{l}\n")).collect()),
        ),
        ("body.md", review.map(|r| r.body.clone())),
    ]);
    for (name, text) in files {
        let path = dir.join(name);
        match text {
            Some(text) => std::fs::write(&path, text)
                .with_context(|| format!("cannot write {}", path.display()))?,
            None => match std::fs::remove_file(&path) {
                Err(e) if e.kind() != std::io::ErrorKind::NotFound => {
                    return Err(e).with_context(|| format!("cannot remove {}", path.display()));
                }
                _ => {}
            },
        }
    }
    Ok(())
}
