//! The pull request `update --pull-request` proposes, as Renovate and Dependabot do
//! for packages: a title and labels naming the worst change, and a Markdown body a
//! reviewer approves by merging. Built from the two locks (the one before the run and
//! the one written), so the body describes exactly the bytes the branch commits.
//!
//! Every string a server or config provides goes through [`md`] (or the word diff's
//! Markdown form): it cannot mark anything up, close a block, or hide a character.

use std::fmt::Write as _;

use super::markdown::md;
use super::word_diff::word_diff_markdown;
use crate::base::action::Action;
use crate::base::json::Json;
use crate::base::text::count;
use crate::contract::surface::Kind;
use crate::servers::package::PackageCheck;
use crate::verdict::drift::{ChangeKind, ServerChange, ServerReport, ToolChange};
use crate::verdict::policy::Rule;

/// GitHub refuses a pull request body over 65,536 characters: the body stops adding
/// changes before this many, and says how many it left out.
pub const BODY_CHARS: usize = 60_000;

/// Characters of one line of server text shown at most.
const LINE_CHARS: usize = 300;

/// Lines of an added definition shown at most.
const DEFINITION_LINES: usize = 60;

/// The label every such pull request carries; a second says the worst change's rule.
pub const LABEL: &str = "mcp-lock";

/// A pull request's title, labels and body.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Review {
    pub title: String,
    pub labels: Vec<String>,
    pub body: String,
}

/// One change a reviewer approves: a definition, a server field or a package move.
struct Item<'a> {
    report: &'a ServerReport,
    /// The policy rule it falls under, the worst of its own and its screening's.
    rule: &'static str,
    action: Action,
    /// "changed tool deploy_preview", Markdown.
    what: String,
    /// Its findings, diffs and definition, Markdown.
    detail: String,
}

impl Item<'_> {
    /// Worse first: what the policy fails before what it warns about, then by how much
    /// the change can do ([`danger`]).
    fn rank(&self) -> (Action, u8) {
        (self.action, danger(self.rule))
    }
}

/// How much a change under `rule` can do, higher worse: what runs or where calls go,
/// then what a call may do, then what breaks, then what the model reads, then what
/// is only new, then what changes nothing a caller acts on.
pub fn danger(rule: &str) -> u8 {
    match rule {
        "screen-high" => 12,
        "launch-changed" | "package-changed" | "dependency-changed" => 11,
        "authority" => 10,
        "breaking" => 9,
        "renamed" => 8,
        r if r.ends_with("-removed") => 8,
        "semantic" | "screen-medium" => 7,
        r if r.ends_with("-added") => 6,
        "additive" => 5,
        "closure-unpinned" | "package-floating" => 4,
        "screen-low" => 3,
        "cosmetic" => 2,
        _ => 1,
    }
}

/// The review of the changes between two locks (`reports`, evaluated by the policy),
/// with lines for what the run left out of the pull request (`left_out`: servers not
/// checked, definitions not pinned), already worded, and the lock's file name.
/// `None` when nothing moved.
pub fn render_review(reports: &[ServerReport], left_out: &[String], lock: &str) -> Option<Review> {
    let mut items: Vec<Item> = reports.iter().flat_map(items_of).collect();
    if items.is_empty() {
        return None;
    }
    // Stable: equal ranks keep the reports' order (by server, then profile).
    items.sort_by_key(|i| std::cmp::Reverse(i.rank()));
    let worst = &items[0];
    let servers = server_names(&items);
    let title = title(items.len(), &servers, worst.rule);
    let labels = vec![LABEL.to_string(), format!("{LABEL}: {}", worst.rule)];
    let mut body = format!(
        "## mcp-lock: {} to approve, worst **{}** ({})\n\n",
        count(items.len(), "change"),
        worst.rule,
        worst.action.as_str()
    );
    let _ = writeln!(
        body,
        "Merging this pull request approves every change below: `{}` then pins what these \
         servers list now, so `mcp-lock verify` passes them and the guard serves them. \
         Worst first; the policy column is what the team's policy does with each change \
         where no one approves it.\n",
        md(lock, LINE_CHARS)
    );
    body.push_str("| # | Server | Change | Class | Policy |\n| --- | --- | --- | --- | --- |\n");
    for (n, item) in items.iter().enumerate() {
        let _ = writeln!(
            body,
            "| {} | {} | {} | {} | {} |",
            n + 1,
            listing(item.report),
            item.what,
            item.rule,
            action_text(item.action)
        );
    }
    let mut shown = 0;
    for (n, item) in items.iter().enumerate() {
        let section = format!(
            "\n### {}. {}: {}\n\n**{}**, {}\n{}",
            n + 1,
            listing(item.report),
            item.what,
            item.rule,
            action_text(item.action),
            item.detail
        );
        if body.len() + section.len() > BODY_CHARS {
            break;
        }
        body.push_str(&section);
        shown += 1;
    }
    if shown < items.len() {
        let _ = writeln!(
            body,
            "\n{} left out of this body (GitHub limits its length); \
             `mcp-lock diff --from OLD.lock` on the branch shows every change.",
            count(items.len() - shown, "more change")
        );
    }
    if !left_out.is_empty() {
        body.push_str("\n### Not in this pull request\n\n");
        for line in left_out {
            let line = format!("- {}\n", md(line, LINE_CHARS * 2));
            if body.len() + line.len() > BODY_CHARS + 4_000 {
                break;
            }
            body.push_str(&line);
        }
    }
    let _ = writeln!(
        body,
        "\n---\nWritten by `mcp-lock update --pull-request`; the lock records these pins as \
         `approved = \"pull-request\"`."
    );
    Some(Review {
        title,
        labels,
        body,
    })
}

