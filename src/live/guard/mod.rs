//! `mcp-lock guard`: enforce the lock for a whole agent session.
//!
//! The guard sits between an agent and a stdio server. It reads which client
//! profile the agent is from its handshake, judges every tool of every `tools/list`
//! page the agent receives as `verify` judges it (same comparison, same policy),
//! serves what verify would pass (the approved definition when the change is additive
//! or cosmetic), hides what verify would fail and answers calls to it itself with a
//! structured tool error, validates arguments against the input schema of the
//! definition the agent was given, treats everything as unchecked after
//! `notifications/tools/list_changed`, and appends every decision to an audit log.
//! Prompts, resource templates and (when pinned) resources are judged the same way
//! page by page, and `prompts/get` and `resources/read` of what was hidden refused.
//!
//! [`session`] holds the decisions and no I/O; [`client`] matches the client to a
//! pinned profile; [`proxy`] runs the server and the two directions; [`audit`] writes
//! the log; [`pins`] notices a changed lock.

pub mod audit;
pub mod client;
pub mod pins;
pub mod proxy;
pub mod session;
mod stderr;

pub use audit::AuditLog;
pub use client::{ClientHello, MissingProfile};
pub use proxy::{Ended, GuardSetup, Launch, ServerProcess, Upstream, run, run_upstream};
pub use session::{
    Decision, ErrorCode, ItemDecision, ItemRefusal, OnDrift, Refusal, RequiredAction, ServedAs,
    Session,
};
