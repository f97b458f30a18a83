//! `mcp-lock audit show`: what each guard session did, from its log entries.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::path::PathBuf;

use serde::Serialize;
use serde_json::Value;

/// One session, summarised.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SessionSummary {
    pub session: String,
    pub server: String,
    pub start: String,
    pub end: String,
    /// How it ended, or `no end recorded`.
    pub ended: String,
    /// The pinned client profile the client matched, if it did.
    pub profile: Option<String>,
    /// When it matched none: the closest profile and the command that pins it.
    pub unmatched: Option<Value>,
    /// How many items of each kind (`tool`, `prompt`, ...) the session's last whole
    /// listing showed (the log counts them; what was hidden or served unapproved is
    /// named).
    pub shown: BTreeMap<String, u64>,
    pub served_pinned: BTreeSet<String>,
    pub served_live: BTreeSet<String>,
    pub hidden: Vec<Hidden>,
    pub calls: BTreeMap<String, BTreeMap<String, u64>>,
    pub refusals: BTreeMap<String, u64>,
    pub list_changed: u64,
    pub list_changed_lists: BTreeSet<String>,
    pub drift: Vec<Drift>,
    pub warnings: Vec<String>,
    /// Entries whose detail was past a list's limit ([`MAX_ITEMS`]): counted here,
    /// not named.
    #[serde(skip_serializing_if = "is_zero")]
    pub not_listed: u64,
}

fn is_zero(n: &u64) -> bool {
    *n == 0
}

#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
pub struct Hidden {
    pub item: String,
    pub error_code: String,
    pub class: Option<String>,
}

/// Something a later listing of the session treated otherwise than its first.
#[derive(Debug, Clone, Serialize)]
pub struct Drift {
    pub time: String,
    pub item: String,
    pub what: String,
}

/// Distinct items of each list a session summary names (calls, hidden items, drift,
/// warnings, ...); past them, entries are counted in `not_listed`.
pub const MAX_ITEMS: usize = 1000;

/// Characters of one string from the log kept (a tool name, a message); the rest is
/// counted in its place.
pub const MAX_TEXT: usize = 1000;

/// Sessions summarised at once; past them, the one begun first is shown as it
/// stands (as if it had no end recorded yet).
pub const MAX_OPEN_SESSIONS: usize = 10_000;

