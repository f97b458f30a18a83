//! An agent host that refuses to start when its MCP tools drifted from mcp.lock.
//!
//! Run it in a project that has an MCP client config and an `mcp.lock`:
//!
//! ```text
//! cargo run --example agent_startup -- path/to/project
//! ```
//!
//! It exits 0 and "starts" when every server matches its pins (or changed only in ways
//! the project's policy allows), and refuses otherwise, saying which tool changed and
//! how, with `mcp-lock verify`'s exit code.

use mcp_lock::base::text::escape_for_terminal as esc;
use mcp_lock::hosts::startup::Verifier;

fn main() -> std::process::ExitCode {
    let project = std::env::args().nth(1).unwrap_or_else(|| ".".into());

    let verification = match Verifier::new(&project).verify_blocking() {
        Ok(verification) => verification,
        Err(e) => {
            eprintln!("agent: cannot check the MCP tools: {e}");
            return std::process::ExitCode::from(2);
        }
    };
    if !verification.passed() {
        eprintln!("agent: refusing to start: MCP tools differ from what was approved");
        // Server text is escaped before it is printed (its secrets are redacted in the
        // reports already).
        let show = |text: &str| esc(text);
        for failure in verification.failures() {
            let class = failure.class().map_or("changed", |c| c.as_str());
            let (server, tool) = (show(failure.server), show(&failure.change.tool));
            eprintln!("  {server}/{tool}: {class}");
            for finding in failure.findings() {
                eprintln!("    {} {}", show(&finding.pointer), show(&finding.reason));
            }
        }
        for (server, change) in verification.server_failures() {
            eprintln!("  {}: {} changed", show(server), change.field);
        }
        for (server, why) in verification.unverified() {
            eprintln!("  {}: could not be verified: {}", show(server), show(why));
        }
        eprintln!("agent: review with `mcp-lock diff`, approve with `mcp-lock update`");
        return std::process::ExitCode::from(i32::from(verification.exit_code()) as u8);
    }
    println!("agent: all MCP tools match mcp.lock; starting");
    std::process::ExitCode::SUCCESS
}