impl Review {
    /// For a lock rewritten with no change a review names (its format brought up to
    /// date, say): said so, so the pull request is never without a body.
    pub fn rewritten(lock: &str) -> Review {
        Review {
            title: "mcp.lock: rewritten, no definition changed".into(),
            labels: vec![LABEL.to_string()],
            body: format!(
                "## mcp-lock: `{}` rewritten\n\nNo definition, server field or package \
                 moved: the lock was written again (in this release's format, or with its \
                 approvals recorded). `mcp-lock diff --from OLD.lock` shows nothing to approve.\n",
                md(lock, LINE_CHARS)
            ),
        }
    }
}

/// "mcp.lock: 3 changes to fixture and github, worst authority", at most three server
/// names, each cut short, with control characters escaped.
fn title(changes: usize, servers: &[&str], worst: &str) -> String {
    let names: Vec<String> = servers
        .iter()
        .take(3)
        .map(|s| crate::base::text::escape_cut(s, 40))
        .collect();
    let mut to = match names.as_slice() {
        [one] => one.clone(),
        [a, b] => format!("{a} and {b}"),
        [a, b, c] if servers.len() == 3 => format!("{a}, {b} and {c}"),
        many => format!(
            "{} and {}",
            many.join(", "),
            count(servers.len() - many.len(), "more server")
        ),
    };
    if to.is_empty() {
        to = "the lock".into();
    }
    format!(
        "mcp.lock: {} to {to}, worst {worst}",
        count(changes, "change")
    )
}

/// The servers of `items`, in order of their worst change, each once.
fn server_names<'a>(items: &[Item<'a>]) -> Vec<&'a str> {
    let mut names: Vec<&str> = Vec::new();
    for item in items {
        if !names.contains(&item.report.name.as_str()) {
            names.push(&item.report.name);
        }
    }
    names
}

/// "**fixture** \[claude-code\]".
fn listing(r: &ServerReport) -> String {
    if r.profile.is_empty() {
        format!("**{}**", md(&r.name, LINE_CHARS))
    } else {
        format!(
            "**{}** \\[{}\\]",
            md(&r.name, LINE_CHARS),
            md(&r.profile, LINE_CHARS)
        )
    }
}

fn action_text(action: Action) -> String {
    match action {
        Action::Fail => "**fail**".into(),
        other => other.as_str().into(),
    }
}

/// Every change of one listing: its definitions, its server fields that are drift,
/// and its package.
fn items_of(r: &ServerReport) -> Vec<Item<'_>> {
    let mut items: Vec<Item> = r.changes.iter().map(|c| change_item(r, c)).collect();
    items.extend(r.server_changes.iter().map(|c| server_change_item(r, c)));
    if let Some(p) = r.package.as_ref().filter(|p| p.status.moved()) {
        items.push(package_item(r, p));
    }
    items
}

