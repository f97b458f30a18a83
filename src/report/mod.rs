//! Rendering verification results: for people (colour only on a terminal, every
//! server string escaped) and as one JSON document for machines.

mod ci;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde::Serialize;

pub use ci::{render_github, render_junit, render_sarif};

use crate::classify::{Class, Finding};
use crate::drift::{ChangeKind, ServerChange, ServerReport, ToolChange, Verdict};
use crate::exit_codes::ExitCode;
use crate::lock::{LockLines, Lockfile};
use crate::policy::{Action, Rule};
use crate::text::escape_for_terminal as esc;

/// What the CI formats need besides the reports: the lock's path as the user wrote
/// it, where each pin is in it, and which tools it pins.
#[derive(Debug, Clone, Default)]
pub struct LockContext {
    pub path: String,
    pub lines: LockLines,
    pub pinned: BTreeMap<String, Vec<String>>,
}

impl LockContext {
    /// `text` is the lock file's contents, for line numbers.
    pub fn new(path: &str, text: &str, lock: &Lockfile) -> Self {
        LockContext {
            path: path.to_string(),
            lines: LockLines::of(text),
            pinned: lock
                .servers
                .iter()
                .map(|(name, s)| (name.clone(), s.tools.keys().cloned().collect()))
                .collect(),
        }
    }
}

/// The JSON report's format version; bump on an incompatible change.
pub const REPORT_VERSION: u32 = 1;

/// The document `verify --format json` prints.
#[derive(Debug, Serialize)]
pub struct VerifyDocument<'a> {
    pub report_version: u32,
    pub lock: String,
    pub exit_code: i32,
    pub summary: Summary,
    pub servers: &'a [ServerReport],
}

/// How many servers got each verdict, and how many changes each action.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub converged: usize,
    pub stale: usize,
    pub incomplete: usize,
    pub unverifiable: usize,
    /// Changes (tools and server metadata) the policy fails, warns about, allows.
    pub fail: usize,
    pub warn: usize,
    pub allow: usize,
}

impl Summary {
    pub fn of(reports: &[ServerReport]) -> Self {
        let mut s = Summary::default();
        for r in reports {
            match r.verdict {
                Verdict::Converged => s.converged += 1,
                Verdict::Stale => s.stale += 1,
                Verdict::Incomplete => s.incomplete += 1,
                Verdict::Unverifiable => s.unverifiable += 1,
            }
            let actions = r
                .changes
                .iter()
                .map(|c| c.action)
                .chain(r.server_changes.iter().filter_map(|c| c.action));
            for action in actions {
                match action {
                    Action::Fail => s.fail += 1,
                    Action::Warn => s.warn += 1,
                    Action::Allow => s.allow += 1,
                }
            }
        }
        s
    }
}

/// The JSON report.
pub fn render_json(reports: &[ServerReport], lock: &str, exit: ExitCode) -> String {
    let doc = VerifyDocument {
        report_version: REPORT_VERSION,
        lock: lock.to_string(),
        exit_code: exit.into(),
        summary: Summary::of(reports),
        servers: reports,
    };
    crate::text::escape_json_output(&serde_json::to_string_pretty(&doc).expect("reports serialize"))
}

pub fn verdict_style_for(verdict: Verdict) -> Style {
    let color = match verdict {
        Verdict::Converged => AnsiColor::Green,
        Verdict::Stale => AnsiColor::Red,
        Verdict::Incomplete | Verdict::Unverifiable => AnsiColor::Yellow,
    };
    Style::new().fg_color(Some(color.into())).bold()
}

fn action_style(action: Action) -> Style {
    let color = match action {
        Action::Fail => AnsiColor::Red,
        Action::Warn => AnsiColor::Yellow,
        Action::Allow => AnsiColor::Cyan,
    };
    Style::new().fg_color(Some(color.into())).bold()
}

fn class_style(class: Class) -> Style {
    let color = match class {
        Class::Authority | Class::Breaking => AnsiColor::Red,
        Class::Semantic => AnsiColor::Yellow,
        Class::Additive => AnsiColor::Green,
        Class::Cosmetic => AnsiColor::Cyan,
    };
    Style::new().fg_color(Some(color.into()))
}

