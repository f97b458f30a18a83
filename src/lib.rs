//! mcp-lock: pin the tool definitions of a project's MCP servers in `mcp.lock`,
//! verify live servers against it, and approve every change before a pin moves.
//!
//! Data flows one way: [`config`] -> [`client`] -> [`hash`] -> [`drift`] (against
//! [`lock`]) -> [`classify`] and [`policy`] -> [`report`]. [`check`] runs many servers
//! at once; [`update`] turns differences into proposals and approved proposals into a
//! new lock. [`startup`] is the start-up check an agent host runs; [`call`] judges one
//! planned call ([`validate`] checks arguments against a schema). [`guard`] enforces
//! the lock for a whole agent session, and [`wrap`] rewrites a client config so its
//! stdio servers launch through the guard. [`offline`] is `verify --no-connect`: the
//! lock against the config, without starting anything.
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
