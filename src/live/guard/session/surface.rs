//! Prompts, resource templates and resources as the client receives them: judged
//! page by page as tools are ([`crate::verdict::drift::item_change`], then the policy), served
//! or hidden the same way, and `prompts/get` and `resources/read` refused for what
//! was hidden.
//!
//! A kind the lock does not pin for the server yet (a lock from before prompts were
//! pinned, or a surface that leaves them out) passes through unenforced, as verify
//! reports it "not pinned yet" and does not fail on it.

use std::collections::{HashMap, HashSet};
use std::sync::Arc;

use serde::Serialize;
use serde_json::{Value, json};

use super::{ErrorCode, RequiredAction, Seen, Served, ServedAs, Session, set_member, short_name};
use crate::base::json::Json;
use crate::contract::classify::{Class, is_template_rename, same_except_key};
use crate::contract::hash::HashedTool;
use crate::contract::surface::Kind;
use crate::verdict::drift::{ChangeKind, Part, ToolChange, item_change};
use crate::verdict::policy::{Action, Rule, Serve};
use crate::verdict::rules::Denial;

#[cfg(test)]
mod tests;
mod uses;

pub use uses::template_matches;

/// The kinds judged here (tools have their own, older path).
pub const ITEM_KINDS: [Kind; 3] = [Kind::Prompt, Kind::ResourceTemplate, Kind::Resource];

/// What was checked of one kind.
#[derive(Debug, Default)]
pub(super) struct ItemState {
    /// Bumped by every list_changed of this kind.
    generation: u64,
    complete: Option<ItemListing>,
    partial: Option<ItemListing>,
    /// The "not pinned yet" entry was made.
    told_unenforced: bool,
    /// Items seen on pages passed on unenforced, and the rule that denies each to the
    /// client's host (the tool rules hold whether or not the lock pins the kind).
    unenforced_seen: HashMap<String, Option<Denial>>,
}

/// One listing of a kind as the client received it.
#[derive(Debug, Default, Clone)]
struct ItemListing {
    /// The generation its first page was asked for in; None when that page was not
    /// seen.
    generation: Option<u64>,
    items: HashMap<String, Seen>,
    /// The pinned hash each item not approved was judged against (the old pin of a
    /// rename).
    pinned: HashMap<String, String>,
    /// Renames: the old key, and the key it is listed under now.
    renamed: HashMap<String, String>,
}

/// An item left out of a listing, for the audit log and the `--on-drift fail` error.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemHidden {
    pub key: String,
    pub error_code: ErrorCode,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub change: Option<ChangeKind>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub class: Option<Class>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub action: Option<Action>,
    /// The rule that denies it and its file (PROMPT_DENIED, RESOURCE_TEMPLATE_DENIED).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub denied_by: Option<Denial>,
}

/// An item given to the client although its live definition is not approved.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ItemServed {
    pub key: String,
    /// `pinned` or `live`.
    pub served: ServedAs,
    pub change: ChangeKind,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    pub class: Option<Class>,
    pub action: Action,
}

/// A page of prompts, templates or resources after the check.
#[derive(Debug, Clone, PartialEq)]
pub struct CheckedItems {
    pub kind: Kind,
    /// The message to send the client in its place.
    pub message: String,
    pub hidden: Vec<ItemHidden>,
    pub served: Vec<ItemServed>,
    /// How many items the client sees on this page.
    pub shown: usize,
    /// The page was answered with an error instead.
    pub refused: bool,
    /// This page completed a listing.
    pub complete: bool,
    /// The lock does not pin this kind for the server yet: passed on unchecked.
    pub unenforced: bool,
}

/// A `prompts/get` or `resources/read` the guard answers itself.
#[derive(Debug, Clone, PartialEq)]
pub struct ItemRefusal {
    pub kind: Kind,
    pub error_code: ErrorCode,
    /// The prompt's name, the template's `uriTemplate`, the resource's `uri`.
    pub key: String,
    /// The URI read (resources/read only).
    pub uri: Option<String>,
    pub required_action: RequiredAction,
    pub pinned_hash: Option<String>,
    pub live_hash: Option<String>,
    /// The rule that denies it and its file (PROMPT_DENIED, RESOURCE_TEMPLATE_DENIED).
    pub denied_by: Option<Denial>,
}

