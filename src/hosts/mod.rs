//! What an agent host runs: the start-up check (`startup`), the Claude Code hook's
//! library side (`hook`), and rewriting a host's config so its servers launch through
//! the guard (`wrap`). The top layer: it may use any below, and none uses it.

pub mod hook;
pub mod startup;
pub mod wrap;
