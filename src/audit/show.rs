//! `mcp-lock audit show`: what each guard session did, from its log entries.

use std::collections::{BTreeMap, BTreeSet};
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

/// Every session in `files` (read in order), oldest first; `since` keeps sessions
/// that ended at or after it (RFC 3339 UTC, or a date), `server` only that server's.
pub fn summarise(
    files: &[PathBuf],
    since: Option<&str>,
    server: Option<&str>,
) -> std::io::Result<Vec<SessionSummary>> {
    let mut order: Vec<String> = Vec::new();
    let mut sessions: BTreeMap<String, State> = BTreeMap::new();
    // Entries of logs before sessions had ids: one session per server, up to its end.
    let mut legacy: BTreeMap<String, (String, u64)> = BTreeMap::new();
    let mut legacy_count = 0;
    for path in files {
        let text = read_bounded(path)?;
        for line in text.lines() {
            let Ok(entry) = serde_json::from_str::<Value>(line) else {
                continue;
            };
            let srv = entry["server"].as_str().unwrap_or("").to_string();
            let event = entry["event"].as_str().unwrap_or("").to_string();
            let id = match entry["session"].as_str() {
                Some(id) => id.to_string(),
                None => {
                    let slot = legacy.entry(srv.clone()).or_insert_with(|| {
                        legacy_count += 1;
                        (format!("unchained-{legacy_count}"), 0)
                    });
                    let id = slot.0.clone();
                    if matches!(event.as_str(), "client_closed" | "server_exited") {
                        legacy.remove(&srv);
                    }
                    id
                }
            };
            let state = sessions.entry(id.clone()).or_insert_with(|| {
                order.push(id.clone());
                State::new(&id, &srv)
            });
            state.add(&event, &entry);
        }
    }
    let since = since.map(normalise_time);
    Ok(order
        .into_iter()
        .filter_map(|id| sessions.remove(&id))
        .map(State::finish)
        .filter(|s| server.is_none_or(|want| s.server == want))
        .filter(|s| since.as_deref().is_none_or(|t| s.end.as_str() >= t))
        .collect())
}

fn read_bounded(path: &std::path::Path) -> std::io::Result<String> {
    use std::io::Read;
    let file = std::fs::File::open(path)
        .map_err(|e| std::io::Error::new(e.kind(), format!("{}: {e}", path.display())))?;
    let mut bytes = Vec::new();
    file.take(1 << 30).read_to_end(&mut bytes)?;
    Ok(String::from_utf8_lossy(&bytes).into_owned())
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
        let time = e["time"].as_str().unwrap_or("").to_string();
        if s.start.is_empty() {
            s.start = time.clone();
        }
        s.end = time.clone();
        let text = |v: &Value| v.as_str().unwrap_or("").to_string();
        match event {
            "client_profile" => {
                if e["decision"] == "matched" {
                    s.profile = e["profile"].as_str().map(str::to_string);
                } else {
                    s.unmatched = Some(serde_json::json!({
                        "closest": e["closest"], "pin_with": e["pin_with"]
                    }));
                }
            }
            "tools/list" | "prompts/list" | "resources/templates/list" | "resources/list" => {
                if e["decision"] == "not_pinned_yet" {
                    s.warnings.push(text(&e["message"]));
                    return;
                }
                let kind = e["kind"].as_str().unwrap_or("tool");
                let count = self.counting.entry(kind.to_string()).or_default();
                if e["first_page"] == true {
                    *count = 0;
                }
                *count += e["shown"].as_u64().unwrap_or(0);
                if e["complete"] == true {
                    s.shown.insert(kind.to_string(), *count);
                }
                for h in e["hidden"].as_array().into_iter().flatten() {
                    let name = h["tool"].as_str().or(h["key"].as_str()).unwrap_or("");
                    let hidden = Hidden {
                        item: label(kind, name),
                        error_code: text(&h["error_code"]),
                        class: h["class"].as_str().map(str::to_string),
                    };
                    if self.hidden_seen.insert(hidden.item.clone()) {
                        if self.listed {
                            s.drift.push(Drift {
                                time: time.clone(),
                                item: hidden.item.clone(),
                                what: format!("hidden: {}", reason(&hidden)),
                            });
                        }
                        s.hidden.push(hidden);
                    }
                }
                if e["complete"] == true {
                    self.listed = true;
                }
            }
            "served_pinned" | "served_live" => {
                let kind = e["kind"].as_str().unwrap_or("tool");
                let name = e[kind_member(kind)].as_str().unwrap_or("");
                let item = label(kind, name);
                let set = if event == "served_pinned" {
                    &mut s.served_pinned
                } else {
                    &mut s.served_live
                };
                if set.insert(item.clone()) && self.listed {
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
                            e["class"].as_str().unwrap_or("changed")
                        ),
                    });
                }
            }
            "tools/call" | "prompts/get" | "resources/read" => {
                let item = match event {
                    "tools/call" => text(&e["tool"]),
                    "prompts/get" => label("prompt", e["prompt"].as_str().unwrap_or("")),
                    _ => label("resource", e["uri"].as_str().unwrap_or("")),
                };
                let decision = e["decision"].as_str().unwrap_or("unknown").to_string();
                *s.calls
                    .entry(item)
                    .or_default()
                    .entry(decision)
                    .or_default() += 1;
                if let Some(code) = e["error_code"].as_str() {
                    *s.refusals.entry(code.to_string()).or_default() += 1;
                }
            }
            "list_changed" => {
                s.list_changed += e["count"].as_u64().unwrap_or(1);
                for list in e["lists"].as_array().into_iter().flatten() {
                    s.list_changed_lists.insert(text(list));
                }
            }
            "client_closed" | "server_exited" => s.ended = text(&e["reason"]),
            "launch_refused" => {
                s.ended = format!("launch refused: {}", text(&e["message"]));
            }
            "launch_disagrees" | "server_identity" | "instructions" | "protocol_unpinned" => {
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
            crate::text::count(*n as usize, &noun)
        })
        .collect();
    format!("{} (in the last whole listing)", counts.join(", "))
}

