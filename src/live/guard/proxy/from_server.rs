//! The server's side: answers to listings and handshakes checked (and filtered)
//! before the client sees them, list_changed making what was checked stale, and the
//! lock re-read when it changes.

use super::scan::{Batch, MAX_BATCH_MEMBERS, batch_members};
use super::*;

/// One line the server sent, routed into `out` as [`from_server`] decides (a blank one
/// skipped). The fuzz seam routes through this too.
pub(super) fn take_server_line(
    line: &[u8],
    shared: &Mutex<Shared>,
    notes: &mut Notes,
    out: &mut Outbox,
) {
    if line.iter().all(u8::is_ascii_whitespace) {
        return;
    }
    match from_server(line, shared, notes) {
        Some(Out::Raw) => out.push_forward(line),
        Some(Out::Text(text)) => out.push_forward(text.as_bytes()),
        Some(Out::Checked { text, instead }) => {
            out.push_held(text.as_bytes(), Some(instead.as_bytes()), None, Vec::new())
        }
        None => {}
    }
}

pub(super) enum Out {
    Raw,
    Text(String),
    /// A listing checked: `text` goes to the client once its audit entry is written,
    /// `instead` (an error answer) if it cannot be.
    Checked {
        text: String,
        instead: String,
    },
}

/// What the server's id and method say, and whether it carries a result or an
/// error, read without building the rest.
#[derive(serde::Deserialize)]
pub(super) struct Envelope {
    #[serde(default)]
    id: Option<Value>,
    #[serde(default)]
    method: Option<String>,
    #[serde(default)]
    result: Present,
    #[serde(default)]
    error: Present,
}

/// Whether a member is there at all, whatever its value (`null` included).
#[derive(Default)]
pub(super) struct Present(bool);

impl<'de> serde::Deserialize<'de> for Present {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        serde::de::IgnoredAny::deserialize(d)?;
        Ok(Present(true))
    }
}

pub(super) fn from_server(line: &[u8], shared: &Mutex<Shared>, notes: &mut Notes) -> Option<Out> {
    if line.first() == Some(&b'[') {
        return from_server_batch(line, shared, notes);
    }
    let envelope: Envelope = match serde_json::from_slice(line) {
        Ok(envelope) => envelope,
        Err(e) => {
            let mut state = lock(shared);
            say(
                &state,
                &format!("dropped a message from the server that is not a JSON-RPC message: {e}"),
            );
            return unreadable_answer(&mut state, line);
        }
    };
    if envelope.method.is_some() && (envelope.result.0 || envelope.error.0) {
        // Request and answer at once: a client could read it as either, and as an
        // answer it would skip the listing check.
        let mut state = lock(shared);
        say(
            &state,
            "dropped a message from the server that is both a request and an answer",
        );
        let id = envelope.id.as_ref()?;
        // If it claims to answer a request, the client still gets an answer.
        state.session.answered(&id_key(&Json::from_value(id)))?;
        return Some(Out::Text(rpc_error(
            id,
            -32603,
            "mcp-lock guard: the server's answer was also a request; nothing was forwarded",
        )));
    }
    match (&envelope.method, &envelope.id) {
        (Some(method), None) if method == "notifications/tools/list_changed" => {
            let mut state = lock(shared);
            state.session.list_changed();
            count_list_changed(&mut state, "tools");
            Some(Out::Raw)
        }
        (Some(method), None)
            if method == "notifications/prompts/list_changed"
                || method == "notifications/resources/list_changed" =>
        {
            let mut state = lock(shared);
            state.session.items_list_changed(method);
            let list = if method.contains("prompts") {
                "prompts"
            } else {
                "resources"
            };
            count_list_changed(&mut state, list);
            Some(Out::Raw)
        }
        // Other notifications and the server's own requests.
        (Some(_), _) => Some(Out::Raw),
        (None, Some(id)) => {
            let key = id_key(&Json::from_value(id));
            let mut state = lock(shared);
            match state.session.answered(&key) {
                Some(Pending::List {
                    first_page,
                    generation,
                }) => Some(check_listing(
                    &mut state, notes, line, id, first_page, generation,
                )),
                Some(Pending::ItemList {
                    kind,
                    first_page,
                    generation,
                }) => Some(check_item_listing(
                    &mut state, notes, line, id, kind, first_page, generation,
                )),
                Some(Pending::Handshake(hello)) => Some(Out::Text(check_handshake(
                    &mut state, notes, line, id, hello,
                ))),
                Some(_) => Some(Out::Raw),
                None => {
                    say(
                        &state,
                        "dropped an answer from the server to no request the client made",
                    );
                    None
                }
            }
        }
        (None, None) => Some(Out::Raw),
    }
}

