//! Reports in the formats CI systems read: SARIF 2.1.0, JUnit XML and GitHub Actions
//! workflow commands. Each points at the line of the lock that pins what changed.

use std::fmt::Write as _;

use serde_json::{Value, json};

use super::{LockContext, Summary};
use crate::base::text::escape_for_terminal as esc;
use crate::contract::surface::Kind;
use crate::verdict::drift::{ServerChange, ServerReport, ToolChange, Verdict};
use crate::verdict::policy::{Action, Rule};

/// Something a CI format shows: a change, a server problem, with where in the lock.
struct Item {
    rule: &'static str,
    action: Action,
    server: String,
    profile: String,
    kind: Kind,
    tool: Option<String>,
    /// One line.
    title: String,
    /// The findings, one per line.
    detail: String,
}

/// The JUnit test case that stands for the server itself.
const SERVER_CASE: &str = "(server)";

/// Rules beyond the policy's: a server that could not be checked, or is not pinned.
const UNVERIFIED: &str = "unverified";
const UNPINNED: &str = "server-not-pinned";

fn items(reports: &[ServerReport]) -> Vec<Item> {
    let mut out = Vec::new();
    for r in reports {
        let server = super::server_label(&r.name, &r.profile);
        match r.verdict {
            Verdict::Incomplete | Verdict::Unverifiable => out.push(Item {
                rule: UNVERIFIED,
                action: Action::Fail,
                server: r.name.clone(),
                profile: r.profile.clone(),
                kind: Kind::Tool,
                tool: None,
                title: format!(
                    "{server}: {}: {}",
                    r.verdict.as_str(),
                    esc(r.error.as_deref().unwrap_or(""))
                ),
                detail: String::new(),
            }),
            _ if !r.pinned => out.push(Item {
                rule: UNPINNED,
                action: Action::Fail,
                server: r.name.clone(),
                profile: r.profile.clone(),
                kind: Kind::Tool,
                tool: None,
                title: format!("{server}: not pinned in the lock; run `mcp-lock update`"),
                detail: String::new(),
            }),
            _ => {}
        }
        if let Some(p) = &r.package {
            use crate::servers::package::PackageStatus;
            let rule = match p.status {
                PackageStatus::Unverifiable => Some((UNVERIFIED, Action::Fail)),
                status => status.rule().map(|rule| (rule, p.action)),
            };
            if let Some((rule, action)) = rule {
                let values = match (&p.pinned, &p.live) {
                    (Some(a), Some(b)) if p.status.moved() => {
                        format!(" {} -> {}", esc(a), esc(b))
                    }
                    (Some(a), _) => format!(" {}", esc(a)),
                    _ => String::new(),
                };
                out.push(Item {
                    rule,
                    action,
                    server: r.name.clone(),
                    profile: r.profile.clone(),
                    kind: Kind::Tool,
                    tool: None,
                    title: format!("{server}: package {}{values} ({rule})", p.status.as_str()),
                    detail: format!("{}\n", esc(&p.message)),
                });
            }
        }
        for c in &r.changes {
            out.push(tool_item(r, c));
        }
        for d in &r.denied {
            out.push(Item {
                rule: Rule::ToolDenied.as_str(),
                action: d.action,
                server: r.name.clone(),
                profile: r.profile.clone(),
                kind: d.kind,
                tool: Some(d.name.clone()),
                title: format!(
                    "{}/{} [{}] denied ({})",
                    esc(&r.name),
                    esc(&d.name),
                    esc(&r.profile),
                    Rule::ToolDenied.as_str()
                ),
                detail: format!("{}\n", esc(&d.denial.to_string())),
            });
        }
        for c in &r.server_changes {
            if let (Some(rule), Some(action)) = (c.rule_name(), c.action) {
                out.push(Item {
                    rule,
                    action,
                    server: r.name.clone(),
                    profile: r.profile.clone(),
                    kind: Kind::Tool,
                    tool: None,
                    title: server_change_title(&server, c),
                    detail: match (&c.pinned, &c.live) {
                        (Some(a), Some(b)) if c.field == "launch" => {
                            format!("{} -> {}\n", esc(a), esc(b))
                        }
                        _ => String::new(),
                    },
                });
            }
        }
    }
    out
}

