//! Comparing what a server said with what the lock pins: verdicts and changes.

mod compare;
mod launch;
mod locks;
mod unmatched;

pub use compare::{
    changed_parts, compare, item_change, item_changes, server_changes, tool_change, tool_changes,
};
pub use launch::{LAUNCH_CHANGED, launch_change, launch_moved, origin};
pub use locks::compare_locks;
pub use unmatched::MissingProfile;

use std::collections::BTreeMap;

use serde::Serialize;

use crate::base::action::Action;
use crate::base::json::Json;
use crate::base::secrets::Secrets;
use crate::base::text::count;
use crate::contract::classify::{Class, Finding};
use crate::contract::hash::HashedTool;
use crate::contract::surface::Kind;
use crate::records::lock::{LockedServer, Lockfile, PinnedServer, Reached};
use crate::servers::client::{Fetched, Outcome, ServerSession};
use crate::servers::config::ServerSpec;

/// One verdict per server.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Verdict {
    /// A complete listing was read and matches the lock exactly.
    Converged,
    /// The live listing differs from the lock.
    Stale,
    /// The listing started but did not finish; nothing may be concluded.
    Incomplete,
    /// No evidence could be gathered.
    Unverifiable,
}

impl Verdict {
    pub fn as_str(self) -> &'static str {
        match self {
            Verdict::Converged => "converged",
            Verdict::Stale => "stale",
            Verdict::Incomplete => "incomplete",
            Verdict::Unverifiable => "unverifiable",
        }
    }
}

/// What happened to a tool.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ChangeKind {
    Added,
    Removed,
    Changed,
    /// Removed under one key and added under another with the definition otherwise
    /// equal (for a resource template, whose key is its `uriTemplate`: the display
    /// `name` changed and nothing else). Still breaking for old callers.
    Renamed,
}

impl ChangeKind {
    pub fn as_str(self) -> &'static str {
        match self {
            ChangeKind::Added => "added",
            ChangeKind::Removed => "removed",
            ChangeKind::Changed => "changed",
            ChangeKind::Renamed => "renamed",
        }
    }
}

/// Which part of a definition changed.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub enum Part {
    #[serde(rename = "description")]
    Description,
    #[serde(rename = "inputSchema")]
    InputSchema,
    #[serde(rename = "outputSchema")]
    OutputSchema,
    #[serde(rename = "annotations")]
    Annotations,
    /// Anything else: name, title, icons, `_meta`, `execution`, unknown members.
    #[serde(rename = "other")]
    Other,
}

impl Part {
    fn of_member(name: &str) -> Part {
        match name {
            "description" => Part::Description,
            "inputSchema" => Part::InputSchema,
            "outputSchema" => Part::OutputSchema,
            "annotations" => Part::Annotations,
            _ => Part::Other,
        }
    }

    pub fn as_str(self) -> &'static str {
        match self {
            Part::Description => "description",
            Part::InputSchema => "inputSchema",
            Part::OutputSchema => "outputSchema",
            Part::Annotations => "annotations",
            Part::Other => "other",
        }
    }
}

/// One listed definition (a tool, or a prompt, template or resource) that differs
/// from its pin.
#[derive(Debug, Clone, Serialize)]
pub struct ToolChange {
    /// What kind of definition it is.
    pub kind: Kind,
    /// Its key: a tool's or prompt's name, a template's `uriTemplate`, a resource's
    /// `uri`.
    pub tool: String,
    pub change: ChangeKind,
    /// For `renamed`: the old key (a template's old display name).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub renamed_from: Option<String>,
    /// For `changed`: the parts that differ.
    pub parts: Vec<Part>,
    pub pinned_hash: Option<String>,
    /// `None` when the live definition has no hash (see `problem`).
    pub live_hash: Option<String>,
    /// Why the live definition cannot be pinned, if it cannot.
    pub problem: Option<String>,
    /// The worst class among `findings` (set by the policy as it evaluates the report).
    pub class: Option<Class>,
    /// What the policy does with this change.
    pub action: Action,
    /// What changed and what it means, worst first.
    pub findings: Vec<Finding>,
    /// What screening found in the live definition (added, changed or renamed
    /// definitions only), worst first; each with what the policy does with it.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub screening: Vec<crate::verdict::screen::Screened>,
    #[serde(skip)]
    pub pinned: Option<std::sync::Arc<Json>>,
    #[serde(skip)]
    pub live: Option<std::sync::Arc<Json>>,
}

