//! `mcp-lock guard`: enforce the lock for a whole agent session.
//!
//! The guard sits between an agent and a stdio server. It checks every `tools/list`
//! page the agent receives against the pins, hides (or refuses) tools that differ,
//! answers calls to them itself with a structured tool error, validates arguments
//! against the pinned input schema, treats everything as unchecked after
//! `notifications/tools/list_changed`, and appends every decision to an audit log.
//!
//! [`session`] holds the decisions and no I/O; [`proxy`] runs the server and the
//! two directions; [`audit`] writes the log; [`pins`] notices a changed lock.

pub mod audit;
pub mod pins;
pub mod proxy;
pub mod session;

pub use audit::AuditLog;
pub use proxy::{Ended, GuardSetup, Launch, run};
pub use session::{Decision, ErrorCode, OnDrift, Pins, Refusal, RequiredAction, Session};
