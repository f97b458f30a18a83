//! Uses of what a listing showed: `prompts/get` of a prompt and `resources/read` of a
//! URI, decided from the newest checked listing, and URIs matched against templates.

use super::*;

impl Session {
    /// What the newest checked listing of this kind says about an item: None when no
    /// listing of the current generation covers it, Some(None) when a complete one
    /// does not list it. (A hidden item stays hidden whatever the generation: the
    /// server showed that drift.)
    pub(super) fn latest_item(&self, kind: Kind, key: &str) -> Option<Option<&Seen>> {
        let state = self.items.get(&kind)?;
        let current = Some(state.generation);
        if let Some(partial) = &state.partial
            && let Some(seen) = partial.items.get(key)
            && (partial.generation == current || !seen.usable())
        {
            return Some(Some(seen));
        }
        let complete = state.complete.as_ref()?;
        match complete.items.get(key) {
            Some(seen) if complete.generation == current || !seen.usable() => Some(Some(seen)),
            None if complete.generation == current => Some(None),
            _ => None,
        }
    }

    /// The pinned hash an item not approved was judged against, from the listing
    /// that showed it.
    pub(super) fn judged_pin(&self, kind: Kind, key: &str) -> Option<String> {
        let state = self.items.get(&kind)?;
        [&state.partial, &state.complete]
            .into_iter()
            .flatten()
            .find_map(|l| l.pinned.get(key).cloned())
    }

    /// Decides a `prompts/get` for `name`.
    pub fn decide_prompt(&self, name: &str) -> ItemDecision {
        self.decide_item(Kind::Prompt, name)
    }

    /// Decides a use of the item of this kind keyed `key`.
    pub(super) fn decide_item(&self, kind: Kind, key: &str) -> ItemDecision {
        let view_pin = self
            .view
            .as_ref()
            .and_then(|v| v.items(kind))
            .and_then(|items| items.get(key))
            .map(|p| p.hash.clone());
        let refuse = |error_code, required_action, pinned_hash, live_hash| {
            ItemDecision::Refuse(ItemRefusal {
                kind,
                error_code,
                key: key.to_string(),
                uri: None,
                required_action,
                pinned_hash,
                live_hash,
                denied_by: None,
            })
        };
        if self.identity_refused() {
            return refuse(
                ErrorCode::ServerIdentityChanged,
                RequiredAction::ApproveUpdate,
                view_pin,
                None,
            );
        }
        let Some(pins) = &self.pins else {
            return refuse(
                unpinned_code(kind),
                RequiredAction::ApproveUpdate,
                None,
                None,
            );
        };
        if !self.kind_pinned(kind) {
            if let Some(denial) = self.unenforced_denial(kind, key) {
                return ItemDecision::Refuse(ItemRefusal {
                    kind,
                    error_code: super::super::denied_code(kind),
                    key: key.to_string(),
                    uri: None,
                    required_action: RequiredAction::ChangeRules,
                    pinned_hash: None,
                    live_hash: None,
                    denied_by: Some(denial),
                });
            }
            return ItemDecision::Forward {
                kind,
                key: Some(key.to_string()),
                pinned_hash: None,
                live_hash: None,
                served: ServedAs::Live,
                unenforced: true,
            };
        }
        let pinned_anywhere = pins
            .profiles
            .values()
            .any(|p| p.items(kind).is_some_and(|i| i.contains_key(key)));
        let forward = |pinned_hash, live_hash, served| ItemDecision::Forward {
            kind,
            key: Some(key.to_string()),
            pinned_hash,
            live_hash,
            served,
            unenforced: false,
        };
        match self.latest_item(kind, key) {
            None => {
                // The rules need no listing to deny what the client's view pins.
                let pin = self
                    .view
                    .as_ref()
                    .and_then(|v| v.items(kind))
                    .and_then(|items| items.get(key));
                if let Some(pin) = pin
                    && let Some(denial) = self.denial(kind, key, Some(&pin.definition))
                {
                    return ItemDecision::Refuse(ItemRefusal {
                        kind,
                        error_code: super::super::denied_code(kind),
                        key: key.to_string(),
                        uri: None,
                        required_action: RequiredAction::ChangeRules,
                        pinned_hash: Some(pin.hash.clone()),
                        live_hash: None,
                        denied_by: Some(denial),
                    });
                }
                let could_serve =
                    pinned_anywhere || self.policy.action(Rule::Added(kind)) != Action::Fail;
                if could_serve {
                    refuse(unverified_code(kind), refresh(kind), view_pin, None)
                } else {
                    refuse(
                        unpinned_code(kind),
                        RequiredAction::ApproveUpdate,
                        None,
                        None,
                    )
                }
            }
            Some(None) => self.item_unlisted(kind, key, view_pin, pinned_anywhere),
            Some(Some(seen)) => {
                let live = seen.hash.clone();
                match &seen.served {
                    Served::Denied(denial) => ItemDecision::Refuse(ItemRefusal {
                        kind,
                        error_code: super::super::denied_code(kind),
                        key: key.to_string(),
                        uri: None,
                        required_action: RequiredAction::ChangeRules,
                        pinned_hash: self.judged_pin(kind, key).or(view_pin),
                        live_hash: live,
                        denied_by: Some(denial.clone()),
                    }),
                    Served::Hidden(code) => refuse(
                        *code,
                        RequiredAction::ApproveUpdate,
                        self.judged_pin(kind, key).or(view_pin),
                        live,
                    ),
                    Served::Approved => forward(live.clone(), live, ServedAs::Approved),
                    Served::Pinned { pinned_hash } => {
                        forward(Some(pinned_hash.clone()), live, ServedAs::Pinned)
                    }
                    Served::Live => forward(
                        self.judged_pin(kind, key).or(view_pin),
                        live,
                        ServedAs::Live,
                    ),
                }
            }
        }
    }

