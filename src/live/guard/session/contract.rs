//! A tool's contract as the guard serves it: pinned or live, and why a call to it is
//! refused.

use super::*;

impl Session {
    /// The first half of [`Session::decide_call`]: whether the client may call the
    /// tool, and with which input schema. The arguments are checked against the
    /// returned contract afterwards, so a proxy can do that outside its lock.
    pub fn contract(&mut self, tool: &str) -> Result<Contract, Refusal> {
        let view_pin = self
            .view
            .as_ref()
            .and_then(|v| v.tools.get(tool))
            .map(|p| p.hash.clone());
        let refuse = |error_code, required_action, pinned_hash, live_hash| Refusal {
            error_code,
            tool: tool.to_string(),
            required_action,
            side_effect_started: false,
            pinned_hash,
            live_hash,
            violations: Vec::new(),
            missing_profile: None,
            denied_by: None,
        };
        if self.identity_refused() {
            return Err(refuse(
                ErrorCode::ServerIdentityChanged,
                RequiredAction::ApproveUpdate,
                view_pin,
                None,
            ));
        }
        let pinned_anywhere = self
            .pins
            .as_ref()
            .is_some_and(|p| p.profiles.values().any(|l| l.tools.contains_key(tool)));
        let seen = match self.latest(tool) {
            // No checked listing of this generation says anything about the tool.
            None => {
                // The rules need no listing to deny what the client's view pins.
                let pin = self.view.as_ref().and_then(|v| v.tools.get(tool));
                if let Some(pin) = pin
                    && let Some(denial) = self.denial(Kind::Tool, tool, Some(&pin.definition))
                {
                    return Err(self.denied(tool, denial, view_pin, None));
                }
                let could_serve = pinned_anywhere
                    || (self.pins.is_some()
                        && self.policy.action(Rule::TOOL_ADDED) != Action::Fail);
                return Err(if could_serve {
                    refuse(
                        ErrorCode::ListingNotVerified,
                        RequiredAction::RefreshTools,
                        view_pin,
                        None,
                    )
                } else {
                    Refusal {
                        missing_profile: self.missing.clone().map(Box::new),
                        ..refuse(
                            ErrorCode::UnpinnedTool,
                            RequiredAction::ApproveUpdate,
                            None,
                            None,
                        )
                    }
                });
            }
            // A complete, fresh listing does not have it.
            Some(None) => return self.unlisted(tool, view_pin, pinned_anywhere),
            Some(Some(seen)) => seen,
        };
        let live_hash = seen.hash.clone();
        let (definition, hash, pinned_hash, served) = match &seen.served {
            Served::Denied(denial) => {
                return Err(self.denied(tool, denial.clone(), view_pin, live_hash));
            }
            Served::Hidden(code) => {
                let unpinned = *code == ErrorCode::UnpinnedTool;
                return Err(Refusal {
                    missing_profile: if unpinned {
                        self.missing.clone().map(Box::new)
                    } else {
                        None
                    },
                    ..refuse(*code, RequiredAction::ApproveUpdate, view_pin, live_hash)
                });
            }
            Served::Approved => {
                let hash = live_hash.clone().unwrap_or_default();
                let definition = self.approved_definition(tool, &hash);
                (definition, hash.clone(), Some(hash), ServedAs::Approved)
            }
            Served::Pinned { pinned_hash } => (
                self.approved_definition(tool, pinned_hash),
                pinned_hash.clone(),
                Some(pinned_hash.clone()),
                ServedAs::Pinned,
            ),
            Served::Live => (
                seen.live.clone(),
                live_hash.clone().unwrap_or_default(),
                view_pin.clone(),
                ServedAs::Live,
            ),
        };
        let Some(definition) = definition else {
            // The lock moved under the listing: list again.
            return Err(refuse(
                ErrorCode::ListingNotVerified,
                RequiredAction::RefreshTools,
                view_pin,
                live_hash,
            ));
        };
        // The listing judged it already; judged again on the very definition the call
        // is held to, so no path serves what the rules deny.
        if let Some(denial) = self.denial(Kind::Tool, tool, Some(&definition)) {
            return Err(self.denied(tool, denial, pinned_hash, live_hash));
        }
        Ok(self.contract_of(tool, pinned_hash, live_hash, served, &hash, &definition))
    }