fn tool_item(r: &ServerReport, c: &ToolChange) -> Item {
    let rule = Rule::of(c).as_str();
    let mut detail = String::new();
    for f in &c.findings {
        // "/" would be the member named "" (RFC 6901); "" is the whole definition.
        let pointer = if f.pointer.is_empty() {
            "(whole definition)"
        } else {
            &f.pointer
        };
        let _ = writeln!(detail, "{} {}: {}", f.class, esc(pointer), esc(&f.reason));
    }
    for f in &c.screening {
        let _ = writeln!(
            detail,
            "screen {} {} {}: {}: \"{}\"{}",
            f.severity,
            f.rule,
            esc(&f.pointer),
            esc(&f.reason),
            esc(&f.quote),
            if f.accepted { " (accepted)" } else { "" }
        );
    }
    if let Some(problem) = &c.problem {
        let _ = writeln!(detail, "cannot be pinned: {}", esc(problem));
    }
    Item {
        rule,
        action: c.action,
        server: r.name.clone(),
        profile: r.profile.clone(),
        kind: c.kind,
        tool: Some(c.tool.clone()),
        title: format!(
            "{}/{}{}{} [{}] {} ({rule})",
            esc(&r.name),
            match c.kind {
                Kind::Tool => String::new(),
                kind => format!("{} ", kind.noun()),
            },
            esc(&c.tool),
            c.renamed_from
                .as_deref()
                .map(|f| format!(" (was {})", esc(f)))
                .unwrap_or_default(),
            esc(&r.profile),
            c.change.as_str()
        ),
        detail,
    }
}

fn server_change_title(server: &str, c: &ServerChange) -> String {
    format!("{server}: {} changed", c.field)
}

fn rule_description(rule: &str) -> &'static str {
    match rule {
        "authority" => "The change can widen what a call does or where it lands.",
        "breaking" => "An old call no longer validates or an old result no longer parses.",
        "semantic" => "Text the model reads changed while the shape did not.",
        "additive" => "Old calls keep working and mean the same.",
        "cosmetic" => "Title, icons, _meta or layout: nothing a caller acts on.",
        "tool-added" => "The server lists a tool the lock does not pin.",
        "tool-removed" => "A tool the lock pins is no longer listed.",
        "tool-denied" => {
            "The project's or the user's tool rules deny the definition to this host: pinned, never served."
        }
        "package-changed" => {
            "What the entry launches is not the package version, integrity, image or script the lock pins."
        }
        "package-floating" => {
            "The entry's package spec floats (the guard launches the pin), or its image has no digest."
        }
        "dependency-changed" => {
            "The entry's launcher now installs another dependency closure than the lock pins."
        }
        "closure-unpinned" => {
            "The entry's dependency closure is not pinned: its launcher resolves the dependencies afresh at every launch."
        }
        "launch-changed" => {
            "The entry may reach another server: its remote origin, or its unrecognised command or module, changed."
        }
        "screen-high" => "Screening found a definition that clearly works against the user.",
        "screen-medium" => "Screening found something suspicious in a definition.",
        "screen-low" => "Screening found something worth a look in a definition.",
        UNVERIFIED => "The server could not be checked completely.",
        _ => "The lock does not pin this server.",
    }
}

fn all_rules() -> Vec<&'static str> {
    let mut rules: Vec<&'static str> = Rule::ALL.iter().map(|r| r.as_str()).collect();
    rules.extend([UNVERIFIED, UNPINNED]);
    rules
}

fn sarif_level(action: Action) -> &'static str {
    match action {
        Action::Fail => "error",
        Action::Warn => "warning",
        Action::Allow => "note",
    }
}

/// A SARIF 2.1.0 log: one result per change or server problem, located at the line of
/// the lock that pins the tool (or the server).
pub fn render_sarif(reports: &[ServerReport], ctx: &LockContext) -> String {
    let rules = all_rules();
    let uri = uri_reference(&ctx.path);
    let results: Vec<Value> = items(reports)
        .into_iter()
        .map(|item| {
            let line = ctx
                .lines
                .line_of(&item.server, item.kind, item.tool.as_deref());
            let text = if item.detail.is_empty() {
                item.title.clone()
            } else {
                format!("{}\n{}", item.title, item.detail.trim_end())
            };
            let mut properties = json!({"server": item.server, "profile": item.profile});
            if let Some(tool) = &item.tool {
                properties[item.kind.as_str()] = json!(tool);
            }
            json!({
                "ruleId": item.rule,
                "ruleIndex": rules.iter().position(|r| *r == item.rule).unwrap_or(0),
                "level": sarif_level(item.action),
                "message": {"text": text},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        "region": {"startLine": line}
                    }
                }],
                "properties": properties,
            })
        })
        .collect();
    let rule_docs: Vec<Value> = rules
        .iter()
        .map(|r| {
            json!({
                "id": r,
                "shortDescription": {"text": rule_description(r)},
            })
        })
        .collect();
    sarif_log(rule_docs, results)
}