fn change_item<'a>(r: &'a ServerReport, c: &ToolChange) -> Item<'a> {
    // The worst of the change's own rule and each screening finding's.
    let (mut rule, mut action) = (Rule::of(c).as_str(), c.action);
    for s in &c.screening {
        let screened = Rule::Screen(s.severity).as_str();
        if (s.action, danger(screened)) > (action, danger(rule)) {
            (rule, action) = (screened, s.action);
        }
    }
    let key = md(&c.tool, LINE_CHARS);
    let noun = match c.kind {
        Kind::Tool => "tool",
        kind => kind.noun(),
    };
    let mut what = format!("{} {noun} {key}", c.change.as_str());
    if let Some(from) = &c.renamed_from {
        let _ = write!(what, " (was {})", md(from, LINE_CHARS));
    }
    Item {
        report: r,
        rule,
        action,
        what,
        detail: change_detail(c),
    }
}

/// A change's findings (each with its word diff or values), its screening findings,
/// and the whole definition when it is new.
fn change_detail(c: &ToolChange) -> String {
    let mut out = String::new();
    if let Some(problem) = &c.problem {
        let _ = writeln!(out, "\nCannot be pinned: {}", md(problem, LINE_CHARS));
    }
    if !c.findings.is_empty() {
        out.push('\n');
    }
    for f in &c.findings {
        let at = if f.pointer.is_empty() {
            String::new()
        } else {
            format!(" at {}", md(&f.pointer, LINE_CHARS))
        };
        let _ = writeln!(
            out,
            "- {}{at}: {}",
            f.class.as_str(),
            md(&f.reason, LINE_CHARS)
        );
        match (&f.before, &f.after) {
            (Some(serde_json::Value::String(a)), Some(serde_json::Value::String(b))) => {
                let _ = writeln!(out, "\n  > {}\n", word_diff_markdown(a, b));
            }
            // A whole definition added or removed: its heading says so.
            _ if f.pointer.is_empty() => {}
            (a, b) => {
                let _ = writeln!(
                    out,
                    "  was {}, now {}",
                    value(a.as_ref()),
                    value(b.as_ref())
                );
            }
        }
    }
    if !c.screening.is_empty() {
        out.push_str("\nScreening found:\n\n");
        for s in &c.screening {
            let _ = writeln!(
                out,
                "- {} {}{} at {}: {} (\u{201c}{}\u{201d})",
                s.severity,
                s.rule,
                if s.accepted { ", accepted" } else { "" },
                md(&s.pointer, LINE_CHARS),
                md(&s.reason, LINE_CHARS),
                md(&s.quote, LINE_CHARS)
            );
        }
    }
    if let (ChangeKind::Added, Some(definition)) = (c.change, &c.live) {
        out.push_str(&definition_details(definition));
    }
    out
}

/// A value (not text) as compact JSON, escaped: "`absent`" when there is none.
fn value(v: Option<&serde_json::Value>) -> String {
    match v {
        None => "(absent)".into(),
        Some(v) => md(
            &Json::from_value(v).canonical().unwrap_or_default(),
            LINE_CHARS,
        ),
    }
}

/// A new definition, folded in a `<details>` block as pretty JSON. Every line is
/// escaped for a terminal first (controls and bidi characters made visible), and the
/// fence is longer than any run of backticks in it, so nothing inside can close it.
fn definition_details(definition: &Json) -> String {
    let mut folded = crate::base::text::Folded::new(DEFINITION_LINES, LINE_CHARS);
    let _ = serde_json::to_writer_pretty(&mut folded, &definition.to_value());
    let lines: Vec<String> = folded
        .lines()
        .into_iter()
        .map(|l| anstream::adapter::strip_str(&l).to_string())
        .collect();
    let longest_run = lines
        .iter()
        .flat_map(|l| l.split(|c| c != '`'))
        .map(str::len)
        .max()
        .unwrap_or(0);
    let fence = "`".repeat(longest_run.max(2) + 1);
    format!(
        "\n<details><summary>The definition</summary>\n\n{fence}json\n{}\n{fence}\n\n</details>\n",
        lines.join("\n")
    )
}

