//! Working with live servers and sessions: checking many servers at once (`check`),
//! the guard that enforces the lock on a whole agent session (`guard`), and listings
//! a client received, given as documents (`received`). Uses only the layers below.

pub mod check;
pub mod guard;
pub mod received;