/// What becomes of a `prompts/get` or `resources/read`.
#[derive(Debug, Clone, PartialEq)]
pub enum ItemDecision {
    Forward {
        /// The item that lets it through (None: a URI no template matches).
        kind: Kind,
        key: Option<String>,
        pinned_hash: Option<String>,
        live_hash: Option<String>,
        served: ServedAs,
        /// The lock does not pin this kind for the server yet.
        unenforced: bool,
    },
    Refuse(ItemRefusal),
}

impl ItemDecision {
    fn unenforced(kind: Kind) -> Self {
        ItemDecision::Forward {
            kind,
            key: None,
            pinned_hash: None,
            live_hash: None,
            served: ServedAs::Live,
            unenforced: true,
        }
    }
}

fn stale_code(kind: Kind) -> ErrorCode {
    match kind {
        Kind::Tool => ErrorCode::StaleToolSchema,
        Kind::Prompt => ErrorCode::StalePrompt,
        Kind::ResourceTemplate => ErrorCode::StaleResourceTemplate,
        Kind::Resource => ErrorCode::StaleResource,
    }
}

fn unpinned_code(kind: Kind) -> ErrorCode {
    match kind {
        Kind::Tool => ErrorCode::UnpinnedTool,
        Kind::Prompt => ErrorCode::UnpinnedPrompt,
        Kind::ResourceTemplate => ErrorCode::UnpinnedResourceTemplate,
        Kind::Resource => ErrorCode::UnpinnedResource,
    }
}

fn unverified_code(kind: Kind) -> ErrorCode {
    match kind {
        Kind::Tool => ErrorCode::ListingNotVerified,
        Kind::Prompt => ErrorCode::PromptsNotVerified,
        Kind::ResourceTemplate => ErrorCode::ResourceTemplatesNotVerified,
        Kind::Resource => ErrorCode::ResourcesNotVerified,
    }
}

fn refresh(kind: Kind) -> RequiredAction {
    match kind {
        Kind::Tool => RequiredAction::RefreshTools,
        Kind::Prompt => RequiredAction::RefreshPrompts,
        Kind::ResourceTemplate => RequiredAction::RefreshResourceTemplates,
        Kind::Resource => RequiredAction::RefreshResources,
    }
}

/// Which refusal of a URI's templates says most: one a fresh listing may lift first,
/// then a drifted template, then an unpinned one.
fn rank(code: ErrorCode) -> u8 {
    match code {
        ErrorCode::ResourceTemplatesNotVerified => 0,
        ErrorCode::StaleResourceTemplate => 1,
        ErrorCode::UnpinnedResourceTemplate => 2,
        ErrorCode::ResourceTemplateDenied => 3,
        _ => 4,
    }
}

impl Session {
    /// The list_changed generation of a kind, for a listing request of it.
    pub fn item_generation(&self, kind: Kind) -> u64 {
        self.items.get(&kind).map_or(0, |s| s.generation)
    }

    /// `notifications/prompts/list_changed` (Prompt) or
    /// `notifications/resources/list_changed` (ResourceTemplate and Resource): what
    /// was checked of that kind is stale until a listing asked for from now on.
    pub fn items_list_changed(&mut self, notification: &str) {
        for kind in ITEM_KINDS {
            if kind.list_changed_notification() == notification {
                self.items.entry(kind).or_default().generation += 1;
            }
        }
    }

    /// Whether the lock pins this kind for the server, as verify decides it: the
    /// view (the client's profile, or every approved definition) has pins of it.
    fn kind_pinned(&self, kind: Kind) -> bool {
        self.view.as_ref().is_some_and(|v| v.items(kind).is_some())
    }

