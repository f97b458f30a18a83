//! `mcp-lock guard`: placeholder until implemented.

use mcp_lock::exit_codes::ExitCode;

use super::Workspace;
use crate::cli::GuardArgs;

pub async fn run(_ws: &Workspace, _args: GuardArgs) -> anyhow::Result<ExitCode> {
    anyhow::bail!("not implemented yet")
}