/// A message from the server that could not be read as JSON-RPC: if a strict reading
/// still finds the id of a request the client is waiting on, the client gets an error
/// for it instead of waiting forever.
pub(super) fn unreadable_answer(state: &mut Shared, line: &[u8]) -> Option<Out> {
    let message = Json::parse(std::str::from_utf8(line).ok()?).ok()?;
    let id = message.get("id")?;
    state.session.answered(&id_key(id))?;
    Some(Out::Text(rpc_error(
        &id.to_value(),
        -32603,
        "mcp-lock guard: the server's answer could not be read; nothing was forwarded",
    )))
}

/// A batch from the server: each member handled on its own (as a single message is,
/// from its own bytes, without building the rest), checked listings re-written,
/// passed on as a batch. A batch of more than [`MAX_BATCH_MEMBERS`] is dropped whole.
pub(super) fn from_server_batch(
    line: &[u8],
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Option<Out> {
    let members = match std::str::from_utf8(line).map(|text| batch_members(text.as_bytes())) {
        Ok(Batch::Members(members)) => members,
        Ok(Batch::TooMany) => {
            let state = lock(shared);
            say(
                &state,
                &format!(
                    "dropped a batch from the server of more than {MAX_BATCH_MEMBERS} messages"
                ),
            );
            return None;
        }
        Ok(Batch::NotJson) | Err(_) => {
            let state = lock(shared);
            say(&state, "dropped a batch from the server that is not JSON");
            return None;
        }
    };
    let mut out = Vec::new();
    // The batch as sent if a listing in it cannot be logged.
    let mut instead = Vec::new();
    let mut held = false;
    for member in members {
        let member = &line[member];
        if member.first() == Some(&b'[') {
            let state = lock(shared);
            say(
                &state,
                "dropped a batch inside a batch from the server (not a JSON-RPC message)",
            );
            continue;
        }
        let (sent, otherwise) = match from_server(member, shared, notes) {
            Some(Out::Raw) => {
                let raw = String::from_utf8_lossy(member).into_owned();
                (raw.clone(), raw)
            }
            Some(Out::Text(t)) => (t.clone(), t),
            Some(Out::Checked { text, instead }) => {
                held = true;
                (text, instead)
            }
            None => continue,
        };
        out.push(sent);
        instead.push(otherwise);
    }
    if out.is_empty() {
        return None;
    }
    let text = format!("[{}]", out.join(","));
    Some(if held {
        Out::Checked {
            text,
            instead: format!("[{}]", instead.join(",")),
        }
    } else {
        Out::Text(text)
    })
}

/// Reads an answer the guard has to look inside, strictly; an error answer for the
/// client when it cannot be read.
pub(super) fn read_strictly(
    state: &Shared,
    line: &[u8],
    id: &Value,
    what: &str,
) -> Result<Json, String> {
    let parsed = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| Json::parse(text).map_err(|e| e.to_string()));
    parsed.map_err(|e| {
        say(
            state,
            &format!("refused a {what} answer that is not JSON: {e}"),
        );
        rpc_error(
            id,
            -32603,
            &format!(
                "mcp-lock guard: the server's {what} answer is not JSON; nothing was forwarded"
            ),
        )
    })
}

