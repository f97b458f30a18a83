//! mcp-lock: pin the tool definitions of a project's MCP servers in `mcp.lock`,
//! verify live servers against it, and approve every change before a pin moves.
//!
//! Data flows one way: [`config`] -> [`client`] -> [`hash`] -> [`drift`] (against
//! [`lock`]) -> [`classify`] and [`policy`] -> [`report`]. [`check`] runs many servers
//! at once; [`update`] turns differences into proposals and approved proposals into a
//! new lock.
//!
//! ```no_run
//! # async fn run() -> anyhow::Result<()> {
//! use mcp_lock::{check, config::ProjectConfig, drift::Verdict, lock};
//!
//! let project = ProjectConfig::load(std::path::Path::new("."), None)?;
//! let pins = lock::read_lock(std::path::Path::new("mcp.lock"))?.unwrap_or_default();
//! let targets = check::resolve_all(&project, &project.servers, &|v| std::env::var(v).ok())?;
//! let checked = check::check_servers(targets, &pins, &Default::default(), check::no_progress()).await;
//! if checked.iter().any(|c| c.report.verdict != Verdict::Converged) {
//!     anyhow::bail!("MCP tool contracts drifted; refusing to start");
//! }
//! # Ok(()) }
//! ```

pub mod check;
pub mod classify;
pub mod client;
pub mod config;
pub mod drift;
pub mod exit_codes;
pub mod guard;
pub mod hash;
pub mod json;
pub mod lock;
pub mod policy;
pub mod report;
pub mod secrets;
pub mod text;
pub mod update;
pub mod validate;