    /// A use of an item a complete, fresh listing does not have: renamed (judged as
    /// the rename is), removed from the client's own profile (judged by the policy
    /// as a removal), or pinned only under another profile or nowhere.
    pub(super) fn item_unlisted(
        &self,
        kind: Kind,
        key: &str,
        view_pin: Option<String>,
        pinned_anywhere: bool,
    ) -> ItemDecision {
        let refuse = |error_code| {
            ItemDecision::Refuse(ItemRefusal {
                kind,
                error_code,
                key: key.to_string(),
                uri: None,
                required_action: RequiredAction::ApproveUpdate,
                pinned_hash: view_pin.clone(),
                live_hash: None,
                denied_by: None,
            })
        };
        let removed = ItemDecision::Forward {
            kind,
            key: Some(key.to_string()),
            pinned_hash: view_pin.clone(),
            live_hash: None,
            served: ServedAs::Removed,
            unenforced: false,
        };
        let renamed_to = self
            .items
            .get(&kind)
            .and_then(|s| s.complete.as_ref())
            .and_then(|l| l.renamed.get(key).and_then(|new| l.items.get(new)));
        if let Some(seen) = renamed_to {
            return if seen.usable() {
                removed
            } else {
                refuse(stale_code(kind))
            };
        }
        let pin = self
            .view
            .as_ref()
            .and_then(|v| v.items(kind))
            .and_then(|items| items.get(key));
        match pin {
            Some(pin) if self.matched.is_some() => {
                let mut change = ToolChange {
                    pinned_hash: Some(pin.hash.clone()),
                    pinned: Some(pin.definition.clone()),
                    ..ToolChange::new(kind, key.to_string(), ChangeKind::Removed)
                };
                self.policy.judge(&mut change);
                if change.action == Action::Fail {
                    refuse(stale_code(kind))
                } else if let Some(denial) = self.denial(kind, key, Some(&pin.definition)) {
                    ItemDecision::Refuse(ItemRefusal {
                        kind,
                        error_code: super::super::denied_code(kind),
                        key: key.to_string(),
                        uri: None,
                        required_action: RequiredAction::ChangeRules,
                        pinned_hash: view_pin.clone(),
                        live_hash: None,
                        denied_by: Some(denial),
                    })
                } else {
                    removed
                }
            }
            _ if pinned_anywhere => refuse(stale_code(kind)),
            _ => refuse(unpinned_code(kind)),
        }
    }