/// Every session in `files` (read in order, one line at a time), each handed to
/// `emit` when it ends (its `session_end` checkpoint; for a log from before sessions
/// had ids, its `client_closed` or `server_exited`), and those without an end at
/// the end of the log, in the order they began. `since` keeps sessions that ended at
/// or after it (RFC 3339 UTC, or a date), `server` only that server's. Memory holds
/// only the sessions under way, each bounded by [`MAX_ITEMS`] and [`MAX_TEXT`];
/// time is linear in the log. Returns how many sessions were emitted.
pub fn summarise(
    files: &[PathBuf],
    since: Option<&str>,
    server: Option<&str>,
    mut emit: impl FnMut(&SessionSummary) -> std::io::Result<()>,
) -> std::io::Result<usize> {
    let since = since.map(normalise_time);
    let mut emitted = 0;
    let mut finish = |state: State| -> std::io::Result<()> {
        let s = state.finish();
        if server.is_none_or(|want| s.server == want)
            && since.as_deref().is_none_or(|t| s.end.as_str() >= t)
        {
            emitted += 1;
            emit(&s)?;
        }
        Ok(())
    };
    // Sessions under way, by id, with the order they began in.
    let mut sessions: HashMap<String, (u64, State)> = HashMap::new();
    let mut begun: BTreeMap<u64, String> = BTreeMap::new();
    let mut counter = 0u64;
    // Entries of logs before sessions had ids: one session per server, up to its end.
    let mut legacy: HashMap<String, String> = HashMap::new();
    let mut legacy_count = 0;
    for path in files {
        let mut lines = super::format::LogLines::open(path)?;
        while let Some((_, line)) = lines.next_line()? {
            let super::format::LogLine::Line(line) = line else {
                continue;
            };
            let Ok(entry) = serde_json::from_slice::<Value>(line) else {
                continue;
            };
            if !entry.is_object() {
                continue;
            }
            let srv = kept(entry["server"].as_str().unwrap_or(""));
            let event = entry["event"].as_str().unwrap_or("").to_string();
            let (id, ends) = match entry["session"].as_str() {
                Some(id) => (
                    kept(id),
                    event == "checkpoint" && entry["reason"] == "session_end",
                ),
                None => {
                    if legacy.len() >= MAX_OPEN_SESSIONS && !legacy.contains_key(&srv) {
                        legacy.clear();
                    }
                    let id = legacy
                        .entry(srv.clone())
                        .or_insert_with(|| {
                            legacy_count += 1;
                            format!("unchained-{legacy_count}")
                        })
                        .clone();
                    let ends = matches!(event.as_str(), "client_closed" | "server_exited");
                    if ends {
                        legacy.remove(&srv);
                    }
                    (id, ends)
                }
            };
            if !sessions.contains_key(&id) {
                if sessions.len() >= MAX_OPEN_SESSIONS
                    && let Some((_, oldest)) = begun.pop_first()
                    && let Some((_, state)) = sessions.remove(&oldest)
                {
                    finish(state)?;
                }
                counter += 1;
                begun.insert(counter, id.clone());
                sessions.insert(id.clone(), (counter, State::new(&id, &srv)));
            }
            let (_, state) = sessions.get_mut(&id).expect("just inserted");
            state.add(&event, &entry);
            if ends && let Some((order, state)) = sessions.remove(&id) {
                begun.remove(&order);
                finish(state)?;
            }
        }
    }
    for (_, id) in begun {
        if let Some((_, state)) = sessions.remove(&id) {
            finish(state)?;
        }
    }
    Ok(emitted)
}

/// A string from the log as a summary keeps it: at most [`MAX_TEXT`] characters, the
/// rest counted.
fn kept(text: &str) -> String {
    crate::base::text::cut(text, MAX_TEXT)
}

/// `2026-12-01` -> `2026-12-01T00:00:00.000Z`; a full time is kept.
fn normalise_time(t: &str) -> String {
    if t.len() == 10 {
        format!("{t}T00:00:00.000Z")
    } else {
        t.to_string()
    }
}

struct State {
    summary: SessionSummary,
    listed: bool,
    /// Items counted so far in the listing under way, per kind.
    counting: BTreeMap<String, u64>,
    /// Items hidden so far (after the first listing, new ones are drift).
    hidden_seen: BTreeSet<String>,
}

impl State {
    fn new(id: &str, server: &str) -> Self {
        State {
            summary: SessionSummary {
                session: id.to_string(),
                server: server.to_string(),
                ended: "no end recorded".into(),
                ..SessionSummary::default()
            },
            listed: false,
            counting: BTreeMap::new(),
            hidden_seen: BTreeSet::new(),
        }
    }

