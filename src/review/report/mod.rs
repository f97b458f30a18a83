//! Rendering verification results: for people (colour only on a terminal, every
//! server string escaped) and as one JSON document for machines.

mod ci;
mod markdown;
mod proposal;
mod review;
mod screen;
mod word_diff;

use std::collections::BTreeMap;
use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde::Serialize;

pub use ci::{render_github, render_junit, render_sarif};
pub use markdown::{md as escape_markdown, render_markdown, render_offline_markdown};
pub use proposal::render_proposal;
pub use review::{Review, render_review};
pub use screen::{
    ScannedItem, ScannedServer, counts as screen_counts, render_scan_json, render_scan_sarif,
    render_scan_text, render_screened,
};
pub use word_diff::word_diff;

use crate::base::json::Json;
use crate::base::text::{
    Folded, count, escape_cut, escape_for_terminal as esc, left_out, split_at_chars,
};
use crate::contract::classify::{Class, Finding};
use crate::contract::surface::Kind;
use crate::records::lock::{LockLines, Lockfile};
use crate::servers::package::{PackageCheck, PackageStatus};
use crate::verdict::drift::{ChangeKind, ServerChange, ServerReport, ToolChange, Verdict};
use crate::verdict::exit_codes::ExitCode;
use crate::verdict::policy::{Action, Rule};

/// One definition the tool rules deny: `note: denied: tool delete_repo to codex:
/// [tools] deny "github/delete_*" in mcp-lock.toml (pinned, never served)`, styled by
/// what the policy does with it.
pub fn denied_line(d: &crate::verdict::rules::Denied, profile: &str, indent: &str) -> String {
    let style = match d.action {
        Action::Allow => Style::new().dimmed(),
        action => action_style(action),
    };
    let label = match d.action {
        Action::Fail => "denied",
        Action::Warn => "warning: denied",
        Action::Allow => "note: denied",
    };
    format!(
        "{indent}{style}{label}: {} {} to {}: {} (pinned, never served){style:#}\n",
        d.kind.noun(),
        esc(&d.name),
        esc(profile),
        esc(&d.denial.to_string())
    )
}

/// What the CI formats need besides the reports: the lock's path as the user wrote
/// it, where each pin is in it, and which tools it pins.
#[derive(Debug, Clone, Default)]
pub struct LockContext {
    pub path: String,
    pub lines: LockLines,
    /// The definitions pinned for each (server, client profile), by kind and key.
    pub pinned: BTreeMap<(String, String), Vec<(Kind, String)>>,
}

impl LockContext {
    /// `text` is the lock file's contents, for line numbers.
    pub fn new(path: &str, text: &str, lock: &Lockfile) -> Self {
        LockContext::with_lines(path, LockLines::of(text), lock)
    }

    /// [`LockContext::new`] with the lines found when the lock was read
    /// ([`crate::records::lock::read_lock_with_lines`]).
    pub fn with_lines(path: &str, lines: LockLines, lock: &Lockfile) -> Self {
        LockContext {
            path: path.to_string(),
            lines,
            pinned: lock
                .servers
                .iter()
                .flat_map(|(name, s)| {
                    s.profiles.iter().map(move |(profile, listing)| {
                        let items = Kind::ALL
                            .into_iter()
                            .flat_map(|kind| {
                                listing.items(kind).into_iter().flat_map(move |items| {
                                    items.keys().map(move |k| (kind, k.clone()))
                                })
                            })
                            .collect();
                        ((name.clone(), profile.clone()), items)
                    })
                })
                .collect(),
        }
    }
}

/// The JSON report's format version; bump on an incompatible change.
pub const REPORT_VERSION: u32 = 2;

/// The document `verify --format json` prints.
#[derive(Debug, Serialize)]
pub struct VerifyDocument<'a> {
    pub report_version: u32,
    pub lock: String,
    pub exit_code: i32,
    pub summary: Summary,
    pub servers: &'a [ServerReport],
    /// Hosts that last sent the guard another handshake than the lock pinned for
    /// their profile (`.mcp-lock/handshakes.json`); a notice, never an exit code.
    #[serde(skip_serializing_if = "<[_]>::is_empty")]
    pub observed_handshakes: &'a [crate::records::observed::Observed],
}

