//! mcp-lock: pin the tool definitions of a project's MCP servers in `mcp.lock`,
//! verify live servers against it, and approve every change before a pin moves.
//!
//! The library is in layers, one folder each, bottom first. A layer uses only itself
//! and the layers below it, never one above (`tests/library/module_layers.rs` keeps
//! it so, and keeps every file under 800 lines with no two files importing each
//! other):
//!
//! | layer | what it holds |
//! |---|---|
//! | [`base`] | shared vocabulary and plumbing: the action a change sets, the clock, safe files, JSON, safe text, the MCP protocol's versions and headers, secrets, HTTP basics |
//! | [`contract`] | what a tool contract is, with no I/O: the canonical [`hash`](contract::hash), the [`surface`](contract::surface), what a change means ([`classify`](contract::classify)), whether arguments fit a schema ([`validate`](contract::validate)) |
//! | [`servers`] | where servers are declared and how they are reached: host [`config`](servers::config) discovery, the [`client`](servers::client) and its transports, [`auth`](servers::auth), [`package`](servers::package) pins |
//! | [`records`] | what mcp-lock writes down and reads back: the [`lock`](records::lock), client [`profile`](records::profile)s, [`observed`](records::observed) handshakes, the [`audit`](records::audit) log |
//! | [`verdict`] | judging a live contract against its pin: [`drift`](verdict::drift), tool [`rules`](verdict::rules), [`screen`](verdict::screen)ing, the [`policy`](verdict::policy), [`exit_codes`](verdict::exit_codes) |
//! | [`live`] | live servers and sessions: [`check`](live::check) runs many servers at once, the [`guard`](live::guard) enforces the lock on a whole session, [`received`](live::received) listings given as documents |
//! | [`review`] | what a person reads and approves: [`report`](review::report)s, [`update`](review::update) proposals and the new lock, [`upgrade`](review::upgrade)s, [`offline`](review::offline) (`verify --no-connect`), one planned [`call`](review::call) judged |
//! | [`hosts`] | what an agent host runs: the [`startup`](hosts::startup) check, the Claude Code [`hook`](hosts::hook), [`wrap`](hosts::wrap)ping a host's config through the guard |
//!
//! Data flows one way through them: config -> client -> hash -> drift (against the
//! lock) -> classify and policy -> report. The binary (`main.rs`, `cli`, `commands/`)
//! sits on top and only parses arguments and maps results to exit codes.
//!
//! The layers are folders of one crate rather than crates of a workspace: one crate
//! keeps the public paths, `cargo install mcp-lock` and the release simple, and
//! `config` and `client` lean on each other (a resolved entry is what the client
//! launches; a `headersHelper` runs as a stdio server does), which crates would have
//! to cut apart first. The test reads the same `use` paths the compiler does, so the
//! direction is kept all the same; splitting into crates later is a move of folders.
//!
//! An agent host refusing to start on drift:
//!
//! ```no_run
//! use mcp_lock::hosts::startup::Verifier;
//!
//! let verification = Verifier::new(".").verify_blocking()?;
//! if !verification.passed() {
//!     for failure in verification.failures() {
//!         eprintln!("{}/{}: {:?}", failure.server, failure.change.tool, failure.class());
//!     }
//!     std::process::exit(verification.exit_code().into());
//! }
//! # Ok::<(), mcp_lock::hosts::startup::StartupError>(())
//! ```

pub mod base;
pub mod contract;
pub mod hosts;
pub mod live;
pub mod records;
pub mod review;
pub mod servers;
pub mod verdict;
