//! The client's side: every message read strictly, calls decided, and only what
//! passes sent on to the server.

use super::lines::Framed;
use super::scan::{Batch, MAX_BATCH_MEMBERS, MAX_STRING_ID_BYTES, batch_members, leading_id};
use super::*;

/// One line the client sent, routed into `out`: a line past the limit refused, a blank
/// one skipped, anything else decided by [`from_client`]. The fuzz seam routes through
/// this too.
pub(super) fn take_client_line(
    line: Framed<'_>,
    max: usize,
    shared: &Mutex<Shared>,
    notes: &mut Notes,
    out: &mut Outbox,
) {
    match line {
        Framed::TooLong(head) => {
            notes.refuse(&format!(
                "a message from the client larger than {max} bytes"
            ));
            let error = rpc_error(
                &id_of_too_long(head, shared),
                -32600,
                &format!("mcp-lock guard: message larger than {max} bytes; not forwarded"),
            );
            out.push_back(error.as_bytes());
        }
        Framed::Line(buf) if buf.iter().all(u8::is_ascii_whitespace) => {}
        Framed::Line(buf) => {
            let routed = from_client(buf, shared, notes);
            match (routed.forward, routed.unlogged) {
                (Some(bytes), Some(instead)) => out.push_held(
                    &bytes,
                    instead.forward.as_deref(),
                    Some(instead.answer),
                    instead.forget,
                ),
                (Some(bytes), None) => out.push_forward(&bytes),
                (None, _) => {}
            }
            if let Some(answer) = routed.answer {
                out.push_back(answer.as_bytes());
            }
        }
    }
}

/// The id a request past the limit is answered with: the one its start gives
/// ([`leading_id`]), a number or a short string no other request waiting uses; null
/// otherwise.
fn id_of_too_long(head: &[u8], shared: &Mutex<Shared>) -> Value {
    let id = leading_id(head)
        .filter(|raw| raw.len() <= MAX_STRING_ID_BYTES + 2)
        .and_then(|raw| std::str::from_utf8(raw).ok())
        .and_then(|raw| Json::parse(raw).ok())
        .filter(|id| matches!(id, Json::Number(_) | Json::String(_)));
    match id {
        Some(id) if !lock(shared).session.is_pending(&id_key(&id)) => id.to_value(),
        _ => Value::Null,
    }
}

pub(super) fn rpc_error(id: &Value, code: i64, message: &str) -> String {
    json!({"jsonrpc": "2.0", "id": id, "error": {"code": code, "message": message}}).to_string()
}

/// What one line from the client becomes.
#[derive(Default)]
pub(super) struct Routed<'a> {
    /// For the server: the line itself, or a batch rewritten.
    forward: Option<std::borrow::Cow<'a, [u8]>>,
    /// For the client.
    answer: Option<String>,
    /// When `forward` holds calls: what stands in for it if their audit entries
    /// cannot be written.
    unlogged: Option<Unlogged>,
}

impl Routed<'_> {
    pub(super) fn answer(answer: Option<String>) -> Self {
        Routed {
            answer,
            ..Routed::default()
        }
    }
}

