//! Turning checked servers into proposals a person approves, and approved proposals
//! into a new lock. Only approved proposals move a pin.

use crate::check::Checked;
use crate::client::{Outcome, ServerSession};
use crate::drift::{ChangeKind, ServerChange, ToolChange, Verdict};
use crate::hash::HashedTool;
use crate::json::Json;
use crate::lock::{LockedServer, LockedTool, Lockfile, Reached};

/// One change to the lock that needs approval.
#[derive(Debug, Clone)]
pub enum Proposal {
    /// A server seen for the first time: pin all of its pinnable tools at once.
    PinServer {
        server: String,
        /// The tools to pin, as additions with their live definitions and findings.
        tools: Vec<ToolChange>,
        /// The server's `instructions`, which the pin's hash will stand for.
        instructions: Option<String>,
    },
    /// A tool added, removed or changed on a pinned server.
    Tool { server: String, change: ToolChange },
    /// What the server says about itself (or how it is launched) changed.
    Metadata {
        server: String,
        changes: Vec<ServerChange>,
        /// The live `instructions` text, shown when they changed.
        instructions: Option<String>,
    },
    /// The config no longer has a pinned server.
    DropServer { server: String, tools: usize },
}

impl Proposal {
    pub fn server(&self) -> &str {
        match self {
            Proposal::PinServer { server, .. }
            | Proposal::Tool { server, .. }
            | Proposal::Metadata { server, .. }
            | Proposal::DropServer { server, .. } => server,
        }
    }
}

/// What `update` could not act on, with why.
#[derive(Debug, Clone)]
pub struct Held {
    pub server: String,
    pub verdict: Verdict,
    pub reason: String,
    /// Held because the server sent one of its secrets, which never go in the lock.
    pub secret: bool,
}

/// What `update` found: changes to ask about, servers it must leave alone, and live
/// tools that can never be pinned.
#[derive(Debug, Clone, Default)]
pub struct Plan {
    /// In server order.
    pub proposals: Vec<Proposal>,
    pub held: Vec<Held>,
    /// (server, change) for tools with a `problem`.
    pub unpinnable: Vec<(String, ToolChange)>,
}

/// The plan for every difference between the lock and the checked servers.
/// `dropped` names pinned servers the config no longer has.
pub fn plan(checked: &[Checked], lock: &Lockfile, dropped: &[String]) -> Plan {
    let mut out = Vec::new();
    let mut held = Vec::new();
    let mut unpinnable = Vec::new();
    for c in checked {
        let name = &c.spec.name;
        let Some((session, tools)) = complete(c) else {
            held.push(Held {
                server: name.clone(),
                verdict: c.report.verdict,
                reason: c.report.error.clone().unwrap_or_default(),
                secret: false,
            });
            continue;
        };
        // Secrets never go in the lock: a server that sends one of its own is left as
        // it is pinned, and the others go on.
        let leaked = std::iter::once(("its server info".to_string(), &session.server_info))
            .chain(tools.iter().map(|t| {
                let shown = t.name.as_deref().unwrap_or("(no name)");
                (
                    format!("tool {:?}", c.secrets.redact(shown)),
                    &*t.definition,
                )
            }))
            .find_map(|(what, json)| c.secrets.find_in_json(json).map(|var| (what, var)));
        if let Some((what, var)) = leaked {
            held.push(Held {
                server: name.clone(),
                verdict: c.report.verdict,
                reason: format!(
                    "it sent the value of {var} in {what}, and secrets never go in the lock"
                ),
                secret: true,
            });
            continue;
        }
        if !lock.servers.contains_key(name) {
            let (tools, bad): (Vec<&ToolChange>, Vec<&ToolChange>) =
                c.report.changes.iter().partition(|t| t.is_pinnable());
            out.push(Proposal::PinServer {
                server: name.clone(),
                tools: tools.into_iter().cloned().collect(),
                instructions: c.report.instructions.clone(),
            });
            unpinnable.extend(bad.into_iter().map(|t| (name.clone(), t.clone())));
            continue;
        }
        let meta = c.report.server_changes.clone();
        if !meta.is_empty() {
            out.push(Proposal::Metadata {
                server: name.clone(),
                changes: meta,
                instructions: c.report.instructions.clone(),
            });
        }
        for change in &c.report.changes {
            if change.is_pinnable() {
                out.push(Proposal::Tool {
                    server: name.clone(),
                    change: change.clone(),
                });
            } else {
                unpinnable.push((name.clone(), change.clone()));
            }
        }
    }
    for server in dropped {
        if let Some(pin) = lock.servers.get(server) {
            out.push(Proposal::DropServer {
                server: server.clone(),
                tools: pin.tools.len(),
            });
        }
    }
    Plan {
        proposals: out,
        held,
        unpinnable,
    }
}