/// A SARIF 2.1.0 log of one mcp-lock run with these rules and results, as JSON text.
pub(super) fn sarif_log(rule_docs: Vec<Value>, results: Vec<Value>) -> String {
    let log = json!({
        "$schema": "https://json.schemastore.org/sarif-2.1.0.json",
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "mcp-lock",
                "version": env!("CARGO_PKG_VERSION"),
                "rules": rule_docs,
            }},
            "results": results,
        }],
    });
    crate::base::text::escape_json_output(
        &serde_json::to_string_pretty(&log).expect("a SARIF log serializes"),
    )
}

/// A path as a relative URI reference: segments percent-encoded, `/` separators.
fn uri_reference(path: &str) -> String {
    let mut out = String::new();
    let path = path.replace('\\', "/");
    if path.starts_with('/') {
        out.push_str("file://");
    }
    for b in path.bytes() {
        match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' | b'/' => {
                out.push(b as char)
            }
            _ => {
                let _ = write!(out, "%{b:02X}");
            }
        }
    }
    out
}

/// JUnit XML: a test suite per server, a test case per tool (pinned or live). A change
/// the policy fails is a failure; a server that could not be checked is an error on
/// each of its pinned tools.
pub fn render_junit(reports: &[ServerReport], ctx: &LockContext) -> String {
    let mut suites = String::new();
    let (mut all_tests, mut all_failures, mut all_errors) = (0, 0, 0);
    for r in reports {
        let mut cases = String::new();
        let (mut tests, mut failures, mut errors) = (0, 0, 0);
        let mut tools: Vec<(Kind, String)> = ctx
            .pinned
            .get(&(r.name.clone(), r.profile.clone()))
            .cloned()
            .unwrap_or_default();
        // Each case's change, found by lookup: a report can hold thousands of each.
        let changes: std::collections::BTreeMap<(Kind, &str), &ToolChange> = r
            .changes
            .iter()
            .rev()
            .map(|c| ((c.kind, c.tool.as_str()), c))
            .collect();
        tools.extend(changes.keys().map(|(kind, tool)| (*kind, tool.to_string())));
        tools.sort();
        tools.dedup();
        let unverified = matches!(r.verdict, Verdict::Incomplete | Verdict::Unverifiable);
        // Findings about the server itself (identity, instructions, not pinned, gone
        // from the config) get a test case of their own.
        let server_items: Vec<Item> = items(std::slice::from_ref(r))
            .into_iter()
            .filter(|i| i.tool.is_none() && i.rule != UNVERIFIED)
            .collect();
        if tools.is_empty() || !server_items.is_empty() {
            tools.insert(0, (Kind::Tool, SERVER_CASE.into()));
        }
        for (kind, tool) in &tools {
            let (kind, tool) = (*kind, tool.as_str());
            tests += 1;
            let line = ctx.lines.line_of(&r.name, kind, Some(tool));
            let shown = match kind {
                Kind::Tool => tool.to_string(),
                kind => format!("{} {tool}", kind.noun()),
            };
            let _ = write!(
                cases,
                "    <testcase classname=\"{}\" name=\"{}\" file=\"{}\" line=\"{line}\">",
                xml(&format!("{} [{}]", r.name, r.profile)),
                xml(&shown),
                xml(&ctx.path)
            );
            if unverified {
                errors += 1;
                let message = format!(
                    "{}: {}",
                    r.verdict.as_str(),
                    r.error.as_deref().unwrap_or("")
                );
                // What is known of the server itself (a launch-changed that kept it
                // from being contacted) goes with its own case.
                if tool == SERVER_CASE && !server_items.is_empty() {
                    let text: Vec<String> = server_items
                        .iter()
                        .map(|i| format!("{} ({})", i.title, i.rule))
                        .collect();
                    let _ = write!(
                        cases,
                        "\n      <error type=\"{}\" message=\"{}\">{}</error>\n    ",
                        r.verdict.as_str(),
                        xml(&message),
                        xml_lines(&text.join("\n"))
                    );
                } else {
                    let _ = write!(
                        cases,
                        "\n      <error type=\"{}\" message=\"{}\"/>\n    ",
                        r.verdict.as_str(),
                        xml(&message)
                    );
                }
            } else if tool == SERVER_CASE && !server_items.is_empty() {
                let text: Vec<&str> = server_items.iter().map(|i| i.title.as_str()).collect();
                let text = text.join("\n");
                let worst = server_items
                    .iter()
                    .map(|i| i.action)
                    .max()
                    .unwrap_or_default();
                if worst == Action::Fail {
                    failures += 1;
                    let _ = write!(
                        cases,
                        "\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ",
                        server_items[0].rule,
                        xml(&server_items[0].title),
                        xml_lines(&text)
                    );
                } else {
                    let _ = write!(
                        cases,
                        "\n      <system-out>{}</system-out>\n    ",
                        xml_lines(&text)
                    );
                }
            } else if let Some(c) = changes.get(&(kind, tool)).copied() {
                let item = tool_item(r, c);
                let text = format!("{}\n{}", item.title, item.detail);
                if c.action == Action::Fail {
                    failures += 1;
                    let _ = write!(
                        cases,
                        "\n      <failure type=\"{}\" message=\"{}\">{}</failure>\n    ",
                        item.rule,
                        xml(&item.title),
                        xml_lines(text.trim_end())
                    );
                } else {
                    let _ = write!(
                        cases,
                        "\n      <system-out>{} ({}): {}</system-out>\n    ",
                        c.action.as_str(),
                        item.rule,
                        xml_lines(text.trim_end())
                    );
                }
            }
            cases.push_str("</testcase>\n");
        }
        all_tests += tests;
        all_failures += failures;
        all_errors += errors;
        let _ = write!(
            suites,
            "  <testsuite name=\"{}\" tests=\"{tests}\" failures=\"{failures}\" errors=\"{errors}\" skipped=\"0\" time=\"{:.3}\">\n{cases}  </testsuite>\n",
            xml(&format!("{} [{}]", r.name, r.profile)),
            r.elapsed_ms as f64 / 1000.0
        );
    }
    format!(
        "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n<testsuites name=\"mcp-lock verify\" tests=\"{all_tests}\" failures=\"{all_failures}\" errors=\"{all_errors}\">\n{suites}</testsuites>\n"
    )
}