/// What to send the server and what to answer the client, for one line from the
/// client.
pub(super) fn from_client<'a>(
    line: &'a [u8],
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Routed<'a> {
    if line.iter().find(|b| !b.is_ascii_whitespace()) == Some(&b'[')
        && batch_members(line) == Batch::TooMany
    {
        // Refused before it is read: routing five million members, even `{}`, would
        // take hundreds of MB.
        notes.refuse(&format!(
            "a batch from the client of more than {MAX_BATCH_MEMBERS} messages"
        ));
        return Routed::answer(Some(rpc_error(
            &Value::Null,
            -32600,
            &format!(
                "mcp-lock guard: a batch of more than {MAX_BATCH_MEMBERS} messages; not forwarded"
            ),
        )));
    }
    let parsed = std::str::from_utf8(line)
        .map_err(|e| e.to_string())
        .and_then(|text| Json::parse(text).map_err(|e| e.to_string()));
    let message = match parsed {
        Ok(message) => message,
        Err(e) => {
            notes.refuse(&format!("a message from the client that is not JSON: {e}"));
            return Routed::answer(Some(rpc_error(
                &Value::Null,
                -32700,
                &format!("mcp-lock guard: not JSON ({e}); not forwarded"),
            )));
        }
    };
    if message.has_repeated_member() {
        let id = message.get("id").map(Json::to_value).unwrap_or(Value::Null);
        notes.refuse("a message from the client that names a member twice");
        let answer = (!id.is_null()).then(|| {
            rpc_error(&id, -32600, "mcp-lock guard: a member name is repeated, so readers disagree on what the message says; not forwarded")
        });
        return Routed::answer(answer);
    }
    if matches!(&message, Json::Array(items) if items.is_empty()) {
        // JSON-RPC 2.0: an empty batch is answered with one error, not a batch.
        notes.refuse("an empty batch from the client");
        return Routed::answer(Some(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: an empty batch is not a valid request; not forwarded",
        )));
    }
    // The same text read the way a server reads it, integers exact: what arguments
    // are checked against, so the value checked is the value sent. Integers beyond 64
    // bits cannot be read exactly here, and are refused in calls.
    let is_call = |m: &Json| m.get("method").and_then(Json::as_text) == Some("tools/call");
    let has_call = match &message {
        Json::Array(items) => items.iter().any(is_call),
        single => is_call(single),
    };
    // A single call whose numbers and strings the strict reading already gives
    // exactly (the common case) is not read again.
    let strict_is_exact =
        has_call && !matches!(message, Json::Array(_)) && strict_reads_exactly(line);
    let exact: Option<Value> = if has_call && !strict_is_exact {
        read_exactly(line)
    } else {
        None
    };
    let batch = |items: Vec<String>| (!items.is_empty()).then(|| format!("[{}]", items.join(",")));
    match &message {
        // A batch (2025-03-26): each request on its own, passed on as a batch.
        Json::Array(items) => {
            let mut forward = Vec::new();
            // What goes on if the calls' entries cannot be written: the rest.
            let mut plain = Vec::new();
            let mut answers = Vec::new();
            let mut refusals = Vec::new();
            let mut forget = Vec::new();
            for (i, item) in items.iter().enumerate() {
                let exact = exact.as_ref().and_then(|v| v.get(i));
                let text = || match exact {
                    Some(v) => v.to_string(),
                    None => item.canonical().unwrap_or_default(),
                };
                match decide(item, exact, false, shared, notes) {
                    Verdict::Forward => {
                        forward.push(text());
                        plain.push(text());
                    }
                    Verdict::ForwardCall { key, unsent } => {
                        forward.push(text());
                        refusals.push(unsent);
                        forget.push(key);
                    }
                    Verdict::Answer(answer) => answers.push(answer),
                    Verdict::Drop => {}
                }
            }
            let unlogged = (!forget.is_empty()).then(|| Unlogged {
                forward: batch(plain).map(String::into_bytes),
                answer: StandIn::Batch(refusals),
                forget,
            });
            Routed {
                forward: batch(forward).map(|text| text.into_bytes().into()),
                answer: batch(answers),
                unlogged,
            }
        }
        single => match decide(single, exact.as_ref(), strict_is_exact, shared, notes) {
            Verdict::Forward => Routed {
                forward: Some(line.into()),
                ..Routed::default()
            },
            Verdict::ForwardCall { key, unsent } => Routed {
                forward: Some(line.into()),
                answer: None,
                unlogged: Some(Unlogged {
                    forward: None,
                    answer: StandIn::Single(unsent),
                    forget: vec![key],
                }),
            },
            Verdict::Answer(answer) => Routed::answer(Some(answer)),
            Verdict::Drop => Routed::default(),
        },
    }
}

pub(super) enum Verdict {
    Forward,
    /// A call that goes on once its audit entry is written; if it cannot be,
    /// `refusal` answers it and the request `key` is forgotten.
    ForwardCall {
        key: String,
        /// What answers it instead if its audit entry cannot be written.
        unsent: Unsent,
    },
    Answer(String),
    Drop,
}

/// A forwarded call, as far as its refusal needs it should its audit entry not be
/// written: that refusal is built only then, not for every call.
pub(super) struct Unsent {
    id: Value,
    tool: String,
    pinned_hash: Option<String>,
    live_hash: Option<String>,
    modern: bool,
}