/// Checks an initialize or server/discover answer: the client's profile is picked
/// from its request, the server's identity and instructions judged.
pub(super) fn check_handshake(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    hello: Option<ClientHello>,
) -> String {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "initialize") {
        Ok(message) => message,
        Err(error) => return error,
    };
    let (text, notices) = state.session.check_handshake(&message, hello);
    for notice in notices {
        tell(state, notes, notice);
    }
    record_observation(state);
    text
}

/// Records what the client sent in the project's `.mcp-lock/handshakes.json` when it
/// is new (a handshake, a roots answer of another shape). A failure is said, never
/// fatal: the session goes on.
pub(super) fn record_observation(state: &mut Shared) {
    let Some((dir, mut seen)) = state.session.take_observation() else {
        return;
    };
    seen.at = crate::live::guard::audit::now_rfc3339();
    if let Err(e) = crate::records::observed::record(&dir, &seen) {
        let line =
            format!("the client's handshake is not recorded in .mcp-lock/handshakes.json: {e}");
        say(state, &line);
    }
}

/// A notice of the session's: its audit entry, and its line on stderr.
pub(super) fn tell(state: &Shared, notes: &mut Notes, notice: Notice) {
    let Notice {
        event,
        mut members,
        message,
    } = notice;
    if let Some(line) = &message {
        members.push(("message", json!(line)));
        say(state, line);
    }
    notes.audit(event, members);
}

/// Checks a tools/list answer and returns what the client gets instead.
pub(super) fn check_listing(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    first_page: bool,
    generation: u64,
) -> Out {
    reload_pins(state);
    let message = match read_strictly(state, line, id, "tools/list") {
        Ok(message) => message,
        Err(error) => return Out::Text(error),
    };
    let page = state.session.check_page(message, first_page, generation);
    let decision = match (page.refused, page.hidden.is_empty()) {
        (true, _) => "refused",
        (false, true) => "passed",
        (false, false) => "filtered",
    };
    let members: Members = vec![
        ("decision", json!(decision)),
        ("first_page", json!(first_page)),
        ("complete", json!(page.complete)),
        ("shown", json!(page.shown)),
        ("hidden", json!(page.hidden)),
    ];
    notes.audit("tools/list", members);
    for served in &page.served {
        let event = match served.served {
            ServedAs::Live => "served_live",
            _ => "served_pinned",
        };
        let said = format!("{event} {:?} {:?}", served.pinned_hash, served.live_hash);
        if !state.first_served("tool", &served.tool, generation, said) {
            continue;
        }
        let members: Members = vec![
            ("decision", json!(served.served)),
            ("tool", json!(served.tool)),
            ("change", json!(served.change)),
            ("pinned_hash", json!(served.pinned_hash)),
            ("live_hash", json!(served.live_hash)),
            ("class", json!(served.class)),
            ("action", json!(served.action)),
        ];
        notes.audit(event, members);
    }
    let served = page.served.iter().map(|s| (s.tool.as_str(), s.served));
    let hidden = page
        .hidden
        .iter()
        .map(|h| (h.tool.as_str(), h.error_code.is_denial()));
    say_page(state, "tool", served, hidden, page.refused);
    Out::Checked {
        text: page.message,
        instead: rpc_error(
            id,
            -32603,
            "mcp-lock guard: the check of this tools/list answer could not be written to the audit log; nothing was forwarded",
        ),
    }
}