/// How many servers got each verdict, and how many changes each action.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub converged: usize,
    pub stale: usize,
    pub incomplete: usize,
    pub unverifiable: usize,
    /// Changes (tools, server metadata, package findings) the policy fails, warns
    /// about, allows.
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
                .chain(r.server_changes.iter().filter_map(|c| c.action))
                .chain(
                    r.package
                        .iter()
                        .filter(|p| p.status.rule().is_some())
                        .map(|p| p.action),
                );
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
    render_json_observed(reports, lock, exit, &[])
}

/// The JSON report with the handshakes hosts were last seen sending, where they
/// differ from the lock's.
pub fn render_json_observed(
    reports: &[ServerReport],
    lock: &str,
    exit: ExitCode,
    observed: &[crate::records::observed::Observed],
) -> String {
    let doc = VerifyDocument {
        report_version: REPORT_VERSION,
        lock: lock.to_string(),
        exit_code: exit.into(),
        summary: Summary::of(reports),
        servers: reports,
        observed_handshakes: observed,
    };
    crate::base::text::escape_json_output(
        &serde_json::to_string_pretty(&doc).expect("reports serialize"),
    )
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

/// "3 tools, 4 prompts, 2 templates": definitions by kind, tools always named.
pub fn kinds_text(items: &[ToolChange]) -> String {
    let counted: Vec<(Kind, usize)> = Kind::ALL
        .into_iter()
        .map(|kind| (kind, items.iter().filter(|c| c.kind == kind).count()))
        .collect();
    counts_text(&counted)
}

/// "19 tools, 4 prompts, 2 templates": counts by kind, tools always named, other kinds
/// only when there are some.
pub fn counts_text(counted: &[(Kind, usize)]) -> String {
    counted
        .iter()
        .filter(|(kind, n)| *n > 0 || *kind == Kind::Tool)
        .map(|(kind, n)| count(*n, kind.noun()))
        .collect::<Vec<_>>()
        .join(", ")
}

/// "github [vscode]": a server as listed under one client profile, escaped.
pub fn server_label(server: &str, profile: &str) -> String {
    if profile.is_empty() {
        esc(server)
    } else {
        format!("{} [{}]", esc(server), esc(profile))
    }
}

/// The first 12 hex digits, enough to tell pins apart in a report.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// Lines of server text a definition or instructions are shown with at most.
const SHOWN_LINES: usize = 40;
/// Characters of one such line (or of an error message) shown at most; the terminal
/// wraps what is kept.
pub const SHOWN_LINE_CHARS: usize = 1000;
/// Characters of a value (compact JSON, a server setting) shown at most on one line.
const SHOWN_VALUE_CHARS: usize = 200;
/// Characters of server text a word diff shows at most.
const DIFF_CHARS: usize = 2000;
/// Unchanged characters a word diff keeps on each side of a change.
const DIFF_CONTEXT: usize = 80;

/// The human report: a line per server, then each change with its class, what the
/// policy does with it and every finding, then the server's stderr if it failed.
/// ANSI styles are stripped later when the output is not a terminal.
pub fn render_human(reports: &[ServerReport]) -> String {
    render_reports(reports, false)
}

/// The human report with what a reviewer needs to judge it, for `diff`: also the
/// whole definition of each added tool and the text of changed instructions, folded
/// when long.
pub fn render_diff(reports: &[ServerReport]) -> String {
    render_reports(reports, true)
}

fn render_reports(reports: &[ServerReport], full: bool) -> String {
    let width = reports
        .iter()
        .map(|r| server_label(&r.name, &r.profile).chars().count())
        .max()
        .unwrap_or(0);
    let dim = Style::new().dimmed();
    let mut out = String::new();
    for r in reports {
        let style = verdict_style_for(r.verdict);
        let detail = match (r.verdict, r.tools) {
            (Verdict::Converged, Some(_)) => r.listed_text().unwrap_or_default(),
            (Verdict::Stale, _)
                if !r.changes.is_empty() || !r.server_changes.is_empty() || package_changed(r) =>
            {
                let n = r.changes.len()
                    + r.server_changes.iter().filter(|c| c.drift).count()
                    + usize::from(package_changed(r));
                count(n, "change")
            }
            (Verdict::Stale, _) => "server metadata changed".into(),
            _ => String::new(),
        };
        let _ = writeln!(
            out,
            "{:<width$}  {style}{:<12}{style:#}  {}",
            server_label(&r.name, &r.profile),
            r.verdict.as_str(),
            detail
        );
        if let Some(error) = &r.error {
            let _ = writeln!(out, "    {}", escape_cut(error, SHOWN_LINE_CHARS));
        }
        if let Some(package) = &r.package {
            out.push_str(&package_line(package, "    "));
        }
        if !r.filtered.is_empty() {
            let names: Vec<String> = r.filtered.iter().map(|n| esc(n)).collect();
            let _ = writeln!(
                out,
                "    {dim}note: {} filtered by the host's config (not shown to its agent, not pinned): {}{dim:#}",
                count(r.filtered.len(), "tool"),
                names.join(", ")
            );
        }
        for rejected in &r.rejected {
            let _ = writeln!(
                out,
                "    {dim}note: tool {} left out (not offered to an agent, not pinned): {}{dim:#}",
                esc(&rejected.name),
                escape_cut(&rejected.reason, SHOWN_LINE_CHARS)
            );
        }
        if !r.not_pinned_yet.is_empty() {
            let kinds: Vec<&str> = r.not_pinned_yet.iter().map(|k| k.plural()).collect();
            let _ = writeln!(
                out,
                "    {dim}note: {} not pinned yet (the lock is from before they were); `mcp-lock update {}` shows and pins them{dim:#}",
                kinds.join(" and "),
                esc(&r.name)
            );
        }
        for kind in &r.not_implemented {
            let _ = writeln!(
                out,
                "    {dim}note: {}{dim:#}",
                crate::verdict::drift::not_implemented_note(*kind)
            );
        }
        for d in &r.denied {
            out.push_str(&denied_line(d, &r.profile, "    "));
        }
        if full && !r.pinned && r.instructions.is_some() {
            out.push_str(&instructions_block(r.instructions.as_deref(), "    "));
        }
        for c in &r.changes {
            out.push_str(&change_header(c, "    ", None));
            out.push_str(&render_screened(&c.screening, "        "));
            out.push_str(&render_findings(&c.findings, "        "));
            if full {
                out.push_str(&added_definition(c, "        "));
            }
        }
        for c in &r.server_changes {
            out.push_str(&server_change_line(c, "    "));
            if full {
                out.push_str(&instructions_change(
                    c,
                    r.instructions.as_deref(),
                    "        ",
                ));
            }
        }
        if r.ignored_lines > 0 {
            let _ = writeln!(
                out,
                "    {dim}note: ignored {} on the server's stdout{dim:#}",
                crate::base::text::count(r.ignored_lines, "non-JSON-RPC line")
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
fn change_header(c: &ToolChange, indent: &str, server: Option<(&str, &str)>) -> String {
    let dim = Style::new().dimmed();
    let rule = match c.change {
        ChangeKind::Changed => c.class.map_or("unclassified", Class::as_str),
        _ => Rule::of(c).as_str(),
    };
    let act = action_style(c.action);
    let tool = match server {
        Some((server, profile)) => format!("{}/{} [{}]", esc(server), esc(&c.tool), esc(profile)),
        None => esc(&c.tool),
    };
    // Tools read as before; other kinds say what they are.
    let tool = match c.kind {
        Kind::Tool => tool,
        kind => format!("{} {tool}", kind.noun()),
    };
    let tool = match &c.renamed_from {
        Some(from) => format!("{tool} (was {})", esc(from)),
        None => tool,
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
                let compact = |v: &Option<serde_json::Value>| {
                    v.as_ref()
                        .map(|v| Json::from_value(v).canonical().unwrap_or_default())
                };
                let (was, now) = (compact(a), compact(b));
                let fits = |t: &Option<String>| {
                    t.as_ref()
                        .is_none_or(|t| t.chars().count() <= SHOWN_VALUE_CHARS)
                };
                if fits(&was) && fits(&now) {
                    let _ = writeln!(
                        out,
                        "{pad}{dim}was{dim:#} {}  {dim}now{dim:#} {}",
                        value_text(a.as_ref()),
                        value_text(b.as_ref())
                    );
                } else {
                    // Too long for one line: each side whole, folded like a definition.
                    for (label, value) in [("was", a), ("now", b)] {
                        match value {
                            None => {
                                let _ = writeln!(out, "{pad}{dim}{label}{dim:#} (absent)");
                            }
                            Some(v) => {
                                let _ = writeln!(out, "{pad}{dim}{label}{dim:#}");
                                let block =
                                    definition_block(&Json::from_value(v), &format!("{pad}  "));
                                out.push_str(&block);
                            }
                        }
                    }
                }
            }
        }
    }
    out
}

/// A value as compact canonical JSON, escaped and cut to a readable length.
fn value_text(value: Option<&serde_json::Value>) -> String {
    let Some(value) = value else {
        return "(absent)".into();
    };
    let text = Json::from_value(value).canonical().unwrap_or_default();
    escape_cut(&text, SHOWN_VALUE_CHARS)
}

/// A definition as a reviewer reads it before approving it: pretty JSON, every line
/// escaped, long lines and long definitions folded with a count of what is left out.
pub fn definition_block(definition: &Json, indent: &str) -> String {
    let mut folded = Folded::new(SHOWN_LINES, SHOWN_LINE_CHARS);
    // Writing to memory cannot fail, and a Value always serializes.
    let _ = serde_json::to_writer_pretty(&mut folded, &definition.to_value());
    folded
        .lines()
        .into_iter()
        .map(|line| format!("{indent}{line}\n"))
        .collect()
}

/// Server text (instructions) quoted line by line with `| `, escaped and folded.
fn text_block(text: &str, indent: &str) -> String {
    let dim = Style::new().dimmed();
    if text.is_empty() {
        return format!("{indent}{dim}(empty){dim:#}\n");
    }
    let mut folded = Folded::new(SHOWN_LINES, SHOWN_LINE_CHARS);
    let _ = std::io::Write::write_all(&mut folded, text.as_bytes());
    let (lines, more) = folded.finish();
    let mut out: String = lines
        .iter()
        .map(|line| format!("{indent}{dim}|{dim:#} {line}\n"))
        .collect();
    if more > 0 {
        let _ = writeln!(out, "{indent}{}", left_out(more, "line"));
    }
    out
}

/// The definition of an added tool, to read before pinning it.
fn added_definition(change: &ToolChange, indent: &str) -> String {
    match (&change.change, &change.live) {
        (ChangeKind::Added, Some(definition)) => definition_block(definition, indent),
        _ => String::new(),
    }
}

/// A server's instructions when it is first pinned: the text its hash will stand for.
fn instructions_block(text: Option<&str>, indent: &str) -> String {
    match text {
        Some(text) => format!(
            "{indent}instructions (text the server gives the model):\n{}",
            text_block(text, &format!("{indent}    "))
        ),
        None => format!("{indent}instructions: none\n"),
    }
}

/// Under a changed-instructions line: the new text, since the lock keeps only a hash
/// of the old one.
fn instructions_change(change: &ServerChange, live: Option<&str>, indent: &str) -> String {
    if change.field != "instructions" || change.live.is_none() {
        return String::new();
    }
    match live {
        Some(text) => format!(
            "{indent}the lock keeps only a hash of the old text; the new instructions:\n{}",
            text_block(text, indent)
        ),
        None => format!(
            "{indent}the lock keeps only a hash of the instructions, so their text cannot be shown\n"
        ),
    }
}

/// The closing line: what the run concluded, and what the policy made of it.
pub fn render_summary(reports: &[ServerReport]) -> String {
    let s = Summary::of(reports);
    let total = reports.len();
    // A server listed under several client profiles counts once per listing.
    let servers: std::collections::BTreeSet<&str> =
        reports.iter().map(|r| r.name.as_str()).collect();
    let noun = if total > servers.len() {
        "listing"
    } else {
        "server"
    };
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
            n => format!("all {n} {noun}s converged"),
        }
    } else {
        format!("{} of {}", parts.join(", "), count(total, noun))
    };
    if noun == "listing" {
        let _ = write!(line, " ({})", count(servers.len(), "server"));
    }
    // A package that could not be checked makes the run exit 3 although every server
    // converged: say which, and why.
    let unchecked: BTreeMap<&str, &str> = reports
        .iter()
        .filter_map(|r| {
            let p = r.package.as_ref()?;
            (p.status == PackageStatus::Unverifiable)
                .then_some((r.name.as_str(), p.message.as_str()))
        })
        .collect();
    if !unchecked.is_empty() {
        let reasons: Vec<String> = unchecked
            .iter()
            .map(|(server, why)| format!("{}: {}", esc(server), escape_cut(why, SHOWN_LINE_CHARS)))
            .collect();
        let _ = write!(
            line,
            "; {} could not be checked: {}",
            count(unchecked.len(), "package"),
            reasons.join("; ")
        );
    }
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
        let _ = write!(line, "; {}: {}", count(n, "change"), actions.join(", "));
    }
    line
}

