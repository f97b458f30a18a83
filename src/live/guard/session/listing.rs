//! The answers the guard looks into: the handshake (the client's profile, the
//! server's identity and instructions) and each `tools/list` page.

use super::*;

impl Session {
    /// Checks the answer to `initialize` or `server/discover`, given the request's
    /// hello: picks the client's profile, and judges what the server says about itself
    /// as verify does. `instructions` no profile approved are semantic: removed when
    /// the policy fails that, else passed on. A server name other than the pinned one
    /// is authority: when the policy fails that, every tool is hidden and every call
    /// refused. Returns the message to send and what to say.
    pub fn check_handshake(
        &mut self,
        message: &Json,
        hello: Option<ClientHello>,
    ) -> (String, Vec<Notice>) {
        let mut notices = Vec::new();
        let Some(result) = message.get("result").filter(|r| r.is_object()) else {
            // An error answer: nothing was agreed.
            return (self.canonical_or_error(message), notices);
        };
        let modern = hello.as_ref().is_some_and(|h| h.modern);
        let version = if modern {
            hello.as_ref().and_then(|h| h.protocol_version.clone())
        } else {
            result.get("protocolVersion").and_then(Json::as_str)
        };
        if let Some(hello) = hello {
            notices.extend(self.meet(hello, version.clone()));
        }
        // Profile drift in the era already said it, with the pinned version.
        let era_drift = self.drift.as_ref().is_some_and(|d| d.era_changed);
        if let (Some(version), Some(pins)) = (version, &self.pins)
            && !era_drift
            && let Some(line) = unpinned_version(&self.server, pins, &version)
            && self.said.insert(line.clone())
        {
            notices.push(Notice {
                event: "protocol_unpinned",
                members: vec![
                    ("decision", json!("judged_anyway")),
                    ("protocol_version", json!(version)),
                ],
                message: Some(line),
            });
        }
        let info = result
            .get("_meta")
            .and_then(|m| m.get("io.modelcontextprotocol/serverInfo"))
            .or_else(|| result.get("serverInfo"));
        self.server_name = Some(info.and_then(|i| i.get("name")).and_then(Json::as_str));
        self.update_refuse_all();
        if self.identity_changed() {
            let refused = self.identity_refused();
            let pinned = self
                .view
                .as_ref()
                .and_then(|v| v.server_info.get("name"))
                .and_then(Json::as_str);
            let live = self.server_name.clone().flatten();
            notices.push(Notice {
                event: "server_identity",
                members: vec![
                    (
                        "decision",
                        json!(if refused { "every_tool_refused" } else { "served" }),
                    ),
                    ("pinned", json!(pinned)),
                    ("live", json!(live)),
                    ("class", json!(Class::Authority)),
                    (
                        "action",
                        json!(self.policy.action(Rule::Class(Class::Authority))),
                    ),
                ],
                message: Some(format!(
                    "the server calls itself {} but {} was pinned as {}; {}",
                    quoted(live.as_deref()),
                    self.server,
                    quoted(pinned.as_deref()),
                    if refused {
                        "every tool is hidden and every call refused (SERVER_IDENTITY_CHANGED) until `mcp-lock update` approves it"
                    } else {
                        "the policy does not fail an identity change, so its tools are judged as usual"
                    }
                )),
            });
            self.judge_again();
        }
        let (text, notice) = self.check_instructions(message, result);
        notices.extend(notice);
        (text, notices)
    }

