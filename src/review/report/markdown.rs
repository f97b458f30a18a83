//! GitHub-flavoured Markdown, for job summaries (`$GITHUB_STEP_SUMMARY`) and
//! pull-request comments: a heading with the summary line, a table of every listing,
//! then a table of findings per server and client profile.
//!
//! Every string a server or config provides goes through [`md`]: it cannot close a
//! table cell, start a code span, emphasis or a link, write HTML, break a line, or
//! carry a control or bidi character (those are written as visible escapes).

use std::fmt::Write as _;

use super::{LockContext, render_summary, short};
use crate::base::text::{is_unsafe, left_out, split_at_chars};
use crate::contract::classify::Class;
use crate::review::offline::{OfflineServer, OfflineStatus, SKIPPED};
use crate::verdict::drift::{ChangeKind, ServerChange, ServerReport, ToolChange, Verdict};
use crate::verdict::exit_codes::ExitCode;
use crate::verdict::policy::Rule;

/// Characters of one cell of server text (a key, a reason, an error) shown at most.
const CELL_CHARS: usize = 300;

/// Server text as Markdown text that reads as written: line breaks become spaces,
/// control, bidi and invisible characters visible escapes (`\u{202e}`), and every
/// character Markdown or HTML would act on is escaped. Cut at `max` characters first,
/// with a count of what was left out.
pub fn md(text: &str, max: usize) -> String {
    let (head, rest) = split_at_chars(text, max);
    let mut out = String::with_capacity(head.len());
    for c in head.chars() {
        match c {
            '\n' | '\r' | '\t' => out.push(' '),
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            // Backslash first among these: server text cannot undo an escape.
            '\\' | '|' | '`' | '*' | '_' | '[' | ']' | '~' | '#' | '!' | '$' => {
                out.push('\\');
                out.push(c);
            }
            c if is_unsafe(c) => {
                let _ = write!(out, "\\\\u{{{:04x}}}", c as u32);
            }
            c => out.push(c),
        }
    }
    if rest > 0 {
        out.push_str(&left_out(rest, "character"));
    }
    out
}

/// One cell of server text.
fn cell(text: &str) -> String {
    md(text, CELL_CHARS)
}

/// "**fixture** [claude-code]": a listing, escaped.
fn label(server: &str, profile: &str) -> String {
    if profile.is_empty() {
        format!("**{}**", cell(server))
    } else {
        format!("**{}** \\[{}\\]", cell(server), cell(profile))
    }
}

fn verdict_text(verdict: Verdict) -> &'static str {
    match verdict {
        Verdict::Converged => "converged",
        Verdict::Stale => "**stale**",
        Verdict::Incomplete => "**incomplete**",
        Verdict::Unverifiable => "**unverifiable**",
    }
}

/// The Markdown report of `verify` or `diff`.
pub fn render_markdown(reports: &[ServerReport], ctx: &LockContext, code: ExitCode) -> String {
    let mut out = String::new();
    let _ = writeln!(out, "## mcp-lock: {}\n", md(&render_summary(reports), 2000));
    let _ = writeln!(
        out,
        "Lock: {} · exit code {}\n",
        cell(&ctx.path),
        i32::from(code)
    );
    if reports.is_empty() {
        return out;
    }
    out.push_str("| Server | Profile | Verdict | Listed | Changes |\n");
    out.push_str("| --- | --- | --- | --- | --- |\n");
    for r in reports {
        let changes = r.changes.len()
            + r.server_changes.iter().filter(|c| c.drift).count()
            + usize::from(super::package_changed(r));
        let _ = writeln!(
            out,
            "| {} | {} | {} | {} | {} |",
            cell(&r.name),
            cell(&r.profile),
            verdict_text(r.verdict),
            r.listed_text().unwrap_or_else(|| "—".into()),
            changes
        );
    }
    for r in reports {
        out.push_str(&server_section(r));
    }
    out
}