fn server_change_item<'a>(r: &'a ServerReport, c: &ServerChange) -> Item<'a> {
    let shown = |v: Option<&str>| match v {
        None => "(none)".to_string(),
        Some(hash) if c.field == "instructions" => md(super::short(hash), LINE_CHARS),
        Some(v) => md(v, LINE_CHARS),
    };
    let mut detail = format!(
        "\n- was {}\n- now {}\n",
        shown(c.pinned.as_deref()),
        shown(c.live.as_deref())
    );
    if c.field == "instructions" {
        match r.instructions.as_deref() {
            Some(text) => {
                let _ = writeln!(
                    detail,
                    "\nThe lock keeps only a hash of the old instructions; the new text:\n\n> {}",
                    md(text, LINE_CHARS * 4)
                );
            }
            None => detail.push_str("\nThe lock keeps only a hash of the instructions.\n"),
        }
    }
    Item {
        report: r,
        rule: c.rule_name().unwrap_or("note"),
        action: c.action.unwrap_or_default(),
        what: match c.field {
            "server" => "server removed from the lock".into(),
            field => format!("server {}", field.replace('_', " ")),
        },
        detail,
    }
}

fn package_item<'a>(r: &'a ServerReport, p: &PackageCheck) -> Item<'a> {
    let mut detail = format!(
        "\n- was {}\n- now {}\n",
        p.pinned
            .as_deref()
            .map_or("(no package)".into(), |v| md(v, LINE_CHARS)),
        p.live
            .as_deref()
            .map_or("(no package)".into(), |v| md(v, LINE_CHARS))
    );
    if !p.dependencies.is_empty() {
        let _ = writeln!(
            detail,
            "\n{} of its dependency closure moved:\n",
            count(p.dependencies.len(), "package")
        );
        for d in p.dependencies.iter().take(100) {
            let _ = writeln!(detail, "- {}", md(&d.to_string(), LINE_CHARS));
        }
        if p.dependencies.len() > 100 {
            let _ = writeln!(detail, "- … {}", count(p.dependencies.len() - 100, "more"));
        }
    }
    Item {
        report: r,
        rule: p.status.rule().unwrap_or("package-changed"),
        action: p.action,
        what: format!("package ({})", md(p.kind, LINE_CHARS)),
        detail,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_title_names_up_to_three_servers_and_counts_the_rest() {
        assert_eq!(
            title(1, &["fixture"], "authority"),
            "mcp.lock: 1 change to fixture, worst authority"
        );
        assert_eq!(
            title(5, &["a", "b", "c", "d", "e"], "semantic"),
            "mcp.lock: 5 changes to a, b, c and 2 more servers, worst semantic"
        );
        assert_eq!(
            title(3, &["a", "b", "c"], "breaking"),
            "mcp.lock: 3 changes to a, b and c, worst breaking"
        );
    }

    #[test]
    fn a_title_escapes_control_characters_a_server_name_carries() {
        let t = title(1, &["evil\u{1b}[2J\nname"], "additive");
        assert!(!t.contains('\u{1b}') && !t.contains('\n'), "{t}");
    }

    #[test]
    fn what_runs_ranks_above_what_a_call_does_above_what_breaks_above_text() {
        let order = [
            "screen-high",
            "package-changed",
            "authority",
            "breaking",
            "tool-removed",
            "semantic",
            "tool-added",
            "additive",
            "cosmetic",
        ];
        for pair in order.windows(2) {
            assert!(danger(pair[0]) >= danger(pair[1]), "{pair:?}");
        }
        assert!(danger("authority") > danger("semantic"));
    }

    #[test]
    fn a_markdown_word_diff_escapes_server_text_so_it_marks_nothing_up() {
        let diff = word_diff_markdown("List items", "List <img src=x> | `all` **items**");
        assert!(
            diff.starts_with(
                "List <del>items</del><ins>&lt;img src=x&gt; \\| \\`all\\` \\*\\*items\\*\\*</ins>"
            ),
            "{diff}"
        );
        assert!(!diff.contains('\u{1b}'), "{diff}");
    }

    #[test]
    fn a_definition_block_fence_is_longer_than_any_backtick_run_inside() {
        let definition = Json::from_value(&serde_json::json!({
            "name": "t", "description": "```\n</details><script>x</script>"
        }));
        let block = definition_details(&definition);
        assert!(block.contains("````json\n"), "{block}");
        assert!(block.trim_end().ends_with("````\n\n</details>"), "{block}");
    }
}