impl ToolChange {
    /// A change of this kind to the definition keyed `key`, with nothing else known
    /// yet (no hashes, definitions, findings).
    pub fn new(kind: Kind, key: String, change: ChangeKind) -> Self {
        ToolChange {
            kind,
            tool: key,
            change,
            renamed_from: None,
            parts: Vec::new(),
            pinned_hash: None,
            live_hash: None,
            problem: None,
            class: None,
            action: Action::default(),
            findings: Vec::new(),
            screening: Vec::new(),
            pinned: None,
            live: None,
        }
    }

    /// Whether the live side could become a pin (or the change is a removal).
    pub fn is_pinnable(&self) -> bool {
        self.problem.is_none()
    }
}

/// A difference in what the server says about itself.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ServerChange {
    /// `instructions`, `server_identity`, `server_info`, `protocol_version`,
    /// `list_changed`, `client_capabilities`, `client_info`, `launch` (command, args,
    /// env names), or `server` (the whole server is gone from the config).
    pub field: &'static str,
    pub pinned: Option<String>,
    pub live: Option<String>,
    /// Whether this alone makes the server stale (instructions and identity do; a
    /// version bump with the same tools does not).
    pub drift: bool,
    /// For a drift: semantic (instructions) or authority (identity).
    pub class: Option<Class>,
    /// For a drift no class names: the policy rule it falls under (`launch-changed`:
    /// a remote origin, or an unrecognised launch's command or module, moved).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rule: Option<&'static str>,
    /// What the policy does with it (drifts only).
    pub action: Option<Action>,
}

impl ServerChange {
    /// The policy rule it falls under, for a drift: its rule, or its class.
    pub fn rule_name(&self) -> Option<&'static str> {
        self.rule.or(self.class.map(Class::as_str))
    }
}

/// The comparison of one server with its pin.
#[derive(Debug, Clone, Serialize)]
pub struct ServerReport {
    pub name: String,
    /// The client profile the server was listed under.
    pub profile: String,
    /// Whether the lock pins the server under this profile. A server pinned under
    /// other profiles only is compared with every definition they approve.
    pub profile_pinned: bool,
    pub transport: String,
    pub verdict: Verdict,
    /// Tools in the live listing, when one was read completely.
    pub tools: Option<usize>,
    /// Prompts, resource templates and resources in the live listing, when listed.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub prompts: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resource_templates: Option<usize>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub resources: Option<usize>,
    pub changes: Vec<ToolChange>,
    pub server_changes: Vec<ServerChange>,
    /// Whether the lock pins this server at all.
    pub pinned: bool,
    /// The most serious action among the changes (set by the policy); a server the
    /// lock does not pin fails.
    pub action: Action,
    pub error: Option<String>,
    /// The server's last stderr lines, when it failed.
    pub stderr: Vec<String>,
    /// Lines on stdout that were not JSON-RPC.
    pub ignored_lines: usize,
    pub elapsed_ms: u64,
    /// The live `instructions` text, for a person to read (reports for machines carry
    /// only the hashes, as the lock does).
    #[serde(skip)]
    pub instructions: Option<String>,
    /// Kinds the server lists that the lock does not pin yet for it (a lock from
    /// before they were pinned): a notice, never a failure, until `update` pins them.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_pinned_yet: Vec<Kind>,
    /// Kinds the server declares but whose list method it answered with -32601
    /// (method not found): listed, and pinned, as none; a note, never a failure by
    /// itself (items appearing later are drift like any other).
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub not_implemented: Vec<Kind>,
    /// Their definitions, as additions, for `update` to show.
    #[serde(skip)]
    pub pending: Vec<ToolChange>,
    /// Tools the server lists that the host's config hides from its agent
    /// (`includeTools`, `disabled_tools`, …): not pinned, never judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub filtered: Vec<String>,
    /// Tools the client leaves out as its transport requires (2026-07-28 Streamable
    /// HTTP: invalid `x-mcp-header` marks), as `{name, reason}`: not offered to an
    /// agent, not pinned, never judged.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub rejected: Vec<Rejected>,
    /// What the entry launches against the lock's package pin (stdio servers, when
    /// checked).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub package: Option<crate::servers::package::PackageCheck>,
    /// The client's declared handshake (`check-listing --handshake`) matches no
    /// profile the lock pins the server under: the closest, how it differs, and what
    /// would pin it. The listing was judged against every approved definition, as the
    /// guard judges such a client: a notice, the verdict unchanged.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub missing_profile: Option<MissingProfile>,
    /// Definitions the server offers that the tool rules deny to this host
    /// ([`crate::verdict::rules`]): pinned, never served.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub denied: Vec<crate::verdict::rules::Denied>,
}