    /// The handshake answer's `instructions`, judged as verify judges them.
    pub(super) fn check_instructions(
        &self,
        message: &Json,
        result: &Json,
    ) -> (String, Option<Notice>) {
        let live = match result.get("instructions") {
            None | Some(Json::Null) => return (self.canonical_or_error(message), None),
            Some(Json::String(text)) => Some(instructions_hash(&text.to_string_lossy())),
            // Not text: cannot be judged, never passed on.
            Some(_) => None,
        };
        let approved = live.as_deref().is_some_and(|h| {
            self.pins
                .as_ref()
                .is_some_and(|p| p.approves_instructions(Some(h)))
        });
        if approved {
            return (self.canonical_or_error(message), None);
        }
        let action = if live.is_some() && self.pins.is_some() {
            self.policy.action(Rule::Class(Class::Semantic))
        } else {
            Action::Fail
        };
        let pinned = self.view.as_ref().and_then(|v| v.instructions_hash.clone());
        let members = |decision: &str| {
            vec![
                ("decision", json!(decision)),
                ("pinned_hash", json!(pinned)),
                ("live_hash", json!(live)),
                ("class", json!(Class::Semantic)),
                ("action", json!(action)),
            ]
        };
        if action != Action::Fail {
            let notice = Notice {
                event: "instructions",
                members: members("instructions_served"),
                message: Some(format!(
                    "the server's instructions differ from every approved in mcp.lock; the policy does not fail that ({}), so they were passed on",
                    action.as_str()
                )),
            };
            return (self.canonical_or_error(message), Some(notice));
        }
        let mut message = message.clone();
        if let Json::Object(members) = &mut message {
            for (key, value) in members.iter_mut() {
                if key.eq_str("result")
                    && let Json::Object(result) = value
                {
                    result.retain(|(k, _)| !k.eq_str("instructions"));
                }
            }
        }
        let notice = Notice {
            event: "instructions",
            members: members("instructions_removed"),
            message: Some(
                "the server's instructions differ from mcp.lock; they were removed from what the client sees".into(),
            ),
        };
        (self.canonical_or_error(&message), Some(notice))
    }

    /// The canonical text of an answer, or an error in its place when it has none.
    pub(super) fn canonical_or_error(&self, message: &Json) -> String {
        match message.canonical() {
            Ok(text) => text,
            Err(e) => {
                let id = message.get("id").map(Json::to_value).unwrap_or(Value::Null);
                json!({"jsonrpc": "2.0", "id": id, "error": {"code": -32603,
                    "message": format!("mcp-lock guard: the server's answer is ambiguous ({e}); nothing was forwarded")}})
                .to_string()
            }
        }
    }