    fn contract_of(
        &mut self,
        tool: &str,
        pinned_hash: Option<String>,
        live_hash: Option<String>,
        served: ServedAs,
        hash: &str,
        definition: &Arc<Json>,
    ) -> Contract {
        Contract {
            tool: tool.to_string(),
            pinned_hash,
            live_hash,
            served,
            schema: self.schema(hash, definition),
            rules: self.rules.clone(),
            server: self.server.clone(),
            host: self.matched.clone(),
        }
    }

    /// The refusal of a call of a tool the rules deny to the client's host.
    fn denied(
        &self,
        tool: &str,
        denial: Denial,
        pinned_hash: Option<String>,
        live_hash: Option<String>,
    ) -> Refusal {
        Refusal {
            error_code: ErrorCode::ToolDenied,
            tool: tool.to_string(),
            required_action: RequiredAction::ChangeRules,
            side_effect_started: false,
            pinned_hash,
            live_hash,
            violations: Vec::new(),
            missing_profile: None,
            denied_by: Some(Box::new(denial)),
        }
    }

    /// A call to a tool a complete, fresh listing does not have. Under the client's
    /// own profile, a pinned tool missing is a removal, decided by the policy; under
    /// every approved definition it may simply not be offered to this client.
    fn unlisted(
        &mut self,
        tool: &str,
        view_pin: Option<String>,
        pinned_anywhere: bool,
    ) -> Result<Contract, Refusal> {
        let refusal = |error_code| Refusal {
            error_code,
            tool: tool.to_string(),
            required_action: RequiredAction::ApproveUpdate,
            side_effect_started: false,
            pinned_hash: view_pin.clone(),
            live_hash: None,
            violations: Vec::new(),
            missing_profile: None,
            denied_by: None,
        };
        let exact = self.matched.is_some();
        let pin = self.view.as_ref().and_then(|v| v.tools.get(tool)).cloned();
        match pin {
            Some(pin) if exact => {
                let mut change = ToolChange {
                    pinned_hash: Some(pin.hash.clone()),
                    pinned: Some(pin.definition.clone()),
                    ..ToolChange::new(Kind::Tool, tool.to_string(), ChangeKind::Removed)
                };
                self.policy.judge(&mut change);
                if change.action == Action::Fail {
                    return Err(refusal(ErrorCode::StaleToolSchema));
                }
                if let Some(denial) = self.denial(Kind::Tool, tool, Some(&pin.definition)) {
                    return Err(self.denied(tool, denial, Some(pin.hash.clone()), None));
                }
                Ok(self.contract_of(
                    tool,
                    Some(pin.hash.clone()),
                    None,
                    ServedAs::Removed,
                    &pin.hash,
                    &pin.definition,
                ))
            }
            _ if pinned_anywhere => Err(refusal(ErrorCode::StaleToolSchema)),
            _ => Err(Refusal {
                missing_profile: self.missing.clone().map(Box::new),
                ..refusal(ErrorCode::UnpinnedTool)
            }),
        }
    }

    /// What the newest checked listing of this generation says about a tool: None
    /// when no such listing covers it, Some(None) when a complete one does not list it.
    fn latest(&self, tool: &str) -> Option<Option<Seen>> {
        let current = Some(self.generation);
        if let Some(partial) = &self.partial
            && let Some(seen) = partial.tools.get(tool)
        {
            // A page of an older listing still shows what the server sends now when it
            // drifted; only a tool served needs the current generation to count.
            if partial.generation == current || !seen.usable() {
                return Some(Some(seen.clone()));
            }
        }
        let complete = self.complete.as_ref()?;
        match complete.tools.get(tool) {
            Some(seen) if complete.generation == current || !seen.usable() => {
                Some(Some(seen.clone()))
            }
            None if complete.generation == current => Some(None),
            _ => None,
        }
    }
}