    fn add(&mut self, event: &str, e: &Value) {
        let s = &mut self.summary;
        let time = kept(e["time"].as_str().unwrap_or(""));
        if s.start.is_empty() {
            s.start = time.clone();
        }
        s.end = time.clone();
        let text = |v: &Value| kept(v.as_str().unwrap_or(""));
        let opt = |v: &Value| v.as_str().map(kept);
        // Past a list's limit, an entry is counted, not named.
        let room = |len: usize, s_not_listed: &mut u64| {
            if len < MAX_ITEMS {
                true
            } else {
                *s_not_listed += 1;
                false
            }
        };
        match event {
            "client_profile" => {
                if e["decision"] == "matched" {
                    s.profile = opt(&e["profile"]);
                } else {
                    s.unmatched = Some(serde_json::json!({
                        "closest": opt(&e["closest"]), "pin_with": opt(&e["pin_with"])
                    }));
                }
            }
            "tools/list" | "prompts/list" | "resources/templates/list" | "resources/list" => {
                if e["decision"] == "not_pinned_yet" {
                    if room(s.warnings.len(), &mut s.not_listed) {
                        s.warnings.push(text(&e["message"]));
                    }
                    return;
                }
                let kind = kept(e["kind"].as_str().unwrap_or("tool"));
                if !self.counting.contains_key(&kind)
                    && !room(self.counting.len(), &mut s.not_listed)
                {
                    return;
                }
                let count = self.counting.entry(kind.clone()).or_default();
                if e["first_page"] == true {
                    *count = 0;
                }
                *count = count.saturating_add(e["shown"].as_u64().unwrap_or(0));
                if e["complete"] == true {
                    s.shown.insert(kind.clone(), *count);
                }
                for h in e["hidden"].as_array().into_iter().flatten() {
                    let name = h["tool"].as_str().or(h["key"].as_str()).unwrap_or("");
                    let hidden = Hidden {
                        item: label(&kind, &kept(name)),
                        error_code: text(&h["error_code"]),
                        class: opt(&h["class"]),
                    };
                    if self.hidden_seen.contains(&hidden.item) {
                        continue;
                    }
                    if !room(s.hidden.len(), &mut s.not_listed) {
                        continue;
                    }
                    self.hidden_seen.insert(hidden.item.clone());
                    if self.listed && room(s.drift.len(), &mut s.not_listed) {
                        s.drift.push(Drift {
                            time: time.clone(),
                            item: hidden.item.clone(),
                            what: format!("hidden: {}", reason(&hidden)),
                        });
                    }
                    s.hidden.push(hidden);
                }
                if e["complete"] == true {
                    self.listed = true;
                }
            }
            "served_pinned" | "served_live" => {
                let kind = e["kind"].as_str().unwrap_or("tool");
                let name = e[kind_member(kind)].as_str().unwrap_or("");
                let item = label(&kept(kind), &kept(name));
                let set = if event == "served_pinned" {
                    &mut s.served_pinned
                } else {
                    &mut s.served_live
                };
                if set.contains(&item) || !room(set.len(), &mut s.not_listed) {
                    return;
                }
                set.insert(item.clone());
                if self.listed && room(s.drift.len(), &mut s.not_listed) {
                    s.drift.push(Drift {
                        time,
                        item,
                        what: format!(
                            "served {} ({})",
                            if event == "served_pinned" {
                                "as its approved definition"
                            } else {
                                "live"
                            },
                            kept(e["class"].as_str().unwrap_or("changed"))
                        ),
                    });
                }
            }
            "tools/call" | "prompts/get" | "resources/read" => {
                let item = match event {
                    "tools/call" => text(&e["tool"]),
                    "prompts/get" => label("prompt", &text(&e["prompt"])),
                    _ => label("resource", &text(&e["uri"])),
                };
                let decision = kept(e["decision"].as_str().unwrap_or("unknown"));
                if let Some(code) = e["error_code"].as_str() {
                    let code = kept(code);
                    if s.refusals.contains_key(&code) || room(s.refusals.len(), &mut s.not_listed) {
                        *s.refusals.entry(code).or_default() += 1;
                    }
                }
                if !s.calls.contains_key(&item) && !room(s.calls.len(), &mut s.not_listed) {
                    return;
                }
                let decisions = s.calls.entry(item).or_default();
                if decisions.contains_key(&decision) || room(decisions.len(), &mut s.not_listed) {
                    *decisions.entry(decision).or_default() += 1;
                }
            }
            "list_changed" => {
                s.list_changed = s
                    .list_changed
                    .saturating_add(e["count"].as_u64().unwrap_or(1));
                for list in e["lists"].as_array().into_iter().flatten() {
                    let list = text(list);
                    if !s.list_changed_lists.contains(&list)
                        && room(s.list_changed_lists.len(), &mut s.not_listed)
                    {
                        s.list_changed_lists.insert(list);
                    }
                }
            }
            "client_closed" | "server_exited" => s.ended = text(&e["reason"]),
            "launch_refused" => {
                s.ended = format!("launch refused: {}", text(&e["message"]));
            }
            "launch_disagrees" | "server_identity" | "instructions" | "protocol_unpinned"
                if room(s.warnings.len(), &mut s.not_listed) =>
            {
                s.warnings.push(format!("{event}: {}", text(&e["message"])));
            }
            "message" => {
                *s.refusals.entry("MESSAGE_REFUSED".into()).or_default() += 1;
            }
            _ => {}
        }
    }

