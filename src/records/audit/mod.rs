//! Reading the guard's audit log: checking its chain and signatures
//! (`mcp-lock audit verify`) and summarising its sessions (`mcp-lock audit show`);
//! and who signs its checkpoints (the user's own settings, [`signing`]).
//! The guard writes it (src/live/guard/audit.rs); docs/audit.md is the format.

pub mod chain;
pub mod format;
pub mod show;
pub mod signing;