/// A listing's section: its error or notes, then its changes as a table. Nothing for
/// one that converged with nothing to say.
fn server_section(r: &ServerReport) -> String {
    let unverified = matches!(r.verdict, Verdict::Incomplete | Verdict::Unverifiable);
    let package_notable = r.package.as_ref().is_some_and(|p| {
        !matches!(
            p.status,
            crate::servers::package::PackageStatus::Pinned
                | crate::servers::package::PackageStatus::Skipped
        )
    });
    let quiet = r.changes.is_empty()
        && r.server_changes.is_empty()
        && r.error.is_none()
        && r.pinned
        && !package_notable;
    if quiet && r.not_pinned_yet.is_empty() && r.not_implemented.is_empty() && r.denied.is_empty() {
        return String::new();
    }
    // Blocks, a blank line between each.
    let mut blocks = vec![if quiet {
        format!("### {}\n", label(&r.name, &r.profile))
    } else {
        format!(
            "### {}: {}\n",
            label(&r.name, &r.profile),
            verdict_text(r.verdict)
        )
    }];
    if let Some(error) = &r.error {
        let what = if unverified { "Error" } else { "Note" };
        blocks.push(format!("{what}: {}\n", cell(error)));
    } else if !r.pinned {
        blocks.push("Not pinned in the lock; run `mcp-lock update`.\n".into());
    }
    if unverified && !r.stderr.is_empty() {
        let mut block = String::from("Last stderr lines:\n\n");
        for line in r.stderr.iter().rev().take(5).rev() {
            let _ = writeln!(block, "- {}", cell(line));
        }
        blocks.push(block);
    }
    if !r.changes.is_empty() || !r.server_changes.is_empty() {
        let mut table = String::from("| Change | Kind | Key | Class | Action | Reason |\n");
        table.push_str("| --- | --- | --- | --- | --- | --- |\n");
        for c in &r.changes {
            table.push_str(&change_row(c));
        }
        for c in &r.server_changes {
            table.push_str(&server_change_row(c));
        }
        blocks.push(table);
    }
    if !r.not_pinned_yet.is_empty() {
        blocks.push(not_pinned_yet(r));
    }
    for kind in &r.not_implemented {
        blocks.push(format!(
            "Note: {}.\n",
            cell(&crate::verdict::drift::not_implemented_note(*kind))
        ));
    }
    if !r.denied.is_empty() {
        let mut table = format!(
            "Denied to {} by the tool rules (pinned, never served):\n\n| Kind | Key | Action | Rule |\n| --- | --- | --- | --- |\n",
            cell(&r.profile)
        );
        for d in &r.denied {
            let _ = writeln!(
                table,
                "| {} | {} | {} | {} |",
                d.kind.noun(),
                cell(&d.name),
                d.action.as_str(),
                cell(&d.denial.to_string())
            );
        }
        blocks.push(table);
    }
    if let Some(p) = r.package.as_ref().filter(|_| package_notable) {
        let rule = match p.status {
            crate::servers::package::PackageStatus::Unverifiable => "unverifiable",
            status => status.rule().unwrap_or("note"),
        };
        let values = match (&p.pinned, &p.live) {
            (Some(a), Some(b)) if p.status.moved() => {
                format!("{} → {}", cell(a), cell(b))
            }
            (Some(a), _) => cell(a),
            (None, _) => "—".into(),
        };
        blocks.push(format!(
            "Package ({}, {}): {} · {} · {}: {}\n",
            cell(p.kind),
            cell(&p.launcher),
            p.status.as_str(),
            values,
            rule,
            if p.status.rule().is_some() {
                format!("**{}** · {}", p.action.as_str(), cell(&p.message))
            } else {
                cell(&p.message)
            }
        ));
    }
    format!("\n{}", blocks.join("\n"))
}

fn not_pinned_yet(r: &ServerReport) -> String {
    if r.not_pinned_yet.is_empty() {
        return String::new();
    }
    let kinds: Vec<&str> = r.not_pinned_yet.iter().map(|k| k.plural()).collect();
    format!(
        "Note: {} not pinned yet (the lock is from before they were); `mcp-lock update` pins them.\n",
        kinds.join(" and ")
    )
}