/// Whether the report's package is not what the lock pins.
pub fn package_changed(r: &ServerReport) -> bool {
    r.package.as_ref().is_some_and(|p| p.status.moved())
}

/// "package  changed  npm tiny@1.0.0 (sha512-…) -> npm tiny@1.0.1  package-changed, fail"
/// and its message, or a dimmed note for a package with nothing to act on.
pub fn package_line(p: &PackageCheck, indent: &str) -> String {
    let dim = Style::new().dimmed();
    let rule = p.status.rule();
    let values = match (&p.pinned, &p.live) {
        (Some(a), Some(b)) if p.status.moved() => {
            format!("{} -> {}", esc(a), esc(b))
        }
        (Some(a), _) => esc(a),
        (None, _) => String::new(),
    };
    match rule {
        Some(rule) => {
            let act = action_style(p.action);
            format!(
                "{indent}package  {}  {rule}, {act}{}{act:#}  {values}\n{indent}    {}\n",
                p.status.as_str(),
                p.action.as_str(),
                escape_cut(&p.message, SHOWN_LINE_CHARS)
            )
        }
        None if p.status == PackageStatus::Unverifiable => {
            let act = action_style(Action::Fail);
            format!(
                "{indent}package  {act}unverifiable{act:#}  {values}\n{indent}    {}\n",
                escape_cut(&p.message, SHOWN_LINE_CHARS)
            )
        }
        None => format!(
            "{indent}{dim}package: {}{}{dim:#}\n",
            if values.is_empty() {
                String::new()
            } else {
                format!("{values}: ")
            },
            escape_cut(&p.message, SHOWN_LINE_CHARS)
        ),
    }
}

fn server_change_line(change: &ServerChange, indent: &str) -> String {
    // How a server is launched comes from the config, not the server: shown whole.
    // Hashes are cut as tool hashes are; other values at the usual length.
    let shown = |value: Option<&str>| match value {
        None => "(none)".to_string(),
        Some(hash) if change.field == "instructions" => esc(short(hash)),
        Some(value) if change.field == "launch" => esc(value),
        Some(value) => escape_cut(value, SHOWN_VALUE_CHARS),
    };
    let values = format!(
        "{} -> {}",
        shown(change.pinned.as_deref()),
        shown(change.live.as_deref())
    );
    match (change.rule_name(), change.action) {
        (Some(rule), Some(action)) => {
            let act = action_style(action);
            format!(
                "{indent}changed  {}  {rule}, {act}{}{act:#}  {values}\n",
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
mod tests;
