//! Rendering verification results: for people (colour only on a terminal, every
//! server string escaped) and as one JSON document for machines.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde::Serialize;

use crate::drift::{ChangeKind, ServerChange, ServerReport, ToolChange, Verdict};
use crate::exit_codes::ExitCode;
use crate::text::escape_for_terminal as esc;

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

/// How many servers got each verdict.
#[derive(Debug, Default, Serialize, PartialEq, Eq)]
pub struct Summary {
    pub converged: usize,
    pub stale: usize,
    pub incomplete: usize,
    pub unverifiable: usize,
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
    serde_json::to_string_pretty(&doc).expect("reports serialize")
}

pub fn verdict_style_for(verdict: Verdict) -> Style {
    let color = match verdict {
        Verdict::Converged => AnsiColor::Green,
        Verdict::Stale => AnsiColor::Red,
        Verdict::Incomplete | Verdict::Unverifiable => AnsiColor::Yellow,
    };
    Style::new().fg_color(Some(color.into())).bold()
}

/// The first 12 hex digits, enough to tell pins apart in a report.
pub fn short(hash: &str) -> &str {
    &hash[..hash.len().min(12)]
}

/// The human report: a line per server, then what differs, then the server's stderr
/// if it failed. ANSI styles are stripped later when the output is not a terminal.
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
            (Verdict::Stale, _) if !r.changes.is_empty() => {
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
            let kind = c.change.as_str();
            let parts = parts_text(c);
            let hashes = hashes_text(c);
            let _ = write!(out, "    {kind:<8} {}", esc(&c.tool));
            if !parts.is_empty() {
                let _ = write!(out, "  [{parts}]");
            }
            let _ = writeln!(out, "  {dim}{hashes}{dim:#}");
            if let Some(problem) = &c.problem {
                let _ = writeln!(out, "             {}", esc(problem));
            }
        }
        for c in &r.server_changes {
            let mark = if c.drift { "changed " } else { "note    " };
            let _ = writeln!(out, "    {mark} {}", server_change_text(c));
        }
        if r.ignored_lines > 0 {
            let _ = writeln!(
                out,
                "    {dim}note: ignored {} non-JSON-RPC line(s) on the server's stdout{dim:#}",
                r.ignored_lines
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

/// The closing line: what the run concluded.
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
    if parts.is_empty() {
        match total {
            0 => "no servers to check".into(),
            1 => "1 server converged".into(),
            n => format!("all {n} servers converged"),
        }
    } else {
        format!("{} of {total} server{}", parts.join(", "), plural(total))
    }
}

fn plural(n: usize) -> &'static str {
    if n == 1 { "" } else { "s" }
}

/// A proposal as the reviewer sees it before approving: what moves, with a unified
/// diff of the pretty-printed definitions. Every line is escaped.
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
            let parts = match parts_text(change) {
                p if p.is_empty() => String::new(),
                p => format!(" [{p}]"),
            };
            let _ = writeln!(
                out,
                "{bold}{}/{}{bold:#} {}{parts} {}",
                esc(server),
                esc(&change.tool),
                change.change.as_str(),
                hashes_text(change)
            );
            let pretty = |j: &Option<crate::json::Json>| {
                j.as_ref()
                    .and_then(|j| j.canonical_pretty().ok())
                    .map(|s| s + "\n")
                    .unwrap_or_default()
            };
            out.push_str(&unified_diff(
                &pretty(&change.pinned),
                &pretty(&change.live),
            ));
        }
        Proposal::Metadata { server, changes } => {
            let _ = writeln!(
                out,
                "{bold}{}{bold:#}: server metadata changed",
                esc(server)
            );
            for c in changes {
                let _ = writeln!(out, "    {}", server_change_text(c));
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

/// "protocol_version: 2025-06-18 -> 2025-11-25", escaped.
fn server_change_text(change: &ServerChange) -> String {
    format!(
        "{}: {} -> {}",
        change.field,
        esc(change.pinned.as_deref().unwrap_or("(none)")),
        esc(change.live.as_deref().unwrap_or("(none)"))
    )
}

/// "inputSchema, description": the parts a change touches.
fn parts_text(change: &ToolChange) -> String {
    let parts: Vec<&str> = change.parts.iter().map(|p| p.as_str()).collect();
    parts.join(", ")
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

/// A unified diff, `-` for the pin and `+` for the live side, coloured by line kind.
pub fn unified_diff(pinned: &str, live: &str) -> String {
    let red = Style::new().fg_color(Some(AnsiColor::Red.into()));
    let green = Style::new().fg_color(Some(AnsiColor::Green.into()));
    let cyan = Style::new().fg_color(Some(AnsiColor::Cyan.into()));
    let diff = similar::TextDiff::from_lines(pinned, live);
    let text = diff
        .unified_diff()
        .context_radius(3)
        .header("pinned", "live")
        .to_string();
    let mut out = String::new();
    for line in text.lines() {
        let style = if line.starts_with("@@") {
            cyan
        } else if line.starts_with('+') {
            green
        } else if line.starts_with('-') {
            red
        } else {
            Style::new()
        };
        let _ = writeln!(out, "    {style}{}{style:#}", esc(line));
    }
    out
}