    /// Whether this kind passes through unenforced: the server is pinned, but not
    /// this kind yet.
    fn kind_unenforced(&self, kind: Kind) -> bool {
        self.pins.is_some() && !self.kind_pinned(kind)
    }

    /// True the first time a page of a kind passes through unenforced (one audit
    /// entry says so per session).
    pub fn first_unenforced(&mut self, kind: Kind) -> bool {
        let state = self.items.entry(kind).or_default();
        !std::mem::replace(&mut state.told_unenforced, true)
    }

    /// The usable items of each kind's last complete listing, and how each is served.
    pub(super) fn visible_items(&self) -> HashMap<Kind, HashMap<String, Served>> {
        ITEM_KINDS
            .into_iter()
            .map(|kind| {
                let visible = self
                    .items
                    .get(&kind)
                    .and_then(|s| s.complete.as_ref())
                    .map(|l| {
                        l.items
                            .iter()
                            .filter(|(_, seen)| seen.usable())
                            .map(|(key, seen)| (key.clone(), seen.served.clone()))
                            .collect()
                    })
                    .unwrap_or_default();
                // A kind becoming pinned (or no longer) changes what is enforced.
                let mut visible: HashMap<String, Served> = visible;
                if self.kind_unenforced(kind) {
                    visible.insert(String::new(), Served::Live);
                }
                (kind, visible)
            })
            .collect()
    }

    /// Judges every item of the listings seen again, after the pins or the view moved.
    pub(super) fn judge_items_again(&mut self) {
        let mut states = std::mem::take(&mut self.items);
        for (kind, state) in states.iter_mut() {
            for listing in [&mut state.complete, &mut state.partial]
                .into_iter()
                .flatten()
            {
                let listed: HashSet<String> = listing.items.keys().cloned().collect();
                let mut again = ItemListing {
                    generation: listing.generation,
                    ..ItemListing::default()
                };
                for (key, seen) in &listing.items {
                    let served = match &seen.live {
                        Some(live) => {
                            let item = HashedTool::shared_keyed(live.clone(), kind.key_member());
                            let (served, change) =
                                self.judge_item(*kind, key, &item, seen.problem.clone(), &listed);
                            again.note(key, change.as_ref());
                            served
                        }
                        None => Served::Hidden(unpinned_code(*kind)),
                    };
                    again.items.insert(
                        key.clone(),
                        Seen {
                            served,
                            ..seen.clone()
                        },
                    );
                }
                *listing = again;
            }
        }
        self.items = states;
    }

    /// How one live item is served: verify's judgement of it, with a rename paired
    /// when the page shows one (a new key whose definition equals a pinned one not
    /// listed so far), and the change when it is not approved.
    fn judge_item(
        &self,
        kind: Kind,
        key: &str,
        item: &HashedTool,
        problem: Option<String>,
        listed: &HashSet<String>,
    ) -> (Served, Option<ToolChange>) {
        if self.identity_refused() {
            return (Served::Hidden(ErrorCode::ServerIdentityChanged), None);
        }
        let pinned = self.pinned();
        let Some(mut change) = item_change(kind, pinned, key, item, problem) else {
            let denied = self.denial(kind, key, Some(&item.definition));
            return (denied.map_or(Served::Approved, Served::Denied), None);
        };
        if pinned.is_some_and(|p| p.exact) || kind == Kind::ResourceTemplate {
            self.pair_rename(&mut change, listed);
        }
        self.policy.judge(&mut change);
        let served = match (pinned.is_some(), self.policy.serve(&change)) {
            (false, _) => Served::Hidden(unpinned_code(kind)),
            (true, Serve::Hide) if change.pinned_hash.is_some() => Served::Hidden(stale_code(kind)),
            (true, Serve::Hide) => Served::Hidden(unpinned_code(kind)),
            (true, Serve::Pinned) => Served::Pinned {
                pinned_hash: change.pinned_hash.clone().unwrap_or_default(),
            },
            (true, Serve::Live) => Served::Live,
        };
        // Judged on the definition the client is served, as tools are.
        let served_definition = match &served {
            Served::Pinned { pinned_hash } => self.approved_item(kind, key, pinned_hash),
            _ => None,
        };
        let definition = served_definition.as_deref().unwrap_or(&item.definition);
        let served = match self.denial(kind, key, Some(definition)) {
            Some(denial) => Served::Denied(denial),
            None => served,
        };
        (served, Some(change))
    }

