//! What a change does to `verify`'s outcome: the one type both the drift reports
//! (which carry it) and the policy (which sets it) use, so that data flows one way,
//! drift -> policy, with neither importing the other's types back.

use serde::{Deserialize, Serialize};

/// What a change does to `verify`'s outcome.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Default,
)]
#[serde(rename_all = "lowercase")]
pub enum Action {
    /// Reported, nothing more.
    #[default]
    Allow,
    /// Reported as a warning; the exit code stays 0.
    Warn,
    /// The run fails with exit code 1.
    Fail,
}

impl Action {
    pub fn as_str(self) -> &'static str {
        match self {
            Action::Allow => "allow",
            Action::Warn => "warn",
            Action::Fail => "fail",
        }
    }
}