/// A tool the client left out, and why.
#[derive(Debug, Clone, Serialize)]
pub struct Rejected {
    pub name: String,
    pub reason: String,
}

/// The note for a kind the server declares but does not list: "declares resources
/// but answers resources/templates/list with -32601 (method not found): no templates
/// to pin".
pub fn not_implemented_note(kind: Kind) -> String {
    format!(
        "declares {} but answers {} with -32601 (method not found): no {} to pin",
        kind.capability(),
        kind.list_method().0,
        kind.plural()
    )
}

impl ServerReport {
    /// "15 tools, 4 prompts, 2 templates": what the live listing held, each kind that
    /// was listed (none when no listing was read completely).
    pub fn listed_text(&self) -> Option<String> {
        let tools = self.tools?;
        let mut parts = vec![count(tools, "tool")];
        for (n, kind) in [
            (self.prompts, Kind::Prompt),
            (self.resource_templates, Kind::ResourceTemplate),
            (self.resources, Kind::Resource),
        ] {
            if let Some(n) = n.filter(|n| *n > 0) {
                parts.push(count(n, kind.noun()));
            }
        }
        Some(parts.join(", "))
    }

    /// Replaces this server's secrets inside every string that can carry one: server
    /// text (tool names, definitions, findings, instructions). The
    /// report's own words and structure stay as they are, so every format renders valid
    /// output from it.
    pub fn redact(&mut self, secrets: &Secrets) {
        if secrets.is_empty() {
            return;
        }
        // `error` and `stderr` were redacted where they were read (the client redacts
        // the server's text inside its messages, never the command as written).
        if let Some(text) = &mut self.instructions {
            secrets.redact_in_place(text);
        }
        for name in &mut self.filtered {
            secrets.redact_in_place(name);
        }
        for r in &mut self.rejected {
            secrets.redact_in_place(&mut r.name);
            secrets.redact_in_place(&mut r.reason);
        }
        for change in self.changes.iter_mut().chain(self.pending.iter_mut()) {
            secrets.redact_in_place(&mut change.tool);
            if let Some(from) = &mut change.renamed_from {
                secrets.redact_in_place(from);
            }
            if let Some(problem) = &mut change.problem {
                secrets.redact_in_place(problem);
            }
            for found in &mut change.screening {
                secrets.redact_in_place(&mut found.quote);
                secrets.redact_in_place(&mut found.reason);
            }
            for finding in &mut change.findings {
                secrets.redact_in_place(&mut finding.pointer);
                secrets.redact_in_place(&mut finding.reason);
                for side in [&mut finding.before, &mut finding.after]
                    .into_iter()
                    .flatten()
                {
                    secrets.redact_value(side);
                }
            }
            // Definitions are shared with the listing (pins are made from that): a
            // definition with a secret in it gets a redacted copy of its own.
            for side in [&mut change.pinned, &mut change.live].into_iter().flatten() {
                if secrets.occurs_in_json(side) {
                    secrets.redact_json(std::sync::Arc::make_mut(side));
                }
            }
        }
        for change in &mut self.server_changes {
            for side in [&mut change.pinned, &mut change.live].into_iter().flatten() {
                secrets.redact_in_place(side);
            }
        }
    }