    /// Makes a change a rename as verify pairs one: a template whose display `name`
    /// alone changed; a prompt (or resource) added under a new key whose definition
    /// equals, but for the key, a pinned one this listing has not shown.
    fn pair_rename(&self, change: &mut ToolChange, listed: &HashSet<String>) {
        let kind = change.kind;
        if kind == Kind::ResourceTemplate {
            if let (ChangeKind::Changed, Some(a), Some(b)) =
                (change.change, &change.pinned, &change.live)
                && is_template_rename(a, b)
            {
                change.renamed_from = a.get("name").and_then(Json::as_str);
                change.change = ChangeKind::Renamed;
            }
            return;
        }
        if change.change != ChangeKind::Added || change.problem.is_some() {
            return;
        }
        let (Some(pins), Some(live)) = (
            self.view.as_ref().and_then(|v| v.items(kind)),
            change.live.clone(),
        ) else {
            return;
        };
        let old = pins.iter().find(|(old, pin)| {
            !listed.contains(old.as_str()) && same_except_key(kind, &pin.definition, &live)
        });
        if let Some((old, pin)) = old {
            change.renamed_from = Some(old.clone());
            change.change = ChangeKind::Renamed;
            change.pinned_hash = Some(pin.hash.clone());
            change.pinned = Some(pin.definition.clone());
            change.parts = vec![Part::Other];
        }
    }

    /// The lock's definition of an item with this key and hash, under any profile.
    fn approved_item(&self, kind: Kind, key: &str, hash: &str) -> Option<Arc<Json>> {
        self.pins.as_ref()?.profiles.values().find_map(|p| {
            p.items(kind)?
                .get(key)
                .filter(|t| t.hash == hash)
                .map(|t| t.definition.clone())
        })
    }