/// Element text for XML: like [`xml`], line by line, keeping the line breaks.
fn xml_lines(text: &str) -> String {
    text.split('\n').map(xml).collect::<Vec<_>>().join("\n")
}

/// Text for XML: escaped for the terminal first (XML 1.0 cannot carry most control
/// characters even as references), then for markup.
fn xml(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in esc(text).chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            c => out.push(c),
        }
    }
    out
}

/// GitHub Actions workflow commands: an `::error`, `::warning` or `::notice` per
/// change, at the lock line that pins it, then a plain summary line.
pub fn render_github(reports: &[ServerReport], ctx: &LockContext) -> String {
    let mut out = String::new();
    for item in items(reports) {
        let command = match item.action {
            Action::Fail => "error",
            Action::Warn => "warning",
            Action::Allow => "notice",
        };
        let line = ctx
            .lines
            .line_of(&item.server, item.kind, item.tool.as_deref());
        let message = if item.detail.is_empty() {
            item.title.clone()
        } else {
            format!("{}\n{}", item.title, item.detail.trim_end())
        };
        let _ = writeln!(
            out,
            "::{command} file={},line={line},title={}::{}",
            github_property(&ctx.path),
            github_property(&format!("mcp-lock {}", item.rule)),
            github_data(&message)
        );
    }
    let s = Summary::of(reports);
    let _ = writeln!(
        out,
        "mcp-lock: {} checked: {} converged, {} stale, {} incomplete, {} unverifiable; {} {} the policy, {} warn",
        crate::base::text::count(reports.len(), "server"),
        s.converged,
        s.stale,
        s.incomplete,
        s.unverifiable,
        crate::base::text::count(s.fail, "change"),
        if s.fail == 1 { "fails" } else { "fail" },
        s.warn
    );
    out
}

/// Workflow command data: `%`, CR and LF escaped so a message stays one command.
fn github_data(text: &str) -> String {
    text.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// Workflow command properties also escape `:` and `,`.
fn github_property(text: &str) -> String {
    github_data(&esc(text))
        .replace(':', "%3A")
        .replace(',', "%2C")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn github_commands_cannot_be_split_or_injected() {
        assert_eq!(github_data("a%b\r\n::error::x"), "a%25b%0D%0A::error::x");
        assert_eq!(github_property("a,b:c"), "a%2Cb%3Ac");
    }

    #[test]
    fn xml_text_has_no_markup_or_control_characters() {
        assert_eq!(
            xml("<a href=\"x\">&\u{1b}[2J"),
            "&lt;a href=&quot;x&quot;&gt;&amp;\\u{001b}[2J"
        );
    }

    #[test]
    fn uri_references_are_percent_encoded() {
        assert_eq!(uri_reference("my dir/mcp.lock"), "my%20dir/mcp.lock");
        assert_eq!(uri_reference("/abs/mcp.lock"), "file:///abs/mcp.lock");
    }
}