    /// A report for a server that could not be checked at all.
    pub fn unverifiable(name: &str, transport: &str, error: String) -> Self {
        ServerReport {
            name: name.into(),
            profile: String::new(),
            profile_pinned: true,
            transport: transport.into(),
            verdict: Verdict::Unverifiable,
            tools: None,
            prompts: None,
            resource_templates: None,
            resources: None,
            changes: Vec::new(),
            server_changes: Vec::new(),
            pinned: true,
            action: Action::default(),
            error: Some(error),
            stderr: Vec::new(),
            ignored_lines: 0,
            elapsed_ms: 0,
            instructions: None,
            not_pinned_yet: Vec::new(),
            not_implemented: Vec::new(),
            pending: Vec::new(),
            filtered: Vec::new(),
            rejected: Vec::new(),
            package: None,
            missing_profile: None,
            denied: Vec::new(),
        }
    }

    /// A report for a server the lock pins but the config no longer has.
    pub fn dropped_from_config(pinned: &LockedServer, transport: &str) -> Self {
        let changes = Kind::ALL
            .into_iter()
            .flat_map(|kind| {
                pinned
                    .items(kind)
                    .into_iter()
                    .flatten()
                    .map(move |(name, item)| ToolChange {
                        pinned_hash: Some(item.hash.clone()),
                        pinned: Some(item.definition.clone()),
                        ..ToolChange::new(kind, name.clone(), ChangeKind::Removed)
                    })
            })
            .collect();
        ServerReport {
            error: Some(
                "pinned in the lock but not in the config; run `mcp-lock update` to drop it".into(),
            ),
            verdict: Verdict::Stale,
            changes,
            server_changes: vec![ServerChange {
                field: "server",
                pinned: Some(pinned.name.clone()),
                live: None,
                drift: true,
                class: Some(Class::Breaking),
                rule: None,
                action: None,
            }],
            profile: pinned.profile.clone(),
            ..ServerReport::unverifiable(&pinned.name, transport, String::new())
        }
    }
}

/// What a listing under one profile is compared with.
#[derive(Debug, Clone, Copy)]
pub struct Pinned<'a> {
    /// The profile's own pins, or (not `exact`) every approved tool of the server.
    pub view: &'a LockedServer,
    /// Everything the lock pins for the server: a definition approved under any
    /// profile is approved.
    pub server: &'a PinnedServer,
    /// Whether `view` is this profile's own listing. Only then can a tool it does not
    /// list be a removal: another client may simply not be offered it.
    pub exact: bool,
}

impl<'a> Pinned<'a> {
    /// A server pinned under exactly this one listing.
    pub fn exact(view: &'a LockedServer, server: &'a PinnedServer) -> Self {
        Pinned {
            view,
            server,
            exact: true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redacting_a_report_hides_secrets_in_server_text_but_keeps_its_own_words() {
        let mut secrets = Secrets::default();
        secrets.add("MODE", "stdio");
        secrets.add("KEY", "k-123456789");
        let mut report = ServerReport::unverifiable("srv", "stdio", "x".into());
        report.instructions = Some("use k-123456789 over stdio".into());
        report.changes.push(ToolChange {
            live_hash: Some("ab".into()),
            action: Action::Fail,
            live: Some(
                Json::parse(r#"{"name":"t","description":"k-123456789"}"#)
                    .unwrap()
                    .into(),
            ),
            ..ToolChange::new(Kind::Tool, "t-k-123456789".into(), ChangeKind::Added)
        });
        report.redact(&secrets);
        assert_eq!(report.transport, "stdio");
        assert_eq!(
            report.instructions.as_deref(),
            Some("use ${KEY} over ${MODE}")
        );
        assert_eq!(report.changes[0].tool, "t-${KEY}");
        let live = report.changes[0].live.as_ref().unwrap();
        assert_eq!(
            live.get("description").and_then(Json::as_str).unwrap(),
            "${KEY}"
        );
    }
}