    /// Checks one `prompts/list`, `resources/templates/list` or `resources/list` answer
    /// the client is about to receive and returns what to send instead.
    pub fn check_item_page(
        &mut self,
        kind: Kind,
        mut message: Json,
        first_page: bool,
        generation: u64,
    ) -> CheckedItems {
        let (method, member) = kind.list_method();
        let id = message.get("id").cloned().unwrap_or(Json::Null);
        let page = |message: String, complete, unenforced| CheckedItems {
            kind,
            message,
            hidden: Vec::new(),
            served: Vec::new(),
            shown: 0,
            refused: false,
            complete,
            unenforced,
        };
        if message.get("result").is_none() {
            // An error answer: nothing listed, nothing to check.
            return page(self.canonical_or_error(&message), false, false);
        }
        if self.kind_unenforced(kind) {
            let complete = message
                .get("result")
                .and_then(|r| r.get("nextCursor"))
                .is_none_or(|c| matches!(c, Json::Null));
            if self.rules.is_empty() {
                return page(self.canonical_or_error(&message), complete, true);
            }
            return self.unenforced_page(kind, message, complete);
        }
        let mut result = message.take("result").unwrap_or(Json::Null);
        let listed_items = match result.take(member) {
            Some(Json::Array(items)) if result.is_object() => items,
            _ => {
                return self.refuse_items(
                    kind,
                    &id,
                    &format!("the server's {method} answer has no {member} array"),
                    Vec::new(),
                );
            }
        };
        let mut state = self.items.remove(&kind).unwrap_or_default();
        let mut partial = match state.partial.take() {
            Some(partial) if !first_page => partial,
            _ => ItemListing {
                generation: first_page.then_some(generation),
                ..ItemListing::default()
            },
        };
        let hashed: Vec<HashedTool> = listed_items
            .into_iter()
            .map(|d| HashedTool::keyed(d, kind.key_member()))
            .collect();
        let mut keys_here: HashMap<String, usize> = HashMap::new();
        for item in &hashed {
            if let Some(key) = &item.name {
                *keys_here.entry(key.clone()).or_default() += 1;
            }
        }
        let listed: HashSet<String> = partial
            .items
            .keys()
            .cloned()
            .chain(keys_here.keys().cloned())
            .collect();
        let (mut keep, mut hidden, mut served) = (Vec::new(), Vec::new(), Vec::new());
        for item in hashed {
            let Some(key) = item.name.clone() else {
                hidden.push(ItemHidden {
                    key: String::new(),
                    error_code: unpinned_code(kind),
                    change: Some(ChangeKind::Added),
                    renamed_from: None,
                    pinned_hash: None,
                    live_hash: None,
                    class: None,
                    action: None,
                    denied_by: None,
                });
                continue;
            };
            let repeated = keys_here[&key] > 1 || partial.items.contains_key(&key);
            let problem = repeated.then(|| {
                format!(
                    "the server lists more than one {} keyed {key:?}",
                    kind.noun()
                )
            });
            let (decision, change) = self.judge_item(kind, &key, &item, problem.clone(), &listed);
            partial.note(&key, change.as_ref());
            let live_hash = item.hash.as_ref().ok().cloned();
            match &decision {
                Served::Approved => keep.push((*item.definition).clone()),
                Served::Pinned { pinned_hash } => {
                    let approved = self
                        .approved_item(kind, &key, pinned_hash)
                        .expect("a pinned change has its pin");
                    keep.push((*approved).clone());
                }
                Served::Live => keep.push((*item.definition).clone()),
                Served::Hidden(_) | Served::Denied(_) => hidden.push(ItemHidden {
                    key: key.clone(),
                    error_code: decision.left_out(kind).0,
                    denied_by: decision.left_out(kind).1,
                    change: change.as_ref().map(|c| c.change),
                    renamed_from: change.as_ref().and_then(|c| c.renamed_from.clone()),
                    pinned_hash: change.as_ref().and_then(|c| c.pinned_hash.clone()),
                    live_hash: live_hash.clone(),
                    class: change.as_ref().and_then(|c| c.class),
                    action: change.as_ref().map(|c| c.action),
                }),
            }
            if let (Some(change), Served::Pinned { .. } | Served::Live) = (&change, &decision) {
                served.push(ItemServed {
                    key: key.clone(),
                    served: if matches!(decision, Served::Live) {
                        ServedAs::Live
                    } else {
                        ServedAs::Pinned
                    },
                    change: change.change,
                    renamed_from: change.renamed_from.clone(),
                    pinned_hash: change.pinned_hash.clone(),
                    live_hash: change.live_hash.clone(),
                    class: change.class,
                    action: change.action,
                });
            }
            partial.items.insert(
                key,
                Seen {
                    hash: live_hash.filter(|_| !repeated),
                    problem,
                    live: Some(item.definition),
                    served: decision,
                },
            );
        }
        let complete = matches!(result.get("nextCursor"), None | Some(Json::Null));
        if complete {
            state.complete = Some(partial);
        } else {
            state.partial = Some(partial);
        }
        self.items.insert(kind, state);
        let drifted = hidden.iter().any(|h| !h.error_code.is_denial());
        if drifted && self.on_drift == super::OnDrift::Fail {
            let mut refused = self.refuse_items(
                kind,
                &id,
                &format!(
                    "the server's {} listing does not match mcp.lock",
                    kind.noun()
                ),
                hidden,
            );
            refused.complete = complete;
            return refused;
        }
        let shown = keep.len();
        set_member(&mut result, member, Json::Array(keep));
        set_member(&mut message, "result", result);
        match message.canonical() {
            Ok(text) => CheckedItems {
                message: text,
                hidden,
                served,
                shown,
                complete,
                ..page(String::new(), complete, false)
            },
            Err(e) => self.refuse_items(
                kind,
                &id,
                &format!("the server's {method} answer is ambiguous ({e})"),
                hidden,
            ),
        }
    }