    /// Decides a `resources/read` of `uri`. A pinned resource is judged as itself. Else
    /// the URI is matched against every template the lock pins or a listing showed:
    /// one approved or served lets it through; when it matches only templates that
    /// are hidden (or unconfirmed since list_changed), it is refused; a URI no
    /// template matches is data the lock says nothing about, and goes through.
    pub fn decide_read(&self, uri: &str) -> ItemDecision {
        let with_uri = |decision: ItemDecision| match decision {
            ItemDecision::Refuse(r) => ItemDecision::Refuse(ItemRefusal {
                uri: Some(uri.to_string()),
                ..r
            }),
            forward => forward,
        };
        if self.kind_pinned(Kind::Resource)
            && self.pins.as_ref().is_some_and(|p| {
                p.profiles
                    .values()
                    .any(|l| l.items(Kind::Resource).is_some_and(|i| i.contains_key(uri)))
            })
        {
            return with_uri(self.decide_item(Kind::Resource, uri));
        }
        let kind = Kind::ResourceTemplate;
        if self.pins.is_none() || self.identity_refused() {
            return with_uri(self.decide_item(kind, ""));
        }
        if !self.kind_pinned(kind) {
            // Templates shown on pages passed on unenforced: a URI only denied ones
            // match is refused.
            let seen = self.items.get(&kind).map(|s| &s.unenforced_seen);
            let matching: Vec<(&String, &Option<Denial>)> = seen
                .into_iter()
                .flatten()
                .filter(|(template, _)| template_matches(template, uri))
                .collect();
            if let Some((template, Some(denial))) = matching.first()
                && matching.iter().all(|(_, d)| d.is_some())
            {
                return ItemDecision::Refuse(ItemRefusal {
                    kind,
                    error_code: ErrorCode::ResourceTemplateDenied,
                    key: (*template).clone(),
                    uri: Some(uri.to_string()),
                    required_action: RequiredAction::ChangeRules,
                    pinned_hash: None,
                    live_hash: None,
                    denied_by: Some(denial.clone()),
                });
            }
            return ItemDecision::unenforced(kind);
        }
        // A client that never listed templates in this session was shown none: the
        // model planned with no template text, so there is nothing to hold it to (a
        // read of a URI a tool returned, say). Once it has listed, its reads wait for
        // a checked listing after every list_changed.
        let never_listed = self.items.get(&kind).is_none_or(|state| {
            state.generation == 0 && state.complete.is_none() && state.partial.is_none()
        });
        if never_listed {
            // The rules still hold: a URI that only templates the rules deny to this
            // host match is refused, listed or not.
            return self
                .denied_read(uri)
                .map_or(ItemDecision::unenforced(kind), ItemDecision::Refuse);
        }
        let mut templates: Vec<&String> = self
            .view
            .as_ref()
            .and_then(|v| v.items(kind))
            .into_iter()
            .flat_map(|items| items.keys())
            .collect();
        if let Some(state) = self.items.get(&kind) {
            for listing in [&state.complete, &state.partial].into_iter().flatten() {
                templates.extend(listing.items.keys());
            }
        }
        templates.sort();
        templates.dedup();
        let mut refusals = Vec::new();
        for template in templates {
            if !template_matches(template, uri) {
                continue;
            }
            match self.decide_item(kind, template) {
                forward @ ItemDecision::Forward { .. } => return forward,
                ItemDecision::Refuse(r) => refusals.push(r),
            }
        }
        match refusals.into_iter().min_by_key(|r| rank(r.error_code)) {
            Some(refusal) => with_uri(ItemDecision::Refuse(refusal)),
            None => ItemDecision::Forward {
                kind,
                key: None,
                pinned_hash: None,
                live_hash: None,
                served: ServedAs::Live,
                unenforced: false,
            },
        }
    }
}

impl Session {
    /// The refusal of a read of `uri` when pinned templates of the client's view match
    /// it and the rules deny every one of them to the client's host.
    fn denied_read(&self, uri: &str) -> Option<ItemRefusal> {
        let kind = Kind::ResourceTemplate;
        let pins = self.view.as_ref()?.items(kind)?;
        let mut denied = None;
        for (template, pin) in pins.iter().filter(|(t, _)| template_matches(t, uri)) {
            match self.denial(kind, template, Some(&pin.definition)) {
                Some(denial) => denied = denied.or(Some((template, pin, denial))),
                None => return None,
            }
        }
        let (template, pin, denial) = denied?;
        Some(ItemRefusal {
            kind,
            error_code: ErrorCode::ResourceTemplateDenied,
            key: template.clone(),
            uri: Some(uri.to_string()),
            required_action: RequiredAction::ChangeRules,
            pinned_hash: Some(pin.hash.clone()),
            live_hash: None,
            denied_by: Some(denial),
        })
    }
}

impl ItemRefusal {
    /// The rule that denies it, escaped.
    fn rule_quoted(&self) -> String {
        self.denied_by
            .as_ref()
            .map(|d| crate::base::text::escape_for_terminal(&d.to_string()))
            .unwrap_or_default()
    }