impl Unsent {
    pub(super) fn answer(&self) -> Value {
        let refusal = Refusal {
            error_code: ErrorCode::AuditLogUnwritable,
            tool: self.tool.clone(),
            required_action: RequiredAction::RetryLater,
            side_effect_started: false,
            pinned_hash: self.pinned_hash.clone(),
            live_hash: self.live_hash.clone(),
            violations: Vec::new(),
            missing_profile: None,
            denied_by: None,
        };
        json!({"jsonrpc": "2.0", "id": self.id, "result": refusal.to_result(self.modern)})
    }
}

/// What is answered to the client in place of held calls.
pub(super) enum StandIn {
    Single(Unsent),
    Batch(Vec<Unsent>),
}

impl StandIn {
    pub(super) fn text(&self) -> String {
        match self {
            StandIn::Single(call) => call.answer().to_string(),
            StandIn::Batch(calls) => {
                Value::Array(calls.iter().map(Unsent::answer).collect()).to_string()
            }
        }
    }
}

/// One message from the client: requests are remembered so their answers can be
/// recognised, calls are decided.
/// `exact` is the message as [`read_exactly`] read it, unless `strict_is_exact`: then
/// the strict reading of `message` is that reading.
pub(super) fn decide(
    message: &Json,
    exact: Option<&Value>,
    strict_is_exact: bool,
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Verdict {
    if !message.is_object() {
        // Not a message at all (a nested batch, a bare value): a lenient server could
        // still find a call in it.
        notes.refuse("a message from the client that is not a JSON-RPC object");
        return Verdict::Answer(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: not a JSON-RPC message; not forwarded",
        ));
    }
    let method = message.get("method").and_then(Json::as_text);
    let (Some(method), Some(id)) = (method, message.get("id")) else {
        if method == Some("tools/call") {
            // A call sent as a notification: some servers run it anyway, unchecked.
            let members: Members = vec![
                ("decision", json!("refused")),
                ("reason", json!("tools/call without an id")),
            ];
            notes.audit("tools/call", members);
            notes.say("dropped a tools/call without an id (it cannot be answered)");
            return Verdict::Drop;
        }
        // A notification, or the client answering a request of the server's: a
        // roots/list answer's shape is recorded with the client's handshake.
        if method.is_none()
            && let Some(result) = message.get("result")
            && let Some(shape) = crate::records::observed::RootsShape::of(&result.to_value())
        {
            let mut state = lock(shared);
            state.session.saw_roots(shape);
            super::from_server::record_observation(&mut state);
        }
        return Verdict::Forward;
    };
    let key = id_key(id);
    let params = message.get("params");
    let mut state = lock(shared);
    if state.session.is_pending(&key) {
        // Two requests with one id: the server's answer could be taken for either,
        // a listing for a call's result or the reverse.
        drop(state);
        notes.refuse("a request whose id is already in use");
        // Answered with a null id: the id itself still belongs to the first request.
        return Verdict::Answer(rpc_error(
            &Value::Null,
            -32600,
            "mcp-lock guard: a request with this id is still waiting for its answer; not forwarded",
        ));
    }
    if state.session.waiting() >= MAX_PENDING {
        // Each request waiting is remembered until it is answered: a client that never
        // reads its answers, or a server that never sends them, must not grow that
        // without end.
        drop(state);
        notes.refuse(&format!(
            "a request while {MAX_PENDING} requests wait for answers"
        ));
        return Verdict::Answer(rpc_error(
            &id.to_value(),
            -32603,
            &format!(
                "mcp-lock guard: {MAX_PENDING} requests are already waiting for the server's answers; not forwarded, retry once some are answered"
            ),
        ));
    }
    let pending = match method {
        "tools/list" => Pending::List {
            first_page: matches!(
                params.and_then(|p| p.get("cursor")),
                None | Some(Json::Null)
            ),
            generation: state.session.generation(),
        },
        "initialize" | "server/discover" => {
            Pending::Handshake(ClientHello::from_request(method, params))
        }
        "prompts/list" | "resources/templates/list" | "resources/list" => {
            let kind = match method {
                "prompts/list" => Kind::Prompt,
                "resources/templates/list" => Kind::ResourceTemplate,
                _ => Kind::Resource,
            };
            Pending::ItemList {
                kind,
                first_page: matches!(
                    params.and_then(|p| p.get("cursor")),
                    None | Some(Json::Null)
                ),
                generation: state.session.item_generation(kind),
            }
        }
        "prompts/get" | "resources/read" => {
            reload_pins(&mut state);
            let member = if method == "prompts/get" {
                "name"
            } else {
                "uri"
            };
            let Some(item) = params.and_then(|p| p.get(member)).and_then(Json::as_str) else {
                drop(state);
                notes.refuse(&format!("a {method} without a {member}"));
                return Verdict::Answer(rpc_error(
                    &id.to_value(),
                    -32602,
                    &format!("mcp-lock guard: {method} without a {member}; not forwarded"),
                ));
            };
            let decision = if method == "prompts/get" {
                state.session.decide_prompt(&item)
            } else {
                state.session.decide_read(&item)
            };
            if matches!(decision, ItemDecision::Forward { .. }) {
                state.session.expect(key, Pending::Other);
            }
            drop(state);
            return decide_item_use(method, id, member, &item, decision, notes);
        }
        "tools/call" => {
            reload_pins(&mut state);
            let Some(tool) = params.and_then(|p| p.get("name")).and_then(Json::as_str) else {
                drop(state);
                notes.refuse("a tools/call without a tool name");
                return Verdict::Answer(rpc_error(
                    &id.to_value(),
                    -32602,
                    "mcp-lock guard: tools/call without a tool name; not forwarded",
                ));
            };
            let contract = state.session.contract(&tool);
            // The arguments are checked and the entry written outside the lock, so
            // answers from the server are not held up meanwhile.
            drop(state);
            // The arguments as the server will read them, or why they cannot be
            // checked: the same decision check-call makes.
            let empty = Json::Object(Vec::new());
            let strict = params.and_then(|p| p.get("arguments")).unwrap_or(&empty);
            let read = if strict_is_exact {
                Some(strict.to_value())
            } else {
                exact.map(|m| {
                    m["params"]
                        .get("arguments")
                        .cloned()
                        .unwrap_or_else(|| json!({}))
                })
            };
            let call = Call {
                id,
                key,
                tool,
                arguments: checkable_arguments(strict, read),
                raw: strict,
                modern: params
                    .and_then(|p| p.get("_meta"))
                    .and_then(|m| m.get("io.modelcontextprotocol/protocolVersion"))
                    .is_some(),
            };
            return decide_call(call, contract, shared, notes);
        }
        _ => Pending::Other,
    };
    state.session.expect(key, pending);
    Verdict::Forward
}