    /// Checks one tools/list answer the client is about to receive and returns what
    /// to send instead. `message` is the whole JSON-RPC response.
    /// The page is taken by value: its definitions move into the check and back into
    /// the answer, never copied (a listing can be megabytes).
    pub fn check_page(
        &mut self,
        mut message: Json,
        first_page: bool,
        generation: u64,
    ) -> CheckedPage {
        let id = message.get("id").cloned().unwrap_or(Json::Null);
        let Some(mut result) = message.take("result") else {
            // An error answer: nothing listed, nothing to check.
            return self.pass(&message, Vec::new(), Vec::new(), 0, false);
        };
        let tools = match result.take("tools") {
            Some(Json::Array(tools)) if result.is_object() => tools,
            _ => {
                return self.refuse_page(
                    &id,
                    "the server's tools/list answer has no tools array",
                    Vec::new(),
                );
            }
        };
        let mut partial = match self.partial.take() {
            Some(partial) if !first_page => partial,
            _ => Listing {
                generation: first_page.then_some(generation),
                tools: HashMap::new(),
            },
        };
        let hashed: Vec<HashedTool> = tools.into_iter().map(HashedTool::new).collect();
        let mut names_here: HashMap<String, usize> = HashMap::new();
        for tool in &hashed {
            if let Some(name) = &tool.name {
                *names_here.entry(name.clone()).or_default() += 1;
            }
        }
        let mut keep = Vec::new();
        let mut hidden = Vec::new();
        let mut served = Vec::new();
        for tool in hashed {
            let Some(name) = tool.name.clone() else {
                hidden.push(Hidden {
                    tool: String::new(),
                    error_code: ErrorCode::UnpinnedTool,
                    pinned_hash: None,
                    live_hash: None,
                    class: None,
                    action: None,
                    missing_profile: None,
                    denied_by: None,
                });
                continue;
            };
            let repeated = names_here[&name] > 1 || partial.tools.contains_key(&name);
            let problem =
                repeated.then(|| format!("the server lists more than one tool named {name:?}"));
            let (decision, change) = self.judge(&name, &tool, problem.clone());
            let live_hash = tool.hash.as_ref().ok().cloned();
            let seen_hash = live_hash.clone().filter(|_| !repeated);
            let pinned_hash = change.as_ref().and_then(|c| c.pinned_hash.clone());
            let (class, action) = (
                change.as_ref().and_then(|c| c.class),
                change.as_ref().map(|c| c.action),
            );
            let mut keep_live = None;
            match &decision {
                Served::Approved => keep.push(Arc::unwrap_or_clone(tool.definition)),
                Served::Pinned { pinned_hash } => {
                    let approved = self
                        .approved_definition(&name, pinned_hash)
                        .expect("a pinned change has its pin");
                    keep.push((*approved).clone());
                    keep_live = Some(tool.definition);
                }
                Served::Live => {
                    keep.push((*tool.definition).clone());
                    keep_live = Some(tool.definition);
                }
                Served::Hidden(_) | Served::Denied(_) => {
                    let (code, denied_by) = decision.left_out(Kind::Tool);
                    hidden.push(Hidden {
                        tool: name.clone(),
                        error_code: code,
                        denied_by,
                        pinned_hash: pinned_hash.clone().or_else(|| {
                            self.view
                                .as_ref()
                                .and_then(|v| v.tools.get(&name))
                                .map(|p| p.hash.clone())
                        }),
                        live_hash: live_hash.clone(),
                        class,
                        action,
                        missing_profile: if code == ErrorCode::UnpinnedTool {
                            self.missing.clone()
                        } else {
                            None
                        },
                    });
                    keep_live = Some(tool.definition);
                }
            }
            if let (Some(change), Served::Pinned { .. } | Served::Live) = (&change, &decision) {
                served.push(ServedChange {
                    tool: name.clone(),
                    served: if matches!(decision, Served::Live) {
                        ServedAs::Live
                    } else {
                        ServedAs::Pinned
                    },
                    change: change.change,
                    pinned_hash: change.pinned_hash.clone(),
                    live_hash: change.live_hash.clone(),
                    class: change.class,
                    action: change.action,
                });
            }
            partial.tools.insert(
                name,
                Seen {
                    hash: seen_hash,
                    problem,
                    live: keep_live,
                    served: decision,
                },
            );
        }
        let complete = match result.get("nextCursor") {
            None | Some(Json::Null) => true,
            Some(_) => false,
        };
        if complete {
            self.complete = Some(partial);
        } else {
            self.partial = Some(partial);
        }
        // A tool the rules deny is the team's choice, not drift: it is left out, and
        // never fails the listing.
        let drifted = hidden.iter().any(|h| !h.error_code.is_denial());
        if drifted && self.on_drift == OnDrift::Fail {
            let mut page = self.refuse_page(
                &id,
                "the server's tool listing does not match mcp.lock",
                hidden,
            );
            page.complete = complete;
            return page;
        }
        let shown = keep.len();
        set_member(&mut result, "tools", Json::Array(keep));
        set_member(&mut message, "result", result);
        self.pass(&message, hidden, served, shown, complete)
    }

    pub(super) fn pass(
        &self,
        message: &Json,
        hidden: Vec<Hidden>,
        served: Vec<ServedChange>,
        shown: usize,
        complete: bool,
    ) -> CheckedPage {
        match message.canonical() {
            Ok(text) => CheckedPage {
                message: text,
                hidden,
                served,
                shown,
                refused: false,
                complete,
            },
            // A repeated member outside any tool: readers disagree on what it says.
            Err(e) => self.refuse_page(
                message.get("id").unwrap_or(&Json::Null),
                &format!("the server's tools/list answer is ambiguous ({e})"),
                hidden,
            ),
        }
    }

    pub(super) fn refuse_page(&self, id: &Json, why: &str, hidden: Vec<Hidden>) -> CheckedPage {
        let id = id.to_value();
        let count = hidden.len();
        let message = if count > 0 {
            format!(
                "mcp-lock guard: {why} ({count} tool{} changed or not pinned); nothing was forwarded. Run `mcp-lock verify {}` to see the changes",
                if count == 1 { "" } else { "s" },
                self.server
            )
        } else {
            format!("mcp-lock guard: {why}; nothing was forwarded")
        };
        let error = json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32603,
                "message": message,
                "data": {
                    "error_code": if count > 0 { ErrorCode::StaleToolSchema } else { ErrorCode::ListingNotVerified },
                    // Names come from the server and nobody approved them: escaped, cut.
                    "tools": hidden.iter().map(|h| Hidden { tool: short_name(&h.tool), ..h.clone() }).collect::<Vec<_>>(),
                },
            },
        });
        CheckedPage {
            message: error.to_string(),
            hidden,
            served: Vec::new(),
            shown: 0,
            refused: true,
            complete: false,
        }
    }
}
