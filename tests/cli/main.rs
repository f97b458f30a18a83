//! The mcp-lock binary driven end to end against the fixture server (examples/):
//! each command, its prompts, messages and reports, a hostile server, and what it
//! writes. One test binary for all of them, so the crate is linked once; each
//! former test file is a module beside this one.

mod approval_view;
mod approvals;
mod check_call;
mod check_listing;
mod ci_dropin;
mod classified_drift;
mod claude_code_hook;
mod cli_misc;
#[path = "../common/mod.rs"]
mod common;
mod completions;
mod fixture_cli;
mod home_isolation;
mod hostile;
mod interactive;
mod lock_write;
mod messages;
mod profiles;
mod scale;
mod screening;
mod startup;
mod symlinks;
mod tool_rules;
mod wrap;
