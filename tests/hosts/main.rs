//! The real MCP hosts (Claude Code, Codex CLI, Gemini CLI, opencode), installed by
//! scripts/install-test-hosts.sh (which .ci/run calls), each driven non-interactively
//! against a model API stand-in on loopback (standin.py): the handshake each sends is
//! the built-in profile mcp-lock pins under; the tools each presents to its model are
//! the lock's pins up to the host's own documented renaming; wrapped, the guard matches
//! its profile and passes calls; after drift the drifted tool is not presented; a tool
//! the rules deny to the host is not presented (wrapped) or is refused (the plugin). One
//! module per host; what they share is in `support`.

mod claude_code;
mod codex;
#[path = "../common/mod.rs"]
mod common;
mod gemini_cli;
mod opencode;
mod support;