/// A `prompts/get` or `resources/read` decided: its audit entry, and the refusal
/// the client gets when it is not forwarded.
pub(super) fn decide_item_use(
    method: &str,
    id: &Json,
    member: &str,
    key: &str,
    decision: ItemDecision,
    notes: &mut Notes,
) -> Verdict {
    let subject = if member == "name" { "prompt" } else { "uri" };
    let mut members: Members = vec![("request_id", id.to_value()), (subject, json!(key))];
    match decision {
        ItemDecision::Forward {
            kind,
            key: item,
            pinned_hash,
            live_hash,
            served,
            unenforced,
        } => {
            members.push(("decision", json!("forwarded")));
            if unenforced {
                members.push(("reason", json!(format!("{} not pinned yet", kind.plural()))));
            } else {
                if subject == "uri" {
                    members.push(("kind", json!(kind)));
                    members.push((kind.as_str(), json!(item)));
                }
                members.push(("pinned_hash", json!(pinned_hash)));
                members.push(("live_hash", json!(live_hash)));
                if item.is_some() && served != ServedAs::Approved {
                    members.push(("served", json!(served)));
                }
            }
            notes.audit(method, members);
            Verdict::Forward
        }
        ItemDecision::Refuse(refusal) => {
            members.push(("decision", json!(refusal_decision(refusal.error_code))));
            members.push(("error_code", json!(refusal.error_code)));
            if let Some(denial) = &refusal.denied_by {
                members.push(("rule", json!(denial.rule)));
                members.push(("rule_source", json!(denial.source)));
            }
            if subject == "uri" {
                members.push(("kind", json!(refusal.kind)));
                members.push((refusal.kind.as_str(), json!(refusal.key)));
            }
            members.push(("pinned_hash", json!(refusal.pinned_hash)));
            members.push(("live_hash", json!(refusal.live_hash)));
            notes.audit(method, members);
            notes.say(&format!(
                "refused {method} {key}: {}",
                refusal.error_code.as_str()
            ));
            Verdict::Answer(refusal.to_error(&id.to_value()).to_string())
        }
    }
}