/// The first 12 hex digits, enough to tell pins apart in a report.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The human report: a line per server, then each change with its class, what the
/// policy does with it and every finding, then the server's stderr if it failed.
/// ANSI styles are stripped later when the output is not a terminal.
pub fn render_human(reports: &[ServerReport]) -> String {
    let width = reports
        .iter()
        .map(|r| esc(&r.name).chars().count())
        .max()
        .unwrap_or(0);
    let dim = Style::new().dimmed();
    let mut out = String::new();
    for r in reports {
        let style = verdict_style_for(r.verdict);
        let detail = match (r.verdict, r.tools) {
            (Verdict::Converged, Some(n)) => format!("{n} tool{}", plural(n)),
            (Verdict::Stale, _) if !r.changes.is_empty() || !r.server_changes.is_empty() => {
                let n = r.changes.len() + r.server_changes.iter().filter(|c| c.drift).count();
                format!("{n} change{}", plural(n))
            }
            (Verdict::Stale, _) => "server metadata changed".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {style}{:<12}{style:#}  {}",
            esc(&r.name),
            r.verdict.as_str(),
            detail
        );
        if let Some(error) = &r.error {
            let _ = writeln!(out, "    {}", esc(error));
        }
        for c in &r.changes {
            out.push_str(&change_header(c, "    ", None));
            out.push_str(&render_findings(&c.findings, "        "));
        }
        for c in &r.server_changes {
            out.push_str(&server_change_line(c, "    "));
        }
        if r.ignored_lines > 0 {
            let _ = writeln!(
                out,
                "    {dim}note: ignored {} on the server's stdout{dim:#}",
                crate::text::count(r.ignored_lines, "non-JSON-RPC line")
            );
        }
        if matches!(r.verdict, Verdict::Incomplete | Verdict::Unverifiable) && !r.stderr.is_empty()
        {
            let _ = writeln!(out, "    {dim}last stderr lines:{dim:#}");
            for line in r.stderr.iter().rev().take(5).rev() {
                let _ = writeln!(out, "    {dim}| {}{dim:#}", esc(line));
            }
        }
    }
    out
}

/// "changed  deploy_preview  authority, fail  1a2b… -> 9f8e…", the tool prefixed
/// with its server when given.
fn change_header(c: &ToolChange, indent: &str, server: Option<&str>) -> String {
    let dim = Style::new().dimmed();
    let rule = match c.change {
        ChangeKind::Changed => c.class.map_or("unclassified", Class::as_str),
        _ => Rule::of(c).as_str(),
    };
    let act = action_style(c.action);
    let tool = match server {
        Some(server) => format!("{}/{}", esc(server), esc(&c.tool)),
        None => esc(&c.tool),
    };
    let mut line = format!(
        "{indent}{:<8} {tool}  {rule}, {act}{}{act:#}  {dim}{}{dim:#}\n",
        c.change.as_str(),
        c.action.as_str(),
        hashes_text(c)
    );
    if let Some(problem) = &c.problem {
        let _ = writeln!(line, "{indent}    cannot be pinned: {}", esc(problem));
    }
    line
}

/// Each finding: class, pointer and reason; a word diff for text, before and after
/// for anything else. Every server string is escaped.
pub fn render_findings(findings: &[Finding], indent: &str) -> String {
    let dim = Style::new().dimmed();
    let mut out = String::new();
    for f in findings {
        let style = class_style(f.class);
        let pointer = if f.pointer.is_empty() {
            String::new()
        } else {
            format!("{}  ", esc(&f.pointer))
        };
        let _ = writeln!(
            out,
            "{indent}{style}{:<9}{style:#} {pointer}{}",
            f.class.as_str(),
            esc(&f.reason)
        );
        let pad = format!("{indent}          ");
        match (&f.before, &f.after) {
            (Some(serde_json::Value::String(a)), Some(serde_json::Value::String(b))) => {
                let _ = writeln!(out, "{pad}{}", word_diff(a, b));
            }
            // A whole tool added or removed: its header already says so.
            _ if f.pointer.is_empty() => {}
            (a, b) => {
                let _ = writeln!(
                    out,
                    "{pad}{dim}was{dim:#} {}  {dim}now{dim:#} {}",
                    value_text(a.as_ref()),
                    value_text(b.as_ref())
                );
            }
        }
    }
    out
}

/// A value as compact canonical JSON, escaped and cut to a readable length.
fn value_text(value: Option<&serde_json::Value>) -> String {
    const MAX: usize = 160;
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = crate::json::Json::from_value(value)
        .canonical()
        .unwrap_or_default();
    let text = esc(&text);
    if text.chars().count() > MAX {
        let cut: String = text.chars().take(MAX).collect();
        format!("{cut}…")
    } else {
        text
    }
}

/// A word-level diff on one line: `[-removed-]{+added+}`, coloured on a terminal.
/// Whitespace between two changed words joins them, so a reworded phrase reads whole.
pub fn word_diff(before: &str, after: &str) -> String {
    use similar::ChangeTag;
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
    // Word diffs are quadratic at worst; a hostile description must not stall a run.
    let diff = similar::TextDiff::configure()
        .timeout(std::time::Duration::from_millis(200))
        .diff_words(before, after);
    let tokens: Vec<(ChangeTag, &str)> = diff
        .iter_all_changes()
        .map(|c| (c.tag(), c.value()))
        .collect();
    let mut out = String::new();
    let (mut removed, mut added) = (String::new(), String::new());
    let flush = |removed: &mut String, added: &mut String, out: &mut String| {
        if !removed.is_empty() {
            let _ = write!(out, "{red}[-{}-]{red:#}", esc(removed));
        }
        if !added.is_empty() {
            let _ = write!(out, "{green}{{+{}+}}{green:#}", esc(added));
        }
        removed.clear();
        added.clear();
    };
    for (i, (tag, text)) in tokens.iter().enumerate() {
        match tag {
            ChangeTag::Delete => removed.push_str(text),
            ChangeTag::Insert => added.push_str(text),
            ChangeTag::Equal => {
                let pending = !removed.is_empty() || !added.is_empty();
                let next_changes = tokens
                    .get(i + 1)
                    .is_some_and(|(t, _)| *t != ChangeTag::Equal);
                if pending && next_changes && text.trim().is_empty() {
                    removed.push_str(text);
                    added.push_str(text);
                } else {
                    flush(&mut removed, &mut added, &mut out);
                    out.push_str(&esc(text));
                }
            }
        }
    }
    flush(&mut removed, &mut added, &mut out);
    out
}

/// The closing line: what the run concluded, and what the policy made of it.
pub fn render_summary(reports: &[ServerReport]) -> String {
    let s = Summary::of(reports);
    let total = reports.len();
    let mut parts = Vec::new();
    for (n, word) in [
        (s.stale, "stale"),
        (s.incomplete, "incomplete"),
        (s.unverifiable, "unverifiable"),
    ] {
        if n > 0 {
            parts.push(format!("{n} {word}"));
        }
    }
    let mut line = if parts.is_empty() {
        match total {
            0 => "no servers to check".into(),
            1 => "1 server converged".into(),
            n => format!("all {n} servers converged"),
        }
    } else {
        format!("{} of {total} server{}", parts.join(", "), plural(total))
    };
    let mut actions = Vec::new();
    for (n, word) in [
        (s.fail, "fail the policy"),
        (s.warn, "warn"),
        (s.allow, "allowed"),
    ] {
        if n > 0 {
            actions.push(format!("{n} {word}"));
        }
    }
    if !actions.is_empty() {
        let n = s.fail + s.warn + s.allow;
        let _ = write!(line, "; {n} change{}: {}", plural(n), actions.join(", "));
    }
    line
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A proposal as the reviewer sees it before approving: what moves, each finding
/// with its class and reason, word diffs for text. Every line is escaped.
pub fn render_proposal(proposal: &crate::update::Proposal) -> String {
    use crate::update::Proposal;
    let bold = Style::new().bold();
    let mut out = String::new();
    match proposal {
        Proposal::PinServer { server, tools } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: new server, {} tool{} to pin",
                esc(server),
                tools.len(),
                plural(tools.len())
            );
            for (name, hash) in tools {
                let _ = writeln!(out, "    {}  {}", short(hash), esc(name));
            }
        }
        Proposal::Tool { server, change } => {
            out.push_str(&change_header(change, "", Some(server)));
            out.push_str(&render_findings(&change.findings, "    "));
        }
        Proposal::Metadata { server, changes } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: server metadata changed",
                esc(server)
            );
            for c in changes {
                out.push_str(&server_change_line(c, "    "));
            }
        }
        Proposal::DropServer { server, tools } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: no longer in the config; drop its {tools} pin{}",
                esc(server),
                plural(*tools)
            );
        }
    }
    out
}

