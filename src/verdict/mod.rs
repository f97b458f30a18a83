//! Judging a live contract against its pin: drift against the lock (`drift`), the
//! tool rules (`rules`), screening of definitions (`screen`), the policy that turns
//! findings into actions (`policy`), and the exit code a set of verdicts gives
//! (`exit_codes`). Uses only the layers below.

pub mod drift;
pub mod exit_codes;
pub mod policy;
pub mod rules;
pub mod screen;