/// Checks a prompts/list, resources/templates/list or resources/list answer and
/// returns what the client gets instead.
pub(super) fn check_item_listing(
    state: &mut Shared,
    notes: &mut Notes,
    line: &[u8],
    id: &Value,
    kind: Kind,
    first_page: bool,
    generation: u64,
) -> Out {
    reload_pins(state);
    let (method, _) = kind.list_method();
    let message = match read_strictly(state, line, id, method) {
        Ok(message) => message,
        Err(error) => return Out::Text(error),
    };
    let page = state
        .session
        .check_item_page(kind, message, first_page, generation);
    if page.unenforced {
        if state.session.first_unenforced(kind) {
            let line = format!(
                "mcp.lock does not pin the {} of {} yet: passed on unenforced until `mcp-lock update` pins them",
                kind.plural(),
                state.session.server()
            );
            say(state, &line);
            let members: Members = vec![
                ("decision", json!("not_pinned_yet")),
                ("kind", json!(kind)),
                ("message", json!(line)),
            ];
            notes.audit(method, members);
        }
        // What the tool rules left out is recorded as any other page's hidden items.
        if page.hidden.is_empty() {
            return Out::Text(page.message);
        }
    }
    let decision = match (page.refused, page.hidden.is_empty()) {
        (true, _) => "refused",
        (false, true) => "passed",
        (false, false) => "filtered",
    };
    let members: Members = vec![
        ("decision", json!(decision)),
        ("kind", json!(kind)),
        ("first_page", json!(first_page)),
        ("complete", json!(page.complete)),
        ("shown", json!(page.shown)),
        ("hidden", json!(page.hidden)),
    ];
    notes.audit(method, members);
    for served in &page.served {
        let event = match served.served {
            ServedAs::Live => "served_live",
            _ => "served_pinned",
        };
        let said = format!("{event} {:?} {:?}", served.pinned_hash, served.live_hash);
        if !state.first_served(kind.as_str(), &served.key, generation, said) {
            continue;
        }
        let mut members: Members = vec![
            ("decision", json!(served.served)),
            ("kind", json!(kind)),
            (kind.as_str(), json!(served.key)),
            ("change", json!(served.change)),
        ];
        if let Some(from) = &served.renamed_from {
            members.push(("renamed_from", json!(from)));
        }
        members.extend([
            ("pinned_hash", json!(served.pinned_hash)),
            ("live_hash", json!(served.live_hash)),
            ("class", json!(served.class)),
            ("action", json!(served.action)),
        ]);
        notes.audit(event, members);
    }
    let served = page.served.iter().map(|s| (s.key.as_str(), s.served));
    let hidden = page
        .hidden
        .iter()
        .map(|h| (h.key.as_str(), h.error_code.is_denial()));
    say_page(state, kind.noun(), served, hidden, page.refused);
    Out::Checked {
        text: page.message,
        instead: rpc_error(
            id,
            -32603,
            &format!(
                "mcp-lock guard: the check of this {method} answer could not be written to the audit log; nothing was forwarded"
            ),
        ),
    }
}

/// Re-reads the lock when it changed on disk, so `mcp-lock update` takes effect in a
/// running session; tells the client to list again when that changes what it may use.
pub(super) fn reload_pins(state: &mut Shared) {
    let Some(result) = state.pins.changed(state.session.server()) else {
        return;
    };
    match result {
        Ok(pins) => {
            let moved = state.session.set_pins_of_every_kind(pins);
            let count = state.session.pinned_count();
            let members: Members = vec![
                ("decision", json!("pins_reloaded")),
                ("pinned_tools", json!(count)),
            ];
            audit(state, "lock_changed", members);
            say(
                state,
                &format!(
                    "mcp.lock changed: now enforcing {}",
                    crate::base::text::count(count, "pinned tool")
                ),
            );
            let mut told = Vec::new();
            for kind in moved {
                let method = kind.list_changed_notification();
                if told.contains(&method) {
                    continue;
                }
                told.push(method);
                let note = json!({"jsonrpc": "2.0", "method": method});
                state
                    .client_notes
                    .extend_from_slice(note.to_string().as_bytes());
                state.client_notes.push(b'\n');
            }
        }
        Err(e) => say(state, &format!("{e}; keeping the pins read before")),
    }
}