/// "| changed | tool | deploy_preview | authority | **fail** | … |".
fn change_row(c: &ToolChange) -> String {
    let class = match c.change {
        ChangeKind::Changed => c.class.map_or("unclassified", Class::as_str),
        _ => Rule::of(c).as_str(),
    };
    let key = match &c.renamed_from {
        Some(from) => format!("{} (was {})", cell(&c.tool), cell(from)),
        None => cell(&c.tool),
    };
    let mut reason = match c.findings.first() {
        Some(f) if f.pointer.is_empty() => cell(&f.reason),
        Some(f) => format!("{}: {}", cell(&f.pointer), cell(&f.reason)),
        None => String::new(),
    };
    if c.findings.len() > 1 {
        let _ = write!(
            reason,
            " (and {})",
            crate::base::text::count(c.findings.len() - 1, "more finding")
        );
    }
    if let Some(problem) = &c.problem {
        let _ = write!(reason, " Cannot be pinned: {}", cell(problem));
    }
    // The worst screening finding, with how many more.
    if let Some(f) = c.screening.first() {
        let _ = write!(
            reason,
            " Screening: {} {} at {}: {}",
            f.severity,
            f.rule,
            cell(&f.pointer),
            cell(&f.reason)
        );
        if c.screening.len() > 1 {
            let _ = write!(
                reason,
                " (and {})",
                crate::base::text::count(c.screening.len() - 1, "more finding")
            );
        }
    }
    format!(
        "| {} | {} | {key} | {class} | {} | {} |\n",
        c.change.as_str(),
        c.kind.as_str(),
        action_text(c.action.as_str()),
        reason.trim()
    )
}

fn action_text(action: &str) -> String {
    if action == "fail" {
        "**fail**".into()
    } else {
        action.into()
    }
}

/// A change to the server itself: instructions and identity are drift with a class
/// and action; the rest (protocol version, launch) are notes.
fn server_change_row(c: &ServerChange) -> String {
    let shown = |value: Option<&str>| match value {
        None => "(none)".to_string(),
        Some(hash) if c.field == "instructions" => cell(short(hash)),
        Some(value) => cell(value),
    };
    let values = format!(
        "{} → {}",
        shown(c.pinned.as_deref()),
        shown(c.live.as_deref())
    );
    let (class, action) = match (c.rule_name(), c.action) {
        (Some(rule), Some(action)) => (rule, action_text(action.as_str())),
        _ => ("—", "note".into()),
    };
    let change = if c.field == "server" {
        "removed"
    } else {
        "changed"
    };
    format!(
        "| {change} | server | {} | {class} | {action} | {values} |\n",
        c.field
    )
}

/// The Markdown form of `verify --no-connect`.
pub fn render_offline_markdown(servers: &[OfflineServer], lock: &str, code: i32) -> String {
    let problems = servers.iter().filter(|s| s.problem.is_some()).count();
    let headline = if problems == 0 {
        format!(
            "every configured server is pinned with its launch ({})",
            crate::base::text::count(servers.len(), "server")
        )
    } else {
        format!(
            "{} of {}",
            crate::base::text::count(problems, "problem"),
            crate::base::text::count(servers.len(), "server")
        )
    };
    let mut out = format!("## mcp-lock verify --no-connect: {headline}\n\n");
    let _ = writeln!(out, "Lock: {} · exit code {code}\n", cell(lock));
    if !servers.is_empty() {
        out.push_str("| Server | Profiles | Status | Problem |\n| --- | --- | --- | --- |\n");
        for s in servers {
            let status = match s.status {
                OfflineStatus::Pinned => "pinned".to_string(),
                other => format!("**{}**", other.as_str().replace('_', " ")),
            };
            let _ = writeln!(
                out,
                "| {} | {} | {status} | {} |",
                cell(&s.name),
                cell(&s.profiles.join(", ")),
                s.problem.as_deref().map(cell).unwrap_or_default()
            );
        }
        out.push('\n');
    }
    out.push_str("Skipped (needs a connection or is not recorded):\n\n");
    for skipped in SKIPPED {
        let _ = writeln!(out, "- {skipped}");
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn server_text_cannot_leave_its_cell_or_mark_anything_up() {
        assert_eq!(
            md("a|b`c`<img src=x>&*_[l](u)\n# h\\|", 100),
            "a\\|b\\`c\\`&lt;img src=x&gt;&amp;\\*\\_\\[l\\](u) \\# h\\\\\\|"
        );
    }

    #[test]
    fn controls_and_bidi_are_shown_as_escapes() {
        assert_eq!(
            md("x\u{1b}[2J\u{202e}y\u{200b}", 100),
            "x\\\\u{001b}\\[2J\\\\u{202e}y\\\\u{200b}"
        );
    }

    #[test]
    fn long_text_is_cut_with_a_count() {
        assert_eq!(md("abcdef", 3), "abc… (3 more characters)");
    }
}