    /// A page of a kind the lock does not pin yet, under tool rules: passed on but for
    /// what the rules deny to the client's host.
    fn unenforced_page(&mut self, kind: Kind, mut message: Json, complete: bool) -> CheckedItems {
        let member = kind.list_method().1;
        let mut result = message.take("result").unwrap_or(Json::Null);
        let mut hidden = Vec::new();
        let mut shown = 0;
        if let Some(Json::Array(items)) = result.take(member) {
            let mut keep = Vec::new();
            let state = self.items.entry(kind).or_default();
            let mut seen = std::mem::take(&mut state.unenforced_seen);
            for item in items {
                let Some(key) = item.get(kind.key_member()).and_then(Json::as_str) else {
                    keep.push(item);
                    continue;
                };
                let denial = self.denial(kind, &key, Some(&item));
                seen.insert(key.clone(), denial.clone());
                match denial {
                    Some(denial) => hidden.push(ItemHidden {
                        key,
                        error_code: super::denied_code(kind),
                        change: None,
                        renamed_from: None,
                        pinned_hash: None,
                        live_hash: None,
                        class: None,
                        action: None,
                        denied_by: Some(denial),
                    }),
                    None => keep.push(item),
                }
            }
            self.items.entry(kind).or_default().unenforced_seen = seen;
            shown = keep.len();
            set_member(&mut result, member, Json::Array(keep));
        }
        set_member(&mut message, "result", result);
        CheckedItems {
            kind,
            message: self.canonical_or_error(&message),
            hidden,
            served: Vec::new(),
            shown,
            refused: false,
            complete,
            unenforced: true,
        }
    }

    /// The rule that denies an item of a kind the lock does not pin yet: by its key,
    /// or as a page passed on unenforced showed it.
    pub(super) fn unenforced_denial(&self, kind: Kind, key: &str) -> Option<Denial> {
        let seen = self
            .items
            .get(&kind)
            .and_then(|s| s.unenforced_seen.get(key))
            .cloned()
            .flatten();
        seen.or_else(|| self.denial(kind, key, None))
    }

    fn refuse_items(
        &self,
        kind: Kind,
        id: &Json,
        why: &str,
        hidden: Vec<ItemHidden>,
    ) -> CheckedItems {
        let count = hidden.len();
        let message = if count > 0 {
            format!(
                "mcp-lock guard: {why} ({count} {} changed or not pinned); nothing was forwarded. Run `mcp-lock verify {}` to see the changes",
                if count == 1 {
                    kind.noun()
                } else {
                    kind.plural()
                },
                self.server
            )
        } else {
            format!("mcp-lock guard: {why}; nothing was forwarded")
        };
        let shown: Vec<ItemHidden> = hidden
            .iter()
            .map(|h| ItemHidden {
                key: short_name(&h.key),
                ..h.clone()
            })
            .collect();
        let error = json!({
            "jsonrpc": "2.0",
            "id": id.to_value(),
            "error": {
                "code": -32603,
                "message": message,
                "data": {
                    "error_code": if count > 0 { stale_code(kind) } else { unverified_code(kind) },
                    kind.list_method().1: shown,
                },
            },
        });
        CheckedItems {
            kind,
            message: error.to_string(),
            hidden,
            served: Vec::new(),
            shown: 0,
            refused: true,
            complete: false,
            unenforced: false,
        }
    }
}

impl ItemListing {
    /// Remembers what an item not approved was judged against.
    fn note(&mut self, key: &str, change: Option<&ToolChange>) {
        let Some(change) = change else {
            return;
        };
        if let Some(hash) = &change.pinned_hash {
            self.pinned.insert(key.to_string(), hash.clone());
        }
        if change.change == ChangeKind::Renamed
            && change.kind != Kind::ResourceTemplate
            && let Some(old) = &change.renamed_from
        {
            self.renamed.insert(old.clone(), key.to_string());
        }
    }
}