    /// The JSON-RPC error the client gets for its request `id`: a short message that
    /// never repeats the server's new wording, and the facts in `data`.
    pub fn to_error(&self, id: &Value) -> Value {
        let key = short_name(&self.key);
        let what = match self.kind {
            Kind::Prompt => format!("prompt `{key}`"),
            _ => format!("`{}`", short_name(self.uri.as_deref().unwrap_or(&self.key))),
        };
        let verb = if self.kind == Kind::Prompt {
            "get"
        } else {
            "read"
        };
        let why = match self.error_code {
            ErrorCode::StalePrompt => "the prompt's definition on the server changed since it was approved in mcp.lock (or it was renamed, or is no longer offered)".to_string(),
            ErrorCode::UnpinnedPrompt => "no prompt of that name is approved in mcp.lock".to_string(),
            ErrorCode::PromptsNotVerified => "the server's prompt list changed (or was not listed yet) and has not been checked since; list the prompts again (prompts/list)".to_string(),
            ErrorCode::StaleResourceTemplate => format!("it matches only the resource template `{key}`, whose definition on the server changed since it was approved in mcp.lock (or which is no longer offered)"),
            ErrorCode::UnpinnedResourceTemplate => format!("it matches only the resource template `{key}`, which is not approved in mcp.lock"),
            ErrorCode::ResourceTemplatesNotVerified => format!("it matches the resource template `{key}`, and the server's templates changed (or were not listed yet) and have not been checked since; list them again (resources/templates/list)"),
            ErrorCode::StaleResource => "the resource's listing on the server changed since it was approved in mcp.lock (or it is no longer offered)".to_string(),
            ErrorCode::UnpinnedResource => "no resource of that URI is approved in mcp.lock".to_string(),
            ErrorCode::ResourcesNotVerified => "the server's resource list changed (or was not listed yet) and has not been checked since; list the resources again (resources/list)".to_string(),
            ErrorCode::ServerIdentityChanged => "the server answered under another name than the one approved in mcp.lock".to_string(),
            ErrorCode::PromptDenied => format!("the project's rules do not allow this agent to use it ({}); ask the user to change the rule if it is needed", self.rule_quoted()),
            ErrorCode::ResourceTemplateDenied => format!("it matches only the resource template `{key}`, which the project's rules do not allow this agent to use ({}); ask the user to change the rule if it is needed", self.rule_quoted()),
            other => other.as_str().to_string(),
        };
        let mut data = json!({
            "error_code": self.error_code,
            self.kind.as_str(): self.key,
            "required_action": self.required_action,
            "pinned_hash": self.pinned_hash,
            "live_hash": self.live_hash,
            "side_effect_started": false,
        });
        if let Some(uri) = &self.uri {
            data["uri"] = json!(uri);
        }
        if let Some(denial) = &self.denied_by {
            data["denied_by"] = json!(denial);
        }
        json!({
            "jsonrpc": "2.0",
            "id": id,
            "error": {
                "code": -32602,
                "message": format!("mcp-lock guard did not {verb} {what}: {why}. The request was not sent to the server."),
                "data": data,
            },
        })
    }
}

/// Whether `uri` matches an RFC 6570 template, read simply: literal text as is,
/// `{var}` one or more characters other than `/`, `{+var}` and `{#var}` anything
/// (`#` with its `#`), `{?x}` and `{&x}` an optional query part, `{/x}` an optional
/// path part, `{.x}` and `{;x}` an optional part of a segment.
pub fn template_matches(template: &str, uri: &str) -> bool {
    let mut parts = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        if open > 0 {
            parts.push(Piece::Literal(&rest[..open]));
        }
        parts.push(Piece::Expression(
            rest[open + 1..close].chars().next().unwrap_or(' '),
        ));
        rest = &rest[close + 1..];
    }
    if !rest.is_empty() {
        parts.push(Piece::Literal(rest));
    }
    matches_from(&parts, uri)
}

pub(super) enum Piece<'a> {
    Literal(&'a str),
    /// The expression's first character (its operator, if it has one).
    Expression(char),
}

pub(super) fn matches_from(parts: &[Piece<'_>], uri: &str) -> bool {
    let Some((first, rest)) = parts.split_first() else {
        return uri.is_empty();
    };
    match first {
        Piece::Literal(text) => uri
            .strip_prefix(text)
            .is_some_and(|after| matches_from(rest, after)),
        Piece::Expression(op) => {
            // (the prefix it starts with when not empty, whether it may be empty,
            // which characters it may not take)
            let (prefix, optional, stop): (&str, bool, &[char]) = match op {
                '+' => ("", true, &[]),
                '#' => ("#", true, &[]),
                '?' => ("?", true, &['#']),
                '&' => ("&", true, &['#']),
                '/' => ("/", true, &['?', '#']),
                '.' => (".", true, &['/', '?', '#']),
                ';' => (";", true, &['/', '?', '#']),
                _ => ("", false, &['/']),
            };
            if optional && matches_from(rest, uri) {
                return true;
            }
            let Some(value) = uri.strip_prefix(prefix) else {
                return false;
            };
            let longest = value.find(stop).unwrap_or(value.len());
            (1..=longest)
                .filter(|&n| value.is_char_boundary(n))
                .any(|n| matches_from(rest, &value[n..]))
        }
    }
}