    fn finish(self) -> SessionSummary {
        self.summary
    }
}

fn label(kind: &str, name: &str) -> String {
    match kind {
        "tool" => name.to_string(),
        kind => format!("{kind} {name}"),
    }
}

fn kind_member(kind: &str) -> &str {
    match kind {
        "prompt" => "prompt",
        "resource_template" => "resource_template",
        "resource" => "resource",
        _ => "tool",
    }
}

fn reason(h: &Hidden) -> String {
    match &h.class {
        Some(class) => format!("{}, {class}", h.error_code),
        None => h.error_code.clone(),
    }
}

fn calls_line(decisions: &BTreeMap<String, u64>) -> String {
    decisions
        .iter()
        .map(|(d, n)| format!("{n} {d}"))
        .collect::<Vec<_>>()
        .join(", ")
}

fn profile_line(s: &SessionSummary) -> String {
    match (&s.profile, &s.unmatched) {
        (Some(p), _) => format!("{p} (matched)"),
        (None, Some(u)) => format!(
            "none matched (closest: {}; pin with: {})",
            u["closest"].as_str().unwrap_or("-"),
            u["pin_with"].as_str().unwrap_or("-")
        ),
        _ => "not recorded".into(),
    }
}

fn shown_line(s: &SessionSummary) -> String {
    if s.shown.is_empty() {
        return "nothing listed".into();
    }
    let counts: Vec<String> = s
        .shown
        .iter()
        .map(|(kind, n)| {
            let noun = kind.replace('_', " ");
            crate::base::text::count(*n as usize, &noun)
        })
        .collect();
    format!("{} (in the last whole listing)", counts.join(", "))
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// What the text output says when no session is shown.
pub const TEXT_NONE: &str = "no guard session in the audit log\n";

/// A string from the log, for a terminal: control, bidi and invisible characters
/// (line breaks too) written as visible escapes, so it stays on its line.
fn esc(text: &str) -> String {
    crate::base::text::escape_for_terminal(text)
}

/// One session as text for a terminal. Every string from the log is escaped where it
/// is put in, so none can begin a line of its own or drive the terminal.
pub fn text_session(s: &SessionSummary) -> String {
    let mut out = String::new();
    out.push_str(&format!(
        "session {} of {}\n",
        esc(&s.session),
        esc(&s.server)
    ));
    out.push_str(&format!(
        "  from {} to {} ({})\n",
        esc(&s.start),
        esc(&s.end),
        esc(&s.ended)
    ));
    out.push_str(&format!("  client profile: {}\n", esc(&profile_line(s))));
    out.push_str(&format!("  shown: {}\n", esc(&shown_line(s))));
    if !s.served_pinned.is_empty() {
        out.push_str(&format!(
            "  served as approved: {}\n",
            esc(&join(&s.served_pinned))
        ));
    }
    if !s.served_live.is_empty() {
        out.push_str(&format!("  served live: {}\n", esc(&join(&s.served_live))));
    }
    for h in &s.hidden {
        out.push_str(&format!(
            "  hidden: {} ({})\n",
            esc(&h.item),
            esc(&reason(h))
        ));
    }
    if s.calls.is_empty() {
        out.push_str("  calls: none\n");
    } else {
        out.push_str("  calls:\n");
        let items: Vec<(String, &BTreeMap<String, u64>)> =
            s.calls.iter().map(|(k, v)| (esc(k), v)).collect();
        let width = items
            .iter()
            .map(|(k, _)| k.chars().count())
            .max()
            .unwrap_or(0);
        for (item, decisions) in &items {
            out.push_str(&format!(
                "    {item:width$}  {}\n",
                esc(&calls_line(decisions))
            ));
        }
    }
    if !s.refusals.is_empty() {
        let r: Vec<String> = s.refusals.iter().map(|(c, n)| format!("{c} {n}")).collect();
        out.push_str(&format!("  refusals: {}\n", esc(&r.join(", "))));
    }
    if s.list_changed > 0 {
        out.push_str(&format!(
            "  list_changed: {} ({})\n",
            crate::base::text::count(s.list_changed as usize, "notification"),
            esc(&join(&s.list_changed_lists))
        ));
    }
    for d in &s.drift {
        out.push_str(&format!(
            "  drift mid-session at {}: {} {}\n",
            esc(&d.time),
            esc(&d.item),
            esc(&d.what)
        ));
    }
    for w in &s.warnings {
        out.push_str(&format!("  warning: {}\n", esc(w)));
    }
    if s.not_listed > 0 {
        out.push_str(&format!(
            "  not listed: {} past the summary's limit of {MAX_ITEMS} items a list\n",
            crate::base::text::count(s.not_listed as usize, "entry detail")
        ));
    }
    out.push('\n');
    out
}

/// The summaries as text for a terminal.
pub fn render_text(sessions: &[SessionSummary]) -> String {
    if sessions.is_empty() {
        return TEXT_NONE.into();
    }
    sessions.iter().map(text_session).collect()
}

/// The heading the Markdown output begins with.
pub const MARKDOWN_HEAD: &str = "# mcp-lock guard sessions\n\n";

/// What the Markdown output says when no session is shown.
pub const MARKDOWN_NONE: &str = "No guard session in the audit log.\n";

/// A string from the log as a Markdown code span: nothing in it is markup, a link,
/// an image or HTML, and no autolink is made of it; control, bidi and invisible
/// characters (line breaks too) are visible escapes. `in_table`: a `|` is escaped
/// too, so it cannot end the cell (GitHub reads `\|` in a code span in a table as
/// `|`). An empty string is shown as `""`.
fn code(text: &str, in_table: bool) -> String {
    let mut body = esc(text);
    if body.is_empty() {
        body = "\"\"".into();
    }
    if in_table {
        body = body.replace('|', "\\|");
    }
    let longest = body.split(|c| c != '`').map(str::len).max().unwrap_or(0);
    let fence = "`".repeat(longest + 1);
    // A space each side when the text begins or ends with a backtick or a space
    // (CommonMark takes one off each side again).
    let pad = if body.starts_with(['`', ' ']) || body.ends_with(['`', ' ']) {
        " "
    } else {
        ""
    };
    format!("{fence}{pad}{body}{pad}{fence}")
}

/// One session as Markdown.
pub fn markdown_session(s: &SessionSummary) -> String {
    let c = |t: &str| code(t, false);
    let mut out = String::new();
    out.push_str(&format!(
        "## {} session {}\n\n",
        c(&s.server),
        c(&s.session)
    ));
    out.push_str(&format!(
        "- **From** {} **to** {} ({})\n",
        c(&s.start),
        c(&s.end),
        c(&s.ended)
    ));
    out.push_str(&format!("- **Client profile:** {}\n", c(&profile_line(s))));
    out.push_str(&format!("- **Shown:** {}\n", c(&shown_line(s))));
    if !s.served_pinned.is_empty() {
        out.push_str(&format!(
            "- **Served as approved:** {}\n",
            c(&join(&s.served_pinned))
        ));
    }
    if !s.served_live.is_empty() {
        out.push_str(&format!(
            "- **Served live:** {}\n",
            c(&join(&s.served_live))
        ));
    }
    for h in &s.hidden {
        out.push_str(&format!(
            "- **Hidden:** {} ({})\n",
            c(&h.item),
            c(&reason(h))
        ));
    }
    for (code_, n) in &s.refusals {
        out.push_str(&format!("- **Refused** {}: {n}\n", c(code_)));
    }
    if s.list_changed > 0 {
        out.push_str(&format!(
            "- **list_changed:** {} ({})\n",
            s.list_changed,
            c(&join(&s.list_changed_lists))
        ));
    }
    for d in &s.drift {
        out.push_str(&format!(
            "- **Drift mid-session** at {}: {} {}\n",
            c(&d.time),
            c(&d.item),
            c(&d.what)
        ));
    }
    for w in &s.warnings {
        out.push_str(&format!("- **Warning:** {}\n", c(w)));
    }
    if s.not_listed > 0 {
        out.push_str(&format!(
            "- **Not listed:** {} past the summary's limit of {MAX_ITEMS} items a list\n",
            s.not_listed
        ));
    }
    if !s.calls.is_empty() {
        out.push_str("\n| call | decisions |\n|---|---|\n");
        for (item, decisions) in &s.calls {
            out.push_str(&format!(
                "| {} | {} |\n",
                code(item, true),
                code(&calls_line(decisions), true)
            ));
        }
    }
    out.push('\n');
    out
}

/// The summaries as Markdown (a CI step summary, an incident report).
pub fn render_markdown(sessions: &[SessionSummary]) -> String {
    let mut out = String::from(MARKDOWN_HEAD);
    if sessions.is_empty() {
        out.push_str(MARKDOWN_NONE);
    }
    for s in sessions {
        out.push_str(&markdown_session(s));
    }
    out
}

/// One session as pretty JSON, indented to sit in the `sessions` array of
/// `{"sessions": [...]}`, with every unsafe character outside ASCII escaped too.
pub fn json_session(s: &SessionSummary) -> serde_json::Result<String> {
    let text = crate::base::text::escape_json_output(&serde_json::to_string_pretty(s)?);
    Ok(text
        .lines()
        .map(|l| format!("    {l}"))
        .collect::<Vec<_>>()
        .join("\n"))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn hostile() -> SessionSummary {
        let mut s = SessionSummary {
            session: "abc".into(),
            server: "srv".into(),
            ended: "launch refused: x\nsession forged of root".into(),
            ..SessionSummary::default()
        };
        s.calls.insert(
            "evil\n  calls: none\u{1b}[2J\u{7}![x](http://attacker.example/p.png)|`".into(),
            BTreeMap::from([("refused".to_string(), 1)]),
        );
        s
    }

    #[test]
    fn text_keeps_every_log_string_on_its_line_with_controls_escaped() {
        let text = render_text(&[hostile()]);
        assert!(
            !text.contains('\u{1b}') && !text.contains('\u{7}'),
            "{text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("session forged")),
            "{text}"
        );
        assert!(
            text.contains("    evil\\n  calls: none\\u{001b}[2J\\u{0007}![x](http://attacker.example/p.png)|`  1 refused"),
            "{text}"
        );
    }

    #[test]
    fn markdown_puts_every_log_string_in_a_code_span_that_no_markup_leaves() {
        let md = render_markdown(&[hostile()]);
        assert!(!md.contains('\u{1b}') && !md.contains('\u{7}'), "{md}");
        assert!(
            md.contains("| `` evil\\n  calls: none\\u{001b}[2J\\u{0007}![x](http://attacker.example/p.png)\\|` `` | `1 refused` |"),
            "{md}"
        );
        assert_eq!(code("", false), "`\"\"`");
        assert_eq!(code("a`b", false), "``a`b``");
    }
}