fn complete(c: &Checked) -> Option<(&ServerSession, &[HashedTool])> {
    match &c.fetched.outcome {
        Outcome::Complete { session, listing } => Some((session, &listing.tools)),
        _ => None,
    }
}

/// The lock with the accepted proposals applied.
pub fn apply(lock: &Lockfile, checked: &[Checked], accepted: &[Proposal]) -> Lockfile {
    let mut next = lock.clone();
    for proposal in accepted {
        let Some(c) = checked.iter().find(|c| c.spec.name == proposal.server()) else {
            if let Proposal::DropServer { server, .. } = proposal {
                next.servers.remove(server);
            }
            continue;
        };
        let Some((session, tools)) = complete(c) else {
            continue;
        };
        match proposal {
            Proposal::PinServer { server, .. } => {
                let mut pin = new_pin(&c.spec, session);
                for tool in tools {
                    if let (Some(name), Ok(hash)) = (&tool.name, &tool.hash)
                        && tools
                            .iter()
                            .filter(|t| t.name.as_ref() == Some(name))
                            .count()
                            == 1
                    {
                        pin.tools.insert(
                            name.clone(),
                            LockedTool {
                                hash: hash.clone(),
                                definition: tool.definition.clone(),
                            },
                        );
                    }
                }
                next.servers.insert(server.clone(), pin);
            }
            Proposal::Tool { server, change } => {
                let Some(pin) = next.servers.get_mut(server) else {
                    continue;
                };
                // The pin is made from the listing as sent, not from the (redacted)
                // report: the tool the report names, with the hash it shows.
                let live = tools.iter().find(|t| {
                    t.name.as_deref() == Some(change.tool.as_str())
                        && t.hash.as_ref().ok() == change.live_hash.as_ref()
                });
                match (change.change, live) {
                    (ChangeKind::Removed, _) => {
                        pin.tools.remove(&change.tool);
                    }
                    (_, Some(tool)) => {
                        pin.tools.insert(
                            change.tool.clone(),
                            LockedTool {
                                hash: change.live_hash.clone().unwrap_or_default(),
                                definition: tool.definition.clone(),
                            },
                        );
                    }
                    _ => {}
                }
            }
            Proposal::Metadata { server, .. } => {
                if let Some(pin) = next.servers.get_mut(server) {
                    let fresh = new_pin(&c.spec, session);
                    *pin = LockedServer {
                        tools: std::mem::take(&mut pin.tools),
                        ..fresh
                    };
                }
            }
            Proposal::DropServer { server, .. } => {
                next.servers.remove(server);
            }
        }
    }
    next
}

fn new_pin(spec: &crate::config::ServerSpec, session: &ServerSession) -> LockedServer {
    LockedServer {
        name: spec.name.clone(),
        // Recording the transport used lets verify go straight to it.
        reached: Reached::as_used(spec, &session.transport),
        protocol_version: session.protocol_version.clone(),
        client_info: Json::from_value(&session.client_info),
        client_capabilities: Json::from_value(&session.client_capabilities),
        server_info: session.server_info.clone(),
        list_changed: session.list_changed,
        instructions_hash: session.instructions_hash.clone(),
        tools: Default::default(),
    }
}
