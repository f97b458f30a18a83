//! Screening findings as people and machines read them: under a change in verify and
//! update, and the whole report of `mcp-lock scan`.

use std::fmt::Write as _;

use anstyle::{AnsiColor, Style};
use serde::Serialize;
use serde_json::{Value, json};

use crate::base::action::Action;
use crate::base::text::escape_for_terminal as esc;
use crate::contract::surface::Kind;
use crate::verdict::screen::{RULES, Screened, Severity};

fn severity_style(severity: Severity) -> Style {
    let color = match severity {
        Severity::High => AnsiColor::Red,
        Severity::Medium => AnsiColor::Yellow,
        Severity::Low => AnsiColor::Cyan,
    };
    Style::new().fg_color(Some(color.into())).bold()
}

/// Each finding in two lines: severity, rule, pointer and reason; then the quote.
pub fn render_screened(found: &[Screened], indent: &str) -> String {
    let dim = Style::new().dimmed();
    let mut out = String::new();
    for f in found {
        let style = severity_style(f.severity);
        let accepted = if f.accepted {
            format!(" {dim}(accepted in [screen]){dim:#}")
        } else {
            String::new()
        };
        let _ = writeln!(
            out,
            "{indent}{style}screen {}{style:#} {} {}  {}{accepted}",
            f.severity,
            f.rule,
            esc(if f.pointer.is_empty() {
                "/"
            } else {
                &f.pointer
            }),
            esc(&f.reason)
        );
        let _ = writeln!(
            out,
            "{indent}    {dim}“{dim:#}{}{dim}”{dim:#}",
            esc(&f.quote)
        );
    }
    out
}

/// One screened definition of `mcp-lock scan`.
#[derive(Debug, Clone, Serialize)]
pub struct ScannedItem {
    pub kind: Kind,
    pub name: String,
    pub findings: Vec<Screened>,
}

/// One server as `mcp-lock scan` screened it.
#[derive(Debug, Clone, Serialize)]
pub struct ScannedServer {
    pub name: String,
    pub profile: String,
    /// Whether every kind was listed completely.
    pub listed: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub error: Option<String>,
    /// Definitions screened.
    pub screened: usize,
    /// The definitions with a finding.
    pub items: Vec<ScannedItem>,
}

impl ScannedServer {
    pub fn findings(&self) -> impl Iterator<Item = (&ScannedItem, &Screened)> {
        self.items
            .iter()
            .flat_map(|i| i.findings.iter().map(move |f| (i, f)))
    }
}

/// Findings counted by severity (accepted ones not counted).
pub fn counts(servers: &[ScannedServer]) -> [(Severity, usize); 3] {
    let n = |s: Severity| {
        servers
            .iter()
            .flat_map(ScannedServer::findings)
            .filter(|(_, f)| f.severity == s && !f.accepted)
            .count()
    };
    [
        (Severity::High, n(Severity::High)),
        (Severity::Medium, n(Severity::Medium)),
        (Severity::Low, n(Severity::Low)),
    ]
}

pub fn render_scan_text(servers: &[ScannedServer]) -> String {
    let mut out = String::new();
    for s in servers {
        let state = match &s.error {
            Some(e) => format!("not listed: {}", esc(e)),
            None => {
                let n = s.findings().count();
                format!(
                    "{} screened, {}",
                    crate::base::text::count(s.screened, "definition"),
                    crate::base::text::count(n, "finding")
                )
            }
        };
        let _ = writeln!(out, "{}  {state}", super::server_label(&s.name, &s.profile));
        for item in &s.items {
            let noun = match item.kind {
                Kind::Tool => String::new(),
                kind => format!("{} ", kind.noun()),
            };
            let _ = writeln!(out, "    {noun}{}", esc(&item.name));
            out.push_str(&render_screened(&item.findings, "        "));
        }
    }
    out
}

pub fn render_scan_json(servers: &[ScannedServer], exit: i32) -> String {
    let counts: serde_json::Map<String, Value> = counts(servers)
        .into_iter()
        .map(|(s, n)| (s.as_str().to_string(), json!(n)))
        .collect();
    let doc = json!({
        "exit_code": exit,
        "findings": counts,
        "servers": servers,
    });
    crate::base::text::escape_json_output(
        &serde_json::to_string_pretty(&doc).expect("a scan report serializes"),
    )
}

/// SARIF 2.1.0: one result per finding, its rule the screening rule, located at the
/// definition (a logical location: the server lists it, no file holds it).
pub fn render_scan_sarif(servers: &[ScannedServer]) -> String {
    let rules: Vec<&str> = RULES.iter().map(|(id, _)| *id).collect();
    let mut results = Vec::new();
    for s in servers {
        for (item, f) in s.findings() {
            let level = match f.action {
                Action::Fail => "error",
                Action::Warn => "warning",
                Action::Allow => "note",
            };
            let name = format!("{}/{}", s.name, item.name);
            results.push(json!({
                "ruleId": f.rule,
                "ruleIndex": rules.iter().position(|r| *r == f.rule).unwrap_or(0),
                "level": level,
                "message": {"text": format!("{name}{} {}: {}\n{}", if f.pointer.is_empty() { "" } else { " at " }, f.pointer, f.reason, f.quote)},
                "locations": [{
                    "logicalLocations": [{
                        "fullyQualifiedName": format!("{name}#{}", f.pointer),
                        "kind": "member",
                    }]
                }],
                "properties": {
                    "server": s.name,
                    "profile": s.profile,
                    "kind": item.kind.as_str(),
                    "name": item.name,
                    "severity": f.severity,
                    "pointer": f.pointer,
                    "quote": f.quote,
                    "accepted": f.accepted,
                },
            }));
        }
    }
    let rule_docs: Vec<Value> = RULES
        .iter()
        .map(|(id, what)| json!({"id": id, "shortDescription": {"text": what}}))
        .collect();
    super::ci::sarif_log(rule_docs, results)
}