fn join(set: &BTreeSet<String>) -> String {
    set.iter().cloned().collect::<Vec<_>>().join(", ")
}

/// The summaries as text for a terminal.
pub fn render_text(sessions: &[SessionSummary]) -> String {
    let mut out = String::new();
    if sessions.is_empty() {
        out.push_str("no guard session in the audit log\n");
    }
    for s in sessions {
        out.push_str(&format!("session {} of {}\n", s.session, s.server));
        out.push_str(&format!("  from {} to {} ({})\n", s.start, s.end, s.ended));
        out.push_str(&format!("  client profile: {}\n", profile_line(s)));
        out.push_str(&format!("  shown: {}\n", shown_line(s)));
        if !s.served_pinned.is_empty() {
            out.push_str(&format!(
                "  served as approved: {}\n",
                join(&s.served_pinned)
            ));
        }
        if !s.served_live.is_empty() {
            out.push_str(&format!("  served live: {}\n", join(&s.served_live)));
        }
        for h in &s.hidden {
            out.push_str(&format!("  hidden: {} ({})\n", h.item, reason(h)));
        }
        if s.calls.is_empty() {
            out.push_str("  calls: none\n");
        } else {
            out.push_str("  calls:\n");
            let width = s.calls.keys().map(|k| k.chars().count()).max().unwrap_or(0);
            for (item, decisions) in &s.calls {
                out.push_str(&format!("    {item:width$}  {}\n", calls_line(decisions)));
            }
        }
        if !s.refusals.is_empty() {
            let r: Vec<String> = s.refusals.iter().map(|(c, n)| format!("{c} {n}")).collect();
            out.push_str(&format!("  refusals: {}\n", r.join(", ")));
        }
        if s.list_changed > 0 {
            out.push_str(&format!(
                "  list_changed: {} ({})\n",
                crate::text::count(s.list_changed as usize, "notification"),
                join(&s.list_changed_lists)
            ));
        }
        for d in &s.drift {
            out.push_str(&format!(
                "  drift mid-session at {}: {} {}\n",
                d.time, d.item, d.what
            ));
        }
        for w in &s.warnings {
            out.push_str(&format!("  warning: {w}\n"));
        }
        out.push('\n');
    }
    // Names and messages come from the log: shown with control characters escaped.
    out.lines()
        .map(crate::text::escape_for_terminal)
        .map(|l| l + "\n")
        .collect()
}

/// The summaries as Markdown (a CI step summary, an incident report).
pub fn render_markdown(sessions: &[SessionSummary]) -> String {
    let mut out = String::from("# mcp-lock guard sessions\n\n");
    if sessions.is_empty() {
        out.push_str("No guard session in the audit log.\n");
    }
    let cell = |t: &str| t.replace('|', "\\|").replace('\n', " ");
    for s in sessions {
        out.push_str(&format!(
            "## `{}` session {}\n\n",
            cell(&s.server),
            s.session
        ));
        out.push_str(&format!(
            "- **From** {} **to** {} ({})\n",
            s.start,
            s.end,
            cell(&s.ended)
        ));
        out.push_str(&format!(
            "- **Client profile:** {}\n",
            cell(&profile_line(s))
        ));
        out.push_str(&format!("- **Shown:** {}\n", cell(&shown_line(s))));
        if !s.served_pinned.is_empty() {
            out.push_str(&format!(
                "- **Served as approved:** {}\n",
                cell(&join(&s.served_pinned))
            ));
        }
        if !s.served_live.is_empty() {
            out.push_str(&format!(
                "- **Served live:** {}\n",
                cell(&join(&s.served_live))
            ));
        }
        for h in &s.hidden {
            out.push_str(&format!(
                "- **Hidden:** {} ({})\n",
                cell(&h.item),
                cell(&reason(h))
            ));
        }
        for (code, n) in &s.refusals {
            out.push_str(&format!("- **Refused** `{code}`: {n}\n"));
        }
        if s.list_changed > 0 {
            out.push_str(&format!(
                "- **list_changed:** {} ({})\n",
                s.list_changed,
                join(&s.list_changed_lists)
            ));
        }
        for d in &s.drift {
            out.push_str(&format!(
                "- **Drift mid-session** at {}: {} {}\n",
                d.time,
                cell(&d.item),
                cell(&d.what)
            ));
        }
        for w in &s.warnings {
            out.push_str(&format!("- **Warning:** {}\n", cell(w)));
        }
        if !s.calls.is_empty() {
            out.push_str("\n| call | decisions |\n|---|---|\n");
            for (item, decisions) in &s.calls {
                out.push_str(&format!("| {} | {} |\n", cell(item), calls_line(decisions)));
            }
        }
        out.push('\n');
    }
    out
}
