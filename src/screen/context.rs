//! What screening compares a definition with: the other servers' tool names.

use std::collections::{BTreeMap, BTreeSet};

/// What screening needs to know beyond one definition: the tool names of the other
/// servers of the project (from the lock and, where listed, the live listings).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Context {
    /// Each server's tool names.
    pub servers: BTreeMap<String, BTreeSet<String>>,
    /// The server whose definitions [`crate::policy::Policy::judge`] screens when it is
    /// not told (the guard's one server).
    pub home: Option<String>,
}

impl Context {
    /// The tool names the lock pins for every server it pins.
    pub fn from_lock(lock: &crate::lock::Lockfile) -> Self {
        let mut ctx = Context::default();
        ctx.add_lock(lock);
        ctx
    }

    /// Adds the tool names the lock pins (under any profile).
    pub fn add_lock(&mut self, lock: &crate::lock::Lockfile) {
        for (name, server) in &lock.servers {
            let names = server.tool_names().into_iter().map(str::to_string);
            self.servers.entry(name.clone()).or_default().extend(names);
        }
    }

    /// Adds tool names a server listed.
    pub fn add<I: IntoIterator<Item = String>>(&mut self, server: &str, tools: I) {
        self.servers
            .entry(server.to_string())
            .or_default()
            .extend(tools);
    }

    /// Every other server's tool names, as (server, tool).
    pub(super) fn others<'a>(
        &'a self,
        server: &'a str,
    ) -> impl Iterator<Item = (&'a str, &'a str)> + 'a {
        self.servers
            .iter()
            .filter(move |(name, _)| name.as_str() != server)
            .flat_map(|(name, tools)| tools.iter().map(move |t| (name.as_str(), t.as_str())))
    }

    /// Whether `server` itself has a tool named `tool`.
    pub(super) fn owns(&self, server: &str, tool: &str) -> bool {
        self.servers.get(server).is_some_and(|t| t.contains(tool))
    }
}

impl Context {
    /// Every tool name the lock pins, and every tool name each checked server listed
    /// now: what `verify`, `update` and `scan` screen against.
    pub fn of_run(lock: &crate::lock::Lockfile, checked: &[crate::check::Checked]) -> Self {
        let mut ctx = Context::from_lock(lock);
        for c in checked {
            if let crate::client::Outcome::Complete { listing, .. } = &c.fetched.outcome {
                ctx.add(
                    &c.spec.name,
                    listing.tools.iter().filter_map(|t| t.name.clone()),
                );
            }
        }
        ctx
    }
}