/// The audit entry's `decision` for a refusal: `denied` when the tool rules refused
/// it, `refused` otherwise.
fn refusal_decision(code: ErrorCode) -> &'static str {
    if code.is_denial() {
        "denied"
    } else {
        "refused"
    }
}

/// One `tools/call` as the client sent it.
pub(super) struct Call<'a> {
    id: &'a Json,
    key: String,
    tool: String,
    /// Read with integers exact, or why they cannot be checked.
    arguments: Result<Value, Violation>,
    /// As read strictly, for the audit entry of arguments that cannot be checked.
    raw: &'a Json,
    /// The request carried the 2026-07-28 `_meta` protocol version.
    modern: bool,
}

/// A call whose contract was looked up: its arguments checked, the decision logged.
pub(super) fn decide_call(
    call: Call<'_>,
    contract: Result<Contract, Refusal>,
    shared: &Mutex<Shared>,
    notes: &mut Notes,
) -> Verdict {
    let Call {
        id,
        key,
        tool,
        arguments,
        raw,
        modern,
    } = call;
    let decision = match (contract, &arguments) {
        (Ok(contract), Err(violation)) => Decision::Refuse(Refusal {
            error_code: ErrorCode::InvalidArguments,
            tool: tool.clone(),
            required_action: RequiredAction::FixArguments,
            side_effect_started: false,
            pinned_hash: contract.pinned_hash,
            live_hash: contract.live_hash,
            violations: vec![violation.clone()],
            missing_profile: None,
            denied_by: None,
        }),
        (Ok(contract), Ok(arguments)) => contract.judge(arguments),
        (Err(refusal), _) => Decision::Refuse(refusal),
    };
    let arguments = arguments.unwrap_or_else(|_| raw.to_value());
    let mut members: Members = vec![
        ("request_id", id.to_value()),
        ("tool", json!(tool)),
        ("arguments", arguments),
    ];
    match decision {
        Decision::Forward {
            pinned_hash,
            live_hash,
            served,
            unvalidated,
        } => {
            members.push(("decision", json!("forwarded")));
            members.push(("pinned_hash", json!(pinned_hash)));
            members.push(("live_hash", json!(live_hash)));
            if served != ServedAs::Approved {
                members.push(("served", json!(served)));
            }
            if let Some(reason) = &unvalidated {
                members.push(("arguments_unchecked", json!(reason)));
                notes.say(&format!(
                    "forwarded {tool} without checking its arguments: its pinned input schema cannot be used ({reason})"
                ));
            }
            notes.audit("tools/call", members);
            // The refusal that stands in for it is built only if the entry fails.
            let unsent = Unsent {
                id: id.to_value(),
                tool: tool.clone(),
                pinned_hash,
                live_hash,
                modern,
            };
            lock(shared)
                .session
                .expect(key.clone(), Pending::Call { tool });
            Verdict::ForwardCall { key, unsent }
        }
        Decision::Refuse(refusal) => {
            members.push(("decision", json!(refusal_decision(refusal.error_code))));
            members.push(("error_code", json!(refusal.error_code)));
            if let Some(denial) = &refusal.denied_by {
                members.push(("rule", json!(denial.rule)));
                members.push(("rule_source", json!(denial.source)));
            }
            members.push(("pinned_hash", json!(refusal.pinned_hash)));
            members.push(("live_hash", json!(refusal.live_hash)));
            if !refusal.violations.is_empty() {
                members.push(("violations", json!(refusal.violations)));
            }
            if let Some(missing) = &refusal.missing_profile {
                members.push(("missing_profile", json!(missing)));
            }
            notes.audit("tools/call", members);
            notes.say(&format!("refused {tool}: {}", refusal.error_code.as_str()));
            let answer =
                json!({"jsonrpc": "2.0", "id": id.to_value(), "result": refusal.to_result(modern)});
            Verdict::Answer(answer.to_string())
        }
    }
}
