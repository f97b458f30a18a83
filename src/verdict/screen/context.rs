//! What screening compares a definition with: the other servers' tool names.

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::sync::OnceLock;

use super::fold_name;

/// What screening needs to know beyond one definition: the tool names of the other
/// servers of the project (from the lock and, where listed, the live listings).
#[derive(Debug, Clone, Default)]
pub struct Context {
    /// Each server's tool names.
    servers: BTreeMap<String, BTreeSet<String>>,
    /// The server whose definitions [`crate::verdict::policy::Policy::judge`] screens when it is
    /// not told (the guard's one server).
    pub home: Option<String>,
    /// The names indexed for lookups, made on first use: screening a definition costs
    /// lookups of its words, not a pass over every name of the project.
    index: OnceLock<Index>,
}

impl PartialEq for Context {
    fn eq(&self, other: &Self) -> bool {
        self.servers == other.servers && self.home == other.home
    }
}

impl Eq for Context {}

/// A tool of some server: (server, tool).
pub(super) type Owned = (String, String);

#[derive(Debug, Clone, Default)]
pub(super) struct Index {
    /// A name in lower case: the tools so named.
    pub lower: HashMap<String, Vec<Owned>>,
    /// A name folded ([`fold_name`]): the tools so named.
    pub folded: HashMap<String, Vec<Owned>>,
    /// Each folded name of 8 or more characters with one character deleted (and
    /// whole): the folded names it comes from. Two names one edit apart share a key.
    pub near: HashMap<String, Vec<String>>,
}

/// A name and its variants with one character deleted.
pub(super) fn deletions(name: &str) -> Vec<String> {
    let chars: Vec<char> = name.chars().collect();
    let mut out = vec![name.to_string()];
    for i in 0..chars.len() {
        out.push(chars[..i].iter().chain(&chars[i + 1..]).collect::<String>());
    }
    out
}

impl Context {
    /// The tool names the lock pins for every server it pins.
    pub fn from_lock(lock: &crate::records::lock::Lockfile) -> Self {
        let mut ctx = Context::default();
        ctx.add_lock(lock);
        ctx
    }

    /// Adds the tool names the lock pins (under any profile).
    pub fn add_lock(&mut self, lock: &crate::records::lock::Lockfile) {
        for (name, server) in &lock.servers {
            let names = server.tool_names().into_iter().map(str::to_string);
            self.add(name, names);
        }
    }

    /// Adds tool names a server listed.
    pub fn add<I: IntoIterator<Item = String>>(&mut self, server: &str, tools: I) {
        self.servers
            .entry(server.to_string())
            .or_default()
            .extend(tools);
        self.index = OnceLock::new();
    }

    /// A server's tool names.
    pub fn tools_of(&self, server: &str) -> Option<&BTreeSet<String>> {
        self.servers.get(server)
    }

    pub(super) fn index(&self) -> &Index {
        self.index.get_or_init(|| {
            let mut index = Index::default();
            for (server, tools) in &self.servers {
                for tool in tools {
                    let owned = (server.clone(), tool.clone());
                    index
                        .lower
                        .entry(tool.to_lowercase())
                        .or_default()
                        .push(owned.clone());
                    let folded = fold_name(tool);
                    if folded.chars().count() >= 8 {
                        for key in deletions(&folded) {
                            let from = index.near.entry(key).or_default();
                            if !from.contains(&folded) {
                                from.push(folded.clone());
                            }
                        }
                    }
                    index.folded.entry(folded).or_default().push(owned);
                }
            }
            index
        })
    }

    /// Whether `server` itself has a tool named `tool`.
    pub(super) fn owns(&self, server: &str, tool: &str) -> bool {
        self.servers.get(server).is_some_and(|t| t.contains(tool))
    }
}