/// "changed  instructions  semantic, fail  1a2b… -> 9f8e…" or "note  protocol_version …".
fn server_change_line(change: &ServerChange, indent: &str) -> String {
    // Hashes are cut as tool hashes are; other fields are short values.
    let shown = |value: Option<&str>| match value {
        None => "(none)".to_string(),
        Some(hash) if change.field == "instructions" => esc(short(hash)),
        Some(value) => esc(value),
    };
    let values = format!(
        "{} -> {}",
        shown(change.pinned.as_deref()),
        shown(change.live.as_deref())
    );
    match (change.class, change.action) {
        (Some(class), Some(action)) => {
            let act = action_style(action);
            format!(
                "{indent}changed  {}  {class}, {act}{}{act:#}  {values}\n",
                change.field,
                action.as_str()
            )
        }
        _ => format!("{indent}note     {}: {values}\n", change.field),
    }
}

/// "1a2b… -> 9f8e…", "-> 9f8e…" or "was 1a2b…": the pins a change moves between.
fn hashes_text(change: &ToolChange) -> String {
    match (&change.pinned_hash, &change.live_hash) {
        (Some(a), Some(b)) => format!("{} -> {}", short(a), short(b)),
        (Some(a), None) if change.change == ChangeKind::Removed => format!("was {}", short(a)),
        (Some(a), None) => format!("{} -> (no hash)", short(a)),
        (None, Some(b)) => format!("-> {}", short(b)),
        (None, None) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_word_diff_joins_a_reworded_phrase_and_escapes_server_text() {
        let plain = |s: String| {
            let mut out = Vec::new();
            let mut w = anstream::StripStream::new(&mut out);
            std::io::Write::write_all(&mut w, s.as_bytes()).unwrap();
            String::from_utf8(out).unwrap()
        };
        assert_eq!(
            plain(word_diff("maximum results", "page index")),
            "[-maximum results-]{+page index+}"
        );
        assert_eq!(
            plain(word_diff(
                "Deploy a branch.",
                "Deploy a branch\u{1b}[2J now."
            )),
            "Deploy a [-branch.-]{+branch\\u{001b}[2J now.+}"
        );
    }
}
